/* REF EyeLike: a 2-D tensor of the input's shape with ones on the k-th
 * diagonal (k > 0 above the main one, k < 0 below) and zeros elsewhere, of
 * type `dtype` (default: the input's type). */
#include "plugins/ref/kernels/indexing.h"

static bool supports_eye_like(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 0u, 1u, true, why);
}

static rn_status run_eye_like(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    if (x->rank != 2 || y->rank != 2)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "input must be 2-D, got rank %d",
                            REF_IX_ARGS(node), x->rank);
    int64_t rows = y->dims[0], cols = y->dims[1];
    int64_t k = graph_node_attr_int(node, "k", 0);
    size_t es = rn_element_type_size(y->type);
    if (rows * cols == 0)
        return RN_OK;
    memset(y->data, 0, (size_t)(rows * cols) * es);
    /* Row i holds its one at column i + k; the diagonal misses the matrix
     * unless -rows < k < cols (checked first, so -k cannot overflow). */
    if (k <= -rows || k >= cols)
        return RN_OK;
    for (int64_t i = k < 0 ? -k : 0; i < rows && i + k < cols; i++)
        ref_mv_store_double(y->type, y->data, (size_t)(i * cols + i + k), 1.0);
    return RN_OK;
}

const plugin_kernel ref_kernel_eye_like = {
    .domain = "",
    .op_type = "EyeLike",
    .impl_type = "ref",
    .supports = supports_eye_like,
    .run = run_eye_like,
};
