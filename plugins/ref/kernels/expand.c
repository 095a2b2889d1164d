/* REF Expand: numpy broadcasting of the input to the output's shape, as a
 * strided view with stride 0 along the broadcast dims. */
#include "plugins/ref/kernels/movement.h"

static bool supports_expand(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_expand(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (x->rank > y->rank)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "input rank %d above output's %d",
                            REF_MV_NODE_ARGS(args->node), x->rank, y->rank);
    int64_t in_strides[RN_MAX_RANK], strides[RN_MAX_RANK] = {0};
    plugin_strides(x->rank, x->dims, in_strides);
    for (int d = 0; d < y->rank; d++) {
        int xd = d - (y->rank - x->rank);
        int64_t dim = xd >= 0 ? x->dims[xd] : 1;
        if (dim != 1 && dim != y->dims[d])
            return rn_set_error(
                RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "input dim %d (%lld) cannot broadcast to %lld",
                REF_MV_NODE_ARGS(args->node), xd, (long long)dim, (long long)y->dims[d]);
        strides[d] = dim == 1 ? 0 : in_strides[xd];
    }
    ref_mv_view_copy(y->data, x->data, rn_element_type_size(x->type), y->rank, y->dims, strides, 0);
    return RN_OK;
}

const plugin_kernel ref_kernel_expand = {
    .domain = "",
    .op_type = "Expand",
    .impl_type = "ref",
    .supports = supports_expand,
    .run = run_expand,
};
