/* REF variadic elementwise ops: Sum, Max, Min and Mean of one or more inputs
 * with numpy broadcasting. The output is folded pairwise in place
 * (out = in0 op in1, then out = out op in_k), so floating types round to the
 * output type after each input. Max and Min propagate NaN, as numpy's
 * maximum/minimum do. */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

#define op_first_F(x, y) (x)
#define op_first_I       op_first_F
#define op_first_U       op_first_F
#define op_sum_F(x, y)   ((x) + (y))
#define op_sum_I(x, y)   ((uint64_t)(x) + (uint64_t)(y))
#define op_sum_U         op_sum_I
#define op_max_F(x, y)   (isnan(x) ? (x) : isnan(y) ? (y) : (x) >= (y) ? (x) : (y))
#define op_max_I(x, y)   ((x) >= (y) ? (x) : (y))
#define op_max_U         op_max_I
#define op_min_F(x, y)   (isnan(x) ? (x) : isnan(y) ? (y) : (x) <= (y) ? (x) : (y))
#define op_min_I(x, y)   ((x) <= (y) ? (x) : (y))
#define op_min_U         op_min_I

#define DEF(A, sfx, RN, S, CLS, LD, ST)                                                            \
    REF_BINARY_ROW(A##_##sfx, S, LD, S, LD, S, ST, A##_##CLS(x, y))
#define ENTRY(A, sfx, RN, S, CLS, LD, ST) [RN] = A##_##sfx,
#define VARIADIC_OP(A, TYPES)                                                                      \
    TYPES(DEF, A)                                                                                  \
    static const ref_binary_row_fn A##_fns[REF_NTYPES] = {TYPES(ENTRY, A)};

VARIADIC_OP(op_first, REF_TYPES_NUMERIC)
VARIADIC_OP(op_sum, REF_TYPES_NUMERIC)
VARIADIC_OP(op_max, REF_TYPES_NUMERIC)
VARIADIC_OP(op_min, REF_TYPES_NUMERIC)

/* Mean's final division, in place. */
typedef void (*scale_fn)(void *o, int64_t count, double divisor);
#define DEF_SCALE(A, sfx, RN, S, CLS, LD, ST)                                                      \
    static void scale_##sfx(void *ov, int64_t count, double divisor)                               \
    {                                                                                              \
        S *o = ov;                                                                                 \
        for (int64_t i = 0; i < count; i++)                                                        \
            o[i] = ST(LD(o[i]) / divisor);                                                         \
    }
#define ENTRY_SCALE(A, sfx, RN, S, CLS, LD, ST) [RN] = scale_##sfx,
REF_TYPES_FLOAT(DEF_SCALE, _)
static const scale_fn scale_fns[REF_NTYPES] = {REF_TYPES_FLOAT(ENTRY_SCALE, _)};

static const ref_binary_row_fn *variadic_fns(const char *op_type)
{
    if (strcmp(op_type, "Sum") == 0 || strcmp(op_type, "Mean") == 0)
        return op_sum_fns;
    if (strcmp(op_type, "Max") == 0)
        return op_max_fns;
    if (strcmp(op_type, "Min") == 0)
        return op_min_fns;
    return NULL;
}

static bool type_ok(const char *op_type, rn_element_type t)
{
    const ref_binary_row_fn *fns = variadic_fns(op_type);
    if (fns == NULL || (unsigned)t >= REF_NTYPES || fns[t] == NULL)
        return false;
    return strcmp(op_type, "Mean") != 0 || scale_fns[t] != NULL;
}

static bool variadic_supports(const graph_node *node, const char **why)
{
    rn_element_type t0 =
        node->n_inputs > 0 && node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if (!type_ok(node->op_type, t0)) {
        *why = ref_why_type(0, t0);
        return false;
    }
    for (int i = 1; i < node->n_inputs; i++) {
        rn_element_type t = node->inputs[i] ? node->inputs[i]->type : RN_UNDEFINED;
        if (t != t0) {
            *why = ref_why_type(i, t);
            return false;
        }
    }
    return true;
}

static rn_status variadic_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, args->n_inputs > 0 ? args->n_inputs : 1);
    if (st != RN_OK)
        return st;
    graph_tensor *out = &args->outputs[0];
    rn_element_type t = args->inputs[0].type;
    if (!type_ok(node->op_type, t) || out->type != t)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input type %s is not supported",
                            node->name, node->op_type, rn_element_type_name(t));
    for (int i = 1; i < args->n_inputs; i++)
        if (args->inputs[i].type != t)
            return rn_set_error(
                RN_TYPE_MISMATCH, "node '%s' (%s): input %d has type %s but input 0 has %s",
                node->name, node->op_type, i, rn_element_type_name(args->inputs[i].type),
                rn_element_type_name(t));
    const ref_binary_row_fn *fns = variadic_fns(node->op_type);
    if (args->n_inputs == 1) {
        st = ref_binary_apply(args, &args->inputs[0], &args->inputs[0], out, op_first_fns[t]);
    } else {
        st = ref_binary_apply(args, &args->inputs[0], &args->inputs[1], out, fns[t]);
        for (int i = 2; st == RN_OK && i < args->n_inputs; i++)
            st = ref_binary_apply(args, out, &args->inputs[i], out, fns[t]);
    }
    if (st == RN_OK && strcmp(node->op_type, "Mean") == 0)
        scale_fns[t](out->data, (int64_t)graph_tensor_count(out), args->n_inputs);
    return st;
}

REF_KERNEL(ref_kernel_sum, "Sum", variadic_supports, variadic_run)
REF_KERNEL(ref_kernel_max, "Max", variadic_supports, variadic_run)
REF_KERNEL(ref_kernel_min, "Min", variadic_supports, variadic_run)
REF_KERNEL(ref_kernel_mean, "Mean", variadic_supports, variadic_run)
