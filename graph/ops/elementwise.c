/* Elementwise op schemas: unary math and activations, binary arithmetic with
 * numpy broadcasting, comparisons and logic (bool outputs), bitwise ops,
 * variadic Sum/Max/Min/Mean, Where, Clip, Cast/CastLike and Identity.
 *
 * Output shapes follow numpy broadcasting of the inputs (graph_broadcast_shapes);
 * output types are the input type, bool for comparisons, logic and IsNaN/IsInf,
 * `to` for Cast and the second input's type for CastLike. Every infer function
 * checks the input types against what the ONNX spec allows for the op (latest
 * opset, which is a superset of the earlier ones) and that inputs that must
 * agree do, naming the node, the input and both types when they do not.
 * Inputs whose type is still unknown are not checked.
 *
 * Opsets before 7 broadcast differently: with attribute broadcast=1, B's
 * shape is matched against A's starting at `axis` (default: the trailing
 * dims), and PRelu's 1-d slope is per channel (axis 1). That is numpy
 * broadcasting of B padded with 1s on the right, which is how it is inferred
 * here (and run in plugins/ref/kernels/elementwise.c).
 */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        if (st_ != RN_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

/* ---- type sets ---- */

#define T(x)       (1u << RN_##x)
#define TS_FLOAT   (T(F32) | T(F64) | T(F16) | T(BF16))
#define TS_SINT    (T(I8) | T(I16) | T(I32) | T(I64))
#define TS_UINT    (T(U8) | T(U16) | T(U32) | T(U64))
#define TS_INT     (TS_SINT | TS_UINT)
#define TS_SIGNED  (TS_FLOAT | TS_SINT)
#define TS_NUMERIC (TS_FLOAT | TS_INT)
#define TS_BOOL    T(BOOL)
#define TS_FLOAT8  (T(F8E4M3FN) | T(F8E4M3FNUZ) | T(F8E5M2) | T(F8E5M2FNUZ))
#define TS_ANY     (TS_NUMERIC | TS_BOOL | T(STRING) | TS_FLOAT8)

static const char *type_set_name(uint32_t set)
{
    switch (set) {
    case TS_FLOAT:
        return "a floating type (f16, bf16, f32, f64)";
    case TS_SIGNED:
        return "a floating or signed integer type";
    case TS_NUMERIC:
        return "a numeric type";
    case TS_ANY:
        return "a numeric, float8, bool or string type";
    case TS_INT:
        return "an integer type";
    case TS_UINT:
        return "an unsigned integer type (u8, u16, u32, u64)";
    case TS_BOOL:
        return "bool";
    default:
        return "another type";
    }
}

static const char *input_name(const graph_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] != NULL ? node->inputs[i]->name : "";
}

/* Input i (present) must have a type in `set`, or an unknown type. */
static rn_status check_type(const graph_node *node, const graph_port *in, int i, uint32_t set)
{
    rn_element_type t = in[i].type;
    if (t == RN_UNDEFINED)
        return RN_OK;
    if ((unsigned)t >= 32 || !(set & (1u << t)))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d '%s' has type %s, expected %s",
                            NODE_ARGS(node), i, input_name(node, i), rn_element_type_name(t),
                            type_set_name(set));
    return RN_OK;
}

/* Inputs i and j must have the same type (when both are known). */
static rn_status check_same_type(const graph_node *node, const graph_port *in, int i, int j)
{
    rn_element_type a = in[i].type, b = in[j].type;
    if (a != RN_UNDEFINED && b != RN_UNDEFINED && a != b)
        return rn_set_error(RN_TYPE_MISMATCH,
                            NODE_FMT "input %d '%s' has type %s but input %d '%s' has type %s; "
                                     "they must match",
                            NODE_ARGS(node), i, input_name(node, i), rn_element_type_name(a), j,
                            input_name(node, j), rn_element_type_name(b));
    return RN_OK;
}

/* The first known type among the present inputs [from, to). */
static rn_element_type first_known_type(const graph_port *in, int from, int to)
{
    for (int i = from; i < to; i++)
        if (in[i].present && in[i].type != RN_UNDEFINED)
            return in[i].type;
    return RN_UNDEFINED;
}

