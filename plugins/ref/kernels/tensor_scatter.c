/* REF TensorScatter (opset 24): writes `update` into a copy of `past_cache`
 * along the sequence axis, starting for batch b at write_indices[b] (0 when
 * the input is omitted). Mode 'linear' requires the write to fit in the
 * cache; 'circular' wraps positions modulo the cache length. This is the
 * KV-cache update of attention decoders, so the op moves bytes and works for
 * every fixed-size element type. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_tensor_scatter(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 3u, why);
}

static rn_status run_tensor_scatter(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *cache = &args->inputs[0], *upd = &args->inputs[1];
    const graph_tensor *wi = ref_mv_opt_input(args, 2);
    bool circular = strcmp(graph_node_attr_string(node, "mode", "linear"), "circular") == 0;
    if (upd->type != cache->type)
        return rn_set_error(RN_TYPE_MISMATCH, REF_IX_FMT "update is %s but past_cache is %s",
                            REF_IX_ARGS(node), rn_element_type_name(upd->type),
                            rn_element_type_name(cache->type));
    if (cache->rank < 2 || upd->rank != cache->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "past_cache (rank %d) and update (rank %d) must share a "
                                       "rank >= 2",
                            REF_IX_ARGS(node), cache->rank, upd->rank);
    int axis;
    REF_IX_TRY(ref_ix_axis(node, "axis", -2, cache->rank, &axis));
    if (axis == 0)
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "axis must not be the batch axis 0",
                            REF_IX_ARGS(node));
    for (int d = 0; d < cache->rank; d++)
        if (d == axis ? upd->dims[d] > cache->dims[d] : upd->dims[d] != cache->dims[d])
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_IX_FMT "update dim %d (%lld) does not fit past_cache's (%lld)",
                                REF_IX_ARGS(node), d, (long long)upd->dims[d],
                                (long long)cache->dims[d]);
    int64_t batch = cache->dims[0];
    if (wi != NULL && (wi->rank != 1 || wi->dims[0] != batch))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "write_indices must be [%lld] (one per batch entry)",
                            REF_IX_ARGS(node), (long long)batch);
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    size_t es = rn_element_type_size(cache->type);
    if (graph_tensor_count(cache) == 0)
        return RN_OK;
    memcpy(y->data, cache->data, graph_tensor_count(cache) * es);
    /* Rows: the dims between batch and axis; each row holds max_len (cache)
     * or seq_len (update) blocks of `inner` elements. */
    int64_t rows_per_batch = 1, inner = 1, max_len = cache->dims[axis], seq = upd->dims[axis];
    for (int d = 1; d < axis; d++)
        rows_per_batch *= cache->dims[d];
    for (int d = axis + 1; d < cache->rank; d++)
        inner *= cache->dims[d];
    size_t block = (size_t)inner * es;
    for (int64_t b = 0; b < batch; b++) {
        int64_t start = wi != NULL ? ref_mv_int_at(wi, (size_t)b) : 0;
        if (start < 0 || (!circular && start > max_len - seq))
            return rn_set_error(RN_INVALID_ARG,
                                REF_IX_FMT "write index %lld for batch %lld: %lld positions do "
                                           "not fit a cache of %lld",
                                REF_IX_ARGS(node), (long long)start, (long long)b, (long long)seq,
                                (long long)max_len);
        for (int64_t r = 0; r < rows_per_batch; r++) {
            int64_t row = b * rows_per_batch + r;
            char *dst = (char *)y->data + (size_t)(row * max_len) * block;
            const char *src = (const char *)upd->data + (size_t)(row * seq) * block;
            for (int64_t s = 0; s < seq; s++) {
                int64_t p = circular ? (start % max_len + s) % max_len : start + s;
                memcpy(dst + (size_t)p * block, src + (size_t)s * block, block);
            }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_tensor_scatter = {
    .domain = "",
    .op_type = "TensorScatter",
    .impl_type = "ref",
    .supports = supports_tensor_scatter,
    .run = run_tensor_scatter,
};
