/* Elementwise OpenVINO ops: unary math and activations, binary arithmetic,
 * comparison and logic with numpy broadcasting, Convert, Select, Clamp. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "graph/ir/ir_internal.h"

static graph_value *in(const ir_build *b, int i)
{
    return b->layer->in[i].value;
}

static graph_value *out0(const ir_build *b)
{
    return b->layer->out[0].value;
}

/* An op ONNX has under another name with the same meaning. */
static rn_status map_unary(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    graph_value *x = in(b, 0), *y = out0(b);
    return ir_node(b, b->op->onnx, b->op->opset, 1, &x, 1, &y, NULL);
}

/* auto_broadcast "numpy" (the default) and "none" are ONNX's broadcasting;
 * PaddlePaddle's "pdpd" is not. */
static rn_status check_broadcast(ir_build *b)
{
    const char *mode = ir_data_str(b, "auto_broadcast", "numpy");
    if (strcasecmp(mode, "numpy") != 0 && strcasecmp(mode, "none") != 0)
        return ir_error(b, RN_UNSUPPORTED, "auto_broadcast '%s' is not supported (numpy, none)",
                        mode);
    return RN_OK;
}

static bool is_integer(rn_element_type t)
{
    return t == RN_I8 || t == RN_I16 || t == RN_I32 || t == RN_I64 || t == RN_U8 || t == RN_U16 ||
           t == RN_U32 || t == RN_U64;
}

/* Bitwise ops (opset13): ONNX's Bitwise* for integers, its logical ops for
 * booleans (which ONNX's bitwise ops do not take). */
static rn_status map_bitwise(ir_build *b)
{
    bool not = b->op->opset == 0;
    IR_TRY(ir_check_ports(b, not ? 1 : 2, not ? 1 : 2, 1));
    IR_TRY(check_broadcast(b));
    bool boolean = b->layer->in[0].elem == RN_BOOL;
    const char *type = b->layer->type + strlen("Bitwise");
    const char *op = boolean ? (strcmp(type, "And") == 0   ? "And"
                                : strcmp(type, "Or") == 0  ? "Or"
                                : strcmp(type, "Xor") == 0 ? "Xor"
                                                           : "Not")
                             : b->op->onnx;
    int opset = boolean ? (not ? 1 : 7) : 18;
    graph_value *xs[2] = {in(b, 0), not ? NULL : in(b, 1)}, *y = out0(b);
    return ir_node(b, op, opset, not ? 1 : 2, xs, 1, &y, NULL);
}

static rn_status map_binary(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    IR_TRY(check_broadcast(b));
    const char *type = b->layer->type;
    if (strcmp(type, "Divide") == 0 && is_integer(b->layer->in[0].elem)) {
        /* m_pythondiv (the default) asks to round down, as OpenVINO's
         * reference evaluate does; its CPU plugin (2026.4.1) truncates, and
         * its ONNX frontend writes m_pythondiv="true" for ONNX's truncating
         * Div. runnel follows the CPU plugin: ONNX's Div. */
        bool python_div;
        IR_TRY(ir_data_bool(b, "m_pythondiv", true, &python_div));
        (void)python_div;
    }
    if (strcmp(type, "FloorMod") == 0 && !is_integer(b->layer->in[0].elem))
        return ir_error(b, RN_UNSUPPORTED, "FloorMod of %s is not supported (integers only)",
                        rn_element_type_name(b->layer->in[0].elem));
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, b->op->onnx, b->op->opset, 2, xs, 1, &y, &n));
    if (strcmp(type, "Mod") == 0)
        return ir_attr_int(n, "fmod", 1); /* OpenVINO's Mod truncates, as C's fmod */
    return RN_OK;
}

/* SquaredDifference: (a - b)^2 as Sub then Mul. */
static rn_status map_squared_difference(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    IR_TRY(check_broadcast(b));
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *d, *y = out0(b);
    IR_TRY(ir_node1(b, "Sub", 14, 2, xs, &d, NULL));
    graph_value *dd[2] = {d, d};
    return ir_node(b, "Mul", 14, 2, dd, 1, &y, NULL);
}