static rn_status require_inputs(const graph_node *node, const graph_port *in, int n_in, int n)
{
    for (int i = 0; i < n; i++)
        if (i >= n_in || !in[i].present)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d is required", NODE_ARGS(node),
                                i);
    return RN_OK;
}

/* ---- unary ---- */

static rn_status unary(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                       uint32_t set, rn_element_type out_type)
{
    TRY(require_inputs(node, in, n_in, 1));
    TRY(check_type(node, in, 0, set));
    out[0].type = out_type != RN_UNDEFINED ? out_type : in[0].type;
    out[0].shape = in[0].shape;
    return RN_OK;
}

#define UNARY_INFER(name, set, out_type)                                                           \
    static rn_status name(const graph_node *node, const graph_port *in, int n_in, graph_port *out, \
                          int n_out)                                                               \
    {                                                                                              \
        (void)n_out;                                                                               \
        return unary(node, in, n_in, out, set, out_type);                                          \
    }

UNARY_INFER(infer_unary_float, TS_FLOAT, RN_UNDEFINED)
UNARY_INFER(infer_unary_signed, TS_SIGNED, RN_UNDEFINED)
UNARY_INFER(infer_unary_numeric, TS_NUMERIC, RN_UNDEFINED)
UNARY_INFER(infer_unary_int, TS_INT, RN_UNDEFINED)
UNARY_INFER(infer_unary_bool, TS_BOOL, RN_UNDEFINED)
UNARY_INFER(infer_identity, TS_ANY, RN_UNDEFINED)
UNARY_INFER(infer_classify, TS_FLOAT, RN_BOOL)

static rn_status infer_gelu(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    const char *approx = graph_node_attr_string(node, "approximate", "none");
    if (strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "attribute 'approximate' is '%s', expected 'none' or 'tanh'",
                            NODE_ARGS(node), approx);
    return infer_unary_float(node, in, n_in, out, n_out);
}

static rn_status infer_cast(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)n_out;
    TRY(require_inputs(node, in, n_in, 1));
    TRY(check_type(node, in, 0, TS_ANY));
    int64_t to = graph_node_attr_int(node, "to", 0);
    if (to < 0 || to > 64 || !rn_element_type_is_valid((rn_element_type)to))
        return rn_set_error(RN_UNSUPPORTED, NODE_FMT "attribute 'to' is %lld, not a supported type",
                            NODE_ARGS(node), (long long)to);
    out[0].type = (rn_element_type)to;
    out[0].shape = in[0].shape;
    return RN_OK;
}

static rn_status infer_castlike(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)n_out;
    TRY(require_inputs(node, in, n_in, 2));
    TRY(check_type(node, in, 0, TS_ANY));
    TRY(check_type(node, in, 1, TS_ANY));
    out[0].type = in[1].type;
    out[0].shape = in[0].shape;
    return RN_OK;
}

/* ---- binary and variadic with broadcasting ---- */

enum { NUMPY_ALIGNED = -1000 };

/* Where input 1 lines up with input 0 in the opset < 7 forms, or
 * NUMPY_ALIGNED for numpy's trailing alignment: `axis` with broadcast=1, and
 * PRelu's per-channel slope (a 1-d slope of more than one element applies
 * along axis 1). A negative axis counts from the end. */
static int legacy_axis(const graph_node *node, const graph_shape *a, const graph_shape *b)
{
    if (node->opset >= 7 || a->rank < 0 || b->rank < 0)
        return NUMPY_ALIGNED;
    if (strcmp(node->op_type, "PRelu") == 0)
        return b->rank == 1 && b->dims[0] != 1 && a->rank >= 2 ? 1 : NUMPY_ALIGNED;
    if (graph_node_attr_int(node, "broadcast", 0) == 0 || graph_node_attr(node, "axis") == NULL)
        return NUMPY_ALIGNED;
    int64_t axis = graph_node_attr_int(node, "axis", 0);
    if (axis < -a->rank || axis > a->rank)
        return -1; /* out of range: reported below */
    return (int)(axis < 0 ? axis + a->rank : axis);
}

/* Input 1's shape as the node broadcasts it: padded on the right with 1s
 * for the opset < 7 forms (legacy_axis). */
