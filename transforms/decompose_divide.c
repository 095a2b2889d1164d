/* Div(a, b) -> Mul(a, Pow(b, -1)): the template plugin's DecomposeDivide, an
 * example of a device-specific rewrite (a backend with a fast reciprocal and
 * no divide). Off in the default pipeline. */
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

static rn_element_type value_type(const graph_value *v)
{
    return v->constant != NULL ? v->constant->type : v->type;
}

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* A scalar -1 of a floating type, as an owned tensor. */
static rn_status minus_one(rn_element_type type, graph_tensor *out)
{
    graph_tensor t = {.type = type, .rank = 0, .nbytes = rn_element_type_size(type)};
    t.data = malloc(t.nbytes);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    if (type == RN_F32) {
        float v = -1.0f;
        memcpy(t.data, &v, sizeof v);
    } else if (type == RN_F64) {
        double v = -1.0;
        memcpy(t.data, &v, sizeof v);
    } else {
        uint16_t v = type == RN_F16 ? 0xBC00 : 0xBF80; /* -1 in f16 / bf16 */
        memcpy(t.data, &v, sizeof v);
    }
    *out = t;
    return RN_OK;
}

/* Rewrites one Div; the Div itself is left unhooked for the caller to remove. */
static rn_status decompose(graph *g, graph_node *div)
{
    graph_value *a = div->inputs[0], *b = div->inputs[1], *y = div->outputs[0];
    rn_element_type type = value_type(b);
    graph_tensor t;
    graph_value *exponent, *reciprocal;
    graph_node *pow, *mul;
    char *name = NULL;
    rn_status st = minus_one(type, &t);
    if (st == RN_OK)
        st = transforms_add_constant(g, div->name, "/minus_one", &t, &exponent);
    if (st == RN_OK)
        st = transforms_unique_name(g, div->name, "/reciprocal", &name);
    if (st == RN_OK)
        st = graph_add_value(g, name, &reciprocal);
    if (st != RN_OK) {
        free(name);
        return st;
    }
    reciprocal->type = type;
    if (b->constant != NULL) {
        reciprocal->shape.rank = b->constant->rank;
        memcpy(reciprocal->shape.dims, b->constant->dims, sizeof reciprocal->shape.dims);
    } else {
        reciprocal->shape = b->shape;
    }
    graph_value *pow_in[2] = {b, exponent};
    st = graph_add_node(g, name, "", "Pow", div->opset, 2, pow_in, 1, &reciprocal, &pow);
    free(name);
    if (st == RN_OK)
        st = transforms_copy_fused(pow, div);
    if (st != RN_OK)
        return st;
    /* The Mul takes over the Div's name and output value. */
    div->outputs[0] = NULL;
    y->producer = NULL;
    graph_value *mul_in[2] = {a, reciprocal};
    st = graph_add_node(g, div->name, "", "Mul", div->opset, 2, mul_in, 1, &y, &mul);
    if (st == RN_OK)
        st = transforms_copy_fused(mul, div);
    div->inputs[0] = div->inputs[1] = NULL;
    return st;
}

rn_status transforms_decompose_divide(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    int n = g->n_nodes; /* the nodes appended below are no Div */
    for (int i = 0; i < n && st == RN_OK; i++) {
        graph_node *div = g->nodes[i];
        if (div->domain[0] != '\0' || strcmp(div->op_type, "Div") != 0 || div->n_inputs != 2 ||
            div->n_outputs != 1 || div->inputs[0] == NULL || div->inputs[1] == NULL ||
            div->outputs[0] == NULL)
            continue;
        /* Integer division truncates, and the opset < 7 forms broadcast by
         * attributes the Mul would not carry. */
        if (div->opset < 7 || !is_float(value_type(div->inputs[0])) ||
            !is_float(value_type(div->inputs[1])))
            continue;
        if ((st = decompose(g, div)) == RN_OK)
            st = transforms_node_list_push(&removed, div);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}
