/* fuse_qdq (transforms/fuse_qdq.c) on small QDQ graphs as ONNX Runtime's
 * quantize_static writes them: the nodes it leaves, the fused op's inputs
 * and names, and on REF the same results before and after — bit for bit,
 * since REF's QLinearFusedConv / QLinearFusedGemm compute what the unfused
 * DequantizeLinear, Conv, QuantizeLinear, Add and Relu compute, with the
 * same arithmetic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops/qlinear_fused.h"
#include "tests/transforms/transforms_test_util.h"
#include "transforms/transforms.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static unsigned seed = 1;

/* Deterministic integers in [lo, hi]. */
static int next_int(int lo, int hi)
{
    seed = seed * 1103515245u + 12345u;
    return lo + (int)((seed >> 8) % (unsigned)(hi - lo + 1));
}

static graph_value *scalar_f32(graph *g, const char *name, float v)
{
    return tt_const(g, name, RN_F32, 0, NULL, &v);
}

static graph_value *scalar_u8(graph *g, const char *name, uint8_t v)
{
    return tt_const(g, name, RN_U8, 0, NULL, &v);
}

static char *cat(char *buf, const char *a, const char *b)
{
    strcpy(buf, a);
    return strcat(buf, b);
}

/* QuantizeLinear named `name` of x (scale s, u8 zero point z). */
static graph_value *quant(graph *g, const char *name, graph_value *x, float s, uint8_t z)
{
    char a[64], b[64];
    graph_value *ins[3] = {x, scalar_f32(g, cat(a, name, "_s"), s),
                           scalar_u8(g, cat(b, name, "_z"), z)};
    return tt_op(g, name, "QuantizeLinear", 3, ins);
}

/* DequantizeLinear named `name` with the parameters of QuantizeLinear q. */
static graph_value *dequant(graph *g, const char *name, graph_value *q)
{
    graph_node *qn = q->producer;
    graph_value *ins[3] = {q, qn->inputs[1], qn->inputs[2]};
    return tt_op(g, name, "DequantizeLinear", 3, ins);
}

/* DequantizeLinear of constant i8 weights with a scale per output channel
 * (along `axis`; weights(): axis 0), values in [-63, 63]. */
static graph_value *weights_axis(graph *g, const char *name, int rank, const int64_t *dims,
                                 float s0, int axis)
{
    int64_t m = dims[axis], count = 1;
    for (int d = 0; d < rank; d++)
        count *= dims[d];
    int8_t *w = malloc((size_t)count);
    float *s = malloc(sizeof(float) * (size_t)m);
    int8_t *z = calloc((size_t)m, 1);
    cr_assert(w != NULL && s != NULL && z != NULL);
    for (int64_t i = 0; i < count; i++)
        w[i] = (int8_t)next_int(-63, 63);
    for (int64_t c = 0; c < m; c++)
        s[c] = s0 * (float)(c + 1);
    char a[64], b[64], c[64];
    graph_value *ins[3] = {tt_const(g, cat(a, name, "_q"), RN_I8, rank, dims, w),
                           tt_const(g, cat(b, name, "_s"), RN_F32, 1, &m, s),
                           tt_const(g, cat(c, name, "_z"), RN_I8, 1, &m, z)};
    free(w);
    free(s);
    free(z);
    graph_value *v = tt_op(g, name, "DequantizeLinear", 3, ins);
    tt_attr_int(g, name, "axis", axis);
    return v;
}

static graph_value *weights(graph *g, const char *name, int rank, const int64_t *dims, float s0)
{
    return weights_axis(g, name, rank, dims, s0, 0);
}

/* DequantizeLinear of an i32 bias of m values with scale x_scale * w_scale. */
static graph_value *bias_i32(graph *g, const char *name, int64_t m, float xs, float s0)
{
    int32_t q[16], z[16] = {0};
    float s[16];
    for (int64_t c = 0; c < m; c++) {
        q[c] = next_int(-2000, 2000);
        s[c] = xs * s0 * (float)(c + 1);
    }
    char a[64], b[64], c[64];
    graph_value *ins[3] = {tt_const(g, cat(a, name, "_q"), RN_I32, 1, &m, q),
                           tt_const(g, cat(b, name, "_s"), RN_F32, 1, &m, s),
                           tt_const(g, cat(c, name, "_z"), RN_I32, 1, &m, z)};
    graph_value *v = tt_op(g, name, "DequantizeLinear", 3, ins);
    tt_attr_int(g, name, "axis", 0);
    return v;
}

static const int64_t x_dims[4] = {1, 4, 6, 6};
static float x_data[144];

