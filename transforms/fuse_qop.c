/* fuse_qop: ONNX's operator-format int8 ops (quantize_static with
 * QuantFormat.QOperator, quantize_dynamic) into runnel's fused quantized
 * ops, for devices with int8 primitives (CPU's oneDNN, plugins/cpu/quant.c):
 *
 *   QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)   -> QLinearFusedConv
 *   QLinearMatMul(a, as, az, b, bs, bz, ys, yz)    -> QLinearFusedMatMul
 *   ConvInteger(x, w, xz, wz)                      -> QLinearFusedConv -> Cast
 *   MatMulInteger(a, b, az, bz)                    -> QLinearFusedMatMul -> Cast
 *
 * The QLinear ops compute y = saturate(round((x - xz) * (w - wz) [+ B]) *
 * xs * ws / ys) + yz), the fused op's arithmetic with no mid quantization,
 * residual or activation (graph/ops/qlinear_fused.h). The integer ops
 * compute the i32 (x - xz) * (w - wz): the fused op with scales 1 and no y
 * writes it as f32, exact while every |accumulator| is below 2^24 (bounded
 * here from the constant weights), and a Cast makes it i32 again. The
 * weights' zero point is folded at compile time: w - wz becomes new i8
 * weights with zero point 0 (the integer identity (x - xz)(w - wz) is
 * exact), so u8 weights and nonzero, per-channel weight zero points reach
 * oneDNN's int8 primitives, which have no weight zero point. QLinearConv's
 * i32 bias (scale xs * ws[c], zero point 0) becomes f32 B * xs * ws[c]; the
 * CPU kernel divides it back into the accumulator's units.
 *
 * A node is rewritten only where the result is the ONNX op's:
 *   x per tensor, of a static shape (Conv: 1-D to 3-D; MatMul: rank 2 to 5);
 *   w a constant i8/u8 (MatMul: [K, N]), scales f32 constants per tensor or
 *   per output channel (Conv: axis 0; MatMul: per column), zero points
 *   constants of the same counts; every w - wz within i8's range;
 *   y's scale and zero point present and constant; B a constant i32;
 *   the integer ops' accumulators below 2^24. MatMulInteger's a_zero_point
 *   may also be a value computed at run time (quantize_dynamic's
 *   DynamicQuantizeLinear), which the fused op reads as its input.
 * Any other node (e.g. u8 weights 0..255 with zero point 0, whose w - wz
 * leaves i8) stays for the device's kernel of the ONNX op (REF's, exact);
 * docs/cpu.md lists these conditions. ctx: unused. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops/qlinear_fused.h"
#include "transforms/rewrite.h"

static bool is_onnx_op(const graph_node *n, const char *op)
{
    return (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

static graph_value *in_at(const graph_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : NULL;
}

static bool is_q8(rn_element_type t)
{
    return t == RN_U8 || t == RN_I8;
}

/* A constant with data of type t (RN_UNDEFINED: u8 or i8) and one or
 * `count` elements. */
static bool const_count(const graph_value *v, rn_element_type t, size_t count)
{
    if (v == NULL || !transforms_is_constant(v) || v->constant->data == NULL)
        return false;
    rn_element_type ct = v->constant->type;
    if (t == RN_UNDEFINED ? !is_q8(ct) : ct != t)
        return false;
    size_t n = graph_tensor_count(v->constant);
    return n == 1 || n == count;
}

static int64_t int_at(const graph_tensor *t, size_t k)
{
    if (graph_tensor_count(t) == 1)
        k = 0;
    switch (t->type) {
    case RN_U8:
        return ((const uint8_t *)t->data)[k];
    case RN_I8:
        return ((const int8_t *)t->data)[k];
    case RN_I32:
        return ((const int32_t *)t->data)[k];
    default:
        return 0;
    }
}

static double float_at(const graph_tensor *t, size_t k)
{
    return ((const float *)t->data)[graph_tensor_count(t) == 1 ? 0 : k];
}

/* Where an op keeps its inputs (-1: it has none there). */
typedef struct qop_kind {
    const char *op;
    bool conv, integer; /* integer: MatMulInteger / ConvInteger, i32 y */
    int x, xs, xz, w, ws, wz, ys, yz, b;
} qop_kind;

static const qop_kind kinds[] = {
    {"QLinearConv", true, false, 0, 1, 2, 3, 4, 5, 6, 7, 8},
    {"QLinearMatMul", false, false, 0, 1, 2, 3, 4, 5, 6, 7, -1},
    {"ConvInteger", true, true, 0, -1, 2, 1, -1, 3, -1, -1, -1},
    {"MatMulInteger", false, true, 0, -1, 2, 1, -1, 3, -1, -1, -1},
};

