/* REF Slice: a strided view of the input. Starts, ends, axes and steps come
 * from inputs 1-4 (opset >= 10) or the attributes (before); the clamping is
 * graph_slice_axis, which shape inference used to shape the output. */
#include "graph/ops/attr_parse.h"
#include "plugins/ref/kernels/movement.h"

static bool supports_slice(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_slice(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    ref_mv_list starts = ref_mv_get_list(args, 1, "starts");
    ref_mv_list ends = ref_mv_get_list(args, 2, "ends");
    ref_mv_list axes = ref_mv_get_list(args, 3, "axes");
    ref_mv_list steps = ref_mv_get_list(args, 4, "steps");
    if (starts.n < 0 || starts.n > x->rank || ends.n != starts.n ||
        (axes.n >= 0 && axes.n != starts.n) || (steps.n >= 0 && steps.n != starts.n) ||
        y->rank != x->rank)
        return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "inconsistent starts/axes/steps",
                            REF_MV_NODE_ARGS(node));
    int64_t in_strides[RN_MAX_RANK], strides[RN_MAX_RANK], offset = 0;
    plugin_strides(x->rank, x->dims, in_strides);
    memcpy(strides, in_strides, sizeof strides);
    for (int i = 0; i < starts.n; i++) {
        int64_t a = axes.n >= 0 ? ref_mv_list_at(&axes, i) : i;
        if (a < 0)
            a += x->rank;
        int64_t step = steps.n >= 0 ? ref_mv_list_at(&steps, i) : 1;
        if (a < 0 || a >= x->rank || step == 0)
            return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "bad axis or step at %d",
                                REF_MV_NODE_ARGS(node), i);
        if (y->dims[a] == 0)
            continue; /* nothing is read: the start may lie outside */
        int64_t first;
        graph_slice_axis(x->dims[a], ref_mv_list_at(&starts, i), ref_mv_list_at(&ends, i), step,
                         &first);
        offset += first * in_strides[a];
        strides[a] = in_strides[a] * step;
    }
    ref_mv_view_copy(y->data, x->data, rn_element_type_size(x->type), y->rank, y->dims, strides,
                     offset);
    return RN_OK;
}

const plugin_kernel ref_kernel_slice = {
    .domain = "",
    .op_type = "Slice",
    .impl_type = "ref",
    .supports = supports_slice,
    .run = run_slice,
};
