/* int8 on oneDNN: runnel's QLinearFusedConv, QLinearFusedGemm and
 * QLinearFusedMatMul (made by transforms/fuse_qdq.c from QDQ models and by
 * transforms/fuse_qop.c from QLinearConv, QLinearMatMul, ConvInteger and
 * MatMulInteger) as int8
 * convolution, inner product and matmul primitives (u8/s8 source, s8 weights, VNNI where the CPU
 * has it), and the QuantizeLinear / DequantizeLinear that stay as reorders with a scale.
 *
 * The fused op (see plugins/ref/kernels/qlinear_fused.c for its meaning)
 * maps onto oneDNN 2.6's int8 arithmetic: the s32 accumulator plus the bias
 * (f32, divided by x_scale * w_scale[c] at compile time) times the output
 * scales (per output channel: x_scale * w_scale[c] / the next scale), then
 * post-ops:
 *   mid quantization   eltwise round, clip to the mid type's range less its
 *                      zero point, linear by mid_scale / y_scale;
 *   residual           sum with scale sum_scale / y_scale and sum's zero
 *                      point (in place on the residual's bytes); an f32
 *                      residual (fuse_qop's, into an f32 output) as it is;
 *   Relu               eltwise relu;
 *   y's zero point     eltwise linear shift; the conversion to u8/s8
 *                      rounds half to even and saturates, as
 *                      QuantizeLinear.
 * Layouts: the primitive picks them (format any): int8 activations flow
 * between convolutions in its blocked layout (nhwc-like acdb for VNNI) and
 * weights are converted once at compile time (the plan's constant
 * conversion). x's zero point is oneDNN's source zero point (a runtime one
 * for a matmul whose zero point is an input); CPU takes w zero points 0
 * (symmetric weights, as quantize_static writes them; fuse_qop folds others
 * into the weights) and the residual in y's type. Without VNNI it declines
 * an i8 x to a convolution or inner product (oneDNN halves the weights) and,
 * for an output without y (the exact accumulator), weights over 64 in
 * magnitude (vpmaddubsw saturates). Others run REF's kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops/qlinear_fused.h"
#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"

static bool is_int8(rn_element_type t)
{
    return t == RN_U8 || t == RN_I8;
}

bool cpu_int8_max_pool(const rn_node *node)
{
    const char *op = rn_node_op_type(node);
    const char *why = NULL;
    return (strcmp(op, "MaxPool") == 0 || strcmp(op, "GlobalMaxPool") == 0) &&
           is_int8(rn_node_input_type(node, 0)) && cpu_static_node(node, &why);
}

rn_element_type cpu_io_type(const rn_node *node)
{
    rn_element_type t = rn_node_input_type(node, 0);
    return is_int8(t) ? t : RN_F32;
}

static bool present(const rn_node *node, int i)
{
    return i < rn_node_input_count(node) && rn_node_input_name(node, i)[0] != '\0';
}

/* Element k of constant input i as a double (0 when absent). */
static double const_at(const rn_node *node, int i, size_t k)
{
    const rn_kernel_tensor *t = present(node, i) ? rn_node_input_constant(node, i) : NULL;
    if (t == NULL || t->data == NULL)
        return 0.0;
    switch (t->type) {
    case RN_F32:
        return ((const float *)t->data)[k];
    case RN_U8:
        return ((const uint8_t *)t->data)[k];
    case RN_I8:
        return ((const int8_t *)t->data)[k];
    case RN_I32:
        return ((const int32_t *)t->data)[k];
    default:
        return 0.0;
    }
}

/* Whether input i is a constant of count elements (count 0: any), all of
 * them zero when `zero`. */
static bool const_ok(const rn_node *node, int i, size_t count, bool zero)
{
    const rn_kernel_tensor *t = rn_node_input_constant(node, i);
    if (t == NULL || t->data == NULL)
        return false;
    size_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    if (count != 0 && n != count)
        return false;
    for (size_t k = 0; zero && k < n; k++)
        if (const_at(node, i, k) != 0.0)
            return false;
    return true;
}

