/*
 * Helpers shared by the scheduler's tests: scaling under sanitizers, clocks, random numbers,
 * configurations, and random DAGs whose tasks check that they run once, after their
 * predecessors.
 */
#ifndef RN_TESTS_SCHED_TEST_UTIL_H
#define RN_TESTS_SCHED_TEST_UTIL_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/sched.h"

/* Sanitizers slow every atomic and allocation down: divide iteration counts by this. */
#if defined(__SANITIZE_THREAD__)
#define TEST_SCALE 4
#elif defined(__SANITIZE_ADDRESS__)
#define TEST_SCALE 2
#else
#define TEST_SCALE 1
#endif

static inline uint64_t test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void test_sleep_us(uint64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000u),
                          .tv_nsec = (long)(us % 1000000u) * 1000};
    nanosleep(&ts, NULL);
}

/* Busy-waits for `ns` nanoseconds (a task's "work"). */
static inline void test_spin_ns(uint64_t ns)
{
    uint64_t end = test_now_ns() + ns;
    while (test_now_ns() < end) {
    }
}

static inline uint64_t test_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

/* Waits until *flag becomes non-zero or `timeout_ms` passes; returns whether it did. */
static inline bool test_wait_flag(atomic_int *flag, uint64_t timeout_ms)
{
    uint64_t end = test_now_ns() + timeout_ms * 1000000u;
    while (!atomic_load(flag)) {
        if (test_now_ns() > end)
            return false;
        test_sleep_us(20);
    }
    return true;
}

static inline sched_config test_config(uint32_t streams, uint32_t workers, bool steal)
{
    sched_config c = sched_config_default();
    c.n_streams = streams;
    c.workers_per_stream = workers;
    c.steal_across_streams = steal;
    c.spin_us = 20;
    c.steal_idle_us = 10;
    return c;
}

static inline sched *test_sched_create(const sched_config *cfg)
{
    sched *s = NULL;
    int rc = sched_create(cfg, &s);
    cr_assert_eq(rc, 0, "sched_create: %d", rc);
    cr_assert_not_null(s);
    return s;
}

/* ------------------------------------------------------------------ random DAGs */

/* How a node behaves. */
enum {
    NODE_PLAIN = 0,
    NODE_DEFERRED = 1, /* returns SCHED_PENDING; the device thread completes it */
    NODE_EXECUTOR = 2, /* routed to the "callback" executor */
};

typedef struct test_dag {
    uint32_t n;
    uint32_t *pred_off; /* predecessors of v: pred[pred_off[v] .. pred_off[v+1]) */
    uint32_t *pred;
    uint8_t *kind;
    uint32_t *spin_ns; /* per-node busy work */
    sched_dag *dag;
} test_dag;

struct test_device;

/* The state of one instance as the tasks see it through ctx->user_arg. */
typedef struct test_run {
    const test_dag *g;
    atomic_uint *runs;        /* per node: times run in this run */
    atomic_uint order_errors; /* a node ran before one of its predecessors */
    atomic_uint wrong_ctx;    /* the context did not match */
    atomic_uint callbacks;    /* completion callbacks in this run */
    atomic_int last_status;
    uint32_t expected_executor_worker_min; /* executor threads have ids >= this */
    uint32_t cancel_at;                    /* node that cancels its own instance, or UINT32_MAX */
    uint32_t fail_at;                      /* node that returns an error, or UINT32_MAX */
    struct test_device *device;
    sched_instance *inst;
} test_run;

/* A "device": a thread that completes deferred nodes after a short random delay. */
typedef struct test_device {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct {
        sched_instance *inst;
        uint32_t node;
    } * q;
    size_t cap, head, count;
    bool stop;
    pthread_t thread;
    uint64_t rng;
} test_device;

