/* The conv/GEMM fusions (transforms/fuse_conv.c; pool_before_conv,
 * transforms/pool_before_conv.c), each on a small graph:
 * the structure it leaves (which nodes remain, their op and attributes,
 * the fused names, the result's name) and, on REF, the same results before
 * and after (REF runs runnel's FusedConv and FusedGemm as Conv or Gemm, the
 * residual and the activation, computed as ONNX defines them). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/transforms/transforms_test_util.h"
#include "transforms/transforms.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* x [1, 4, 5, 5]; W [4, 4, 3, 3]; pads 1: y has x's shape. */
static const int64_t x_dims[4] = {1, 4, 5, 5};
static const int64_t w_dims[4] = {4, 4, 3, 3};
static const int64_t c_dims[1] = {4};

static float x_data[100], w_data[144];

/* Deterministic values in [-1, 1) with both signs. */
static void fill(float *v, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static int run_pass(transforms_pass_fn fn, graph *g)
{
    int changes = -1;
    OK(fn(g, NULL, &changes));
    return changes;
}

static graph *clone_of(const graph *g)
{
    graph *c;
    OK(graph_clone(g, &c));
    return c;
}

/* Runs both graphs on REF with x and compares their one result. */
static void assert_same_results(const graph *before, const graph *after, float tol)
{
    graph_tensor in = tt_tensor_f32(4, x_dims, x_data);
    graph_tensor a = {0}, b = {0};
    tt_run(before, &in, 1, &a);
    tt_run(after, &in, 1, &b);
    tt_assert_close_f32(&b, &a, tol);
    graph_tensor_release(&a);
    graph_tensor_release(&b);
}

/* x -> Conv "conv" (W, B) -> returns its output. */
static graph_value *conv(graph *g, graph_value *x)
{
    fill(w_data, 144, 7);
    float b[4] = {0.1f, -0.2f, 0.3f, 0.0f};
    graph_value *ins[3] = {x, tt_const_f32(g, "W", 4, w_dims, w_data),
                           tt_const_f32(g, "B", 1, c_dims, b)};
    graph_value *y = tt_op(g, "conv", "Conv", 3, ins);
    const int64_t pads[4] = {1, 1, 1, 1};
    tt_attr_ints(g, "conv", "pads", 4, pads);
    return y;
}

static graph *start(graph_value **x)
{
    fill(x_data, 100, 3);
    graph *g = tt_graph();
    *x = tt_input(g, "x", RN_F32, 4, x_dims);
    return g;
}

Test(fold_batchnorm, folds_into_weights_and_bias)
{
    graph_value *x;
    graph *g = start(&x);
    float scale[4] = {1.5f, 0.5f, -1.0f, 2.0f}, shift[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    float mean[4] = {0.05f, -0.1f, 0.2f, 0.0f}, var[4] = {1.0f, 0.25f, 2.0f, 0.5f};
    graph_value *bn_in[5] = {conv(g, x), tt_const_f32(g, "scale", 1, c_dims, scale),
                             tt_const_f32(g, "shift", 1, c_dims, shift),
                             tt_const_f32(g, "mean", 1, c_dims, mean),
                             tt_const_f32(g, "var", 1, c_dims, var)};
    graph_value *y = tt_op(g, "bn", "BatchNormalization", 5, bn_in);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_fold_batchnorm, g), 1);
    cr_assert_eq(tt_count_op(g, "BatchNormalization"), 0);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *c = tt_find_node(g, "conv");
    cr_assert_eq(c->outputs[0], y, "the Conv writes the result the BatchNormalization wrote");
    cr_assert(tt_has_fused(c, "conv") && tt_has_fused(c, "bn"));
    tt_assert_valid(g);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fold_batchnorm, left_alone_when_the_conv_output_has_another_reader)
{
    graph_value *x;
    graph *g = start(&x);
    float one[4] = {1, 1, 1, 1}, zero[4] = {0, 0, 0, 0};
    graph_value *c = conv(g, x);
    graph_value *bn_in[5] = {
        c, tt_const_f32(g, "scale", 1, c_dims, one), tt_const_f32(g, "shift", 1, c_dims, zero),
        tt_const_f32(g, "mean", 1, c_dims, zero), tt_const_f32(g, "var", 1, c_dims, one)};
    tt_output(g, tt_op(g, "bn", "BatchNormalization", 5, bn_in));
    tt_output(g, c);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fold_batchnorm, g), 0);
    cr_assert_eq(tt_count_op(g, "BatchNormalization"), 1);
    graph_free(g);
}

