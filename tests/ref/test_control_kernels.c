/* REF control flow: If, Loop and Scan run their bodies as nested plans.
 * Each test builds a small graph by hand, compiles it with the generic plan
 * over REF's registry (which runs the transforms-free path: shape inference,
 * kernel choice, prepare) and runs it synchronously or on the task DAG.
 * Expected values are worked out by hand in the comments. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "plugins/api/plan.h"
#include "plugins/api/run.h"
#include "plugins/ref/ref.h"
#include "tests/ref/node_case.h"

static const int64_t d3[] = {3};

/* ---- If ---- */

/* main(c: bool, x: f32[3]): a = Add(x, x); r = If(c) then { Neg(a) } else
 * { x }. The If reads a only inside its then-branch: a must be computed
 * before it (a DAG edge from the implicit input) and kept until it ran. */
static graph *if_model(void)
{
    graph *g = pc_graph("main", NULL, 17);
    graph_value *c = pc_input(g, "c", GRAPH_KIND_TENSOR, RN_BOOL, 0, NULL);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 1, d3);
    graph_value *a = pc_value(g, "a"), *r = pc_value(g, "r");
    graph *then_g = pc_graph("then", g, 17), *else_g = pc_graph("else", g, 17);
    graph_value *t = pc_value(then_g, "t");
    pc_node(then_g, "neg", "Neg", 1, &a, 1, &t);
    graph_add_output(then_g, t);
    graph_add_output(else_g, x);
    /* The If comes first in file order: the sort must place it after add. */
    graph_node *n = pc_node(g, "if", "If", 1, &c, 1, &r);
    pc_attr(n, attr_graph("then_branch", then_g));
    pc_attr(n, attr_graph("else_branch", else_g));
    pc_node(g, "add", "Add", 2, (graph_value *[]){x, x}, 1, &a);
    graph_add_output(g, r);
    return g;
}

static void run_if(bool async)
{
    graph *g = if_model();
    plan_case r;
    cr_assert_eq(pc_compile(g, 2, &r), RN_OK, "%s", rn_last_error());
    static const float x[] = {1, -2, 3};
    for (int round = 0; round < 4; round++) {
        uint8_t c = round % 2 == 0;
        pc_set_input(&r, 0, tensor_view(RN_BOOL, 0, NULL, &c));
        pc_set_input(&r, 1, tensor_view(RN_F32, 1, d3, x));
        if (async) {
            cr_assert_eq(plugin_request_start_async(r.req), RN_OK, "%s", rn_last_error());
            cr_assert_eq(plugin_run_op_wait(r.req), RN_OK, "%s", rn_last_error());
        } else {
            cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
        }
        /* then: -(x + x) = -2, 4, -6; else: x */
        static const float then_want[] = {-2, 4, -6};
        expect_f32_output(&r, 0, 1, d3, c ? then_want : x);
    }
    pc_free(&r);
    graph_free(g);
}

Test(control, if_takes_the_branch_and_reads_outer_values)
{
    run_if(false);
}

Test(control, if_on_the_task_dag_waits_for_its_implicit_inputs)
{
    run_if(true);
}

/* ---- Loop ---- */

/* main(m: i64?, v0: f32[1]): v, s = Loop(m, cond, v0) body(i, c, v) {
 *   c_out = Identity(c) or Less(i, limit); v_out = Add(v, v); s = Identity(v) }
 * `stop_at` >= 0 makes the body's condition i < stop_at. */
static graph *loop_model(bool with_m, int64_t stop_at)
{
    graph *g = pc_graph("main", NULL, 17);
    static const int64_t d1[] = {1};
    graph_value *m = with_m ? pc_input(g, "m", GRAPH_KIND_TENSOR, RN_I64, 0, NULL) : NULL;
    graph_value *v0 = pc_input(g, "v0", GRAPH_KIND_TENSOR, RN_F32, 1, d1);
    uint8_t yes = 1;
    graph_value *cond = pc_constant(g, "cond", RN_BOOL, 0, NULL, &yes);
    graph_value *v = pc_value(g, "v"), *s = pc_value(g, "s");
    graph *b = pc_graph("body", g, 17);
    graph_value *i = pc_input(b, "i", GRAPH_KIND_TENSOR, RN_I64, 0, NULL);
    graph_value *c = pc_input(b, "c", GRAPH_KIND_TENSOR, RN_BOOL, 0, NULL);
    graph_value *vi = pc_value(b, "vi");
    graph_add_input(b, vi); /* undeclared: seeded from the Loop's input */
    graph_value *c_out = pc_value(b, "c_out"), *v_out = pc_value(b, "v_out"),
                *s_out = pc_value(b, "s_out");
    if (stop_at >= 0) {
        graph_value *lim = pc_constant(b, "lim", RN_I64, 0, NULL, &stop_at);
        pc_node(b, "less", "Less", 2, (graph_value *[]){i, lim}, 1, &c_out);
    } else {
        pc_node(b, "keep", "Identity", 1, &c, 1, &c_out);
    }
    pc_node(b, "double", "Add", 2, (graph_value *[]){vi, vi}, 1, &v_out);
    pc_node(b, "scan", "Identity", 1, &vi, 1, &s_out);
    s_out->type = RN_F32; /* declared, so that an empty stack has its shape */
    s_out->shape.rank = 1;
    s_out->shape.dims[0] = 1;
    graph_add_output(b, c_out);
    graph_add_output(b, v_out);
    graph_add_output(b, s_out);
    graph_node *n =
        pc_node(g, "loop", "Loop", 3, (graph_value *[]){m, cond, v0}, 2, (graph_value *[]){v, s});
    pc_attr(n, attr_graph("body", b));
    graph_add_output(g, v);
    graph_add_output(g, s);
    return g;
}

