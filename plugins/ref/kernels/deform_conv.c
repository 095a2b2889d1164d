/* REF DeformConv (opsets 19 and 22), 1 to 3 spatial dims: a Conv whose
 * kernel taps are moved by learned offsets. For output position o and
 * kernel tap t the input is sampled at
 *   o * stride - pad_begin + t * dilation + offset[n, g, t, :, o]
 * by multilinear interpolation (taps outside the input read 0, as the ONNX
 * reference's GridSample with align_corners does), optionally scaled by
 * mask[n, g, t, o], where g is the offset group of the input channel. The
 * offset input is N x (offset_group * kernel size * spatial dims) x O...,
 * the mask N x (offset_group * kernel size) x O.... Computed in double. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool deform_conv_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    for (int i = 0; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL &&
            (!ref_nn_is_float(node->inputs[i]->type) || node->inputs[i]->type != t)) {
            *why = "inputs are not all f32, f64, f16 or bf16 of one type";
            return false;
        }
    }
    int r = node->inputs[0]->shape.rank;
    if (r >= 0 && (r < 3 || r > 5)) {
        *why = "input rank is not 3, 4 or 5 (1 to 3 spatial dims)";
        return false;
    }
    if (r >= 0 && !ref_nn_window_attrs_ok(node, r - 2, why))
        return false;
    return true;
}

/* X[plane] sampled at real position p (nd dims of sizes len), zeros
 * outside. */
static double deform_sample(const graph_tensor *x, size_t plane, int nd, const int64_t *len,
                            const double *p)
{
    int64_t base[3];
    double frac[3];
    for (int i = 0; i < nd; i++) {
        if (!(p[i] > -1.0 && p[i] < (double)len[i]))
            return 0.0; /* both neighbours are outside (or p is NaN) */
        double f = floor(p[i]);
        base[i] = (int64_t)f;
        frac[i] = p[i] - f;
    }
    double sum = 0.0;
    for (int corner = 0; corner < (1 << nd); corner++) {
        double w = 1.0;
        int64_t off = 0;
        bool inside = true;
        for (int i = 0; i < nd; i++) {
            int up = (corner >> (nd - 1 - i)) & 1;
            int64_t at = base[i] + up;
            w *= up ? frac[i] : 1.0 - frac[i];
            inside &= at >= 0 && at < len[i];
            off = off * len[i] + at;
        }
        if (inside && w != 0.0)
            sum += w * ref_nn_get(x->type, x->data, plane + (size_t)off);
    }
    return sum;
}

static rn_status deform_conv_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *w = &args->inputs[1], *offset = &args->inputs[2];
    const graph_tensor *b = args->n_inputs > 3 && args->inputs[3].data ? &args->inputs[3] : NULL;
    const graph_tensor *mask = args->n_inputs > 4 && args->inputs[4].data ? &args->inputs[4] : NULL;
    graph_tensor *y = &args->outputs[0];
    int r = x->rank, nd = r - 2;
    if (r < 3 || r > 5 || w->rank != r || offset->rank != r || y->rank != r)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X, W, offset and Y must have one rank of 3 to 5",
                            node->name, node->op_type);
    ref_nn_window win;
    rn_status st = ref_nn_window_init(node, x, y, w->dims + 2, &win);
    if (st != RN_OK)
        return st;
    int64_t batch = x->dims[0], c = x->dims[1], m = w->dims[0], cg = w->dims[1];
    int64_t group = graph_node_attr_int_or_default(node, "group");
    int64_t og = graph_node_attr_int(node, "offset_group", 1);
    int64_t k_n = ref_nn_span(w->dims, 2, r), in_n = ref_nn_span(x->dims, 2, r);
    int64_t out_n = ref_nn_span(y->dims, 2, r);
    bool ok =
        group >= 1 && og >= 1 && c == cg * group && m % group == 0 && c % og == 0 &&
        y->dims[0] == batch && y->dims[1] == m && offset->dims[0] == batch &&
        offset->dims[1] == og * k_n * nd && (b == NULL || graph_tensor_count(b) == (size_t)m) &&
        (mask == NULL || (mask->rank == r && mask->dims[0] == batch && mask->dims[1] == og * k_n));
    for (int i = 0; ok && i < nd; i++)
        ok = offset->dims[2 + i] == y->dims[2 + i] &&
             (mask == NULL || mask->dims[2 + i] == y->dims[2 + i]);
    if (!ok)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): shapes of X, W, offset, B, mask and group / "
                            "offset_group do not agree",
                            node->name, node->op_type);
    int64_t mg = m / group, c_per_og = c / og;
    double *acc = ref_tmp_alloc((size_t)(m > 0 ? m : 1) * sizeof(double));
    if (acc == NULL)
        return ref_nn_oom(node);
    for (int64_t n = 0; n < batch; n++) {
        int64_t o[3] = {0, 0, 0};
        for (int64_t oi = 0; oi < out_n; oi++) {
            for (int64_t mm = 0; mm < m; mm++)
                acc[mm] = b != NULL ? ref_nn_get(b->type, b->data, (size_t)mm) : 0.0;
            int64_t t[3] = {0, 0, 0};
            for (int64_t ti = 0; ti < k_n; ti++) {
                for (int64_t ch = 0; ch < c; ch++) {
                    int64_t g = ch / c_per_og;
                    double p[3];
                    for (int i = 0; i < nd; i++) {
                        size_t at = (size_t)(((n * og + g) * k_n + ti) * nd + i) * (size_t)out_n +
                                    (size_t)oi;
                        p[i] = (double)(o[i] * win.stride[i] - win.pad_begin[i] +
                                        t[i] * win.dilation[i]) +
                               ref_nn_get(offset->type, offset->data, at);
                    }
                    double v = deform_sample(x, (size_t)((n * c + ch) * in_n), nd, win.in, p);
                    if (mask != NULL)
                        v *= ref_nn_get(mask->type, mask->data,
                                        (size_t)((n * og + g) * k_n + ti) * (size_t)out_n +
                                            (size_t)oi);
                    if (v == 0.0)
                        continue;
                    int64_t gi = ch / cg;
                    for (int64_t mm = gi * mg; mm < (gi + 1) * mg; mm++)
                        acc[mm] += v * ref_nn_get(w->type, w->data,
                                                  (size_t)((mm * cg + ch % cg) * k_n + ti));
                }
                for (int i = nd - 1; i >= 0; i--) {
                    if (++t[i] < win.kernel[i])
                        break;
                    t[i] = 0;
                }
            }
            for (int64_t mm = 0; mm < m; mm++)
                ref_nn_set(y->type, y->data, (size_t)((n * m + mm) * out_n + oi), acc[mm]);
            for (int i = nd - 1; i >= 0; i--) {
                if (++o[i] < win.out[i])
                    break;
                o[i] = 0;
            }
        }
    }
    ref_tmp_free(acc);
    return RN_OK;
}

const plugin_kernel ref_kernel_deform_conv = {
    .domain = "",
    .op_type = "DeformConv",
    .impl_type = "ref",
    .supports = deform_conv_supports,
    .run = deform_conv_run,
};
