/* REF AffineGrid (opset 20): for size (N, C, H, W) the grid is
 * N x H x W x 2 with grid[n, h, w] = theta[n] * (x_w, y_h, 1); for
 * (N, C, D, H, W) it is N x D x H x W x 3 with theta[n] * (x_w, y_h, z_d, 1).
 * The base coordinates span [-1, 1]: -1 + 2i / (L - 1) with align_corners
 * (a single position sits at -1), else pixel centres -1 + (2i + 1) / L.
 * Computed in double. */
#include "plugins/ref/kernels/image_util.h"

static bool affine_grid_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "theta is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

static double affine_grid_base(int64_t i, int64_t len, bool align)
{
    if (align)
        return len > 1 ? -1.0 + 2.0 * (double)i / (double)(len - 1) : -1.0;
    return -1.0 + (2.0 * (double)i + 1.0) / (double)len;
}

static rn_status affine_grid_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *theta = &args->inputs[0], *size = &args->inputs[1];
    graph_tensor *y = &args->outputs[0];
    size_t ns = graph_tensor_count(size);
    int nd = (int)ns - 2;
    if (size->type != RN_I64 || (nd != 2 && nd != 3) || theta->rank != 3 || theta->dims[1] != nd ||
        theta->dims[2] != nd + 1 || y->rank != nd + 2 || y->dims[nd + 1] != nd)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): theta must be N x 2 x 3 (size of 4) or N x 3 x 4 "
                            "(size of 5)",
                            node->name, node->op_type);
    const int64_t *sz = size->data;
    int64_t batch = theta->dims[0];
    if (sz[0] != batch || y->dims[0] != batch)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): size[0] differs from theta's N",
                            node->name, node->op_type);
    /* Spatial sizes, outermost first: (H, W) or (D, H, W). */
    int64_t len[3] = {1, 1, 1};
    for (int d = 0; d < nd; d++) {
        len[3 - nd + d] = sz[2 + d];
        if (y->dims[1 + d] != sz[2 + d])
            return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output shape does not match",
                                node->name, node->op_type);
    }
    bool align = graph_node_attr_int(node, "align_corners", 0) != 0;
    size_t at = 0;
    for (int64_t n = 0; n < batch; n++) {
        double t[3][4];
        for (int r = 0; r < nd; r++)
            for (int c = 0; c <= nd; c++)
                t[r][c] =
                    ref_nn_get(theta->type, theta->data, (size_t)((n * nd + r) * (nd + 1) + c));
        for (int64_t k = 0; k < len[0]; k++)
            for (int64_t i = 0; i < len[1]; i++)
                for (int64_t j = 0; j < len[2]; j++) {
                    /* Homogeneous base point (x, y[, z], 1). */
                    double p[4] = {affine_grid_base(j, len[2], align),
                                   affine_grid_base(i, len[1], align),
                                   affine_grid_base(k, len[0], align), 1.0};
                    if (nd == 2)
                        p[2] = 1.0;
                    for (int r = 0; r < nd; r++) {
                        double s = 0.0;
                        for (int c = 0; c <= nd; c++)
                            s += t[r][c] * p[c];
                        ref_nn_set(y->type, y->data, at++, s);
                    }
                }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_affine_grid = {
    .domain = "",
    .op_type = "AffineGrid",
    .impl_type = "ref",
    .supports = affine_grid_supports,
    .run = affine_grid_run,
};
