/* fuse_qdq: the QDQ form of quantized models (ONNX Runtime's
 * quantize_static, QuantFormat.QDQ) back into quantized ops, for devices
 * with int8 primitives (CPU's oneDNN):
 *
 *   DequantizeLinear(x) -> Conv / Gemm / MatMul (DequantizeLinear(constant w),
 *   B: f32 constant or DequantizeLinear(constant i32))
 *   [-> Relu] -> QuantizeLinear (y)                         or
 *   -> QuantizeLinear (mid) -> DequantizeLinear -> Add / Sum(., DequantizeLinear(r))
 *   [-> Relu] -> QuantizeLinear (y)
 *
 * becomes runnel QLinearFusedConv / QLinearFusedGemm / QLinearFusedMatMul (graph/ops/quant.c,
 * REF's kernel in plugins/ref/kernels/qlinear_fused.c) reading the
 * quantized x, w and r with their scales and zero points, B dequantized
 * into an f32 constant, writing y. And DequantizeLinear -> MaxPool -> QuantizeLinear with
 * the same scale and zero point becomes MaxPool on the quantized tensor
 * (max commutes with a monotonic quantization: the same result).
 *
 * Activations are quantized per tensor; weights per tensor or per output
 * channel. Every scale and zero point must be a constant. It runs before
 * constant folding, which would otherwise fold the weights' DequantizeLinear
 * into f32 weights. Intermediate values must have no other reader; a
 * DequantizeLinear of x or r that other nodes read stays for them. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops/qlinear_fused.h"
#include "transforms/rewrite.h"

static bool is_op(const graph_node *n, const char *op)
{
    return n != NULL && (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

static bool is_q8(rn_element_type t)
{
    return t == RN_U8 || t == RN_I8;
}

/* A constant of `count` elements (count 0: any) of one of two types. */
static bool constant_of(const graph_value *v, rn_element_type t, size_t count)
{
    return transforms_is_constant(v) && v->constant->type == t && v->constant->data != NULL &&
           (count == 0 || graph_tensor_count(v->constant) == count);
}

static graph_value *input(const graph_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : NULL;
}

/* A Q or DQ node with a constant f32 scale of `count` elements (0: per
 * tensor) and a constant zero point of the quantized type `qt` (or none). */
static bool qdq_params_ok(const graph_node *n, rn_element_type qt, size_t count)
{
    graph_value *s = input(n, 1), *z = input(n, 2);
    if (n->n_outputs != 1 || n->outputs[0] == NULL || graph_node_attr_int(n, "block_size", 0) != 0)
        return false;
    if (!constant_of(s, RN_F32, count ? count : 1))
        return false;
    return z == NULL || constant_of(z, qt, count ? count : 1);
}

/* The DequantizeLinear of a per-tensor quantized u8/i8 activation that
 * produces v, or NULL. */
static graph_node *activation_dq(const graph_value *v)
{
    graph_node *dq = v != NULL ? v->producer : NULL;
    if (!is_op(dq, "DequantizeLinear") || dq->inputs[0] == NULL || !is_q8(dq->inputs[0]->type) ||
        transforms_is_constant(dq->inputs[0]))
        return NULL;
    return qdq_params_ok(dq, dq->inputs[0]->type, 0) ? dq : NULL;
}

/* A per-tensor QuantizeLinear into u8/i8, or NULL. */
static graph_node *activation_q(graph_node *q)
{
    if (!is_op(q, "QuantizeLinear") || q->outputs[0] == NULL || !is_q8(q->outputs[0]->type) ||
        input(q, 2) == NULL)
        return NULL;
    return qdq_params_ok(q, q->outputs[0]->type, 0) ? q : NULL;
}

/* The DequantizeLinear of constant i8/u8 weights, per tensor or per output
 * channel along `axis`, that produces v, or NULL. */
static graph_node *weight_dq(const graph_value *v, int axis)
{
    graph_node *dq = v != NULL ? v->producer : NULL;
    if (!is_op(dq, "DequantizeLinear") || dq->inputs[0] == NULL)
        return NULL;
    const graph_value *w = dq->inputs[0];
    if (!transforms_is_constant(w) || !is_q8(w->constant->type) || w->constant->data == NULL ||
        w->constant->rank <= axis)
        return NULL;
    if (qdq_params_ok(dq, w->constant->type, 0))
        return dq;
    int64_t a = graph_node_attr_int(dq, "axis", 1);
    if (a < 0)
        a += w->constant->rank;
    return a == axis && qdq_params_ok(dq, w->constant->type, (size_t)w->constant->dims[axis])
               ? dq
               : NULL;
}

