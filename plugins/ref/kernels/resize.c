/* REF Resize (opsets 10 to 19) and Upsample (7 to 10), following the ONNX
 * reference implementation, which resizes one axis at a time (the
 * interpolation is separable):
 *   - each output index o maps to a source coordinate x by the
 *     coordinate_transformation_mode (half_pixel, half_pixel_symmetric,
 *     pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
 *     tf_crop_and_resize with its roi);
 *   - nearest picks floor(x) or floor(x) + 1 by nearest_mode (an integral x
 *     picks x itself); linear and cubic weigh taps floor(x) + start + k with
 *     the usual kernels (cubic_coeff_a), widened by 1 / scale when
 *     antialiasing a downscale, optionally renormalised over the taps inside
 *     the input (exclude_outside); taps outside clamp to the edge;
 *   - with tf_crop_and_resize a coordinate outside [0, in - 1] gives
 *     extrapolation_value.
 * Scales come from `scales` (output size floor(in * scale)) or from `sizes`
 * (scale = out / in, or one common scale under keep_aspect_ratio_policy),
 * restricted to `axes` from opset 18. Resize-10 and Upsample use asymmetric
 * coordinates with floor for nearest.
 *
 * Nearest copies elements (any fixed-size type, exact); linear and cubic
 * compute in double and store integers rounded half to even and saturated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"
#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

enum resize_mode { RESIZE_NEAREST, RESIZE_LINEAR, RESIZE_CUBIC };
enum resize_ctm {
    CTM_HALF_PIXEL,
    CTM_HALF_PIXEL_SYMMETRIC,
    CTM_PYTORCH_HALF_PIXEL,
    CTM_ALIGN_CORNERS,
    CTM_ASYMMETRIC,
    CTM_TF_HALF_PIXEL_FOR_NN,
    CTM_TF_CROP_AND_RESIZE,
};
enum resize_nearest {
    NEAREST_ROUND_PREFER_FLOOR,
    NEAREST_ROUND_PREFER_CEIL,
    NEAREST_FLOOR,
    NEAREST_CEIL
};

typedef struct resize_attrs {
    enum resize_mode mode;
    enum resize_ctm ctm;
    enum resize_nearest nearest;
    double cubic_a;
    bool exclude_outside;
    bool antialias;
    double extrapolation;
} resize_attrs;

/* Reads the attributes for the node's op and opset; returns a static reason
 * on anything unknown, NULL when fine. */
