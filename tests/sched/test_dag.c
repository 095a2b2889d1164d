/* DAG topologies and runs: every node once, after all its predecessors, on every stream
 * configuration, with several instances in flight, executors and deferred nodes. */
#include "tests/sched/sched_test_util.h"

static int nop_task(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return SCHED_OK;
}

Test(dag, build_rejects_cycles, .timeout = 10)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    uint32_t a, c, d;
    cr_assert_eq(sched_dag_add_node(b, "a", nop_task, NULL, 0, &a), 0);
    cr_assert_eq(sched_dag_add_node(b, "c", nop_task, NULL, 0, &c), 0);
    cr_assert_eq(sched_dag_add_node(b, "d", nop_task, NULL, 0, &d), 0);
    cr_assert_eq(sched_dag_add_edge(b, a, c), 0);
    cr_assert_eq(sched_dag_add_edge(b, c, d), 0);
    sched_dag *dag = NULL;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_free(dag);
    cr_assert_eq(sched_dag_add_edge(b, d, a), 0);
    dag = NULL;
    cr_expect_eq(sched_dag_build(b, &dag), -ELOOP);
    cr_expect_null(dag);
    sched_dag_builder_free(b);

    /* A self-edge is a cycle too. */
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    cr_assert_eq(sched_dag_add_node(b, "self", nop_task, NULL, 0, &a), 0);
    cr_assert_eq(sched_dag_add_edge(b, a, a), 0);
    cr_expect_eq(sched_dag_build(b, &dag), -ELOOP);
    sched_dag_builder_free(b);
}

Test(dag, builder_rejects_bad_nodes_and_edges, .timeout = 10)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    uint32_t id = 77;
    cr_expect_eq(sched_dag_add_node(b, "nofn", NULL, NULL, 0, &id), -EINVAL);
    cr_expect_eq(sched_dag_add_node(b, "badex", nop_task, NULL, SCHED_MAX_EXECUTORS + 1, &id),
                 -EINVAL);
    cr_expect_eq(id, 77, "out parameter written on failure");
    cr_assert_eq(sched_dag_add_node(b, NULL, nop_task, NULL, 0, &id), 0);
    cr_expect_eq(id, 0);
    cr_expect_eq(sched_dag_add_edge(b, 0, 1), -EINVAL);
    cr_expect_eq(sched_dag_add_edge(b, 5, 0), -EINVAL);
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    cr_expect_str_eq(sched_dag_node_name(dag, 0), "node0");
    cr_expect_null(sched_dag_node_name(dag, 1));
    sched_dag_free(dag);
    sched_dag_builder_free(b);
    sched_dag_builder_free(NULL);
    sched_dag_free(NULL);
}

Test(dag, compiled_topology_keeps_names_and_counts, .timeout = 10)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "stage%d", i);
        cr_assert_eq(sched_dag_add_node(b, name, nop_task, NULL, 0, NULL), 0);
    }
    for (uint32_t i = 0; i + 1 < 5; i++)
        cr_assert_eq(sched_dag_add_edge(b, i, i + 1), 0);
    cr_assert_eq(sched_dag_add_edge(b, 0, 4), 0);
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b); /* the DAG owns copies */
    cr_expect_eq(sched_dag_node_count(dag), 5);
    cr_expect_eq(sched_dag_edge_count(dag), 5);
    cr_expect_str_eq(sched_dag_node_name(dag, 3), "stage3");
    sched_dag_free(dag);
}

/* Runs `rounds` rounds of `n_inst` concurrent instances of g and checks every run. */
static void run_rounds(sched *s, test_dag *g, test_device *dev, int n_inst, int rounds,
                       uint32_t exec_min)
{
    test_run *runs[8];
    cr_assert_leq(n_inst, 8);
    for (int i = 0; i < n_inst; i++) {
        runs[i] = test_run_create(g, dev);
        runs[i]->expected_executor_worker_min = exec_min;
    }
    uint32_t n_streams = sched_stream_count(s);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n_inst; i++) {
            test_run_reset(runs[i]);
            int stream = (r + i) % 3 == 0 ? SCHED_STREAM_ANY : (int)((r + i) % n_streams);
            int rc;
            /* A tiny injection queue may refuse a start (admission control): retry. */
            while ((rc = sched_instance_start(s, runs[i]->inst, stream, test_run_done, runs[i])) ==
                   -EAGAIN)
                test_sleep_us(20);
            cr_assert_eq(rc, 0, "start: %d", rc);
        }
        for (int i = 0; i < n_inst; i++) {
            cr_assert_eq(sched_instance_wait_for(runs[i]->inst, 20ull * 1000000000u), 0,
                         "round %d instance %d did not complete", r, i);
            int status = sched_instance_status(runs[i]->inst);
            cr_assert_eq(status, SCHED_OK, "status %d", status);
            cr_assert_eq(atomic_load(&runs[i]->callbacks), 1);
            cr_assert_eq(atomic_load(&runs[i]->last_status), SCHED_OK);
            for (uint32_t v = 0; v < g->n; v++)
                cr_assert_eq(atomic_load(&runs[i]->runs[v]), 1, "node %u ran %u times", v,
                             atomic_load(&runs[i]->runs[v]));
            cr_assert_eq(atomic_load(&runs[i]->order_errors), 0, "ran before a predecessor");
            cr_assert_eq(atomic_load(&runs[i]->wrong_ctx), 0, "bad task context");
        }
    }
    for (int i = 0; i < n_inst; i++)
        test_run_free(runs[i]);
}

