/* REF ConvInteger and QLinearConv: convolutions of u8 / i8 inputs with
 * integer accumulation.
 *
 * Both shift x and w by their zero points into i32 (x's zero point is per
 * tensor, w's per tensor or per output channel), so padding contributes 0
 * exactly as the spec's "pad with the zero point" does, and run per image and
 * group one i32 GEMM (wrapping) over an im2col of the shifted input:
 *   ConvInteger: y = acc (i32);
 *   QLinearConv: y = saturate(round((acc + B) * (x_scale * w_scale / y_scale)
 *                + y_zero_point)), the multiplier rounded to f32 at each step
 *                and the rest in double, round half to even (the ONNX
 *                reference's arithmetic); w_scale is per tensor or per output
 *                channel.
 * Spatial ranks 1 to 3 are mapped to (D, H, W) with leading 1s.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/quant_util.h"
#include "plugins/ref/kernels/tmp.h"

typedef struct qconv_shape {
    int64_t batch, c, m, group, cg, mg;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t in_n, out_n, k_n;
} qconv_shape;

/* Inputs of the two ops: which index holds what (-1: none). */
typedef struct qconv_io {
    int x, x_zp, w, w_zp;
} qconv_io;

static const qconv_io conv_integer_io = {0, 2, 1, 3};
static const qconv_io qlinear_conv_io = {0, 2, 3, 5};

static bool is_int8(const graph_value *v)
{
    return v != NULL && (v->type == RN_U8 || v->type == RN_I8);
}

static bool qconv_supports_io(const graph_node *node, const qconv_io *io, const char **why)
{
    if (!is_int8(node->inputs[io->x]) || !is_int8(node->inputs[io->w])) {
        *why = "x or w is not u8 or i8";
        return false;
    }
    const graph_value *x = node->inputs[io->x];
    if (x->shape.rank >= 0) {
        if (x->shape.rank < 3 || x->shape.rank > 5) {
            *why = "input rank is not 3, 4 or 5 (1 to 3 spatial dims)";
            return false;
        }
        if (!ref_nn_window_attrs_ok(node, x->shape.rank - 2, why))
            return false;
    }
    if (graph_node_attr_int(node, "group", 1) < 1) {
        *why = "group < 1";
        return false;
    }
    return true;
}

static bool conv_integer_supports(const graph_node *node, const char **why)
{
    return qconv_supports_io(node, &conv_integer_io, why);
}

static bool qlinear_conv_supports(const graph_node *node, const char **why)
{
    if (!qconv_supports_io(node, &qlinear_conv_io, why))
        return false;
    const graph_value *y = node->outputs[0];
    if (y == NULL || (y->type != RN_U8 && y->type != RN_I8)) {
        *why = "output is not u8 or i8";
        return false;
    }
    static const int scales[] = {1, 4, 6};
    for (int k = 0; k < 3; k++) {
        const graph_value *v = node->inputs[scales[k]];
        if (v == NULL || v->type != RN_F32) {
            *why = "a scale is not f32";
            return false;
        }
    }
    if (node->n_inputs > 8 && node->inputs[8] != NULL && node->inputs[8]->type != RN_I32) {
        *why = "bias B is not i32";
        return false;
    }
    return true;
}

static rn_status qconv_shape_init(const plugin_kernel_args *args, const graph_tensor *x,
                                  const graph_tensor *w, qconv_shape *cs)
{
    const graph_node *node = args->node;
    const graph_tensor *y = &args->outputs[0];
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank || y->rank != x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "x rank %d, w rank %d, y rank %d; expected equal ranks "
                                           "of 3 to 5",
                            REF_Q_NODE_ARGS(node), x->rank, w->rank, y->rank);
    memset(cs, 0, sizeof *cs);
    cs->batch = x->dims[0];
    cs->c = x->dims[1];
    cs->m = w->dims[0];
    cs->cg = w->dims[1];
    cs->group = graph_node_attr_int(node, "group", 1);
    if (cs->group < 1 || cs->m % cs->group != 0 || cs->c != cs->cg * cs->group ||
        y->dims[0] != cs->batch || y->dims[1] != cs->m)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "x has %lld channels, w is %lld x %lld, group %lld, y "
                                           "has %lld channels",
                            REF_Q_NODE_ARGS(node), (long long)cs->c, (long long)cs->m,
                            (long long)cs->cg, (long long)cs->group, (long long)y->dims[1]);
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

