/* The conv/GEMM fusions (transforms/fuse_conv.c), each on a small graph:
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