/* NotEqual: Not(Equal). */
static rn_status map_not_equal(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    IR_TRY(check_broadcast(b));
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *e, *y = out0(b);
    IR_TRY(ir_node1(b, "Equal", 13, 2, xs, &e, NULL));
    return ir_node(b, "Not", 1, 1, &e, 1, &y, NULL);
}

static rn_status map_elu(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    float alpha;
    IR_TRY(ir_data_float(b, "alpha", 1.0f, &alpha));
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Elu", 6, 1, &x, 1, &y, &n));
    return ir_attr_float(n, "alpha", alpha);
}

/* Gelu: opset2 is the erf form; opset7 says which (ERF or TANH). */
static rn_status map_gelu(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    const char *mode = ir_data_str(b, "approximation_mode", "erf");
    const char *approximate;
    if (strcasecmp(mode, "erf") == 0)
        approximate = "none";
    else if (strcasecmp(mode, "tanh") == 0)
        approximate = "tanh";
    else
        return ir_error(b, RN_UNSUPPORTED, "approximation_mode '%s' is not supported (erf, tanh)",
                        mode);
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Gelu", 20, 1, &x, 1, &y, &n));
    return ir_attr_str(n, "approximate", approximate);
}

/* HSigmoid: min(max(x + 3, 0), 6) / 6, which is HardSigmoid(1/6, 0.5). */
static rn_status map_hsigmoid(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "HardSigmoid", 6, 1, &x, 1, &y, &n));
    IR_TRY(ir_attr_float(n, "alpha", 1.0f / 6.0f));
    return ir_attr_float(n, "beta", 0.5f);
}

/* HardSigmoid (opset1): max(0, min(1, alpha * x + beta)), alpha and beta
 * inputs. Constant ones become ONNX's HardSigmoid attributes; others are
 * written out as Mul, Add and Clip(0, 1). */
static rn_status map_hard_sigmoid(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 3, 1));
    graph_value *x = in(b, 0), *y = out0(b);
    double alpha, beta;
    int na, nb;
    if (b->layer->in[0].elem == RN_F32 &&
        ir_const_doubles(b, 1, "alpha", &alpha, 1, &na) == RN_OK && na == 1 &&
        ir_const_doubles(b, 2, "beta", &beta, 1, &nb) == RN_OK && nb == 1) {
        graph_node *n;
        IR_TRY(ir_node(b, "HardSigmoid", 6, 1, &x, 1, &y, &n));
        IR_TRY(ir_attr_float(n, "alpha", (float)alpha));
        return ir_attr_float(n, "beta", (float)beta);
    }
    rn_clear_error();
    graph_value *xa[2] = {x, in(b, 1)}, *ax, *axb;
    IR_TRY(ir_node1(b, "Mul", 14, 2, xa, &ax, NULL));
    graph_value *ab[2] = {ax, in(b, 2)};
    IR_TRY(ir_node1(b, "Add", 14, 2, ab, &axb, NULL));
    graph_value *c[3] = {axb};
    IR_TRY(ir_const_scalar(b, b->layer->in[0].elem, 0.0, &c[1]));
    IR_TRY(ir_const_scalar(b, b->layer->in[0].elem, 1.0, &c[2]));
    return ir_node(b, "Clip", 13, 3, c, 1, &y, NULL);
}

/* Selu (opset1): lambda * (x > 0 ? x : alpha * (exp(x) - 1)), alpha and
 * lambda constant inputs -> ONNX's alpha and gamma. */
static rn_status map_selu(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 3, 1));
    double alpha, lambda;
    int na, nl;
    IR_TRY(ir_const_doubles(b, 1, "alpha", &alpha, 1, &na));
    IR_TRY(ir_const_doubles(b, 2, "lambda", &lambda, 1, &nl));
    if (na != 1 || nl != 1)
        return ir_error(b, RN_PARSE_ERROR, "alpha and lambda must hold one value each");
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Selu", 6, 1, &x, 1, &y, &n));
    IR_TRY(ir_attr_float(n, "alpha", (float)alpha));
    return ir_attr_float(n, "gamma", (float)lambda);
}