Test(fuse_conv_add, residual_becomes_the_fourth_input)
{
    graph_value *x;
    graph *g = start(&x);
    graph_value *y = tt_binary(g, "add", "Add", conv(g, x), x);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_fuse_conv_add, g), 1);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *c = tt_find_node(g, "conv");
    cr_assert_str_eq(c->op_type, "FusedConv");
    cr_assert_str_eq(c->domain, "runnel");
    cr_assert_eq(c->n_inputs, 4);
    cr_assert_eq(c->inputs[3], x, "the residual is the Add's other input");
    cr_assert_eq(c->outputs[0], y);
    cr_assert(tt_has_fused(c, "add"));
    tt_assert_valid(g);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fuse_conv_add, broadcast_add_is_left_alone)
{
    graph_value *x;
    graph *g = start(&x);
    float b[4] = {1, 2, 3, 4};
    const int64_t bd[4] = {1, 4, 1, 1};
    tt_output(g, tt_binary(g, "add", "Add", conv(g, x), tt_const_f32(g, "b", 4, bd, b)));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_conv_add, g), 0);
    cr_assert_eq(tt_count_op(g, "Add"), 1);
    graph_free(g);
}

Test(fuse_activation, conv_add_relu_is_one_node)
{
    graph_value *x;
    graph *g = start(&x);
    graph_value *y = tt_unary(g, "relu", "Relu", tt_binary(g, "add", "Add", conv(g, x), x));
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_fuse_conv_add, g), 1);
    cr_assert_eq(run_pass(transforms_fuse_activation, g), 1);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *c = tt_find_node(g, "conv");
    cr_assert_str_eq(graph_node_attr_string(c, "activation", ""), "Relu");
    cr_assert(tt_has_fused(c, "conv") && tt_has_fused(c, "add") && tt_has_fused(c, "relu"));
    cr_assert_eq(c->outputs[0], y);
    tt_assert_valid(g);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fuse_activation, clip_bounds_become_parameters)
{
    graph_value *x;
    graph *g = start(&x);
    float lo = -0.25f, hi = 0.5f;
    graph_value *ins[3] = {conv(g, x), tt_const_f32(g, "lo", 0, NULL, &lo),
                           tt_const_f32(g, "hi", 0, NULL, &hi)};
    tt_output(g, tt_op(g, "clip", "Clip", 3, ins));
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_fuse_activation, g), 1);
    graph_node *c = tt_find_node(g, "conv");
    cr_assert_str_eq(graph_node_attr_string(c, "activation", ""), "Clip");
    const float *p;
    cr_assert_eq(graph_node_attr_floats(c, "activation_params", &p), 2);
    cr_assert_float_eq(p[0], lo, 0.0f);
    cr_assert_float_eq(p[1], hi, 0.0f);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fuse_activation, hard_sigmoid_and_leaky_relu_keep_their_attributes)
{
    static const char *const ops[] = {"HardSigmoid", "LeakyRelu", "Sigmoid", "Tanh", "HardSwish"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        graph_value *x;
        graph *g = start(&x);
        tt_output(g, tt_unary(g, "act", ops[i], conv(g, x)));
        if (strcmp(ops[i], "HardSigmoid") == 0) {
            graph_node *n = tt_find_node(g, "act");
            graph_attr a = {.name = strdup("alpha"), .type = GRAPH_ATTR_FLOAT, .f = 0.3f};
            OK(graph_node_add_attr(n, &a));
        }
        tt_finish(g);
        graph *before = clone_of(g);
        cr_assert_eq(run_pass(transforms_fuse_activation, g), 1, "%s", ops[i]);
        cr_assert_str_eq(graph_node_attr_string(tt_find_node(g, "conv"), "activation", ""), ops[i]);
        assert_same_results(before, g, 1e-5f);
        graph_free(before);
        graph_free(g);
    }
}