/* Whether Q/DQ nodes a and b have the same scale and zero point. */
static bool same_params(const graph_node *a, const graph_node *b)
{
    for (int i = 1; i < 3; i++) {
        graph_value *x = input(a, i), *y = input(b, i);
        if (x == y)
            continue;
        if (x == NULL || y == NULL || x->constant->type != y->constant->type ||
            x->constant->nbytes != y->constant->nbytes ||
            memcmp(x->constant->data, y->constant->data, x->constant->nbytes) != 0)
            return false;
    }
    return true;
}

/* The bias as an f32 constant: B itself, or the DequantizeLinear of a
 * constant i32 B computed as DequantizeLinear computes it. *out NULL when
 * there is none; false when B is something else. */
static bool bias_value(graph *g, graph_node *n, graph_value *b, graph_value **out, rn_status *st)
{
    *out = NULL;
    if (b == NULL)
        return true;
    if (constant_of(b, RN_F32, 0)) {
        *out = b;
        return true;
    }
    graph_node *dq = b->producer;
    if (!is_op(dq, "DequantizeLinear") || !constant_of(dq->inputs[0], RN_I32, 0) ||
        dq->inputs[0]->constant->rank != 1)
        return false;
    size_t count = graph_tensor_count(dq->inputs[0]->constant);
    bool per_tensor = qdq_params_ok(dq, RN_I32, 0);
    if (!per_tensor && !qdq_params_ok(dq, RN_I32, count))
        return false;
    const int32_t *q = dq->inputs[0]->constant->data;
    const float *s = dq->inputs[1]->constant->data;
    const int32_t *z = input(dq, 2) != NULL ? dq->inputs[2]->constant->data : NULL;
    graph_tensor t = {.type = RN_F32, .rank = 1, .dims = {(int64_t)count}};
    t.nbytes = sizeof(float) * count;
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (t.data == NULL) {
        *st = rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
        return false;
    }
    float *v = t.data;
    for (size_t i = 0; i < count; i++) {
        size_t k = per_tensor ? 0 : i;
        v[i] = (float)(((double)q[i] - (z != NULL ? (double)z[k] : 0.0)) * (double)s[k]);
    }
    *st = transforms_add_constant(g, n->name, "/dequantized_bias", &t, out);
    return *st == RN_OK;
}

/* What follows a Conv or Gemm, as matched. */
typedef struct qdq_tail {
    graph_node *relu, *mid_q, *mid_dq, *add, *relu2, *y_q;
    graph_node *sum_dq; /* the residual's DequantizeLinear */
    graph_value *out;   /* what the fused node writes */
} qdq_tail;

/* After Add/Sum: [Relu] [QuantizeLinear]. */
static void match_after_add(graph *g, qdq_tail *t)
{
    graph_value *cur = t->add->outputs[0];
    graph_node *next = transforms_sole_reader(g, cur);
    if (is_op(next, "Relu")) {
        t->relu2 = next;
        cur = next->outputs[0];
        next = transforms_sole_reader(g, cur);
    }
    t->y_q = activation_q(next);
    t->out = t->y_q != NULL ? t->y_q->outputs[0] : cur;
}

/* The residual part after the first QuantizeLinear: DequantizeLinear with
 * its parameters -> Add/Sum with a per-tensor quantized operand of the
 * output's shape. */
