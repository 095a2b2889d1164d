/* REF Transpose: a strided view of the input with permuted strides (perm read
 * by graph_transpose_perm, as for shape inference). */
#include "graph/ops/attr_parse.h"
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
    int perm[RN_MAX_RANK];
    REF_MV_TRY(graph_transpose_perm(args->node, x->rank, perm));
    int64_t in_strides[RN_MAX_RANK], strides[RN_MAX_RANK];
    plugin_strides(x->rank, x->dims, in_strides);
    for (int k = 0; k < x->rank; k++)
        strides[k] = in_strides[perm[k]];
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