Test(control, loop_carries_values_and_stacks_scan_outputs)
{
    graph *g = loop_model(true, -1);
    plan_case r;
    cr_assert_eq(pc_compile(g, 2, &r), RN_OK, "%s", rn_last_error());
    int64_t m = 4;
    static const float one[] = {1};
    static const int64_t d1[] = {1}, d41[] = {4, 1}, d01[] = {0, 1};
    pc_set_input(&r, 0, tensor_view(RN_I64, 0, NULL, &m));
    pc_set_input(&r, 1, tensor_view(RN_F32, 1, d1, one));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    /* v doubles 4 times: 16; s stacks the values entering each iteration */
    static const float sixteen[] = {16}, s_want[] = {1, 2, 4, 8};
    expect_f32_output(&r, 0, 1, d1, sixteen);
    expect_f32_output(&r, 1, 2, d41, s_want);
    /* M = 0: the initial value, and an empty stack [0, 1] (of the body's
     * declared [1]) */
    m = 0;
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    expect_f32_output(&r, 0, 1, d1, one);
    expect_f32_output(&r, 1, 2, d01, NULL);
    pc_free(&r);
    graph_free(g);
}

Test(control, loop_stops_when_the_body_says_so)
{
    /* No M: the body's condition i < 2 holds after iterations 0 and 1, not
     * after 2, so three iterations run: v = 1 * 2^3 = 8. */
    graph *g = loop_model(false, 2);
    plan_case r;
    cr_assert_eq(pc_compile(g, 2, &r), RN_OK, "%s", rn_last_error());
    static const float one[] = {1}, eight[] = {8}, s_want[] = {1, 2, 4};
    static const int64_t d1[] = {1}, d31[] = {3, 1};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d1, one));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    expect_f32_output(&r, 0, 1, d1, eight);
    expect_f32_output(&r, 1, 2, d31, s_want);
    pc_free(&r);
    graph_free(g);
}

Test(control, an_endless_loop_stops_when_cancelled)
{
    /* No M and a condition that stays true: only cancel ends it. */
    graph *g = loop_model(false, -1);
    plan_case r;
    cr_assert_eq(pc_compile(g, 2, &r), RN_OK, "%s", rn_last_error());
    static const float zero[] = {0};
    static const int64_t d1[] = {1};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d1, zero));
    cr_assert_eq(plugin_request_start_async(r.req), RN_OK, "%s", rn_last_error());
    struct timespec ts = {.tv_nsec = 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert_eq(plugin_run_op_wait_for(r.req, 0), RN_RESULT_NOT_READY, "the loop runs on");
    cr_assert_eq(plugin_request_cancel(r.req), RN_OK);
    cr_assert_eq(plugin_run_op_wait(r.req), RN_CANCELLED, "%s", rn_last_error());
    graph_tensor t;
    cr_assert_neq(plugin_request_get_output(r.req, 0, &t), RN_OK, "a cancelled run has no result");
    pc_free(&r);
    graph_free(g);
}

Test(control, body_errors_name_the_node_and_the_iteration)
{
    /* body: y = Gather(data[2], i): the index is out of range at i = 2 */
    graph *g = pc_graph("main", NULL, 17);
    int64_t m = 5;
    uint8_t yes = 1;
    static const float data[] = {10, 20};
    static const int64_t d2[] = {2};
    graph_value *mv = pc_constant(g, "m", RN_I64, 0, NULL, &m);
    graph_value *cond = pc_constant(g, "cond", RN_BOOL, 0, NULL, &yes);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 1, d2);
    graph_value *s = pc_value(g, "s");
    graph *b = pc_graph("body", g, 17);
    graph_value *i = pc_input(b, "i", GRAPH_KIND_TENSOR, RN_I64, 0, NULL);
    graph_value *c = pc_input(b, "c", GRAPH_KIND_TENSOR, RN_BOOL, 0, NULL);
    graph_value *c_out = pc_value(b, "c_out"), *y = pc_value(b, "y");
    pc_node(b, "keep", "Identity", 1, &c, 1, &c_out);
    pc_node(b, "gather", "Gather", 2, (graph_value *[]){x, i}, 1, &y);
    graph_add_output(b, c_out);
    graph_add_output(b, y);
    graph_node *n = pc_node(g, "the_loop", "Loop", 2, (graph_value *[]){mv, cond}, 1, &s);
    pc_attr(n, attr_graph("body", b));
    graph_add_output(g, s);
    plan_case r;
    cr_assert_eq(pc_compile(g, 2, &r), RN_OK, "%s", rn_last_error());
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d2, data));
    rn_status st = plugin_request_infer(r.req);
    cr_assert_neq(st, RN_OK);
    const char *msg = rn_last_error();
    cr_assert_not_null(strstr(msg, "the_loop"), "%s", msg);
    cr_assert_not_null(strstr(msg, "iteration 2"), "%s", msg);
    cr_assert_not_null(strstr(msg, "gather"), "%s", msg);
    pc_free(&r);
    graph_free(g);
}

