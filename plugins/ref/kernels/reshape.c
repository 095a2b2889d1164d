/* REF Reshape, Squeeze and Unsqueeze: the output holds the input's elements
 * in the same order, so each is one copy; inference has checked the shapes. */
#include "plugins/ref/kernels/movement.h"

static bool supports_reshape(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_reshape(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    size_t count = graph_tensor_count(x);
    if (graph_tensor_count(y) != count || y->type != x->type)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_MV_NODE_FMT "output holds %zu elements of %s, input %zu of %s",
                            REF_MV_NODE_ARGS(args->node), graph_tensor_count(y),
                            rn_element_type_name(y->type), count, rn_element_type_name(x->type));
    if (count > 0 && y->data != x->data)
        memcpy(y->data, x->data, count * rn_element_type_size(x->type));
    return RN_OK;
}

const plugin_kernel ref_kernel_reshape = {
    .domain = "",
    .op_type = "Reshape",
    .impl_type = "ref",
    .supports = supports_reshape,
    .run = run_reshape,
    .flags = RN_KERNEL_VIEW,
};

const plugin_kernel ref_kernel_squeeze = {
    .domain = "",
    .op_type = "Squeeze",
    .impl_type = "ref",
    .supports = supports_reshape,
    .run = run_reshape,
    .flags = RN_KERNEL_VIEW,
};

const plugin_kernel ref_kernel_unsqueeze = {
    .domain = "",
    .op_type = "Unsqueeze",
    .impl_type = "ref",
    .supports = supports_reshape,
    .run = run_reshape,
    .flags = RN_KERNEL_VIEW,
};
