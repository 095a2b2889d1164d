/* REF comparisons with numpy broadcasting (Equal, Less, LessOrEqual, Greater,
 * GreaterOrEqual) and the floating-point classifiers IsNaN and IsInf; every
 * output is bool. Comparisons with NaN are false (Equal(NaN, NaN) too), as in
 * IEEE 754 and numpy. Equal also compares strings (opset 19). */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

#define op_equal(x, y)         ((x) == (y))
#define op_less(x, y)          ((x) < (y))
#define op_less_equal(x, y)    ((x) <= (y))
#define op_greater(x, y)       ((x) > (y))
#define op_greater_equal(x, y) ((x) >= (y))

#define DEF(A, sfx, RN, S, CLS, LD, ST)                                                            \
    REF_BINARY_ROW(A##_##sfx, S, LD, S, LD, uint8_t, REF_ST_BOOL, A(x, y))
#define ENTRY(A, sfx, RN, S, CLS, LD, ST) [RN] = A##_##sfx,
#define COMPARE_OP(A, TYPES)                                                                       \
    TYPES(DEF, A)                                                                                  \
    static const ref_binary_row_fn A##_fns[REF_NTYPES] = {TYPES(ENTRY, A)};

COMPARE_OP(op_equal, REF_TYPES_ALL)
/* Strings (Equal from opset 19): a NULL element reads as "". */
typedef char *string_elem; /* so that `const string_elem *` is char *const * */
#define LD_STRING(s) ((s) != NULL ? (const char *)(s) : "")
REF_BINARY_ROW(op_equal_string, string_elem, LD_STRING, string_elem, LD_STRING, uint8_t,
               REF_ST_BOOL, strcmp(x, y) == 0)
COMPARE_OP(op_less, REF_TYPES_NUMERIC)
COMPARE_OP(op_less_equal, REF_TYPES_NUMERIC)
COMPARE_OP(op_greater, REF_TYPES_NUMERIC)
COMPARE_OP(op_greater_equal, REF_TYPES_NUMERIC)

/* The row function of op_type for element type t, or NULL. */
static ref_binary_row_fn compare_fn(const char *op_type, rn_element_type t)
{
    if (t == RN_STRING)
        return strcmp(op_type, "Equal") == 0 ? op_equal_string : NULL;
    static const struct {
        const char *op_type;
        const ref_binary_row_fn *fns;
    } ops[] = {
        {"Equal", op_equal_fns},
        {"Less", op_less_fns},
        {"LessOrEqual", op_less_equal_fns},
        {"Greater", op_greater_fns},
        {"GreaterOrEqual", op_greater_equal_fns},
    };
    if ((unsigned)t >= REF_NTYPES)
        return NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op_type, ops[i].op_type) == 0)
            return ops[i].fns[t];
    return NULL;
}

static bool compare_supports(const graph_node *node, const char **why)
{
    rn_element_type t0 = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    rn_element_type t1 = node->inputs[1] ? node->inputs[1]->type : RN_UNDEFINED;
    if (compare_fn(node->op_type, t0) == NULL) {
        *why = ref_why_type(0, t0);
        return false;
    }
    if (t1 != t0) {
        *why = ref_why_type(1, t1);
        return false;
    }
    return true;
}

static rn_status compare_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 2);
    if (st != RN_OK)
        return st;
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    graph_tensor *out = &args->outputs[0];
    ref_binary_row_fn fn = compare_fn(node->op_type, a->type);
    if (fn == NULL || b->type != a->type || out->type != RN_BOOL)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input types %s and %s, output %s are not supported",
                            node->name, node->op_type, rn_element_type_name(a->type),
                            rn_element_type_name(b->type), rn_element_type_name(out->type));
    return ref_binary_apply(args, a, b, out, fn);
}

REF_KERNEL(ref_kernel_equal, "Equal", compare_supports, compare_run)
REF_KERNEL(ref_kernel_less, "Less", compare_supports, compare_run)
REF_KERNEL(ref_kernel_less_or_equal, "LessOrEqual", compare_supports, compare_run)
REF_KERNEL(ref_kernel_greater, "Greater", compare_supports, compare_run)
REF_KERNEL(ref_kernel_greater_or_equal, "GreaterOrEqual", compare_supports, compare_run)

/* ---- IsNaN, IsInf ---- */

typedef void (*classify_fn)(const void *x, uint8_t *y, int64_t n, bool neg, bool pos);

#define DEF_CLASSIFY(A, sfx, RN, S, CLS, LD, ST)                                                   \
    static void classify_##sfx(const void *xv, uint8_t *y, int64_t n, bool neg, bool pos)          \
    {                                                                                              \
        const S *x = xv;                                                                           \
        if (!neg && !pos) { /* IsNaN */                                                            \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = isnan(LD(x[i]));                                                            \
            return;                                                                                \
        }                                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            double v = LD(x[i]);                                                                   \
            y[i] = isinf(v) && (v < 0 ? neg : pos);                                                \
        }                                                                                          \
    }
#define ENTRY_CLASSIFY(A, sfx, RN, S, CLS, LD, ST) [RN] = classify_##sfx,

REF_TYPES_FLOAT(DEF_CLASSIFY, _)
static const classify_fn classify_fns[REF_NTYPES] = {REF_TYPES_FLOAT(ENTRY_CLASSIFY, _)};

static bool classify_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if ((unsigned)t >= REF_NTYPES || classify_fns[t] == NULL) {
        *why = ref_why_type(0, t);
        return false;
    }
    return true;
}

static rn_status classify_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if ((unsigned)x->type >= REF_NTYPES || classify_fns[x->type] == NULL || y->type != RN_BOOL ||
        graph_tensor_count(x) != graph_tensor_count(y))
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input type %s is not supported",
                            node->name, node->op_type, rn_element_type_name(x->type));
    bool is_inf = strcmp(node->op_type, "IsInf") == 0;
    bool neg = is_inf && graph_node_attr_int(node, "detect_negative", 1) != 0;
    bool pos = is_inf && graph_node_attr_int(node, "detect_positive", 1) != 0;
    if (is_inf && !neg && !pos) { /* detects nothing: all false */
        memset(y->data, 0, graph_tensor_count(y));
        return RN_OK;
    }
    classify_fns[x->type](x->data, y->data, (int64_t)graph_tensor_count(x), neg, pos);
    return RN_OK;
}

REF_KERNEL(ref_kernel_isnan, "IsNaN", classify_supports, classify_run)
REF_KERNEL(ref_kernel_isinf, "IsInf", classify_supports, classify_run)
