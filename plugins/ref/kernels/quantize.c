/* REF QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
 *
 * QuantizeLinear: y = saturate(round(x / scale) + zero_point), with the
 * quotient rounded to the type the division runs in (the `precision`
 * attribute, else x's type when the scale has it too, else f32; i32 inputs
 * divide in f64), round half to even, and saturation to the integer range.
 * Float8 outputs take the quotient plus the zero point (which the spec
 * requires to be 0) rounded once to float8, saturating unless `saturate`=0.
 *
 * DequantizeLinear: y = (x - zero_point) * scale, the product rounded to f32
 * (the ONNX reference computes in f32 whatever the scale's type) and then
 * to the output type (the scale's, or output_dtype).
 *
 * DynamicQuantizeLinear follows the spec's formulas in f32 arithmetic:
 * scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when that range is 0),
 * zero_point = round(clamp(-min / scale, 0, 255)), y as QuantizeLinear to u8.
 *
 * Scales and zero points are per tensor, per axis or blocked (quant_util.h).
 */
#include <math.h>
#include <stdio.h>

#include "plugins/ref/kernels/quant_util.h"

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

static bool is_quantized(rn_element_type t)
{
    int64_t lo, hi;
    return (ref_q_int_range(t, &lo, &hi) && t != RN_I32) || ref_is_float8(t);
}

static const char *why_type(const char *what, rn_element_type t)
{
    static _Thread_local char buf[80];
    snprintf(buf, sizeof buf, "%s type %s", what, rn_element_type_name(t));
    return buf;
}

/* ---- QuantizeLinear ---- */

/* Inputs x and scale must be there (a required input may still be named ""). */
static bool has_x_and_scale(const graph_node *node, const char **why)
{
    if (node->n_inputs < 2 || node->inputs[0] == NULL || node->inputs[1] == NULL) {
        *why = "x or the scale is omitted";
        return false;
    }
    return true;
}

static bool quantize_supports(const graph_node *node, const char **why)
{
    if (!has_x_and_scale(node, why))
        return false;
    rn_element_type x = node->inputs[0]->type, s = node->inputs[1]->type;
    rn_element_type y = node->outputs[0] ? node->outputs[0]->type : RN_UNDEFINED;
    if (!is_float(x) && x != RN_I32) {
        *why = why_type("input x", x);
        return false;
    }
    if (!is_float(s)) {
        *why = why_type("scale", s);
        return false;
    }
    if (!is_quantized(y)) {
        *why = why_type("output", y);
        return false;
    }
    if (node->n_inputs > 2 && node->inputs[2] && node->inputs[2]->type != y) {
        *why = "zero point type differs from the output type";
        return false;
    }
    int64_t precision = graph_node_attr_int(node, "precision", 0);
    if (precision != 0 && !is_float((rn_element_type)precision)) {
        *why = "precision is not a float type";
        return false;
    }
    return true;
}

/* The type x / scale is computed in (numpy's promotion of the two). */
static rn_element_type division_type(const graph_node *node, rn_element_type x, rn_element_type s)
{
    int64_t precision = graph_node_attr_int(node, "precision", 0);
    if (precision != 0)
        return (rn_element_type)precision;
    if (x == RN_I32 || x == RN_F64 || s == RN_F64)
        return RN_F64;
    return x == s ? x : RN_F32;
}

static rn_status quantize_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 2);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0], *scale = &args->inputs[1];
    const graph_tensor *zp = ref_q_opt(args, 2);
    graph_tensor *y = &args->outputs[0];
    ref_q_layout ls, lz;
    st = ref_q_layout_init(node, x, scale, 1, &ls);
    if (st == RN_OK && zp != NULL)
        st = ref_q_layout_init(node, x, zp, 2, &lz);
    if (st != RN_OK)
        return st;
    if (graph_tensor_count(y) != graph_tensor_count(x))
        return rn_set_error(RN_SHAPE_MISMATCH, REF_Q_NODE_FMT "output has %zu elements, x %zu",
                            REF_Q_NODE_ARGS(node), graph_tensor_count(y), graph_tensor_count(x));
    rn_element_type dt = division_type(node, x->type, scale->type);
    bool saturate = graph_node_attr_int(node, "saturate", 1) != 0;
    int64_t lo = 0, hi = 0;
    bool integer = ref_q_int_range(y->type, &lo, &hi);
    uint8_t *y8 = y->data;
    int64_t n = (int64_t)graph_tensor_count(x);
    for (int64_t xi = 0; xi < n; xi++) {
        double s = ref_q_load(scale->type, scale->data, (size_t)ref_q_index(&ls, xi));
        double xv = ref_q_round_to(dt, ref_q_load(x->type, x->data, (size_t)xi));
        double q = ref_q_round_to(dt, xv / ref_q_round_to(dt, s));
        double z = zp != NULL ? ref_q_load(zp->type, zp->data, (size_t)ref_q_index(&lz, xi)) : 0;
        if (integer)
            ref_mv_store_int(y->type, y->data, (size_t)xi,
                             ref_q_saturate(nearbyint(q) + z, lo, hi));
        else
            y8[xi] = ref_f64_to_f8(y->type, q + z, saturate);
    }
    return RN_OK;
}