static void random_dags_on(uint32_t streams, uint32_t workers, bool steal, uint32_t deque_cap,
                           uint32_t inject_cap)
{
    sched_config cfg = test_config(streams, workers, steal);
    cfg.deque_capacity = deque_cap;
    cfg.injection_capacity = inject_cap;
    sched *s = test_sched_create(&cfg);
    uint32_t cb;
    cr_assert_eq(sched_add_executor(s, "callback", 1, &cb), 0);
    test_device dev;
    test_device_start(&dev);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        test_dag_shape shape = {
            .n = 3000 / TEST_SCALE,
            .max_fan_in = 4,
            .hubs = 3,
            .hub_fan_out = 200 / TEST_SCALE,
            .deferred_pct = seed == 2 ? 3 : 0,
            .executor_pct = seed == 3 ? 3 : 0,
            .spin_pct = 2,
            .spin_ns = 5000,
            .executor_id = cb,
        };
        test_dag *g = test_dag_random(&shape, seed * 31 + streams * 7 + workers);
        run_rounds(s, g, &dev, 4, TEST_SCALE > 1 ? 4 : 20, sched_worker_count(s));
        test_dag_free(g);
    }
    test_device_stop(&dev);
    sched_destroy(s);
}

Test(dag, random_dags_one_stream_two_workers, .timeout = 60)
{
    random_dags_on(1, 2, true, 1024, 256);
}

Test(dag, random_dags_one_worker, .timeout = 60)
{
    random_dags_on(1, 1, true, 1024, 256);
}

Test(dag, random_dags_two_streams_stealing, .timeout = 60)
{
    random_dags_on(2, 1, true, 1024, 256);
}

Test(dag, random_dags_two_streams_isolated, .timeout = 60)
{
    random_dags_on(2, 1, false, 1024, 256);
}

Test(dag, random_dags_three_streams_of_two, .timeout = 60)
{
    random_dags_on(3, 2, true, 1024, 256);
}

Test(dag, random_dags_tiny_deques_spill, .timeout = 60)
{
    /* Deques and injection queues of 2: pushes spill to injection, then to overflow. */
    random_dags_on(2, 2, true, 2, 2);
}

/* A node with a wide fan-out and a node with a wide fan-in: releases are split in ranges. */
typedef struct wide_state {
    atomic_uint *runs;
    atomic_uint before_source;
    atomic_uint sink_early;
    uint32_t n;
} wide_state;

static int wide_task(const sched_task_ctx *ctx, void *arg)
{
    wide_state *w = ctx->user_arg;
    uint32_t kind = (uint32_t)(uintptr_t)arg;
    if (kind == 1 && atomic_load(&w->runs[0]) != 1)
        atomic_fetch_add(&w->before_source, 1);
    if (kind == 2)
        for (uint32_t v = 0; v + 1 < w->n; v++)
            if (atomic_load(&w->runs[v]) != 1)
                atomic_fetch_add(&w->sink_early, 1);
    atomic_fetch_add(&w->runs[ctx->node], 1);
    return SCHED_OK;
}