static rn_status legacy_rhs_shape(const graph_node *node, const graph_port *in, graph_shape *b)
{
    *b = in[1].shape;
    int rank = in[0].shape.rank;
    int axis = legacy_axis(node, &in[0].shape, b);
    if (axis == NUMPY_ALIGNED)
        return RN_OK;
    if (axis < 0 || axis + b->rank > rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input 1 '%s' of rank %d does not fit input 0 of rank %d at "
                                     "axis %lld",
                            NODE_ARGS(node), input_name(node, 1), b->rank, rank,
                            (long long)graph_node_attr_int(node, "axis", 1));
    for (int d = b->rank; d < rank - axis; d++)
        b->dims[d] = 1;
    b->rank = rank - axis;
    return RN_OK;
}

/* Broadcasts the shapes of every present input in [from, n_in) into *out. */
static rn_status broadcast_all(const graph_node *node, const graph_port *in, int from, int n_in,
                               graph_shape *out)
{
    graph_shape s = {.rank = 0};
    for (int i = from; i < n_in; i++) {
        if (!in[i].present)
            continue;
        graph_shape b = in[i].shape;
        if (i == 1 && from == 0)
            TRY(legacy_rhs_shape(node, in, &b));
        TRY(graph_broadcast_shapes(node, &s, &b, &s));
    }
    *out = s;
    return RN_OK;
}

/* Every input in [0, n_in) has a type in `set` and they all agree. */
static rn_status same_typed_inputs(const graph_node *node, const graph_port *in, int n_in,
                                   uint32_t set)
{
    for (int i = 0; i < n_in; i++) {
        if (!in[i].present)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d may not be omitted",
                                NODE_ARGS(node), i);
        TRY(check_type(node, in, i, set));
        if (i > 0)
            TRY(check_same_type(node, in, 0, i));
    }
    return RN_OK;
}

static rn_status broadcasting(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, uint32_t set, rn_element_type out_type)
{
    TRY(require_inputs(node, in, n_in, 1));
    TRY(same_typed_inputs(node, in, n_in, set));
    TRY(broadcast_all(node, in, 0, n_in, &out[0].shape));
    out[0].type = out_type != RN_UNDEFINED ? out_type : first_known_type(in, 0, n_in);
    return RN_OK;
}

#define BROADCAST_INFER(name, set, out_type)                                                       \
    static rn_status name(const graph_node *node, const graph_port *in, int n_in, graph_port *out, \
                          int n_out)                                                               \
    {                                                                                              \
        (void)n_out;                                                                               \
        return broadcasting(node, in, n_in, out, set, out_type);                                   \
    }

BROADCAST_INFER(infer_arith, TS_NUMERIC, RN_UNDEFINED)
BROADCAST_INFER(infer_float_variadic, TS_FLOAT, RN_UNDEFINED)
BROADCAST_INFER(infer_bitwise, TS_INT, RN_UNDEFINED)
BROADCAST_INFER(infer_compare, TS_NUMERIC, RN_BOOL)
BROADCAST_INFER(infer_equal, TS_ANY, RN_BOOL)
BROADCAST_INFER(infer_logic, TS_BOOL, RN_BOOL)

static rn_status infer_mod(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    TRY(infer_arith(node, in, n_in, out, n_out));
    rn_element_type t = first_known_type(in, 0, n_in);
    if (t != RN_UNDEFINED && (TS_FLOAT & (1u << t)) && graph_node_attr_int(node, "fmod", 0) != 1)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "attribute 'fmod' must be 1 for floating input type %s",
                            NODE_ARGS(node), rn_element_type_name(t));
    return RN_OK;
}

static rn_status infer_bitshift(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)n_out;
    const char *dir = graph_node_attr_string(node, "direction", "");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "attribute 'direction' is '%s', expected 'LEFT' or 'RIGHT'",
                            NODE_ARGS(node), dir);
    return broadcasting(node, in, n_in, out, TS_UINT, RN_UNDEFINED);
}

/* Pow: base and exponent types may differ; the output has the base's type. */
static rn_status infer_pow(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_out;
    TRY(require_inputs(node, in, n_in, 2));
    TRY(check_type(node, in, 0, TS_NUMERIC));
    TRY(check_type(node, in, 1, TS_NUMERIC));
    TRY(broadcast_all(node, in, 0, n_in, &out[0].shape));
    out[0].type = in[0].type;
    return RN_OK;
}

