/* fuse_qop: ONNX's operator-format int8 ops (quantize_static with
 * QuantFormat.QOperator) into runnel's fused quantized ops, for devices with
 * int8 primitives (CPU's oneDNN, plugins/cpu/quant.c):
 *
 *   QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)   -> QLinearFusedConv
 *   QLinearMatMul(a, as, az, b, bs, bz, ys, yz)    -> QLinearFusedMatMul
 *
 * Both compute y = saturate(round((x - xz) * (w - wz) [+ B]) * xs * ws / ys) + yz),
 * which is the fused op's arithmetic with no mid quantization, residual or
 * activation (graph/ops/qlinear_fused.h). The weights' zero point is folded
 * at compile time: w - wz becomes new i8 weights with zero point 0 (the
 * integer identity (x - xz)(w - wz) is exact), so u8 weights and nonzero,
 * per-channel weight zero points reach oneDNN's int8 primitives, which have
 * no weight zero point. QLinearConv's i32 bias (scale xs * ws[c], zero
 * point 0) becomes f32 B * xs * ws[c]; the CPU kernel divides it back into
 * the accumulator's units.
 *
 * A node is rewritten only where the result is the ONNX op's:
 *   x per tensor, of a static shape (Conv: 1-D to 3-D; MatMul: rank 2 to 5);
 *   w a constant i8/u8 (MatMul: [K, N]), scales f32 constants per tensor or
 *   per output channel (Conv: axis 0; MatMul: per column), zero points
 *   constants of the same counts; every w - wz within i8's range;
 *   y's scale and zero point present and constant; B a constant i32.
 * Any other node (e.g. u8 weights 0..255 with zero point 0, whose w - wz
 * leaves i8) stays for the device's kernel of the ONNX op (REF's, exact);
 * docs/cpu.md lists these conditions. MatMulInteger and ConvInteger are
 * not rewritten (see docs/cpu.md). ctx: unused. */
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

/* The output channel of weight element k: Conv's dim 0, MatMul's column. */
static size_t channel_of(const graph_tensor *w, bool conv, size_t k)
{
    size_t count = graph_tensor_count(w), m = (size_t)w->dims[conv ? 0 : 1];
    return conv ? k / (count / m) : k % m;
}

static const char *qop_decline(const graph_node *n)
{
    bool conv = is_onnx_op(n, "QLinearConv");
    if (!conv && !is_onnx_op(n, "QLinearMatMul"))
        return "not QLinearConv or QLinearMatMul";
    graph_value *x = in_at(n, 0), *w = in_at(n, 3);
    if (n->n_outputs != 1 || n->outputs[0] == NULL || x == NULL || w == NULL || !is_q8(x->type) ||
        !is_q8(n->outputs[0]->type))
        return "x or y not u8 or i8";
    const graph_shape *xs = &x->shape;
    bool static_x = conv ? xs->rank >= 3 && xs->rank <= 5 : xs->rank >= 2 && xs->rank <= 5;
    for (int d = 0; static_x && d < xs->rank; d++)
        static_x = xs->dims[d] >= 0;
    if (!static_x)
        return conv ? "x not of a static shape of rank 3 to 5"
                    : "a not of a static shape of rank 2 to 5";
    if (!transforms_is_constant(w) || w->constant->data == NULL || !is_q8(w->constant->type) ||
        (conv ? w->constant->rank != xs->rank : w->constant->rank != 2))
        return conv ? "w not a constant u8 or i8" : "b not a constant u8 or i8 [K, N]";
    size_t m = (size_t)w->constant->dims[conv ? 0 : 1];
    if (!const_count(in_at(n, 1), RN_F32, 1) || !const_count(in_at(n, 4), RN_F32, m) ||
        !const_count(in_at(n, 6), RN_F32, 1))
        return "a scale not an f32 constant (per tensor; w's per tensor or per output channel)";
    if ((in_at(n, 2) != NULL && !const_count(in_at(n, 2), x->type, 1)) ||
        (in_at(n, 5) != NULL && !const_count(in_at(n, 5), w->constant->type, m)) ||
        !const_count(in_at(n, 7), n->outputs[0]->type, 1))
        return "a zero point not a constant (per tensor; w's per tensor or per output "
               "channel), or y's zero point absent";
    graph_value *b = conv ? in_at(n, 8) : NULL;
    if (b != NULL && (!const_count(b, RN_I32, m) || graph_tensor_count(b->constant) != m))
        return "B not a constant i32 of one value per output channel";
    const graph_tensor *wt = w->constant, *wz = in_at(n, 5) ? in_at(n, 5)->constant : NULL;
    size_t count = graph_tensor_count(wt);
    for (size_t k = 0; k < count; k++) {
        int64_t v = int_at(wt, k) - (wz != NULL ? int_at(wz, channel_of(wt, conv, k)) : 0);
        if (v < -128 || v > 127)
            return "w - w_zero_point outside i8 (oneDNN's int8 weights are i8 with no zero "
                   "point)";
    }
    return NULL;
}

