/* REF Hardmax: 1 at the first maximum of each line and 0 elsewhere. From
 * opset 13 the lines run along `axis` (default -1); before, the input is
 * coerced to 2-D at `axis` (default 1) and each line is a whole row of
 * prod(dims[axis:]) elements. NaN counts as the largest value (numpy's
 * argmax). */
#include "plugins/ref/kernels/indexing.h"

static bool supports_hardmax(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 1u, 1u, false, why);
}

static rn_status run_hardmax(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    bool coerce_2d = node->opset < 13;
    int axis;
    REF_IX_TRY(ref_ix_axis(node, "axis", coerce_2d ? 1 : -1, x->rank, &axis));
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    int64_t outer, dim, inner;
    ref_ix_split(x, axis, &outer, &dim, &inner);
    if (coerce_2d) {
        dim *= inner;
        inner = 1;
    }
    size_t n = graph_tensor_count(x);
    for (size_t i = 0; i < n; i++)
        ref_mv_store_double(y->type, y->data, i, 0.0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner && dim > 0; in++) {
            size_t base = (size_t)(o * dim * inner + in), best = base;
            for (int64_t j = 1; j < dim; j++) {
                size_t i = base + (size_t)(j * inner);
                if (ref_ix_compare(x->type, x->data, i, x->data, best) > 0)
                    best = i;
            }
            ref_mv_store_double(y->type, y->data, best, 1.0);
        }
    return RN_OK;
}

const plugin_kernel ref_kernel_hardmax = {
    .domain = "",
    .op_type = "Hardmax",
    .impl_type = "ref",
    .supports = supports_hardmax,
    .run = run_hardmax,
};