static const char *resize_read_attrs(const graph_node *node, resize_attrs *a)
{
    memset(a, 0, sizeof *a);
    bool legacy = strcmp(node->op_type, "Upsample") == 0 || node->opset < 11;
    const char *mode = graph_node_attr_string(node, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0)
        a->mode = RESIZE_NEAREST;
    else if (strcmp(mode, "linear") == 0 || (legacy && strcmp(mode, "bilinear") == 0))
        a->mode = RESIZE_LINEAR;
    else if (!legacy && strcmp(mode, "cubic") == 0)
        a->mode = RESIZE_CUBIC;
    else
        return "mode is not nearest, linear or cubic";
    if (legacy) {
        a->ctm = CTM_ASYMMETRIC;
        a->nearest = NEAREST_FLOOR;
        a->cubic_a = -0.75;
        return NULL;
    }
    static const struct {
        const char *name;
        enum resize_ctm ctm;
        int since, until;
    } ctms[] = {
        {"half_pixel", CTM_HALF_PIXEL, 11, 99},
        {"half_pixel_symmetric", CTM_HALF_PIXEL_SYMMETRIC, 19, 99},
        {"pytorch_half_pixel", CTM_PYTORCH_HALF_PIXEL, 11, 99},
        {"align_corners", CTM_ALIGN_CORNERS, 11, 99},
        {"asymmetric", CTM_ASYMMETRIC, 11, 99},
        {"tf_half_pixel_for_nn", CTM_TF_HALF_PIXEL_FOR_NN, 11, 12},
        {"tf_crop_and_resize", CTM_TF_CROP_AND_RESIZE, 11, 99},
    };
    const char *ctm = graph_node_attr_string(node, "coordinate_transformation_mode", "half_pixel");
    size_t i = 0;
    for (; i < sizeof ctms / sizeof ctms[0]; i++)
        if (strcmp(ctm, ctms[i].name) == 0 && node->opset >= ctms[i].since &&
            node->opset <= ctms[i].until)
            break;
    if (i == sizeof ctms / sizeof ctms[0])
        return "coordinate_transformation_mode is unknown for this opset";
    a->ctm = ctms[i].ctm;
    const char *nm = graph_node_attr_string(node, "nearest_mode", "round_prefer_floor");
    if (strcmp(nm, "round_prefer_floor") == 0)
        a->nearest = NEAREST_ROUND_PREFER_FLOOR;
    else if (strcmp(nm, "round_prefer_ceil") == 0)
        a->nearest = NEAREST_ROUND_PREFER_CEIL;
    else if (strcmp(nm, "floor") == 0)
        a->nearest = NEAREST_FLOOR;
    else if (strcmp(nm, "ceil") == 0)
        a->nearest = NEAREST_CEIL;
    else
        return "nearest_mode is not round_prefer_floor, round_prefer_ceil, floor or ceil";
    a->cubic_a = graph_node_attr_float(node, "cubic_coeff_a", -0.75f);
    a->exclude_outside = graph_node_attr_int(node, "exclude_outside", 0) != 0;
    a->antialias = node->opset >= 18 && graph_node_attr_int(node, "antialias", 0) != 0;
    a->extrapolation = graph_node_attr_float(node, "extrapolation_value", 0.0f);
    if (a->antialias && a->mode == RESIZE_NEAREST)
        return "antialias is not defined for mode nearest";
    return NULL;
}

/* Element types linear and cubic interpolate (nearest copies any
 * fixed-size type). */
static bool resize_numeric(rn_element_type t)
{
    switch (t) {
    case RN_F16:
    case RN_BF16:
    case RN_F32:
    case RN_F64:
    case RN_I8:
    case RN_I16:
    case RN_I32:
    case RN_I64:
    case RN_U8:
    case RN_U16:
    case RN_U32:
    case RN_U64:
        return true;
    default:
        return false;
    }
}

static double resize_load(rn_element_type t, const void *p, size_t i)
{
    switch (t) {
    case RN_F16:
        return plugin_f16_to_f32(((const uint16_t *)p)[i]);
    case RN_BF16:
        return plugin_bf16_to_f32(((const uint16_t *)p)[i]);
    case RN_F32:
        return ((const float *)p)[i];
    case RN_F64:
        return ((const double *)p)[i];
    case RN_I8:
        return ((const int8_t *)p)[i];
    case RN_I16:
        return ((const int16_t *)p)[i];
    case RN_I32:
        return ((const int32_t *)p)[i];
    case RN_I64:
        return (double)((const int64_t *)p)[i];
    case RN_U8:
        return ((const uint8_t *)p)[i];
    case RN_U16:
        return ((const uint16_t *)p)[i];
    case RN_U32:
        return ((const uint32_t *)p)[i];
    case RN_U64:
        return (double)((const uint64_t *)p)[i];
    default:
        return 0.0;
    }
}

/* Integers: round half to even, then saturate (numpy's saturate_cast). */
static double resize_sat(double v, double lo, double hi)
{
    v = rint(v);
    return v != v ? 0.0 : v < lo ? lo : v > hi ? hi : v;
}

