/* REF ScatterElements, Scatter (its opset 9-10 name) and ScatterND.
 *
 * The output starts as a copy of data; each update is then written (or, with
 * a reduction, combined) at the place its index names. Updates are applied in
 * row-major order of the indices, so with reduction 'none' and duplicate
 * indices the last update wins (the spec leaves that case undefined).
 * Negative indices count from the end of their axis; an index out of range is
 * an error naming the node, never an out-of-bounds write.
 */
#include "plugins/ref/kernels/indexing.h"

static bool supports_scatter(const graph_node *node, const char **why)
{
    if (!ref_mv_supports_types(node, 1u | 4u, why))
        return false;
    const char *r = graph_node_attr_string(node, "reduction", "none");
    if (strcmp(r, "none") != 0)
        return ref_ix_supports_values(node, 1u | 4u, 1u, true, why);
    return true;
}

/* Copies data into the output and checks that updates has the element type
 * of data. */
static rn_status start_output(plugin_kernel_args *args, graph_tensor **out)
{
    const graph_tensor *x = &args->inputs[0], *upd = &args->inputs[2];
    if (upd->type != x->type)
        return rn_set_error(RN_TYPE_MISMATCH, REF_IX_FMT "updates are %s but data is %s",
                            REF_IX_ARGS(args->node), rn_element_type_name(upd->type),
                            rn_element_type_name(x->type));
    REF_IX_TRY(ref_mv_output(args, 0, out));
    if ((*out)->rank != x->rank || graph_tensor_count(*out) != graph_tensor_count(x))
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output shape differs from data's",
                            REF_IX_ARGS(args->node));
    if (graph_tensor_count(x) > 0)
        memcpy((*out)->data, x->data, graph_tensor_count(x) * rn_element_type_size(x->type));
    return RN_OK;
}

/* ScatterElements: for every position p of indices, output[p with p[axis]
 * replaced by indices[p]] = reduce(that, updates[p]). */
static rn_status run_scatter_elements(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *idx = &args->inputs[1], *upd = &args->inputs[2];
    ref_ix_reduction red = REF_IX_NONE;
    if (strcmp(node->op_type, "ScatterElements") == 0)
        REF_IX_TRY(ref_ix_get_reduction(node, &red));
    graph_tensor *y;
    REF_IX_TRY(start_output(args, &y));
    if (x->rank < 1 || idx->rank != x->rank || upd->rank != idx->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "data (rank %d), indices (rank %d) and updates (rank %d) "
                                       "must share a rank >= 1",
                            REF_IX_ARGS(node), x->rank, idx->rank, upd->rank);
    int axis;
    REF_IX_TRY(ref_ix_axis(node, "axis", 0, x->rank, &axis));
    for (int d = 0; d < x->rank; d++) {
        if (upd->dims[d] != idx->dims[d])
            return rn_set_error(
                RN_SHAPE_MISMATCH, REF_IX_FMT "updates dim %d (%lld) differs from indices' (%lld)",
                REF_IX_ARGS(node), d, (long long)upd->dims[d], (long long)idx->dims[d]);
        if (d != axis && idx->dims[d] > x->dims[d])
            return rn_set_error(
                RN_SHAPE_MISMATCH, REF_IX_FMT "indices dim %d (%lld) exceeds data's (%lld)",
                REF_IX_ARGS(node), d, (long long)idx->dims[d], (long long)x->dims[d]);
    }
    size_t n = graph_tensor_count(idx);
    int64_t strides[RN_MAX_RANK], pos[RN_MAX_RANK] = {0};
    plugin_strides(x->rank, x->dims, strides);
    for (size_t i = 0; i < n; i++) {
        int64_t j, off = 0;
        REF_IX_TRY(ref_ix_index(node, ref_mv_int_at(idx, i), x->dims[axis], "index", &j));
        for (int d = 0; d < x->rank; d++)
            off += (d == axis ? j : pos[d]) * strides[d];
        ref_ix_combine(x->type, red, y->data, (size_t)off, upd->data, i);
        for (int d = x->rank - 1; d >= 0 && ++pos[d] == idx->dims[d]; d--)
            pos[d] = 0;
    }
    return RN_OK;
}

/* ScatterND: indices [..., k] names k leading coordinates of data; each
 * tuple's update is the slice data[i0..ik-1, ...] of prod(dims[k:]) elements. */
static rn_status run_scatter_nd(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *idx = &args->inputs[1], *upd = &args->inputs[2];
    ref_ix_reduction red = REF_IX_NONE;
    REF_IX_TRY(ref_ix_get_reduction(node, &red));
    graph_tensor *y;
    REF_IX_TRY(start_output(args, &y));
    int64_t k = idx->rank > 0 ? idx->dims[idx->rank - 1] : 0;
    if (x->rank < 1 || k < 1 || k > x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "index tuples of %lld entries for data of rank %d",
                            REF_IX_ARGS(node), (long long)k, x->rank);
    /* updates = indices.shape[:-1] + data.shape[k:] */
    bool fits = upd->rank == idx->rank - 1 + x->rank - (int)k;
    for (int d = 0; fits && d < idx->rank - 1; d++)
        fits = upd->dims[d] == idx->dims[d];
    for (int d = (int)k; fits && d < x->rank; d++)
        fits = upd->dims[idx->rank - 1 + d - k] == x->dims[d];
    if (!fits)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "updates of rank %d do not match indices.shape[:-1] + "
                                       "data.shape[%lld:]",
                            REF_IX_ARGS(node), upd->rank, (long long)k);
    int64_t strides[RN_MAX_RANK];
    plugin_strides(x->rank, x->dims, strides);
    int64_t slice = k < x->rank ? strides[k - 1] : 1;
    size_t tuples = graph_tensor_count(idx) / (size_t)k;
    for (size_t t = 0; t < tuples; t++) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t v;
            REF_IX_TRY(ref_ix_index(node, ref_mv_int_at(idx, t * (size_t)k + (size_t)j), x->dims[j],
                                    "index", &v));
            off += v * strides[j];
        }
        for (int64_t e = 0; e < slice; e++)
            ref_ix_combine(x->type, red, y->data, (size_t)(off + e), upd->data,
                           t * (size_t)slice + (size_t)e);
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_scatter_elements = {
    .domain = "",
    .op_type = "ScatterElements",
    .impl_type = "ref",
    .supports = supports_scatter,
    .run = run_scatter_elements,
};

const plugin_kernel ref_kernel_scatter = {
    .domain = "",
    .op_type = "Scatter",
    .impl_type = "ref",
    .supports = supports_scatter,
    .run = run_scatter_elements,
};

const plugin_kernel ref_kernel_scatter_nd = {
    .domain = "",
    .op_type = "ScatterND",
    .impl_type = "ref",
    .supports = supports_scatter,
    .run = run_scatter_nd,
};
