/* REF unary math and activations: Abs, Neg, Sign, Sqrt, Exp, Log, Reciprocal,
 * Floor, Ceil, Round, Erf, the trigonometric and hyperbolic functions, Relu,
 * Tanh, Sigmoid, Softplus, Softsign, LeakyRelu, Elu, Selu, Celu,
 * ThresholdedRelu, HardSigmoid, HardSwish, Mish, Gelu and Shrink.
 *
 * Floating types compute in double (elementwise.h); NaN propagates through
 * every op (the activations test `x < 0`-style conditions so that a NaN takes
 * the identity branch or an arithmetic one, never a constant). Abs and Neg of
 * the most negative integer wrap, as in numpy. Round is half-to-even.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

typedef struct unary_params {
    double alpha, beta, gamma;
    int mode; /* Gelu: 0 exact (erf), 1 tanh approximation */
} unary_params;

typedef void (*unary_row_fn)(const void *x, void *y, int64_t n, const unary_params *p);

static inline double sigmoid(double x)
{
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static inline double softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* Clamps to [0, 1], letting NaN through. */
static inline double unit_clamp(double v)
{
    return v < 0 ? 0.0 : v > 1 ? 1.0 : v;
}

static inline double gelu(double x, int mode)
{
    if (mode == 0)
        return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
    const double k = 0.7978845608028654; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

#define op_abs_F(x)             fabs(x)
#define op_abs_I(x)             ((x) < 0 ? 0 - (uint64_t)(x) : (uint64_t)(x))
#define op_abs_U(x)             (x)
#define op_neg_F(x)             (-(x))
#define op_neg_I(x)             (0 - (uint64_t)(x))
#define op_sign_F(x)            ((x) > 0 ? 1.0 : (x) < 0 ? -1.0 : (x) == 0 ? 0.0 : (x))
#define op_sign_I(x)            (((x) > 0) - ((x) < 0))
#define op_sign_U(x)            ((x) > 0)
#define op_relu_F(x)            ((x) < 0 ? 0.0 : (x))
#define op_relu_I(x)            ((x) < 0 ? 0 : (x))
#define op_sqrt_F(x)            sqrt(x)
#define op_exp_F(x)             exp(x)
#define op_log_F(x)             log(x)
#define op_reciprocal_F(x)      (1.0 / (x))
#define op_floor_F(x)           floor(x)
#define op_ceil_F(x)            ceil(x)
#define op_round_F(x)           nearbyint(x) /* the default rounding mode: half to even */
#define op_erf_F(x)             erf(x)
#define op_sin_F(x)             sin(x)
#define op_cos_F(x)             cos(x)
#define op_tan_F(x)             tan(x)
#define op_asin_F(x)            asin(x)
#define op_acos_F(x)            acos(x)
#define op_atan_F(x)            atan(x)
#define op_sinh_F(x)            sinh(x)
#define op_cosh_F(x)            cosh(x)
#define op_asinh_F(x)           asinh(x)
#define op_acosh_F(x)           acosh(x)
#define op_atanh_F(x)           atanh(x)
#define op_tanh_F(x)            tanh(x)
#define op_sigmoid_F(x)         sigmoid(x)
#define op_softplus_F(x)        softplus(x)
#define op_softsign_F(x)        ((x) / (1.0 + fabs(x)))
#define op_leakyrelu_F(x)       ((x) < 0 ? p->alpha * (x) : (x))
#define op_elu_F(x)             ((x) < 0 ? p->alpha * expm1(x) : (x))
#define op_selu_F(x)            ((x) <= 0 ? p->gamma * p->alpha * expm1(x) : p->gamma * (x))
#define op_celu_F(x)            ((x) > 0 ? (x) : p->alpha * expm1((x) / p->alpha))
#define op_thresholdedrelu_F(x) ((x) > p->alpha ? (x) : (x) <= p->alpha ? 0.0 : (x))
#define op_hardsigmoid_F(x)     unit_clamp(p->alpha *(x) + p->beta)
#define op_hardswish_F(x)       ((x)*unit_clamp((x) / 6.0 + 0.5))
#define op_mish_F(x)            ((x)*tanh(softplus(x)))
#define op_gelu_F(x)            gelu(x, p->mode)
/* Shrink: alpha is lambd, beta is bias. Integers compute in double too. */
#define op_shrink_F(x) ((x) < -p->alpha ? (x) + p->beta : (x) > p->alpha ? (x)-p->beta : 0.0)
#define op_shrink_I(x) op_shrink_F((double)(x))
#define op_shrink_U    op_shrink_I

#define DEF(A, sfx, RN, S, CLS, LD, ST)                                                            \
    static void A##_##sfx(const void *xv, void *yv, int64_t n, const unary_params *p)              \
    {                                                                                              \
        const S *xs = xv;                                                                          \
        S *ys = yv;                                                                                \
        (void)p;                                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            __typeof__(LD(xs[0])) x = LD(xs[i]);                                                   \
            ys[i] = ST(A##_##CLS(x));                                                              \
        }                                                                                          \
    }
#define ENTRY(A, sfx, RN, S, CLS, LD, ST) [RN] = A##_##sfx,
#define UNARY_OP(A, TYPES)                                                                         \
    TYPES(DEF, A)                                                                                  \
    static const unary_row_fn A##_fns[REF_NTYPES] = {TYPES(ENTRY, A)};

UNARY_OP(op_abs, REF_TYPES_NUMERIC)
UNARY_OP(op_neg, REF_TYPES_SIGNED)
UNARY_OP(op_sign, REF_TYPES_NUMERIC)
UNARY_OP(op_relu, REF_TYPES_SIGNED)
UNARY_OP(op_sqrt, REF_TYPES_FLOAT)
UNARY_OP(op_exp, REF_TYPES_FLOAT)
UNARY_OP(op_log, REF_TYPES_FLOAT)
UNARY_OP(op_reciprocal, REF_TYPES_FLOAT)
UNARY_OP(op_floor, REF_TYPES_FLOAT)
UNARY_OP(op_ceil, REF_TYPES_FLOAT)
UNARY_OP(op_round, REF_TYPES_FLOAT)
UNARY_OP(op_erf, REF_TYPES_FLOAT)
UNARY_OP(op_sin, REF_TYPES_FLOAT)
UNARY_OP(op_cos, REF_TYPES_FLOAT)
UNARY_OP(op_tan, REF_TYPES_FLOAT)
UNARY_OP(op_asin, REF_TYPES_FLOAT)
UNARY_OP(op_acos, REF_TYPES_FLOAT)
UNARY_OP(op_atan, REF_TYPES_FLOAT)
UNARY_OP(op_sinh, REF_TYPES_FLOAT)
UNARY_OP(op_cosh, REF_TYPES_FLOAT)
UNARY_OP(op_asinh, REF_TYPES_FLOAT)
UNARY_OP(op_acosh, REF_TYPES_FLOAT)
UNARY_OP(op_atanh, REF_TYPES_FLOAT)
UNARY_OP(op_tanh, REF_TYPES_FLOAT)
UNARY_OP(op_sigmoid, REF_TYPES_FLOAT)
UNARY_OP(op_softplus, REF_TYPES_FLOAT)
UNARY_OP(op_softsign, REF_TYPES_FLOAT)
UNARY_OP(op_leakyrelu, REF_TYPES_FLOAT)
UNARY_OP(op_elu, REF_TYPES_FLOAT)
UNARY_OP(op_selu, REF_TYPES_FLOAT)
UNARY_OP(op_celu, REF_TYPES_FLOAT)
UNARY_OP(op_thresholdedrelu, REF_TYPES_FLOAT)
UNARY_OP(op_hardsigmoid, REF_TYPES_FLOAT)
UNARY_OP(op_hardswish, REF_TYPES_FLOAT)
UNARY_OP(op_mish, REF_TYPES_FLOAT)
UNARY_OP(op_gelu, REF_TYPES_FLOAT)
UNARY_OP(op_shrink, REF_TYPES_NUMERIC)

/* An op: its row functions by type. alpha and beta are read from
 * attributes of those names unless the op names them otherwise (Shrink:
 * lambd, bias); their defaults are the op schema's (graph/ops). */
typedef struct unary_op {
    const char *op_type;
    const unary_row_fn *fns;
    const char *alpha_name, *beta_name;
} unary_op;

static const unary_op unary_ops[] = {
    {.op_type = "Abs", .fns = op_abs_fns},
    {.op_type = "Neg", .fns = op_neg_fns},
    {.op_type = "Sign", .fns = op_sign_fns},
    {.op_type = "Relu", .fns = op_relu_fns},
    {.op_type = "Sqrt", .fns = op_sqrt_fns},
    {.op_type = "Exp", .fns = op_exp_fns},
    {.op_type = "Log", .fns = op_log_fns},
    {.op_type = "Reciprocal", .fns = op_reciprocal_fns},
    {.op_type = "Floor", .fns = op_floor_fns},
    {.op_type = "Ceil", .fns = op_ceil_fns},
    {.op_type = "Round", .fns = op_round_fns},
    {.op_type = "Erf", .fns = op_erf_fns},
    {.op_type = "Sin", .fns = op_sin_fns},
    {.op_type = "Cos", .fns = op_cos_fns},
    {.op_type = "Tan", .fns = op_tan_fns},
    {.op_type = "Asin", .fns = op_asin_fns},
    {.op_type = "Acos", .fns = op_acos_fns},
    {.op_type = "Atan", .fns = op_atan_fns},
    {.op_type = "Sinh", .fns = op_sinh_fns},
    {.op_type = "Cosh", .fns = op_cosh_fns},
    {.op_type = "Asinh", .fns = op_asinh_fns},
    {.op_type = "Acosh", .fns = op_acosh_fns},
    {.op_type = "Atanh", .fns = op_atanh_fns},
    {.op_type = "Tanh", .fns = op_tanh_fns},
    {.op_type = "Sigmoid", .fns = op_sigmoid_fns},
    {.op_type = "Softplus", .fns = op_softplus_fns},
    {.op_type = "Softsign", .fns = op_softsign_fns},
    {.op_type = "LeakyRelu", .fns = op_leakyrelu_fns},
    {.op_type = "Elu", .fns = op_elu_fns},
    {.op_type = "Selu", .fns = op_selu_fns},
    {.op_type = "Celu", .fns = op_celu_fns},
    {.op_type = "ThresholdedRelu", .fns = op_thresholdedrelu_fns},
    {.op_type = "HardSigmoid", .fns = op_hardsigmoid_fns},
    {.op_type = "HardSwish", .fns = op_hardswish_fns},
    {.op_type = "Mish", .fns = op_mish_fns},
    {.op_type = "Gelu", .fns = op_gelu_fns},
    {.op_type = "Shrink", .fns = op_shrink_fns, .alpha_name = "lambd", .beta_name = "bias"},
};

static const unary_op *find_op(const char *op_type)
{
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (strcmp(unary_ops[i].op_type, op_type) == 0)
            return &unary_ops[i];
    return NULL;
}

static bool unary_supports(const graph_node *node, const char **why)
{
    const unary_op *op = find_op(node->op_type);
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if (op == NULL || (unsigned)t >= REF_NTYPES || op->fns[t] == NULL) {
        *why = ref_why_type(0, t);
        return false;
    }
    return true;
}

/* What a unary node does, resolved at compile time. */
typedef struct unary_state {
    const unary_op *op;
    unary_params p;
} unary_state;

/* A FLOAT parameter: the attribute or its schema default; 0 for an op
 * without it. */
static float param(const graph_node *node, const char *name)
{
    return graph_node_attr_has_default(node, name) ? graph_node_attr_float_or_default(node, name)
                                                   : 0.0f;
}

static unary_params unary_params_of(const graph_node *node, const unary_op *op)
{
    return (unary_params){
        .alpha = param(node, op->alpha_name ? op->alpha_name : "alpha"),
        .beta = param(node, op->beta_name ? op->beta_name : "beta"),
        .gamma = param(node, "gamma"),
        .mode = graph_node_attr_has_default(node, "approximate") &&
                strcmp(graph_node_attr_string_or_default(node, "approximate"), "tanh") == 0,
    };
}

static rn_status unary_prepare(const graph_node *node, void **state)
{
    const unary_op *op = find_op(node->op_type);
    if (op == NULL)
        return rn_set_error(RN_UNSUPPORTED, "node '%s' (%s): not a unary op", node->name,
                            node->op_type);
    unary_state *s = malloc(sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                            node->op_type);
    s->op = op;
    s->p = unary_params_of(node, op);
    *state = s;
    return RN_OK;
}

static rn_status unary_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const unary_state *state = args->state;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const unary_op *op = state != NULL ? state->op : find_op(node->op_type);
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (op == NULL || (unsigned)x->type >= REF_NTYPES || op->fns[x->type] == NULL ||
        y->type != x->type)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input type %s is not supported",
                            node->name, node->op_type, rn_element_type_name(x->type));
    if (graph_tensor_count(x) != graph_tensor_count(y))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output has %zu elements, input %zu",
                            node->name, node->op_type, graph_tensor_count(y),
                            graph_tensor_count(x));
    unary_params p = state != NULL ? state->p : unary_params_of(node, op);
    op->fns[x->type](x->data, y->data, (int64_t)graph_tensor_count(x), &p);
    return RN_OK;
}

