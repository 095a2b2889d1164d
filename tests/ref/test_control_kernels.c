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
#include "plugins/ref/ref.h"

/* ---- building graphs ---- */

static graph *new_graph(const char *name, graph *parent)
{
    graph *g;
    cr_assert_eq(graph_create(name, &g), RN_OK);
    g->parent = parent;
    g->opset = 17;
    return g;
}

static graph_value *val(graph *g, const char *name)
{
    graph_value *v;
    cr_assert_eq(graph_add_value(g, name, &v), RN_OK, "%s", rn_last_error());
    return v;
}

static graph_value *param(graph *g, const char *name, rn_element_type type, int rank,
                          const int64_t *dims)
{
    graph_value *v = val(g, name);
    v->type = type;
    v->shape.rank = rank;
    if (rank > 0)
        memcpy(v->shape.dims, dims, sizeof(int64_t) * (size_t)rank);
    cr_assert_eq(graph_add_input(g, v), RN_OK);
    return v;
}

static graph_value *constant(graph *g, const char *name, rn_element_type type, int rank,
                             const int64_t *dims, const void *data)
{
    graph_value *v = val(g, name);
    graph_tensor *t = calloc(1, sizeof *t);
    t->type = type;
    t->rank = rank;
    if (rank > 0)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->nbytes = graph_tensor_count(t) * rn_element_type_size(type);
    t->data = malloc(t->nbytes + 1);
    memcpy(t->data, data, t->nbytes);
    v->constant = t;
    v->type = type;
    v->shape.rank = rank;
    memcpy(v->shape.dims, t->dims, sizeof v->shape.dims);
    return v;
}

static graph_node *node(graph *g, const char *name, const char *op, int n_in, graph_value **in,
                        int n_out, graph_value **out)
{
    graph_node *n;
    cr_assert_eq(graph_add_node(g, name, "", op, g->opset, n_in, in, n_out, out, &n), RN_OK, "%s",
                 rn_last_error());
    return n;
}

static void attr_graph(graph_node *n, const char *name, graph *sub)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_GRAPH, .g = sub};
    cr_assert_eq(graph_node_add_attr(n, &a), RN_OK);
}

static void attr_int(graph_node *n, const char *name, int64_t v)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_INT, .i = v};
    cr_assert_eq(graph_node_add_attr(n, &a), RN_OK);
}

static void attr_ints(graph_node *n, const char *name, int count, const int64_t *v)
{
    int64_t *copy = malloc(sizeof *copy * (size_t)(count + 1));
    memcpy(copy, v, sizeof *copy * (size_t)count);
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_INTS, .count = count, .ints = copy};
    cr_assert_eq(graph_node_add_attr(n, &a), RN_OK);
}

/* ---- running ---- */

typedef struct runner {
    plugin_kernel_registry *reg;
    plugin_plan *plan;
    plugin_request *req;
} runner;