Test(fuse_activation, not_when_the_conv_output_is_a_result)
{
    graph_value *x;
    graph *g = start(&x);
    graph_value *c = conv(g, x);
    tt_output(g, tt_unary(g, "relu", "Relu", c));
    tt_output(g, c);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_activation, g), 0);
    cr_assert_eq(tt_count_op(g, "Relu"), 1);
    cr_assert_eq(tt_count_op(g, "Conv"), 1);
    graph_free(g);
}

/* a [1, 100] -> Gemm (B [100, 4] constant, transB 0, C [4]) -> Sigmoid */
Test(fuse_activation, gemm_with_transposed_weights)
{
    static float a[100], b[400];
    fill(a, 100, 11);
    fill(b, 400, 13);
    const int64_t ad[2] = {1, 100}, bd[2] = {100, 4};
    float c[4] = {0.5f, -0.5f, 0.25f, 0.0f};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "a", RN_F32, 2, ad);
    graph_value *ins[3] = {x, tt_const_f32(g, "B", 2, bd, b), tt_const_f32(g, "C", 1, c_dims, c)};
    graph_value *y = tt_unary(g, "sig", "Sigmoid", tt_op(g, "gemm", "Gemm", 3, ins));
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_gemm_transpose_b, g), 1);
    cr_assert_eq(graph_node_attr_int(tt_find_node(g, "gemm"), "transB", 0), 1);
    cr_assert_eq(run_pass(transforms_fuse_activation, g), 1);
    graph_node *n = tt_find_node(g, "gemm");
    cr_assert_str_eq(n->op_type, "FusedGemm");
    cr_assert_eq(n->inputs[1]->constant->dims[0], 4, "B is stored [N, K]");
    cr_assert_eq(n->outputs[0], y);
    tt_assert_valid(g);
    graph_tensor in = tt_tensor_f32(2, ad, a);
    graph_tensor r0 = {0}, r1 = {0};
    tt_run(before, &in, 1, &r0);
    tt_run(g, &in, 1, &r1);
    tt_assert_close_f32(&r1, &r0, 1e-5f);
    graph_tensor_release(&r0);
    graph_tensor_release(&r1);
    graph_free(before);
    graph_free(g);
}

/* x -> BatchNormalization -> Mul (per channel) -> Add (per channel) -> Relu,
 * as Caffe2 exports write an affine batch normalization (DenseNet-121). */