static void resize_store(rn_element_type t, void *p, size_t i, double v)
{
    switch (t) {
    case RN_F16:
        ((uint16_t *)p)[i] = ref_f64_to_f16(v);
        break;
    case RN_BF16:
        ((uint16_t *)p)[i] = ref_f64_to_bf16(v);
        break;
    case RN_F32:
        ((float *)p)[i] = (float)v;
        break;
    case RN_F64:
        ((double *)p)[i] = v;
        break;
    case RN_I8:
        ((int8_t *)p)[i] = (int8_t)resize_sat(v, INT8_MIN, INT8_MAX);
        break;
    case RN_I16:
        ((int16_t *)p)[i] = (int16_t)resize_sat(v, INT16_MIN, INT16_MAX);
        break;
    case RN_I32:
        ((int32_t *)p)[i] = (int32_t)resize_sat(v, INT32_MIN, INT32_MAX);
        break;
    case RN_I64:
        ((int64_t *)p)[i] =
            ref_f64_to_i64(resize_sat(v, -9223372036854775808.0, 9223372036854775808.0));
        break;
    case RN_U8:
        ((uint8_t *)p)[i] = (uint8_t)resize_sat(v, 0, UINT8_MAX);
        break;
    case RN_U16:
        ((uint16_t *)p)[i] = (uint16_t)resize_sat(v, 0, UINT16_MAX);
        break;
    case RN_U32:
        ((uint32_t *)p)[i] = (uint32_t)resize_sat(v, 0, UINT32_MAX);
        break;
    case RN_U64:
        ((uint64_t *)p)[i] = ref_f64_to_u64(resize_sat(v, 0, 18446744073709551616.0));
        break;
    case RN_BOOL:
        ((uint8_t *)p)[i] = v != 0.0;
        break;
    default:
        break;
    }
}

static bool resize_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 1, why))
        return false;
    resize_attrs a;
    if ((*why = resize_read_attrs(node, &a)) != NULL)
        return false;
    rn_element_type t = node->inputs[0]->type;
    bool ok = a.mode == RESIZE_NEAREST ? t != RN_STRING && rn_element_type_size(t) > 0
                                       : resize_numeric(t);
    if (!ok) {
        *why = ref_why_type(0, t);
        return false;
    }
    return true;
}

static rn_status resize_oom(const graph_node *node)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                        node->op_type);
}

/* ---- per-axis geometry ---- */

/* What one resized axis needs: its sizes, scale and roi. */
typedef struct resize_axis {
    int64_t in, out;
    double scale;
    double roi_start, roi_end;
} resize_axis;

/* Whether an axis is left as it is (the reference skips it, which matters
 * for modes that would not map an unscaled axis onto itself). */
static bool resize_axis_identity(const resize_axis *ax, const resize_attrs *a)
{
    bool unit_roi = a->ctm != CTM_TF_CROP_AND_RESIZE ||
                    (fabs(ax->roi_start) <= 1e-9 && fabs(ax->roi_end - 1.0) <= 1e-9);
    return fabs(ax->scale - 1.0) <= 1e-9 && ax->out == ax->in && unit_roi;
}

/* Source coordinate of output index o; sets *outside for tf_crop_and_resize
 * positions outside the input. */
static double resize_coord(const resize_axis *ax, const resize_attrs *a, int64_t o, bool *outside)
{
    double in = (double)ax->in, s = ax->scale, width = s * in, y = (double)o, x;
    *outside = false;
    switch (a->ctm) {
    case CTM_ALIGN_CORNERS:
        return width == 1.0 ? 0.0 : y * (in - 1.0) / (width - 1.0);
    case CTM_ASYMMETRIC:
        return y / s;
    case CTM_TF_HALF_PIXEL_FOR_NN:
        return (y + 0.5) / s;
    case CTM_TF_CROP_AND_RESIZE:
        if (width == 1.0)
            x = (ax->roi_end - ax->roi_start) * (in - 1.0) / 2.0;
        else
            x = y * (ax->roi_end - ax->roi_start) * (in - 1.0) / (width - 1.0);
        x += ax->roi_start * (in - 1.0);
        *outside = x < 0.0 || x > in - 1.0;
        return x;
    case CTM_PYTORCH_HALF_PIXEL:
        return width == 1.0 ? -0.5 : (y + 0.5) / s - 0.5;
    case CTM_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)ax->out / width;
        double offset = in / 2.0 * (1.0 - adjustment);
        return offset + (y + 0.5) / s - 0.5;
    }
    case CTM_HALF_PIXEL:
    default:
        return (y + 0.5) / s - 0.5;
    }
}

