/* REF ConvTranspose (the gradient of Conv with respect to its input), 1-D to
 * 3-D, with groups, strides, dilations, pads, output_padding, output_shape
 * and auto_pad.
 *
 * Input position i and kernel tap t land on output position
 * i * stride - pad_begin + t * dilation. f32 (f16 / bf16 widened) runs one
 * GEMM per image and group, col[M/g * kernel x P_in] = W_g^T * X_g, then
 * scatters col into Y (col2im); f64 scatters directly in double. The output
 * size comes from shape inference; pad_begin is what ONNX derives from it
 * when output_shape or auto_pad SAME_* is given (the odd unit goes to the
 * end for SAME_UPPER, to the start otherwise). */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

typedef struct convt_shape {
    int64_t batch, c, m, group, cg, mg;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t in_n, out_n, k_n;
} convt_shape;

static bool convt_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    const graph_value *x = node->inputs[0];
    for (int i = 0; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v != NULL && (!ref_nn_is_float(v->type) || v->type != x->type)) {
            *why = "inputs are not all f32, f64, f16 or bf16 of one type";
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

/* floor(a / 2) for any sign (ONNX's reference uses Python's //). */
static int64_t convt_half_floor(int64_t a)
{
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

static rn_status convt_shape_init(const plugin_kernel_args *args, convt_shape *cs)
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
    cs->group = graph_node_attr_int_or_default(node, "group");
    cs->mg = w->dims[1];
    cs->m = cs->mg * cs->group;
    if (cs->group < 1 || w->dims[0] != cs->c || cs->c % cs->group != 0 || y->dims[0] != cs->batch ||
        y->dims[1] != cs->m)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X has %lld channels, W is %lld x %lld, group %lld, Y "
                            "has %lld channels",
                            node->name, node->op_type, (long long)cs->c, (long long)w->dims[0],
                            (long long)cs->mg, (long long)cs->group, (long long)y->dims[1]);
    if (b != NULL && (b->rank != 1 || b->dims[0] != cs->m))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): bias B must have shape [%lld]",
                            node->name, node->op_type, (long long)cs->m);
    cs->cg = cs->c / cs->group;
    /* Strides, dilations and explicit pads as for Conv (output size from y). */
    ref_nn_window win;
    rn_status st = ref_nn_window_init(node, x, y, w->dims + 2, &win);
    if (st != RN_OK)
        return st;
    int n = win.n;
    int64_t outpad[RN_MAX_RANK];
    if ((st = graph_window_ints(node, "output_padding", n, 0, 0, outpad)) != RN_OK)
        return st;
    const int64_t *os;
    int n_os = graph_node_attr_ints(node, "output_shape", &os);
    graph_auto_pad auto_pad = win.attrs.auto_pad;
    bool same = auto_pad == GRAPH_AUTO_PAD_SAME_UPPER || auto_pad == GRAPH_AUTO_PAD_SAME_LOWER;
    int lead = 3 - n;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        cs->in[i] = j >= 0 ? win.in[j] : 1;
        cs->out[i] = j >= 0 ? win.out[j] : 1;
        cs->k[i] = j >= 0 ? win.kernel[j] : 1;
        cs->s[i] = j >= 0 ? win.stride[j] : 1;
        cs->d[i] = j >= 0 ? win.dilation[j] : 1;
        cs->p[i] = 0;
        if (j < 0)
            continue;
        if (win.attrs.pads_given && !same) {
            cs->p[i] = win.attrs.pads[j];
        } else if (auto_pad != GRAPH_AUTO_PAD_VALID && (same || n_os > 0)) {
            int64_t total =
                cs->s[i] * (cs->in[i] - 1) + outpad[j] + (cs->k[i] - 1) * cs->d[i] + 1 - cs->out[i];
            bool upper = auto_pad == GRAPH_AUTO_PAD_SAME_UPPER;
            cs->p[i] = upper ? convt_half_floor(total) : total - convt_half_floor(total);
        }
    }
    cs->in_n = cs->in[0] * cs->in[1] * cs->in[2];
    cs->out_n = cs->out[0] * cs->out[1] * cs->out[2];
    cs->k_n = cs->k[0] * cs->k[1] * cs->k[2];
    return RN_OK;
}

/* Output index of input i and tap t along dim, or -1 when outside. */
static int64_t convt_pos(const convt_shape *cs, int dim, int64_t i, int64_t t)
{
    int64_t o = i * cs->s[dim] - cs->p[dim] + t * cs->d[dim];
    return o >= 0 && o < cs->out[dim] ? o : -1;
}

