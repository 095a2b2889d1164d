/* Instances: cancellation, failing nodes, deferred nodes completed from other threads, waiting
 * with a timeout, and the order of completion callback and waiters. */
#include "tests/sched/sched_test_util.h"

/* Checks one finished run of a random DAG that may have been cancelled or failed: the
 * callback fired once with the instance's status, nothing ran twice or out of order, and an
 * OK run ran everything. */
static void check_partial_run(test_run *run, int status)
{
    cr_assert_eq(atomic_load(&run->callbacks), 1, "callback fired %u times",
                 atomic_load(&run->callbacks));
    cr_assert_eq(atomic_load(&run->last_status), status);
    cr_assert_eq(atomic_load(&run->order_errors), 0, "a node ran before a predecessor");
    cr_assert_eq(atomic_load(&run->wrong_ctx), 0);
    for (uint32_t v = 0; v < run->g->n; v++) {
        unsigned n = atomic_load(&run->runs[v]);
        cr_assert_leq(n, 1, "node %u ran %u times", v, n);
        if (status == SCHED_OK)
            cr_assert_eq(n, 1, "node %u skipped in an OK run", v);
    }
}

Test(instance, cancel_at_random_points_completes_once_with_cancelled, .timeout = 90)
{
    sched_config cfg = test_config(2, 1, true);
    sched *s = test_sched_create(&cfg);
    uint32_t cb;
    cr_assert_eq(sched_add_executor(s, "callback", 1, &cb), 0);
    test_device dev;
    test_device_start(&dev);
    test_dag_shape shape = {
        .n = 2000 / TEST_SCALE,
        .max_fan_in = 3,
        .hubs = 2,
        .hub_fan_out = 100,
        .deferred_pct = 2,
        .executor_pct = 2,
        .spin_pct = 20,
        .spin_ns = 2000,
        .executor_id = cb,
    };
    test_dag *g = test_dag_random(&shape, 99);
    test_run *runs[3];
    for (int i = 0; i < 3; i++)
        runs[i] = test_run_create(g, &dev);
    uint64_t rng = 42;
    int cancelled = 0, completed = 0;
    int rounds = 100 / (TEST_SCALE > 1 ? 4 : 1);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 3; i++) {
            test_run_reset(runs[i]);
            /* One instance in three cancels itself from inside one of its tasks. */
            runs[i]->cancel_at = i == 2 ? (uint32_t)(test_rand(&rng) % g->n) : UINT32_MAX;
            cr_assert_eq(sched_instance_start(s, runs[i]->inst, i % 2, test_run_done, runs[i]), 0);
        }
        /* From right after the start to after a typical run's end. */
        test_sleep_us(test_rand(&rng) % 4 == 0 ? 3000 + test_rand(&rng) % 3000
                                               : test_rand(&rng) % 800);
        for (int i = 0; i < 2; i++)
            (void)sched_instance_cancel(runs[i]->inst); /* -EINVAL if it already completed */
        for (int i = 0; i < 3; i++) {
            int status = sched_instance_wait(runs[i]->inst);
            cr_assert(status == SCHED_OK || status == SCHED_CANCELLED, "status %d", status);
            if (i == 2)
                cr_assert_eq(status, SCHED_CANCELLED, "a self-cancelled run completed OK");
            check_partial_run(runs[i], status);
            cancelled += status == SCHED_CANCELLED;
            completed += status == SCHED_OK;
        }
    }
    cr_log_info("%d cancelled, %d completed", cancelled, completed);
    cr_expect_gt(cancelled, rounds, "cancellation never took effect from outside");
    for (int i = 0; i < 3; i++)
        test_run_free(runs[i]);
    test_dag_free(g);
    test_device_stop(&dev);
    sched_destroy(s);
}

