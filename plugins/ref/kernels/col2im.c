/* REF Col2Im: the inverse of im2col. The input [N, C * prod(block), L]
 * holds, for every one of the L sliding-block positions over the (padded)
 * image, the C * prod(block) values of that block; each value is added into
 * the image position it came from, so overlapping blocks sum. Positions
 * that fall into the padding are dropped. The output is [N, C, image...]. */
#include "graph/ops/attr_parse.h"
#include "plugins/ref/kernels/indexing.h"

#define MAX_SPATIAL (RN_MAX_RANK - 2)

static bool supports_col2im(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 1u, 1u, false, why);
}

/* An optional per-spatial-dim attribute of n (or 2n for pads) values, each
 * at least `min` (graph_window_ints) and within int32 (so that the block
 * arithmetic cannot overflow); absent gives `dflt`. */
static rn_status spatial_attr(const graph_node *node, const char *name, int n, int64_t dflt,
                              int64_t min, int64_t *out)
{
    REF_IX_TRY(graph_window_ints(node, name, n, dflt, min, out));
    for (int i = 0; i < n; i++)
        if (out[i] > INT32_MAX)
            return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "attribute %s[%d] is %lld",
                                REF_IX_ARGS(node), name, i, (long long)out[i]);
    return RN_OK;
}

static rn_status run_col2im(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *img = &args->inputs[1], *blk = &args->inputs[2];
    if (x->rank != 3 || img->rank != 1 || blk->rank != 1 || img->dims[0] != blk->dims[0] ||
        img->dims[0] < 1 || img->dims[0] > MAX_SPATIAL)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "expected input [N, C*blocks, L] with 1-D image_shape and "
                                       "block_shape of 1 to %d equal lengths",
                            REF_IX_ARGS(node), MAX_SPATIAL);
    int ns = (int)img->dims[0];
    int64_t image[MAX_SPATIAL], block[MAX_SPATIAL], dil[MAX_SPATIAL], str[MAX_SPATIAL];
    int64_t pads[2 * MAX_SPATIAL], n_blocks[MAX_SPATIAL];
    REF_IX_TRY(spatial_attr(node, "dilations", ns, 1, 1, dil));
    REF_IX_TRY(spatial_attr(node, "strides", ns, 1, 1, str));
    REF_IX_TRY(spatial_attr(node, "pads", 2 * ns, 0, 0, pads));
    int64_t block_size = 1, positions = 1;
    for (int i = 0; i < ns; i++) {
        image[i] = ref_mv_int_at(img, (size_t)i);
        block[i] = ref_mv_int_at(blk, (size_t)i);
        if (image[i] < 1 || block[i] < 1 || image[i] > INT32_MAX || block[i] > INT32_MAX)
            return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "image %lld and block %lld in dim %d",
                                REF_IX_ARGS(node), (long long)image[i], (long long)block[i], i);
        int64_t span = dil[i] * (block[i] - 1) + 1;
        int64_t padded = image[i] + pads[i] + pads[ns + i];
        n_blocks[i] = padded >= span ? (padded - span) / str[i] + 1 : 0;
        /* Products bounded by the input's dims cannot overflow. */
        if (block[i] > x->dims[1] / block_size ||
            (n_blocks[i] > 0 && positions > x->dims[2] / n_blocks[i])) {
            positions = 0;
            break;
        }
        block_size *= block[i];
        positions *= n_blocks[i];
    }
    if (positions == 0 || x->dims[1] % block_size != 0 || x->dims[2] != positions)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_IX_FMT "input [%lld, %lld, %lld] does not hold %lld blocks of "
                                       "%lld values per channel",
                            REF_IX_ARGS(node), (long long)x->dims[0], (long long)x->dims[1],
                            (long long)x->dims[2], (long long)positions, (long long)block_size);
    int64_t channels = x->dims[1] / block_size;
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    bool shape_ok = y->rank == ns + 2 && y->dims[0] == x->dims[0] && y->dims[1] == channels;
    for (int i = 0; shape_ok && i < ns; i++)
        shape_ok = y->dims[2 + i] == image[i];
    if (!shape_ok)
        return rn_set_error(RN_INTERNAL, REF_IX_FMT "output shape does not match image_shape",
                            REF_IX_ARGS(node));
    size_t total = graph_tensor_count(y);
    if (total == 0)
        return RN_OK;
    memset(y->data, 0, total * rn_element_type_size(y->type));
    int64_t image_size = (int64_t)total / (x->dims[0] * channels);
    for (int64_t nc = 0; nc < x->dims[0] * channels; nc++) {
        for (int64_t b = 0; b < block_size; b++) {
            int64_t off[MAX_SPATIAL], rest = b;
            for (int i = ns - 1; i >= 0; i--) {
                off[i] = rest % block[i];
                rest /= block[i];
            }
            for (int64_t p = 0; p < positions; p++) {
                /* Block position p (row-major over n_blocks) plus kernel
                 * offset `off` lands on image position `at`, if inside. */
                int64_t at = 0, q = p, scale = 1;
                bool inside = true;
                for (int i = ns - 1; i >= 0 && inside; i--) {
                    int64_t coord = q % n_blocks[i] * str[i] - pads[i] + off[i] * dil[i];
                    q /= n_blocks[i];
                    inside = coord >= 0 && coord < image[i];
                    at += coord * scale;
                    scale *= image[i];
                }
                if (!inside)
                    continue;
                size_t src = (size_t)((nc * block_size + b) * positions + p);
                ref_ix_combine(y->type, REF_IX_ADD, y->data, (size_t)(nc * image_size + at),
                               x->data, src);
            }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_col2im = {
    .domain = "",
    .op_type = "Col2Im",
    .impl_type = "ref",
    .supports = supports_col2im,
    .run = run_col2im,
};