static inline void *test_device_main(void *arg)
{
    test_device *d = arg;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        while (d->count == 0 && !d->stop)
            pthread_cond_wait(&d->cond, &d->lock);
        if (d->count == 0)
            break;
        sched_instance *inst = d->q[d->head].inst;
        uint32_t node = d->q[d->head].node;
        d->head = (d->head + 1) % d->cap;
        d->count--;
        uint64_t r = test_rand(&d->rng);
        pthread_mutex_unlock(&d->lock);
        if (r % 4 == 0)
            test_sleep_us(r % 50);
        int rc = sched_instance_complete_node(inst, node, SCHED_OK);
        cr_expect_eq(rc, 0, "complete_node(%u): %d", node, rc);
        pthread_mutex_lock(&d->lock);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static inline void test_device_start(test_device *d)
{
    memset(d, 0, sizeof(*d));
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cond, NULL);
    d->cap = 1 << 16;
    d->q = calloc(d->cap, sizeof(*d->q));
    d->rng = 0x1234567;
    pthread_create(&d->thread, NULL, test_device_main, d);
}

static inline void test_device_submit(test_device *d, sched_instance *inst, uint32_t node)
{
    pthread_mutex_lock(&d->lock);
    if (d->count == d->cap)
        abort(); /* called from worker threads: no Criterion assertion here */
    d->q[(d->head + d->count) % d->cap].inst = inst;
    d->q[(d->head + d->count) % d->cap].node = node;
    d->count++;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
}

static inline void test_device_stop(test_device *d)
{
    pthread_mutex_lock(&d->lock);
    d->stop = true;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    free(d->q);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->cond);
}

/* The task of every random-DAG node: checks predecessors and context, counts itself. */
static inline int test_dag_task(const sched_task_ctx *ctx, void *node_arg)
{
    (void)node_arg;
    test_run *run = ctx->user_arg;
    const test_dag *g = run->g;
    uint32_t v = ctx->node;
    if (ctx->instance != run->inst || v >= g->n)
        atomic_fetch_add(&run->wrong_ctx, 1);
    if (g->kind[v] == NODE_EXECUTOR &&
        (ctx->executor == SCHED_EXECUTOR_STREAM || ctx->worker < run->expected_executor_worker_min))
        atomic_fetch_add(&run->wrong_ctx, 1);
    if (g->kind[v] != NODE_EXECUTOR && ctx->executor != SCHED_EXECUTOR_STREAM)
        atomic_fetch_add(&run->wrong_ctx, 1);
    for (uint32_t i = g->pred_off[v]; i < g->pred_off[v + 1]; i++)
        if (atomic_load_explicit(&run->runs[g->pred[i]], memory_order_relaxed) != 1)
            atomic_fetch_add(&run->order_errors, 1);
    if (g->spin_ns[v])
        test_spin_ns(g->spin_ns[v]);
    atomic_fetch_add_explicit(&run->runs[v], 1, memory_order_relaxed);
    if (v == run->cancel_at)
        sched_instance_cancel(ctx->instance);
    if (v == run->fail_at)
        return -EIO;
    if (g->kind[v] == NODE_DEFERRED) {
        test_device_submit(run->device, ctx->instance, v);
        return SCHED_PENDING;
    }
    return SCHED_OK;
}

typedef struct test_dag_shape {
    uint32_t n;
    uint32_t max_fan_in;   /* ordinary nodes take 0..max_fan_in predecessors */
    uint32_t hubs;         /* nodes with a large fan-out */
    uint32_t hub_fan_out;  /* ... of this many successors */
    uint32_t deferred_pct; /* percent of nodes that are deferred */
    uint32_t executor_pct; /* percent of nodes routed to the executor */
    uint32_t spin_pct;     /* percent of nodes with busy work */
    uint32_t spin_ns;      /* ... of up to this long */
    uint32_t executor_id;
} test_dag_shape;

/* Builds a random DAG: nodes in a random order, edges only from earlier to later nodes of a
 * hidden topological order (so it is acyclic), some hubs with wide fan-out. */
