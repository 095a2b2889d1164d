/* The scheduler object: configuration, lifetime, one-off tasks, executors, streams. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include "tests/sched/sched_test_util.h"

Test(sched, default_config_comes_from_the_hardware, .timeout = 10)
{
    sched_config c = sched_config_default();
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cr_expect_eq(c.n_streams, 1);
    cr_expect_eq(c.workers_per_stream, (uint32_t)n);
    cr_expect(c.steal_across_streams);
    cr_expect_geq(c.spin_us, 20);
    cr_expect_leq(c.spin_us, 50);
    cr_expect_not(c.trace);
    cr_expect_gt(c.injection_capacity, 1);
    sched *s = test_sched_create(&c);
    cr_expect_eq(sched_worker_count(s), (uint32_t)n);
    cr_expect_eq(sched_stream_count(s), 1);
    sched_destroy(s);
    sched_destroy(NULL);
}

Test(sched, create_rejects_bad_configs, .timeout = 10)
{
    sched *s = (sched *)0x1;
    sched_config c = test_config(0, 1, true);
    cr_expect_eq(sched_create(&c, &s), -EINVAL);
    c = test_config(1, 0, true);
    cr_expect_eq(sched_create(&c, &s), -EINVAL);
    c = test_config(100, 100, true);
    cr_expect_eq(sched_create(&c, &s), -EINVAL);
    cr_expect_eq(sched_create(NULL, &s), -EINVAL);
    cr_expect_eq(s, (sched *)0x1, "out parameter written on failure");
    /* Capacities round up to powers of two. */
    c = test_config(1, 1, true);
    c.injection_capacity = 100;
    c.deque_capacity = 3;
    s = test_sched_create(&c);
    cr_expect_eq(sched_get_config(s)->injection_capacity, 128);
    cr_expect_eq(sched_get_config(s)->deque_capacity, 4);
    sched_destroy(s);
}

typedef struct seen {
    atomic_uint count;
    atomic_uint bad;
    atomic_uint stream_mask;
    sched *s;
    int expect_stream;
} seen;

static int record_task(const sched_task_ctx *ctx, void *arg)
{
    seen *x = arg;
    if (ctx->sched != x->s || ctx->instance != NULL || ctx->user_arg != arg ||
        ctx->node != UINT32_MAX || ctx->executor != SCHED_EXECUTOR_STREAM ||
        ctx->worker >= sched_worker_count(x->s))
        atomic_fetch_add(&x->bad, 1);
    if (x->expect_stream >= 0 && ctx->stream != (uint32_t)x->expect_stream)
        atomic_fetch_add(&x->bad, 1);
    atomic_fetch_or(&x->stream_mask, 1u << ctx->stream);
    atomic_fetch_add(&x->count, 1);
    return SCHED_OK;
}

static void wait_count(atomic_uint *c, unsigned n)
{
    uint64_t end = test_now_ns() + 10ull * 1000000000u;
    while (atomic_load(c) < n && test_now_ns() < end)
        test_sleep_us(50);
    cr_assert_eq(atomic_load(c), n, "%u of %u tasks ran", atomic_load(c), n);
}

Test(sched, submitted_tasks_run_once_with_their_context, .timeout = 30)
{
    sched_config c = test_config(3, 1, false);
    sched *s = test_sched_create(&c);
    for (int stream = 0; stream < 3; stream++) {
        seen x = {.s = s, .expect_stream = stream};
        for (int i = 0; i < 1000; i++) {
            int rc;
            while ((rc = sched_submit(s, stream, record_task, &x)) == -EAGAIN)
                test_sleep_us(10);
            cr_assert_eq(rc, 0);
        }
        wait_count(&x.count, 1000);
        cr_expect_eq(atomic_load(&x.bad), 0);
    }
    seen any = {.s = s, .expect_stream = -1};
    for (int i = 0; i < 300; i++)
        cr_assert_eq(sched_submit(s, SCHED_STREAM_ANY, record_task, &any), 0);
    wait_count(&any.count, 300);
    cr_expect_eq(atomic_load(&any.stream_mask), 7, "SCHED_STREAM_ANY did not spread");
    cr_expect_eq(sched_submit(s, 3, record_task, &any), -EINVAL);
    cr_expect_eq(sched_submit(s, -2, record_task, &any), -EINVAL);
    cr_expect_eq(sched_submit(s, 0, NULL, &any), -EINVAL);
    sched_destroy(s);
}

/* sched_post: the caller's records, no allocation; each runs once with the context
 * sched_submit's tasks get, from outside (the injection queue) and from a worker (its deque);
 * the scheduler never frees them (ASan would see a free of a stack or static array). */
#define POSTED 64