/* IsInf (opset10): detect_negative and detect_positive as ONNX's. */
static rn_status map_is_inf(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    bool neg, pos;
    IR_TRY(ir_data_bool(b, "detect_negative", true, &neg));
    IR_TRY(ir_data_bool(b, "detect_positive", true, &pos));
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "IsInf", 20, 1, &x, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "detect_negative", neg));
    return ir_attr_int(n, "detect_positive", pos);
}

/* IsFinite (opset10): not NaN and not infinite. */
static rn_status map_is_finite(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    graph_value *x = in(b, 0), *y = out0(b), *nan, *inf, *either;
    IR_TRY(ir_node1(b, "IsNaN", 20, 1, &x, &nan, NULL));
    IR_TRY(ir_node1(b, "IsInf", 20, 1, &x, &inf, NULL));
    graph_value *ni[2] = {nan, inf};
    IR_TRY(ir_node1(b, "Or", 7, 2, ni, &either, NULL));
    return ir_node(b, "Not", 1, 1, &either, 1, &y, NULL);
}

/* ConvertLike (opset1): Cast to the element type of the second input. */
static rn_status map_convert_like(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    rn_element_type t = b->layer->in[1].elem;
    if (t == RN_UNDEFINED)
        return ir_error(b, RN_PARSE_ERROR, "input port %d states no precision", b->layer->in[1].id);
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Cast", 13, 1, &x, 1, &y, &n));
    return ir_attr_int(n, "to", t);
}

static rn_status binary_node(ir_build *b, const char *op, int opset, graph_value *x, graph_value *y,
                             graph_value **out);

/* FakeQuantize (opset1): x clamped to [input_low, input_high], quantized
 * to `levels` steps (rounded half to even, as OpenVINO's reference does) and
 * mapped onto [output_low, output_high]:
 * round((min(max(x, il), ih) - il) / (ih - il) * (L - 1)) / (L - 1) * (oh - ol) + ol. */
static rn_status map_fake_quantize(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 5, 5, 1));
    IR_TRY(check_broadcast(b));
    int64_t levels;
    IR_TRY(ir_data_int(b, "levels", 256, &levels));
    if (levels < 2 || levels > (1 << 24))
        return ir_error(b, RN_PARSE_ERROR, "levels %lld is not at least 2", (long long)levels);
    rn_element_type t = b->layer->in[0].elem;
    graph_value *x = in(b, 0), *il = in(b, 1), *ih = in(b, 2), *ol = in(b, 3), *oh = in(b, 4);
    graph_value *v, *w, *steps, *y = out0(b);
    IR_TRY(ir_const_scalar(b, t, (double)(levels - 1), &steps));
    IR_TRY(binary_node(b, "Max", 13, x, il, &v));
    IR_TRY(binary_node(b, "Min", 13, v, ih, &v));
    IR_TRY(binary_node(b, "Sub", 14, v, il, &v));
    IR_TRY(binary_node(b, "Sub", 14, ih, il, &w));
    IR_TRY(binary_node(b, "Div", 14, v, w, &v));
    IR_TRY(binary_node(b, "Mul", 14, v, steps, &v));
    IR_TRY(ir_node1(b, "Round", 11, 1, &v, &w, NULL));
    IR_TRY(binary_node(b, "Div", 14, w, steps, &v));
    IR_TRY(binary_node(b, "Sub", 14, oh, ol, &w));
    IR_TRY(binary_node(b, "Mul", 14, v, w, &v));
    graph_value *a[2] = {v, ol};
    return ir_node(b, "Add", 14, 2, a, 1, &y, NULL);
}

/* A node of a binary ONNX op on (x, y) with a new output. */
static rn_status binary_node(ir_build *b, const char *op, int opset, graph_value *x, graph_value *y,
                             graph_value **out)
{
    graph_value *a[2] = {x, y};
    return ir_node1(b, op, opset, 2, a, out, NULL);
}

