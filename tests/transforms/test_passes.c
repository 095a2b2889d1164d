/* The passes one at a time: each test builds a small graph with the graph
 * API, runs one pass and checks the structure it leaves (node counts, op
 * types, rewired edges, result names, fused names) and, where values can
 * change, that REF computes the same results before and after. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/transforms/transforms_test_util.h"
#include "transforms/transforms.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static const int64_t dims23[2] = {2, 3};

/* -3 .. 2.5 in steps of 0.5 (negatives for Relu, no zero divisor at odd i). */
static float data23[6] = {-3.0f, -1.5f, 0.5f, 1.0f, 2.5f, -0.5f};

static int run_pass(transforms_pass_fn fn, graph *g, void *ctx)
{
    int changes = -1;
    OK(fn(g, ctx, &changes));
    return changes;
}

/* Runs g and its transformed version on REF with the same single input and
 * compares every result. */
static void assert_same_results(const graph *before, const graph *after, float tol)
{
    cr_assert_eq(before->n_outputs, after->n_outputs);
    graph_tensor in = tt_tensor_f32(2, dims23, data23);
    graph_tensor a[4] = {{0}}, b[4] = {{0}};
    tt_run(before, &in, before->n_inputs, a);
    tt_run(after, &in, after->n_inputs, b);
    for (int o = 0; o < before->n_outputs; o++) {
        tt_assert_close_f32(&b[o], &a[o], tol);
        graph_tensor_release(&a[o]);
        graph_tensor_release(&b[o]);
    }
}

static graph *clone_of(const graph *g)
{
    graph *c;
    OK(graph_clone(g, &c));
    return c;
}

/* ---- identity removal ---- */

Test(remove_identity, readers_read_the_input)
{
    /* x -> Relu r -> Identity id -> Sigmoid s (result) */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    graph_value *id = tt_unary(g, "id", "Identity", r);
    tt_output(g, tt_unary(g, "s", "Sigmoid", id));
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 1);
    cr_assert_eq(tt_count_op(g, "Identity"), 0);
    cr_assert_eq(g->n_nodes, 2);
    cr_assert_eq(tt_find_node(g, "s")->inputs[0], r, "Sigmoid must read the Relu's output");
    graph_node *relu = tt_find_node(g, "r");
    cr_assert(tt_has_fused(relu, "r") && tt_has_fused(relu, "id"),
              "the Identity's name moves to the node that now stands for it");
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}

Test(remove_identity, result_keeps_its_name)
{
    /* x -> Relu r -> Identity "y" (result): the Relu writes "y". */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    graph_value *y = tt_unary(g, "y", "Identity", r);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 1);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_eq(g->outputs[0], y);
    cr_assert_str_eq(g->outputs[0]->name, "y");
    graph_node *relu = tt_find_node(g, "r");
    cr_assert_eq(y->producer, relu, "the Relu must write the result directly");
    cr_assert(tt_has_fused(relu, "y"));
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}

Test(remove_identity, other_readers_of_input_follow_the_result)
{
    /* r feeds both the Identity result "y" and a Sigmoid result "s": after the
     * rewrite the Relu writes "y" and the Sigmoid reads "y". */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    graph_value *y = tt_unary(g, "y", "Identity", r);
    graph_value *s = tt_unary(g, "s", "Sigmoid", r);
    tt_output(g, y);
    tt_output(g, s);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 1);
    cr_assert_eq(tt_find_node(g, "s")->inputs[0], y);
    cr_assert_str_eq(g->outputs[0]->name, "y");
    cr_assert_str_eq(g->outputs[1]->name, "s");
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}

/* x -> Relu r -> Dropout d (outputs y and the mask m) -> Sigmoid s
 * (result), with training_mode = train (NULL: absent); returns the graph
 * and, in *mask, the mask value. */
