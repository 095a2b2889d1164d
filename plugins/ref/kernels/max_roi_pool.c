/* REF MaxRoiPool (Caffe's RoI pooling, as ONNX Runtime implements it): each
 * roi (batch, x1, y1, x2, y2) is scaled by spatial_scale and rounded to
 * whole pixels (inclusive ends, at least 1 x 1), split into pooled_shape
 * bins [floor(i * size / pooled), ceil((i + 1) * size / pooled)) clipped to
 * the map, and each bin takes its maximum; an empty bin gives 0. */
#include <math.h>

#include "plugins/ref/kernels/image_util.h"

static bool max_roi_pool_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t) || node->inputs[1]->type != t) {
        *why = "X and rois must be f32, f64, f16 or bf16 of one type";
        return false;
    }
    const int64_t *ps;
    if (graph_node_attr_ints(node, "pooled_shape", &ps) != 2 || ps[0] < 1 || ps[1] < 1) {
        *why = "pooled_shape must hold 2 positive values";
        return false;
    }
    return true;
}

static int64_t max_roi_clip(int64_t v, int64_t hi)
{
    return v < 0 ? 0 : v > hi ? hi : v;
}

static rn_status max_roi_pool_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *rois = &args->inputs[1];
    graph_tensor *y = &args->outputs[0];
    const int64_t *ps;
    if (graph_node_attr_ints(node, "pooled_shape", &ps) != 2 || ps[0] < 1 || ps[1] < 1)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): pooled_shape must hold 2 positive values", node->name,
                            node->op_type);
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 5 || y->rank != 4 ||
        y->dims[0] != rois->dims[0] || y->dims[1] != x->dims[1] || y->dims[2] != ps[0] ||
        y->dims[3] != ps[1])
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X must be N x C x H x W and rois R x 5", node->name,
                            node->op_type);
    double scale = graph_node_attr_float(node, "spatial_scale", 1.0f);
    int64_t channels = x->dims[1], height = x->dims[2], width = x->dims[3];
    for (int64_t r = 0; r < rois->dims[0]; r++) {
        double v[5];
        for (int k = 0; k < 5; k++)
            v[k] = ref_nn_get(rois->type, rois->data, (size_t)(r * 5 + k));
        bool finite = true;
        for (int k = 1; k < 5; k++)
            finite &= fabs(v[k] * scale) < 1e15;
        int64_t b = v[0] >= 0.0 && v[0] < (double)x->dims[0] ? (int64_t)v[0] : -1;
        if (!finite)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): roi %lld is not finite",
                                node->name, node->op_type, (long long)r);
        if (b < 0)
            return rn_set_error(
                RN_INVALID_ARG, "node '%s' (%s): roi %lld names batch %g, outside [0, %lld)",
                node->name, node->op_type, (long long)r, v[0], (long long)x->dims[0]);
        int64_t x1 = (int64_t)round(v[1] * scale), y1 = (int64_t)round(v[2] * scale);
        int64_t x2 = (int64_t)round(v[3] * scale), y2 = (int64_t)round(v[4] * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        double bh = (double)rh / (double)ps[0], bw = (double)rw / (double)ps[1];
        for (int64_t c = 0; c < channels; c++) {
            size_t plane = (size_t)((b * channels + c) * height * width);
            for (int64_t ph = 0; ph < ps[0]; ph++)
                for (int64_t pw = 0; pw < ps[1]; pw++) {
                    int64_t hs = max_roi_clip((int64_t)floor((double)ph * bh) + y1, height);
                    int64_t he = max_roi_clip((int64_t)ceil((double)(ph + 1) * bh) + y1, height);
                    int64_t ws = max_roi_clip((int64_t)floor((double)pw * bw) + x1, width);
                    int64_t we = max_roi_clip((int64_t)ceil((double)(pw + 1) * bw) + x1, width);
                    double m = he <= hs || we <= ws ? 0.0 : -INFINITY;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++)
                            m = fmax(m,
                                     ref_nn_get(x->type, x->data, plane + (size_t)(h * width + w)));
                    ref_nn_set(y->type, y->data,
                               (size_t)(((r * channels + c) * ps[0] + ph) * ps[1] + pw), m);
                }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_max_roi_pool = {
    .domain = "",
    .op_type = "MaxRoiPool",
    .impl_type = "ref",
    .supports = max_roi_pool_supports,
    .run = max_roi_pool_run,
};