static bool match_residual(graph *g, qdq_tail *t)
{
    graph_node *dq = transforms_sole_reader(g, t->mid_q->outputs[0]);
    if (t->relu != NULL || !is_op(dq, "DequantizeLinear") ||
        dq->inputs[0] != t->mid_q->outputs[0] || !same_params(dq, t->mid_q) ||
        dq->outputs[0] == NULL)
        return false;
    graph_node *add = transforms_sole_reader(g, dq->outputs[0]);
    if ((!is_op(add, "Add") && !is_op(add, "Sum")) || add->n_inputs != 2 || add->n_outputs != 1 ||
        add->outputs[0] == NULL || add->inputs[0] == add->inputs[1])
        return false;
    graph_value *other = add->inputs[0] == dq->outputs[0] ? add->inputs[1] : add->inputs[0];
    graph_node *sum_dq = activation_dq(other);
    const graph_shape *a = &other->shape, *b = &dq->outputs[0]->shape;
    bool same = sum_dq != NULL && a->rank == b->rank && a->rank > 0;
    for (int d = 0; same && d < a->rank; d++)
        same = a->dims[d] == b->dims[d] && a->dims[d] >= 0;
    if (!same)
        return false;
    qdq_tail after = *t;
    after.add = add;
    match_after_add(g, &after);
    /* Without the last QuantizeLinear the output would be f32 with an int8
     * residual: left to the unfused Add, which devices run as it is. */
    if (after.y_q == NULL)
        return false;
    *t = after;
    t->mid_dq = dq;
    t->sum_dq = sum_dq;
    return true;
}

/* What follows n's output: [Relu] -> QuantizeLinear [-> residual]. */
static bool match_tail(graph *g, graph_node *n, qdq_tail *t)
{
    memset(t, 0, sizeof *t);
    graph_node *next = transforms_sole_reader(g, n->outputs[0]);
    if (is_op(next, "Relu")) {
        t->relu = next;
        next = transforms_sole_reader(g, next->outputs[0]);
    }
    t->mid_q = activation_q(next);
    if (t->mid_q == NULL)
        return false;
    if (!match_residual(g, t)) {
        t->y_q = t->mid_q;
        t->mid_q = NULL;
        t->out = t->y_q->outputs[0];
    }
    return true;
}

/* Queues DequantizeLinear node dq for removal when nothing reads it. */
static rn_status drop_if_unused(graph *g, graph_node *dq, transforms_node_list *removed)
{
    if (dq == NULL || transforms_count_uses(g, dq->outputs[0]) > 0)
        return RN_OK;
    for (int k = 0; k < dq->n_inputs; k++)
        dq->inputs[k] = NULL;
    return transforms_node_list_push(removed, dq);
}

/* Rewrites n (Conv or Gemm) into the fused op with inputs `in`, writing
 * t->out; the tail's nodes go to `removed`. */
static rn_status rewrite(graph_node *n, graph_value **in, const qdq_tail *t, const char *op,
                         transforms_node_list *removed)
{
    graph_node *tail[6] = {t->relu, t->mid_q, t->mid_dq, t->add, t->relu2, t->y_q};
    rn_status st = RN_OK;
    for (int i = 0; i < 6 && st == RN_OK; i++)
        if (tail[i] != NULL)
            st = transforms_merge_fused(n, tail[i]);
    char *op_type = strdup(op), *domain = strdup("runnel");
    graph_value **inputs = malloc(sizeof *inputs * QF_N);
    if (st == RN_OK && (op_type == NULL || domain == NULL || inputs == NULL))
        st = rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    if (st == RN_OK && (t->relu != NULL || t->relu2 != NULL))
        st = transforms_set_attr_string(n, "activation", "Relu");
    if (st != RN_OK) {
        free(op_type);
        free(domain);
        free(inputs);
        return st;
    }
    int count = 0;
    for (int i = 0; i < QF_N; i++) {
        inputs[i] = in[i];
        if (in[i] != NULL)
            count = i + 1;
    }
    free(n->inputs);
    n->inputs = inputs;
    n->n_inputs = count;
    free(n->op_type);
    free(n->domain);
    n->op_type = op_type;
    n->domain = domain;
    n->opset = 1;
    n->outputs[0]->producer = NULL;
    n->outputs[0] = t->out;
    t->out->producer = n;
    t->out->producer_output = 0;
    for (int i = 0; i < 6 && st == RN_OK; i++) {
        if (tail[i] == NULL)
            continue;
        for (int k = 0; k < tail[i]->n_inputs; k++)
            tail[i]->inputs[k] = NULL;
        if (tail[i]->outputs[0] == t->out)
            tail[i]->outputs[0] = NULL;
        st = transforms_node_list_push(removed, tail[i]);
    }
    return st;
}