Test(fold_scale_shift, mul_and_add_fold_into_the_batch_normalization)
{
    graph_value *x;
    graph *g = start(&x);
    float scale[4] = {1.5f, 0.5f, -1.0f, 2.0f}, shift[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    float mean[4] = {0.05f, -0.1f, 0.2f, 0.0f}, var[4] = {1.0f, 0.25f, 2.0f, 0.5f};
    float mul[4] = {2.0f, -0.5f, 1.0f, 3.0f}, add[4] = {0.5f, 0.0f, -0.25f, 1.0f};
    const int64_t pc[3] = {4, 1, 1};
    graph_value *bn_in[5] = {
        x, tt_const_f32(g, "scale", 1, c_dims, scale), tt_const_f32(g, "shift", 1, c_dims, shift),
        tt_const_f32(g, "mean", 1, c_dims, mean), tt_const_f32(g, "var", 1, c_dims, var)};
    graph_value *bn = tt_op(g, "bn", "BatchNormalization", 5, bn_in);
    graph_value *m = tt_binary(g, "mul", "Mul", bn, tt_const_f32(g, "m", 3, pc, mul));
    graph_value *a = tt_binary(g, "add", "Add", m, tt_const_f32(g, "a", 3, pc, add));
    graph_value *y = tt_unary(g, "relu", "Relu", a);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    int changes = 0, c;
    while ((c = run_pass(transforms_fold_scale_shift, g)) > 0)
        changes += c;
    cr_assert_eq(changes, 2, "the Mul and the Add fold");
    cr_assert_eq(tt_count_op(g, "Mul") + tt_count_op(g, "Add"), 0);
    cr_assert_eq(run_pass(transforms_fuse_activation, g), 1);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = tt_find_node(g, "bn");
    cr_assert_str_eq(n->op_type, "FusedBatchNormalization");
    cr_assert_eq(n->outputs[0], y);
    cr_assert(tt_has_fused(n, "mul") && tt_has_fused(n, "add") && tt_has_fused(n, "relu"));
    tt_assert_valid(g);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fold_scale_shift, conv_weights_take_a_scalar_scale)
{
    graph_value *x;
    graph *g = start(&x);
    float k = -0.75f;
    tt_output(g, tt_binary(g, "mul", "Mul", conv(g, x), tt_const_f32(g, "k", 0, NULL, &k)));
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_pass(transforms_fold_scale_shift, g), 1);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_str_eq(g->nodes[0]->op_type, "Conv");
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fold_scale_shift, a_full_size_operand_is_left_alone)
{
    graph_value *x;
    graph *g = start(&x);
    tt_output(g, tt_binary(g, "mul", "Mul", conv(g, x), x));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fold_scale_shift, g), 0);
    cr_assert_eq(tt_count_op(g, "Mul"), 1);
    graph_free(g);
}

/* x [1, 6, 2, 2] -> Reshape [1, 3, 2, 2, 2] -> Transpose (0 2 1 3 4) ->
 * Reshape [1, 6, 2, 2]: ShuffleNet's channel shuffle in 3 groups. */
Test(fuse_shuffle_channels, reshape_transpose_reshape_is_one_node)
{
    static float xs[24];
    for (int i = 0; i < 24; i++)
        xs[i] = (float)i;
    const int64_t xd[4] = {1, 6, 2, 2}, s1[5] = {1, 3, 2, 2, 2}, s2[4] = {1, 6, 2, 2};
    const int64_t n5 = 5, n4 = 4, perm[5] = {0, 2, 1, 3, 4};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 4, xd);
    graph_value *r1 = tt_binary(g, "r1", "Reshape", x, tt_const_i64(g, "s1", 1, &n5, s1));
    graph_value *t = tt_unary(g, "t", "Transpose", r1);
    tt_attr_ints(g, "t", "perm", 5, perm);
    graph_value *y = tt_binary(g, "r2", "Reshape", t, tt_const_i64(g, "s2", 1, &n4, s2));
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_fuse_shuffle_channels, g), 3);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "ShuffleChannels");
    cr_assert_eq(graph_node_attr_int(n, "group", 0), 3);
    cr_assert_eq(n->outputs[0], y);
    cr_assert(tt_has_fused(n, "r1") && tt_has_fused(n, "t") && tt_has_fused(n, "r2"));
    tt_assert_valid(g);
    graph_tensor in = tt_tensor_f32(4, xd, xs);
    graph_tensor a = {0}, b = {0};
    tt_run(before, &in, 1, &a);
    tt_run(g, &in, 1, &b);
    tt_assert_close_f32(&b, &a, 0.0f);
    graph_tensor_release(&a);
    graph_tensor_release(&b);
    graph_free(before);
    graph_free(g);
}

/* ---- transformer patterns (transforms/fuse_transformer.c) ---- */

static const int64_t h_dims[2] = {2, 4};

static void assert_same_2x4(const graph *before, const graph *after, float tol)
{
    static float xs[8] = {-2.0f, -0.5f, 0.25f, 1.5f, 3.0f, -1.0f, 0.0f, 0.75f};
    graph_tensor in = tt_tensor_f32(2, h_dims, xs);
    graph_tensor a = {0}, b = {0};
    tt_run(before, &in, 1, &a);
    tt_run(after, &in, 1, &b);
    tt_assert_close_f32(&b, &a, tol);
    graph_tensor_release(&a);
    graph_tensor_release(&b);
}