static graph *dropout_graph(const bool *train, graph_value **mask)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    graph_value *ratio = tt_const_f32(g, "ratio", 0, NULL, (float[]){0.5f});
    graph_value *t = NULL;
    if (train != NULL) {
        uint8_t v = *train;
        t = tt_const(g, "t", RN_BOOL, 0, NULL, &v);
    }
    graph_value *outs[2];
    OK(graph_add_value(g, "y", &outs[0]));
    OK(graph_add_value(g, "m", &outs[1]));
    graph_value *ins[3] = {r, ratio, t};
    OK(graph_add_node(g, "d", "", "Dropout", g->opset, train != NULL ? 3 : 2, ins, 2, outs, NULL));
    tt_output(g, tt_unary(g, "s", "Sigmoid", outs[0]));
    *mask = outs[1];
    return g;
}

Test(remove_identity, inference_dropout_with_an_unread_mask_goes)
{
    bool off = false;
    const bool *modes[2] = {NULL, &off};
    for (int i = 0; i < 2; i++) {
        graph_value *mask;
        graph *g = dropout_graph(modes[i], &mask);
        tt_finish(g);
        graph *before = clone_of(g);
        cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 1);
        cr_assert_eq(tt_count_op(g, "Dropout"), 0);
        cr_assert_eq(tt_find_node(g, "s")->inputs[0], tt_find_node(g, "r")->outputs[0]);
        tt_assert_valid(g);
        assert_same_results(before, g, 0);
        graph_free(before);
        graph_free(g);
    }
}

Test(remove_identity, dropout_stays_when_its_mask_is_read_or_it_trains)
{
    graph_value *mask;
    graph *g = dropout_graph(NULL, &mask);
    tt_output(g, mask);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 0, "the mask is a result");
    cr_assert_eq(tt_count_op(g, "Dropout"), 1);
    graph_free(g);
    bool on = true;
    g = dropout_graph(&on, &mask);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 0, "training_mode is true");
    cr_assert_eq(tt_count_op(g, "Dropout"), 1);
    graph_free(g);
}

Test(remove_identity, parameter_to_result_copy_stays)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    tt_output(g, tt_unary(g, "y", "Identity", x));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 0);
    cr_assert_eq(tt_count_op(g, "Identity"), 1);
    graph_free(g);
}

Test(remove_identity, result_to_result_copy_stays)
{
    /* Two results, "r" and its copy "y": both names must survive. */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    tt_output(g, r);
    tt_output(g, tt_unary(g, "y", "Identity", r));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 0);
    cr_assert_eq(g->n_nodes, 2);
    graph_free(g);
}

Test(remove_identity, chain_goes_in_one_run)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *a = tt_unary(g, "a", "Identity", x);
    graph_value *b = tt_unary(g, "b", "Identity", a);
    tt_output(g, tt_unary(g, "s", "Sigmoid", b));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 2);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_eq(g->nodes[0]->inputs[0], x);
    tt_assert_valid(g);
    graph_free(g);
}

Test(remove_identity, subgraph_reads_are_rewired)
{
    /* An If whose branches read the Identity's output from the outer scope:
     * after the pass they read the Identity's input. */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *cond = tt_input(g, "cond", RN_BOOL, 0, NULL);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    graph_value *id = tt_unary(g, "id", "Identity", r);
    graph *branches[2];
    for (int b = 0; b < 2; b++) {
        OK(graph_create(b ? "else" : "then", &branches[b]));
        branches[b]->parent = g;
        branches[b]->opset = 13;
        graph_value *o = tt_unary(branches[b], b ? "e_out" : "t_out", b ? "Neg" : "Abs", id);
        tt_output(branches[b], o);
    }
    graph_value *out;
    OK(graph_add_value(g, "if_out", &out));
    graph_node *ifn;
    OK(graph_add_node(g, "if", "", "If", 13, 1, &cond, 1, &out, &ifn));
    graph_attr then_a = {.name = strdup("then_branch"), .type = GRAPH_ATTR_GRAPH, .g = branches[0]};
    graph_attr else_a = {.name = strdup("else_branch"), .type = GRAPH_ATTR_GRAPH, .g = branches[1]};
    OK(graph_node_add_attr(ifn, &then_a));
    OK(graph_node_add_attr(ifn, &else_a));
    tt_output(g, out);
    OK(graph_sort(g));

    cr_assert_eq(run_pass(transforms_remove_identity, g, NULL), 1);
    cr_assert_eq(tt_count_op(g, "Identity"), 0);
    cr_assert_eq(branches[0]->nodes[0]->inputs[0], r);
    cr_assert_eq(branches[1]->nodes[0]->inputs[0], r);
    graph_free(g);
}

