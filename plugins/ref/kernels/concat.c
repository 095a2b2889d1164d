/* REF Concat and Split: block copies along one axis. Above the axis the
 * tensors are `outer` rows; each input (output) contributes one contiguous
 * block per row. */
#include "plugins/ref/kernels/movement.h"

static bool supports_concat(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, UINT32_MAX, why);
}

/* Bytes of one row of t from `axis` on. */
static size_t block_bytes(const graph_tensor *t, int axis)
{
    size_t n = rn_element_type_size(t->type);
    for (int d = axis; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

static int64_t outer_rows(const graph_tensor *t, int axis)
{
    int64_t n = 1;
    for (int d = 0; d < axis; d++)
        n *= t->dims[d];
    return n;
}

static rn_status norm_axis(const graph_node *node, int64_t axis, int rank, int *out)
{
    *out = 0;
    if (axis < -rank || axis >= rank)
        return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "axis %lld out of range for rank %d",
                            REF_MV_NODE_ARGS(node), (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return RN_OK;
}

static rn_status run_concat(plugin_kernel_args *args)
{
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (graph_tensor_count(y) == 0)
        return RN_OK;
    int axis;
    REF_MV_TRY(norm_axis(args->node, graph_node_attr_int(args->node, "axis", 1), y->rank, &axis));
    int64_t rows = outer_rows(y, axis);
    size_t out_block = block_bytes(y, axis), pos = 0;
    for (int i = 0; i < args->n_inputs; i++) {
        const graph_tensor *x = &args->inputs[i];
        size_t in_block = block_bytes(x, axis);
        if (pos + in_block > out_block)
            return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "inputs exceed the output",
                                REF_MV_NODE_ARGS(args->node));
        for (int64_t r = 0; r < rows && in_block > 0; r++)
            memcpy((char *)y->data + (size_t)r * out_block + pos,
                   (const char *)x->data + (size_t)r * in_block, in_block);
        pos += in_block;
    }
    return RN_OK;
}

/* Split: part i of the axis comes from the split list, or else from the
 * equal-parts rule (the last part takes what remains), as inference has it. */
static rn_status run_split(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    int axis;
    REF_MV_TRY(norm_axis(args->node, graph_node_attr_int(args->node, "axis", 0), x->rank, &axis));
    int64_t rows = outer_rows(x, axis), dim = x->dims[axis];
    size_t in_block = block_bytes(x, axis);
    size_t unit = axis + 1 < x->rank ? block_bytes(x, axis + 1) : rn_element_type_size(x->type);
    ref_mv_list split = ref_mv_get_list(args, 1, "split");
    int n = args->n_outputs;
    int64_t chunk = (dim + n - 1) / n, at = 0;
    for (int i = 0; i < n; i++) {
        int64_t part = split.n >= 0 ? (i < split.n ? ref_mv_list_at(&split, i) : 0)
                                    : (i < n - 1 ? chunk : dim - chunk * (n - 1));
        if (part < 0 || at + part > dim)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_MV_NODE_FMT "part %d (%lld) does not fit an axis of %lld",
                                REF_MV_NODE_ARGS(args->node), i, (long long)part, (long long)dim);
        graph_tensor *y = &args->outputs[i];
        if (y->type != RN_UNDEFINED) { /* else an omitted output */
            REF_MV_TRY(ref_mv_output(args, i, &y));
            size_t out_block = (size_t)part * unit;
            for (int64_t r = 0; r < rows && out_block > 0; r++)
                memcpy((char *)y->data + (size_t)r * out_block,
                       (const char *)x->data + (size_t)r * in_block + (size_t)at * unit, out_block);
        }
        at += part;
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_concat = {
    .domain = "",
    .op_type = "Concat",
    .impl_type = "ref",
    .supports = supports_concat,
    .run = run_concat,
};

const plugin_kernel ref_kernel_split = {
    .domain = "",
    .op_type = "Split",
    .impl_type = "ref",
    .supports = supports_concat,
    .run = run_split,
};
