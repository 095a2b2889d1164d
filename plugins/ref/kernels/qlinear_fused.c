/* REF's runnel QLinearFusedConv, QLinearFusedGemm and QLinearFusedMatMul: the oracle for
 * transforms/fuse_qdq.c, which makes them from the QDQ form
 *   DequantizeLinear(x) -> Conv / Gemm (DequantizeLinear(w), B)
 *   [-> QuantizeLinear -> DequantizeLinear (mid)] [-> Add(., DequantizeLinear(sum))]
 * and by transforms/fuse_qop.c from the operator form's QLinearConv ->
 *   DequantizeLinear (mid) -> Add/Sum(., an f32 sum) [-> Relu] (f32 out)
 *   [-> Relu] [-> QuantizeLinear (y)]
 * Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, B (f32),
 * mid_scale, mid_zero_point, sum, sum_scale, sum_zero_point, y_scale,
 * y_zero_point (zero points optional: 0). x, mid, sum and y are quantized
 * per tensor; w per tensor or per output channel (Conv: axis 0; Gemm: axis 0
 * with transB, else 1; MatMul: its last axis).
 *
 * Computed as the unfused graph computes it on REF: x and w dequantized to
 * f32 ((q - zero point) * scale, as DequantizeLinear), REF's Conv or Gemm
 * with B, then per element: the mid quantize-dequantize, plus the
 * dequantized sum, Relu, and QuantizeLinear's rounding (f32 division, half
 * to even, saturation) into y's type, or f32 without y_scale. */
#include <string.h>

#include "graph/ops/qlinear_fused.h"
#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/quant_util.h"
#include "plugins/ref/kernels/tmp.h"

extern const plugin_kernel ref_kernel_conv;
extern const plugin_kernel ref_kernel_gemm;
extern const plugin_kernel ref_kernel_matmul;

static bool has_input(const graph_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] != NULL;
}

static bool is_q8(const graph_value *v)
{
    return v != NULL && (v->type == RN_U8 || v->type == RN_I8);
}

static bool qfused_supports(const graph_node *node, const char **why)
{
    if (!is_q8(node->inputs[QF_X]) || !is_q8(node->inputs[QF_W])) {
        *why = "x or w is not u8 or i8";
        return false;
    }
    /* sum: quantized with its scale, or f32 (fuse_qop) without one. */
    if (has_input(node, QF_S) &&
        (has_input(node, QF_SS) ? !is_q8(node->inputs[QF_S])
                                : node->inputs[QF_S]->type != RN_F32 || has_input(node, QF_SZ))) {
        *why = "sum is neither u8/i8 with sum_scale nor f32 without";
        return false;
    }
    static const int scales[] = {QF_XS, QF_WS, QF_MS, QF_SS, QF_YS};
    for (int k = 0; k < 5; k++)
        if (has_input(node, scales[k]) && node->inputs[scales[k]]->type != RN_F32) {
            *why = "a scale is not f32";
            return false;
        }
    if (!has_input(node, QF_XS) || !has_input(node, QF_WS)) {
        *why = "x_scale or w_scale missing";
        return false;
    }
    if (has_input(node, QF_B) && node->inputs[QF_B]->type != RN_F32) {
        *why = "B is not f32";
        return false;
    }
    if (has_input(node, QF_MS) != has_input(node, QF_MZ) ||
        (has_input(node, QF_SS) && !has_input(node, QF_S)) ||
        has_input(node, QF_YS) != has_input(node, QF_YZ)) {
        *why = "mid, sum and y need their scale and zero point";
        return false;
    }
    const char *act = graph_node_attr_string(node, "activation", NULL);
    if (act != NULL && strcmp(act, "Relu") != 0) {
        *why = "activation other than Relu";
        return false;
    }
    return true;
}

/* One quantization's parameters, per tensor. */
typedef struct qparam {
    bool on;
    double scale, zero;
    rn_element_type type;
    int64_t lo, hi;
} qparam;

