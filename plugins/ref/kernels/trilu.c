/* REF Trilu: keeps the upper (upper=1, the default) or lower triangle of
 * every matrix formed by the last two dims and zeroes the rest. Element
 * (i, j) is kept when j - i >= k (upper) or j - i <= k (lower); k comes from
 * the optional input 1 (default 0). Zero is all-bytes-zero in every numeric
 * type and in bool, so the kernel moves bytes and works for all of them. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_trilu(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_trilu(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    const graph_tensor *kt = ref_mv_opt_input(args, 1);
    if (x->rank < 2)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "input must have rank >= 2, got %d",
                            REF_IX_ARGS(node), x->rank);
    int64_t k = 0;
    if (kt != NULL) {
        if (graph_tensor_count(kt) != 1)
            return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "k must hold one value, not %zu",
                                REF_IX_ARGS(node), graph_tensor_count(kt));
        k = ref_mv_int_at(kt, 0);
    }
    bool upper = graph_node_attr_int(node, "upper", 1) != 0;
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    size_t count = graph_tensor_count(x), es = rn_element_type_size(x->type);
    if (count == 0)
        return RN_OK;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t mats = (int64_t)count / (rows * cols);
    const char *src = x->data;
    char *dst = y->data;
    memset(dst, 0, count * es);
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < rows; i++) {
            /* The kept columns of row i form one run [lo, hi). Clamp k's
             * offset before adding so that huge k cannot overflow. */
            int64_t lo = 0, hi = cols;
            int64_t edge = k > cols ? cols + 1 : k < -rows ? -rows - 1 : k;
            if (upper)
                lo = i + edge < 0 ? 0 : i + edge > cols ? cols : i + edge;
            else
                hi = i + edge + 1 < 0 ? 0 : i + edge + 1 > cols ? cols : i + edge + 1;
            size_t off = (size_t)((m * rows + i) * cols + lo) * es;
            if (hi > lo)
                memcpy(dst + off, src + off, (size_t)(hi - lo) * es);
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_trilu = {
    .domain = "",
    .op_type = "Trilu",
    .impl_type = "ref",
    .supports = supports_trilu,
    .run = run_trilu,
};