/* Swish: x * sigmoid(beta * x), beta an optional input (1 by default). */
static rn_status map_swish(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 2, 1));
    graph_value *x = in(b, 0), *arg = x, *s, *y = out0(b);
    if (b->layer->n_in == 2) {
        graph_value *xb[2] = {x, in(b, 1)};
        IR_TRY(ir_node1(b, "Mul", 14, 2, xb, &arg, NULL));
    }
    IR_TRY(ir_node1(b, "Sigmoid", 13, 1, &arg, &s, NULL));
    graph_value *xs[2] = {x, s};
    return ir_node(b, "Mul", 14, 2, xs, 1, &y, NULL);
}

/* PReLU: OpenVINO applies a 1-D slope of C values along the channel axis
 * (1) when C is the input's dim 1 (else it broadcasts as numpy does); ONNX
 * broadcasts the slope from the right, so it is reshaped to [C, 1, ..., 1]
 * first. */
static rn_status map_prelu(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    const graph_shape *xs = &b->layer->in[0].shape, *ss = &b->layer->in[1].shape;
    graph_value *x = in(b, 0), *slope = in(b, 1), *y = out0(b);
    if (ss->rank == 1 && xs->rank > 2 && ss->dims[0] != 1 && ss->dims[0] == xs->dims[1]) {
        int64_t shape[RN_MAX_RANK];
        shape[0] = -1;
        for (int i = 1; i < xs->rank - 1; i++)
            shape[i] = 1;
        graph_value *sv, *ins[2];
        IR_TRY(ir_const_i64(b, shape, xs->rank - 1, false, &sv));
        ins[0] = slope;
        ins[1] = sv;
        IR_TRY(ir_node1(b, "Reshape", 14, 2, ins, &slope, NULL));
    }
    graph_value *ins[2] = {x, slope};
    return ir_node(b, "PRelu", 16, 2, ins, 1, &y, NULL);
}

/* Clamp(min, max) -> Clip with the bounds as constants of x's type. */
static rn_status map_clamp(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    float lo, hi;
    IR_TRY(ir_data_float(b, "min", -INFINITY, &lo));
    IR_TRY(ir_data_float(b, "max", INFINITY, &hi));
    rn_element_type t = b->layer->in[0].elem;
    graph_value *ins[3] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_const_scalar(b, t, is_integer(t) ? ceil(lo) : lo, &ins[1]));
    IR_TRY(ir_const_scalar(b, t, is_integer(t) ? floor(hi) : hi, &ins[2]));
    return ir_node(b, "Clip", 13, 3, ins, 1, &y, NULL);
}

static rn_status map_convert(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    const char *dst = ir_data_str(b, "destination_type", NULL);
    rn_element_type t = dst ? ir_element_type(dst) : RN_UNDEFINED;
    if (t == RN_UNDEFINED)
        return ir_error(b, dst ? RN_UNSUPPORTED : RN_PARSE_ERROR,
                        "destination_type '%s' is missing or not supported", dst ? dst : "");
    graph_value *x = in(b, 0), *y = out0(b);
    /* destination_type decides: OpenVINO writes the output port of a
     * decompression Convert (f16 weights to f32) with the f16 precision. */
    y->type = t;
    graph_node *n;
    IR_TRY(ir_node(b, "Cast", 13, 1, &x, 1, &y, &n));
    return ir_attr_int(n, "to", t);
}

static rn_status map_select(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 3, 1));
    IR_TRY(check_broadcast(b));
    graph_value *xs[3] = {in(b, 0), in(b, 1), in(b, 2)}, *y = out0(b);
    return ir_node(b, "Where", 16, 3, xs, 1, &y, NULL);
}

static rn_status map_round(ir_build *b)
{
    const char *mode = ir_data_str(b, "mode", "half_to_even");
    if (strcasecmp(mode, "half_to_even") != 0)
        return ir_error(b, RN_UNSUPPORTED, "mode '%s' is not supported (half_to_even)", mode);
    return map_unary(b);
}