static const qop_kind *kind_of(const graph_node *n)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (is_onnx_op(n, kinds[i].op))
            return &kinds[i];
    return NULL;
}

static graph_value *port(const graph_node *n, int i)
{
    return i >= 0 ? in_at(n, i) : NULL;
}

/* The output channel of weight element k: Conv's dim 0, MatMul's column. */
static size_t channel_of(const graph_tensor *w, bool conv, size_t k)
{
    size_t count = graph_tensor_count(w), m = (size_t)w->dims[conv ? 0 : 1];
    return conv ? k / (count / m) : k % m;
}

/* w - wz of weight element k. */
static int64_t folded_at(const graph_tensor *w, const graph_tensor *wz, bool conv, size_t k)
{
    return int_at(w, k) - (wz != NULL ? int_at(wz, channel_of(w, conv, k)) : 0);
}

/* The largest |accumulator| the integer ops can reach: max |x - xz| times
 * the largest sum of |w - wz| over one output channel. */
static double accumulator_bound(const graph_node *n, const qop_kind *q)
{
    const graph_tensor *w = port(n, q->w)->constant;
    const graph_tensor *wz = port(n, q->wz) != NULL ? port(n, q->wz)->constant : NULL;
    size_t count = graph_tensor_count(w), m = (size_t)w->dims[q->conv ? 0 : 1];
    double *sums = calloc(m, sizeof *sums), most = 0.0;
    if (sums == NULL)
        return 1e300;
    for (size_t k = 0; k < count; k++) {
        int64_t v = folded_at(w, wz, q->conv, k);
        sums[channel_of(w, q->conv, k)] += (double)(v < 0 ? -v : v);
    }
    for (size_t c = 0; c < m; c++)
        most = sums[c] > most ? sums[c] : most;
    free(sums);
    bool s8 = port(n, q->x)->type == RN_I8;
    const graph_value *zv = port(n, q->xz);
    int64_t lo = s8 ? -128 : 0, hi = s8 ? 127 : 255, span = 255; /* any zero point */
    if (zv == NULL || transforms_is_constant(zv)) {
        int64_t z = zv != NULL ? int_at(zv->constant, 0) : 0;
        span = z - lo > hi - z ? z - lo : hi - z;
    }
    return most * (double)span;
}

/* MatMulInteger's a_zero_point computed at run time (quantize_dynamic's
 * DynamicQuantizeLinear): one value of a's type. */
static bool runtime_scalar(const graph_value *z, rn_element_type t, const qop_kind *q)
{
    if (!q->integer || q->conv || transforms_is_constant(z) || z->type != t || z->shape.rank < 0)
        return false;
    for (int d = 0; d < z->shape.rank; d++)
        if (z->shape.dims[d] != 1)
            return false;
    return true;
}

