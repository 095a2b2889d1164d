/* REF OneHot: output[..., d, ...] (d at `axis`) is values[1] (on) where d
 * equals the index at that position and values[0] (off) elsewhere. Indices
 * may be negative (counted from depth); an index outside [-depth, depth)
 * gives a row of off values, as the spec says. The output has the element
 * type of `values` and is written by byte copies, so every fixed-size type
 * works. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_one_hot(const graph_node *node, const char **why)
{
    if (!ref_mv_supports_types(node, 4u, why))
        return false;
    return ref_ix_supports_values(node, 3u, 0u, false, why);
}

static rn_status run_one_hot(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *idx = &args->inputs[0], *dt = &args->inputs[1], *vals = &args->inputs[2];
    if (graph_tensor_count(dt) != 1 || graph_tensor_count(vals) != 2)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "depth must hold one value and values two (off, on)",
                            REF_IX_ARGS(node));
    double depth_d = ref_mv_load_double(dt->type, dt->data, 0);
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    int axis;
    REF_IX_TRY(ref_ix_axis(node, "axis", -1, idx->rank + 1, &axis));
    if (y->rank != idx->rank + 1 || y->type != vals->type ||
        !(depth_d >= 1 && depth_d <= INT32_MAX) || y->dims[axis] != (int64_t)depth_d)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output does not match depth %g",
                            REF_IX_ARGS(node), depth_d);
    int64_t depth = y->dims[axis];
    size_t es = rn_element_type_size(vals->type);
    const char *off_v = vals->data, *on_v = off_v + es;
    /* Output viewed as [outer, depth, inner], indices as [outer, inner]. */
    int64_t outer, dim, inner;
    ref_ix_split(y, axis, &outer, &dim, &inner);
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t in = 0; in < inner; in++, dst += es) {
                size_t i = (size_t)(o * inner + in);
                double v = ref_mv_load_double(idx->type, idx->data, i);
                int64_t hot = v >= -(double)depth && v < (double)depth ? (int64_t)v : INT64_MIN;
                if (hot < 0 && hot != INT64_MIN)
                    hot += depth;
                memcpy(dst, hot == d ? on_v : off_v, es);
            }
    return RN_OK;
}

const plugin_kernel ref_kernel_one_hot = {
    .domain = "",
    .op_type = "OneHot",
    .impl_type = "ref",
    .supports = supports_one_hot,
    .run = run_one_hot,
};
