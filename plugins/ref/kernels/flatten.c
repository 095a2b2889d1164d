/* REF Flatten: the output is the input's bytes under a 2-D shape that
 * inference computed, so the kernel is a copy for every fixed-size type. */
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

static bool flatten_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 1, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (rn_element_type_size(t) == 0) {
        *why = "input type is string or undefined";
        return false;
    }
    return true;
}

static rn_status flatten_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 1);
    if (args_st != RN_OK)
        return args_st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (graph_tensor_count(x) != graph_tensor_count(y) || x->type != y->type)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): output holds %zu values of %s, "
                            "input %zu of %s",
                            args->node->name, args->node->op_type, graph_tensor_count(y),
                            rn_element_type_name(y->type), graph_tensor_count(x),
                            rn_element_type_name(x->type));
    size_t bytes = graph_tensor_count(x) * rn_element_type_size(x->type);
    if (bytes > 0 && y->data != x->data)
        memmove(y->data, x->data, bytes);
    return RN_OK;
}

const plugin_kernel ref_kernel_flatten = {
    .domain = "",
    .op_type = "Flatten",
    .impl_type = "ref",
    .supports = flatten_supports,
    .run = flatten_run,
    .flags = RN_KERNEL_VIEW,
};
