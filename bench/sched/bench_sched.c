/*
 * bench/sched: runnel's scheduler against oneTBB's flow graph, in the same run, with the same
 * task bodies and the same number of threads (2 by default). Graphs are built before timing;
 * every workload reports the median and the min–max of several runs, and each line ends in
 * ratio=<runnel/oneTBB> (time, lower is better). A benchmark, not a test: it checks that every
 * task ran and exits non-zero only when one did not.
 *
 *   bench_sched [--workers N] [--runs N] [--scale F] [--only NAME]
 *
 * docs/performance.md ("Scheduler") holds the results and how to reproduce them.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/common/host.h"
#include "bench/sched/bench.h"
#include "sched/sched.h"

/* ---------------------------------------------------------------- shared task bodies */

static _Thread_local uint64_t tl_work;
static _Atomic(uint64_t) *all_counters[256];
static atomic_int n_counters;
static _Thread_local _Atomic(uint64_t) *tl_counter;

/* Each thread counts in its own (registered) counter: no sharing in the task body. */
static _Atomic(uint64_t) *my_counter(void)
{
    if (tl_counter == NULL) {
        tl_counter = calloc(1, 64);
        int i = atomic_fetch_add(&n_counters, 1);
        if (i >= 256)
            abort();
        all_counters[i] = tl_counter;
    }
    return tl_counter;
}

void bench_work(void)
{
    _Atomic(uint64_t) *c = my_counter();
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    tl_work++;
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_spin(uint64_t ns)
{
    uint64_t end = bench_now_ns() + ns;
    while (bench_now_ns() < end) {
    }
    bench_work();
}

uint64_t bench_work_total(void)
{
    uint64_t n = 0;
    for (int i = 0; i < atomic_load(&n_counters); i++)
        n += atomic_load(all_counters[i]);
    return n;
}

void bench_work_reset(void)
{
    for (int i = 0; i < atomic_load(&n_counters); i++)
        atomic_store(all_counters[i], 0);
}

/* ---------------------------------------------------------------- statistics */

typedef struct series {
    uint64_t *v;
    size_t n;
} series;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double quantile(series s, double q)
{
    qsort(s.v, s.n, sizeof(*s.v), cmp_u64);
    size_t i = (size_t)(q * (double)(s.n - 1) + 0.5);
    return (double)s.v[i];
}

static double smin(series s)
{
    return quantile(s, 0.0);
}

static double smax(series s)
{
    return quantile(s, 1.0);
}

/* ---------------------------------------------------------------- runnel side */

static int task_work(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    bench_work();
    return SCHED_OK;
}

static int task_spin(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    bench_spin((uint64_t)(uintptr_t)arg);
    return SCHED_OK;
}

static void check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "bench_sched: %s failed: %d\n", what, rc);
        exit(2);
    }
}

static sched_dag *dag_chain(size_t n)
{
    sched_dag_builder *b;
    check(sched_dag_builder_create(&b), "builder");
    for (size_t i = 0; i < n; i++) {
        check(sched_dag_add_node(b, "chain", task_work, NULL, 0, NULL), "add_node");
        if (i > 0)
            check(sched_dag_add_edge(b, (uint32_t)i - 1, (uint32_t)i), "add_edge");
    }
    sched_dag *d;
    check(sched_dag_build(b, &d), "build");
    sched_dag_builder_free(b);
    return d;
}

static sched_dag *dag_fan(size_t n, uint64_t spin_ns, bool with_sink)
{
    sched_dag_builder *b;
    check(sched_dag_builder_create(&b), "builder");
    check(sched_dag_add_node(b, "source", task_work, NULL, 0, NULL), "add_node");
    if (with_sink)
        check(sched_dag_add_node(b, "sink", task_work, NULL, 0, NULL), "add_node");
    uint32_t first = with_sink ? 2 : 1;
    for (size_t i = 0; i < n; i++) {
        if (spin_ns)
            check(sched_dag_add_node(b, "spin", task_spin, (void *)(uintptr_t)spin_ns, 0, NULL),
                  "add_node");
        else
            check(sched_dag_add_node(b, "mid", task_work, NULL, 0, NULL), "add_node");
        check(sched_dag_add_edge(b, 0, first + (uint32_t)i), "add_edge");
        if (with_sink)
            check(sched_dag_add_edge(b, first + (uint32_t)i, 1), "add_edge");
    }
    sched_dag *d;
    check(sched_dag_build(b, &d), "build");
    sched_dag_builder_free(b);
    return d;
}