/* The residual block of a quantize_static ResNet:
 *   xq = Q(x); y1 = Q(Conv(DQ(xq), W1, B1)) (pads 1)
 *   y2 = Q(Relu(DQ(Q_mid(Conv(DQ(y1), W2, B2))) + DQ(xq)))
 *   out = DQ(Q(MaxPool(DQ(y2))))
 * with DQ(xq) read by the first Conv and the Add. `mid_is_result` also
 * makes the mid QuantizeLinear's output a result; `y2_dequantized_out`
 * leaves out the Relu and makes DQ(y2) the result (no MaxPool). */
static graph *block_of(bool mid_is_result, bool y2_dequantized_out)
{
    seed = 7;
    for (int i = 0; i < 144; i++)
        x_data[i] = (float)next_int(0, 400) / 100.0f;
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 4, x_dims);
    graph_value *xq = quant(g, "xq", x, 0.02f, 0);
    graph_value *xd = dequant(g, "xd", xq);
    const int64_t w1[4] = {8, 4, 3, 3}, w2[4] = {4, 8, 1, 1}, pads[4] = {1, 1, 1, 1};
    graph_value *c1_in[3] = {xd, weights(g, "w1", 4, w1, 0.002f),
                             bias_i32(g, "b1", 8, 0.02f, 0.002f)};
    graph_value *c1 = tt_op(g, "conv1", "Conv", 3, c1_in);
    tt_attr_ints(g, "conv1", "pads", 4, pads);
    graph_value *y1 = quant(g, "y1", c1, 0.05f, 0);
    float b2[4] = {0.1f, -0.3f, 0.25f, 0.0f};
    const int64_t four = 4;
    graph_value *c2_in[3] = {dequant(g, "y1d", y1), weights(g, "w2", 4, w2, 0.003f),
                             tt_const_f32(g, "b2", 1, &four, b2)};
    graph_value *c2 = tt_op(g, "conv2", "Conv", 3, c2_in);
    graph_value *mid = quant(g, "mid", c2, 0.04f, 128);
    graph_value *sum = tt_binary(g, "add", "Add", dequant(g, "midd", mid), xd);
    graph_value *y2 =
        quant(g, "y2", y2_dequantized_out ? sum : tt_unary(g, "relu", "Relu", sum), 0.06f, 0);
    if (y2_dequantized_out) {
        tt_output(g, dequant(g, "out", y2));
        tt_finish(g);
        return g;
    }
    graph_value *pool = tt_unary(g, "pool", "MaxPool", dequant(g, "y2d", y2));
    const int64_t k2[2] = {2, 2};
    tt_attr_ints(g, "pool", "kernel_shape", 2, k2);
    tt_attr_ints(g, "pool", "strides", 2, k2);
    graph_value *pq =
        tt_op(g, "pq", "QuantizeLinear", 3,
              (graph_value *[]){pool, y2->producer->inputs[1], y2->producer->inputs[2]});
    tt_output(g, dequant(g, "out", pq));
    if (mid_is_result)
        tt_output(g, mid);
    tt_finish(g);
    return g;
}

static graph *block(bool mid_is_result)
{
    return block_of(mid_is_result, false);
}

static int run_pass(graph *g)
{
    int changes = -1;
    OK(transforms_fuse_qdq(g, NULL, &changes));
    OK(graph_infer_shapes(g));
    return changes;
}

static void assert_same(const graph *before, const graph *after, int n_out)
{
    graph_tensor in = tt_tensor_f32(4, x_dims, x_data);
    graph_tensor a[2] = {{0}}, b[2] = {{0}};
    tt_run(before, &in, 1, a);
    tt_run(after, &in, 1, b);
    for (int o = 0; o < n_out; o++) {
        cr_assert_eq(a[o].nbytes, b[o].nbytes);
        cr_assert(memcmp(a[o].data, b[o].data, a[o].nbytes) == 0, "result %d differs", o);
        graph_tensor_release(&a[o]);
        graph_tensor_release(&b[o]);
    }
}