static bool is_matmul(const rn_node *node)
{
    return strcmp(rn_node_op_type(node), "QLinearFusedMatMul") == 0;
}

/* x's zero point is an input of one value known at run time (the
 * DynamicQuantizeLinear before quantize_dynamic's MatMulInteger): oneDNN's
 * matmul takes it as a runtime source zero point. */
static bool runtime_zero_point(const rn_node *node)
{
    if (!present(node, QF_XZ) || rn_node_input_constant(node, QF_XZ) != NULL ||
        rn_node_input_type(node, QF_XZ) != rn_node_input_type(node, QF_X))
        return false;
    rn_partial_shape z = rn_node_input_shape(node, QF_XZ);
    for (int d = 0; d < z.rank; d++)
        if (z.dims[d] != 1)
            return false;
    return z.rank >= 0;
}

/* The largest |w| of the constant i8 weights. */
static int max_abs_weight(const rn_node *node)
{
    const rn_kernel_tensor *t = rn_node_input_constant(node, QF_W);
    size_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    int most = 0;
    for (size_t k = 0; k < n; k++) {
        int v = ((const int8_t *)t->data)[k];
        most = v < 0 ? (-v > most ? -v : most) : (v > most ? v : most);
    }
    return most;
}

static bool qfused_supports(const rn_node *node, const char **why)
{
    bool conv = strcmp(rn_node_op_type(node), "QLinearFusedConv") == 0, matmul = is_matmul(node);
    rn_partial_shape x = rn_node_input_shape(node, QF_X);
    rn_partial_shape w = rn_node_input_shape(node, QF_W);
    if (!is_int8(rn_node_input_type(node, QF_X)) || rn_node_input_type(node, QF_W) != RN_I8) {
        *why = "x u8 or i8 and w i8 only";
        return false;
    }
    /* Without VNNI, oneDNN's int8 convolution and inner product take an i8
     * source by halving the weights (its s8s8 compensation keeps
     * vpmaddubsw from saturating), which drops the weights' last bit. */
    if (rn_node_input_type(node, QF_X) == RN_I8 && !matmul && !cpu_has_vnni()) {
        *why = "i8 x on a CPU without VNNI (oneDNN halves the weights, inexact)";
        return false;
    }
    if (conv     ? (x.rank < 3 || x.rank > 5)
        : matmul ? (x.rank < 2 || x.rank > 5 || w.rank != 2 || present(node, QF_B))
                 : (x.rank != 2 || w.rank != 2)) {
        *why = conv     ? "1-D to 3-D convolutions only"
               : matmul ? "MatMul of rank 2 to 5 by [K, N] weights without bias only"
                        : "2-D Gemm only";
        return false;
    }
    /* oneDNN 2.6's int8 inner product takes no source zero point (its
     * convolution and matmul do): creating one is "unimplemented". */
    if (!conv && !matmul && present(node, QF_XZ) &&
        (rn_node_input_constant(node, QF_XZ) == NULL || const_at(node, QF_XZ, 0) != 0)) {
        *why = "a Gemm whose x zero point is not 0 (oneDNN's int8 inner product has none)";
        return false;
    }
    if (!conv && !matmul &&
        (rn_node_attr_int(node, "transA", 0) != 0 || rn_node_attr_int(node, "transB", 0) != 1 ||
         rn_node_attr_float(node, "alpha", 1.0f) != 1.0f ||
         rn_node_attr_float(node, "beta", 1.0f) != 1.0f)) {
        *why = "Gemm with transA, alpha or beta, or without transB";
        return false;
    }
    if (rn_node_input_constant(node, QF_W) == NULL || w.rank < 1) {
        *why = "weights are not a constant";
        return false;
    }
    size_t m = (size_t)w.dims[matmul ? 1 : 0];
    bool ok = const_ok(node, QF_XS, 1, false) && const_ok(node, QF_WS, 0, false) &&
              (!present(node, QF_XZ) || const_ok(node, QF_XZ, 1, false) ||
               (matmul && runtime_zero_point(node))) &&
              (!present(node, QF_WZ) || const_ok(node, QF_WZ, 0, true)) &&
              (!present(node, QF_B) || const_ok(node, QF_B, m, false));
    const rn_kernel_tensor *ws = rn_node_input_constant(node, QF_WS);
    if (ok) {
        size_t n = 1;
        for (int d = 0; d < ws->rank; d++)
            n *= (size_t)ws->dims[d];
        ok = n == 1 || n == m;
    }
    static const int params[] = {QF_MS, QF_MZ, QF_SS, QF_SZ, QF_YS, QF_YZ};
    for (int k = 0; ok && k < 6; k++)
        ok = !present(node, params[k]) || const_ok(node, params[k], 1, false);
    if (!ok) {
        *why = "scales and zero points not constants of the supported counts, or a w zero "
               "point not 0";
        return false;
    }
    /* The residual: quantized (with sum_scale) into a quantized output, or
     * f32 (fuse_qop's) into an f32 one. */
    if (present(node, QF_S) && (present(node, QF_YS) != present(node, QF_SS) ||
                                rn_node_input_type(node, QF_S) != rn_node_output_type(node, 0))) {
        *why = "the residual is not of the output's type";
        return false;
    }
    /* Without y the output is the exact accumulator (fuse_qop's MatMulInteger
     * and ConvInteger). Without VNNI oneDNN multiplies u8 by s8 with
     * vpmaddubsw, whose sum of two products saturates at 32767 unless every
     * |w| <= 64 (255 * 64 * 2 < 32768). */
    if (!present(node, QF_YS) && !present(node, QF_MS) && !cpu_has_vnni() &&
        max_abs_weight(node) > 64) {
        *why = "an exact (integer) output on a CPU without VNNI with |w| over 64 (vpmaddubsw "
               "saturates)";
        return false;
    }
    const char *act = rn_node_attr_string(node, "activation", NULL);
    if (act != NULL && strcmp(act, "Relu") != 0) {
        *why = "activation other than Relu";
        return false;
    }
    return cpu_static_node(node, why);
}