/* ---- Relu fusion ---- */

Test(fuse_relu_relu, two_become_one)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r1 = tt_unary(g, "r1", "Relu", x);
    graph_value *r2 = tt_unary(g, "r2", "Relu", r1);
    tt_output(g, r2);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_fuse_relu_relu, g, NULL), 1);
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "Relu");
    cr_assert_str_eq(n->name, "r2");
    cr_assert_eq(n->inputs[0], x);
    cr_assert_eq(n->outputs[0], r2);
    cr_assert_str_eq(g->outputs[0]->name, "r2");
    cr_assert(tt_has_fused(n, "r1") && tt_has_fused(n, "r2"));
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}

Test(fuse_relu_relu, chain_of_three_in_one_run)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *v = x;
    v = tt_unary(g, "r1", "Relu", v);
    v = tt_unary(g, "r2", "Relu", v);
    v = tt_unary(g, "r3", "Relu", v);
    tt_output(g, v);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_relu_relu, g, NULL), 2);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_eq(g->nodes[0]->inputs[0], x);
    for (int i = 1; i <= 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        cr_assert(tt_has_fused(g->nodes[0], name), "fused names lack %s", name);
    }
    graph_free(g);
}

Test(fuse_relu_relu, first_relu_with_another_reader_stays)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r1 = tt_unary(g, "r1", "Relu", x);
    tt_output(g, tt_unary(g, "r2", "Relu", r1));
    tt_output(g, tt_unary(g, "s", "Sigmoid", r1));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_relu_relu, g, NULL), 0);
    cr_assert_eq(g->n_nodes, 3);
    graph_free(g);
}

Test(fuse_relu_relu, first_relu_that_is_a_result_stays)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r1 = tt_unary(g, "r1", "Relu", x);
    tt_output(g, r1);
    tt_output(g, tt_unary(g, "r2", "Relu", r1));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_relu_relu, g, NULL), 0);
    cr_assert_eq(g->n_nodes, 2);
    graph_free(g);
}

Test(fuse_relu_relu, other_ops_untouched)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    tt_output(g, tt_unary(g, "r", "Relu", tt_unary(g, "s", "Sigmoid", x)));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fuse_relu_relu, g, NULL), 0);
    cr_assert_eq(g->n_nodes, 2);
    graph_free(g);
}

/* ---- Div decomposition ---- */

Test(decompose_divide, float_div_becomes_mul_by_pow)
{
    /* y = x / c, c = [2, 4, -8] broadcast over rows */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    const int64_t d3[1] = {3};
    graph_value *c = tt_const_f32(g, "c", 1, d3, (const float[]){2.0f, 4.0f, -8.0f});
    graph_value *y = tt_binary(g, "div", "Div", x, c);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_decompose_divide, g, NULL), 1);
    cr_assert_eq(tt_count_op(g, "Div"), 0);
    cr_assert_eq(g->n_nodes, 2);
    graph_node *mul = tt_find_node(g, "div");
    cr_assert_not_null(mul, "the Mul keeps the Div's name");
    cr_assert_str_eq(mul->op_type, "Mul");
    cr_assert_eq(mul->outputs[0], y);
    cr_assert_eq(mul->inputs[0], x);
    graph_node *pow = tt_find_node(g, "div/reciprocal");
    cr_assert_not_null(pow);
    cr_assert_str_eq(pow->op_type, "Pow");
    cr_assert_eq(pow->inputs[0], c);
    cr_assert_eq(mul->inputs[1], pow->outputs[0]);
    const graph_tensor *e = pow->inputs[1]->constant;
    cr_assert_not_null(e);
    cr_assert_eq(e->type, RN_F32);
    cr_assert_eq(*(const float *)e->data, -1.0f);
    cr_assert(mul->n_fused == 1 && tt_has_fused(mul, "div"));
    cr_assert(pow->n_fused == 1 && tt_has_fused(pow, "div"));
    cr_assert_eq(g->nodes[0], pow, "the graph stays sorted");
    tt_assert_valid(g);
    assert_same_results(before, g, 1e-6f);
    graph_free(before);
    graph_free(g);
}