/* n is a Conv, Gemm or MatMul: fuses it when the pattern matches. */
static rn_status fuse_one(graph *g, graph_node *n, transforms_node_list *removed, bool *fused)
{
    *fused = false;
    bool conv = is_op(n, "Conv"), matmul = is_op(n, "MatMul");
    if (n->n_outputs != 1 || n->outputs[0] == NULL || n->n_inputs < 2 || n->inputs[1] == NULL)
        return RN_OK;
    /* MatMul: [K, N] weights, per column. */
    if (matmul && n->inputs[1]->shape.rank != 2)
        return RN_OK;
    int w_axis = conv || graph_node_attr_int(n, "transB", 0) != 0 ? 0 : 1;
    graph_node *x_dq = activation_dq(n->inputs[0]), *w_dq = weight_dq(n->inputs[1], w_axis);
    qdq_tail t;
    if (x_dq == NULL || w_dq == NULL || !match_tail(g, n, &t))
        return RN_OK;
    if (!conv && !matmul &&
        (graph_node_attr_int(n, "transA", 0) != 0 || n->inputs[0]->shape.rank != 2))
        return RN_OK;
    graph_node *b_dq = input(n, 2) != NULL ? input(n, 2)->producer : NULL;
    graph_value *bias = NULL;
    rn_status st = RN_OK;
    if (!bias_value(g, n, input(n, 2), &bias, &st))
        return st;
    graph_value *in[QF_N] = {
        x_dq->inputs[0], x_dq->inputs[1], input(x_dq, 2), w_dq->inputs[0],
        w_dq->inputs[1], input(w_dq, 2),  bias,
    };
    if (t.mid_q != NULL) {
        in[QF_MS] = t.mid_q->inputs[1];
        in[QF_MZ] = t.mid_q->inputs[2];
        in[QF_S] = t.sum_dq->inputs[0];
        in[QF_SS] = t.sum_dq->inputs[1];
        in[QF_SZ] = input(t.sum_dq, 2);
    }
    if (t.y_q != NULL) {
        in[QF_YS] = t.y_q->inputs[1];
        in[QF_YZ] = t.y_q->inputs[2];
    }
    const char *op = conv ? "QLinearFusedConv" : matmul ? "QLinearFusedMatMul" : "QLinearFusedGemm";
    if ((st = rewrite(n, in, &t, op, removed)) != RN_OK)
        return st;
    *fused = true;
    graph_node *inputs_dq[4] = {x_dq, w_dq, is_op(b_dq, "DequantizeLinear") ? b_dq : NULL,
                                t.sum_dq};
    for (int i = 0; i < 4 && st == RN_OK; i++)
        st = drop_if_unused(g, inputs_dq[i], removed);
    return st;
}

/* DequantizeLinear -> MaxPool -> QuantizeLinear (same parameters): MaxPool
 * on the quantized tensor. */
static rn_status fuse_pool(graph *g, graph_node *pool, transforms_node_list *removed, bool *fused)
{
    *fused = false;
    if (pool->n_inputs != 1 || pool->n_outputs != 1 || pool->outputs[0] == NULL)
        return RN_OK;
    graph_node *dq = activation_dq(pool->inputs[0]);
    graph_node *q = activation_q(transforms_sole_reader(g, pool->outputs[0]));
    if (dq == NULL || q == NULL || !same_params(dq, q) ||
        q->outputs[0]->type != dq->inputs[0]->type)
        return RN_OK;
    qdq_tail t = {.y_q = q, .out = q->outputs[0]};
    rn_status st = transforms_merge_fused(pool, q);
    if (st != RN_OK)
        return st;
    pool->inputs[0] = dq->inputs[0];
    pool->outputs[0]->producer = NULL;
    pool->outputs[0] = t.out;
    t.out->producer = pool;
    t.out->producer_output = 0;
    q->inputs[0] = q->inputs[1] = NULL;
    if (q->n_inputs > 2)
        q->inputs[2] = NULL;
    q->outputs[0] = NULL;
    if ((st = transforms_node_list_push(removed, q)) != RN_OK)
        return st;
    *fused = true;
    return drop_if_unused(g, dq, removed);
}

rn_status transforms_fuse_qdq(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    int fusions = 0;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        bool fused = false;
        if (is_op(n, "Conv") || is_op(n, "Gemm") || is_op(n, "MatMul"))
            st = fuse_one(g, n, &removed, &fused);
        else if (is_op(n, "MaxPool"))
            st = fuse_pool(g, n, &removed, &fused);
        fusions += fused;
    }
    int dropped = 0;
    st = transforms_finish_removal(g, &removed, st, &dropped);
    *changes = st == RN_OK ? fusions + dropped : 0;
    return st;
}