/* Adds col[(m, taps) x P_in] into y (mg planes of out_n). */
static void convt_col2im(const convt_shape *cs, const float *col, float *y)
{
    const float *row = col;
    for (int64_t m = 0; m < cs->mg; m++) {
        float *ym = y + m * cs->out_n;
        for (int64_t kd = 0; kd < cs->k[0]; kd++)
            for (int64_t kh = 0; kh < cs->k[1]; kh++)
                for (int64_t kw = 0; kw < cs->k[2]; kw++, row += cs->in_n) {
                    const float *src = row;
                    for (int64_t id = 0; id < cs->in[0]; id++) {
                        int64_t od = convt_pos(cs, 0, id, kd);
                        for (int64_t ih = 0; ih < cs->in[1]; ih++, src += cs->in[2]) {
                            int64_t oh = convt_pos(cs, 1, ih, kh);
                            if (od < 0 || oh < 0)
                                continue;
                            float *dst = ym + (od * cs->out[1] + oh) * cs->out[2];
                            for (int64_t iw = 0; iw < cs->in[2]; iw++) {
                                int64_t ow = convt_pos(cs, 2, iw, kw);
                                if (ow >= 0)
                                    dst[ow] += src[iw];
                            }
                        }
                    }
                }
    }
}

static rn_status convt_run_f32(const plugin_kernel_args *args, const convt_shape *cs,
                               const float *x, const float *w, const float *b, float *y)
{
    int64_t rows = cs->mg * cs->k_n;
    float *col = ref_tmp_alloc((size_t)(rows * cs->in_n > 0 ? rows * cs->in_n : 1) * sizeof(float));
    if (!col)
        return ref_nn_oom(args->node);
    for (int64_t n = 0; n < cs->batch; n++) {
        for (int64_t g = 0; g < cs->group; g++) {
            const float *xg = x + (n * cs->c + g * cs->cg) * cs->in_n;
            const float *wg = w + g * cs->cg * rows;
            float *yg = y + (n * cs->m + g * cs->mg) * cs->out_n;
            for (int64_t m = 0; m < cs->mg; m++)
                ref_nn_fill_f32(cs->out_n, b ? b[g * cs->mg + m] : 0.0f, yg + m * cs->out_n);
            rn_status st = ref_sgemm(true, false, rows, cs->in_n, cs->cg, 1.0f, wg, rows, xg,
                                     cs->in_n, 0.0f, col, cs->in_n);
            if (st != RN_OK) {
                ref_tmp_free(col);
                return ref_nn_oom(args->node);
            }
            convt_col2im(cs, col, yg);
        }
    }
    ref_tmp_free(col);
    return RN_OK;
}

/* Direct scatter in double (the f64 path). */
static void convt_run_f64(const convt_shape *cs, const double *x, const double *w, const double *b,
                          double *y)
{
    for (int64_t n = 0; n < cs->batch; n++) {
        for (int64_t m = 0; m < cs->m; m++) {
            double *ym = y + (n * cs->m + m) * cs->out_n;
            for (int64_t i = 0; i < cs->out_n; i++)
                ym[i] = b ? b[m] : 0.0;
        }
        for (int64_t c = 0; c < cs->c; c++) {
            int64_t g = c / cs->cg;
            const double *xc = x + (n * cs->c + c) * cs->in_n;
            for (int64_t mi = 0; mi < cs->mg; mi++) {
                const double *wk = w + (c * cs->mg + mi) * cs->k_n;
                double *ym = y + (n * cs->m + g * cs->mg + mi) * cs->out_n;
                for (int64_t id = 0; id < cs->in[0]; id++)
                    for (int64_t ih = 0; ih < cs->in[1]; ih++)
                        for (int64_t iw = 0; iw < cs->in[2]; iw++) {
                            double v = xc[(id * cs->in[1] + ih) * cs->in[2] + iw];
                            for (int64_t kd = 0; kd < cs->k[0]; kd++) {
                                int64_t od = convt_pos(cs, 0, id, kd);
                                for (int64_t kh = 0; od >= 0 && kh < cs->k[1]; kh++) {
                                    int64_t oh = convt_pos(cs, 1, ih, kh);
                                    for (int64_t kw = 0; oh >= 0 && kw < cs->k[2]; kw++) {
                                        int64_t ow = convt_pos(cs, 2, iw, kw);
                                        if (ow >= 0)
                                            ym[(od * cs->out[1] + oh) * cs->out[2] + ow] +=
                                                v * wk[(kd * cs->k[1] + kh) * cs->k[2] + kw];
                                    }
                                }
                            }
                        }
            }
        }
    }
}

static rn_status convt_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    convt_shape cs = {0};
    rn_status st = convt_shape_init(args, &cs);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0], *w = &args->inputs[1];
    const graph_tensor *b = args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    graph_tensor *y = &args->outputs[0];
    if (x->type == RN_F64) {
        convt_run_f64(&cs, x->data, w->data, b ? b->data : NULL, y->data);
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
        st = convt_run_f32(args, &cs, xv, wv, bv, yv);
    if (st == RN_OK && y->type != RN_F32)
        ref_nn_from_f32(y->type, y->data, yv, y_count);
    ref_tmp_free(xo);
    ref_tmp_free(wo);
    ref_tmp_free(bo);
    ref_tmp_free(yo);
    return st;
}

const plugin_kernel ref_kernel_conv_transpose = {
    .domain = "",
    .op_type = "ConvTranspose",
    .impl_type = "ref",
    .supports = convt_supports,
    .run = convt_run,
};