Test(decompose_divide, integer_div_stays)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_I32, 2, dims23);
    graph_value *y = tt_input(g, "y", RN_I32, 2, dims23);
    tt_output(g, tt_binary(g, "div", "Div", x, y));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_decompose_divide, g, NULL), 0);
    cr_assert_str_eq(g->nodes[0]->op_type, "Div");
    graph_free(g);
}

/* ---- constant folding ---- */

/* x + ConstantOfShape(shape=[2,3], value=0.25) * 4 */
static graph *folding_graph(void)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    const int64_t d1[1] = {2};
    graph_value *shape = tt_const_i64(g, "shape", 1, d1, dims23);
    graph_value *fill = tt_unary(g, "fill", "ConstantOfShape", shape);
    tt_attr_tensor_f32(g, "fill", "value", 0.25f);
    graph_value *four = tt_const_f32(g, "four", 0, NULL, (const float[]){4.0f});
    graph_value *w = tt_binary(g, "w", "Mul", fill, four);
    tt_output(g, tt_binary(g, "y", "Add", x, w));
    tt_finish(g);
    return g;
}

Test(constant_folding, without_evaluator_folds_nothing_but_shapes)
{
    graph *g = folding_graph();
    transforms_fold_options o = {0};
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 0);
    cr_assert_eq(run_pass(transforms_fold_constants, g, NULL), 0);
    cr_assert_eq(g->n_nodes, 3);
    graph_free(g);
}

Test(constant_folding, chain_folds_through_the_evaluator)
{
    graph *g = folding_graph();
    graph *before = clone_of(g);
    transforms_fold_options o = {.eval = tt_ref_eval, .eval_ctx = tt_registry()};
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 2, "ConstantOfShape and Mul fold");
    cr_assert_eq(g->n_nodes, 1);
    graph_node *add = g->nodes[0];
    cr_assert_str_eq(add->op_type, "Add");
    const graph_value *w = add->inputs[1];
    cr_assert_str_eq(w->name, "w", "the folded value keeps its name");
    cr_assert_not_null(w->constant);
    cr_assert_eq(w->producer, NULL);
    cr_assert_eq(w->constant->type, RN_F32);
    cr_assert_eq(w->constant->rank, 2);
    cr_assert_eq(w->constant->dims[0], 2);
    cr_assert_eq(w->constant->dims[1], 3);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((const float *)w->constant->data)[i], 1.0f, "0.25 * 4 at %d", i);
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}

Test(constant_folding, size_bound_is_respected)
{
    /* ConstantOfShape([1024, 1024]) of f32 is 4 MiB: over a 1 MiB bound. */
    graph *g = tt_graph();
    const int64_t d1[1] = {2}, big[2] = {1024, 1024};
    graph_value *shape = tt_const_i64(g, "shape", 1, d1, big);
    graph_value *fill = tt_unary(g, "fill", "ConstantOfShape", shape);
    tt_attr_tensor_f32(g, "fill", "value", 1.0f);
    graph_value *x = tt_input(g, "x", RN_F32, 2, big);
    tt_output(g, tt_binary(g, "y", "Add", x, fill));
    tt_finish(g);
    transforms_fold_options o = {
        .eval = tt_ref_eval, .eval_ctx = tt_registry(), .max_tensor_bytes = 1 << 20};
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 0);
    cr_assert_eq(tt_count_op(g, "ConstantOfShape"), 1);
    o.max_tensor_bytes = 0; /* the default, 64 MiB */
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 1);
    cr_assert_eq(tt_count_op(g, "ConstantOfShape"), 0);
    graph_free(g);
}

