/* REF Tile: output axis k of extent repeats[k] * dims[k] is viewed as the
 * pair (repeat, position) with strides (0, stride_k), so one strided view of
 * twice the rank repeats the whole input. */
#include "plugins/ref/kernels/movement.h"

static bool supports_tile(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_tile(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (y->rank != x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "output rank %d, input rank %d",
                            REF_MV_NODE_ARGS(args->node), y->rank, x->rank);
    int64_t in_strides[RN_MAX_RANK];
    int64_t dims[REF_MV_MAX_VIEW_RANK] = {0}, strides[REF_MV_MAX_VIEW_RANK] = {0};
    plugin_strides(x->rank, x->dims, in_strides);
    if (graph_tensor_count(y) == 0)
        return RN_OK;
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 0 || y->dims[d] % x->dims[d] != 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_MV_NODE_FMT "output dim %d (%lld) is not a multiple of the "
                                                "input's (%lld)",
                                REF_MV_NODE_ARGS(args->node), d, (long long)y->dims[d],
                                (long long)x->dims[d]);
        dims[2 * d] = y->dims[d] / x->dims[d];
        strides[2 * d] = 0;
        dims[2 * d + 1] = x->dims[d];
        strides[2 * d + 1] = in_strides[d];
    }
    ref_mv_view_copy(y->data, x->data, rn_element_type_size(x->type), 2 * x->rank, dims, strides,
                     0);
    return RN_OK;
}

const plugin_kernel ref_kernel_tile = {
    .domain = "",
    .op_type = "Tile",
    .impl_type = "ref",
    .supports = supports_tile,
    .run = run_tile,
};
