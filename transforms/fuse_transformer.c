/* Transformer patterns as exporters decompose them, put back into one node
 * (a device runs each as one primitive):
 *
 *   fuse_gelu        x * 0.5 * (1 + Erf(x / sqrt(2))) in either order of the
 *                    multiplications (Div by sqrt 2 or Mul by 1/sqrt 2)
 *                    -> Gelu (opset 20).
 *   fuse_layernorm   ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps ->
 *                    Sqrt -> Div (-> Mul gamma -> Add beta) over the last
 *                    axis -> LayerNormalization (axis -1).
 *
 * Every intermediate must have no reader outside the pattern; the new node
 * keeps the last node's output and carries every original name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

static bool is_op(const graph_node *n, const char *op)
{
    return n != NULL && (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

/* The value of a constant f32 scalar (any rank, one element). */
static bool scalar(const graph_value *v, float *out)
{
    if (v == NULL || !transforms_is_constant(v) || v->constant->type != RN_F32 ||
        graph_tensor_count(v->constant) != 1)
        return false;
    *out = *(const float *)v->constant->data;
    return true;
}

/* The readers of v among g's nodes (at most max); -1 when v is a result or
 * read from a subgraph. */
static int readers(graph *g, const graph_value *v, graph_node **out, int max)
{
    if (v == NULL || transforms_is_result(g, v))
        return -1;
    int n = 0, uses = transforms_count_uses(g, v);
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            if (g->nodes[i]->inputs[k] == v) {
                if (n < max)
                    out[n] = g->nodes[i];
                n++;
                break;
            }
    int reads = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            reads += g->nodes[i]->inputs[k] == v;
    return reads == uses ? n : -1;
}

/* The only reader of n's output 0, or NULL. */
static graph_node *next(graph *g, const graph_node *n)
{
    return n != NULL ? transforms_sole_reader(g, n->outputs[0]) : NULL;
}

/* The operand of binary node n other than v. */
static graph_value *other(const graph_node *n, const graph_value *v)
{
    return n->n_inputs == 2 ? (n->inputs[0] == v ? n->inputs[1] : n->inputs[0]) : NULL;
}

/* Replaces the nodes (first .. last, `count` of them) by one new node
 * named after the last, of op (default domain, opset), reading `ins`, with
 * the last node's output; the old nodes are unhooked and queued. */