Test(fuse_gelu, erf_form_becomes_gelu)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, h_dims);
    float s2 = 1.4142135381698608f, one = 1.0f, half = 0.5f;
    graph_value *d = tt_binary(g, "div", "Div", x, tt_const_f32(g, "s2", 0, NULL, &s2));
    graph_value *e = tt_unary(g, "erf", "Erf", d);
    graph_value *a = tt_binary(g, "add", "Add", e, tt_const_f32(g, "one", 0, NULL, &one));
    graph_value *m = tt_binary(g, "mul", "Mul", x, a);
    graph_value *y = tt_binary(g, "half", "Mul", m, tt_const_f32(g, "h", 0, NULL, &half));
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_pass(transforms_fuse_gelu, g), 5);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_str_eq(g->nodes[0]->op_type, "Gelu");
    cr_assert_str_eq(g->nodes[0]->name, "half", "the Gelu keeps the last node's name");
    cr_assert_eq(g->nodes[0]->outputs[0], y);
    cr_assert(tt_has_fused(g->nodes[0], "erf") && tt_has_fused(g->nodes[0], "div"));
    tt_assert_valid(g);
    assert_same_2x4(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

Test(fuse_layernorm, decomposition_becomes_layer_normalization)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, h_dims);
    const int64_t last[1] = {-1}, hd[1] = {4};
    float two = 2.0f, eps = 1e-5f, gamma[4] = {1.0f, 2.0f, 0.5f, -1.0f};
    float beta[4] = {0.1f, 0.0f, -0.2f, 0.3f};
    graph_value *mean = tt_unary(g, "mean", "ReduceMean", x);
    tt_attr_ints(g, "mean", "axes", 1, last);
    graph_value *c = tt_binary(g, "sub", "Sub", x, mean);
    graph_value *sq = tt_binary(g, "pow", "Pow", c, tt_const_f32(g, "two", 0, NULL, &two));
    graph_value *var = tt_unary(g, "var", "ReduceMean", sq);
    tt_attr_ints(g, "var", "axes", 1, last);
    graph_value *ve = tt_binary(g, "add_eps", "Add", var, tt_const_f32(g, "eps", 0, NULL, &eps));
    graph_value *sd = tt_unary(g, "sqrt", "Sqrt", ve);
    graph_value *nrm = tt_binary(g, "div", "Div", c, sd);
    graph_value *sc = tt_binary(g, "mul", "Mul", nrm, tt_const_f32(g, "gamma", 1, hd, gamma));
    graph_value *y = tt_binary(g, "add", "Add", sc, tt_const_f32(g, "beta", 1, hd, beta));
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_pass(transforms_fuse_layernorm, g), 9);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *ln = g->nodes[0];
    cr_assert_str_eq(ln->op_type, "LayerNormalization");
    cr_assert_eq(ln->n_inputs, 3);
    cr_assert_float_eq(graph_node_attr_float(ln, "epsilon", 0.0f), eps, 0.0f);
    cr_assert_eq(ln->outputs[0], y);
    tt_assert_valid(g);
    assert_same_2x4(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

/* a [2, 4] -> MatMul (W [4, 3]) -> Add (b [3]) -> Gelu: one FusedMatMul. */
Test(fuse_matmul_bias, bias_and_activation_join_the_matmul)
{
    static float w[12], b[3] = {0.5f, -0.25f, 1.0f};
    fill(w, 12, 5);
    const int64_t wd[2] = {4, 3}, bd[1] = {3};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, h_dims);
    graph_value *mm = tt_binary(g, "mm", "MatMul", x, tt_const_f32(g, "W", 2, wd, w));
    graph_value *add = tt_binary(g, "add", "Add", tt_const_f32(g, "b", 1, bd, b), mm);
    graph_value *y = tt_unary(g, "relu", "Relu", add);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_pass(transforms_fuse_matmul_bias, g), 1);
    cr_assert_eq(run_pass(transforms_fuse_activation, g), 1);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "FusedMatMul");
    cr_assert_eq(n->n_inputs, 3);
    cr_assert_str_eq(graph_node_attr_string(n, "activation", ""), "Relu");
    cr_assert_eq(n->outputs[0], y);
    tt_assert_valid(g);
    static float xs[8] = {-2.0f, -0.5f, 0.25f, 1.5f, 3.0f, -1.0f, 0.0f, 0.75f};
    graph_tensor in = tt_tensor_f32(2, h_dims, xs);
    graph_tensor r0 = {0}, r1 = {0};
    tt_run(before, &in, 1, &r0);
    tt_run(g, &in, 1, &r1);
    tt_assert_close_f32(&r1, &r0, 1e-5f);
    graph_tensor_release(&r0);
    graph_tensor_release(&r1);
    graph_free(before);
    graph_free(g);
}

