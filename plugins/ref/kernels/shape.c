/* REF Shape and Size: they read the input's shape, never its data. */
#include "graph/ops/attr_parse.h"
#include "plugins/ref/kernels/movement.h"

static bool supports_any(const graph_node *node, const char **why)
{
    (void)node, (void)why;
    return true;
}

static rn_status run_shape(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    int64_t r = x->rank;
    int64_t start, end;
    graph_shape_range(args->node, (int)r, &start, &end);
    int64_t n = end > start ? end - start : 0;
    if (y->type != RN_I64 || (int64_t)graph_tensor_count(y) != n)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "output is not i64[%lld]",
                            REF_MV_NODE_ARGS(args->node), (long long)n);
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)y->data)[i] = x->dims[start + i];
    return RN_OK;
}

static rn_status run_size(plugin_kernel_args *args)
{
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    if (y->type != RN_I64 || graph_tensor_count(y) != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "output is not an i64 scalar",
                            REF_MV_NODE_ARGS(args->node));
    *(int64_t *)y->data = (int64_t)graph_tensor_count(&args->inputs[0]);
    return RN_OK;
}

const plugin_kernel ref_kernel_shape = {
    .domain = "",
    .op_type = "Shape",
    .impl_type = "ref",
    .supports = supports_any,
    .run = run_shape,
};

const plugin_kernel ref_kernel_size = {
    .domain = "",
    .op_type = "Size",
    .impl_type = "ref",
    .supports = supports_any,
    .run = run_size,
};
