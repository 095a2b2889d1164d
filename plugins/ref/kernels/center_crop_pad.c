/* REF CenterCropPad: crops or zero-pads each of `axes` (all axes by default)
 * to the extent given by input 1, keeping the content centered. When the
 * difference is odd, the extra element is cropped from (or padded at) the
 * end, as the ONNX reference does. Elements move by bytes, so every
 * fixed-size type works. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_center_crop_pad(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_center_crop_pad(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    if (y->rank != x->rank || y->type != x->type)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output rank %d, input rank %d",
                            REF_IX_ARGS(node), y->rank, x->rank);
    /* Per dim: the copied extent and where it starts in input and output.
     * The target extents come from shape inference (the output's dims). */
    int64_t len[RN_MAX_RANK], in0[RN_MAX_RANK], out0[RN_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        int64_t from = x->dims[d], to = y->dims[d];
        len[d] = from < to ? from : to;
        in0[d] = from > to ? (from - to) / 2 : 0;
        out0[d] = to > from ? (to - from) / 2 : 0;
    }
    size_t es = rn_element_type_size(x->type), total = graph_tensor_count(y);
    if (total == 0)
        return RN_OK;
    memset(y->data, 0, total * es);
    int64_t boxes = 1;
    for (int d = 0; d < x->rank; d++)
        boxes *= len[d];
    if (boxes == 0)
        return RN_OK;
    int64_t xs[RN_MAX_RANK], ys[RN_MAX_RANK], pos[RN_MAX_RANK] = {0};
    plugin_strides(x->rank, x->dims, xs);
    plugin_strides(y->rank, y->dims, ys);
    int last = x->rank - 1;
    size_t row = (size_t)(x->rank > 0 ? len[last] : 1) * es;
    int64_t rows = x->rank > 0 ? boxes / len[last] : 1;
    for (int64_t r = 0; r < rows; r++) {
        int64_t xo = 0, yo = 0;
        for (int d = 0; d < x->rank; d++) {
            xo += (in0[d] + pos[d]) * xs[d];
            yo += (out0[d] + pos[d]) * ys[d];
        }
        memcpy((char *)y->data + (size_t)yo * es, (const char *)x->data + (size_t)xo * es, row);
        for (int d = last - 1; d >= 0 && ++pos[d] == len[d]; d--)
            pos[d] = 0;
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_center_crop_pad = {
    .domain = "",
    .op_type = "CenterCropPad",
    .impl_type = "ref",
    .supports = supports_center_crop_pad,
    .run = run_center_crop_pad,
};