static const char *qop_decline(const graph_node *n, const qop_kind *q)
{
    graph_value *x = port(n, q->x), *w = port(n, q->w);
    rn_element_type yt =
        n->n_outputs == 1 && n->outputs[0] != NULL ? n->outputs[0]->type : RN_UNDEFINED;
    if (x == NULL || w == NULL || !is_q8(x->type) || (q->integer ? yt != RN_I32 : !is_q8(yt)))
        return "x not u8 or i8, or y not of the op's type";
    const graph_shape *xs = &x->shape;
    bool static_x = q->conv ? xs->rank >= 3 && xs->rank <= 5 : xs->rank >= 2 && xs->rank <= 5;
    for (int d = 0; static_x && d < xs->rank; d++)
        static_x = xs->dims[d] >= 0;
    if (!static_x)
        return q->conv ? "x not of a static shape of rank 3 to 5"
                       : "a not of a static shape of rank 2 to 5";
    if (!transforms_is_constant(w) || w->constant->data == NULL || !is_q8(w->constant->type) ||
        (q->conv ? w->constant->rank != xs->rank : w->constant->rank != 2))
        return q->conv ? "w not a constant u8 or i8" : "b not a constant u8 or i8 [K, N]";
    size_t m = (size_t)w->constant->dims[q->conv ? 0 : 1];
    if (!q->integer &&
        (!const_count(port(n, q->xs), RN_F32, 1) || !const_count(port(n, q->ws), RN_F32, m) ||
         !const_count(port(n, q->ys), RN_F32, 1)))
        return "a scale not an f32 constant (per tensor; w's per tensor or per output channel)";
    if ((port(n, q->xz) != NULL && !const_count(port(n, q->xz), x->type, 1) &&
         !runtime_scalar(port(n, q->xz), x->type, q)) ||
        (port(n, q->wz) != NULL && !const_count(port(n, q->wz), w->constant->type, m)) ||
        (!q->integer && !const_count(port(n, q->yz), yt, 1)))
        return "a zero point not a constant (per tensor; w's per tensor or per output "
               "channel), or y's zero point absent";
    graph_value *b = port(n, q->b);
    if (b != NULL && (!const_count(b, RN_I32, m) || graph_tensor_count(b->constant) != m))
        return "B not a constant i32 of one value per output channel";
    const graph_tensor *wt = w->constant;
    const graph_tensor *wz = port(n, q->wz) != NULL ? port(n, q->wz)->constant : NULL;
    size_t count = graph_tensor_count(wt);
    for (size_t k = 0; k < count; k++) {
        int64_t v = folded_at(wt, wz, q->conv, k);
        if (v < -128 || v > 127)
            return "w - w_zero_point outside i8 (oneDNN's int8 weights are i8 with no zero "
                   "point)";
    }
    /* The fused op writes f32 for the integer ops: exact below 2^24. */
    if (q->integer && accumulator_bound(n, q) >= 16777216.0)
        return "the i32 result may reach 2^24 (the fused op's f32 output is exact below it)";
    return NULL;
}

/* w - wz as an i8 constant. */
static rn_status folded_weights(graph *g, const graph_node *n, const qop_kind *q, graph_value **out)
{
    const graph_tensor *wt = port(n, q->w)->constant;
    const graph_tensor *wz = port(n, q->wz) != NULL ? port(n, q->wz)->constant : NULL;
    graph_tensor t = {.type = RN_I8, .rank = wt->rank};
    memcpy(t.dims, wt->dims, sizeof t.dims);
    t.nbytes = graph_tensor_count(wt);
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    int8_t *d = t.data;
    for (size_t k = 0; k < t.nbytes; k++)
        d[k] = (int8_t)folded_at(wt, wz, q->conv, k);
    return transforms_add_constant(g, n->name, "/weights_i8", &t, out);
}

/* An f32 constant of one value. */
static rn_status float_one(graph *g, const graph_node *n, graph_value **out)
{
    graph_tensor t = {.type = RN_F32, .rank = 0, .nbytes = sizeof(float)};
    t.data = malloc(sizeof(float));
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    *(float *)t.data = 1.0f;
    return transforms_add_constant(g, n->name, "/scale_1", &t, out);
}

/* QLinearConv's i32 bias as f32: B[c] * xs * ws[c]. */
static rn_status float_bias(graph *g, const graph_node *n, graph_value **out)
{
    const graph_tensor *b = n->inputs[8]->constant;
    const graph_tensor *xs = n->inputs[1]->constant, *ws = n->inputs[4]->constant;
    size_t m = graph_tensor_count(b);
    graph_tensor t = {.type = RN_F32, .rank = 1, .dims = {(int64_t)m}};
    t.nbytes = sizeof(float) * m;
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    float *v = t.data;
    for (size_t c = 0; c < m; c++)
        v[c] = (float)((double)int_at(b, c) * float_at(xs, 0) * float_at(ws, c));
    return transforms_add_constant(g, n->name, "/bias_f32", &t, out);
}

/* The integer ops: the fused node writes a new f32 value, a Cast to i32
 * writes y (which keeps its name and readers). */
static rn_status cast_output(graph *g, graph_node *n)
{
    graph_value *y = n->outputs[0], *inner;
    char *name;
    rn_status st = transforms_unique_name(g, y->name, "/f32", &name);
    if (st != RN_OK)
        return st;
    st = graph_add_value(g, name, &inner);
    free(name);
    if (st != RN_OK)
        return st;
    inner->type = RN_F32;
    inner->shape = y->shape;
    n->outputs[0] = inner;
    inner->producer = n;
    inner->producer_output = 0;
    y->producer = NULL;
    graph_node *cast;
    if ((st = transforms_unique_name(g, n->name, "/to_i32", &name)) != RN_OK)
        return st;
    st = graph_add_node(g, name, "", "Cast", transforms_new_node_opset(g), 1, &inner, 1, &y, &cast);
    free(name);
    return st == RN_OK ? transforms_set_attr_int(cast, "to", RN_I32) : st;
}