Test(constant_folding, shape_and_size_of_static_shapes_need_no_evaluator)
{
    /* Shape(x) of x [2,3,4,5] with start 1, end -1: [3, 4]; Size(x): 120. */
    graph *g = tt_graph();
    const int64_t d4[4] = {2, 3, 4, 5};
    graph_value *x = tt_input(g, "x", RN_F32, 4, d4);
    graph_value *s = tt_unary(g, "s", "Shape", x);
    g->nodes[0]->opset = 15;
    tt_attr_int(g, "s", "start", 1);
    tt_attr_int(g, "s", "end", -1);
    graph_value *n = tt_unary(g, "n", "Size", x);
    tt_output(g, s);
    tt_output(g, n);
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fold_constants, g, NULL), 2);
    cr_assert_eq(g->n_nodes, 0);
    cr_assert_not_null(s->constant);
    cr_assert_eq(s->constant->type, RN_I64);
    cr_assert_eq(s->constant->rank, 1);
    cr_assert_eq(s->constant->dims[0], 2);
    cr_assert_eq(((const int64_t *)s->constant->data)[0], 3);
    cr_assert_eq(((const int64_t *)s->constant->data)[1], 4);
    cr_assert_not_null(n->constant);
    cr_assert_eq(n->constant->rank, 0);
    cr_assert_eq(*(const int64_t *)n->constant->data, 120);
    cr_assert_str_eq(g->outputs[0]->name, "s");
    cr_assert_str_eq(g->outputs[1]->name, "n");
    graph_free(g);
}

Test(constant_folding, shape_of_dynamic_value_stays)
{
    graph *g = tt_graph();
    const int64_t d[2] = {RN_DIM_DYNAMIC, 3};
    graph_value *x = tt_input(g, "x", RN_F32, 2, d);
    tt_output(g, tt_unary(g, "s", "Shape", x));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_fold_constants, g, NULL), 0);
    cr_assert_eq(g->n_nodes, 1);
    graph_free(g);
}

Test(constant_folding, shape_feeds_a_folded_chain)
{
    /* ConstantOfShape(Shape(x)) + x: Shape folds without a kernel, then the
     * evaluator folds ConstantOfShape in the same run. */
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *s = tt_unary(g, "s", "Shape", x);
    graph_value *fill = tt_unary(g, "fill", "ConstantOfShape", s);
    tt_attr_tensor_f32(g, "fill", "value", 2.0f);
    tt_output(g, tt_binary(g, "y", "Add", x, fill));
    tt_finish(g);
    graph *before = clone_of(g);
    transforms_fold_options o = {.eval = tt_ref_eval, .eval_ctx = tt_registry()};
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 2);
    cr_assert_eq(g->n_nodes, 1);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}

Test(constant_folding, dropout_is_never_folded)
{
    graph *g = tt_graph();
    graph_value *c = tt_const_f32(g, "c", 2, dims23, data23);
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    tt_output(g, tt_binary(g, "y", "Add", x, tt_unary(g, "d", "Dropout", c)));
    tt_finish(g);
    transforms_fold_options o = {.eval = tt_ref_eval, .eval_ctx = tt_registry()};
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 0);
    cr_assert_eq(tt_count_op(g, "Dropout"), 1);
    graph_free(g);
}

static int evaluator_calls;

static rn_status refusing_eval(const graph_node *node, const graph_tensor *inputs,
                               graph_tensor *outputs, void *ctx)
{
    (void)inputs;
    (void)outputs;
    evaluator_calls++;
    return rn_set_error(*(rn_status *)ctx, "node '%s': refused", node->name);
}