/* The kernel's state. */
typedef struct qfused {
    cpu_prim p;
    cpu_md src, wei, bias, dst;
    cpu_quant quant;  /* output scales, x's zero point */
    bool runtime_zp;  /* x's zero point an input, not a constant */
    float *bias_data; /* B / (x_scale * w_scale[c]) */
    int sum;          /* the residual input, -1 none */
    cpu_layout src_l, wei_l, dst_l;
    const rn_layout *src_layout, *wei_layout, *dst_layout;
} qfused;

static void qfused_release(void *state)
{
    qfused *q = state;
    if (q == NULL)
        return;
    cpu_prim_release(&q->p);
    cpu_quant_free(&q->quant);
    free(q->bias_data);
    free(q);
}

/* The convolution's descriptor (grouped weights as [g, M/g, C/g, k...]). */
static rn_status conv_op_desc(const rn_node *node, qfused *q, cpu_op *cd)
{
    rn_partial_shape xs = rn_node_input_shape(node, QF_X);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    int rank = xs.rank;
    cpu_conv_geometry g;
    rn_status st = cpu_conv_geometry_read(node, QF_X, QF_W, &g);
    if (st != RN_OK)
        return st;
    if ((st = cpu_any_md(rank, xs.dims, cpu_dt(rn_node_input_type(node, QF_X)), &q->src)) !=
            RN_OK ||
        (st = cpu_any_md(g.weights_rank, g.weights_dims, dnnl_s8, &q->wei)) != RN_OK ||
        (st = cpu_any_md(rank, ys.dims, cpu_dt(rn_node_output_type(node, 0)), &q->dst)) != RN_OK)
        return st;
    dnnl_status_t ds = cpu_op_conv(cd, dnnl_convolution_direct, &q->src, &q->wei,
                                   q->bias_data != NULL ? &q->bias : NULL, &q->dst, g.strides,
                                   g.dilations, g.pads_begin, g.pads_end);
    return ds == dnnl_success ? RN_OK : cpu_error(node, "describing the int8 convolution", ds);
}