/* An encoder's residual: x [2, 4] -> MatMul (W [4, 4]) -> Add (b [4]) ->
 * Add(., x): one FusedMatMul(x, W, b, x), REF's values. */
Test(fuse_matmul_add, residual_becomes_the_fourth_input)
{
    static float w[16], b[4] = {0.5f, -0.25f, 1.0f, 0.125f};
    fill(w, 16, 9);
    const int64_t wd[2] = {4, 4}, bd[1] = {4};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, h_dims);
    graph_value *mm = tt_binary(g, "mm", "MatMul", x, tt_const_f32(g, "W", 2, wd, w));
    graph_value *biased = tt_binary(g, "bias", "Add", mm, tt_const_f32(g, "b", 1, bd, b));
    graph_value *y = tt_binary(g, "residual", "Add", x, biased);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_pass(transforms_fuse_matmul_bias, g), 1);
    cr_assert_eq(run_pass(transforms_fuse_matmul_add, g), 1);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "FusedMatMul");
    cr_assert_eq(n->n_inputs, 4);
    cr_assert_eq(n->inputs[3], x, "the residual is the Add's other input");
    cr_assert_eq(n->outputs[0], y);
    cr_assert(tt_has_fused(n, "residual"));
    tt_assert_valid(g);
    static float xs[8] = {-2.0f, -0.5f, 0.25f, 1.5f, 3.0f, -1.0f, 0.0f, 0.75f};
    graph_tensor in = tt_tensor_f32(2, h_dims, xs);
    graph_tensor r0 = {0}, r1 = {0};
    tt_run(before, &in, 1, &r0);
    tt_run(g, &in, 1, &r1);
    tt_assert_close_f32(&r1, &r0, 1e-5f);
    graph_tensor_release(&r0);
    graph_tensor_release(&r1);
    graph_free(before);
    graph_free(g);
}

/* A product with an activation already is left alone (the residual would
 * come after it), and so is an Add that broadcasts. */
Test(fuse_matmul_add, not_after_an_activation_nor_a_broadcast)
{
    static float w[16];
    fill(w, 16, 9);
    const int64_t wd[2] = {4, 4}, bd[1] = {4};
    static float b[4] = {1, 2, 3, 4};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, h_dims);
    graph_value *mm = tt_binary(g, "mm", "MatMul", x, tt_const_f32(g, "W", 2, wd, w));
    graph_value *biased = tt_binary(g, "bias", "Add", mm, tt_const_f32(g, "b", 1, bd, b));
    graph_value *act = tt_unary(g, "relu", "Relu", biased);
    graph_value *y = tt_binary(g, "residual", "Add", act, x);
    graph_value *mm2 = tt_binary(g, "mm2", "MatMul", y, tt_const_f32(g, "W2", 2, wd, w));
    graph_value *b2 = tt_binary(g, "bias2", "Add", mm2, tt_const_f32(g, "c", 1, bd, b));
    tt_output(g, tt_binary(g, "bcast", "Add", b2, tt_const_f32(g, "d", 1, bd, b)));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_matmul_bias, g), 2);
    cr_assert_eq(run_pass(transforms_fuse_activation, g), 1);
    cr_assert_eq(run_pass(transforms_fuse_matmul_add, g), 0);
    cr_assert_eq(tt_count_op(g, "Add"), 2);
    graph_free(g);
}

