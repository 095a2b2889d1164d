/* REF logic on bool tensors: And, Or, Xor with numpy broadcasting, and Not.
 * Inputs are read as "not zero", outputs are 0 or 1. */
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

REF_BINARY_ROW(and_row, uint8_t, REF_LD_BOOL, uint8_t, REF_LD_BOOL, uint8_t, REF_ST_BOOL, x &y)
REF_BINARY_ROW(or_row, uint8_t, REF_LD_BOOL, uint8_t, REF_LD_BOOL, uint8_t, REF_ST_BOOL, x | y)
REF_BINARY_ROW(xor_row, uint8_t, REF_LD_BOOL, uint8_t, REF_LD_BOOL, uint8_t, REF_ST_BOOL, x ^ y)

static ref_binary_row_fn logic_fn(const char *op_type)
{
    if (strcmp(op_type, "And") == 0)
        return and_row;
    if (strcmp(op_type, "Or") == 0)
        return or_row;
    if (strcmp(op_type, "Xor") == 0)
        return xor_row;
    return NULL;
}

static bool logic_supports(const graph_node *node, const char **why)
{
    for (int i = 0; i < node->n_inputs; i++) {
        rn_element_type t = node->inputs[i] ? node->inputs[i]->type : RN_UNDEFINED;
        if (t != RN_BOOL) {
            *why = ref_why_type(i, t);
            return false;
        }
    }
    return true;
}

static rn_status check_bool(const plugin_kernel_args *args, int n)
{
    for (int i = 0; i < n; i++)
        if (args->inputs[i].type != RN_BOOL)
            return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input %d has type %s, not bool",
                                args->node->name, args->node->op_type, i,
                                rn_element_type_name(args->inputs[i].type));
    if (args->outputs[0].type != RN_BOOL)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): output has type %s, not bool",
                            args->node->name, args->node->op_type,
                            rn_element_type_name(args->outputs[0].type));
    return RN_OK;
}

static rn_status logic_run(plugin_kernel_args *args)
{
    rn_status st = ref_check_args(args, 2);
    if (st == RN_OK)
        st = check_bool(args, 2);
    if (st != RN_OK)
        return st;
    ref_binary_row_fn fn = logic_fn(args->node->op_type);
    if (fn == NULL)
        return rn_set_error(RN_INTERNAL, "node '%s': REF logic kernel run for op '%s'",
                            args->node->name, args->node->op_type);
    return ref_binary_apply(args, &args->inputs[0], &args->inputs[1], &args->outputs[0], fn);
}

static rn_status not_run(plugin_kernel_args *args)
{
    rn_status st = ref_check_args(args, 1);
    if (st == RN_OK)
        st = check_bool(args, 1);
    if (st != RN_OK)
        return st;
    const uint8_t *x = args->inputs[0].data;
    uint8_t *y = args->outputs[0].data;
    size_t n = graph_tensor_count(&args->inputs[0]);
    if (n != graph_tensor_count(&args->outputs[0]))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output has %zu elements, input %zu",
                            args->node->name, args->node->op_type,
                            graph_tensor_count(&args->outputs[0]), n);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] == 0;
    return RN_OK;
}

REF_KERNEL(ref_kernel_and, "And", logic_supports, logic_run)
REF_KERNEL(ref_kernel_or, "Or", logic_supports, logic_run)
REF_KERNEL(ref_kernel_xor, "Xor", logic_supports, logic_run)
REF_KERNEL(ref_kernel_not, "Not", logic_supports, not_run)