static rn_status replace(graph *g, graph_node **nodes, int count, const char *op, int opset,
                         graph_value **ins, int n_ins, transforms_node_list *removed,
                         graph_node **out)
{
    graph_node *last = nodes[count - 1];
    graph_value *y = last->outputs[0];
    last->outputs[0] = NULL;
    y->producer = NULL;
    char *name = strdup(last->name);
    if (name == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    for (int i = 0; i < count; i++) {
        for (int k = 0; k < nodes[i]->n_inputs; k++)
            nodes[i]->inputs[k] = NULL;
        if (nodes[i]->outputs[0] != NULL)
            nodes[i]->outputs[0]->producer = NULL;
    }
    /* The old last node keeps the name until it is removed: a unique one
     * for now, the real one after. */
    char *tmp = NULL;
    rn_status st = transforms_unique_name(g, name, "/fused", &tmp);
    if (st == RN_OK)
        st = graph_add_node(g, tmp, "", op, opset, n_ins, ins, 1, &y, out);
    free(tmp);
    for (int i = 0; i < count && st == RN_OK; i++)
        st =
            i == 0 ? transforms_copy_fused(*out, nodes[i]) : transforms_merge_fused(*out, nodes[i]);
    for (int i = 0; i < count && st == RN_OK; i++)
        st = transforms_node_list_push(removed, nodes[i]);
    if (st == RN_OK) {
        free((*out)->name);
        (*out)->name = name;
        name = NULL;
    }
    free(name);
    return st;
}

/* ---- fuse_gelu ---- */

rn_status transforms_fuse_gelu(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    int n = g->n_nodes;
    for (int i = 0; i < n && st == RN_OK; i++) {
        graph_node *erf = g->nodes[i];
        if (!is_op(erf, "Erf") || erf->inputs[0] == NULL)
            continue;
        graph_node *scale = erf->inputs[0]->producer;
        float c, one, half;
        if (!(is_op(scale, "Div") || is_op(scale, "Mul")) || scale->n_inputs != 2 ||
            !scalar(scale->inputs[1], &c) || next(g, scale) != erf)
            continue;
        graph_value *x = scale->inputs[0];
        if (is_op(scale, "Div") ? fabsf(c - 1.41421356f) > 1e-4f : fabsf(c - 0.70710678f) > 1e-4f)
            continue;
        graph_node *add = next(g, erf);
        if (!is_op(add, "Add") || !scalar(other(add, erf->outputs[0]), &one) || one != 1.0f)
            continue;
        graph_node *m1 = next(g, add);
        if (!is_op(m1, "Mul"))
            continue;
        graph_value *p = other(m1, add->outputs[0]);
        graph_node *nodes[6] = {scale, erf, add, m1};
        int count = 4;
        if (p == x) {
            /* x * (1 + erf) -> * 0.5 */
            graph_node *m2 = next(g, m1);
            if (!is_op(m2, "Mul") || !scalar(other(m2, m1->outputs[0]), &half) || half != 0.5f)
                continue;
            nodes[count++] = m2;
        } else {
            /* (x * 0.5) * (1 + erf) */
            graph_node *h = p != NULL ? p->producer : NULL;
            if (!is_op(h, "Mul") || next(g, h) != m1 || !scalar(other(h, x), &half) ||
                half != 0.5f || (h->inputs[0] != x && h->inputs[1] != x))
                continue;
            nodes[count++] = h;
            graph_node *tmp = nodes[count - 1];
            nodes[count - 1] = nodes[count - 2];
            nodes[count - 2] = tmp; /* m1 stays last */
        }
        graph_node *gelu;
        st = replace(g, nodes, count, "Gelu", 20, &x, 1, &removed, &gelu);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}

/* ---- fuse_layernorm ---- */

/* Whether n is a ReduceMean over the last axis (keepdims) of a rank-r x. */
static bool mean_last(const graph_node *n, int rank)
{
    if (!is_op(n, "ReduceMean") || graph_node_attr_int(n, "keepdims", 1) != 1)
        return false;
    const int64_t *axes = NULL;
    int count = graph_node_attr_ints(n, "axes", &axes);
    if (count < 0 && n->n_inputs > 1 && n->inputs[1] != NULL &&
        transforms_is_constant(n->inputs[1]) && n->inputs[1]->constant->type == RN_I64) {
        axes = n->inputs[1]->constant->data;
        count = (int)graph_tensor_count(n->inputs[1]->constant);
    }
    return count == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

/* A constant [h] (f32) or NULL. */
static bool vector_of(const graph_value *v, int64_t h)
{
    return v != NULL && transforms_is_constant(v) && v->constant->type == RN_F32 &&
           (int64_t)graph_tensor_count(v->constant) == h &&
           v->constant->dims[v->constant->rank - 1] == h;
}

rn_status transforms_fuse_layernorm(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    int n = g->n_nodes;
    for (int i = 0; i < n && st == RN_OK; i++) {
        graph_node *mean = g->nodes[i];
        graph_value *x = mean->n_inputs > 0 ? mean->inputs[0] : NULL;
        if (x == NULL || x->type != RN_F32 || x->shape.rank < 1 ||
            !mean_last(mean, x->shape.rank) || x->shape.dims[x->shape.rank - 1] < 1)
            continue;
        int64_t h = x->shape.dims[x->shape.rank - 1];
        graph_node *sub = next(g, mean);
        if (!is_op(sub, "Sub") || sub->inputs[0] != x || sub->inputs[1] != mean->outputs[0])
            continue;
        graph_node *r[2];
        if (readers(g, sub->outputs[0], r, 2) != 2)
            continue;
        graph_node *pow = is_op(r[0], "Pow") ? r[0] : r[1];
        graph_node *div = pow == r[0] ? r[1] : r[0];
        float e, eps;
        if (!is_op(pow, "Pow") || !is_op(div, "Div") || pow->inputs[0] != sub->outputs[0] ||
            !scalar(pow->inputs[1], &e) || e != 2.0f || div->inputs[0] != sub->outputs[0])
            continue;
        graph_node *var = next(g, pow);
        if (!mean_last(var, x->shape.rank))
            continue;
        graph_node *add = next(g, var);
        if (!is_op(add, "Add") || !scalar(other(add, var->outputs[0]), &eps))
            continue;
        graph_node *sq = next(g, add);
        if (!is_op(sq, "Sqrt") || next(g, sq) != div || div->inputs[1] != sq->outputs[0])
            continue;
        graph_node *nodes[9] = {mean, sub, pow, var, add, sq, div};
        int count = 7;
        graph_value *gamma = NULL, *beta = NULL;
        graph_node *mul = next(g, div);
        if (is_op(mul, "Mul") && vector_of(other(mul, div->outputs[0]), h)) {
            gamma = other(mul, div->outputs[0]);
            nodes[count++] = mul;
            graph_node *badd = next(g, mul);
            if (is_op(badd, "Add") && vector_of(other(badd, mul->outputs[0]), h)) {
                beta = other(badd, mul->outputs[0]);
                nodes[count++] = badd;
            }
        }
        if (gamma == NULL) {
            graph_tensor t = {
                .type = RN_F32, .rank = 1, .dims = {h}, .nbytes = sizeof(float) * (size_t)h};
            if ((t.data = malloc(t.nbytes)) == NULL) {
                st = rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
                break;
            }
            for (int64_t k = 0; k < h; k++)
                ((float *)t.data)[k] = 1.0f;
            if ((st = transforms_add_constant(g, div->name, "/gamma", &t, &gamma)) != RN_OK)
                break;
        }
        graph_value *ins[3] = {x, gamma, beta};
        graph_node *ln;
        st = replace(g, nodes, count, "LayerNormalization", 17, ins, beta != NULL ? 3 : 2, &removed,
                     &ln);
        if (st == RN_OK)
            st = transforms_set_attr_int(ln, "axis", -1);
        if (st == RN_OK) {
            graph_attr a = {.name = strdup("epsilon"), .type = GRAPH_ATTR_FLOAT, .f = eps};
            st = a.name != NULL ? graph_node_add_attr(ln, &a)
                                : rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
        }
    }
    return transforms_finish_removal(g, &removed, st, changes);
}