static sched_dag *dag_tree(size_t n)
{
    sched_dag_builder *b;
    check(sched_dag_builder_create(&b), "builder");
    for (size_t i = 0; i < n; i++)
        check(sched_dag_add_node(b, "tree", task_work, NULL, 0, NULL), "add_node");
    for (size_t i = 0; i < n; i++) {
        if (2 * i + 1 < n)
            check(sched_dag_add_edge(b, (uint32_t)i, (uint32_t)(2 * i + 1)), "add_edge");
        if (2 * i + 2 < n)
            check(sched_dag_add_edge(b, (uint32_t)i, (uint32_t)(2 * i + 2)), "add_edge");
    }
    sched_dag *d;
    check(sched_dag_build(b, &d), "build");
    sched_dag_builder_free(b);
    return d;
}

static uint64_t runnel_run(sched *s, sched_instance *inst)
{
    uint64_t t0 = bench_now_ns();
    check(sched_instance_start(s, inst, 0, NULL, NULL), "start");
    check(sched_instance_wait(inst), "wait");
    return bench_now_ns() - t0;
}

/* ---------------------------------------------------------------- the table */

typedef struct options {
    int workers;
    int runs;
    double scale;
    const char *only;
    int failures;
} options;

static void pause_us(uint64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000u),
                          .tv_nsec = (long)(us % 1000000u) * 1000};
    nanosleep(&ts, NULL);
}

static void verify(options *o, const char *who, const char *workload, uint64_t expected)
{
    uint64_t got = bench_work_total();
    if (got != expected) {
        fprintf(stderr, "bench_sched: %s %s ran %llu tasks, expected %llu\n", who, workload,
                (unsigned long long)got, (unsigned long long)expected);
        o->failures++;
    }
    bench_work_reset();
}

/* Runs a whole-graph workload on both schedulers, alternating, and prints its line.
 * `per`: divide times by this for the reported unit (tasks), `unit` names it. */
static void graph_workload(options *o, sched *s, const char *name, sched_dag *dag, tbb_graph *tg,
                           uint64_t tasks, const char *unit, double per, uint64_t ideal_ns)
{
    sched_instance *inst;
    check(sched_instance_create(dag, NULL, &inst), "instance");
    series a = {calloc((size_t)o->runs, 8), (size_t)o->runs};
    series b = {calloc((size_t)o->runs, 8), (size_t)o->runs};
    bench_work_reset();
    /* One untimed warm-up each: first-touch of memory, thread start-up. */
    runnel_run(s, inst);
    verify(o, "runnel", name, tasks);
    tbb_graph_run(tg);
    verify(o, "oneTBB", name, tasks);
    for (int r = 0; r < o->runs; r++) {
        pause_us(10000);
        a.v[r] = runnel_run(s, inst);
        verify(o, "runnel", name, tasks);
        pause_us(10000);
        b.v[r] = tbb_graph_run(tg);
        verify(o, "oneTBB", name, tasks);
    }
    double am = quantile(a, 0.5), bm = quantile(b, 0.5);
    if (ideal_ns == 0) {
        printf("%-22s runnel %8.1f %s [%.1f-%.1f]   oneTBB %8.1f %s [%.1f-%.1f]   ratio=%.3f\n",
               name, am / per, unit, smin(a) / per, smax(a) / per, bm / per, unit, smin(b) / per,
               smax(b) / per, am / bm);
    } else {
        /* overhead per task = (measured - ideal) / tasks */
        double n = (double)tasks, ideal = (double)ideal_ns;
        printf("%-22s runnel %8.1f ns/task overhead [%.1f-%.1f]   oneTBB %8.1f ns/task "
               "overhead [%.1f-%.1f]   (ideal %.2f ms)   ratio=%.3f\n",
               name, (am - ideal) / n, (smin(a) - ideal) / n, (smax(a) - ideal) / n,
               (bm - ideal) / n, (smin(b) - ideal) / n, (smax(b) - ideal) / n, ideal / 1e6,
               am / bm);
    }
    fflush(stdout);
    free(a.v);
    free(b.v);
    sched_instance_free(inst);
}

