/* Resize as a oneDNN resampling primitive, where oneDNN computes what ONNX
 * asks for exactly; every other Resize stays on REF's kernel, and
 * `supports` says why.
 *
 * oneDNN maps output index o of an axis to the source coordinate
 * x = (o + 0.5) * in / out - 0.5 (ONNX's half_pixel with scale out / in)
 * and then takes, for nearest, round(x) with halves away from zero (ONNX's
 * nearest_mode round_prefer_ceil), for linear the two neighbours floor(x)
 * and ceil(x) clamped to the input, weighted by x - floor(x) (ONNX's linear
 * with edge clamping). So CPU takes:
 *   - Resize from opset 11, f32, rank 3 to 5, N and C not resized;
 *   - coordinate_transformation_mode half_pixel, or pytorch_half_pixel when
 *     no resized axis has an output of 1 (where it maps to 0);
 *   - mode linear; or nearest with round_prefer_ceil, or round_prefer_floor
 *     where it cannot differ: every axis upsampled by a whole factor (x is
 *     then never a half);
 *   - the scale ONNX uses equal to out / in: sizes (keep_aspect_ratio_policy
 *     stretch), or scales whose product with the input size is exactly the
 *     output size (otherwise ONNX divides by the given scale, oneDNN by the
 *     ratio of the sizes);
 *   - no antialias, constant scales / sizes. */
#include <string.h>

#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"

/* Input i when it is a non-empty constant; NULL when absent or empty
 * (*constant false when given but not a constant). */
static const rn_kernel_tensor *input_values(const rn_node *node, int i, bool *constant)
{
    *constant = true;
    if (i >= rn_node_input_count(node) || rn_node_input_name(node, i)[0] == '\0')
        return NULL;
    const rn_kernel_tensor *t = rn_node_input_constant(node, i);
    if (t == NULL) {
        *constant = false;
        return NULL;
    }
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->dims[d];
    return n > 0 ? t : NULL;
}

/* Whether the scale ONNX applies to each resized axis is out / in: sizes
 * (stretched), or constant f32 scales whose product with the input size is
 * the output size exactly. */
static bool resize_scales_ok(const rn_node *node, const char **why)
{
    rn_partial_shape x = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    bool c_scales, c_sizes;
    const rn_kernel_tensor *scales = input_values(node, 2, &c_scales);
    const rn_kernel_tensor *sizes = input_values(node, 3, &c_sizes);
    if (!c_scales || !c_sizes) {
        *why = "scales or sizes are not constants";
        return false;
    }
    int axes[RN_MAX_RANK], n_axes = 0;
    if (graph_resize_axes(node, x.rank, axes, &n_axes) != RN_OK) {
        rn_clear_error();
        *why = "an invalid axes attribute";
        return false;
    }
    if (sizes == NULL && (scales == NULL || scales->type != RN_F32)) {
        *why = "neither f32 scales nor sizes";
        return false;
    }
    if (sizes != NULL &&
        strcmp(rn_node_attr_string(node, "keep_aspect_ratio_policy", "stretch"), "stretch") != 0) {
        *why = "keep_aspect_ratio_policy other than stretch";
        return false;
    }
    for (int i = 0; i < n_axes && sizes == NULL; i++) {
        int d = axes[i];
        double s = ((const float *)scales->data)[i];
        if ((double)x.dims[d] * s != (double)y.dims[d]) {
            *why = "a scale whose output size is rounded (ONNX maps by the scale, oneDNN by the "
                   "sizes' ratio)";
            return false;
        }
    }
    return true;
}

static bool resize_supports(const rn_node *node, const char **why)
{
    rn_partial_shape x = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    if (rn_node_opset(node) < 11) {
        *why = "Resize-10's asymmetric coordinates (oneDNN maps half-pixel centres)";
        return false;
    }
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "f32 only";
        return false;
    }
    if (!cpu_static_node(node, why))
        return false;
    if (x.rank < 3 || x.rank > 5 || y.rank != x.rank) {
        *why = "1-D to 3-D images only (rank 3 to 5)";
        return false;
    }
    if (x.dims[0] != y.dims[0] || x.dims[1] != y.dims[1]) {
        *why = "N or C resized (oneDNN resamples spatial axes only)";
        return false;
    }
    const char *mode = rn_node_attr_string(node, "mode", "nearest");
    bool nearest = strcmp(mode, "nearest") == 0;
    if (!nearest && strcmp(mode, "linear") != 0) {
        *why = "mode other than nearest and linear";
        return false;
    }
    const char *ctm = rn_node_attr_string(node, "coordinate_transformation_mode", "half_pixel");
    bool pytorch = strcmp(ctm, "pytorch_half_pixel") == 0;
    if (strcmp(ctm, "half_pixel") != 0 && !pytorch) {
        *why = "coordinate_transformation_mode other than half_pixel and pytorch_half_pixel";
        return false;
    }
    if (rn_node_attr_int(node, "antialias", 0) != 0) {
        *why = "antialias (oneDNN's linear takes two taps)";
        return false;
    }
    bool whole = true;
    for (int d = 2; d < x.rank; d++) {
        if (x.dims[d] < 1 || y.dims[d] < 1) {
            *why = "an empty spatial axis";
            return false;
        }
        if (pytorch && y.dims[d] == 1) {
            *why = "pytorch_half_pixel to an output of 1 (it maps to 0, not the centre)";
            return false;
        }
        whole = whole && y.dims[d] % x.dims[d] == 0;
    }
    if (nearest) {
        const char *nm = rn_node_attr_string(node, "nearest_mode", "round_prefer_floor");
        bool ceil_mode = strcmp(nm, "round_prefer_ceil") == 0;
        if (!ceil_mode && !(strcmp(nm, "round_prefer_floor") == 0 && whole)) {
            *why = "a nearest_mode oneDNN's rounding (halves away from zero) does not match";
            return false;
        }
    }
    return resize_scales_ok(node, why);
}

static rn_status resize_desc(const rn_node *node, const cpu_unary *u, dnnl_primitive_desc_t *pd)
{
    rn_partial_shape y = rn_node_output_shape(node, 0);
    cpu_md dst;
    rn_status st = cpu_any_md(y.rank, y.dims, dnnl_f32, &dst);
    if (st != RN_OK)
        return st;
    bool nearest = strcmp(rn_node_attr_string(node, "mode", "nearest"), "nearest") == 0;
    cpu_op rd;
    dnnl_status_t ds = cpu_op_resampling(
        &rd, nearest ? dnnl_resampling_nearest : dnnl_resampling_linear, &u->src, &dst);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the resampling", ds);
    return cpu_weighted_pd(node, &rd, false, false, pd);
}

static rn_status resize_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    return cpu_unary_prepare(node, ctx, resize_desc, state);
}

CPU_UNARY_KERNEL(cpu_kernel_resize, "Resize", resize_supports, resize_prepare);