/* in [1, 4, ...] -> Conv 1x1 "pw" to oc (at most 6) channels, with a bias:
 * returns its output. */
static graph_value *pointwise(graph *g, graph_value *in, int64_t oc)
{
    static float w[24];
    fill(w, 24, 11);
    const int64_t wd[4] = {oc, 4, 1, 1}, bd[1] = {oc};
    const float b[6] = {0.5f, -0.25f, 0.0f, 1.0f, -1.0f, 0.125f};
    graph_value *ins[3] = {in, tt_const_f32(g, "Wpw", 4, wd, w), tt_const_f32(g, "Bpw", 1, bd, b)};
    return tt_op(g, "pw", "Conv", 3, ins);
}

/* in -> AveragePool "pool" (square kernel, strides, pads on every side):
 * returns its output. */
static graph_value *average_pool(graph *g, graph_value *in, int64_t kernel, int64_t stride,
                                 int64_t pad)
{
    graph_value *y = tt_unary(g, "pool", "AveragePool", in);
    const int64_t k[2] = {kernel, kernel}, s[2] = {stride, stride}, p[4] = {pad, pad, pad, pad};
    tt_attr_ints(g, "pool", "kernel_shape", 2, k);
    tt_attr_ints(g, "pool", "strides", 2, s);
    tt_attr_ints(g, "pool", "pads", 4, p);
    return y;
}

/* x [1, 4, 5, 5] -> Conv 1x1 to 6 channels "pw" -> AveragePool "pool"
 * (kernel, strides, pads from the caller) -> result. */
static graph *pointwise_then_pool(int64_t kernel, int64_t stride, int64_t pad)
{
    graph_value *x;
    graph *g = start(&x);
    tt_output(g, average_pool(g, pointwise(g, x, 6), kernel, stride, pad));
    tt_finish(g);
    return g;
}

/* DenseNet's transition: the pool moves before the Conv, which then reads
 * the pooled [1, 4, 2, 2] and writes the result; REF's values agree. */
Test(pool_before_conv, pointwise_conv_runs_on_the_pooled_image)
{
    graph *g = pointwise_then_pool(2, 2, 0);
    graph *before = clone_of(g);
    graph_value *y = g->outputs[0];
    cr_assert_eq(run_pass(transforms_pool_before_conv, g), 1);
    tt_assert_valid(g);
    cr_assert_eq(g->n_nodes, 2);
    cr_assert_str_eq(g->nodes[0]->op_type, "AveragePool");
    cr_assert_str_eq(g->nodes[1]->op_type, "Conv");
    cr_assert_eq(g->nodes[1]->outputs[0], y, "the Conv writes the pool's result");
    cr_assert_eq(g->nodes[0]->inputs[0], g->inputs[0]);
    const graph_shape *mid = &g->nodes[0]->outputs[0]->shape;
    cr_assert(mid->rank == 4 && mid->dims[1] == 4 && mid->dims[2] == 2 && mid->dims[3] == 2);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

/* Padding (averaged zeros: the bias would not commute where the divisor
 * counts pads), a 3x3 Conv, a pool that does not shrink the image, or a
 * Conv output another node reads: left alone. */
Test(pool_before_conv, left_alone_where_it_would_change_the_result_or_gain_nothing)
{
    graph *g = pointwise_then_pool(3, 2, 1);
    cr_assert_eq(run_pass(transforms_pool_before_conv, g), 0);
    graph_free(g);
    g = pointwise_then_pool(1, 1, 0);
    cr_assert_eq(run_pass(transforms_pool_before_conv, g), 0);
    graph_free(g);

    graph_value *x;
    g = start(&x);
    graph_value *y = tt_unary(g, "pool", "AveragePool", conv(g, x));
    const int64_t k[2] = {2, 2};
    tt_attr_ints(g, "pool", "kernel_shape", 2, k);
    tt_attr_ints(g, "pool", "strides", 2, k);
    tt_output(g, y);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_pool_before_conv, g), 0, "a 3x3 Conv moved");
    graph_free(g);

    g = pointwise_then_pool(2, 2, 0);
    tt_output(g, tt_find_node(g, "pw")->outputs[0]);
    cr_assert_eq(run_pass(transforms_pool_before_conv, g), 0, "the Conv's output is a result");
    graph_free(g);
}