Test(fuse_qdq, residual_block_becomes_two_fused_convs)
{
    graph *g = block(false);
    graph *before;
    OK(graph_clone(g, &before));
    cr_assert_gt(run_pass(g), 0);
    cr_assert_eq(tt_count_op(g, "QLinearFusedConv"), 2);
    cr_assert_eq(tt_count_op(g, "Conv"), 0);
    cr_assert_eq(tt_count_op(g, "Add"), 0);
    cr_assert_eq(tt_count_op(g, "Relu"), 0);
    /* Left: the model input's QuantizeLinear and the result's DequantizeLinear. */
    cr_assert_eq(tt_count_op(g, "QuantizeLinear"), 1);
    cr_assert_eq(tt_count_op(g, "DequantizeLinear"), 1);
    graph_node *c1 = tt_find_node(g, "conv1"), *c2 = tt_find_node(g, "conv2");
    cr_assert_str_eq(c1->domain, "runnel");
    cr_assert_eq(c1->inputs[QF_X]->type, RN_U8, "conv1 reads the quantized x");
    cr_assert_eq(c1->inputs[QF_W]->constant->type, RN_I8);
    cr_assert_eq(c1->inputs[QF_B]->constant->type, RN_F32, "the i32 bias is dequantized");
    cr_assert_eq(c1->n_inputs, QF_N, "conv1 has y_scale and y_zero_point");
    cr_assert_null(c1->inputs[QF_MS]);
    cr_assert_eq(c2->inputs[QF_X], c1->outputs[0], "conv2 reads conv1's u8 output");
    cr_assert_eq(c2->inputs[QF_S], c1->inputs[QF_X], "conv2 adds the quantized x");
    cr_assert_not_null(c2->inputs[QF_MS]);
    cr_assert_str_eq(graph_node_attr_string(c2, "activation", ""), "Relu");
    cr_assert(tt_has_fused(c2, "conv2") && tt_has_fused(c2, "mid") && tt_has_fused(c2, "add") &&
              tt_has_fused(c2, "relu") && tt_has_fused(c2, "y2"));
    cr_assert_eq(c2->outputs[0]->type, RN_U8);
    graph_node *pool = tt_find_node(g, "pool");
    cr_assert_eq(pool->inputs[0], c2->outputs[0], "MaxPool reads the u8 tensor");
    cr_assert_eq(pool->outputs[0]->type, RN_U8);
    tt_assert_valid(g);
    assert_same(before, g, 1);
    graph_free(before);
    graph_free(g);
}

Test(fuse_qdq, mid_quantization_read_elsewhere_ends_the_fusion)
{
    graph *g = block(true);
    graph *before;
    OK(graph_clone(g, &before));
    run_pass(g);
    graph_node *c2 = tt_find_node(g, "conv2");
    cr_assert_str_eq(c2->op_type, "QLinearFusedConv");
    cr_assert_null(c2->inputs[QF_MS], "no mid: the QuantizeLinear is conv2's y");
    cr_assert_eq(tt_count_op(g, "Add"), 1, "the Add stays");
    cr_assert_eq(tt_count_op(g, "Relu"), 1);
    tt_assert_valid(g);
    assert_same(before, g, 2);
    graph_free(before);
    graph_free(g);
}

Test(fuse_qdq, gemm_with_relu)
{
    seed = 11;
    const int64_t a_dims[2] = {2, 16}, w_dims[2] = {5, 16}, five = 5;
    float a[32], b[5] = {0.5f, -0.25f, 0.0f, 1.0f, -1.0f};
    for (int i = 0; i < 32; i++)
        a[i] = (float)next_int(0, 300) / 100.0f;
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "a", RN_F32, 2, a_dims);
    graph_value *ins[3] = {dequant(g, "ad", quant(g, "aq", x, 0.015f, 0)),
                           weights(g, "w", 2, w_dims, 0.004f), tt_const_f32(g, "b", 1, &five, b)};
    graph_value *y = tt_op(g, "gemm", "Gemm", 3, ins);
    tt_attr_int(g, "gemm", "transB", 1);
    tt_output(g, dequant(g, "out", quant(g, "yq", tt_unary(g, "relu", "Relu", y), 0.03f, 3)));
    tt_finish(g);
    graph *before;
    OK(graph_clone(g, &before));
    cr_assert_gt(run_pass(g), 0);
    graph_node *n = tt_find_node(g, "gemm");
    cr_assert_str_eq(n->op_type, "QLinearFusedGemm");
    cr_assert_eq(tt_count_op(g, "Relu"), 0);
    cr_assert_str_eq(graph_node_attr_string(n, "activation", ""), "Relu");
    tt_assert_valid(g);
    graph_tensor in = tt_tensor_f32(2, a_dims, a);
    graph_tensor r0 = {0}, r1 = {0};
    tt_run(before, &in, 1, &r0);
    tt_run(g, &in, 1, &r1);
    tt_assert_close_f32(&r1, &r0, 0.0f);
    graph_tensor_release(&r0);
    graph_tensor_release(&r1);
    graph_free(before);
    graph_free(g);
}