static rn_status infer_where(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    (void)n_out;
    TRY(require_inputs(node, in, n_in, 3));
    TRY(check_type(node, in, 0, TS_BOOL));
    TRY(check_type(node, in, 1, TS_ANY));
    TRY(check_same_type(node, in, 1, 2));
    TRY(broadcast_all(node, in, 0, n_in, &out[0].shape));
    out[0].type = first_known_type(in, 1, 3);
    return RN_OK;
}

/* Clip: min and max are optional inputs from opset 11 (scalars of the input
 * type), float attributes before. */
static rn_status infer_clip(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)n_out;
    TRY(require_inputs(node, in, n_in, 1));
    TRY(check_type(node, in, 0, node->opset < 11 ? TS_FLOAT : TS_NUMERIC));
    for (int i = 1; i < n_in; i++) {
        if (!in[i].present)
            continue;
        TRY(check_same_type(node, in, 0, i));
        int64_t count = graph_shape_count(&in[i].shape);
        if (in[i].shape.rank >= 0 && count >= 0 && count != 1) {
            char s[128];
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d '%s' (%s) must be a scalar, got shape %s",
                                NODE_ARGS(node), i, input_name(node, i), i == 1 ? "min" : "max",
                                graph_shape_str(&in[i].shape, s, sizeof s));
        }
    }
    out[0].type = in[0].type;
    out[0].shape = in[0].shape;
    return RN_OK;
}

/* ---- the table ---- */

#define A_FLOAT(name)  GRAPH_OPTIONAL(name, FLOAT)
#define A_INT(name)    GRAPH_OPTIONAL(name, INT)
#define A_CONSUMED     GRAPH_OPTIONAL("consumed_inputs", INTS)
#define A_LEGACY_BCAST A_INT("broadcast"), A_INT("axis"), A_CONSUMED