static qparam qparam_of(const plugin_kernel_args *args, int scale, int zero)
{
    qparam p = {0};
    const graph_tensor *s = ref_q_opt(args, scale), *z = ref_q_opt(args, zero);
    if (s == NULL)
        return p;
    p.on = true;
    p.scale = ref_q_load(s->type, s->data, 0);
    p.zero = z != NULL ? ref_q_load(z->type, z->data, 0) : 0.0;
    p.type = z != NULL ? z->type : RN_U8;
    ref_q_int_range(p.type, &p.lo, &p.hi);
    return p;
}

/* DequantizeLinear's arithmetic. */
static float dequantize(double q, double zero, double scale)
{
    return (float)((q - zero) * scale);
}

/* QuantizeLinear's arithmetic for an f32 input and scale. */
static int64_t quantize(float v, const qparam *p)
{
    double q = (float)((double)v / (double)(float)p->scale);
    return ref_q_saturate(nearbyint(q) + p->zero, p->lo, p->hi);
}

static rn_status dequantize_input(const plugin_kernel_args *args, int i, int scale, int zero,
                                  int axis, float **out)
{
    const graph_tensor *x = &args->inputs[i], *s = &args->inputs[scale];
    const graph_tensor *z = ref_q_opt(args, zero);
    size_t n = graph_tensor_count(x), ns = graph_tensor_count(s);
    size_t nz = z != NULL ? graph_tensor_count(z) : 1;
    int64_t len = axis < x->rank ? x->dims[axis] : 1;
    if ((ns != 1 && (int64_t)ns != len) || (nz != 1 && (int64_t)nz != len))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "input %d has %zu scales and %zu zero points for %lld "
                                           "channels",
                            REF_Q_NODE_ARGS(args->node), i, ns, nz, (long long)len);
    size_t inner = 1;
    for (int d = axis + 1; d < x->rank; d++)
        inner *= (size_t)x->dims[d];
    float *v = ref_tmp_alloc((n ? n : 1) * sizeof(float));
    if (v == NULL)
        return ref_nn_oom(args->node);
    for (size_t k = 0; k < n; k++) {
        size_t c = inner > 0 && len > 0 ? k / inner % (size_t)len : 0;
        double sv = ref_q_load(s->type, s->data, ns == 1 ? 0 : c);
        double zv = z != NULL ? ref_q_load(z->type, z->data, nz == 1 ? 0 : c) : 0.0;
        v[k] = dequantize(ref_q_load(x->type, x->data, k), zv, sv);
    }
    *out = v;
    return RN_OK;
}

