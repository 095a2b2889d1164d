/* REF LpPool: y = (sum over the window of |x|^p)^(1/p), with kernel_shape,
 * strides, pads / auto_pad and, from opset 18, dilations and ceil_mode.
 * Padding contributes zeros. A ceil_mode window that runs past the padded
 * input covers fewer positions; as in the ONNX reference (which averages
 * over the covered positions and multiplies by the kernel size) its sum is
 * scaled by kernel size / covered positions. Computed in double. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"

static bool lp_pool_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 1, why))
        return false;
    const graph_value *x = node->inputs[0];
    if (!ref_nn_is_float(x->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    if (x->shape.rank >= 0 && !ref_nn_window_attrs_ok(node, x->shape.rank - 2, why))
        return false;
    const int64_t *ks;
    if (x->shape.rank >= 0 &&
        graph_node_attr_ints(node, "kernel_shape", &ks) != x->shape.rank - 2) {
        *why = "kernel_shape is missing or of the wrong length";
        return false;
    }
    const graph_attr *p = graph_node_attr(node, "p");
    if (p != NULL && ((p->type == GRAPH_ATTR_INT && p->i < 1) ||
                      (p->type == GRAPH_ATTR_FLOAT && !(p->f > 0.0f)))) {
        *why = "p must be positive";
        return false;
    }
    return true;
}

static rn_status lp_pool_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 1, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    ref_nn_window w;
    rn_status st = ref_nn_window_init(node, x, y, NULL, &w);
    if (st != RN_OK)
        return st;
    /* p is an INT from opset 2 (a FLOAT in LpPool-1). */
    const graph_attr *pa = graph_node_attr(node, "p");
    double p = pa == NULL ? 2.0 : pa->type == GRAPH_ATTR_FLOAT ? pa->f : (double)pa->i;
    int64_t planes = x->dims[0] * x->dims[1];
    int64_t in_n = ref_nn_span(x->dims, 2, x->rank), out_n = ref_nn_span(y->dims, 2, y->rank);
    int n = w.n;
    int64_t k_n = ref_nn_span(w.kernel, 0, n);
    if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output shape does not match",
                            node->name, node->op_type);
    for (int64_t pl = 0; pl < planes; pl++) {
        int64_t o[RN_MAX_RANK] = {0};
        for (int64_t oi = 0; oi < out_n; oi++) {
            double sum = 0.0;
            int64_t covered = 0, t[RN_MAX_RANK] = {0};
            for (int64_t ki = 0; ki < k_n; ki++) {
                int64_t off = 0;
                bool inside = true, padded = true;
                for (int d = 0; d < n; d++) {
                    int64_t pos = o[d] * w.stride[d] - w.pad_begin[d] + t[d] * w.dilation[d];
                    inside &= pos >= 0 && pos < w.in[d];
                    padded &= pos < w.in[d] + w.pad_end[d];
                    off = off * w.in[d] + pos;
                }
                covered += padded;
                if (inside)
                    sum += pow(fabs(ref_nn_get(x->type, x->data, (size_t)(pl * in_n + off))), p);
                for (int d = n - 1; d >= 0; d--) {
                    if (++t[d] < w.kernel[d])
                        break;
                    t[d] = 0;
                }
            }
            if (covered > 0 && covered < k_n)
                sum *= (double)k_n / (double)covered;
            ref_nn_set(y->type, y->data, (size_t)(pl * out_n + oi), pow(sum, 1.0 / p));
            for (int d = n - 1; d >= 0; d--) {
                if (++o[d] < w.out[d])
                    break;
                o[d] = 0;
            }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_lp_pool = {
    .domain = "",
    .op_type = "LpPool",
    .impl_type = "ref",
    .supports = lp_pool_supports,
    .run = lp_pool_run,
};