typedef struct posting {
    seen x;
    sched_job inner[POSTED];
} posting;

static int post_more(const sched_task_ctx *ctx, void *arg)
{
    posting *p = arg;
    for (int i = 0; i < POSTED; i++) {
        p->inner[i] = (sched_job){.fn = record_task, .arg = &p->x};
        while (sched_post(ctx->sched, (int)ctx->stream, &p->inner[i]) == -EAGAIN)
            test_sleep_us(10);
    }
    return SCHED_OK;
}

Test(sched, posted_jobs_run_once_from_the_callers_records, .timeout = 30)
{
    sched_config c = test_config(2, 2, false);
    sched *s = test_sched_create(&c);
    sched_job outer[POSTED];
    seen x = {.s = s, .expect_stream = 1};
    for (int i = 0; i < POSTED; i++) {
        outer[i] = (sched_job){.fn = record_task, .arg = &x};
        cr_assert_eq(sched_post(s, 1, &outer[i]), 0);
        cr_expect_eq(outer[i].stream, 1u);
    }
    wait_count(&x.count, POSTED);
    cr_expect_eq(atomic_load(&x.bad), 0);
    static posting p;
    p.x = (seen){.s = s, .expect_stream = 0};
    sched_job first = {.fn = post_more, .arg = &p};
    cr_assert_eq(sched_post(s, 0, &first), 0);
    wait_count(&p.x.count, POSTED);
    cr_expect_eq(atomic_load(&p.x.bad), 0);
    sched_job bad = {.fn = NULL};
    cr_expect_eq(sched_post(s, 0, &bad), -EINVAL);
    bad.fn = record_task;
    cr_expect_eq(sched_post(s, 2, &bad), -EINVAL);
    cr_expect_eq(sched_post(s, 0, NULL), -EINVAL);
    sched_destroy(s);
}

/* A node that records the worker (and so the stream) that ran it. */
typedef struct where {
    sched *s;
    uint32_t instance_stream;
    atomic_uint off_stream; /* nodes run by a worker of another stream */
    atomic_uint count;
} where;

static int where_task(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    where *w = ctx->user_arg;
    uint32_t per_stream = sched_worker_count(w->s) / sched_stream_count(w->s);
    if (ctx->worker / per_stream != w->instance_stream)
        atomic_fetch_add(&w->off_stream, 1);
    if (ctx->stream != w->instance_stream)
        atomic_fetch_add(&w->off_stream, 1000000);
    test_spin_ns(20000);
    atomic_fetch_add(&w->count, 1);
    return SCHED_OK;
}

static sched_dag *fan_dag(uint32_t n)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    cr_assert_eq(sched_dag_add_node(b, "root", where_task, NULL, 0, NULL), 0);
    for (uint32_t i = 1; i <= n; i++) {
        cr_assert_eq(sched_dag_add_node(b, NULL, where_task, NULL, 0, NULL), 0);
        cr_assert_eq(sched_dag_add_edge(b, 0, i), 0);
    }
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    return dag;
}

Test(sched, isolated_streams_keep_an_instance_on_its_workers, .timeout = 30)
{
    sched_config c = test_config(2, 2, false);
    sched *s = test_sched_create(&c);
    sched_dag *dag = fan_dag(200);
    where w0 = {.s = s, .instance_stream = 0}, w1 = {.s = s, .instance_stream = 1};
    sched_instance *i0, *i1;
    cr_assert_eq(sched_instance_create(dag, &w0, &i0), 0);
    cr_assert_eq(sched_instance_create(dag, &w1, &i1), 0);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(sched_instance_start(s, i0, 0, NULL, NULL), 0);
        cr_assert_eq(sched_instance_start(s, i1, 1, NULL, NULL), 0);
        cr_assert_eq(sched_instance_wait(i0), SCHED_OK);
        cr_assert_eq(sched_instance_wait(i1), SCHED_OK);
    }
    cr_expect_eq(atomic_load(&w0.count), 3 * 201);
    cr_expect_eq(atomic_load(&w0.off_stream), 0, "stream 0's nodes ran elsewhere");
    cr_expect_eq(atomic_load(&w1.off_stream), 0, "stream 1's nodes ran elsewhere");
    sched_instance_free(i0);
    sched_instance_free(i1);
    sched_dag_free(dag);
    sched_destroy(s);
}

