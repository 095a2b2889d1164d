/* REF Transpose: a strided view of the input with permuted strides. */
#include "plugins/ref/kernels/movement.h"

static bool supports_transpose(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_transpose(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    const int64_t *perm;
    int n = graph_node_attr_ints(args->node, "perm", &perm);
    if (n >= 0 && n != x->rank)
        return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "perm has %d entries for rank %d",
                            REF_MV_NODE_ARGS(args->node), n, x->rank);
    int64_t in_strides[RN_MAX_RANK], strides[RN_MAX_RANK];
    plugin_strides(x->rank, x->dims, in_strides);
    for (int k = 0; k < x->rank; k++) {
        int64_t p = n >= 0 ? perm[k] : x->rank - 1 - k;
        if (p < 0 || p >= x->rank)
            return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "perm[%d] = %lld out of range",
                                REF_MV_NODE_ARGS(args->node), k, (long long)p);
        strides[k] = in_strides[p];
    }
    ref_mv_view_copy(y->data, x->data, rn_element_type_size(x->type), y->rank, y->dims, strides, 0);
    return RN_OK;
}

const plugin_kernel ref_kernel_transpose = {
    .domain = "",
    .op_type = "Transpose",
    .impl_type = "ref",
    .supports = supports_transpose,
    .run = run_transpose,
};