Test(constant_folding, unsupported_by_the_evaluator_is_skipped)
{
    graph *g = folding_graph();
    rn_status answer = RN_UNSUPPORTED;
    transforms_fold_options o = {.eval = refusing_eval, .eval_ctx = &answer};
    evaluator_calls = 0;
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 0);
    cr_assert_eq(evaluator_calls, 1, "only ConstantOfShape has constant inputs");
    cr_assert_eq(g->n_nodes, 3);
    graph_free(g);
}

Test(constant_folding, evaluator_failure_stops_the_pass)
{
    graph *g = folding_graph();
    rn_status answer = RN_INTERNAL;
    transforms_fold_options o = {.eval = refusing_eval, .eval_ctx = &answer};
    int changes = 0;
    cr_assert_eq(transforms_fold_constants(g, &o, &changes), RN_INTERNAL);
    cr_assert(strstr(rn_last_error(), "fill") != NULL, "message: %s", rn_last_error());
    graph_free(g);
}

Test(constant_folding, folded_result_keeps_its_name)
{
    /* The whole graph is constant: the result becomes a constant value. */
    graph *g = tt_graph();
    const int64_t d1[1] = {2};
    graph_value *shape = tt_const_i64(g, "shape", 1, d1, dims23);
    graph_value *y = tt_unary(g, "y", "ConstantOfShape", shape);
    tt_attr_tensor_f32(g, "y", "value", 3.0f);
    tt_output(g, y);
    tt_finish(g);
    transforms_fold_options o = {.eval = tt_ref_eval, .eval_ctx = tt_registry()};
    cr_assert_eq(run_pass(transforms_fold_constants, g, &o), 1);
    cr_assert_eq(g->n_nodes, 0);
    cr_assert_eq(g->outputs[0], y);
    cr_assert_not_null(y->constant);
    cr_assert_eq(((const float *)y->constant->data)[5], 3.0f);
    tt_assert_valid(g);
    graph_free(g);
}

/* ---- dead-node elimination ---- */

Test(eliminate_dead_nodes, unread_branch_and_constants_go)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *c = tt_const_f32(g, "c", 2, dims23, data23);
    tt_unary(g, "dead_relu", "Relu", tt_binary(g, "dead_add", "Add", x, c));
    tt_output(g, tt_unary(g, "s", "Sigmoid", x));
    tt_finish(g);
    int values = g->n_values;
    int changes = run_pass(transforms_eliminate_dead_nodes, g, NULL);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_str_eq(g->nodes[0]->name, "s");
    cr_assert_null(graph_find_value(g, "c", false), "the unread constant goes too");
    cr_assert_eq(changes, 2 + (values - g->n_values));
    cr_assert_eq(run_pass(transforms_eliminate_dead_nodes, g, NULL), 0);
    tt_assert_valid(g);
    graph_free(g);
}

/* ---- common subexpression elimination ---- */

/* x -> Mul(x, c1) -> Relu and x -> Mul(x, c2) -> Relu with c1, c2 two
 * constants of equal bytes (as constant folding leaves a model's
 * ConstantOfShape weights): one Mul and one Relu stay, and both results
 * read them (through Sigmoids, so that no result is a merged node's). */