Test(dag, wide_fan_out_and_fan_in_run_every_node_once, .timeout = 60)
{
    uint32_t mid = 100000 / TEST_SCALE;
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    cr_assert_eq(sched_dag_add_node(b, "source", wide_task, (void *)0, 0, NULL), 0);
    for (uint32_t i = 0; i < mid; i++)
        cr_assert_eq(sched_dag_add_node(b, NULL, wide_task, (void *)1, 0, NULL), 0);
    cr_assert_eq(sched_dag_add_node(b, "sink", wide_task, (void *)2, 0, NULL), 0);
    for (uint32_t i = 1; i <= mid; i++) {
        cr_assert_eq(sched_dag_add_edge(b, 0, i), 0);
        cr_assert_eq(sched_dag_add_edge(b, i, mid + 1), 0);
    }
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);

    sched_config cfg = test_config(1, 2, true);
    sched *s = test_sched_create(&cfg);
    wide_state w = {.n = mid + 2};
    w.runs = calloc(w.n, sizeof(atomic_uint));
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &w, &inst), 0);
    for (int round = 0; round < 3; round++) {
        for (uint32_t v = 0; v < w.n; v++)
            atomic_store(&w.runs[v], 0);
        cr_assert_eq(sched_instance_start(s, inst, 0, NULL, NULL), 0);
        cr_assert_eq(sched_instance_wait(inst), SCHED_OK);
        for (uint32_t v = 0; v < w.n; v++)
            cr_assert_eq(atomic_load(&w.runs[v]), 1, "node %u ran %u times", v,
                         atomic_load(&w.runs[v]));
    }
    cr_expect_eq(atomic_load(&w.before_source), 0);
    cr_expect_eq(atomic_load(&w.sink_early), 0);
    sched_instance_free(inst);
    sched_dag_free(dag);
    free(w.runs);
    sched_destroy(s);
}

Test(dag, many_sources_start_together, .timeout = 30)
{
    /* 5000 independent nodes: the start releases all of them through one split range. */
    uint32_t n = 5000;
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(sched_dag_add_node(b, NULL, wide_task, (void *)0, 0, NULL), 0);
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    sched_config cfg = test_config(2, 1, true);
    sched *s = test_sched_create(&cfg);
    wide_state w = {.n = n};
    w.runs = calloc(n, sizeof(atomic_uint));
    atomic_store(&w.runs[0], 1); /* kind 0 checks nothing; runs[0] counts from 1 */
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &w, &inst), 0);
    cr_assert_eq(sched_instance_start(s, inst, 1, NULL, NULL), 0);
    cr_assert_eq(sched_instance_wait(inst), SCHED_OK);
    cr_expect_eq(atomic_load(&w.runs[0]), 2);
    for (uint32_t v = 1; v < n; v++)
        cr_assert_eq(atomic_load(&w.runs[v]), 1);
    sched_instance_free(inst);
    sched_dag_free(dag);
    free(w.runs);
    sched_destroy(s);
}

static void count_done(sched_instance *inst, int status, void *arg)
{
    (void)inst;
    (void)status;
    atomic_fetch_add((atomic_int *)arg, 1);
}

Test(dag, empty_dag_completes_at_start, .timeout = 10)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    sched_config cfg = test_config(1, 1, true);
    sched *s = test_sched_create(&cfg);
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, NULL, &inst), 0);
    atomic_int done = 0;
    cr_assert_eq(sched_instance_start(s, inst, 0, count_done, &done), 0);
    cr_expect_eq(atomic_load(&done), 1);
    cr_expect_not(sched_instance_running(inst));
    cr_expect_eq(sched_instance_wait(inst), SCHED_OK);
    sched_instance_free(inst);
    sched_dag_free(dag);
    sched_destroy(s);
}

static int chain_task(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    atomic_uint *last = ctx->user_arg;
    /* Nodes of a chain run strictly in order. */
    unsigned expect = ctx->node;
    atomic_compare_exchange_strong(last, &expect, ctx->node + 1);
    return SCHED_OK;
}

Test(dag, instances_restart_many_times, .timeout = 30)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    for (uint32_t i = 0; i < 6; i++) {
        cr_assert_eq(sched_dag_add_node(b, NULL, chain_task, NULL, 0, NULL), 0);
        if (i > 0)
            cr_assert_eq(sched_dag_add_edge(b, i - 1, i), 0);
    }
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    sched_config cfg = test_config(2, 1, true);
    sched *s = test_sched_create(&cfg);
    atomic_uint last[3];
    sched_instance *inst[3];
    atomic_int done = 0;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(sched_instance_create(dag, &last[i], &inst[i]), 0);
    int rounds = 3000 / TEST_SCALE;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 3; i++) {
            atomic_store(&last[i], 0);
            cr_assert_eq(sched_instance_start(s, inst[i], SCHED_STREAM_ANY, count_done, &done), 0);
        }
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(sched_instance_wait(inst[i]), SCHED_OK);
            cr_assert_eq(atomic_load(&last[i]), 6, "chain ran out of order");
        }
    }
    cr_expect_eq(atomic_load(&done), 3 * rounds);
    for (int i = 0; i < 3; i++)
        sched_instance_free(inst[i]);
    sched_dag_free(dag);
    sched_destroy(s);
}
