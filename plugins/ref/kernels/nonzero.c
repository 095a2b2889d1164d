/* REF NonZero: the coordinates of the non-zero elements, as an i64 tensor of
 * [rank, count] listing them in row-major order (numpy.nonzero stacked). NaN
 * is non-zero, -0.0 is zero. The count is known only here, so the kernel
 * allocates the output (alloc_output). */
#include "plugins/ref/kernels/indexing.h"

static bool supports_non_zero(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 1u, 0u, true, why);
}

static bool is_non_zero(rn_element_type t, const void *data, size_t i)
{
    if (ref_ix_kind_of(t) == REF_IX_FLOAT)
        return ref_mv_load_double(t, data, i) != 0;
    return ref_ix_load_u(t, data, i) != 0;
}

static rn_status run_non_zero(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    size_t n = graph_tensor_count(x);
    int64_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += is_non_zero(x->type, x->data, i);
    int64_t dims[2] = {x->rank, count};
    graph_tensor *y = &args->outputs[0];
    if (y->data == NULL) {
        if (args->alloc_output == NULL)
            return rn_set_error(RN_INTERNAL, REF_IX_FMT "output has no buffer", REF_IX_ARGS(node));
        REF_IX_TRY(args->alloc_output(args, 0, 2, dims));
    }
    if (y->rank != 2 || y->dims[0] != dims[0] || y->dims[1] != dims[1] || y->type != RN_I64)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output is not i64 [%d, %lld]",
                            REF_IX_ARGS(node), x->rank, (long long)count);
    int64_t *out = y->data, pos[RN_MAX_RANK] = {0}, k = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_non_zero(x->type, x->data, i)) {
            for (int d = 0; d < x->rank; d++)
                out[d * count + k] = pos[d];
            k++;
        }
        for (int d = x->rank - 1; d >= 0 && ++pos[d] == x->dims[d]; d--)
            pos[d] = 0;
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_non_zero = {
    .domain = "",
    .op_type = "NonZero",
    .impl_type = "ref",
    .supports = supports_non_zero,
    .run = run_non_zero,
};
