/* REF LpNormalization: each vector along `axis` is divided by its L1 (sum of
 * |x|) or L2 norm; a zero norm gives zeros rather than NaNs (as the ONNX
 * reference does). */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool lp_norm_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 1, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    int64_t p = graph_node_attr_int(node, "p", 2);
    if (p != 1 && p != 2) {
        *why = "p is not 1 or 2";
        return false;
    }
    return true;
}

static rn_status lp_norm_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 1, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    int64_t axis = graph_node_attr_int(node, "axis", -1), p = graph_node_attr_int(node, "p", 2);
    if (r < 1 || axis < -r || axis >= r)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): axis %lld is out of range for rank %d",
                            node->name, node->op_type, (long long)axis, r);
    int ax = (int)(axis < 0 ? axis + r : axis);
    int64_t outer = ref_nn_span(x->dims, 0, ax), n = x->dims[ax];
    int64_t inner = ref_nn_span(x->dims, ax + 1, r);
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    if (v == NULL)
        return ref_nn_oom(node);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            double *base = v + o * n * inner + i, norm = 0.0;
            for (int64_t j = 0; j < n; j++)
                norm += p == 1 ? fabs(base[j * inner]) : base[j * inner] * base[j * inner];
            if (p == 2)
                norm = sqrt(norm);
            for (int64_t j = 0; j < n; j++)
                base[j * inner] = norm == 0.0 ? 0.0 : base[j * inner] / norm;
        }
    }
    ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    return RN_OK;
}

const plugin_kernel ref_kernel_lp_norm = {
    .domain = "",
    .op_type = "LpNormalization",
    .impl_type = "ref",
    .supports = lp_norm_supports,
    .run = lp_norm_run,
};