#define UNARY(type, onnx, opset)                                                                   \
    {                                                                                              \
        type, map_unary, onnx, opset                                                               \
    }
#define BINARY(type, onnx, opset)                                                                  \
    {                                                                                              \
        type, map_binary, onnx, opset                                                              \
    }

const ir_op ir_ops_elementwise[] = {
    UNARY("ReLU", "Relu", 14),
    UNARY("Sigmoid", "Sigmoid", 13),
    UNARY("Tanh", "Tanh", 13),
    UNARY("Exp", "Exp", 13),
    UNARY("Log", "Log", 13),
    UNARY("Sqrt", "Sqrt", 13),
    UNARY("Abs", "Abs", 13),
    UNARY("Negative", "Neg", 13),
    UNARY("Floor", "Floor", 13),
    UNARY("Ceiling", "Ceil", 13),
    UNARY("Erf", "Erf", 13),
    UNARY("Sign", "Sign", 13),
    UNARY("Sin", "Sin", 7),
    UNARY("Cos", "Cos", 7),
    UNARY("Tan", "Tan", 7),
    UNARY("Asin", "Asin", 7),
    UNARY("Acos", "Acos", 7),
    UNARY("Atan", "Atan", 7),
    UNARY("Sinh", "Sinh", 9),
    UNARY("Cosh", "Cosh", 9),
    UNARY("Asinh", "Asinh", 9),
    UNARY("Acosh", "Acosh", 9),
    UNARY("Atanh", "Atanh", 9),
    UNARY("SoftPlus", "Softplus", 1),
    UNARY("SoftSign", "Softsign", 1),
    UNARY("HSwish", "HardSwish", 14),
    UNARY("Mish", "Mish", 18),
    UNARY("LogicalNot", "Not", 1),
    {"Round", map_round, "Round", 11},
    BINARY("Add", "Add", 14),
    BINARY("Subtract", "Sub", 14),
    BINARY("Multiply", "Mul", 14),
    BINARY("Divide", "Div", 14),
    BINARY("Maximum", "Max", 13),
    BINARY("Minimum", "Min", 13),
    BINARY("Power", "Pow", 15),
    BINARY("Mod", "Mod", 13),
    BINARY("FloorMod", "Mod", 13),
    BINARY("Equal", "Equal", 13),
    BINARY("Less", "Less", 13),
    BINARY("Greater", "Greater", 13),
    BINARY("LessEqual", "LessOrEqual", 16),
    BINARY("GreaterEqual", "GreaterOrEqual", 16),
    BINARY("LogicalAnd", "And", 7),
    BINARY("LogicalOr", "Or", 7),
    BINARY("LogicalXor", "Xor", 7),
    {"NotEqual", map_not_equal, NULL, 0},
    {"SquaredDifference", map_squared_difference, NULL, 0},
    {"Elu", map_elu, NULL, 0},
    {"Gelu", map_gelu, NULL, 0},
    {"HSigmoid", map_hsigmoid, NULL, 0},
    {"Swish", map_swish, NULL, 0},
    {"HardSigmoid", map_hard_sigmoid, NULL, 0},
    {"FakeQuantize", map_fake_quantize, NULL, 0},
    {"Selu", map_selu, NULL, 0},
    UNARY("IsNaN", "IsNaN", 20),
    {"IsInf", map_is_inf, NULL, 0},
    {"IsFinite", map_is_finite, NULL, 0},
    {"ConvertLike", map_convert_like, NULL, 0},
    {"BitwiseAnd", map_bitwise, "BitwiseAnd", 18},
    {"BitwiseOr", map_bitwise, "BitwiseOr", 18},
    {"BitwiseXor", map_bitwise, "BitwiseXor", 18},
    {"BitwiseNot", map_bitwise, "BitwiseNot", 0},
    {"PReLU", map_prelu, NULL, 0},
    {"Clamp", map_clamp, NULL, 0},
    {"Convert", map_convert, NULL, 0},
    {"Select", map_select, NULL, 0},
    {NULL, NULL, NULL, 0},
};