/* col[K x out_n] for the cg channels at x (each in_n long); padding is 0. */
static void qconv_im2col(const qconv_shape *cs, const int32_t *x, int32_t *col)
{
    int32_t *dst = col;
    for (int64_t c = 0; c < cs->cg; c++) {
        const int32_t *xc = x + c * cs->in_n;
        for (int64_t kd = 0; kd < cs->k[0]; kd++)
            for (int64_t kh = 0; kh < cs->k[1]; kh++)
                for (int64_t kw = 0; kw < cs->k[2]; kw++)
                    for (int64_t od = 0; od < cs->out[0]; od++) {
                        int64_t id = od * cs->s[0] + kd * cs->d[0] - cs->p[0];
                        for (int64_t oh = 0; oh < cs->out[1]; oh++) {
                            int64_t ih = oh * cs->s[1] + kh * cs->d[1] - cs->p[1];
                            bool row_in = id >= 0 && id < cs->in[0] && ih >= 0 && ih < cs->in[1];
                            for (int64_t ow = 0; ow < cs->out[2]; ow++) {
                                int64_t iw = ow * cs->s[2] + kw * cs->d[2] - cs->p[2];
                                *dst++ = row_in && iw >= 0 && iw < cs->in[2]
                                             ? xc[(id * cs->in[1] + ih) * cs->in[2] + iw]
                                             : 0;
                            }
                        }
                    }
    }
}

/* acc[batch x m x out_n] = conv(x - x_zp, w - w_zp) in wrapping i32. */
static rn_status qconv_accumulate(const plugin_kernel_args *args, const qconv_io *io,
                                  qconv_shape *cs, int32_t **acc_out)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[io->x], *w = &args->inputs[io->w];
    const graph_tensor *xz = ref_q_opt(args, io->x_zp), *wz = ref_q_opt(args, io->w_zp);
    rn_status st = qconv_shape_init(args, x, w, cs);
    if (st != RN_OK)
        return st;
    if (xz != NULL && graph_tensor_count(xz) != 1)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "x's zero point has %zu elements; it must be a scalar",
                            REF_Q_NODE_ARGS(node), graph_tensor_count(xz));
    size_t nwz = wz ? graph_tensor_count(wz) : 0;
    if (wz != NULL && nwz != 1 && (wz->rank != 1 || wz->dims[0] != cs->m))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "w's zero point has %zu elements; expected 1 or %lld "
                                           "(one per output channel)",
                            REF_Q_NODE_ARGS(node), nwz, (long long)cs->m);
    int64_t kdim = cs->cg * cs->k_n;
    size_t nx = graph_tensor_count(x), nw = graph_tensor_count(w);
    size_t nacc = (size_t)(cs->batch * cs->m * cs->out_n);
    size_t ncol = (size_t)(kdim * cs->out_n);
    int32_t *xs = ref_tmp_alloc((nx ? nx : 1) * sizeof *xs);
    int32_t *ws = ref_tmp_alloc((nw ? nw : 1) * sizeof *ws);
    int32_t *col = ref_tmp_alloc((ncol ? ncol : 1) * sizeof *col);
    int32_t *acc = ref_tmp_calloc(nacc ? nacc : 1, sizeof *acc);
    if (!xs || !ws || !col || !acc) {
        ref_tmp_free(xs), ref_tmp_free(ws), ref_tmp_free(col), ref_tmp_free(acc);
        return ref_nn_oom(node);
    }
    int64_t zx = xz ? ref_mv_int_at(xz, 0) : 0;
    for (size_t i = 0; i < nx; i++)
        xs[i] = (int32_t)(ref_mv_int_at(x, i) - zx);
    for (size_t i = 0; i < nw; i++) {
        size_t m = i / (size_t)kdim;
        int64_t zw = wz == NULL ? 0 : ref_mv_int_at(wz, nwz == 1 ? 0 : m);
        ws[i] = (int32_t)(ref_mv_int_at(w, i) - zw);
    }
    for (int64_t n = 0; n < cs->batch; n++) {
        for (int64_t g = 0; g < cs->group; g++) {
            qconv_im2col(cs, xs + (n * cs->c + g * cs->cg) * cs->in_n, col);
            ref_igemm(RN_I32, false, false, cs->mg, cs->out_n, kdim, 1, ws + g * cs->mg * kdim,
                      kdim, col, cs->out_n, 0, acc + (n * cs->m + g * cs->mg) * cs->out_n,
                      cs->out_n);
        }
    }
    ref_tmp_free(xs);
    ref_tmp_free(ws);
    ref_tmp_free(col);
    *acc_out = acc;
    return RN_OK;
}