static rn_status compile(graph *g, runner *r)
{
    memset(r, 0, sizeof *r);
    cr_assert_eq(graph_sort(g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(plugin_kernel_registry_create(&r->reg), RN_OK);
    cr_assert_eq(ref_register_kernels(r->reg), RN_OK);
    plugin_plan_options o = {.n_streams = 1, .threads_per_stream = 2};
    rn_status st = plugin_plan_build(g, r->reg, &o, &r->plan);
    if (st == RN_OK)
        st = plugin_request_create(r->plan, &r->req);
    return st;
}

static void runner_free(runner *r)
{
    plugin_request_free(r->req);
    plugin_plan_free(r->plan);
    plugin_kernel_registry_free(r->reg);
}

static graph_tensor view(rn_element_type type, int rank, const int64_t *dims, const void *data)
{
    graph_tensor t = {.type = type, .rank = rank, .data = (void *)data};
    if (rank > 0)
        memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    t.nbytes = graph_tensor_count(&t) * rn_element_type_size(type);
    return t;
}

static void set_input(runner *r, size_t i, graph_tensor t)
{
    cr_assert_eq(plugin_request_set_input(r->req, i, &t), RN_OK, "%s", rn_last_error());
}

static graph_tensor output(runner *r, size_t i)
{
    graph_tensor t;
    cr_assert_eq(plugin_request_get_output(r->req, i, &t), RN_OK, "%s", rn_last_error());
    return t;
}

static void expect_f32(graph_tensor t, int rank, const int64_t *dims, const float *want)
{
    cr_assert_eq(t.kind, GRAPH_KIND_TENSOR);
    cr_assert_eq(t.type, RN_F32, "type %s", rn_element_type_name(t.type));
    cr_assert_eq(t.rank, rank, "rank %d, expected %d", t.rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t.dims[d], dims[d], "dim %d is %lld, expected %lld", d, (long long)t.dims[d],
                     (long long)dims[d]);
    for (size_t i = 0; i < graph_tensor_count(&t); i++)
        cr_assert_float_eq(((const float *)t.data)[i], want[i], 1e-6, "element %zu: %g, want %g", i,
                           ((const float *)t.data)[i], want[i]);
}

static const int64_t d3[] = {3};

/* ---- If ---- */

/* main(c: bool, x: f32[3]): a = Add(x, x); r = If(c) then { Neg(a) } else
 * { x }. The If reads a only inside its then-branch: a must be computed
 * before it (a DAG edge from the implicit input) and kept until it ran. */
static graph *if_model(void)
{
    graph *g = new_graph("main", NULL);
    graph_value *c = param(g, "c", RN_BOOL, 0, NULL);
    graph_value *x = param(g, "x", RN_F32, 1, d3);
    graph_value *a = val(g, "a"), *r = val(g, "r");
    graph *then_g = new_graph("then", g), *else_g = new_graph("else", g);
    graph_value *t = val(then_g, "t");
    node(then_g, "neg", "Neg", 1, &a, 1, &t);
    graph_add_output(then_g, t);
    graph_add_output(else_g, x);
    /* The If comes first in file order: the sort must place it after add. */
    graph_node *n = node(g, "if", "If", 1, &c, 1, &r);
    attr_graph(n, "then_branch", then_g);
    attr_graph(n, "else_branch", else_g);
    node(g, "add", "Add", 2, (graph_value *[]){x, x}, 1, &a);
    graph_add_output(g, r);
    return g;
}

static void run_if(bool async)
{
    graph *g = if_model();
    runner r;
    cr_assert_eq(compile(g, &r), RN_OK, "%s", rn_last_error());
    static const float x[] = {1, -2, 3};
    for (int round = 0; round < 4; round++) {
        uint8_t c = round % 2 == 0;
        set_input(&r, 0, view(RN_BOOL, 0, NULL, &c));
        set_input(&r, 1, view(RN_F32, 1, d3, x));
        if (async) {
            cr_assert_eq(plugin_request_start_async(r.req), RN_OK, "%s", rn_last_error());
            cr_assert_eq(plugin_request_wait(r.req), RN_OK, "%s", rn_last_error());
        } else {
            cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
        }
        /* then: -(x + x) = -2, 4, -6; else: x */
        static const float then_want[] = {-2, 4, -6};
        expect_f32(output(&r, 0), 1, d3, c ? then_want : x);
    }
    runner_free(&r);
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
    graph *g = new_graph("main", NULL);
    static const int64_t d1[] = {1};
    graph_value *m = with_m ? param(g, "m", RN_I64, 0, NULL) : NULL;
    graph_value *v0 = param(g, "v0", RN_F32, 1, d1);
    uint8_t yes = 1;
    graph_value *cond = constant(g, "cond", RN_BOOL, 0, NULL, &yes);
    graph_value *v = val(g, "v"), *s = val(g, "s");
    graph *b = new_graph("body", g);
    graph_value *i = param(b, "i", RN_I64, 0, NULL);
    graph_value *c = param(b, "c", RN_BOOL, 0, NULL);
    graph_value *vi = val(b, "vi");
    graph_add_input(b, vi); /* undeclared: seeded from the Loop's input */
    graph_value *c_out = val(b, "c_out"), *v_out = val(b, "v_out"), *s_out = val(b, "s_out");
    if (stop_at >= 0) {
        graph_value *lim = constant(b, "lim", RN_I64, 0, NULL, &stop_at);
        node(b, "less", "Less", 2, (graph_value *[]){i, lim}, 1, &c_out);
    } else {
        node(b, "keep", "Identity", 1, &c, 1, &c_out);
    }
    node(b, "double", "Add", 2, (graph_value *[]){vi, vi}, 1, &v_out);
    node(b, "scan", "Identity", 1, &vi, 1, &s_out);
    s_out->type = RN_F32; /* declared, so that an empty stack has its shape */
    s_out->shape.rank = 1;
    s_out->shape.dims[0] = 1;
    graph_add_output(b, c_out);
    graph_add_output(b, v_out);
    graph_add_output(b, s_out);
    graph_node *n =
        node(g, "loop", "Loop", 3, (graph_value *[]){m, cond, v0}, 2, (graph_value *[]){v, s});
    attr_graph(n, "body", b);
    graph_add_output(g, v);
    graph_add_output(g, s);
    return g;
}

Test(control, loop_carries_values_and_stacks_scan_outputs)
{
    graph *g = loop_model(true, -1);
    runner r;
    cr_assert_eq(compile(g, &r), RN_OK, "%s", rn_last_error());
    int64_t m = 4;
    static const float one[] = {1};
    static const int64_t d1[] = {1}, d41[] = {4, 1}, d01[] = {0, 1};
    set_input(&r, 0, view(RN_I64, 0, NULL, &m));
    set_input(&r, 1, view(RN_F32, 1, d1, one));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    /* v doubles 4 times: 16; s stacks the values entering each iteration */
    static const float sixteen[] = {16}, s_want[] = {1, 2, 4, 8};
    expect_f32(output(&r, 0), 1, d1, sixteen);
    expect_f32(output(&r, 1), 2, d41, s_want);
    /* M = 0: the initial value, and an empty stack [0, 1] (of the body's
     * declared [1]) */
    m = 0;
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    expect_f32(output(&r, 0), 1, d1, one);
    expect_f32(output(&r, 1), 2, d01, NULL);
    runner_free(&r);
    graph_free(g);
}

Test(control, loop_stops_when_the_body_says_so)
{
    /* No M: the body's condition i < 2 holds after iterations 0 and 1, not
     * after 2, so three iterations run: v = 1 * 2^3 = 8. */
    graph *g = loop_model(false, 2);
    runner r;
    cr_assert_eq(compile(g, &r), RN_OK, "%s", rn_last_error());
    static const float one[] = {1}, eight[] = {8}, s_want[] = {1, 2, 4};
    static const int64_t d1[] = {1}, d31[] = {3, 1};
    set_input(&r, 0, view(RN_F32, 1, d1, one));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    expect_f32(output(&r, 0), 1, d1, eight);
    expect_f32(output(&r, 1), 2, d31, s_want);
    runner_free(&r);
    graph_free(g);
}

Test(control, an_endless_loop_stops_when_cancelled)
{
    /* No M and a condition that stays true: only cancel ends it. */
    graph *g = loop_model(false, -1);
    runner r;
    cr_assert_eq(compile(g, &r), RN_OK, "%s", rn_last_error());
    static const float zero[] = {0};
    static const int64_t d1[] = {1};
    set_input(&r, 0, view(RN_F32, 1, d1, zero));
    cr_assert_eq(plugin_request_start_async(r.req), RN_OK, "%s", rn_last_error());
    struct timespec ts = {.tv_nsec = 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert_eq(plugin_request_wait_for(r.req, 0), RN_RESULT_NOT_READY, "the loop runs on");
    cr_assert_eq(plugin_request_cancel(r.req), RN_OK);
    cr_assert_eq(plugin_request_wait(r.req), RN_CANCELLED, "%s", rn_last_error());
    graph_tensor t;
    cr_assert_neq(plugin_request_get_output(r.req, 0, &t), RN_OK, "a cancelled run has no result");
    runner_free(&r);
    graph_free(g);
}

Test(control, body_errors_name_the_node_and_the_iteration)
{
    /* body: y = Gather(data[2], i): the index is out of range at i = 2 */
    graph *g = new_graph("main", NULL);
    int64_t m = 5;
    uint8_t yes = 1;
    static const float data[] = {10, 20};
    static const int64_t d2[] = {2};
    graph_value *mv = constant(g, "m", RN_I64, 0, NULL, &m);
    graph_value *cond = constant(g, "cond", RN_BOOL, 0, NULL, &yes);
    graph_value *x = param(g, "x", RN_F32, 1, d2);
    graph_value *s = val(g, "s");
    graph *b = new_graph("body", g);
    graph_value *i = param(b, "i", RN_I64, 0, NULL);
    graph_value *c = param(b, "c", RN_BOOL, 0, NULL);
    graph_value *c_out = val(b, "c_out"), *y = val(b, "y");
    node(b, "keep", "Identity", 1, &c, 1, &c_out);
    node(b, "gather", "Gather", 2, (graph_value *[]){x, i}, 1, &y);
    graph_add_output(b, c_out);
    graph_add_output(b, y);
    graph_node *n = node(g, "the_loop", "Loop", 2, (graph_value *[]){mv, cond}, 1, &s);
    attr_graph(n, "body", b);
    graph_add_output(g, s);
    runner r;
    cr_assert_eq(compile(g, &r), RN_OK, "%s", rn_last_error());
    set_input(&r, 0, view(RN_F32, 1, d2, data));
    rn_status st = plugin_request_infer(r.req);
    cr_assert_neq(st, RN_OK);
    const char *msg = rn_last_error();
    cr_assert_not_null(strstr(msg, "the_loop"), "%s", msg);
    cr_assert_not_null(strstr(msg, "iteration 2"), "%s", msg);
    cr_assert_not_null(strstr(msg, "gather"), "%s", msg);
    runner_free(&r);
    graph_free(g);
}

/* ---- Scan ---- */

/* Scan (opset 11): sum(s0: f32[2], x: f32[3, 2]) body(s, xt) { s_out = Add(s,
 * xt); y = Identity(s_out) } with the given input direction and output axis. */
static graph *scan_model(int64_t in_dir, int64_t out_axis)
{
    graph *g = new_graph("main", NULL);
    g->opset = 11;
    static const int64_t d2[] = {2}, d32[] = {3, 2};
    graph_value *s0 = param(g, "s0", RN_F32, 1, d2);
    graph_value *x = param(g, "x", RN_F32, 2, d32);
    graph_value *sf = val(g, "sf"), *ys = val(g, "ys");
    graph *b = new_graph("body", g);
    b->opset = 11;
    graph_value *s = param(b, "s", RN_F32, 1, d2);
    graph_value *xt = param(b, "xt", RN_F32, 1, d2);
    graph_value *s_out = val(b, "s_out"), *y = val(b, "y");
    node(b, "add", "Add", 2, (graph_value *[]){s, xt}, 1, &s_out);
    node(b, "copy", "Identity", 1, &s_out, 1, &y);
    graph_add_output(b, s_out);
    graph_add_output(b, y);
    graph_node *n =
        node(g, "scan", "Scan", 2, (graph_value *[]){s0, x}, 2, (graph_value *[]){sf, ys});
    attr_graph(n, "body", b);
    attr_int(n, "num_scan_inputs", 1);
    attr_ints(n, "scan_input_directions", 1, &in_dir);
    attr_ints(n, "scan_output_axes", 1, &out_axis);
    graph_add_output(g, sf);
    graph_add_output(g, ys);
    return g;
}

static void run_scan(int64_t in_dir, int64_t out_axis, const float *ys_want, const int64_t *ys_dims)
{
    graph *g = scan_model(in_dir, out_axis);
    runner r;
    cr_assert_eq(compile(g, &r), RN_OK, "%s", rn_last_error());
    static const float s0[] = {0, 0}, x[] = {1, 2, 3, 4, 5, 6}, sf[] = {9, 12};
    static const int64_t d2[] = {2}, d32[] = {3, 2};
    set_input(&r, 0, view(RN_F32, 1, d2, s0));
    set_input(&r, 1, view(RN_F32, 2, d32, x));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    expect_f32(output(&r, 0), 1, d2, sf);
    expect_f32(output(&r, 1), 2, ys_dims, ys_want);
    runner_free(&r);
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
    graph *g = new_graph("main", NULL);
    graph_value *x = param(g, "x", RN_F32, -1, NULL);
    x->kind = GRAPH_KIND_SEQUENCE;
    graph_value *y = val(g, "y");
    node(g, "neg", "Neg", 1, &x, 1, &y);
    graph_add_output(g, y);
    runner r;
    rn_status st = compile(g, &r);
    cr_assert_eq(st, RN_UNSUPPORTED, "%s", rn_last_error());
    cr_assert_not_null(strstr(rn_last_error(), "sequence"), "%s", rn_last_error());
    runner_free(&r);
    graph_free(g);
}
