/* REF Conv: 1-D, 2-D and 3-D convolution with groups, strides, dilations and
 * explicit or automatic padding.
 *
 * f32 (and f16 / bf16, widened to f32) runs per image and group as one GEMM,
 * Y_g[M/g x P] = W_g[M/g x K] * col[K x P], with K = C/g * kernel volume and P
 * the output positions: 1x1 stride-1 unpadded convolutions use the input
 * itself as `col`, the rest build it with im2col in bands of output rows.
 * Depthwise-style groups (one input channel per group) in 1-D / 2-D skip the
 * GEMM and accumulate the taps over a zero-padded copy of the plane. f64 runs
 * a direct loop in double.
 *
 * Every spatial rank is mapped to 3-D (D, H, W) by padding the leading dims
 * with size 1, so one im2col serves them all. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

/* A convolution's sizes, spatial dims mapped to (D, H, W). */
typedef struct conv_shape {
    int64_t batch, c, m, group, cg, mg;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t in_n, out_n, k_n; /* in / out positions per channel, kernel volume */
} conv_shape;

static bool conv_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 2, why))
        return false;
    const graph_value *x = node->inputs[0];
    for (int i = 0; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v == NULL)
            continue;
        if (!ref_nn_is_float(v->type)) {
            *why = "input type is not f32, f64, f16 or bf16";
            return false;
        }
        if (v->type != x->type) {
            *why = "inputs of different element types";
            return false;
        }
    }
    if (x->shape.rank >= 0) {
        if (x->shape.rank < 3 || x->shape.rank > 5) {
            *why = "input rank is not 3, 4 or 5 (1 to 3 spatial dims)";
            return false;
        }
        if (!ref_nn_window_attrs_ok(node, x->shape.rank - 2, why))
            return false;
    }
    if (graph_node_attr_int_or_default(node, "group") < 1) {
        *why = "group < 1";
        return false;
    }
    return true;
}

/* Validates the run-time shapes and fills cs. */
static rn_status conv_shape_init(const plugin_kernel_args *args, conv_shape *cs)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *w = &args->inputs[1], *y = &args->outputs[0];
    const graph_tensor *b = args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank || y->rank != x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X rank %d, W rank %d, Y rank %d; expected equal "
                            "ranks of 3 to 5",
                            node->name, node->op_type, x->rank, w->rank, y->rank);
    memset(cs, 0, sizeof *cs);
    cs->batch = x->dims[0];
    cs->c = x->dims[1];
    cs->m = w->dims[0];
    cs->cg = w->dims[1];
    cs->group = graph_node_attr_int_or_default(node, "group");
    if (cs->group < 1 || cs->m % cs->group != 0 || cs->c != cs->cg * cs->group ||
        y->dims[0] != cs->batch || y->dims[1] != cs->m)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X has %lld channels, W is %lld x %lld, group %lld, Y "
                            "has %lld channels",
                            node->name, node->op_type, (long long)cs->c, (long long)cs->m,
                            (long long)cs->cg, (long long)cs->group, (long long)y->dims[1]);
    if (b != NULL && (b->rank != 1 || b->dims[0] != cs->m))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): bias B must have shape [%lld]",
                            node->name, node->op_type, (long long)cs->m);
    cs->mg = cs->m / cs->group;
    ref_nn_window win;
    rn_status st = ref_nn_window_init(node, x, y, w->dims + 2, &win);
    if (st != RN_OK)
        return st;
    int lead = 3 - win.n;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        cs->in[i] = j >= 0 ? win.in[j] : 1;
        cs->out[i] = j >= 0 ? win.out[j] : 1;
        cs->k[i] = j >= 0 ? win.kernel[j] : 1;
        cs->s[i] = j >= 0 ? win.stride[j] : 1;
        cs->d[i] = j >= 0 ? win.dilation[j] : 1;
        cs->p[i] = j >= 0 ? win.pad_begin[j] : 0;
    }
    cs->in_n = cs->in[0] * cs->in[1] * cs->in[2];
    cs->out_n = cs->out[0] * cs->out[1] * cs->out[2];
    cs->k_n = cs->k[0] * cs->k[1] * cs->k[2];
    return RN_OK;
}

/* The range [lo, hi) of output positions o whose input o * s + off lies in [0, n). */
static void conv_valid_range(int64_t n_out, int64_t s, int64_t off, int64_t n, int64_t *lo,
                             int64_t *hi)
{
    /* o >= ceil(-off / s) and o <= floor((n - 1 - off) / s) */
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = n - 1 - off < 0 ? 0 : (n - 1 - off) / s + 1;
    *lo = a < n_out ? a : n_out;
    *hi = b < n_out ? b : n_out;
    if (*hi < *lo)
        *hi = *lo;
}