Test(instance, failing_node_skips_the_rest_and_reports_its_error, .timeout = 60)
{
    sched_config cfg = test_config(1, 2, true);
    sched *s = test_sched_create(&cfg);
    test_dag_shape shape = {.n = 1500 / TEST_SCALE, .max_fan_in = 3, .hubs = 1, .hub_fan_out = 50};
    test_dag *g = test_dag_random(&shape, 5);
    test_run *run = test_run_create(g, NULL);
    uint64_t rng = 7;
    for (int r = 0; r < 20; r++) {
        test_run_reset(run);
        run->fail_at = (uint32_t)(test_rand(&rng) % g->n);
        cr_assert_eq(sched_instance_start(s, run->inst, 0, test_run_done, run), 0);
        int status = sched_instance_wait(run->inst);
        cr_assert_eq(status, -EIO, "status %d", status);
        check_partial_run(run, status);
        cr_assert_eq(atomic_load(&run->runs[run->fail_at]), 1);
        /* Nothing that depends on the failed node ran: its direct successors in particular. */
        for (uint32_t v = 0; v < g->n; v++)
            for (uint32_t i = g->pred_off[v]; i < g->pred_off[v + 1]; i++)
                if (g->pred[i] == run->fail_at)
                    cr_assert_eq(atomic_load(&run->runs[v]), 0, "successor %u ran", v);
    }
    /* And the instance runs cleanly again afterwards. */
    test_run_reset(run);
    run->fail_at = UINT32_MAX;
    cr_assert_eq(sched_instance_start(s, run->inst, 0, test_run_done, run), 0);
    cr_assert_eq(sched_instance_wait(run->inst), SCHED_OK);
    check_partial_run(run, SCHED_OK);
    test_run_free(run);
    test_dag_free(g);
    sched_destroy(s);
}

Test(instance, deferred_nodes_are_completed_from_a_device_thread, .timeout = 60)
{
    sched_config cfg = test_config(1, 2, true);
    sched *s = test_sched_create(&cfg);
    test_device dev;
    test_device_start(&dev);
    test_dag_shape shape = {
        .n = 2000 / TEST_SCALE, .max_fan_in = 4, .hubs = 2, .hub_fan_out = 100, .deferred_pct = 20};
    test_dag *g = test_dag_random(&shape, 11);
    test_run *runs[4];
    for (int i = 0; i < 4; i++)
        runs[i] = test_run_create(g, &dev);
    for (int r = 0; r < 10; r++) {
        for (int i = 0; i < 4; i++) {
            test_run_reset(runs[i]);
            cr_assert_eq(sched_instance_start(s, runs[i]->inst, 0, test_run_done, runs[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(sched_instance_wait_for(runs[i]->inst, 20ull * 1000000000u), 0);
            check_partial_run(runs[i], SCHED_OK);
        }
    }
    for (int i = 0; i < 4; i++)
        test_run_free(runs[i]);
    test_dag_free(g);
    test_device_stop(&dev);
    sched_destroy(s);
}

/* A two-node DAG whose first node is deferred and parked in `pending`. */
typedef struct pending_state {
    atomic_int started;
    atomic_int second_ran;
    atomic_int cb_done;
    atomic_int waiter_saw_cb;
} pending_state;

static int pending_first(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    pending_state *p = ctx->user_arg;
    atomic_store(&p->started, 1);
    return SCHED_PENDING;
}

static int pending_second(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    pending_state *p = ctx->user_arg;
    atomic_store(&p->second_ran, 1);
    return SCHED_OK;
}

static sched_dag *pending_dag(void)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    cr_assert_eq(sched_dag_add_node(b, "upload", pending_first, NULL, 0, NULL), 0);
    cr_assert_eq(sched_dag_add_node(b, "postprocess", pending_second, NULL, 0, NULL), 0);
    cr_assert_eq(sched_dag_add_edge(b, 0, 1), 0);
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    return dag;
}

static void slow_done(sched_instance *inst, int status, void *arg)
{
    (void)inst;
    (void)status;
    pending_state *p = arg;
    test_sleep_us(20000); /* waiters must not return before this callback does */
    atomic_store(&p->cb_done, 1);
}

Test(instance, wait_for_times_out_while_a_node_is_pending, .timeout = 30)
{
    sched_config cfg = test_config(1, 2, true);
    sched *s = test_sched_create(&cfg);
    sched_dag *dag = pending_dag();
    pending_state p = {0};
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &p, &inst), 0);
    cr_assert_eq(sched_instance_start(s, inst, 0, slow_done, &p), 0);
    cr_assert(test_wait_flag(&p.started, 5000));
    uint64_t t0 = test_now_ns();
    cr_expect_eq(sched_instance_wait_for(inst, 30ull * 1000000u), -ETIMEDOUT);
    uint64_t waited = test_now_ns() - t0;
    cr_expect_geq(waited, 29ull * 1000000u, "returned after %llu ns", (unsigned long long)waited);
    cr_expect_eq(sched_instance_wait_for(inst, 0), -ETIMEDOUT);
    cr_expect(sched_instance_running(inst));
    cr_expect_eq(sched_instance_start(s, inst, 0, NULL, NULL), -EBUSY);
    cr_expect_eq(atomic_load(&p.second_ran), 0);
    /* Complete the pending node: the second runs, the slow callback runs, then waiters go. */
    cr_assert_eq(sched_instance_complete_node(inst, 0, SCHED_OK), 0);
    cr_assert_eq(sched_instance_wait_for(inst, 10ull * 1000000000u), 0);
    cr_expect_eq(atomic_load(&p.cb_done), 1, "a waiter returned before the callback");
    cr_expect_eq(atomic_load(&p.second_ran), 1);
    cr_expect_eq(sched_instance_status(inst), SCHED_OK);
    cr_expect_eq(sched_instance_complete_node(inst, 0, SCHED_OK), -EINVAL);
    sched_instance_free(inst);
    sched_dag_free(dag);
    sched_destroy(s);
}