/* ---- DequantizeLinear ---- */

static bool dequantize_supports(const graph_node *node, const char **why)
{
    if (!has_x_and_scale(node, why))
        return false;
    rn_element_type x = node->inputs[0]->type, s = node->inputs[1]->type;
    rn_element_type y = node->outputs[0] ? node->outputs[0]->type : RN_UNDEFINED;
    if (!is_quantized(x) && x != RN_I32) {
        *why = why_type("input x", x);
        return false;
    }
    if (!is_float(s)) {
        *why = why_type("scale", s);
        return false;
    }
    if (!is_float(y)) {
        *why = why_type("output", y);
        return false;
    }
    if (node->n_inputs > 2 && node->inputs[2] && node->inputs[2]->type != x) {
        *why = "zero point type differs from x's";
        return false;
    }
    return true;
}

static rn_status dequantize_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 2);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0], *scale = &args->inputs[1];
    const graph_tensor *zp = ref_q_opt(args, 2);
    graph_tensor *y = &args->outputs[0];
    ref_q_layout ls, lz;
    st = ref_q_layout_init(node, x, scale, 1, &ls);
    if (st == RN_OK && zp != NULL)
        st = ref_q_layout_init(node, x, zp, 2, &lz);
    if (st != RN_OK)
        return st;
    if (graph_tensor_count(y) != graph_tensor_count(x))
        return rn_set_error(RN_SHAPE_MISMATCH, REF_Q_NODE_FMT "output has %zu elements, x %zu",
                            REF_Q_NODE_ARGS(node), graph_tensor_count(y), graph_tensor_count(x));
    int64_t n = (int64_t)graph_tensor_count(x);
    for (int64_t xi = 0; xi < n; xi++) {
        double z = zp != NULL ? ref_q_load(zp->type, zp->data, (size_t)ref_q_index(&lz, xi)) : 0;
        double dx = ref_q_load(x->type, x->data, (size_t)xi) - z;
        double s = ref_q_load(scale->type, scale->data, (size_t)ref_q_index(&ls, xi));
        ref_mv_store_double(y->type, y->data, (size_t)xi, (float)(dx * s));
    }
    return RN_OK;
}

/* ---- DynamicQuantizeLinear ---- */

static bool dynamic_quantize_supports(const graph_node *node, const char **why)
{
    if (node->inputs[0] == NULL || node->inputs[0]->type != RN_F32) {
        *why = why_type("input x", node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED);
        return false;
    }
    return true;
}

static rn_status dynamic_quantize_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    size_t n = graph_tensor_count(x);
    for (int o = 0; o < 3; o++) {
        const graph_tensor *t = &args->outputs[o];
        size_t want = o == 0 ? n : 1;
        if (o < args->n_outputs && t->data != NULL && graph_tensor_count(t) != want)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_Q_NODE_FMT "output %d has %zu elements, not %zu",
                                REF_Q_NODE_ARGS(node), o, graph_tensor_count(t), want);
    }
    const float *xv = x->data;
    float maxx = 0.0f, minx = 0.0f;
    for (size_t i = 0; i < n; i++) { /* NaNs compare false and are skipped */
        if (xv[i] > maxx)
            maxx = xv[i];
        if (xv[i] < minx)
            minx = xv[i];
    }
    float scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
    float izp = 0.0f - minx / scale;
    float zp = nearbyintf(izp < 0.0f ? 0.0f : izp > 255.0f ? 255.0f : izp);
    uint8_t *y = args->outputs[0].data;
    for (size_t i = 0; i < n; i++)
        y[i] = (uint8_t)ref_q_saturate((double)nearbyintf(xv[i] / scale) + zp, 0, 255);
    if (args->n_outputs > 1 && args->outputs[1].data != NULL)
        *(float *)args->outputs[1].data = scale;
    if (args->n_outputs > 2 && args->outputs[2].data != NULL)
        *(uint8_t *)args->outputs[2].data = (uint8_t)zp;
    return RN_OK;
}

const plugin_kernel ref_kernel_quantize_linear = {
    .domain = "",
    .op_type = "QuantizeLinear",
    .impl_type = "ref",
    .supports = quantize_supports,
    .run = quantize_run,
};

const plugin_kernel ref_kernel_dequantize_linear = {
    .domain = "",
    .op_type = "DequantizeLinear",
    .impl_type = "ref",
    .supports = dequantize_supports,
    .run = dequantize_run,
};

const plugin_kernel ref_kernel_dynamic_quantize_linear = {
    .domain = "",
    .op_type = "DynamicQuantizeLinear",
    .impl_type = "ref",
    .supports = dynamic_quantize_supports,
    .run = dynamic_quantize_run,
};