static int64_t resize_clamp(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* floor(x) as an index, kept in a range where the tap arithmetic cannot
 * overflow (taps that far out clamp to the edge anyway); NaN gives 0. */
static int64_t resize_floor(double x)
{
    double f = floor(x);
    return f != f ? 0 : f < -1e15 ? (int64_t)-1e15 : f > 1e15 ? (int64_t)1e15 : (int64_t)f;
}

/* The nearest source index of output o (-1: extrapolate). */
static int64_t resize_nearest_index(const resize_axis *ax, const resize_attrs *a, int64_t o)
{
    bool outside;
    double x = resize_coord(ax, a, o, &outside);
    if (outside)
        return -1;
    double f = floor(x), r = x - f;
    int64_t i = resize_floor(x);
    if (r != 0.0) {
        bool up = a->nearest == NEAREST_CEIL ||
                  (a->nearest == NEAREST_ROUND_PREFER_FLOOR && r > 0.5) ||
                  (a->nearest == NEAREST_ROUND_PREFER_CEIL && r >= 0.5);
        i += up;
    }
    return resize_clamp(i, ax->in);
}

static double resize_cubic_kernel(double x, double A)
{
    x = fabs(x);
    if (x <= 1.0)
        return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    if (x < 2.0)
        return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    return 0.0;
}

/* Taps of linear / cubic interpolation along one axis: for each output
 * index, n_taps (index, weight) pairs, or extrapolate set. */
typedef struct resize_taps {
    int n_taps;
    int64_t *index; /* out x n_taps, clamped into [0, in) */
    double *weight; /* out x n_taps */
    bool *extrapolate;
} resize_taps;

static void resize_taps_free(resize_taps *t)
{
    ref_tmp_free(t->index);
    ref_tmp_free(t->weight);
    ref_tmp_free(t->extrapolate);
}

static bool resize_taps_build(const resize_axis *ax, const resize_attrs *a, resize_taps *t)
{
    /* Kernel support in taps: 2 (linear) or 4 (cubic), widened to cover
     * 1 / scale input pixels per side when antialiasing a downscale. */
    double s = a->antialias && ax->scale < 1.0 ? ax->scale : 1.0;
    double first = floor((a->mode == RESIZE_LINEAR ? -1.0 : -2.0) / s) + 1.0;
    if (!(first > -(double)(1 << 19)))
        return false; /* a downscale so strong that the kernel would not fit */
    int64_t start = (int64_t)first, n = 2 - 2 * start;
    t->n_taps = (int)n;
    size_t cells = (size_t)(ax->out > 0 ? ax->out : 1) * (size_t)n;
    t->index = ref_tmp_alloc(cells * sizeof *t->index);
    t->weight = ref_tmp_alloc(cells * sizeof *t->weight);
    t->extrapolate = ref_tmp_calloc((size_t)(ax->out > 0 ? ax->out : 1), sizeof *t->extrapolate);
    if (!t->index || !t->weight || !t->extrapolate)
        return false;
    for (int64_t o = 0; o < ax->out; o++) {
        double x = resize_coord(ax, a, o, &t->extrapolate[o]);
        /* ratio in (0, 1]: an integral x is taken as floor(x) - 1 + 1. */
        double f = floor(x), r = x - f;
        if (r == 0.0) {
            f -= 1.0;
            r = 1.0;
        }
        int64_t *idx = t->index + o * n;
        double *w = t->weight + o * n, sum = 0.0;
        for (int64_t k = 0; k < n; k++) {
            double d = (double)(start + k) - r;
            if (a->mode == RESIZE_LINEAR) {
                double v = 1.0 - fabs(d * s);
                w[k] = v < 0.0 ? 0.0 : v;
            } else {
                w[k] = resize_cubic_kernel(d * s, a->cubic_a);
            }
            sum += w[k];
            idx[k] = resize_floor(f) + start + k;
        }
        if (a->antialias)
            for (int64_t k = 0; k < n; k++)
                w[k] /= sum;
        if (a->exclude_outside) {
            sum = 0.0;
            for (int64_t k = 0; k < n; k++) {
                if (idx[k] < 0 || idx[k] >= ax->in)
                    w[k] = 0.0;
                sum += w[k];
            }
            for (int64_t k = 0; sum != 0.0 && k < n; k++)
                w[k] /= sum;
        }
        for (int64_t k = 0; k < n; k++)
            idx[k] = resize_clamp(idx[k], ax->in);
    }
    return true;
}

/* ---- reading the scales ---- */

/* Fills axes[0..rank) from x (input), y (output, shaped by inference) and
 * the scales / sizes / roi inputs, checking that they agree. */
static rn_status resize_axes(const plugin_kernel_args *args, const resize_attrs *a,
                             resize_axis *axes)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *y = &args->outputs[0];
    int r = x->rank;
    bool legacy = strcmp(node->op_type, "Upsample") == 0 || node->opset < 11;
    if (y->rank != r)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output rank %d, input rank %d",
                            node->name, node->op_type, y->rank, r);
    for (int d = 0; d < r; d++)
        axes[d] = (resize_axis){.in = x->dims[d], .out = y->dims[d], .scale = 1.0, .roi_end = 1.0};
    /* The axes attribute (opset 18), as shape inference reads it. */
    int sel[RN_MAX_RANK], n_sel;
    rn_status st = graph_resize_axes(node, r, sel, &n_sel);
    if (st != RN_OK)
        return st;
    /* Inputs: Upsample-7 has an attribute, Resize-10 / Upsample-9 input 1,
     * Resize-11+ roi, scales, sizes at 1, 2, 3. Empty means absent. */
    const graph_tensor *roi = NULL, *scales = NULL, *sizes = NULL;
    int si = legacy ? 1 : 2;
    if (si < args->n_inputs && args->inputs[si].data != NULL &&
        graph_tensor_count(&args->inputs[si]) > 0)
        scales = &args->inputs[si];
    if (!legacy && 3 < args->n_inputs && args->inputs[3].data != NULL &&
        graph_tensor_count(&args->inputs[3]) > 0)
        sizes = &args->inputs[3];
    if (!legacy && args->n_inputs > 1 && args->inputs[1].data != NULL &&
        graph_tensor_count(&args->inputs[1]) > 0)
        roi = &args->inputs[1];
    const float *attr_scales = NULL;
    int n_attr_scales = -1;
    if (legacy && node->opset < 9)
        n_attr_scales = graph_node_attr_floats(node, "scales", &attr_scales);
    if (sizes != NULL) {
        if ((int64_t)graph_tensor_count(sizes) != n_sel)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): sizes has %zu values for %d axes", node->name,
                                node->op_type, graph_tensor_count(sizes), n_sel);
        const char *policy =
            node->opset >= 18 ? graph_node_attr_string(node, "keep_aspect_ratio_policy", "stretch")
                              : "stretch";
        bool keep = strcmp(policy, "stretch") != 0;
        double common = strcmp(policy, "not_larger") == 0 ? INFINITY : 0.0;
        for (int i = 0; i < n_sel; i++) {
            resize_axis *ax = &axes[sel[i]];
            int64_t s = ((const int64_t *)sizes->data)[i];
            ax->scale = ax->in > 0 ? (double)s / (double)ax->in : 1.0;
            if (keep)
                common = strcmp(policy, "not_larger") == 0 ? fmin(common, ax->scale)
                                                           : fmax(common, ax->scale);
        }
        for (int i = 0; keep && i < n_sel; i++)
            axes[sel[i]].scale = common;
    } else if (scales != NULL || n_attr_scales >= 0) {
        int64_t n = scales != NULL ? (int64_t)graph_tensor_count(scales) : n_attr_scales;
        if (n != n_sel)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): scales has %lld values for %d axes", node->name,
                                node->op_type, (long long)n, n_sel);
        for (int i = 0; i < n_sel; i++) {
            double s = scales != NULL ? resize_load(scales->type, scales->data, (size_t)i)
                                      : (double)attr_scales[i];
            if (!(s > 0.0) || !isfinite(s))
                return rn_set_error(RN_INVALID_ARG,
                                    "node '%s' (%s): scales[%d] is %g; must be positive",
                                    node->name, node->op_type, i, s);
            axes[sel[i]].scale = s;
        }
    } else {
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): one of scales and sizes must be given",
                            node->name, node->op_type);
    }
    if (a->ctm == CTM_TF_CROP_AND_RESIZE) {
        if (roi == NULL || (int64_t)graph_tensor_count(roi) != 2 * n_sel)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): tf_crop_and_resize needs a roi of %d values",
                                node->name, node->op_type, 2 * n_sel);
        for (int i = 0; i < n_sel; i++) {
            axes[sel[i]].roi_start = resize_load(roi->type, roi->data, (size_t)i);
            axes[sel[i]].roi_end = resize_load(roi->type, roi->data, (size_t)(n_sel + i));
        }
    }
    bool chosen[RN_MAX_RANK] = {false};
    for (int i = 0; i < n_sel; i++)
        chosen[sel[i]] = true;
    for (int d = 0; d < r; d++) {
        if (!chosen[d] && axes[d].out != axes[d].in)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): dim %d is not resized but the output has %lld "
                                "vs %lld",
                                node->name, node->op_type, d, (long long)axes[d].out,
                                (long long)axes[d].in);
        if (axes[d].in == 0 && axes[d].out > 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): dim %d is empty and cannot be resized to %lld",
                                node->name, node->op_type, d, (long long)axes[d].out);
    }
    return RN_OK;
}

