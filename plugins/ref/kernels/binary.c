/* REF binary arithmetic: Add, Sub, Mul, Div, Mod, PRelu and Pow, with numpy
 * broadcasting.
 *
 * Integer semantics (what numpy and the ONNX backend tests use): + - * wrap
 * modulo 2^bits; Div truncates toward zero; Mod with fmod=0 takes the sign of
 * the divisor (Python's %), with fmod=1 the sign of the dividend (C's %).
 * Integer division or remainder by zero yields 0 and INT_MIN / -1 wraps,
 * rather than trapping. Floating types compute in double (elementwise.h).
 * Pow accepts any numeric base and exponent types; the result has the base's
 * type, integer ** integer is exact, anything else goes through double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/broadcast.h"
#include "plugins/ref/kernels/elementwise.h"

static inline int64_t div_s(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return (int64_t)(0 - (uint64_t)x);
    return x / y;
}

static inline uint64_t div_u(uint64_t x, uint64_t y)
{
    return y == 0 ? 0 : x / y;
}

static inline int64_t rem_s(int64_t x, int64_t y)
{
    return y == 0 || y == -1 ? 0 : x % y;
}

/* Python's %: the result takes the divisor's sign. */
static inline int64_t mod_s(int64_t x, int64_t y)
{
    int64_t r = rem_s(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

#define op_add_F(x, y)   ((x) + (y))
#define op_add_I(x, y)   ((uint64_t)(x) + (uint64_t)(y))
#define op_add_U         op_add_I
#define op_sub_F(x, y)   ((x) - (y))
#define op_sub_I(x, y)   ((uint64_t)(x) - (uint64_t)(y))
#define op_sub_U         op_sub_I
#define op_mul_F(x, y)   ((x) * (y))
#define op_mul_I(x, y)   ((uint64_t)(x) * (uint64_t)(y))
#define op_mul_U         op_mul_I
#define op_div_F(x, y)   ((x) / (y))
#define op_div_I(x, y)   div_s(x, y)
#define op_div_U(x, y)   div_u(x, y)
#define op_mod_I(x, y)   mod_s(x, y)
#define op_mod_U(x, y)   ((y) == 0 ? 0 : (x) % (y))
#define op_fmod_F(x, y)  fmod(x, y)
#define op_fmod_I(x, y)  rem_s(x, y)
#define op_fmod_U        op_mod_U
#define op_prelu_F(x, y) ((x) < 0 ? (x) * (y) : (x))
#define op_prelu_I(x, y) ((x) < 0 ? (uint64_t)(x) * (uint64_t)(y) : (uint64_t)(x))
#define op_prelu_U(x, y) (x)
#define op_pow_F(x, y)   pow(x, y)

#define DEF(A, sfx, RN, S, CLS, LD, ST)                                                            \
    REF_BINARY_ROW(A##_##sfx, S, LD, S, LD, S, ST, A##_##CLS(x, y))
#define ENTRY(A, sfx, RN, S, CLS, LD, ST) [RN] = A##_##sfx,
#define BINARY_OP(A, TYPES)                                                                        \
    TYPES(DEF, A)                                                                                  \
    static const ref_binary_row_fn A##_fns[REF_NTYPES] = {TYPES(ENTRY, A)};

BINARY_OP(op_add, REF_TYPES_NUMERIC)
BINARY_OP(op_sub, REF_TYPES_NUMERIC)
BINARY_OP(op_mul, REF_TYPES_NUMERIC)
BINARY_OP(op_div, REF_TYPES_NUMERIC)
BINARY_OP(op_mod, REF_TYPES_INT)
BINARY_OP(op_fmod, REF_TYPES_NUMERIC)
BINARY_OP(op_prelu, REF_TYPES_NUMERIC)
BINARY_OP(op_pow, REF_TYPES_FLOAT)

/* The row function table of node's op (Mod by its fmod attribute). */
static const ref_binary_row_fn *binary_fns(const graph_node *node)
{
    static const struct {
        const char *op_type;
        const ref_binary_row_fn *fns;
    } ops[] = {
        {"Add", op_add_fns}, {"Sub", op_sub_fns},     {"Mul", op_mul_fns},
        {"Div", op_div_fns}, {"PRelu", op_prelu_fns}, {"Pow", op_pow_fns},
    };
    if (strcmp(node->op_type, "Mod") == 0)
        return graph_node_attr_int(node, "fmod", 0) ? op_fmod_fns : op_mod_fns;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(node->op_type, ops[i].op_type) == 0)
            return ops[i].fns;
    return NULL;
}

static bool is_numeric(rn_element_type t)
{
    return t != RN_BOOL && t != RN_STRING && rn_element_type_is_valid(t);
}

/* ---- Pow with mixed types: through double (or int64 for int ** int) ---- */

enum { POW_CHUNK = 256 };

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* Loads n elements of a row with step 0 or 1 into buf as type `as`. */
static void load_row(rn_element_type t, const char *p, int64_t step, rn_element_type as, void *buf,
                     int64_t n)
{
    if (step) {
        ref_convert(t, p, as, buf, n);
        return;
    }
    ref_convert(t, p, as, buf, 1);
    size_t es = rn_element_type_size(as);
    for (int64_t i = 1; i < n; i++)
        memcpy((char *)buf + (size_t)i * es, buf, es);
}

static int64_t ipow(int64_t base, int64_t exp)
{
    if (exp < 0) /* only 1 and -1 have integer reciprocals */
        return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    for (uint64_t e = (uint64_t)exp; e; e >>= 1) {
        if (e & 1)
            r *= b;
        b *= b;
    }
    return (int64_t)r;
}

static rn_status pow_mixed(const plugin_kernel_args *args)
{
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    graph_tensor *out = &args->outputs[0];
    const graph_tensor *ops[2] = {a, b};
    ref_bcast it;
    if (!ref_bcast_init(&it, out->rank, out->dims, 2, ops))
        return ref_broadcast_error(args->node, 2, ops, out);
    bool exact = !is_float(a->type) && !is_float(b->type);
    rn_element_type as = exact ? RN_I64 : RN_F64;
    size_t ea = rn_element_type_size(a->type), eb = rn_element_type_size(b->type);
    size_t eo = rn_element_type_size(out->type);
    union {
        double f[POW_CHUNK];
        int64_t i[POW_CHUNK];
    } x, y;
    for (int64_t r = 0; r < it.rows; r++, ref_bcast_next(&it)) {
        for (int64_t c = 0; c < it.inner; c += POW_CHUNK) {
            int64_t n = it.inner - c < POW_CHUNK ? it.inner - c : POW_CHUNK;
            load_row(a->type, (const char *)a->data + (size_t)(it.off[0] + c * it.step[0]) * ea,
                     it.step[0], as, &x, n);
            load_row(b->type, (const char *)b->data + (size_t)(it.off[1] + c * it.step[1]) * eb,
                     it.step[1], as, &y, n);
            for (int64_t i = 0; i < n; i++) {
                if (exact)
                    x.i[i] = ipow(x.i[i], y.i[i]);
                else
                    x.f[i] = pow(x.f[i], y.f[i]);
            }
            ref_convert(as, &x, out->type, (char *)out->data + (size_t)(r * it.inner + c) * eo, n);
        }
    }
    return RN_OK;
}

/* ---- the kernels ---- */

static bool binary_supports(const graph_node *node, const char **why)
{
    const ref_binary_row_fn *fns = binary_fns(node);
    rn_element_type t0 = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    rn_element_type t1 = node->inputs[1] ? node->inputs[1]->type : RN_UNDEFINED;
    if (strcmp(node->op_type, "Pow") == 0) {
        if (!is_numeric(t0) || !is_numeric(t1)) {
            *why = ref_why_type(is_numeric(t0) ? 1 : 0, is_numeric(t0) ? t1 : t0);
            return false;
        }
        return true;
    }
    if (fns == NULL || (unsigned)t0 >= REF_NTYPES || fns[t0] == NULL) {
        *why = ref_why_type(0, t0);
        return false;
    }
    if (t1 != t0) {
        *why = ref_why_type(1, t1);
        return false;
    }
    return true;
}

/* What a binary node does, resolved at compile time. */
typedef struct binary_state {
    const ref_binary_row_fn *fns;
    bool is_pow;
} binary_state;

static rn_status binary_prepare(const graph_node *node, void **state)
{
    binary_state *s = malloc(sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                            node->op_type);
    s->fns = binary_fns(node);
    s->is_pow = strcmp(node->op_type, "Pow") == 0;
    *state = s;
    return RN_OK;
}

static rn_status binary_run(plugin_kernel_args *args)
{
    const binary_state *state = args->state;
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 2);
    if (st != RN_OK)
        return st;
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    graph_tensor *out = &args->outputs[0];
    bool is_pow = state != NULL ? state->is_pow : strcmp(node->op_type, "Pow") == 0;
    if (is_pow && (a->type != b->type || !is_float(a->type))) {
        if (!is_numeric(a->type) || !is_numeric(b->type) || out->type != a->type)
            return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): unsupported types %s ** %s",
                                node->name, node->op_type, rn_element_type_name(a->type),
                                rn_element_type_name(b->type));
        return pow_mixed(args);
    }
    const ref_binary_row_fn *fns = state != NULL ? state->fns : binary_fns(node);
    if (fns == NULL || (unsigned)a->type >= REF_NTYPES || fns[a->type] == NULL ||
        b->type != a->type || out->type != a->type)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input types %s and %s, output %s are not supported",
                            node->name, node->op_type, rn_element_type_name(a->type),
                            rn_element_type_name(b->type), rn_element_type_name(out->type));
    return ref_binary_apply(args, a, b, out, fns[a->type]);
}

REF_KERNEL_INPLACE(ref_kernel_add, "Add", binary_supports, binary_prepare, binary_run)
REF_KERNEL_INPLACE(ref_kernel_sub, "Sub", binary_supports, binary_prepare, binary_run)
REF_KERNEL_INPLACE(ref_kernel_mul, "Mul", binary_supports, binary_prepare, binary_run)
REF_KERNEL_INPLACE(ref_kernel_div, "Div", binary_supports, binary_prepare, binary_run)
REF_KERNEL_INPLACE(ref_kernel_mod, "Mod", binary_supports, binary_prepare, binary_run)
REF_KERNEL_INPLACE(ref_kernel_prelu, "PRelu", binary_supports, binary_prepare, binary_run)
REF_KERNEL_INPLACE(ref_kernel_pow, "Pow", binary_supports, binary_prepare, binary_run)
