/* fuse_attention: scaled dot-product attention as exporters write it, put
 * back into one node of runnel's ScaledDotProductAttention (a device runs it
 * as one kernel, the scores never a value of the plan):
 *
 *   MatMul(Q, Kt) -> [Mul or Div by a constant] -> [Add mask] -> Softmax
 *   (last axis) -> MatMul(., V)
 *
 * where Q and Kt may each be a Mul or Div by a constant (PyTorch's
 * scaled_dot_product_attention export scales both by the square root of the
 * scale). The scales, all f32 scalars, multiply into the attribute `scale`;
 * the node reads Q, Kt, V and the mask (input 3, when there is one) and
 * computes Softmax(scale * Q @ Kt + mask) @ V.
 *
 * It fuses only where Q, Kt and V are f32 of one rank (2 or more) with the
 * same static batch dims, D and Sk agree, the mask is f32 of static dims that
 * broadcast to the scores without growing them ([B,1,1,S], [B,1,S,S], [S,S]
 * ...), and no intermediate (the scores, the scaled and masked scores, the
 * probabilities, a scaled Q or Kt) has a reader outside the pattern or is a
 * result. Where Q, Kt and V are the exporters' head splits (Q and V
 * Transposed [0, 2, 1, 3] from [B, S, H, D], K [0, 2, 3, 1]) read only by
 * the pattern, the three Transposes go too: the node reads [B, S, H, D]
 * (qkv_layout "BSHD") and a device reads the heads with strides instead of
 * copying them. The second MatMul becomes the fused node: it keeps its name
 * and output and carries every original name. Where the device asks for it
 * (transforms_attention_options), the head merge after it goes too: a
 * Transpose [0, 2, 1, 3] of the output, its only reader, whose output the
 * node then writes ([B, S, H, Dv], out_layout "BSHD"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

static bool onnx_op(const graph_node *n, const char *op)
{
    return n != NULL && (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

/* The value of an f32 constant of one element. */
static bool f32_scalar(const graph_value *v, float *out)
{
    if (v == NULL || !transforms_is_constant(v) || v->constant->type != RN_F32 ||
        graph_tensor_count(v->constant) != 1)
        return false;
    *out = *(const float *)v->constant->data;
    return isfinite(*out);
}

/* Whether n is a Mul of `x` by a constant scalar or a Div of it by a
 * non-zero one; *factor is what x is multiplied by and *x the other
 * operand. */
static bool scaling(const graph_node *n, graph_value **x, float *factor)
{
    if (n == NULL || n->n_inputs != 2 || n->inputs[0] == NULL || n->inputs[1] == NULL)
        return false;
    float c;
    if (onnx_op(n, "Div")) {
        if (!f32_scalar(n->inputs[1], &c) || c == 0.0f)
            return false;
        *x = n->inputs[0];
        *factor = 1.0f / c;
        return true;
    }
    if (!onnx_op(n, "Mul"))
        return false;
    for (int k = 0; k < 2; k++)
        if (f32_scalar(n->inputs[k], &c)) {
            *x = n->inputs[1 - k];
            *factor = c;
            return !transforms_is_constant(*x);
        }
    return false;
}

/* A value of static shape (rank >= 0, every dim known). */
static bool static_shape(const graph_value *v)
{
    if (v == NULL || v->shape.rank < 0)
        return false;
    for (int d = 0; d < v->shape.rank; d++)
        if (v->shape.dims[d] < 0)
            return false;
    return true;
}

/* The pattern found from one Softmax. */
typedef struct sdpa_match {
    graph_node *nodes[10]; /* the nodes it replaces */
    int count;
    graph_value *q, *kt, *v, *mask;
    float scale;
    bool bshd;         /* the head Transposes absorbed (qkv_layout BSHD) */
    graph_node *merge; /* the head merge Transpose absorbed (out_layout BSHD) */
} sdpa_match;

/* Absorbs a scaling of operand `*x` of the first MatMul when that MatMul is
 * its only reader. */
static void absorb_operand(graph *g, sdpa_match *m, graph_node *qk, graph_value **x)
{
    graph_node *p = (*x)->producer;
    graph_value *in;
    float c;
    if (scaling(p, &in, &c) && transforms_sole_reader(g, *x) == qk) {
        m->nodes[m->count++] = p;
        m->scale *= c;
        *x = in;
    }
}

