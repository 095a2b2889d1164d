/* What the REF elementwise kernels share: the broadcasting binary engine and
 * argument checks (declared in elementwise.h). */
#include <stdio.h>
#include <string.h>

#include "plugins/ref/kernels/broadcast.h"
#include "plugins/ref/kernels/elementwise.h"

const char *ref_why_type(int input, rn_element_type type)
{
    static _Thread_local char why[64];
    snprintf(why, sizeof why, "input %d type %s", input, rn_element_type_name(type));
    return why;
}

rn_status ref_check_args(const plugin_kernel_args *args, int n_required)
{
    const graph_node *node = args->node;
    if (args->n_inputs < n_required)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): %d inputs, expected at least %d",
                            node->name, node->op_type, args->n_inputs, n_required);
    for (int i = 0; i < n_required; i++) {
        const graph_tensor *t = &args->inputs[i];
        if (t->data == NULL && graph_tensor_count(t) != 0)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): input %d has no data", node->name,
                                node->op_type, i);
    }
    if (args->n_outputs < 1 ||
        (args->outputs[0].data == NULL && graph_tensor_count(&args->outputs[0]) != 0))
        return rn_set_error(RN_INTERNAL, "node '%s' (%s): output 0 is not allocated", node->name,
                            node->op_type);
    return RN_OK;
}

static const char *dims_str(const graph_tensor *t, char *buf, size_t size)
{
    graph_shape s = {.rank = t->rank};
    memcpy(s.dims, t->dims, sizeof s.dims);
    return graph_shape_str(&s, buf, size);
}

rn_status ref_broadcast_error(const graph_node *node, int n, const graph_tensor *const *operands,
                              const graph_tensor *out)
{
    char ins[RN_MAX_RANK * 24 * 4] = "", one[RN_MAX_RANK * 24], o[RN_MAX_RANK * 24];
    for (int k = 0; k < n; k++) {
        size_t len = strlen(ins);
        snprintf(ins + len, sizeof ins - len, "%s%s", k ? " and " : "",
                 dims_str(operands[k], one, sizeof one));
    }
    return rn_set_error(RN_SHAPE_MISMATCH,
                        "node '%s' (%s): input shapes %s do not broadcast to the output shape %s",
                        node->name, node->op_type, ins, dims_str(out, o, sizeof o));
}

/* The opset < 7 forms: with broadcast=1 and an axis, b's dims line up with
 * a's starting at axis; PRelu's 1-d slope is per channel (axis 1). Either is
 * b padded with trailing 1s. (graph/ops/elementwise.c infers the same.) */
static graph_tensor legacy_rhs(const graph_node *node, const graph_tensor *a, const graph_tensor *b)
{
    graph_tensor r = *b;
    if (node->opset >= 7)
        return r;
    int64_t axis;
    if (strcmp(node->op_type, "PRelu") == 0) {
        if (b->rank != 1 || b->dims[0] == 1 || a->rank < 2)
            return r;
        axis = 1;
    } else {
        if (graph_node_attr_int(node, "broadcast", 0) == 0 || graph_node_attr(node, "axis") == NULL)
            return r;
        axis = graph_node_attr_int(node, "axis", 0);
        if (axis < 0)
            axis += a->rank;
    }
    if (axis < 0 || axis + b->rank > a->rank)
        return r; /* inference reported it; the shape check fails */
    for (int d = b->rank; d < a->rank - axis; d++)
        r.dims[d] = 1;
    r.rank = (int)(a->rank - axis);
    return r;
}

rn_status ref_binary_apply(const plugin_kernel_args *args, const graph_tensor *a,
                           const graph_tensor *b, graph_tensor *out, ref_binary_row_fn fn)
{
    const graph_node *node = args->node;
    graph_tensor rhs = legacy_rhs(node, a, b);
    const graph_tensor *ops[2] = {a, &rhs};
    ref_bcast it;
    if (!ref_bcast_init(&it, out->rank, out->dims, 2, ops))
        return ref_broadcast_error(node, 2, ops, out);
    size_t ea = ref_element_size(a->type), eb = ref_element_size(b->type);
    size_t eo = ref_element_size(out->type);
    const char *pa = a->data, *pb = b->data;
    char *po = out->data;
    for (int64_t r = 0; r < it.rows; r++, ref_bcast_next(&it))
        fn(pa + (size_t)it.off[0] * ea, it.step[0], pb + (size_t)it.off[1] * eb, it.step[1],
           po + (size_t)(r * it.inner) * eo, it.inner);
    return RN_OK;
}
