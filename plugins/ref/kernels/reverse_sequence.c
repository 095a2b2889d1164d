/* REF ReverseSequence: for every batch entry b, reverses the first
 * sequence_lens[b] steps along the time axis and copies the rest. The batch
 * and time axes are 0 and 1 in either order; the dims after them form one
 * contiguous block per (batch, time) pair. A length outside [0, time] is an
 * error. Elements move by bytes, so every fixed-size type works. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_reverse_sequence(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_reverse_sequence(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *lens = &args->inputs[1];
    int64_t ba = graph_node_attr_int(node, "batch_axis", 1);
    int64_t ta = graph_node_attr_int(node, "time_axis", 0);
    if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta || x->rank < 2)
        return rn_set_error(RN_INVALID_ARG,
                            REF_IX_FMT "batch_axis %lld and time_axis %lld must be 0 and 1 of an "
                                       "input of rank >= 2 (rank %d)",
                            REF_IX_ARGS(node), (long long)ba, (long long)ta, x->rank);
    int64_t batch = x->dims[ba], steps = x->dims[ta];
    if (lens->rank != 1 || lens->dims[0] != batch)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "sequence_lens must be [%lld] (one per batch entry)",
                            REF_IX_ARGS(node), (long long)batch);
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    int64_t inner = 1;
    for (int d = 2; d < x->rank; d++)
        inner *= x->dims[d];
    size_t block = (size_t)inner * rn_element_type_size(x->type);
    /* Element (b, t) block offset: b * stride_b + t * stride_t (in blocks). */
    int64_t stride_b = ba == 0 ? steps : 1, stride_t = ta == 0 ? batch : 1;
    for (int64_t b = 0; b < batch; b++) {
        int64_t len = ref_mv_int_at(lens, (size_t)b);
        if (len < 0 || len > steps)
            return rn_set_error(RN_INVALID_ARG,
                                REF_IX_FMT "sequence_lens[%lld] = %lld is not in [0, %lld]",
                                REF_IX_ARGS(node), (long long)b, (long long)len, (long long)steps);
        for (int64_t t = 0; t < steps; t++) {
            int64_t from = t < len ? len - 1 - t : t;
            memcpy((char *)y->data + (size_t)(b * stride_b + t * stride_t) * block,
                   (const char *)x->data + (size_t)(b * stride_b + from * stride_t) * block, block);
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_reverse_sequence = {
    .domain = "",
    .op_type = "ReverseSequence",
    .impl_type = "ref",
    .supports = supports_reverse_sequence,
    .run = run_reverse_sequence,
};
