/* REF Compress: keeps the slices along `axis` (or, without an axis, the
 * elements of the flattened input) whose condition entry is true. The
 * condition may be shorter than the axis (the rest is dropped); a true entry
 * past the axis is an error. Elements move by bytes, so every fixed-size
 * type works. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_compress(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_compress(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *cond = &args->inputs[1];
    bool has_axis = graph_node_attr(node, "axis") != NULL;
    int axis = 0;
    int64_t outer = 1, dim = (int64_t)graph_tensor_count(x), inner = 1;
    if (has_axis) {
        REF_IX_TRY(ref_ix_axis(node, "axis", 0, x->rank, &axis));
        ref_ix_split(x, axis, &outer, &dim, &inner);
    }
    if (cond->rank != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "condition must be 1-D, got rank %d",
                            REF_IX_ARGS(node), cond->rank);
    int64_t n_cond = cond->dims[0], kept = 0;
    for (int64_t i = 0; i < n_cond; i++) {
        if (ref_mv_int_at(cond, (size_t)i) == 0)
            continue;
        if (i >= dim)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_IX_FMT "condition selects entry %lld of an axis of %lld",
                                REF_IX_ARGS(node), (long long)i, (long long)dim);
        kept++;
    }
    graph_tensor *y;
    if (args->outputs[0].data == NULL) {
        /* An executor that could not resolve the shape: allocate it here. */
        int64_t dims[RN_MAX_RANK] = {kept};
        if (has_axis) {
            memcpy(dims, x->dims, sizeof dims);
            dims[axis] = kept;
        }
        if (args->alloc_output == NULL)
            return rn_set_error(RN_INTERNAL, REF_IX_FMT "output has no buffer", REF_IX_ARGS(node));
        REF_IX_TRY(args->alloc_output(args, 0, has_axis ? x->rank : 1, dims));
    }
    y = &args->outputs[0];
    if (graph_tensor_count(y) != (size_t)(outer * kept * inner))
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output holds %zu elements, expected %lld",
                            REF_IX_ARGS(node), graph_tensor_count(y),
                            (long long)(outer * kept * inner));
    size_t block = (size_t)inner * rn_element_type_size(x->type);
    const char *src = x->data;
    char *dst = y->data;
    int64_t limit = n_cond < dim ? n_cond : dim;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < limit; i++)
            if (ref_mv_int_at(cond, (size_t)i) != 0) {
                memcpy(dst, src + (size_t)(o * dim + i) * block, block);
                dst += block;
            }
    return RN_OK;
}

const plugin_kernel ref_kernel_compress = {
    .domain = "",
    .op_type = "Compress",
    .impl_type = "ref",
    .supports = supports_compress,
    .run = run_compress,
};
