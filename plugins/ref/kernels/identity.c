/* REF Identity: copies its input (strings are duplicated, so that the output
 * owns its own). */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

static bool identity_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if (!rn_element_type_is_valid(t)) {
        *why = ref_why_type(0, t);
        return false;
    }
    return true;
}

static rn_status identity_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    size_t n = graph_tensor_count(x);
    if (y->type != x->type || graph_tensor_count(y) != n)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): output does not match the input",
                            node->name, node->op_type);
    if (x->type != RN_STRING) {
        if (y->data != x->data && n > 0)
            memcpy(y->data, x->data, n * rn_element_type_size(x->type));
        return RN_OK;
    }
    char *const *in = x->data;
    char **out = y->data;
    for (size_t i = 0; i < n; i++) {
        out[i] = strdup(in[i] != NULL ? in[i] : "");
        if (out[i] == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                                node->op_type);
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_identity = {
    .domain = "",
    .op_type = "Identity",
    .impl_type = "ref",
    .supports = identity_supports,
    .run = identity_run,
    .flags = RN_KERNEL_VIEW,
};