static inline test_dag *test_dag_random(const test_dag_shape *sh, uint64_t seed)
{
    uint64_t rng = seed * 2654435761u + 1;
    uint32_t n = sh->n;
    test_dag *g = calloc(1, sizeof(*g));
    g->n = n;
    g->kind = calloc(n, 1);
    g->spin_ns = calloc(n, sizeof(uint32_t));
    /* perm[t] = the node id of topological position t */
    uint32_t *perm = malloc(n * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(test_rand(&rng) % (i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    size_t cap = (size_t)n * (sh->max_fan_in + 1) + (size_t)sh->hubs * sh->hub_fan_out + 16;
    uint32_t *from = malloc(cap * sizeof(uint32_t)), *to = malloc(cap * sizeof(uint32_t));
    size_t m = 0;
    for (uint32_t t = 1; t < n; t++) {
        uint32_t k = (uint32_t)(test_rand(&rng) % (sh->max_fan_in + 1));
        for (uint32_t i = 0; i < k; i++) {
            /* Mostly nearby predecessors (long chains), sometimes far ones. */
            uint32_t back = test_rand(&rng) % 4 ? 1 + (uint32_t)(test_rand(&rng) % 16) : t;
            uint32_t p = back >= t ? (uint32_t)(test_rand(&rng) % t) : t - back;
            from[m] = perm[p];
            to[m] = perm[t];
            m++;
        }
    }
    for (uint32_t h = 0; h < sh->hubs && n > 2; h++) {
        uint32_t t = (uint32_t)(test_rand(&rng) % (n / 2));
        for (uint32_t i = 0; i < sh->hub_fan_out; i++) {
            uint32_t u = t + 1 + (uint32_t)(test_rand(&rng) % (n - t - 1));
            from[m] = perm[t];
            to[m] = perm[u];
            m++;
        }
    }
    for (uint32_t v = 0; v < n; v++) {
        uint32_t r = (uint32_t)(test_rand(&rng) % 100);
        if (r < sh->deferred_pct)
            g->kind[v] = NODE_DEFERRED;
        else if (r < sh->deferred_pct + sh->executor_pct)
            g->kind[v] = NODE_EXECUTOR;
        if (sh->spin_ns && test_rand(&rng) % 100 < sh->spin_pct)
            g->spin_ns[v] = (uint32_t)(test_rand(&rng) % sh->spin_ns);
    }
    /* Predecessor lists (CSR) for the tasks' checks. */
    g->pred_off = calloc(n + 1, sizeof(uint32_t));
    g->pred = malloc((m + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < m; i++)
        g->pred_off[to[i] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        g->pred_off[v + 1] += g->pred_off[v];
    uint32_t *fill = calloc(n, sizeof(uint32_t));
    for (size_t i = 0; i < m; i++)
        g->pred[g->pred_off[to[i]] + fill[to[i]]++] = from[i];
    free(fill);

    sched_dag_builder *b = NULL;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    for (uint32_t v = 0; v < n; v++) {
        char name[32];
        snprintf(name, sizeof(name), "n%u", v);
        uint32_t ex = g->kind[v] == NODE_EXECUTOR ? sh->executor_id : SCHED_EXECUTOR_STREAM;
        uint32_t id;
        cr_assert_eq(sched_dag_add_node(b, name, test_dag_task, NULL, ex, &id), 0);
        cr_assert_eq(id, v);
    }
    for (size_t i = 0; i < m; i++)
        cr_assert_eq(sched_dag_add_edge(b, from[i], to[i]), 0);
    cr_assert_eq(sched_dag_build(b, &g->dag), 0);
    sched_dag_builder_free(b);
    free(from);
    free(to);
    free(perm);
    return g;
}

static inline void test_dag_free(test_dag *g)
{
    sched_dag_free(g->dag);
    free(g->pred_off);
    free(g->pred);
    free(g->kind);
    free(g->spin_ns);
    free(g);
}

static inline void test_run_done(sched_instance *inst, int status, void *cb_arg)
{
    test_run *run = cb_arg;
    (void)inst;
    atomic_store(&run->last_status, status);
    atomic_fetch_add(&run->callbacks, 1);
}

static inline test_run *test_run_create(const test_dag *g, test_device *device)
{
    test_run *run = calloc(1, sizeof(*run));
    run->g = g;
    run->runs = calloc(g->n, sizeof(atomic_uint));
    run->device = device;
    run->cancel_at = UINT32_MAX;
    run->fail_at = UINT32_MAX;
    cr_assert_eq(sched_instance_create(g->dag, run, &run->inst), 0);
    return run;
}

static inline void test_run_reset(test_run *run)
{
    for (uint32_t v = 0; v < run->g->n; v++)
        atomic_store(&run->runs[v], 0);
    atomic_store(&run->callbacks, 0);
    atomic_store(&run->last_status, 12345);
}

static inline void test_run_free(test_run *run)
{
    sched_instance_free(run->inst);
    free(run->runs);
    free(run);
}

#endif /* RN_TESTS_SCHED_TEST_UTIL_H */