/* Walks back from the Softmax's input: [Add mask] <- [scale] <- MatMul. */
static bool match_scores(graph *g, graph_node *softmax, sdpa_match *m)
{
    graph_value *s = softmax->inputs[0];
    graph_node *reader = softmax, *p = s->producer;
    if (onnx_op(p, "Add") && p->n_inputs == 2 && transforms_sole_reader(g, s) == reader) {
        /* The scores are the operand a MatMul or a scaling wrote. */
        int k = 0;
        for (; k < 2; k++) {
            graph_node *q = p->inputs[k] != NULL ? p->inputs[k]->producer : NULL;
            graph_value *tmp;
            float c;
            if (onnx_op(q, "MatMul") || scaling(q, &tmp, &c))
                break;
        }
        if (k == 2)
            return false;
        m->mask = p->inputs[1 - k];
        m->nodes[m->count++] = p;
        s = p->inputs[k];
        reader = p;
        p = s->producer;
    }
    graph_value *x;
    float c;
    if (!onnx_op(p, "MatMul") && scaling(p, &x, &c) && transforms_sole_reader(g, s) == reader) {
        m->nodes[m->count++] = p;
        m->scale *= c;
        s = x;
        reader = p;
        p = s->producer;
    }
    if (!onnx_op(p, "MatMul") || p->n_inputs != 2 || transforms_sole_reader(g, s) != reader)
        return false;
    m->nodes[m->count++] = p;
    m->q = p->inputs[0];
    m->kt = p->inputs[1];
    if (m->q == NULL || m->kt == NULL)
        return false;
    absorb_operand(g, m, p, &m->q);
    absorb_operand(g, m, p, &m->kt);
    return true;
}

/* The shapes and types the fused op takes (see the file's comment). */
static bool shapes_fit(const sdpa_match *m, const graph_value *scores)
{
    const graph_value *ops[3] = {m->q, m->kt, m->v};
    int r = m->q->shape.rank;
    for (int i = 0; i < 3; i++)
        if (ops[i]->type != RN_F32 || !static_shape(ops[i]) || ops[i]->shape.rank != r)
            return false;
    if (r < 2 || scores->type != RN_F32)
        return false;
    for (int d = 0; d < r - 2; d++)
        if (m->kt->shape.dims[d] != m->q->shape.dims[d] ||
            m->v->shape.dims[d] != m->q->shape.dims[d])
            return false;
    if (m->q->shape.dims[r - 1] != m->kt->shape.dims[r - 2] ||
        m->kt->shape.dims[r - 1] != m->v->shape.dims[r - 2])
        return false;
    if (m->mask == NULL)
        return true;
    const graph_value *k = m->mask;
    if (k->type != RN_F32 || !static_shape(k) || k->shape.rank > r)
        return false;
    for (int d = 0; d < k->shape.rank; d++) {
        int64_t want = d + r - k->shape.rank < r - 2
                           ? m->q->shape.dims[d + r - k->shape.rank]
                           : (d + r - k->shape.rank == r - 2 ? m->q->shape.dims[r - 2]
                                                             : m->kt->shape.dims[r - 1]);
        if (k->shape.dims[d] != 1 && k->shape.dims[d] != want)
            return false;
    }
    return true;
}

/* Softmax over the last axis of a rank-r input (before opset 13 the op
 * flattens at axis, which is the same only for the last). */
static bool softmax_last(const graph_node *n, int r)
{
    if (!onnx_op(n, "Softmax") || n->n_inputs != 1 || n->inputs[0] == NULL || r < 1)
        return false;
    int64_t axis = graph_node_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
    return axis == -1 || axis == r - 1;
}

/* Whether x is written by a Transpose of a rank-4 value by `perm`. */
static bool transposed(const graph_value *x, const int64_t *perm)
{
    const graph_node *t = x->producer;
    const int64_t *p = NULL;
    if (!onnx_op(t, "Transpose") || t->n_inputs != 1 || t->inputs[0] == NULL ||
        t->inputs[0]->shape.rank != 4 || graph_node_attr_ints(t, "perm", &p) != 4)
        return false;
    for (int d = 0; d < 4; d++)
        if (p[d] != perm[d])
            return false;
    return true;
}

/* Whether every read of x is by a node of the pattern (Q and V may be one
 * value, read by both MatMuls, where merge_duplicates merged two equal
 * Transposes). */
static bool read_by_pattern_only(const graph *g, const sdpa_match *m, const graph_node *pv,
                                 const graph_value *x)
{
    if (transforms_is_result(g, x))
        return false;
    int inside = 0;
    for (int i = -1; i < m->count; i++) {
        const graph_node *n = i < 0 ? pv : m->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            inside += n->inputs[k] == x;
    }
    return inside == transforms_count_uses(g, x);
}

/* The exporters' head split: Q and V Transposed [0, 2, 1, 3] from [B, S,
 * H, D], K [0, 2, 3, 1], each read only by the pattern. The three go into
 * the fused node (qkv_layout BSHD, which reads them with strides) or none. */
