/* REF bitwise ops on integer tensors: BitwiseAnd, BitwiseOr, BitwiseXor with
 * numpy broadcasting, BitwiseNot, and BitShift (unsigned types; a shift by the
 * type's width or more gives 0 rather than C's undefined behaviour). */
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

#define op_band(x, y) ((x) & (y))
#define op_bor(x, y)  ((x) | (y))
#define op_bxor(x, y) ((x) ^ (y))
/* Shifts a value of `bits` width; the result is truncated by the store. */
#define op_shl(x, y) ((y) >= 8 * sizeof(x) ? 0 : (uint64_t)(x) << (y))
#define op_shr(x, y) ((y) >= 8 * sizeof(x) ? 0 : (uint64_t)(x) >> (y))

#define DEF(A, sfx, RN, S, CLS, LD, ST)   REF_BINARY_ROW(A##_##sfx, S, LD, S, LD, S, ST, A(x, y))
#define ENTRY(A, sfx, RN, S, CLS, LD, ST) [RN] = A##_##sfx,
#define BITWISE_OP(A, TYPES)                                                                       \
    TYPES(DEF, A)                                                                                  \
    static const ref_binary_row_fn A##_fns[REF_NTYPES] = {TYPES(ENTRY, A)};

BITWISE_OP(op_band, REF_TYPES_INT)
BITWISE_OP(op_bor, REF_TYPES_INT)
BITWISE_OP(op_bxor, REF_TYPES_INT)
BITWISE_OP(op_shl, REF_TYPES_UINT)
BITWISE_OP(op_shr, REF_TYPES_UINT)

static const ref_binary_row_fn *bitwise_fns(const graph_node *node)
{
    if (strcmp(node->op_type, "BitwiseAnd") == 0)
        return op_band_fns;
    if (strcmp(node->op_type, "BitwiseOr") == 0)
        return op_bor_fns;
    if (strcmp(node->op_type, "BitwiseXor") == 0)
        return op_bxor_fns;
    if (strcmp(node->op_type, "BitShift") == 0) {
        const char *dir = graph_node_attr_string(node, "direction", "");
        return strcmp(dir, "LEFT") == 0    ? op_shl_fns
               : strcmp(dir, "RIGHT") == 0 ? op_shr_fns
                                           : NULL;
    }
    return NULL;
}

static bool bitwise_supports(const graph_node *node, const char **why)
{
    const ref_binary_row_fn *fns = bitwise_fns(node);
    rn_element_type t0 = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    rn_element_type t1 = node->inputs[1] ? node->inputs[1]->type : RN_UNDEFINED;
    if (fns == NULL) {
        *why = "direction attribute";
        return false;
    }
    if ((unsigned)t0 >= REF_NTYPES || fns[t0] == NULL) {
        *why = ref_why_type(0, t0);
        return false;
    }
    if (t1 != t0) {
        *why = ref_why_type(1, t1);
        return false;
    }
    return true;
}

static rn_status bitwise_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 2);
    if (st != RN_OK)
        return st;
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    graph_tensor *out = &args->outputs[0];
    const ref_binary_row_fn *fns = bitwise_fns(node);
    if (fns == NULL)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): attribute 'direction' is '%s'",
                            node->name, node->op_type,
                            graph_node_attr_string(node, "direction", ""));
    if ((unsigned)a->type >= REF_NTYPES || fns[a->type] == NULL || b->type != a->type ||
        out->type != a->type)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input types %s and %s, output %s are not supported",
                            node->name, node->op_type, rn_element_type_name(a->type),
                            rn_element_type_name(b->type), rn_element_type_name(out->type));
    return ref_binary_apply(args, a, b, out, fns[a->type]);
}

/* ---- BitwiseNot ---- */

typedef void (*not_fn)(const void *x, void *y, int64_t n);

#define DEF_NOT(A, sfx, RN, S, CLS, LD, ST)                                                        \
    static void not_##sfx(const void *xv, void *yv, int64_t n)                                     \
    {                                                                                              \
        const S *x = xv;                                                                           \
        S *y = yv;                                                                                 \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = (S)~x[i];                                                                       \
    }
#define ENTRY_NOT(A, sfx, RN, S, CLS, LD, ST) [RN] = not_##sfx,
REF_TYPES_INT(DEF_NOT, _)
static const not_fn not_fns[REF_NTYPES] = {REF_TYPES_INT(ENTRY_NOT, _)};

static bool not_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if ((unsigned)t >= REF_NTYPES || not_fns[t] == NULL) {
        *why = ref_why_type(0, t);
        return false;
    }
    return true;
}

static rn_status not_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if ((unsigned)x->type >= REF_NTYPES || not_fns[x->type] == NULL || y->type != x->type ||
        graph_tensor_count(x) != graph_tensor_count(y))
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input type %s is not supported",
                            node->name, node->op_type, rn_element_type_name(x->type));
    not_fns[x->type](x->data, y->data, (int64_t)graph_tensor_count(x));
    return RN_OK;
}

REF_KERNEL(ref_kernel_bitwise_and, "BitwiseAnd", bitwise_supports, bitwise_run)
REF_KERNEL(ref_kernel_bitwise_or, "BitwiseOr", bitwise_supports, bitwise_run)
REF_KERNEL(ref_kernel_bitwise_xor, "BitwiseXor", bitwise_supports, bitwise_run)
REF_KERNEL(ref_kernel_bitshift, "BitShift", bitwise_supports, bitwise_run)
REF_KERNEL(ref_kernel_bitwise_not, "BitwiseNot", not_supports, not_run)