/* ---- nearest: an index gather ---- */

static rn_status resize_nearest(const plugin_kernel_args *args, const resize_attrs *a,
                                const resize_axis *axes)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    size_t es = rn_element_type_size(x->type);
    int64_t total = 0, stride[RN_MAX_RANK];
    plugin_strides(r, x->dims, stride);
    int64_t *maps[RN_MAX_RANK] = {NULL};
    for (int d = 0; d < r; d++)
        total += axes[d].out;
    int64_t *all = ref_tmp_alloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
    if (all == NULL)
        return resize_oom(args->node);
    int64_t *m = all;
    for (int d = 0; d < r; d++) {
        maps[d] = m;
        bool id = resize_axis_identity(&axes[d], a);
        for (int64_t o = 0; o < axes[d].out; o++)
            m[o] = id ? o : resize_nearest_index(&axes[d], a, o);
        m += axes[d].out;
    }
    /* The extrapolation value, stored once in the output's type. */
    unsigned char fill[16] = {0};
    resize_store(x->type, fill, 0, a->extrapolation);
    size_t count = graph_tensor_count(y);
    int64_t idx[RN_MAX_RANK] = {0};
    const unsigned char *src = x->data;
    unsigned char *dst = y->data;
    for (size_t i = 0; i < count; i++) {
        int64_t off = 0;
        bool outside = false;
        for (int d = 0; d < r; d++) {
            int64_t s = maps[d][idx[d]];
            outside |= s < 0;
            off += s * stride[d];
        }
        memcpy(dst + i * es, outside ? fill : src + (size_t)off * es, es);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < axes[d].out)
                break;
            idx[d] = 0;
        }
    }
    ref_tmp_free(all);
    return RN_OK;
}

