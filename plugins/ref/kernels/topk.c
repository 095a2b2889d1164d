/* REF TopK: the k largest (largest=1, the default) or smallest elements
 * along `axis` with their indices. Equal values are ordered by the lower
 * index first, in both directions; NaN counts as larger than every number.
 * The output is always sorted (the order sorted=0 leaves open). k is input 1
 * from opset 10, attribute `k` before. */
#include "plugins/ref/kernels/indexing.h"
#include "plugins/ref/kernels/tmp.h"

static bool supports_top_k(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 1u, 1u, false, why);
}

typedef struct line_order {
    rn_element_type type;
    const void *data;
    int64_t base, stride; /* element of item j: base + j * stride */
    bool largest;
} line_order;

static int order_line(const void *ctx, int64_t a, int64_t b)
{
    const line_order *l = ctx;
    int c = ref_ix_compare(l->type, l->data, (size_t)(l->base + a * l->stride), l->data,
                           (size_t)(l->base + b * l->stride));
    return l->largest ? -c : c;
}

static rn_status run_top_k(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    const graph_tensor *kt = ref_mv_opt_input(args, 1);
    int64_t k;
    if (kt != NULL) {
        if (graph_tensor_count(kt) != 1)
            return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "K must hold one value, not %zu",
                                REF_IX_ARGS(node), graph_tensor_count(kt));
        k = ref_mv_int_at(kt, 0);
    } else {
        k = graph_node_attr_int(node, "k", -1);
    }
    if (x->rank < 1)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "input must have rank >= 1",
                            REF_IX_ARGS(node));
    int axis;
    REF_IX_TRY(ref_ix_axis(node, "axis", -1, x->rank, &axis));
    int64_t outer, dim, inner;
    ref_ix_split(x, axis, &outer, &dim, &inner);
    if (k < 0 || k > dim)
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "k %lld is not in [0, %lld]",
                            REF_IX_ARGS(node), (long long)k, (long long)dim);
    graph_tensor *vals, *idxs;
    REF_IX_TRY(ref_mv_output(args, 0, &vals));
    REF_IX_TRY(ref_mv_output(args, 1, &idxs));
    if (vals->rank != x->rank || vals->dims[axis] != k || idxs->type != RN_I64 ||
        graph_tensor_count(idxs) != graph_tensor_count(vals))
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "outputs do not have k = %lld along axis %d",
                            REF_IX_ARGS(node), (long long)k, axis);
    if (k == 0 || outer * inner == 0)
        return RN_OK;
    int64_t *items = ref_tmp_alloc(sizeof *items * 2 * (size_t)dim);
    if (items == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, REF_IX_FMT "out of memory", REF_IX_ARGS(node));
    size_t es = rn_element_type_size(x->type);
    line_order l = {.type = x->type,
                    .data = x->data,
                    .stride = inner,
                    .largest = graph_node_attr_int(node, "largest", 1) != 0};
    int64_t *out_idx = idxs->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            l.base = o * dim * inner + in;
            for (int64_t j = 0; j < dim; j++)
                items[j] = j;
            ref_ix_sort(items, items + dim, dim, order_line, &l);
            for (int64_t j = 0; j < k; j++) {
                size_t dst = (size_t)((o * k + j) * inner + in);
                memcpy((char *)vals->data + dst * es,
                       (const char *)x->data + (size_t)(l.base + items[j] * inner) * es, es);
                out_idx[dst] = items[j];
            }
        }
    ref_tmp_free(items);
    return RN_OK;
}

const plugin_kernel ref_kernel_top_k = {
    .domain = "",
    .op_type = "TopK",
    .impl_type = "ref",
    .supports = supports_top_k,
    .run = run_top_k,
};
