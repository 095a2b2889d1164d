/* REF Unique: without `axis`, the distinct elements of the flattened input;
 * with `axis`, the distinct slices along it (compared lexicographically in
 * row-major order of the other dims, as numpy does).
 * Outputs: Y, the unique items; indices, each one's first occurrence;
 * inverse_indices, the unique item each input item maps to; counts. With
 * sorted=1 (the default) the items are in ascending order, else in order of
 * first occurrence. NaN compares equal to NaN and after every number.
 *
 * The number of unique items is known only here, so Y, indices and counts
 * are allocated by this kernel (alloc_output); inverse_indices has one entry
 * per input item and comes from shape inference. */
#include "plugins/ref/kernels/indexing.h"
#include "plugins/ref/kernels/tmp.h"

static bool supports_unique(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 1u, 1u, true, why);
}

/* Item j of x viewed as [outer, dim, inner]: the elements (o, j, i). */
typedef struct item_order {
    rn_element_type type;
    const void *data;
    int64_t outer, dim, inner;
} item_order;

static int order_items(const void *ctx, int64_t a, int64_t b)
{
    const item_order *u = ctx;
    for (int64_t o = 0; o < u->outer; o++) {
        size_t row = (size_t)(o * u->dim * u->inner);
        for (int64_t i = 0; i < u->inner; i++) {
            int c = ref_ix_compare(u->type, u->data, row + (size_t)(a * u->inner + i), u->data,
                                   row + (size_t)(b * u->inner + i));
            if (c != 0)
                return c;
        }
    }
    return 0;
}

/* Output i unless the node omits it; allocated with (rank, dims) when the
 * executor left it without a buffer. */
static rn_status output(plugin_kernel_args *args, int i, int rank, const int64_t *dims,
                        graph_tensor **out)
{
    *out = NULL;
    if (i >= args->n_outputs || args->node->outputs[i] == NULL)
        return RN_OK;
    graph_tensor *t = &args->outputs[i];
    if (t->data == NULL) {
        if (args->alloc_output == NULL)
            return rn_set_error(RN_INTERNAL, REF_IX_FMT "output %d has no buffer",
                                REF_IX_ARGS(args->node), i);
        REF_IX_TRY(args->alloc_output(args, i, rank, dims));
    }
    if (t->rank != rank || memcmp(t->dims, dims, sizeof *dims * (size_t)rank) != 0)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output %d has another shape",
                            REF_IX_ARGS(args->node), i);
    *out = t;
    return RN_OK;
}

static rn_status run_unique(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    bool has_axis = graph_node_attr(node, "axis") != NULL;
    bool sorted = graph_node_attr_int(node, "sorted", 1) != 0;
    int axis = 0;
    item_order u = {.type = x->type, .data = x->data, .outer = 1, .inner = 1};
    u.dim = (int64_t)graph_tensor_count(x);
    if (has_axis) {
        REF_IX_TRY(ref_ix_axis(node, "axis", 0, x->rank, &axis));
        ref_ix_split(x, axis, &u.outer, &u.dim, &u.inner);
    }
    int64_t n = u.dim;
    /* order: items sorted; group: item -> group in sorted order; first and
     * count per sorted group; rank: sorted group -> output position. */
    int64_t *buf = ref_tmp_alloc(sizeof *buf * 6 * (size_t)(n ? n : 1));
    if (buf == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, REF_IX_FMT "out of memory", REF_IX_ARGS(node));
    int64_t *order = buf, *tmp = buf + n, *group = buf + 2 * n, *first = buf + 3 * n;
    int64_t *count = buf + 4 * n, *pos = buf + 5 * n;
    for (int64_t j = 0; j < n; j++)
        order[j] = j;
    ref_ix_sort(order, tmp, n, order_items, &u);
    int64_t groups = 0;
    for (int64_t s = 0; s < n; s++) {
        if (s == 0 || order_items(&u, order[s - 1], order[s]) != 0) {
            first[groups] = order[s]; /* the sort is stable: lowest index first */
            count[groups++] = 0;
        }
        group[order[s]] = groups - 1;
        count[groups - 1]++;
    }
    /* pos[g]: output position of sorted group g. Unsorted output lists the
     * groups by first occurrence, which a scan of the input meets in order. */
    if (sorted) {
        for (int64_t g = 0; g < groups; g++)
            pos[g] = g;
    } else {
        int64_t next = 0;
        for (int64_t g = 0; g < groups; g++)
            pos[g] = -1;
        for (int64_t j = 0; j < n; j++)
            if (pos[group[j]] < 0)
                pos[group[j]] = next++;
    }
    int64_t ydims[RN_MAX_RANK] = {groups};
    if (has_axis) {
        memcpy(ydims, x->dims, sizeof ydims);
        ydims[axis] = groups;
    }
    graph_tensor *y, *yi, *inv, *cnt;
    rn_status st = output(args, 0, has_axis ? x->rank : 1, ydims, &y);
    if (st == RN_OK)
        st = output(args, 1, 1, &groups, &yi);
    if (st == RN_OK)
        st = output(args, 2, 1, &n, &inv);
    if (st == RN_OK)
        st = output(args, 3, 1, &groups, &cnt);
    if (st != RN_OK) {
        ref_tmp_free(buf);
        return st;
    }
    size_t block = (size_t)u.inner * rn_element_type_size(x->type);
    for (int64_t g = 0; g < groups; g++) {
        int64_t p = pos[g];
        for (int64_t o = 0; y != NULL && o < u.outer; o++)
            memcpy((char *)y->data + (size_t)(o * groups + p) * block,
                   (const char *)x->data + (size_t)(o * n + first[g]) * block, block);
        if (yi != NULL)
            ((int64_t *)yi->data)[p] = first[g];
        if (cnt != NULL)
            ((int64_t *)cnt->data)[p] = count[g];
    }
    for (int64_t j = 0; inv != NULL && j < n; j++)
        ((int64_t *)inv->data)[j] = pos[group[j]];
    ref_tmp_free(buf);
    return RN_OK;
}

const plugin_kernel ref_kernel_unique = {
    .domain = "",
    .op_type = "Unique",
    .impl_type = "ref",
    .supports = supports_unique,
    .run = run_unique,
};