/* ---- linear and cubic: one axis at a time, in double ---- */

/* Resamples src (outer x in x inner) along the middle dim into dst
 * (outer x out x inner). */
static void resize_axis_apply(const resize_taps *t, const resize_axis *ax, double extrapolation,
                              int64_t outer, int64_t inner, const double *src, double *dst)
{
    int n = t->n_taps;
    for (int64_t o = 0; o < outer; o++) {
        const double *s = src + o * ax->in * inner;
        for (int64_t j = 0; j < ax->out; j++) {
            double *d = dst + (o * ax->out + j) * inner;
            if (t->extrapolate[j]) {
                for (int64_t i = 0; i < inner; i++)
                    d[i] = extrapolation;
                continue;
            }
            const int64_t *idx = t->index + j * n;
            const double *w = t->weight + j * n;
            for (int64_t i = 0; i < inner; i++)
                d[i] = 0.0;
            for (int k = 0; k < n; k++) {
                if (w[k] == 0.0)
                    continue; /* also keeps an infinite neighbour from making NaN */
                const double *row = s + idx[k] * inner;
                for (int64_t i = 0; i < inner; i++)
                    d[i] += w[k] * row[i];
            }
        }
    }
}

static rn_status resize_interpolate(const plugin_kernel_args *args, const resize_attrs *a,
                                    const resize_axis *axes)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    size_t count = graph_tensor_count(x);
    double *cur = ref_tmp_alloc((count ? count : 1) * sizeof(double));
    if (cur == NULL)
        return resize_oom(args->node);
    for (size_t i = 0; i < count; i++)
        cur[i] = resize_load(x->type, x->data, i);
    int64_t dims[RN_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    rn_status st = RN_OK;
    for (int d = 0; d < r && st == RN_OK; d++) {
        if (resize_axis_identity(&axes[d], a))
            continue;
        resize_taps t = {0};
        int64_t outer = 1, inner = 1;
        for (int e = 0; e < d; e++)
            outer *= dims[e];
        for (int e = d + 1; e < r; e++)
            inner *= dims[e];
        size_t n_next = (size_t)(outer * axes[d].out * inner);
        double *next = ref_tmp_alloc((n_next ? n_next : 1) * sizeof(double));
        if (next == NULL || !resize_taps_build(&axes[d], a, &t)) {
            st = next == NULL ? resize_oom(args->node)
                              : rn_set_error(RN_OUT_OF_MEMORY,
                                             "node '%s' (%s): cannot build the taps of dim %d",
                                             args->node->name, args->node->op_type, d);
            ref_tmp_free(next);
        } else {
            resize_axis_apply(&t, &axes[d], a->extrapolation, outer, inner, cur, next);
            ref_tmp_free(cur);
            cur = next;
            dims[d] = axes[d].out;
        }
        resize_taps_free(&t);
    }
    if (st == RN_OK) {
        size_t n_out = graph_tensor_count(y);
        for (size_t i = 0; i < n_out; i++)
            resize_store(y->type, y->data, i, cur[i]);
    }
    ref_tmp_free(cur);
    return st;
}

static rn_status resize_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 1, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    resize_attrs a;
    const char *why = resize_read_attrs(node, &a);
    if (why != NULL)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): %s", node->name, node->op_type, why);
    resize_axis axes[RN_MAX_RANK];
    rn_status st = resize_axes(args, &a, axes);
    if (st != RN_OK)
        return st;
    if (args->outputs[0].type != args->inputs[0].type)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): output type differs from X's",
                            node->name, node->op_type);
    if (a.mode == RESIZE_NEAREST)
        return resize_nearest(args, &a, axes);
    return resize_interpolate(args, &a, axes);
}

const plugin_kernel ref_kernel_resize = {
    .domain = "",
    .op_type = "Resize",
    .impl_type = "ref",
    .supports = resize_supports,
    .run = resize_run,
};

const plugin_kernel ref_kernel_upsample = {
    .domain = "",
    .op_type = "Upsample",
    .impl_type = "ref",
    .supports = resize_supports,
    .run = resize_run,
};