static bool selected(const options *o, const char *name)
{
    return o->only == NULL || strstr(name, o->only) != NULL;
}

static void bench_graphs(options *o, sched *s)
{
    size_t n = (size_t)(1000000 * o->scale);
    if (n < 1000)
        n = 1000;
    char name[64];

    snprintf(name, sizeof(name), "chain %zu", n);
    if (selected(o, "chain")) {
        sched_dag *d = dag_chain(n);
        tbb_graph *t = tbb_graph_chain(n);
        graph_workload(o, s, name, d, t, n, "ns/task", (double)n, 0);
        tbb_graph_free(t);
        sched_dag_free(d);
    }
    snprintf(name, sizeof(name), "fan-out/in 1-%zu-1", n);
    if (selected(o, "fan")) {
        sched_dag *d = dag_fan(n, 0, true);
        tbb_graph *t = tbb_graph_fan(n, 0, 1);
        graph_workload(o, s, name, d, t, n + 2, "ns/task", (double)(n + 2), 0);
        tbb_graph_free(t);
        sched_dag_free(d);
    }
    size_t tn = 1;
    while (tn - 1 < n)
        tn *= 2;
    tn -= 1; /* a complete binary tree: the smallest 2^k - 1 >= n nodes */
    snprintf(name, sizeof(name), "binary tree %zu", tn);
    if (selected(o, "tree")) {
        sched_dag *d = dag_tree(tn);
        tbb_graph *t = tbb_graph_tree(tn);
        graph_workload(o, s, name, d, t, tn, "ns/task", (double)tn, 0);
        tbb_graph_free(t);
        sched_dag_free(d);
    }
    /* Tasks of 1, 10 and 100 us: 2 workers ideally take tasks * us / 2. */
    static const uint64_t us[] = {1, 10, 100};
    static const size_t count[] = {40000, 4000, 400};
    for (int i = 0; i < 3; i++) {
        size_t k = (size_t)((double)count[i] * (o->scale < 1 ? o->scale * 4 : 1));
        if (k < 50)
            k = 50;
        snprintf(name, sizeof(name), "tasks of %llu us x%zu", (unsigned long long)us[i], k);
        if (!selected(o, "tasks"))
            continue;
        sched_dag *d = dag_fan(k, us[i] * 1000, false);
        tbb_graph *t = tbb_graph_fan(k, us[i] * 1000, 0);
        uint64_t ideal = (uint64_t)k * us[i] * 1000 / (uint64_t)o->workers;
        graph_workload(o, s, name, d, t, k + 1, "", 1, ideal);
        tbb_graph_free(t);
        sched_dag_free(d);
    }
}

/* 2000 six-node chains, one at a time from this (outside) thread: start, wait, next. */
static void bench_small_dags(options *o, sched *s)
{
    if (!selected(o, "six"))
        return;
    enum { CHAINS = 2000 };
    sched_dag *d = dag_chain(6);
    tbb_graph *t = tbb_graph_chain(6);
    sched_instance *inst;
    check(sched_instance_create(d, NULL, &inst), "instance");
    series a = {calloc(CHAINS, 8), CHAINS}, b = {calloc(CHAINS, 8), CHAINS};
    double a50[16], a99[16], b50[16], b99[16];
    int rounds = o->runs < 16 ? o->runs : 16;
    bench_work_reset();
    for (int r = 0; r < rounds; r++) {
        pause_us(10000);
        for (int i = 0; i < CHAINS; i++)
            a.v[i] = runnel_run(s, inst);
        verify(o, "runnel", "six-node chains", 6 * CHAINS);
        a50[r] = quantile(a, 0.5);
        a99[r] = quantile(a, 0.99);
        pause_us(10000);
        for (int i = 0; i < CHAINS; i++)
            b.v[i] = tbb_graph_run(t);
        verify(o, "oneTBB", "six-node chains", 6 * CHAINS);
        b50[r] = quantile(b, 0.5);
        b99[r] = quantile(b, 0.99);
    }
    /* The median over rounds of each round's p50 and p99. */
    uint64_t m[4][16];
    for (int r = 0; r < rounds; r++) {
        m[0][r] = (uint64_t)a50[r];
        m[1][r] = (uint64_t)a99[r];
        m[2][r] = (uint64_t)b50[r];
        m[3][r] = (uint64_t)b99[r];
    }
    series sa50 = {m[0], (size_t)rounds}, sa99 = {m[1], (size_t)rounds};
    series sb50 = {m[2], (size_t)rounds}, sb99 = {m[3], (size_t)rounds};
    printf("%-22s runnel p50 %7.0f ns/DAG [%.0f-%.0f] p99 %7.0f   oneTBB p50 %7.0f ns/DAG "
           "[%.0f-%.0f] p99 %7.0f   ratio=%.3f\n",
           "2000 six-node chains", quantile(sa50, 0.5), smin(sa50), smax(sa50), quantile(sa99, 0.5),
           quantile(sb50, 0.5), smin(sb50), smax(sb50), quantile(sb99, 0.5),
           quantile(sa50, 0.5) / quantile(sb50, 0.5));
    fflush(stdout);
    free(a.v);
    free(b.v);
    sched_instance_free(inst);
    tbb_graph_free(t);
    sched_dag_free(d);
}

