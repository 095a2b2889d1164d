/* REF ArrayFeatureExtractor (ai.onnx.ml): selects, along the last axis of X,
 * the columns that the (flattened) indices name, in their order. A 1-D X is
 * treated as one row, so the output is [1, n] (onnxruntime's reading of the
 * spec, which the ONNX reference follows). An index outside [0, C) is an
 * error. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_array_feature_extractor(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_array_feature_extractor(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *idx = &args->inputs[1];
    if (x->rank < 1)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "X must have rank >= 1",
                            REF_IX_ARGS(node));
    int64_t cols = x->dims[x->rank - 1];
    size_t rows = cols > 0 ? graph_tensor_count(x) / (size_t)cols : 0;
    size_t n = graph_tensor_count(idx), es = rn_element_type_size(x->type);
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    if (x->rank == 1)
        rows = 1;
    if (graph_tensor_count(y) != rows * n)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output holds %zu elements, expected %zu",
                            REF_IX_ARGS(node), graph_tensor_count(y), rows * n);
    for (size_t i = 0; i < n; i++) {
        int64_t c = ref_mv_int_at(idx, i);
        if (c < 0 || c >= cols)
            return rn_set_error(RN_INVALID_ARG,
                                REF_IX_FMT "index %lld is out of range for %lld columns",
                                REF_IX_ARGS(node), (long long)c, (long long)cols);
        for (size_t r = 0; r < rows; r++)
            memcpy((char *)y->data + (r * n + i) * es,
                   (const char *)x->data + (r * (size_t)cols + (size_t)c) * es, es);
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_array_feature_extractor = {
    .domain = "ai.onnx.ml",
    .op_type = "ArrayFeatureExtractor",
    .impl_type = "ref",
    .supports = supports_array_feature_extractor,
    .run = run_array_feature_extractor,
};