static rn_status gemm_op_desc(const rn_node *node, qfused *q, cpu_op *ip)
{
    rn_partial_shape xs = rn_node_input_shape(node, QF_X), ws = rn_node_input_shape(node, QF_W);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    rn_status st;
    if ((st = cpu_any_md(2, xs.dims, cpu_dt(rn_node_input_type(node, QF_X)), &q->src)) != RN_OK ||
        (st = cpu_any_md(2, ws.dims, dnnl_s8, &q->wei)) != RN_OK ||
        (st = cpu_any_md(2, ys.dims, cpu_dt(rn_node_output_type(node, 0)), &q->dst)) != RN_OK)
        return st;
    dnnl_status_t ds =
        cpu_op_inner_product(ip, &q->src, &q->wei, q->bias_data != NULL ? &q->bias : NULL, &q->dst);
    return ds == dnnl_success ? RN_OK : cpu_error(node, "describing the int8 inner product", ds);
}

/* MatMul: both operands at the output's rank (leading 1s; oneDNN
 * broadcasts the weights over the batch), plain activations, weights in the
 * primitive's layout. */
static rn_status matmul_op_desc(const rn_node *node, qfused *q, cpu_op *mm)
{
    rn_partial_shape xs = rn_node_input_shape(node, QF_X), ws = rn_node_input_shape(node, QF_W);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    int r = ys.rank;
    int64_t wd[RN_MAX_RANK];
    for (int i = 0; i < r; i++)
        wd[i] = i < r - 2 ? 1 : ws.dims[i - (r - 2)];
    rn_status st;
    if ((st = cpu_plain_md(rn_node_input_type(node, QF_X), xs.rank, xs.dims, &q->src)) != RN_OK ||
        (st = cpu_any_md(r, wd, dnnl_s8, &q->wei)) != RN_OK ||
        (st = cpu_plain_md(rn_node_output_type(node, 0), r, ys.dims, &q->dst)) != RN_OK)
        return st;
    dnnl_status_t ds = cpu_op_matmul(mm, &q->src, &q->wei, NULL, &q->dst);
    return ds == dnnl_success ? RN_OK : cpu_error(node, "describing the int8 matmul", ds);
}

/* The value range of a quantized type. */
static void q_range(rn_element_type t, float *lo, float *hi)
{
    *lo = t == RN_I8 ? -128.0f : 0.0f;
    *hi = t == RN_I8 ? 127.0f : 255.0f;
}

/* What the output scales divide by: the scale of the next quantization
 * (mid's, else y's), 1 without one. */
static double scales_divisor(const rn_node *node)
{
    return present(node, QF_MS)   ? const_at(node, QF_MS, 0)
           : present(node, QF_YS) ? const_at(node, QF_YS, 0)
                                  : 1.0;
}

