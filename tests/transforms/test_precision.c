/* bf16's exceptions (transforms/precision.c): which products write f32
 * (the graph's tail, a recurrence's input, a residual sum) and which stay f32 throughout
 * (inside a Loop's body), on small graphs; the walk stops at the first
 * product, so products earlier in the graph keep bf16. */
#include <criterion/criterion.h>
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

static float zeros[64];

static int64_t mark_of(const graph *g, const char *node, const char *attr)
{
    graph_node *n = tt_find_node(g, node);
    cr_assert_not_null(n, "no node '%s'", node);
    return graph_node_attr_int(n, attr, 0);
}

/* x [1, 4] -> MatMul m1 -> Relu -> MatMul m2 -> Softmax -> y: m2 feeds the
 * tail (Softmax), m1 feeds m2. */
Test(keep_f32, the_last_product_before_an_output_writes_f32)
{
    const int64_t xd[2] = {1, 4}, wd[2] = {4, 4};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, xd);
    graph_value *m1 = tt_binary(g, "m1", "MatMul", x, tt_const_f32(g, "w1", 2, wd, zeros));
    graph_value *r = tt_unary(g, "r", "Relu", m1);
    graph_value *m2 = tt_binary(g, "m2", "MatMul", r, tt_const_f32(g, "w2", 2, wd, zeros));
    tt_output(g, tt_unary(g, "s", "Softmax", m2));
    tt_finish(g);
    int changes = -1;
    OK(transforms_keep_f32(g, NULL, &changes));
    cr_assert_eq(changes, 1);
    cr_assert_eq(mark_of(g, "m2", TRANSFORMS_ATTR_F32_OUTPUT), 1);
    cr_assert_eq(mark_of(g, "m1", TRANSFORMS_ATTR_F32_OUTPUT), 0, "m1 feeds a product");
    cr_assert_eq(mark_of(g, "m1", TRANSFORMS_ATTR_F32), 0);
    /* Idempotent: a second run changes nothing. */
    OK(transforms_keep_f32(g, NULL, &changes));
    cr_assert_eq(changes, 0);
    tt_assert_valid(g);
    graph_free(g);
}

/* x [2, 1, 4] -> MatMul m -> LSTM (hidden 2) -> Y, and x -> MatMul p ->
 * MatMul q -> z: m feeds the recurrence, q the tail, p neither. */
Test(keep_f32, a_product_feeding_a_recurrence_writes_f32)
{
    const int64_t xd[3] = {2, 1, 4}, wd[2] = {4, 4}, lw[3] = {1, 8, 4}, lr[3] = {1, 8, 2};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 3, xd);
    graph_value *m = tt_binary(g, "m", "MatMul", x, tt_const_f32(g, "wm", 2, wd, zeros));
    graph_value *ins[3] = {m, tt_const_f32(g, "W", 3, lw, zeros),
                           tt_const_f32(g, "R", 3, lr, zeros)};
    graph_value *y = tt_op(g, "lstm", "LSTM", 3, ins);
    tt_attr_int(g, "lstm", "hidden_size", 2);
    tt_output(g, y);
    graph_value *p = tt_binary(g, "p", "MatMul", x, tt_const_f32(g, "wp", 2, wd, zeros));
    tt_output(g, tt_binary(g, "q", "MatMul", p, tt_const_f32(g, "wq", 2, wd, zeros)));
    tt_finish(g);
    int changes = -1;
    OK(transforms_keep_f32(g, NULL, &changes));
    cr_assert_eq(mark_of(g, "m", TRANSFORMS_ATTR_F32_OUTPUT), 1, "m feeds the LSTM");
    cr_assert_eq(mark_of(g, "q", TRANSFORMS_ATTR_F32_OUTPUT), 1, "q writes a result");
    cr_assert_eq(mark_of(g, "p", TRANSFORMS_ATTR_F32_OUTPUT), 0, "p feeds a product only");
    cr_assert_eq(changes, 2);
    graph_free(g);
}