Test(merge_duplicates, equal_constants_merge_a_chain)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *c1 = tt_const_f32(g, "c1", 2, dims23, data23);
    graph_value *c2 = tt_const_f32(g, "c2", 2, dims23, data23);
    graph_value *r1 = tt_unary(g, "r1", "Relu", tt_binary(g, "m1", "Mul", x, c1));
    graph_value *r2 = tt_unary(g, "r2", "Relu", tt_binary(g, "m2", "Mul", x, c2));
    tt_output(g, tt_unary(g, "s1", "Sigmoid", r1));
    tt_output(g, tt_unary(g, "s2", "Tanh", r2));
    tt_finish(g);
    graph *before = clone_of(g);

    cr_assert_eq(run_pass(transforms_merge_duplicates, g, NULL), 2);
    cr_assert_eq(tt_count_op(g, "Mul"), 1);
    cr_assert_eq(tt_count_op(g, "Relu"), 1);
    graph_node *m = tt_find_node(g, "m1"), *r = tt_find_node(g, "r1");
    cr_assert(m != NULL && r != NULL, "the first of each pair stays");
    cr_assert(tt_has_fused(m, "m2") && tt_has_fused(r, "r2"));
    cr_assert_eq(tt_find_node(g, "s1")->inputs[0], r->outputs[0]);
    cr_assert_eq(tt_find_node(g, "s2")->inputs[0], r->outputs[0]);
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    cr_assert_eq(run_pass(transforms_merge_duplicates, g, NULL), 0, "one run is the fixed point");
    graph_free(before);
    graph_free(g);
}

Test(merge_duplicates, different_constants_or_attributes_stay)
{
    float other[6] = {-3.0f, -1.5f, 0.5f, 1.0f, 2.5f, -0.25f};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *c1 = tt_const_f32(g, "c1", 2, dims23, data23);
    graph_value *c2 = tt_const_f32(g, "c2", 2, dims23, other);
    tt_output(g, tt_unary(g, "s1", "Sigmoid", tt_binary(g, "m1", "Mul", x, c1)));
    tt_output(g, tt_unary(g, "s2", "Tanh", tt_binary(g, "m2", "Mul", x, c2)));
    /* Same input, other attributes: Softmax over axis 0 and over axis 1. */
    tt_unary(g, "sm0", "Softmax", x);
    tt_unary(g, "sm1", "Softmax", x);
    tt_attr_int(g, "sm0", "axis", 0);
    tt_attr_int(g, "sm1", "axis", 1);
    tt_output(g, tt_unary(g, "e0", "Exp", graph_find_value(g, "sm0", false)));
    tt_output(g, tt_unary(g, "e1", "Neg", graph_find_value(g, "sm1", false)));
    tt_finish(g);
    int nodes = g->n_nodes;
    cr_assert_eq(run_pass(transforms_merge_duplicates, g, NULL), 0);
    cr_assert_eq(g->n_nodes, nodes);
    graph_free(g);
}

Test(merge_duplicates, results_and_random_ops_stay)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    /* Two equal Relus, each a result the user reads by its name. */
    tt_output(g, tt_unary(g, "r1", "Relu", x));
    tt_output(g, tt_unary(g, "r2", "Relu", x));
    /* Two draws of one distribution are two draws. */
    tt_output(g, tt_unary(g, "a1", "Abs", tt_unary(g, "u1", "RandomUniformLike", x)));
    tt_output(g, tt_unary(g, "a2", "Neg", tt_unary(g, "u2", "RandomUniformLike", x)));
    tt_finish(g);
    cr_assert_eq(run_pass(transforms_merge_duplicates, g, NULL), 0);
    cr_assert_eq(tt_count_op(g, "Relu"), 2);
    cr_assert_eq(tt_count_op(g, "RandomUniformLike"), 2);
    graph_free(g);
}

/* A duplicate read by the other's reader too (x -> Relu r1, Relu r2 -> Add
 * r1 + r2): the Add reads the kept Relu twice. */
Test(merge_duplicates, a_reader_of_both_reads_one_twice)
{
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims23);
    graph_value *r1 = tt_unary(g, "r1", "Relu", x), *r2 = tt_unary(g, "r2", "Relu", x);
    tt_output(g, tt_binary(g, "add", "Add", r1, r2));
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_pass(transforms_merge_duplicates, g, NULL), 1);
    graph_node *add = tt_find_node(g, "add");
    cr_assert_eq(add->inputs[0], r1);
    cr_assert_eq(add->inputs[1], r1);
    tt_assert_valid(g);
    assert_same_results(before, g, 0);
    graph_free(before);
    graph_free(g);
}
