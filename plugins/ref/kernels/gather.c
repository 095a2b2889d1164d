/* REF Gather, GatherElements and GatherND. Indices may be negative (counted
 * from the end of their axis); an index outside [-dim, dim) is an error
 * naming the node, never an out-of-bounds read. */
#include "plugins/ref/kernels/movement.h"

static bool supports_gather(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

/* Index i of `idx` normalised against dim, or an error. */
static rn_status index_at(const graph_node *node, const graph_tensor *idx, size_t i, int64_t dim,
                          int64_t *out)
{
    int64_t v = ref_mv_int_at(idx, i);
    if (v < -dim || v >= dim)
        return rn_set_error(RN_INVALID_ARG,
                            REF_MV_NODE_FMT "index %lld (indices element %zu) is out of range "
                                            "for an axis of %lld",
                            REF_MV_NODE_ARGS(node), (long long)v, i, (long long)dim);
    *out = v < 0 ? v + dim : v;
    return RN_OK;
}

static rn_status norm_axis(const graph_node *node, int rank, int *out)
{
    int64_t axis = graph_node_attr_int(node, "axis", 0);
    *out = 0;
    if (axis < -rank || axis >= rank)
        return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "axis %lld out of range for rank %d",
                            REF_MV_NODE_ARGS(node), (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return RN_OK;
}

/* Gather: data viewed as [outer, dim, inner]; each index selects one
 * [inner] block per outer row. */
static rn_status run_gather(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (graph_tensor_count(y) == 0)
        return RN_OK;
    int axis;
    REF_MV_TRY(norm_axis(args->node, x->rank, &axis));
    int64_t outer = 1, dim = x->dims[axis];
    size_t inner = rn_element_type_size(x->type);
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= (size_t)x->dims[d];
    size_t n_idx = graph_tensor_count(idx);
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++) {
        const char *row = (const char *)x->data + (size_t)o * (size_t)dim * inner;
        for (size_t i = 0; i < n_idx; i++, dst += inner) {
            int64_t j;
            REF_MV_TRY(index_at(args->node, idx, i, dim, &j));
            memcpy(dst, row + (size_t)j * inner, inner);
        }
    }
    return RN_OK;
}

/* GatherElements: output[o] = data[o with o[axis] replaced by indices[o]]. */
static rn_status run_gather_elements(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (graph_tensor_count(y) == 0)
        return RN_OK;
    int axis;
    REF_MV_TRY(norm_axis(args->node, x->rank, &axis));
    if (idx->rank != x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "indices rank %d, data rank %d",
                            REF_MV_NODE_ARGS(args->node), idx->rank, x->rank);
    for (int d = 0; d < x->rank; d++)
        if (d != axis && idx->dims[d] > x->dims[d])
            return rn_set_error(
                RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "indices dim %d (%lld) exceeds data's (%lld)",
                REF_MV_NODE_ARGS(args->node), d, (long long)idx->dims[d], (long long)x->dims[d]);
    int64_t strides[RN_MAX_RANK], pos[RN_MAX_RANK] = {0};
    plugin_strides(x->rank, x->dims, strides);
    size_t esize = rn_element_type_size(x->type), n = graph_tensor_count(idx);
    for (size_t i = 0; i < n; i++) {
        int64_t j, off = 0;
        REF_MV_TRY(index_at(args->node, idx, i, x->dims[axis], &j));
        for (int d = 0; d < x->rank; d++)
            off += (d == axis ? j : pos[d]) * strides[d];
        memcpy((char *)y->data + i * esize, (const char *)x->data + (size_t)off * esize, esize);
        for (int d = x->rank - 1; d >= 0 && ++pos[d] == idx->dims[d]; d--)
            pos[d] = 0;
    }
    return RN_OK;
}

/* GatherND: after batch_dims b shared leading dims, each index tuple of k
 * entries (the last indices dim) selects a slice data[batch, i0..ik-1, ...]. */
static rn_status run_gather_nd(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (graph_tensor_count(y) == 0)
        return RN_OK;
    int64_t b = graph_node_attr_int(args->node, "batch_dims", 0);
    int64_t k = idx->rank > 0 ? idx->dims[idx->rank - 1] : 0;
    if (b < 0 || b >= idx->rank || k < 1 || b + k > x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "bad batch_dims or index depth",
                            REF_MV_NODE_ARGS(args->node));
    int64_t batches = 1, per_batch = 1, x_batch = 1;
    size_t slice = rn_element_type_size(x->type);
    for (int d = 0; d < b; d++)
        batches *= x->dims[d];
    for (int d = (int)b; d < idx->rank - 1; d++)
        per_batch *= idx->dims[d];
    for (int d = (int)b; d < x->rank; d++)
        x_batch *= x->dims[d];
    for (int d = (int)(b + k); d < x->rank; d++)
        slice *= (size_t)x->dims[d];
    int64_t strides[RN_MAX_RANK];
    plugin_strides(x->rank, x->dims, strides);
    size_t esize = rn_element_type_size(x->type);
    char *dst = y->data;
    for (int64_t bi = 0; bi < batches; bi++) {
        for (int64_t t = 0; t < per_batch; t++, dst += slice) {
            size_t base = (size_t)((bi * per_batch + t) * k);
            int64_t off = bi * x_batch;
            for (int64_t j = 0; j < k; j++) {
                int64_t v;
                REF_MV_TRY(index_at(args->node, idx, base + (size_t)j, x->dims[b + j], &v));
                off += v * strides[b + j];
            }
            memcpy(dst, (const char *)x->data + (size_t)off * esize, slice);
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_gather = {
    .domain = "",
    .op_type = "Gather",
    .impl_type = "ref",
    .supports = supports_gather,
    .run = run_gather,
};

const plugin_kernel ref_kernel_gather_elements = {
    .domain = "",
    .op_type = "GatherElements",
    .impl_type = "ref",
    .supports = supports_gather,
    .run = run_gather_elements,
};

const plugin_kernel ref_kernel_gather_nd = {
    .domain = "",
    .op_type = "GatherND",
    .impl_type = "ref",
    .supports = supports_gather,
    .run = run_gather_nd,
};
