/* REF Swish (opset 24): y = x * sigmoid(alpha * x), computed in double. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"

static bool swish_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 1, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

static rn_status swish_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 1, false);
    if (present != RN_OK)
        return present;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    double alpha = graph_node_attr_float(args->node, "alpha", 1.0f);
    size_t count = graph_tensor_count(x);
    for (size_t i = 0; i < count; i++) {
        double v = ref_nn_get(x->type, x->data, i);
        ref_nn_set(y->type, y->data, i, v / (1.0 + exp(-alpha * v)));
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_swish = {
    .domain = "",
    .op_type = "Swish",
    .impl_type = "ref",
    .supports = swish_supports,
    .run = swish_run,
};