static rn_status conv_integer_run(plugin_kernel_args *args)
{
    rn_status st = ref_nn_args_ok(args, 2);
    if (st != RN_OK)
        return st;
    qconv_shape cs;
    int32_t *acc;
    if ((st = qconv_accumulate(args, &conv_integer_io, &cs, &acc)) != RN_OK)
        return st;
    memcpy(args->outputs[0].data, acc, graph_tensor_count(&args->outputs[0]) * sizeof(int32_t));
    ref_tmp_free(acc);
    return RN_OK;
}

static rn_status qlinear_conv_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_nn_args_ok(args, 1);
    static const int required[] = {1, 3, 4, 6};
    for (int k = 0; st == RN_OK && k < 4; k++)
        if (ref_q_opt(args, required[k]) == NULL)
            st = rn_set_error(RN_INVALID_ARG, REF_Q_NODE_FMT "required input %d is missing",
                              REF_Q_NODE_ARGS(node), required[k]);
    if (st != RN_OK)
        return st;
    const graph_tensor *xs = &args->inputs[1], *ws = &args->inputs[4], *ys = &args->inputs[6];
    const graph_tensor *yz = ref_q_opt(args, 7), *bias = ref_q_opt(args, 8);
    graph_tensor *y = &args->outputs[0];
    qconv_shape cs;
    int32_t *acc;
    if ((st = qconv_accumulate(args, &qlinear_conv_io, &cs, &acc)) != RN_OK)
        return st;
    size_t nws = graph_tensor_count(ws);
    if (graph_tensor_count(xs) != 1 || graph_tensor_count(ys) != 1 ||
        (yz != NULL && graph_tensor_count(yz) != 1) || (nws != 1 && nws != (size_t)cs.m) ||
        (bias != NULL && (bias->rank != 1 || bias->dims[0] != cs.m))) {
        ref_tmp_free(acc);
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "x_scale, y_scale and y_zero_point must be scalars, "
                                           "w_scale a scalar or [%lld], B [%lld]",
                            REF_Q_NODE_ARGS(node), (long long)cs.m, (long long)cs.m);
    }
    int64_t lo = 0, hi = 0;
    ref_q_int_range(y->type, &lo, &hi);
    double zy = yz ? (double)ref_mv_int_at(yz, 0) : 0.0;
    float sx = *(const float *)xs->data, sy = *(const float *)ys->data;
    for (int64_t n = 0; n < cs.batch; n++) {
        for (int64_t m = 0; m < cs.m; m++) {
            float sw = ((const float *)ws->data)[nws == 1 ? 0 : m];
            double mult = (float)((float)(sx * sw) / sy);
            int64_t b = bias ? ((const int32_t *)bias->data)[m] : 0;
            int64_t off = (n * cs.m + m) * cs.out_n;
            for (int64_t p = 0; p < cs.out_n; p++) {
                double v = (double)(acc[off + p] + b) * mult + zy;
                ref_mv_store_int(y->type, y->data, (size_t)(off + p), ref_q_saturate(v, lo, hi));
            }
        }
    }
    ref_tmp_free(acc);
    return RN_OK;
}

const plugin_kernel ref_kernel_conv_integer = {
    .domain = "",
    .op_type = "ConvInteger",
    .impl_type = "ref",
    .supports = conv_integer_supports,
    .run = conv_integer_run,
};

const plugin_kernel ref_kernel_qlinear_conv = {
    .domain = "",
    .op_type = "QLinearConv",
    .impl_type = "ref",
    .supports = qlinear_conv_supports,
    .run = qlinear_conv_run,
};