static rn_status qfused_run(plugin_kernel_args *args, const plugin_kernel *base, int w_axis)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 2);
    if (st != RN_OK)
        return st;
    graph_tensor *y = &args->outputs[0];
    size_t count = graph_tensor_count(y);
    qparam mid = qparam_of(args, QF_MS, QF_MZ), sum = qparam_of(args, QF_SS, QF_SZ);
    qparam out = qparam_of(args, QF_YS, QF_YZ);
    const graph_tensor *r = ref_q_opt(args, QF_S);
    if (r != NULL && graph_tensor_count(r) != count)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "the sum has %zu elements, the output %zu",
                            REF_Q_NODE_ARGS(node), graph_tensor_count(r), count);
    float *xf = NULL, *wf = NULL, *acc = NULL;
    st = dequantize_input(args, QF_X, QF_XS, QF_XZ, 1, &xf);
    if (st == RN_OK)
        st = dequantize_input(args, QF_W, QF_WS, QF_WZ, w_axis, &wf);
    if (st == RN_OK && out.on && (acc = ref_tmp_alloc((count ? count : 1) * sizeof(float))) == NULL)
        st = ref_nn_oom(node);
    if (st == RN_OK) {
        graph_tensor in[3] = {args->inputs[QF_X], args->inputs[QF_W], {.type = RN_UNDEFINED}};
        in[0].type = in[1].type = RN_F32;
        in[0].data = xf;
        in[1].data = wf;
        in[0].nbytes = graph_tensor_count(&in[0]) * sizeof(float);
        in[1].nbytes = graph_tensor_count(&in[1]) * sizeof(float);
        in[0].layout = in[1].layout = NULL;
        const graph_tensor *b = ref_q_opt(args, QF_B);
        if (b != NULL)
            in[2] = *b;
        graph_tensor o = *y;
        if (out.on) {
            o.type = RN_F32;
            o.data = acc;
            o.nbytes = count * sizeof(float);
        }
        plugin_kernel_args sub = *args;
        sub.inputs = in;
        sub.n_inputs = b != NULL ? 3 : 2;
        sub.outputs = &o;
        sub.n_outputs = 1;
        st = base->run(&sub);
        if (!out.on)
            acc = y->data;
    }
    if (st == RN_OK) {
        bool relu = graph_node_attr_string(node, "activation", NULL) != NULL;
        for (size_t i = 0; i < count; i++) {
            float v = acc[i];
            if (mid.on)
                v = dequantize((double)quantize(v, &mid), mid.zero, mid.scale);
            if (r != NULL && r->type == RN_F32)
                v = v + ((const float *)r->data)[i];
            else if (r != NULL)
                v = v + dequantize(ref_q_load(r->type, r->data, i), sum.zero, sum.scale);
            if (relu && !(v > 0.0f))
                v = 0.0f;
            if (out.on)
                ref_mv_store_int(y->type, y->data, i, quantize(v, &out));
            else
                acc[i] = v;
        }
    }
    ref_tmp_free(xf);
    ref_tmp_free(wf);
    if (out.on)
        ref_tmp_free(acc);
    return st;
}

static bool qfused_conv_supports(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[QF_X];
    if (!qfused_supports(node, why))
        return false;
    if (x->shape.rank >= 0 && (x->shape.rank < 3 || x->shape.rank > 5 ||
                               !ref_nn_window_attrs_ok(node, x->shape.rank - 2, why))) {
        if (x->shape.rank < 3 || x->shape.rank > 5)
            *why = "input rank is not 3, 4 or 5 (1 to 3 spatial dims)";
        return false;
    }
    return true;
}

static rn_status qfused_conv_run(plugin_kernel_args *args)
{
    return qfused_run(args, &ref_kernel_conv, 0);
}

static rn_status qfused_gemm_run(plugin_kernel_args *args)
{
    int axis = graph_node_attr_int(args->node, "transB", 0) != 0 ? 0 : 1;
    return qfused_run(args, &ref_kernel_gemm, axis);
}

/* MatMul's weights [K, N]: per output channel is per column. */
static rn_status qfused_matmul_run(plugin_kernel_args *args)
{
    if (ref_q_opt(args, QF_B) != NULL)
        return rn_set_error(RN_INVALID_ARG, REF_Q_NODE_FMT "QLinearFusedMatMul takes no bias",
                            REF_Q_NODE_ARGS(args->node));
    return qfused_run(args, &ref_kernel_matmul, args->inputs[QF_W].rank - 1);
}

const plugin_kernel ref_kernel_qlinear_fused_matmul = {
    .domain = "runnel",
    .op_type = "QLinearFusedMatMul",
    .impl_type = "ref",
    .supports = qfused_supports,
    .run = qfused_matmul_run,
};

const plugin_kernel ref_kernel_qlinear_fused_conv = {
    .domain = "runnel",
    .op_type = "QLinearFusedConv",
    .impl_type = "ref",
    .supports = qfused_conv_supports,
    .run = qfused_conv_run,
};

const plugin_kernel ref_kernel_qlinear_fused_gemm = {
    .domain = "runnel",
    .op_type = "QLinearFusedGemm",
    .impl_type = "ref",
    .supports = qfused_supports,
    .run = qfused_gemm_run,
};