/* ---- Scan ---- */

/* Scan (opset 11): sum(s0: f32[2], x: f32[3, 2]) body(s, xt) { s_out = Add(s,
 * xt); y = Identity(s_out) } with the given input direction and output axis. */
static graph *scan_model(int64_t in_dir, int64_t out_axis)
{
    graph *g = pc_graph("main", NULL, 11);
    static const int64_t d2[] = {2}, d32[] = {3, 2};
    graph_value *s0 = pc_input(g, "s0", GRAPH_KIND_TENSOR, RN_F32, 1, d2);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 2, d32);
    graph_value *sf = pc_value(g, "sf"), *ys = pc_value(g, "ys");
    graph *b = pc_graph("body", g, 11);
    graph_value *s = pc_input(b, "s", GRAPH_KIND_TENSOR, RN_F32, 1, d2);
    graph_value *xt = pc_input(b, "xt", GRAPH_KIND_TENSOR, RN_F32, 1, d2);
    graph_value *s_out = pc_value(b, "s_out"), *y = pc_value(b, "y");
    pc_node(b, "add", "Add", 2, (graph_value *[]){s, xt}, 1, &s_out);
    pc_node(b, "copy", "Identity", 1, &s_out, 1, &y);
    graph_add_output(b, s_out);
    graph_add_output(b, y);
    graph_node *n =
        pc_node(g, "scan", "Scan", 2, (graph_value *[]){s0, x}, 2, (graph_value *[]){sf, ys});
    pc_attr(n, attr_graph("body", b));
    pc_attr(n, attr_int("num_scan_inputs", 1));
    pc_attr(n, attr_ints("scan_input_directions", 1, &in_dir));
    pc_attr(n, attr_ints("scan_output_axes", 1, &out_axis));
    graph_add_output(g, sf);
    graph_add_output(g, ys);
    return g;
}

static void run_scan(int64_t in_dir, int64_t out_axis, const float *ys_want, const int64_t *ys_dims)
{
    graph *g = scan_model(in_dir, out_axis);
    plan_case r;
    cr_assert_eq(pc_compile(g, 2, &r), RN_OK, "%s", rn_last_error());
    static const float s0[] = {0, 0}, x[] = {1, 2, 3, 4, 5, 6}, sf[] = {9, 12};
    static const int64_t d2[] = {2}, d32[] = {3, 2};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d2, s0));
    pc_set_input(&r, 1, tensor_view(RN_F32, 2, d32, x));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    expect_f32_output(&r, 0, 1, d2, sf);
    expect_f32_output(&r, 1, 2, ys_dims, ys_want);
    pc_free(&r);
    graph_free(g);
}

Test(control, scan_accumulates_forward)
{
    /* running sums of the rows [1,2], [3,4], [5,6] */
    static const float ys[] = {1, 2, 4, 6, 9, 12};
    static const int64_t d32[] = {3, 2};
    run_scan(0, 0, ys, d32);
}

Test(control, scan_in_reverse_and_along_another_output_axis)
{
    /* reverse: rows [5,6], [3,4], [1,2] give sums [5,6], [8,10], [9,12],
     * stacked along axis 1: [[5, 8, 9], [6, 10, 12]] */
    static const float ys[] = {5, 8, 9, 6, 10, 12};
    static const int64_t d23[] = {2, 3};
    run_scan(1, 1, ys, d23);
}

Test(control, a_node_that_reads_a_sequence_needs_a_kernel_for_it)
{
    /* Neg of a sequence input: no tensor kernel may see it */
    graph *g = pc_graph("main", NULL, 17);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_SEQUENCE, RN_F32, -1, NULL);
    graph_value *y = pc_value(g, "y");
    pc_node(g, "neg", "Neg", 1, &x, 1, &y);
    graph_add_output(g, y);
    plan_case r;
    rn_status st = pc_compile(g, 2, &r);
    cr_assert_eq(st, RN_UNSUPPORTED, "%s", rn_last_error());
    cr_assert_not_null(strstr(rn_last_error(), "sequence"), "%s", rn_last_error());
    pc_free(&r);
    graph_free(g);
}