REF_KERNEL_INPLACE(ref_kernel_abs, "Abs", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_neg, "Neg", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_sign, "Sign", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_relu, "Relu", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_sqrt, "Sqrt", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_exp, "Exp", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_log, "Log", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_reciprocal, "Reciprocal", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_floor, "Floor", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_ceil, "Ceil", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_round, "Round", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_erf, "Erf", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_sin, "Sin", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_cos, "Cos", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_tan, "Tan", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_asin, "Asin", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_acos, "Acos", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_atan, "Atan", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_sinh, "Sinh", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_cosh, "Cosh", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_asinh, "Asinh", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_acosh, "Acosh", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_atanh, "Atanh", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_tanh, "Tanh", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_sigmoid, "Sigmoid", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_softplus, "Softplus", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_softsign, "Softsign", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_leakyrelu, "LeakyRelu", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_elu, "Elu", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_selu, "Selu", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_celu, "Celu", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_thresholdedrelu, "ThresholdedRelu", unary_supports, unary_prepare,
                   unary_run)
REF_KERNEL_INPLACE(ref_kernel_hardsigmoid, "HardSigmoid", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_hardswish, "HardSwish", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_mish, "Mish", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_gelu, "Gelu", unary_supports, unary_prepare, unary_run)
REF_KERNEL_INPLACE(ref_kernel_shrink, "Shrink", unary_supports, unary_prepare, unary_run)