/* Output scales and post-ops (see the top of the file) into attr. */
static rn_status qfused_attr(const rn_node *node, qfused *q, dnnl_primitive_attr_t *out)
{
    bool mid = present(node, QF_MS), sum = present(node, QF_S), y = present(node, QF_YS);
    bool relu = rn_node_attr_string(node, "activation", NULL) != NULL;
    double xs = const_at(node, QF_XS, 0);
    double next = scales_divisor(node);
    const rn_kernel_tensor *wst = rn_node_input_constant(node, QF_WS);
    size_t nw = 1;
    for (int d = 0; d < wst->rank; d++)
        nw *= (size_t)wst->dims[d];
    float *scales = malloc(sizeof(float) * nw);
    if (scales == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    for (size_t c = 0; c < nw; c++)
        scales[c] = (float)(xs * const_at(node, QF_WS, c) / next);
    dnnl_post_ops_t po = NULL;
    dnnl_status_t s = dnnl_post_ops_create(&po);
    double ys = y ? const_at(node, QF_YS, 0) : 1.0;
    if (s == dnnl_success && mid) {
        float lo, hi, z = (float)const_at(node, QF_MZ, 0);
        q_range(rn_node_input_type(node, QF_MZ), &lo, &hi);
        s = cpu_post_ops_append_eltwise(po, dnnl_eltwise_round, 0.0f, 0.0f);
        if (s == dnnl_success)
            s = cpu_post_ops_append_eltwise(po, dnnl_eltwise_clip_v2, lo - z, hi - z);
        float to_y = (float)(const_at(node, QF_MS, 0) / ys);
        if (s == dnnl_success && to_y != 1.0f)
            s = cpu_post_ops_append_eltwise(po, dnnl_eltwise_linear, to_y, 0.0f);
    }
    /* An f32 residual (no sum_scale) is added as it is. */
    bool sum_q = present(node, QF_SS);
    if (s == dnnl_success && sum)
        s = cpu_post_ops_append_sum(
            po, sum_q ? (float)(const_at(node, QF_SS, 0) / ys) : 1.0f,
            sum_q && present(node, QF_SZ) ? (int32_t)const_at(node, QF_SZ, 0) : 0,
            cpu_dt(rn_node_input_type(node, QF_S)));
    if (s == dnnl_success && relu)
        s = cpu_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.0f, 0.0f);
    float zy = y ? (float)const_at(node, QF_YZ, 0) : 0.0f;
    if (s == dnnl_success && zy != 0.0f)
        s = cpu_post_ops_append_eltwise(po, dnnl_eltwise_linear, 1.0f, zy);
    dnnl_primitive_attr_t attr = NULL;
    rn_status st = s == dnnl_success ? cpu_attr(node, po, &attr)
                                     : cpu_error(node, "building int8 post-ops", s);
    if (st == RN_OK) {
        /* Per output channel: dst's dim 1 (convolution, inner product),
         * its last dim (matmul). */
        int oc = is_matmul(node) ? rn_node_output_shape(node, 0).rank - 1 : 1;
        /* In the weights: a matmul's last dim, a convolution's and an
         * inner product's first (a grouped convolution's [g, M/g]). */
        bool grouped = strcmp(rn_node_op_type(node), "QLinearFusedConv") == 0 &&
                       rn_node_attr_int(node, "group", 1) > 1;
        int wmask = is_matmul(node) ? 1 << oc : grouped ? 3 : 1;
        s = cpu_quant_product_scales(&q->quant, attr, scales, (int)nw, 1 << oc, wmask);
        /* x's zero point: oneDNN subtracts it (padding included, as the
         * zero point stands for 0.0) and compensates in the weights. */
        bool runtime = runtime_zero_point(node);
        int32_t zx = runtime ? 0 : (int32_t)const_at(node, QF_XZ, 0);
        if (s == dnnl_success && (runtime || zx != 0))
            s = cpu_quant_zero_point(&q->quant, attr, DNNL_ARG_SRC, zx, runtime);
        if (s != dnnl_success) {
            dnnl_primitive_attr_destroy(attr);
            st = cpu_error(node, "setting the output scales", s);
        }
    }
    dnnl_post_ops_destroy(po);
    free(scales);
    if (st == RN_OK)
        *out = attr;
    return st;
}

/* The bias in the accumulator's units, B / (x_scale * w_scale[c]), where
 * oneDNN adds it before the output scales (2.x), else in the scaled
 * result's, B / scales_divisor (3.x). */