static void absorb_heads(graph *g, sdpa_match *m, const graph_node *pv)
{
    static const int64_t split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
    graph_value *x[3] = {m->q, m->kt, m->v};
    for (int k = 0; k < 3; k++)
        if (!transposed(x[k], k == 1 ? split_t : split) || !read_by_pattern_only(g, m, pv, x[k]))
            return;
    for (int k = 0; k < 3; k++)
        if (k < 2 || x[2] != x[0])
            m->nodes[m->count++] = x[k]->producer;
    m->q = x[0]->producer->inputs[0];
    m->kt = x[1]->producer->inputs[0];
    m->v = x[2]->producer->inputs[0];
    m->bshd = true;
}

/* The head merge after the node: a Transpose [0, 2, 1, 3] of its rank-4
 * output, the output's only reader, the output not a result. */
static void absorb_merge(graph *g, sdpa_match *m, const graph_node *pv)
{
    static const int64_t merge[4] = {0, 2, 1, 3};
    graph_value *y = pv->n_outputs == 1 ? pv->outputs[0] : NULL;
    if (y == NULL || y->shape.rank != 4 || transforms_is_result(g, y))
        return;
    graph_node *t = transforms_sole_reader(g, y);
    if (t != NULL && t->n_outputs == 1 && t->outputs[0] != NULL && t->outputs[0]->producer == t &&
        t->inputs[0] == y && transposed(t->outputs[0], merge))
        m->merge = t;
}

/* Turns the second MatMul into the fused node and unhooks the others. */
static rn_status fuse(graph_node *pv, const sdpa_match *m, transforms_node_list *removed)
{
    int n_in = m->mask != NULL ? 4 : 3;
    char *op = strdup("ScaledDotProductAttention"), *domain = strdup("runnel");
    graph_value **in = malloc(sizeof *in * (size_t)n_in);
    if (op == NULL || domain == NULL || in == NULL) {
        free(op);
        free(domain);
        free(in);
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    }
    in[0] = m->q;
    in[1] = m->kt;
    in[2] = m->v;
    if (m->mask != NULL)
        in[3] = m->mask;
    rn_status st = RN_OK;
    for (int i = 0; i < m->count && st == RN_OK; i++) {
        graph_node *n = m->nodes[i];
        st = transforms_merge_fused(pv, n);
        if (st == RN_OK)
            st = transforms_node_list_push(removed, n);
    }
    if (st != RN_OK) {
        free(op);
        free(domain);
        free(in);
        return st;
    }
    if (st == RN_OK && m->merge != NULL && (st = transforms_merge_fused(pv, m->merge)) == RN_OK)
        st = transforms_node_list_push(removed, m->merge);
    if (st != RN_OK) {
        free(op);
        free(domain);
        free(in);
        return st;
    }
    for (int i = 0; i < m->count; i++) {
        graph_node *n = m->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            n->inputs[k] = NULL;
        if (n->outputs[0] != NULL)
            n->outputs[0]->producer = NULL;
    }
    if (m->merge != NULL) {
        /* The node writes the Transpose's output; its own, which only the
         * Transpose read, is left to the Transpose and goes with it. */
        graph_node *t = m->merge;
        graph_value *merged = t->outputs[0], *heads = pv->outputs[0];
        t->inputs[0] = NULL;
        t->outputs[0] = heads;
        heads->producer = NULL;
        pv->outputs[0] = merged;
        merged->producer = pv;
    }
    free(pv->inputs);
    pv->inputs = in;
    pv->n_inputs = n_in;
    free(pv->op_type);
    free(pv->domain);
    pv->op_type = op;
    pv->domain = domain;
    pv->opset = 1;
    graph_attr a = {.name = strdup("scale"), .type = GRAPH_ATTR_FLOAT, .f = m->scale};
    rn_status st2 = a.name != NULL ? graph_node_add_attr(pv, &a)
                                   : rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    if (st2 == RN_OK && m->bshd)
        st2 = transforms_set_attr_string(pv, "qkv_layout", "BSHD");
    if (st2 == RN_OK && m->merge != NULL)
        st2 = transforms_set_attr_string(pv, "out_layout", "BSHD");
    return st2;
}

rn_status transforms_fuse_attention(graph *g, void *ctx, int *changes)
{
    const transforms_attention_options *o = ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *softmax = g->nodes[i];
        graph_value *s = softmax->n_inputs == 1 ? softmax->inputs[0] : NULL;
        if (s == NULL || !softmax_last(softmax, s->shape.rank))
            continue;
        graph_node *pv = transforms_sole_reader(g, softmax->outputs[0]);
        if (!onnx_op(pv, "MatMul") || pv->n_inputs != 2 || pv->inputs[0] != softmax->outputs[0] ||
            pv->inputs[1] == NULL)
            continue;
        sdpa_match m = {.scale = 1.0f, .v = pv->inputs[1]};
        m.nodes[m.count++] = softmax;
        if (!match_scores(g, softmax, &m) || !shapes_fit(&m, s))
            continue;
        absorb_heads(g, &m, pv);
        if (o != NULL && o->absorb_output)
            absorb_merge(g, &m, pv);
        st = fuse(pv, &m, &removed);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}