Test(instance, completing_a_node_with_an_error_fails_the_instance, .timeout = 30)
{
    sched_config cfg = test_config(1, 1, true);
    sched *s = test_sched_create(&cfg);
    sched_dag *dag = pending_dag();
    pending_state p = {0};
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &p, &inst), 0);
    cr_assert_eq(sched_instance_start(s, inst, 0, NULL, NULL), 0);
    cr_assert(test_wait_flag(&p.started, 5000));
    cr_assert_eq(sched_instance_complete_node(inst, 0, -EPIPE), 0);
    cr_expect_eq(sched_instance_wait(inst), -EPIPE);
    cr_expect_eq(atomic_load(&p.second_ran), 0, "a node ran after its predecessor failed");
    sched_instance_free(inst);
    sched_dag_free(dag);
    sched_destroy(s);
}

Test(instance, cancel_while_pending_waits_for_the_completion, .timeout = 30)
{
    sched_config cfg = test_config(1, 1, true);
    sched *s = test_sched_create(&cfg);
    sched_dag *dag = pending_dag();
    pending_state p = {0};
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &p, &inst), 0);
    cr_assert_eq(sched_instance_start(s, inst, 0, NULL, NULL), 0);
    cr_assert(test_wait_flag(&p.started, 5000));
    cr_assert_eq(sched_instance_cancel(inst), 0);
    /* The pending node is owned by its device: the run cannot end before it completes. */
    cr_expect_eq(sched_instance_wait_for(inst, 20ull * 1000000u), -ETIMEDOUT);
    cr_assert_eq(sched_instance_complete_node(inst, 0, SCHED_OK), 0);
    cr_expect_eq(sched_instance_wait(inst), SCHED_CANCELLED);
    cr_expect_eq(atomic_load(&p.second_ran), 0);
    cr_expect_eq(sched_instance_cancel(inst), -EINVAL, "cancel of an idle instance");
    sched_instance_free(inst);
    sched_dag_free(dag);
    sched_destroy(s);
}

static void expect_status_then_flag(sched_instance *inst, int status, void *arg)
{
    pending_state *p = arg;
    cr_expect_eq(sched_instance_status(inst), status);
    test_sleep_us(5000);
    atomic_fetch_add(&p->cb_done, 1);
}

static void *complete_later(void *arg)
{
    test_sleep_us(20000);
    cr_expect_eq(sched_instance_complete_node(arg, 0, SCHED_OK), 0);
    return NULL;
}

Test(instance, free_waits_for_a_running_instance, .timeout = 30)
{
    sched_config cfg = test_config(1, 2, true);
    sched *s = test_sched_create(&cfg);
    sched_dag *dag = pending_dag();
    pending_state p = {0};
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &p, &inst), 0);
    cr_assert_eq(sched_instance_start(s, inst, 0, expect_status_then_flag, &p), 0);
    cr_assert(test_wait_flag(&p.started, 5000));
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, complete_later, inst), 0);
    /* free blocks until the helper completes the node and the callback has returned. */
    sched_instance_free(inst);
    cr_expect_eq(atomic_load(&p.cb_done), 1);
    cr_expect_eq(atomic_load(&p.second_ran), 1);
    pthread_join(t, NULL);
    sched_dag_free(dag);
    sched_destroy(s);
}