Test(fuse_qdq, matmul_of_a_batch)
{
    seed = 13;
    const int64_t a_dims[3] = {2, 3, 16}, w_dims[2] = {16, 5};
    float a[96];
    for (int i = 0; i < 96; i++)
        a[i] = (float)next_int(0, 300) / 100.0f;
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "a", RN_F32, 3, a_dims);
    graph_value *ins[2] = {dequant(g, "ad", quant(g, "aq", x, 0.015f, 0)),
                           weights_axis(g, "w", 2, w_dims, 0.004f, 1)};
    graph_value *y = tt_op(g, "mm", "MatMul", 2, ins);
    tt_output(g, dequant(g, "out", quant(g, "yq", y, 0.02f, 100)));
    tt_finish(g);
    graph *before;
    OK(graph_clone(g, &before));
    cr_assert_gt(run_pass(g), 0);
    graph_node *n = tt_find_node(g, "mm");
    cr_assert_str_eq(n->op_type, "QLinearFusedMatMul");
    cr_assert_eq(n->inputs[QF_X]->type, RN_U8);
    cr_assert_null(n->inputs[QF_B]);
    cr_assert_eq(tt_count_op(g, "DequantizeLinear"), 1);
    tt_assert_valid(g);
    graph_tensor in = tt_tensor_f32(3, a_dims, a);
    graph_tensor r0 = {0}, r1 = {0};
    tt_run(before, &in, 1, &r0);
    tt_run(g, &in, 1, &r1);
    tt_assert_close_f32(&r1, &r0, 0.0f);
    graph_tensor_release(&r0);
    graph_tensor_release(&r1);
    graph_free(before);
    graph_free(g);
}

Test(fuse_qdq, float_conv_is_left_alone)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 4, x_dims);
    static float w[16 * 4];
    const int64_t wd[4] = {4, 4, 1, 1};
    graph_value *ins[2] = {x, tt_const_f32(g, "w", 4, wd, w)};
    tt_output(g, quant(g, "q", tt_op(g, "conv", "Conv", 2, ins), 0.1f, 0));
    tt_finish(g);
    cr_assert_eq(run_pass(g), 0);
    cr_assert_str_eq(tt_find_node(g, "conv")->op_type, "Conv");
    graph_free(g);
}

/* How CPU registers the pass: ahead of constant_folding in the default
 * pipeline. */
Test(fuse_qdq, inserted_before_constant_folding)
{
    transforms_pipeline *p;
    OK(transforms_default_pipeline(NULL, &p));
    int n = transforms_pipeline_count(p), fold = -1;
    OK(transforms_pipeline_insert_before(p, "constant_folding", "fuse_qdq", transforms_fuse_qdq,
                                         NULL, 0));
    cr_assert_eq(transforms_pipeline_count(p), n + 1);
    for (int i = 0; i < n + 1; i++)
        if (strcmp(transforms_pipeline_name(p, i), "constant_folding") == 0)
            fold = i;
    cr_assert_gt(fold, 0);
    cr_assert_str_eq(transforms_pipeline_name(p, fold - 1), "fuse_qdq");
    cr_assert_eq(
        transforms_pipeline_insert_before(p, "no_such_pass", "x", transforms_fuse_qdq, NULL, 0),
        RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "no_such_pass") != NULL, "%s", rn_last_error());
    cr_assert_eq(transforms_pipeline_insert_before(p, "constant_folding", "fuse_qdq",
                                                   transforms_fuse_qdq, NULL, 0),
                 RN_INVALID_ARG, "a second pass of the same name");
    cr_assert_eq(transforms_pipeline_count(p), n + 1);
    transforms_pipeline_free(p);
}

/* fuse_qop (after fuse_qdq in the CPU pipeline) folds a fused convolution's
 * DequantizeLinear into it only when the node has no mid quantization or
 * sum yet: conv2 here has both (and y, no activation), and DQ(y2) stays as
 * it is. */
Test(fuse_qdq, fuse_qop_leaves_a_fused_residual_alone)
{
    graph *g = block_of(false, true);
    graph *before;
    OK(graph_clone(g, &before));
    cr_assert_gt(run_pass(g), 0);
    graph_node *c2 = tt_find_node(g, "conv2");
    cr_assert_not_null(c2->inputs[QF_MS]);
    cr_assert_not_null(c2->inputs[QF_S]);
    graph_value *ms = c2->inputs[QF_MS], *sum = c2->inputs[QF_S], *ys = c2->inputs[QF_YS];
    cr_assert_not_null(ys);
    int changes = -1;
    OK(transforms_fuse_qop(g, NULL, &changes));
    OK(graph_infer_shapes(g));
    cr_assert_eq(changes, 0);
    cr_assert_eq(c2->inputs[QF_MS], ms);
    cr_assert_eq(c2->inputs[QF_S], sum);
    cr_assert_eq(c2->inputs[QF_YS], ys);
    cr_assert_eq(tt_count_op(g, "DequantizeLinear"), 1, "the result's DequantizeLinear stays");
    tt_assert_valid(g);
    assert_same(before, g, 1);
    graph_free(before);
    graph_free(g);
}
