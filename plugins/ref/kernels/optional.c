/* REF optionals: Optional, OptionalGetElement, OptionalHasElement (opset 15;
 * 18 lets the last two take plain tensors and sequences), and Identity of
 * sequences and optionals (Identity of tensors is identity.c).
 *
 * At run time an optional with a value is that value (a tensor or a
 * sequence) and one without is a descriptor of the optional kind, so these
 * kernels copy values through and test for the optional kinds. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool has_input(const plugin_kernel_args *args, int i)
{
    return i < args->n_inputs && args->node->inputs[i] != NULL;
}

static rn_status optional_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    if (has_input(args, 0)) {
        const graph_tensor *x = &args->inputs[0];
        if (graph_kind_is_optional(x->kind))
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "input is a %s; optionals of optionals are not supported",
                                NODE_ARGS(node), graph_kind_name(x->kind));
        return ref_move_copy(args, 0, x);
    }
    const graph_attr *a = graph_node_attr(node, "type");
    if (a == NULL || a->type != GRAPH_ATTR_TYPE_PROTO)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "without an input, the attribute 'type' must say what the "
                                     "optional holds",
                            NODE_ARGS(node));
    graph_tensor none = {
        .kind =
            a->tp.kind == GRAPH_KIND_SEQUENCE ? GRAPH_KIND_OPTIONAL_SEQUENCE : GRAPH_KIND_OPTIONAL,
        .type = a->tp.elem,
    };
    return args->move_output(args, 0, &none);
}

static rn_status optional_get_element_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    if (graph_kind_is_optional(x->kind))
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "input '%s' is an optional without a value",
                            NODE_ARGS(node), node->inputs[0]->name);
    return ref_move_copy(args, 0, x);
}

static rn_status optional_has_element_run(plugin_kernel_args *args)
{
    bool has = has_input(args, 0) && !graph_kind_is_optional(args->inputs[0].kind);
    graph_tensor y = {.type = RN_BOOL, .rank = 0};
    rn_status st = ref_tensor_alloc(args->node, &y);
    if (st != RN_OK)
        return st;
    *(uint8_t *)y.data = has ? 1 : 0;
    if ((st = args->move_output(args, 0, &y)) != RN_OK)
        graph_tensor_release(&y);
    return st;
}

static rn_status identity_values_run(plugin_kernel_args *args)
{
    return ref_move_copy(args, 0, &args->inputs[0]);
}

REF_VALUE_KERNEL(ref_kernel_optional, "Optional", ref_supports_any, optional_run)
REF_VALUE_KERNEL(ref_kernel_optional_get_element, "OptionalGetElement", ref_supports_any,
                 optional_get_element_run)
REF_VALUE_KERNEL(ref_kernel_optional_has_element, "OptionalHasElement", ref_supports_any,
                 optional_has_element_run)
REF_VALUE_KERNEL(ref_kernel_identity_values, "Identity", ref_supports_any, identity_values_run)