Test(sched, idle_workers_steal_across_streams, .timeout = 30)
{
    /* Stream 1's worker has nothing to do; with stealing on it helps stream 0. */
    sched_config c = test_config(2, 1, true);
    sched *s = test_sched_create(&c);
    sched_dag *dag = fan_dag(400);
    where w = {.s = s, .instance_stream = 0};
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &w, &inst), 0);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(sched_instance_start(s, inst, 0, NULL, NULL), 0);
        cr_assert_eq(sched_instance_wait(inst), SCHED_OK);
    }
    cr_expect_eq(atomic_load(&w.count), 3 * 401);
    cr_expect_lt(atomic_load(&w.off_stream), 1000000, "ctx->stream is not the instance's");
    cr_expect_gt(atomic_load(&w.off_stream), 0, "no node was stolen by stream 1");
    sched_instance_free(inst);
    sched_dag_free(dag);
    sched_destroy(s);
}

/* Executor nodes run on the executor's threads, stream nodes never do. */
typedef struct exec_check {
    uint32_t n_workers;
    uint32_t cb_id;
    uint32_t wait_id;
    atomic_uint misrouted;
    atomic_uint on_cb, on_wait, on_stream;
    pthread_t cb_thread;
    atomic_int cb_thread_set;
    atomic_uint cb_thread_changed;
} exec_check;

static int exec_task(const sched_task_ctx *ctx, void *arg)
{
    exec_check *e = ctx->user_arg;
    uint32_t want = (uint32_t)(uintptr_t)arg;
    if (ctx->executor != want)
        atomic_fetch_add(&e->misrouted, 1);
    if (want == SCHED_EXECUTOR_STREAM) {
        if (ctx->worker >= e->n_workers)
            atomic_fetch_add(&e->misrouted, 1);
        atomic_fetch_add(&e->on_stream, 1);
    } else {
        if (ctx->worker < e->n_workers)
            atomic_fetch_add(&e->misrouted, 1);
        if (want == e->cb_id) {
            /* A one-thread executor: always the same thread. */
            if (!atomic_exchange(&e->cb_thread_set, 1))
                e->cb_thread = pthread_self();
            else if (!pthread_equal(e->cb_thread, pthread_self()))
                atomic_fetch_add(&e->cb_thread_changed, 1);
            atomic_fetch_add(&e->on_cb, 1);
        } else {
            atomic_fetch_add(&e->on_wait, 1);
        }
    }
    return SCHED_OK;
}

Test(sched, executors_run_routed_nodes_on_their_own_threads, .timeout = 30)
{
    sched_config c = test_config(1, 2, true);
    sched *s = test_sched_create(&c);
    exec_check e = {.n_workers = sched_worker_count(s)};
    cr_assert_eq(sched_add_executor(s, "callback", 1, &e.cb_id), 0);
    cr_assert_eq(sched_add_executor(s, "device-wait", 2, &e.wait_id), 0);
    cr_expect_eq(e.cb_id, 1);
    cr_expect_eq(e.wait_id, 2);
    uint32_t found = 0;
    cr_expect_eq(sched_find_executor(s, "device-wait", &found), 0);
    cr_expect_eq(found, e.wait_id);
    cr_expect_eq(sched_find_executor(s, "nope", &found), -ENOENT);
    cr_expect_eq(sched_add_executor(s, "callback", 1, &found), -EEXIST);
    cr_expect_eq(sched_add_executor(s, "zero", 0, &found), -EINVAL);

    /* An async request's pipeline: stream → device-wait → stream → callback, for 50 items. */
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    uint32_t prev = UINT32_MAX;
    uint32_t stages[4] = {SCHED_EXECUTOR_STREAM, e.wait_id, SCHED_EXECUTOR_STREAM, e.cb_id};
    for (int i = 0; i < 200; i++) {
        uint32_t id;
        uint32_t ex = stages[i % 4];
        cr_assert_eq(sched_dag_add_node(b, NULL, exec_task, (void *)(uintptr_t)ex, ex, &id), 0);
        if (prev != UINT32_MAX && i % 4 != 0)
            cr_assert_eq(sched_dag_add_edge(b, prev, id), 0);
        prev = id;
    }
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, &e, &inst), 0);
    for (int r = 0; r < 5; r++) {
        cr_assert_eq(sched_instance_start(s, inst, 0, NULL, NULL), 0);
        cr_assert_eq(sched_instance_wait(inst), SCHED_OK);
    }
    cr_expect_eq(atomic_load(&e.misrouted), 0);
    cr_expect_eq(atomic_load(&e.on_stream), 5 * 100);
    cr_expect_eq(atomic_load(&e.on_wait), 5 * 50);
    cr_expect_eq(atomic_load(&e.on_cb), 5 * 50);
    cr_expect_eq(atomic_load(&e.cb_thread_changed), 0);
    sched_instance_free(inst);

    /* A DAG that names an executor the scheduler does not have cannot start there. */
    sched_config c2 = test_config(1, 1, true);
    sched *other = test_sched_create(&c2);
    cr_assert_eq(sched_instance_create(dag, &e, &inst), 0);
    cr_expect_eq(sched_instance_start(other, inst, 0, NULL, NULL), -EINVAL);
    cr_expect_not(sched_instance_running(inst));
    sched_instance_free(inst);
    sched_destroy(other);
    sched_dag_free(dag);
    sched_destroy(s);
}