static rn_status qfused_bias(const rn_node *node, qfused *q)
{
    if (!present(node, QF_B))
        return RN_OK;
    int64_t m = rn_node_input_shape(node, QF_W).dims[0];
    const rn_kernel_tensor *wst = rn_node_input_constant(node, QF_WS);
    bool per_channel = wst->rank > 0 && wst->dims[0] == m && m > 1;
    q->bias_data = malloc(sizeof(float) * (size_t)m);
    if (q->bias_data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    double xs = const_at(node, QF_XS, 0), next = scales_divisor(node);
    bool before = cpu_quant_bias_before_scales();
    for (int64_t c = 0; c < m; c++)
        q->bias_data[c] =
            (float)(const_at(node, QF_B, (size_t)c) /
                    (before ? xs * const_at(node, QF_WS, per_channel ? (size_t)c : 0) : next));
    return cpu_plain_md(RN_F32, 1, &m, &q->bias);
}

static rn_status qfused_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    qfused *q = calloc(1, sizeof *q);
    if (q == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    q->sum = present(node, QF_S) ? QF_S : -1;
    q->runtime_zp = runtime_zero_point(node);
    bool conv = strcmp(rn_node_op_type(node), "QLinearFusedConv") == 0;
    cpu_op d;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_engine_t eng = NULL;
    rn_status st = qfused_bias(node, q);
    if (st == RN_OK)
        st = conv              ? conv_op_desc(node, q, &d)
             : is_matmul(node) ? matmul_op_desc(node, q, &d)
                               : gemm_op_desc(node, q, &d);
    if (st == RN_OK)
        st = qfused_attr(node, q, &attr);
    if (st == RN_OK)
        st = cpu_engine(&eng);
    /* oneDNN's int8 convolution fixes its thread count in the descriptor
     * (weighted.c creates its own so too): created under the compiling
     * thread's OpenMP maximum (every CPU), it forked a team of every CPU on
     * every stream, each of THROUGHPUT's one-thread streams too. */
    int team = cpu_team_size(node, cpu_config_get()->threads);
    if (st == RN_OK) {
        int prev = cpu_team_begin_size(team);
        dnnl_status_t ds = cpu_op_pd(&pd, &d, attr, eng);
        cpu_team_end(prev);
        if (ds != dnnl_success) {
            pd = NULL;
            st = cpu_error(node, "creating the int8 primitive", ds);
        }
    }
    dnnl_primitive_attr_destroy(attr);
    if (st == RN_OK)
        st = cpu_prim_init_team(&q->p, node, pd, team);
    if (st != RN_OK) {
        qfused_release(q);
        return st;
    }
    cpu_pd_md(pd, dnnl_query_src_md, 0, &q->src);
    cpu_pd_md(pd, dnnl_query_weights_md, 0, &q->wei);
    cpu_pd_md(pd, dnnl_query_dst_md, 0, &q->dst);
    cpu_layout_init(&q->src_l, &q->src, rn_node_input_type(node, QF_X), &q->src_layout);
    cpu_layout_init(&q->wei_l, &q->wei, RN_I8, &q->wei_layout);
    cpu_layout_init(&q->dst_l, &q->dst, rn_node_output_type(node, 0), &q->dst_layout);
    *state = q;
    return RN_OK;
}

static const rn_layout *qfused_input_layout(const void *state, int i)
{
    const qfused *q = state;
    if (i == QF_X)
        return q->src_layout;
    if (i == QF_W)
        return q->wei_layout;
    return i == q->sum ? q->dst_layout : NULL;
}

static const rn_layout *qfused_output_layout(const void *state, int i)
{
    return i == 0 ? ((const qfused *)state)->dst_layout : NULL;
}

static size_t qfused_scratch(const void *state)
{
    return ((const qfused *)state)->p.scratch;
}

static int qfused_inplace(const void *state)
{
    return ((const qfused *)state)->sum;
}

static const char *qfused_impl(const void *state)
{
    return ((const qfused *)state)->p.impl;
}

static rn_status qfused_run(rn_kernel_args *args)
{
    const qfused *q = args->state;
    /* The residual is summed into the output: in place when the plan put
     * them on the same bytes, else copied there first. */
    if (q->sum >= 0 && args->outputs[0].data != args->inputs[q->sum].data)
        memcpy(args->outputs[0].data, args->inputs[q->sum].data, args->outputs[0].nbytes);
    cpu_arg a[6] = {{DNNL_ARG_SRC, &q->src, args->inputs[QF_X].data},
                    {DNNL_ARG_WEIGHTS, &q->wei, args->inputs[QF_W].data},
                    {DNNL_ARG_DST, &q->dst, args->outputs[0].data}};
    int n = 3;
    if (q->bias_data != NULL)
        a[n++] = (cpu_arg){DNNL_ARG_BIAS, &q->bias, q->bias_data};
    /* The runtime zero point as s32, in this thread's slot (a stable
     * address: the thread's oneDNN memory objects are keyed by it). */
    static _Thread_local int32_t zx;
    if (q->runtime_zp) {
        const void *z = args->inputs[QF_XZ].data;
        zx = args->inputs[QF_XZ].type == RN_I8 ? *(const int8_t *)z : *(const uint8_t *)z;
    }
    n += cpu_quant_args(&q->quant, &zx, a + n);
    return cpu_execute(&q->p, args, a, n);
}

#define QFUSED_KERNEL(name, op)                                                                    \
    const rn_kernel name = {                                                                       \
        .domain = "runnel",                                                                        \
        .op_type = op,                                                                             \
        .impl_type = "onednn",                                                                     \
        .supports = qfused_supports,                                                               \
        .prepare_ctx = qfused_prepare,                                                             \
        .run = qfused_run,                                                                         \
        .release = qfused_release,                                                                 \
        .input_layout = qfused_input_layout,                                                       \
        .output_layout = qfused_output_layout,                                                     \
        .scratch_bytes = qfused_scratch,                                                           \
        .inplace_input = qfused_inplace,                                                           \
        .impl_name = qfused_impl,                                                                  \
    }

QFUSED_KERNEL(cpu_kernel_qlinear_fused_conv, "QLinearFusedConv");
QFUSED_KERNEL(cpu_kernel_qlinear_fused_gemm, "QLinearFusedGemm");
QFUSED_KERNEL(cpu_kernel_qlinear_fused_matmul, "QLinearFusedMatMul");

/* ---- QuantizeLinear / DequantizeLinear as reorders with a scale ---- */

typedef struct qreorder {
    cpu_prim p;
    cpu_md src, dst;
    cpu_quant quant; /* the scale and zero point */
    cpu_layout src_l, dst_l;
    const rn_layout *src_layout, *dst_layout;
} qreorder;

static bool qdq_supports(const rn_node *node, const char **why)
{
    bool quantize = strcmp(rn_node_op_type(node), "QuantizeLinear") == 0;
    rn_element_type f = quantize ? rn_node_input_type(node, 0) : rn_node_output_type(node, 0);
    rn_element_type q = quantize ? rn_node_output_type(node, 0) : rn_node_input_type(node, 0);
    if (f != RN_F32 || !is_int8(q)) {
        *why = "f32 to or from u8 or i8 only";
        return false;
    }
    if (!const_ok(node, 1, 1, false) || (present(node, 2) && !const_ok(node, 2, 1, false)) ||
        rn_node_attr_int(node, "block_size", 0) != 0) {
        *why = "scale or zero point not a constant of one value";
        return false;
    }
    return cpu_static_node(node, why);
}

static void qreorder_release(void *state)
{
    qreorder *r = state;
    if (r == NULL)
        return;
    cpu_prim_release(&r->p);
    cpu_quant_free(&r->quant);
    free(r);
}

static rn_status qreorder_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    qreorder *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    bool quantize = strcmp(rn_node_op_type(node), "QuantizeLinear") == 0;
    rn_element_type in = rn_node_input_type(node, 0), out = rn_node_output_type(node, 0);
    rn_partial_shape x = rn_node_input_shape(node, 0);
    /* The producer's layout (a blocked int8 or f32 tensor) in, the same
     * format of the other type out. */
    const rn_layout *l = ctx->n_input_layouts > 0 ? ctx->input_layouts[0] : NULL;
    if (l != NULL && l->ops == &cpu_layout_ops &&
        ((const cpu_md *)l->desc)->data_type != cpu_dt(in))
        l = NULL; /* a bf16 layout: plain f32 in */
    rn_status st = cpu_input_md(l, in, x.rank, x.dims, &r->src);
    int team = cpu_team_size(node, cpu_config_get()->threads);
    dnnl_engine_t eng = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (st == RN_OK)
        st = cpu_engine(&eng);
    if (st == RN_OK)
        st = cpu_attr(node, NULL, &attr);
    if (st == RN_OK) {
        r->dst = r->src;
        r->dst.data_type = cpu_dt(out);
        float scale = (float)const_at(node, 1, 0);
        dnnl_status_t ds = cpu_quant_reorder_scale(&r->quant, attr, scale, quantize);
        /* The zero point: added to the quantized output, subtracted from
         * the quantized input. */
        int32_t z = (int32_t)const_at(node, 2, 0);
        if (ds == dnnl_success && z != 0)
            ds = cpu_quant_zero_point(&r->quant, attr, quantize ? DNNL_ARG_DST : DNNL_ARG_SRC, z,
                                      false);
        /* The reorder's thread count is fixed in its descriptor too. */
        int prev = cpu_team_begin_size(team);
        if (ds == dnnl_success)
            ds = cpu_reorder_pd(&pd, &r->src, eng, &r->dst, attr);
        cpu_team_end(prev);
        if (ds != dnnl_success) {
            pd = NULL;
            st = cpu_error(node, "creating the reorder", ds);
        }
    }
    dnnl_primitive_attr_destroy(attr);
    if (st == RN_OK)
        st = cpu_prim_init_team(&r->p, node, pd, team);
    if (st != RN_OK) {
        qreorder_release(r);
        return st;
    }
    cpu_layout_init(&r->src_l, &r->src, in, &r->src_layout);
    cpu_layout_init(&r->dst_l, &r->dst, out, &r->dst_layout);
    *state = r;
    return RN_OK;
}