#define UNARY(op, fn, ...)                                                                         \
    {                                                                                              \
        "", op, 1, 1, 1, 1, 0, fn,                                                                 \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define BINARY(op, fn, ...)                                                                        \
    {                                                                                              \
        "", op, 2, 2, 1, 1, 0, fn,                                                                 \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define VARIADIC(op, fn, ...)                                                                      \
    {                                                                                              \
        "", op, 1, -1, 1, 1, 0, fn,                                                                \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }

const graph_op_schema graph_ops_elementwise[] = {
    /* binary arithmetic */
    BINARY("Add", infer_arith, A_LEGACY_BCAST),
    BINARY("Sub", infer_arith, A_LEGACY_BCAST),
    BINARY("Mul", infer_arith, A_LEGACY_BCAST),
    BINARY("Div", infer_arith, A_LEGACY_BCAST),
    BINARY("Pow", infer_pow, A_INT("broadcast"), A_INT("axis")),
    BINARY("Mod", infer_mod, A_INT("fmod")),
    BINARY("PRelu", infer_arith, A_CONSUMED),
    BINARY("BitShift", infer_bitshift, GRAPH_REQUIRED("direction", STRING)),
    BINARY("BitwiseAnd", infer_bitwise),
    BINARY("BitwiseOr", infer_bitwise),
    BINARY("BitwiseXor", infer_bitwise),
    /* comparison and logic: bool outputs */
    BINARY("Equal", infer_equal, A_INT("broadcast"), A_INT("axis")),
    BINARY("Less", infer_compare, A_INT("broadcast"), A_INT("axis")),
    BINARY("LessOrEqual", infer_compare),
    BINARY("Greater", infer_compare, A_INT("broadcast"), A_INT("axis")),
    BINARY("GreaterOrEqual", infer_compare),
    BINARY("And", infer_logic, A_INT("broadcast"), A_INT("axis")),
    BINARY("Or", infer_logic, A_INT("broadcast"), A_INT("axis")),
    BINARY("Xor", infer_logic, A_INT("broadcast"), A_INT("axis")),
    UNARY("Not", infer_unary_bool),
    UNARY("IsNaN", infer_classify),
    UNARY("IsInf", infer_classify, A_INT("detect_negative"), A_INT("detect_positive")),
    /* variadic */
    VARIADIC("Sum", infer_arith, A_CONSUMED),
    VARIADIC("Max", infer_arith, A_CONSUMED),
    VARIADIC("Min", infer_arith, A_CONSUMED),
    VARIADIC("Mean", infer_float_variadic, A_CONSUMED),
    {"", "Where", 3, 3, 1, 1, 0, infer_where, {{NULL}}},
    {"", "Clip", 1, 3, 1, 1, 0, infer_clip, {A_FLOAT("min"), A_FLOAT("max"), A_CONSUMED}},
    /* type conversion and copies */
    {"", "Cast", 1, 1, 1, 1, 0, infer_cast, {GRAPH_REQUIRED("to", INT), A_INT("saturate")}},
    {"", "CastLike", 2, 2, 1, 1, 0, infer_castlike, {A_INT("saturate")}},
    UNARY("Identity", infer_identity),
    /* unary math */
    UNARY("Abs", infer_unary_numeric, A_CONSUMED),
    UNARY("Neg", infer_unary_signed, A_CONSUMED),
    UNARY("Sign", infer_unary_numeric),
    UNARY("Sqrt", infer_unary_float, A_CONSUMED),
    UNARY("Exp", infer_unary_float, A_CONSUMED),
    UNARY("Log", infer_unary_float, A_CONSUMED),
    UNARY("Reciprocal", infer_unary_float, A_CONSUMED),
    UNARY("Floor", infer_unary_float, A_CONSUMED),
    UNARY("Ceil", infer_unary_float, A_CONSUMED),
    UNARY("Round", infer_unary_float),
    UNARY("Erf", infer_unary_float),
    UNARY("Sin", infer_unary_float),
    UNARY("Cos", infer_unary_float),
    UNARY("Tan", infer_unary_float),
    UNARY("Asin", infer_unary_float),
    UNARY("Acos", infer_unary_float),
    UNARY("Atan", infer_unary_float),
    UNARY("Sinh", infer_unary_float),
    UNARY("Cosh", infer_unary_float),
    UNARY("Asinh", infer_unary_float),
    UNARY("Acosh", infer_unary_float),
    UNARY("Atanh", infer_unary_float),
    UNARY("BitwiseNot", infer_unary_int),
    /* activations */
    UNARY("Relu", infer_unary_signed, A_CONSUMED),
    UNARY("Tanh", infer_unary_float, A_CONSUMED),
    UNARY("Sigmoid", infer_unary_float, A_CONSUMED),
    UNARY("Softplus", infer_unary_float),
    UNARY("Softsign", infer_unary_float),
    UNARY("LeakyRelu", infer_unary_float, GRAPH_DEFAULT_FLOAT("alpha", 0.01f), A_CONSUMED),
    UNARY("Elu", infer_unary_float, GRAPH_DEFAULT_FLOAT("alpha", 1.0f), A_CONSUMED),
    UNARY("Selu", infer_unary_float, GRAPH_DEFAULT_FLOAT("alpha", 1.67326319217681884765625f),
          GRAPH_DEFAULT_FLOAT("gamma", 1.05070102214813232421875f), A_CONSUMED),
    UNARY("Celu", infer_unary_float, GRAPH_DEFAULT_FLOAT("alpha", 1.0f)),
    UNARY("ThresholdedRelu", infer_unary_float, GRAPH_DEFAULT_FLOAT("alpha", 1.0f)),
    UNARY("HardSigmoid", infer_unary_float, GRAPH_DEFAULT_FLOAT("alpha", 0.2f),
          GRAPH_DEFAULT_FLOAT("beta", 0.5f), A_CONSUMED),
    UNARY("HardSwish", infer_unary_float),
    UNARY("Mish", infer_unary_float),
    UNARY("Gelu", infer_gelu, GRAPH_DEFAULT_STRING("approximate", "none")),
    UNARY("Shrink", infer_unary_numeric, GRAPH_DEFAULT_FLOAT("bias", 0.0f),
          GRAPH_DEFAULT_FLOAT("lambd", 0.5f)),
    {0},
};