Test(sched, executor_limit_is_enforced, .timeout = 30)
{
    sched_config c = test_config(1, 1, true);
    sched *s = test_sched_create(&c);
    for (uint32_t i = 0; i < SCHED_MAX_EXECUTORS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "ex%u", i);
        uint32_t id;
        cr_assert_eq(sched_add_executor(s, name, 1, &id), 0);
        cr_expect_eq(id, i + 1);
    }
    uint32_t id;
    cr_expect_eq(sched_add_executor(s, "one-too-many", 1, &id), -ENOSPC);
    sched_destroy(s);
}

Test(sched, pinned_workers_run_tasks, .timeout = 30)
{
    sched_config c = test_config(2, 2, true);
    c.pin_cpus = true;
    sched *s = test_sched_create(&c);
    seen x = {.s = s, .expect_stream = -1};
    for (int i = 0; i < 500; i++)
        cr_assert_eq(sched_submit(s, i % 2, record_task, &x), 0);
    wait_count(&x.count, 500);
    cr_expect_eq(atomic_load(&x.bad), 0);
    sched_destroy(s);
}

/* Threads still under the process's name (the main thread aside): a thread
 * starts with its creator's name, so a worker or executor thread that named
 * itself only once it ran showed as the caller's for a moment after
 * sched_create returned, and tools counting threads by name
 * (tests/cpu:test_cpu_threads' census, bench_latency) miscounted it. */
static int unnamed_threads(void)
{
    char self[32] = "", comm[32], path[300];
    FILE *f = fopen("/proc/self/comm", "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(self, sizeof self, f));
    fclose(f);
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || atol(e->d_name) == getpid())
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue; /* exited meanwhile */
        if (fgets(comm, sizeof comm, f) != NULL && strcmp(comm, self) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

Test(sched, started_threads_carry_their_names_when_create_returns, .timeout = 30)
{
    int before = unnamed_threads();
    for (int round = 0; round < 50; round++) {
        sched_config c = test_config(2, 2, true);
        sched *s = test_sched_create(&c);
        cr_assert_eq(unnamed_threads(), before,
                     "round %d: a stream worker under the process's name", round);
        uint32_t id;
        cr_assert_eq(sched_add_executor(s, "device-wait", 2, &id), 0);
        cr_assert_eq(unnamed_threads(), before,
                     "round %d: an executor thread under the process's name", round);
        sched_destroy(s);
    }
}

/* A scheduler created by a thread that may run on one CPU only (a server
 * pinned with taskset) does not spin: its workers and waiters would only
 * keep that CPU from the thread they wait for. With more CPUs it keeps the
 * configured spin. */
Test(sched, no_spinning_where_the_creator_may_run_on_one_cpu_only, .timeout = 10)
{
    cpu_set_t all, one;
    CPU_ZERO(&all);
    cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
    int first = 0;
    while (!CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    sched_config c = sched_config_default();
    c.spin_us = 50;
    sched *s = test_sched_create(&c);
    cr_expect_eq(sched_get_config(s)->spin_us, 0);
    /* It still runs DAGs to the end, their waiter going straight to sleep. */
    test_dag_shape shape = {.n = 200, .max_fan_in = 3, .hubs = 2, .hub_fan_out = 20};
    test_dag *g = test_dag_random(&shape, 7);
    test_run *run = test_run_create(g, NULL);
    for (int r = 0; r < 20; r++) {
        test_run_reset(run);
        cr_assert_eq(sched_instance_start(s, run->inst, 0, test_run_done, run), 0);
        cr_assert_eq(sched_instance_wait(run->inst), SCHED_OK);
        for (uint32_t v = 0; v < g->n; v++)
            cr_assert_eq(atomic_load(&run->runs[v]), 1, "round %d: node %u ran %u times", r, v,
                         atomic_load(&run->runs[v]));
    }
    test_run_free(run);
    test_dag_free(g);
    sched_destroy(s);
    cr_assert_eq(sched_setaffinity(0, sizeof(all), &all), 0);
    if (CPU_COUNT(&all) < 2) {
        cr_log_warn("one CPU usable here: the multi-CPU half of this case cannot run");
        return;
    }
    s = test_sched_create(&c);
    cr_expect_eq(sched_get_config(s)->spin_us, 50);
    sched_destroy(s);
}