static const rn_layout *qreorder_input_layout(const void *state, int i)
{
    return i == 0 ? ((const qreorder *)state)->src_layout : NULL;
}

static const rn_layout *qreorder_output_layout(const void *state, int i)
{
    return i == 0 ? ((const qreorder *)state)->dst_layout : NULL;
}

static size_t qreorder_scratch(const void *state)
{
    return ((const qreorder *)state)->p.scratch;
}

static const char *qreorder_impl(const void *state)
{
    return ((const qreorder *)state)->p.impl;
}

static rn_status qreorder_run(rn_kernel_args *args)
{
    const qreorder *r = args->state;
    cpu_arg a[4] = {{DNNL_ARG_FROM, &r->src, args->inputs[0].data},
                    {DNNL_ARG_TO, &r->dst, args->outputs[0].data}};
    return cpu_execute(&r->p, args, a, 2 + cpu_quant_args(&r->quant, NULL, a + 2));
}

#define QREORDER_KERNEL(name, op)                                                                  \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "onednn",                                                                     \
        .supports = qdq_supports,                                                                  \
        .prepare_ctx = qreorder_prepare,                                                           \
        .run = qreorder_run,                                                                       \
        .release = qreorder_release,                                                               \
        .input_layout = qreorder_input_layout,                                                     \
        .output_layout = qreorder_output_layout,                                                   \
        .scratch_bytes = qreorder_scratch,                                                         \
        .impl_name = qreorder_impl,                                                                \
    }

QREORDER_KERNEL(cpu_kernel_quantize_linear, "QuantizeLinear");
QREORDER_KERNEL(cpu_kernel_dequantize_linear, "DequantizeLinear");