/* w - wz as an i8 constant. */
static rn_status folded_weights(graph *g, const graph_node *n, bool conv, graph_value **out)
{
    const graph_tensor *wt = n->inputs[3]->constant;
    const graph_tensor *wz = in_at(n, 5) != NULL ? n->inputs[5]->constant : NULL;
    graph_tensor t = {.type = RN_I8, .rank = wt->rank};
    memcpy(t.dims, wt->dims, sizeof t.dims);
    t.nbytes = graph_tensor_count(wt);
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    int8_t *d = t.data;
    for (size_t k = 0; k < t.nbytes; k++)
        d[k] = (int8_t)(int_at(wt, k) - (wz != NULL ? int_at(wz, channel_of(wt, conv, k)) : 0));
    return transforms_add_constant(g, n->name, "/weights_i8", &t, out);
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

static rn_status rewrite_one(graph *g, graph_node *n)
{
    bool conv = is_onnx_op(n, "QLinearConv");
    graph_value *in[QF_N] = {0};
    in[QF_X] = n->inputs[0];
    in[QF_XS] = n->inputs[1];
    in[QF_XZ] = in_at(n, 2);
    in[QF_WS] = n->inputs[4];
    in[QF_YS] = n->inputs[6];
    in[QF_YZ] = n->inputs[7];
    const graph_value *wz = in_at(n, 5);
    bool zero_wz = true;
    for (size_t k = 0; wz != NULL && k < graph_tensor_count(wz->constant); k++)
        zero_wz = int_at(wz->constant, k) == 0;
    rn_status st = RN_OK;
    if (n->inputs[3]->constant->type == RN_I8 && zero_wz)
        in[QF_W] = n->inputs[3];
    else
        st = folded_weights(g, n, conv, &in[QF_W]);
    if (st == RN_OK && conv && in_at(n, 8) != NULL)
        st = float_bias(g, n, &in[QF_B]);
    graph_value **inputs = st == RN_OK ? malloc(sizeof *inputs * QF_N) : NULL;
    char *op_type = strdup(conv ? "QLinearFusedConv" : "QLinearFusedMatMul");
    char *domain = strdup("runnel");
    if (st == RN_OK && (inputs == NULL || op_type == NULL || domain == NULL))
        st = rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    if (st != RN_OK) {
        free(inputs);
        free(op_type);
        free(domain);
        return st;
    }
    memcpy(inputs, in, sizeof in);
    free(n->inputs);
    n->inputs = inputs;
    n->n_inputs = QF_N;
    free(n->op_type);
    free(n->domain);
    n->op_type = op_type;
    n->domain = domain;
    n->opset = 1;
    return RN_OK;
}

rn_status transforms_fuse_qop(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int rewritten = 0;
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if ((is_onnx_op(n, "QLinearConv") || is_onnx_op(n, "QLinearMatMul")) &&
            qop_decline(n) == NULL) {
            st = rewrite_one(g, n);
            rewritten += st == RN_OK;
        }
    }
    /* The original weights, zero points and bias constants nothing reads
     * now go with dead-node elimination. */
    *changes = st == RN_OK ? rewritten : 0;
    return st;
}