/* col[K x cols] for the cg channels at x (each in_n long), restricted to the
 * output rows [r0, r1) of the flattened (D, H) output grid, so that cols =
 * (r1 - r0) * out_w. */
static void conv_im2col(const conv_shape *cs, const float *x, int64_t r0, int64_t r1, float *col)
{
    int64_t cols = (r1 - r0) * cs->out[2];
    float *dst = col;
    for (int64_t c = 0; c < cs->cg; c++) {
        const float *xc = x + c * cs->in_n;
        for (int64_t kd = 0; kd < cs->k[0]; kd++) {
            for (int64_t kh = 0; kh < cs->k[1]; kh++) {
                for (int64_t kw = 0; kw < cs->k[2]; kw++, dst += cols) {
                    int64_t offw = kw * cs->d[2] - cs->p[2];
                    int64_t lo, hi;
                    conv_valid_range(cs->out[2], cs->s[2], offw, cs->in[2], &lo, &hi);
                    float *row = dst;
                    for (int64_t r = r0; r < r1; r++, row += cs->out[2]) {
                        int64_t od = r / cs->out[1], oh = r % cs->out[1];
                        int64_t id = od * cs->s[0] + kd * cs->d[0] - cs->p[0];
                        int64_t ih = oh * cs->s[1] + kh * cs->d[1] - cs->p[1];
                        if (id < 0 || id >= cs->in[0] || ih < 0 || ih >= cs->in[1]) {
                            ref_nn_fill_f32(cs->out[2], 0.0f, row);
                            continue;
                        }
                        const float *src = xc + (id * cs->in[1] + ih) * cs->in[2] + offw;
                        ref_nn_fill_f32(lo, 0.0f, row);
                        if (cs->s[2] == 1) {
                            memcpy(row + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
                        } else {
                            for (int64_t ow = lo; ow < hi; ow++)
                                row[ow] = src[ow * cs->s[2]];
                        }
                        ref_nn_fill_f32(cs->out[2] - hi, 0.0f, row + hi);
                    }
                }
            }
        }
    }
}

/* The zero-padded input plane a depthwise-style group reads: rows and
 * columns [0, pad_h) x [0, pad_w) hold input (r - pad_top, c - pad_left). */
static void conv_pad_plane(const conv_shape *cs, const float *x, int64_t pad_h, int64_t pad_w,
                           float *xp)
{
    for (int64_t r = 0; r < pad_h; r++) {
        float *row = xp + r * pad_w;
        int64_t ih = r - cs->p[1];
        if (ih < 0 || ih >= cs->in[1]) {
            ref_nn_fill_f32(pad_w, 0.0f, row);
            continue;
        }
        int64_t lo = cs->p[2] < pad_w ? cs->p[2] : pad_w;
        int64_t hi = cs->p[2] + cs->in[2] < pad_w ? cs->p[2] + cs->in[2] : pad_w;
        ref_nn_fill_f32(lo, 0.0f, row);
        if (hi > lo)
            memcpy(row + lo, x + ih * cs->in[2] + (lo - cs->p[2]),
                   (size_t)(hi - lo) * sizeof(float));
        ref_nn_fill_f32(pad_w - (hi > lo ? hi : lo), 0.0f, row + (hi > lo ? hi : lo));
    }
}

/* W outputs of one row, stride 1: dst[j] += sum over taps of w * row[j + tap
 * offset]. W is a constant after inlining; the unrolled loops keep acc in
 * vector registers across all taps. */
static inline __attribute__((always_inline)) void
conv_dw_block(const int width, const conv_shape *cs, const float *restrict xp, int64_t pad_w,
              const float *restrict wm, float *restrict dst)
{
    float acc[16];
#pragma GCC unroll 16
    for (int j = 0; j < width; j++)
        acc[j] = dst[j];
    for (int64_t kh = 0; kh < cs->k[1]; kh++) {
        const float *row = xp + kh * cs->d[1] * pad_w;
        for (int64_t kw = 0; kw < cs->k[2]; kw++) {
            float wv = wm[kh * cs->k[2] + kw];
            const float *src = row + kw * cs->d[2];
#pragma GCC unroll 16
            for (int j = 0; j < width; j++)
                acc[j] += wv * src[j];
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < width; j++)
        dst[j] = acc[j];
}

/* Depthwise-style group (one input channel, 2-D or lower): y[mg planes] +=
 * sum over the kernel of w * shifted x, read from a zero-padded copy of the
 * plane so the inner loops need no bounds checks. Each output row is
 * accumulated in registers over every tap, 16 outputs at a time, and stored
 * once. y already holds the bias (or 0). */
static void conv_depthwise(const conv_shape *cs, const float *x, const float *w, float *y,
                           float *xp)
{
    int64_t pad_h = (cs->out[1] - 1) * cs->s[1] + (cs->k[1] - 1) * cs->d[1] + 1;
    int64_t pad_w = (cs->out[2] - 1) * cs->s[2] + (cs->k[2] - 1) * cs->d[2] + 1;
    conv_pad_plane(cs, x, pad_h, pad_w, xp);
    for (int64_t m = 0; m < cs->mg; m++) {
        float *ym = y + m * cs->out_n;
        const float *wm = w + m * cs->k_n;
        for (int64_t oh = 0; oh < cs->out[1]; oh++) {
            const float *rows = xp + oh * cs->s[1] * pad_w;
            float *dst = ym + oh * cs->out[2];
            int64_t ow = 0;
            if (cs->s[2] == 1) {
                for (; ow + 16 <= cs->out[2]; ow += 16)
                    conv_dw_block(16, cs, rows + ow, pad_w, wm, dst + ow);
                for (; ow + 4 <= cs->out[2]; ow += 4)
                    conv_dw_block(4, cs, rows + ow, pad_w, wm, dst + ow);
            }
            for (; ow < cs->out[2]; ow++) {
                float acc = dst[ow];
                for (int64_t kh = 0; kh < cs->k[1]; kh++)
                    for (int64_t kw = 0; kw < cs->k[2]; kw++)
                        acc += wm[kh * cs->k[2] + kw] *
                               rows[kh * cs->d[1] * pad_w + ow * cs->s[2] + kw * cs->d[2]];
                dst[ow] = acc;
            }
        }
    }
}

/* Output rows per im2col band: about CONV_BAND_FLOATS values of col, so the
 * band stays in cache between im2col and the GEMM and memory stays bounded
 * (a 3x3 conv over 64 x 224 x 224 would otherwise need a 115 MB col). */
#define CONV_BAND_FLOATS (1 << 20)

static rn_status conv_run_f32(const plugin_kernel_args *args, const conv_shape *cs, const float *x,
                              const float *w, const float *b, float *y)
{
    bool direct = cs->k_n == 1 && cs->s[0] == 1 && cs->s[1] == 1 && cs->s[2] == 1 &&
                  cs->p[0] == 0 && cs->p[1] == 0 && cs->p[2] == 0 && cs->in_n == cs->out_n;
    /* One input channel per group, in 1-D or 2-D (a single depth plane). */
    bool depthwise = cs->cg == 1 && cs->in[0] == 1 && cs->out[0] == 1 && cs->k[0] == 1 &&
                     cs->p[0] == 0 && !direct;
    int64_t kdim = cs->cg * cs->k_n;
    int64_t rows = cs->out[0] * cs->out[1]; /* output rows of out[2] positions */
    int64_t band = 1;
    float *col = NULL;
    if (depthwise) {
        int64_t pad_h = (cs->out[1] - 1) * cs->s[1] + (cs->k[1] - 1) * cs->d[1] + 1;
        int64_t pad_w = (cs->out[2] - 1) * cs->s[2] + (cs->k[2] - 1) * cs->d[2] + 1;
        col = ref_tmp_alloc((size_t)(pad_h * pad_w > 0 ? pad_h * pad_w : 1) * sizeof(float));
        if (!col)
            return ref_nn_oom(args->node);
    } else if (!direct) {
        int64_t row_floats = kdim * cs->out[2] > 0 ? kdim * cs->out[2] : 1;
        band = CONV_BAND_FLOATS / row_floats;
        band = band < 1 ? 1 : band > rows ? rows : band;
        col =
            ref_tmp_alloc((size_t)(band * row_floats > 0 ? band * row_floats : 1) * sizeof(float));
        if (!col)
            return ref_nn_oom(args->node);
    }
    rn_status st = RN_OK;
    for (int64_t n = 0; st == RN_OK && n < cs->batch; n++) {
        for (int64_t g = 0; st == RN_OK && g < cs->group; g++) {
            const float *xg = x + (n * cs->c + g * cs->cg) * cs->in_n;
            const float *wg = w + g * cs->mg * kdim;
            float *yg = y + (n * cs->m + g * cs->mg) * cs->out_n;
            for (int64_t m = 0; m < cs->mg; m++)
                ref_nn_fill_f32(cs->out_n, b ? b[g * cs->mg + m] : 0.0f, yg + m * cs->out_n);
            if (depthwise) {
                conv_depthwise(cs, xg, wg, yg, col);
            } else if (direct) {
                st = ref_sgemm(false, false, cs->mg, cs->out_n, kdim, 1.0f, wg, kdim, xg, cs->out_n,
                               1.0f, yg, cs->out_n);
            } else {
                for (int64_t r0 = 0; st == RN_OK && r0 < rows; r0 += band) {
                    int64_t r1 = r0 + band < rows ? r0 + band : rows;
                    int64_t cols = (r1 - r0) * cs->out[2];
                    conv_im2col(cs, xg, r0, r1, col);
                    st = ref_sgemm(false, false, cs->mg, cols, kdim, 1.0f, wg, kdim, col, cols,
                                   1.0f, yg + r0 * cs->out[2], cs->out_n);
                }
            }
        }
    }
    ref_tmp_free(col);
    return st == RN_OK ? RN_OK : ref_nn_oom(args->node);
}

/* Direct convolution in double (the f64 path). */
static void conv_run_f64(const conv_shape *cs, const double *x, const double *w, const double *b,
                         double *y)
{
    for (int64_t n = 0; n < cs->batch; n++) {
        for (int64_t m = 0; m < cs->m; m++) {
            int64_t g = m / cs->mg;
            const double *wm = w + m * cs->cg * cs->k_n;
            double *ym = y + (n * cs->m + m) * cs->out_n;
            for (int64_t od = 0; od < cs->out[0]; od++) {
                for (int64_t oh = 0; oh < cs->out[1]; oh++) {
                    for (int64_t ow = 0; ow < cs->out[2]; ow++) {
                        double acc = b ? b[m] : 0.0;
                        for (int64_t c = 0; c < cs->cg; c++) {
                            const double *xc = x + (n * cs->c + g * cs->cg + c) * cs->in_n;
                            const double *wc = wm + c * cs->k_n;
                            for (int64_t kd = 0; kd < cs->k[0]; kd++) {
                                int64_t id = od * cs->s[0] + kd * cs->d[0] - cs->p[0];
                                if (id < 0 || id >= cs->in[0])
                                    continue;
                                for (int64_t kh = 0; kh < cs->k[1]; kh++) {
                                    int64_t ih = oh * cs->s[1] + kh * cs->d[1] - cs->p[1];
                                    if (ih < 0 || ih >= cs->in[1])
                                        continue;
                                    for (int64_t kw = 0; kw < cs->k[2]; kw++) {
                                        int64_t iw = ow * cs->s[2] + kw * cs->d[2] - cs->p[2];
                                        if (iw < 0 || iw >= cs->in[2])
                                            continue;
                                        acc += wc[(kd * cs->k[1] + kh) * cs->k[2] + kw] *
                                               xc[(id * cs->in[1] + ih) * cs->in[2] + iw];
                                    }
                                }
                            }
                        }
                        ym[(od * cs->out[1] + oh) * cs->out[2] + ow] = acc;
                    }
                }
            }
        }
    }
}

static rn_status conv_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 2);
    if (args_st != RN_OK)
        return args_st;
    conv_shape cs = {0};
    rn_status st = conv_shape_init(args, &cs);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0], *w = &args->inputs[1];
    const graph_tensor *b = args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    graph_tensor *y = &args->outputs[0];
    if (x->type == RN_F64) {
        conv_run_f64(&cs, x->data, w->data, b ? b->data : NULL, y->data);
        return RN_OK;
    }
    const float *xv, *wv, *bv = NULL;
    float *xo = NULL, *wo = NULL, *bo = NULL, *yo = NULL;
    st = ref_nn_f32_view(x, &xv, &xo);
    if (st == RN_OK)
        st = ref_nn_f32_view(w, &wv, &wo);
    if (st == RN_OK && b != NULL)
        st = ref_nn_f32_view(b, &bv, &bo);
    float *yv = y->data;
    size_t y_count = graph_tensor_count(y);
    if (st == RN_OK && y->type != RN_F32) {
        yo = ref_tmp_alloc((y_count ? y_count : 1) * sizeof(float));
        yv = yo;
        if (!yo)
            st = RN_OUT_OF_MEMORY;
    }
    if (st != RN_OK)
        st = ref_nn_oom(args->node);
    else
        st = conv_run_f32(args, &cs, xv, wv, bv, yv);
    if (st == RN_OK && y->type != RN_F32)
        ref_nn_from_f32(y->type, y->data, yv, y_count);
    ref_tmp_free(xo);
    ref_tmp_free(wo);
    ref_tmp_free(bo);
    ref_tmp_free(yo);
    return st;
}

const plugin_kernel ref_kernel_conv = {
    .domain = "",
    .op_type = "Conv",
    .impl_type = "ref",
    .supports = conv_supports,
    .run = conv_run,
};