/* An If whose branches read, from the outer scope, the output of a chain
 * of many outer nodes (more than a branch has): the walk back from a
 * branch's result stays in the branch (it once read past the branch's
 * node array: ASan, and a heap corruption in a real VAD model). The outer
 * MatMul still writes f32: the If feeds the model's output. */
Test(keep_f32, a_branch_reading_outer_values_stays_in_its_graph)
{
    const int64_t xd[2] = {1, 4}, wd[2] = {4, 4};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, xd);
    graph_value *cond = tt_input(g, "cond", RN_BOOL, 0, NULL);
    graph_value *v = tt_binary(g, "m", "MatMul", x, tt_const_f32(g, "wm", 2, wd, zeros));
    char name[16];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "r%d", i);
        v = tt_unary(g, name, "Relu", v);
    }
    graph *branches[2];
    for (int b = 0; b < 2; b++) {
        OK(graph_create(b ? "else" : "then", &branches[b]));
        branches[b]->parent = g;
        branches[b]->opset = 13;
        tt_output(branches[b], tt_unary(branches[b], b ? "e_out" : "t_out", b ? "Neg" : "Abs", v));
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
    int changes = -1;
    OK(transforms_keep_f32(g, NULL, &changes));
    cr_assert_eq(mark_of(g, "m", TRANSFORMS_ATTR_F32_OUTPUT), 1);
    cr_assert_eq(changes, 1);
    graph_free(g);
}

/* A runnel FusedMatMul of x [n, 4] by constant weights, with a residual
 * (input 3) when `residual` is not NULL. */
static graph_value *fused_matmul(graph *g, const char *name, graph_value *x, graph_value *residual)
{
    const int64_t wd[2] = {4, 4}, bd[1] = {4};
    char w[32], b[32];
    snprintf(w, sizeof w, "%s_w", name);
    snprintf(b, sizeof b, "%s_b", name);
    graph_value *ins[4] = {x, tt_const_f32(g, w, 2, wd, zeros), tt_const_f32(g, b, 1, bd, zeros),
                           residual};
    graph_value *out;
    OK(graph_add_value(g, name, &out));
    OK(graph_add_node(g, name, "runnel", "FusedMatMul", 1, residual != NULL ? 4 : 3, ins, 1, &out,
                      NULL));
    return out;
}

/* x [2, 4] -> FusedMatMul a (no residual) -> FusedMatMul r (+ residual x)
 * -> MatMul m -> Softmax -> y: r writes f32 although a product reads it
 * (the residual stream), a does not, m does (the tail). */
Test(keep_f32, a_product_adding_a_residual_writes_f32)
{
    const int64_t xd[2] = {2, 4}, wd[2] = {4, 4};
    graph *g = tt_graph();
    graph_value *x = tt_input(g, "x", RN_F32, 2, xd);
    graph_value *a = fused_matmul(g, "a", x, NULL);
    graph_value *r = fused_matmul(g, "r", a, x);
    graph_value *m = tt_binary(g, "m", "MatMul", r, tt_const_f32(g, "wm", 2, wd, zeros));
    tt_output(g, tt_unary(g, "s", "Softmax", m));
    tt_finish(g);
    int changes = -1;
    OK(transforms_keep_f32(g, NULL, &changes));
    cr_assert_eq(changes, 2);
    cr_assert_eq(mark_of(g, "r", TRANSFORMS_ATTR_F32_OUTPUT), 1, "r adds a residual");
    cr_assert_eq(mark_of(g, "m", TRANSFORMS_ATTR_F32_OUTPUT), 1, "m feeds the tail");
    cr_assert_eq(mark_of(g, "a", TRANSFORMS_ATTR_F32_OUTPUT), 0, "a feeds a product");
    tt_assert_valid(g);
    graph_free(g);
}