static rn_status rewrite_one(graph *g, graph_node *n, const qop_kind *q)
{
    graph_value *in[QF_N] = {0};
    in[QF_X] = port(n, q->x);
    in[QF_XZ] = port(n, q->xz);
    const graph_value *wz = port(n, q->wz);
    bool zero_wz = true;
    for (size_t k = 0; wz != NULL && k < graph_tensor_count(wz->constant); k++)
        zero_wz = zero_wz && int_at(wz->constant, k) == 0;
    rn_status st = RN_OK;
    if (port(n, q->w)->constant->type == RN_I8 && zero_wz)
        in[QF_W] = port(n, q->w);
    else
        st = folded_weights(g, n, q, &in[QF_W]);
    if (q->integer) {
        if (st == RN_OK)
            st = float_one(g, n, &in[QF_XS]);
        in[QF_WS] = in[QF_XS];
    } else {
        in[QF_XS] = port(n, q->xs);
        in[QF_WS] = port(n, q->ws);
        in[QF_YS] = port(n, q->ys);
        in[QF_YZ] = port(n, q->yz);
    }
    if (st == RN_OK && port(n, q->b) != NULL)
        st = float_bias(g, n, &in[QF_B]);
    int count = 0;
    for (int i = 0; i < QF_N; i++)
        if (in[i] != NULL)
            count = i + 1;
    graph_value **inputs = st == RN_OK ? malloc(sizeof *inputs * (size_t)count) : NULL;
    char *op_type = strdup(q->conv ? "QLinearFusedConv" : "QLinearFusedMatMul");
    char *domain = strdup("runnel");
    if (st == RN_OK && (inputs == NULL || op_type == NULL || domain == NULL))
        st = rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    if (st != RN_OK) {
        free(inputs);
        free(op_type);
        free(domain);
        return st;
    }
    memcpy(inputs, in, sizeof *inputs * (size_t)count);
    free(n->inputs);
    n->inputs = inputs;
    n->n_inputs = count;
    free(n->op_type);
    free(n->domain);
    n->op_type = op_type;
    n->domain = domain;
    n->opset = 1;
    return q->integer ? cast_output(g, n) : RN_OK;
}

/* Whether constants a and b (either may be absent: 0) hold the same one value. */
static bool same_scalar(const graph_value *a, const graph_value *b)
{
    if (a == b)
        return true;
    if (a == NULL || b == NULL || !transforms_is_constant(a) || !transforms_is_constant(b))
        return false;
    const graph_tensor *x = a->constant, *y = b->constant;
    return x->data != NULL && y->data != NULL && x->type == y->type && x->nbytes == y->nbytes &&
           graph_tensor_count(x) == 1 && memcmp(x->data, y->data, x->nbytes) == 0;
}

static bool same_static_shape(const graph_shape *a, const graph_shape *b)
{
    bool same = a->rank == b->rank && a->rank > 0;
    for (int d = 0; same && d < a->rank; d++)
        same = a->dims[d] == b->dims[d] && a->dims[d] >= 0;
    return same;
}

/* The operator format's residual (quantize_static with QOperator when Add is
 * not quantized, as in ResNet-50):
 *   QLinearConv -> DequantizeLinear (y's scale and zero point)
 *     [-> Add/Sum(., f32 residual of the same shape) [-> Relu]]
 * becomes one fused node with y as its mid quantization, the residual as an
 * f32 sum and the f32 result as its output: the same arithmetic (y rounded
 * and saturated, dequantized, added, Relu), without the f32 passes over
 * the tensor between the convolutions (ResNet-50: 16 blocks' Dequantize,
 * Sum and Relu, and the 4 projection shortcuts' Dequantize). n: a fused
 * node rewrite_one made (y, no mid, no sum, no activation). */