/* x [1, 4, 5, 5] -> AveragePool 3x3 "pool" (stride from the caller, pad
 * 1, the divisor counting pads when include_pad) -> Conv 1x1 to oc
 * channels "pw" -> result: Inception-v2's pool projection. */
static graph *pool_then_pointwise(int64_t oc, int64_t stride, int64_t include_pad)
{
    graph_value *x;
    graph *g = start(&x);
    graph_value *p = average_pool(g, x, 3, stride, 1);
    if (include_pad)
        tt_attr_int(g, "pool", "count_include_pad", 1);
    tt_output(g, pointwise(g, p, oc));
    tt_finish(g);
    return g;
}

/* Inception-v2's pool projection: the Conv runs first, on x, and the pool
 * averages its 2 output channels instead of x's 4, with the padding
 * excluded from the divisor (ONNX's default); REF's values agree. */
Test(pool_after_conv, pool_projection_averages_the_conv_output_channels)
{
    graph *g = pool_then_pointwise(2, 1, 0);
    graph *before = clone_of(g);
    graph_value *y = g->outputs[0];
    cr_assert_eq(run_pass(transforms_pool_after_conv, g), 1);
    tt_assert_valid(g);
    cr_assert_eq(g->n_nodes, 2);
    cr_assert_str_eq(g->nodes[0]->op_type, "Conv");
    cr_assert_str_eq(g->nodes[1]->op_type, "AveragePool");
    cr_assert_eq(g->nodes[0]->inputs[0], g->inputs[0], "the Conv reads x");
    cr_assert_eq(g->nodes[1]->outputs[0], y, "the pool writes the Conv's result");
    const graph_shape *mid = &g->nodes[0]->outputs[0]->shape;
    cr_assert(mid->rank == 4 && mid->dims[1] == 2 && mid->dims[2] == 5 && mid->dims[3] == 5);
    assert_same_results(before, g, 1e-5f);
    graph_free(before);
    graph_free(g);
}

/* A divisor that counts pads (the bias would not commute at the border), a
 * pool that shrinks the image (pool_before_conv's case: the Conv is cheaper
 * after it), a Conv with as many output channels as input (nothing to
 * gain), and a pool output another node reads: left alone. */
Test(pool_after_conv, left_alone_where_it_would_change_the_result_or_gain_nothing)
{
    graph *g = pool_then_pointwise(2, 1, 1);
    cr_assert_eq(run_pass(transforms_pool_after_conv, g), 0, "pads counted in the divisor");
    graph_free(g);
    g = pool_then_pointwise(2, 2, 0);
    cr_assert_eq(run_pass(transforms_pool_after_conv, g), 0, "a shrinking pool");
    graph_free(g);
    g = pool_then_pointwise(4, 1, 0);
    cr_assert_eq(run_pass(transforms_pool_after_conv, g), 0, "as many output channels");
    graph_free(g);
    g = pool_then_pointwise(6, 1, 0);
    cr_assert_eq(run_pass(transforms_pool_after_conv, g), 0, "more output channels");
    graph_free(g);
    g = pool_then_pointwise(2, 1, 0);
    tt_output(g, tt_find_node(g, "pool")->outputs[0]);
    cr_assert_eq(run_pass(transforms_pool_after_conv, g), 0, "the pool's output is a result");
    graph_free(g);
}