typedef struct wake_probe {
    atomic_uint_fast64_t started;
} wake_probe;

static int task_mark_start(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_store_explicit(&((wake_probe *)arg)->started, bench_now_ns(), memory_order_release);
    return SCHED_OK;
}

/* Wake latency: all workers idle (parked) for 2 ms, then one task from an outside thread;
 * the time from the submission to the task's first instruction. */
static void bench_wake(options *o, sched *s, tbb_peer *p)
{
    if (!selected(o, "wake"))
        return;
    enum { SAMPLES = 200 };
    series a = {calloc(SAMPLES, 8), SAMPLES}, b = {calloc(SAMPLES, 8), SAMPLES};
    for (int i = 0; i < SAMPLES; i++) {
        pause_us(2000);
        wake_probe w;
        atomic_init(&w.started, 0);
        uint64_t t0 = bench_now_ns();
        check(sched_submit(s, 0, task_mark_start, &w), "submit");
        uint64_t t1;
        while ((t1 = atomic_load_explicit(&w.started, memory_order_acquire)) == 0)
            sched_yield();
        a.v[i] = t1 - t0;
        b.v[i] = tbb_wake_latency(p, 2000);
    }
    printf("%-22s runnel p50 %7.1f us [p10 %.1f, p90 %.1f]   oneTBB p50 %7.1f us [p10 %.1f, "
           "p90 %.1f]   ratio=%.3f\n",
           "wake latency (idle)", quantile(a, 0.5) / 1e3, quantile(a, 0.1) / 1e3,
           quantile(a, 0.9) / 1e3, quantile(b, 0.5) / 1e3, quantile(b, 0.1) / 1e3,
           quantile(b, 0.9) / 1e3, quantile(a, 0.5) / quantile(b, 0.5));
    fflush(stdout);
    free(a.v);
    free(b.v);
}

static void print_machine(const options *o)
{
    char model[256];
    bench_cpu_model(model, sizeof model);
    struct utsname u;
    uname(&u);
    printf("# runnel scheduler vs oneTBB flow graph: %d worker threads each, median [min-max] of "
           "%d runs\n",
           o->workers, o->runs);
    printf("# machine: %s, %ld online CPUs, %s %s, compiler gcc %d.%d, %s\n", model,
           sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, __GNUC__, __GNUC_MINOR__,
           tbb_peer_version());
    bench_print_isa();
    bench_print_load("at start");
}

int main(int argc, char **argv)
{
    options o = {.workers = 2, .runs = 7, .scale = 1.0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
            o.workers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            o.runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
            o.scale = atof(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            o.only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--workers N] [--runs N>=5] [--scale F] [--only NAME]\n",
                    argv[0]);
            return 2;
        }
    }
    if (o.workers < 1 || o.runs < 1 || o.scale <= 0) {
        fprintf(stderr, "bench_sched: bad arguments\n");
        return 2;
    }
    print_machine(&o);

    sched_config cfg = sched_config_default();
    cfg.n_streams = 1;
    cfg.workers_per_stream = (uint32_t)o.workers;
    sched *s;
    check(sched_create(&cfg, &s), "sched_create");
    tbb_peer *p = tbb_peer_create(o.workers);

    bench_graphs(&o, s);
    bench_small_dags(&o, s);
    bench_wake(&o, s, p);

    bench_print_load("at end");
    tbb_peer_destroy(p);
    sched_destroy(s);
    return o.failures ? 1 : 0;
}