static rn_status fuse_residual(graph *g, graph_node *n, transforms_node_list *removed, bool *fused)
{
    *fused = false;
    if (strcmp(n->op_type, "QLinearFusedConv") != 0 || n->n_inputs != QF_YZ + 1 ||
        n->inputs[QF_YS] == NULL || n->inputs[QF_YZ] == NULL || n->outputs[0] == NULL ||
        graph_node_attr_string(n, "activation", NULL) != NULL)
        return RN_OK;
    /* fuse_qdq's fused nodes may already have a mid quantization or a sum. */
    for (int i = QF_MS; i <= QF_SZ; i++)
        if (n->inputs[i] != NULL)
            return RN_OK;
    graph_node *dq = transforms_sole_reader(g, n->outputs[0]);
    if (dq == NULL || !is_onnx_op(dq, "DequantizeLinear") || dq->n_inputs < 2 ||
        dq->inputs[0] != n->outputs[0] || !same_scalar(dq->inputs[1], n->inputs[QF_YS]) ||
        !same_scalar(in_at(dq, 2), n->inputs[QF_YZ]) || dq->n_outputs != 1 ||
        dq->outputs[0] == NULL || dq->outputs[0]->type != RN_F32)
        return RN_OK;
    /* Then Add/Sum with an f32 residual of the output's shape [-> Relu], or
     * nothing more (the convolution writes the dequantized f32). */
    graph_node *add = transforms_sole_reader(g, dq->outputs[0]), *relu = NULL;
    graph_value *other = NULL;
    if (add != NULL && (is_onnx_op(add, "Add") || is_onnx_op(add, "Sum")) && add->n_inputs == 2 &&
        add->n_outputs == 1 && add->outputs[0] != NULL && add->inputs[0] != add->inputs[1]) {
        other = add->inputs[0] == dq->outputs[0] ? add->inputs[1] : add->inputs[0];
        if (other == NULL || other->type != RN_F32 ||
            !same_static_shape(&other->shape, &dq->outputs[0]->shape) ||
            !same_static_shape(&add->outputs[0]->shape, &dq->outputs[0]->shape))
            other = NULL;
    }
    if (other == NULL)
        add = NULL;
    else
        relu = transforms_sole_reader(g, add->outputs[0]);
    if (relu != NULL &&
        (!is_onnx_op(relu, "Relu") || relu->n_outputs != 1 || relu->outputs[0] == NULL))
        relu = NULL;
    graph_value *out = relu != NULL  ? relu->outputs[0]
                       : add != NULL ? add->outputs[0]
                                     : dq->outputs[0];
    graph_node *tail[3] = {dq, add, relu};
    rn_status st = RN_OK;
    for (int i = 0; i < 3 && st == RN_OK; i++)
        if (tail[i] != NULL)
            st = transforms_merge_fused(n, tail[i]);
    if (st == RN_OK && relu != NULL)
        st = transforms_set_attr_string(n, "activation", "Relu");
    if (st != RN_OK)
        return st;
    /* y becomes mid (inputs[QF_MS], [QF_MZ]), the residual the f32 sum. */
    n->inputs[QF_MS] = n->inputs[QF_YS];
    n->inputs[QF_MZ] = n->inputs[QF_YZ];
    n->inputs[QF_S] = other;
    n->inputs[QF_YS] = n->inputs[QF_YZ] = NULL;
    n->n_inputs = other != NULL ? QF_S + 1 : QF_MZ + 1;
    n->outputs[0]->producer = NULL;
    n->outputs[0] = out;
    out->producer = n;
    out->producer_output = 0;
    for (int i = 0; i < 3 && st == RN_OK; i++) {
        if (tail[i] == NULL)
            continue;
        for (int k = 0; k < tail[i]->n_inputs; k++)
            tail[i]->inputs[k] = NULL;
        if (tail[i]->outputs[0] == out)
            tail[i]->outputs[0] = NULL;
        st = transforms_node_list_push(removed, tail[i]);
    }
    *fused = st == RN_OK;
    return st;
}

rn_status transforms_fuse_qop(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int rewritten = 0, casts = 0, residuals = 0;
    rn_status st = RN_OK;
    for (int i = 0, n_nodes = g->n_nodes; i < n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        const qop_kind *q = kind_of(n);
        if (q != NULL && qop_decline(n, q) == NULL) {
            st = rewrite_one(g, n, q);
            rewritten += st == RN_OK;
            casts += st == RN_OK && q->integer;
        }
    }
    /* The Casts went to the end of the node list. The original weights,
     * zero points and bias constants nothing reads now go with dead-node
     * elimination. */
    if (st == RN_OK && casts > 0)
        st = graph_sort(g);
    /* Then the residuals, on the fused convolutions (the removal sorts g:
     * a fused node may now read a residual made after it in the list). */
    transforms_node_list removed = {0};
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        bool fused = false;
        st = fuse_residual(g, g->nodes[i], &removed, &fused);
        residuals += fused;
    }
    int dropped = 0;
    st = transforms_finish_removal(g, &removed, st, &dropped);
    *changes = st == RN_OK ? rewritten + residuals : 0;
    return st;
}
