/* REF RoiAlign (opsets 10, 16, 22), following the ONNX reference (itself
 * ONNX Runtime's kernel): each roi (x1, y1, x2, y2) * spatial_scale, shifted
 * by -0.5 with coordinate_transformation_mode half_pixel (the default from
 * opset 16; opset 10 behaves as output_half_pixel, whose rois are at least
 * 1 x 1), is split into output_height x output_width bins; each bin samples
 * sampling_ratio (or ceil(bin size)) points per side bilinearly and
 * averages them (mode avg) or takes the largest weighted corner (mode max).
 * Samples more than one pixel outside the map contribute 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"

static bool roi_align_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t) || !ref_nn_is_float(node->inputs[1]->type)) {
        *why = "X and rois must be f32, f64, f16 or bf16";
        return false;
    }
    if (node->inputs[2]->type != RN_I64 && node->inputs[2]->type != RN_I32) {
        *why = "batch_indices must be i64";
        return false;
    }
    const char *mode = graph_node_attr_string(node, "mode", "avg");
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0) {
        *why = "mode is not avg or max";
        return false;
    }
    const char *ctm = graph_node_attr_string(node, "coordinate_transformation_mode", "half_pixel");
    if (node->opset >= 16 && strcmp(ctm, "half_pixel") != 0 &&
        strcmp(ctm, "output_half_pixel") != 0) {
        *why = "coordinate_transformation_mode is not half_pixel or output_half_pixel";
        return false;
    }
    return true;
}

/* One bilinear sample: four positions in the plane and their weights. */
typedef struct roi_sample {
    int64_t pos[4];
    double w[4];
} roi_sample;

static roi_sample roi_sample_at(double y, double x, int64_t height, int64_t width)
{
    roi_sample s = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    if (!(y >= -1.0 && y <= (double)height && x >= -1.0 && x <= (double)width))
        return s; /* outside (or NaN) */
    y = y < 0.0 ? 0.0 : y;
    x = x < 0.0 ? 0.0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= height - 1) {
        y1 = y0 = height - 1;
        y = (double)y0;
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= width - 1) {
        x1 = x0 = width - 1;
        x = (double)x0;
    } else {
        x1 = x0 + 1;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1.0 - ly, hx = 1.0 - lx;
    s.pos[0] = y0 * width + x0;
    s.pos[1] = y0 * width + x1;
    s.pos[2] = y1 * width + x0;
    s.pos[3] = y1 * width + x1;
    s.w[0] = hy * hx;
    s.w[1] = hy * lx;
    s.w[2] = ly * hx;
    s.w[3] = ly * lx;
    return s;
}

static rn_status roi_align_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *rois = &args->inputs[1], *bi = &args->inputs[2];
    graph_tensor *y = &args->outputs[0];
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 ||
        bi->dims[0] != rois->dims[0])
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X must be N x C x H x W, rois R x 4, batch_indices R",
                            node->name, node->op_type);
    int64_t n_rois = rois->dims[0], channels = x->dims[1], height = x->dims[2], width = x->dims[3];
    int64_t oh = graph_node_attr_int(node, "output_height", 1);
    int64_t ow = graph_node_attr_int(node, "output_width", 1);
    int64_t ratio = graph_node_attr_int(node, "sampling_ratio", 0);
    double scale = graph_node_attr_float(node, "spatial_scale", 1.0f);
    bool max_mode = strcmp(graph_node_attr_string(node, "mode", "avg"), "max") == 0;
    bool half_pixel =
        node->opset >= 16 &&
        strcmp(graph_node_attr_string(node, "coordinate_transformation_mode", "half_pixel"),
               "half_pixel") == 0;
    if (oh < 1 || ow < 1 || ratio < 0 || y->rank != 4 || y->dims[0] != n_rois ||
        y->dims[1] != channels || y->dims[2] != oh || y->dims[3] != ow)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): output size, sampling_ratio or output shape is wrong",
                            node->name, node->op_type);
    for (int64_t r = 0; r < n_rois; r++) {
        int64_t b =
            bi->type == RN_I64 ? ((const int64_t *)bi->data)[r] : ((const int32_t *)bi->data)[r];
        if (b < 0 || b >= x->dims[0])
            return rn_set_error(
                RN_INVALID_ARG, "node '%s' (%s): batch index %lld of roi %lld is outside [0, %lld)",
                node->name, node->op_type, (long long)b, (long long)r, (long long)x->dims[0]);
        double off = half_pixel ? 0.5 : 0.0, c[4];
        for (int k = 0; k < 4; k++)
            c[k] = ref_nn_get(rois->type, rois->data, (size_t)(r * 4 + k)) * scale - off;
        double rw = c[2] - c[0], rh = c[3] - c[1];
        if (!half_pixel) {
            rw = rw > 1.0 ? rw : 1.0;
            rh = rh > 1.0 ? rh : 1.0;
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        double sh = ratio > 0 ? (double)ratio : ceil(rh / (double)oh);
        double sw = ratio > 0 ? (double)ratio : ceil(rw / (double)ow);
        if (!(sh <= 65536.0 && sw <= 65536.0))
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): roi %lld is not finite or too large to sample",
                                node->name, node->op_type, (long long)r);
        int64_t gh = sh > 0.0 ? (int64_t)sh : 0, gw = sw > 0.0 ? (int64_t)sw : 0;
        double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
        for (int64_t ch = 0; ch < channels; ch++) {
            size_t plane = (size_t)((b * channels + ch) * height * width);
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double acc = 0.0;
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double yy = c[1] + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double xx =
                                c[0] + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            roi_sample s = roi_sample_at(yy, xx, height, width);
                            double v[4];
                            for (int k = 0; k < 4; k++)
                                v[k] =
                                    s.w[k] * ref_nn_get(x->type, x->data, plane + (size_t)s.pos[k]);
                            if (max_mode) {
                                double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                                acc = first || m > acc ? m : acc;
                                first = false;
                            } else {
                                acc += v[0] + v[1] + v[2] + v[3];
                            }
                        }
                    }
                    if (!max_mode)
                        acc /= count;
                    size_t at = (size_t)(((r * channels + ch) * oh + ph) * ow + pw);
                    ref_nn_set(y->type, y->data, at, acc);
                }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_roi_align = {
    .domain = "",
    .op_type = "RoiAlign",
    .impl_type = "ref",
    .supports = roi_align_supports,
    .run = roi_align_run,
};
