/* Branches side by side on a stream's workers (plugins/api/branch.c,
 * timed: what REF does under LATENCY, plugins/ref/plugin.c): a request's
 * independent chains of nodes run on a second worker of the stream only
 * when their measured times say a fork saves more than it costs, in sync
 * runs (the caller and a worker) as in async ones (two workers).
 *
 * Plans are built over REF's kernels with the options REF's LATENCY plan
 * gets (one stream of two workers, branch_threads 2, branch_fork_ns) and
 * tracing on; the chains' runs are read from the plan's trace: events of
 * category "branch" with the fork's thread (0: the runner) and whether the
 * chain ran in a fork. Two graphs of two branches each: one of tiny
 * elementwise chains (microseconds, far below a fork's cost) and one of
 * 256x256 products (hundreds of microseconds to milliseconds each). The
 * outputs are REF's, bit for bit, sync and async. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/plan/plan_harness.h"
#include "tests/ref/node_case.h"

/* REF's (plugins/ref/plugin.c). */
#define FORK_NS 100000

/* Runs after which the chains' moving averages have forgotten a first run
 * slowed by a preemption (a quarter of each new time: 0.75^16 = 1 %). */
#define WARM_RUNS 16
/* Runs until one had a chain on the second worker (it can be late to wake
 * on a busy machine: CI beside two other builds on 2 CPUs, load 5, had
 * none in 24 async runs), at most this many and for at most MAX_SECONDS. */
#define MAX_RUNS    400
#define MAX_SECONDS 10

static plugin_plan *build_timed(graph *g, const plugin_kernel_registry *reg)
{
    cr_assert_eq(graph_sort(g), RN_OK, "%s", rn_last_error());
    plugin_plan_options o = {
        .n_streams = 1,
        .threads_per_stream = 2,
        .trace = true,
        .branch_threads = 2,
        .branch_fork_ns = FORK_NS,
    };
    plugin_plan *plan = NULL;
    cr_assert_eq(plugin_plan_build(g, reg, &o, &plan), RN_OK, "compile: %s", rn_last_error());
    return plan;
}

typedef struct chain_runs {
    int events;        /* chains run, in the runs counted */
    int forked;        /* of which in a fork */
    int second_thread; /* of which on the fork's other thread */
} chain_runs;

/* The chains of the runs numbered above `after` (branch.c numbers a
 * process's runs from 1), from the plan's trace (one event a line). */
static chain_runs read_chains(const plugin_plan *plan, unsigned long long after)
{
    char path[] = "/tmp/test_branches_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(plugin_plan_write_trace(plan, path), RN_OK, "%s", rn_last_error());
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open the trace %s", path);
    chain_runs c = {0};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        const char *args = strstr(line, "\"cat\":\"branch\"") ? strstr(line, "\"args\":{") : NULL;
        if (args == NULL)
            continue;
        unsigned long long instance, run;
        int thread, forked;
        cr_assert_eq(sscanf(args,
                            "\"args\":{\"instance\":%llu,\"run\":%llu,\"thread\":%d,\"forked\":%d",
                            &instance, &run, &thread, &forked),
                     4, "a branch event the test cannot read: %.120s", line);
        if (run <= after)
            continue;
        c.events++;
        c.forked += forked != 0;
        c.second_thread += thread != 0;
    }
    free(line);
    fclose(f);
    unlink(path);
    return c;
}

/* x -> a1 -> a2 and x -> b1 -> b2, then out = a2 + b2: two chains of two
 * nodes and the Add's. */
static graph *two_branches(const char *name, const char *a1, const char *a2, const char *b1,
                           const char *b2, int rank, const int64_t *dims, bool products)
{
    graph *g = pc_graph(name, NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, rank, dims);
    int n = products ? 2 : 1;
    graph_value *a = ph_node(g, "a1", a1, n, x, x);
    a = ph_node(g, "a2", a2, n, a, x);
    graph_value *b = ph_node(g, "b1", b1, 1, x, NULL);
    b = ph_node(g, "b2", b2, n, b, x);
    cr_assert_eq(graph_add_output(g, ph_node(g, "out", "Add", 2, a, b)), RN_OK);
    return g;
}

static graph_tensor input_of(int rank, const int64_t *dims, float **data)
{
    graph_tensor in = {.type = RN_F32, .rank = rank};
    memcpy(in.dims, dims, sizeof(int64_t) * (size_t)rank);
    size_t count = graph_tensor_count(&in);
    *data = malloc(count * sizeof **data);
    cr_assert_not_null(*data);
    /* Small values: products of products stay well inside f32. */
    ph_fill(*data, count, 0.5f);
    for (size_t i = 0; i < count; i++)
        (*data)[i] *= 0.05f;
    in.data = *data;
    in.nbytes = count * sizeof **data;
    return in;
}

/* A graph of two branches, its timed plan over REF's kernels and an input. */
typedef struct branch_case {
    plugin_kernel_registry *reg;
    graph *g;
    plugin_plan *plan;
    float *data;
    graph_tensor in;
} branch_case;

static branch_case case_new(graph *g, const int64_t *dims)
{
    branch_case c = {.reg = ph_registry(NULL), .g = g};
    c.plan = build_timed(g, c.reg);
    c.in = input_of(2, dims, &c.data);
    return c;
}

/* Checks the outputs against plain REF's (bit for bit, sync and async),
 * then frees the case. */
static void case_check_and_free(branch_case *c)
{
    ph_expect_like_ref(c->g, c->plan, &c->in, 1, 0);
    free(c->data);
    plugin_plan_free(c->plan);
    graph_free(c->g);
    plugin_kernel_registry_free(c->reg);
}

static void run_n(const branch_case *c, bool async, int runs)
{
    ph_outputs out;
    ph_run(c->plan, &c->in, 1, async, runs, &out);
    ph_outputs_free(&out);
}

/* Branches of a few microseconds never fork: a worker's wake-up would cost
 * more than running them one after the other saves. */
Test(branches, tiny_branches_stay_on_one_thread)
{
    static const int64_t dims[2] = {1, 16};
    branch_case c =
        case_new(two_branches("tiny", "Relu", "Neg", "Sigmoid", "Abs", 2, dims, false), dims);
    run_n(&c, false, WARM_RUNS);
    chain_runs warm = read_chains(c.plan, 0);
    cr_assert_eq(warm.events, 3 * WARM_RUNS, "%d chains run in %d sync runs, 3 each", warm.events,
                 WARM_RUNS);
    run_n(&c, false, 8);
    run_n(&c, true, 8);
    chain_runs n = read_chains(c.plan, WARM_RUNS);
    cr_assert_eq(n.events, 3 * 16, "%d chains in 16 runs", n.events);
    cr_expect_eq(n.forked, 0, "%d of %d tiny chains ran in a fork", n.forked, n.events);
    cr_expect_eq(n.second_thread, 0, "%d tiny chains ran on a second worker", n.second_thread);
    case_check_and_free(&c);
}

/* Runs the case one run at a time (sync or async) until a run had a chain
 * on the fork's second thread, at most MAX_RUNS (MAX_SECONDS); returns what the runs
 * after `*after` did, and sets `*after` to the runs so far. */
static chain_runs run_until_second_thread(const branch_case *c, bool async,
                                          unsigned long long *after)
{
    chain_runs n = {0};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    t = t0;
    for (int k = 0; k < MAX_RUNS && n.second_thread == 0 && t.tv_sec - t0.tv_sec < MAX_SECONDS;
         k++) {
        run_n(c, async, 1);
        n = read_chains(c->plan, *after);
        clock_gettime(CLOCK_MONOTONIC, &t);
    }
    *after = (unsigned long long)(read_chains(c->plan, 0).events / 3);
    return n;
}

/* Branches of hundreds of microseconds each fork once their times are
 * known (the first run measures them, one after the other), sync and
 * async: the second branch runs on another worker of the stream. */
Test(branches, wide_branches_run_on_two_workers)
{
    static const int64_t dims[2] = {256, 256};
    branch_case c =
        case_new(two_branches("wide", "MatMul", "MatMul", "Neg", "MatMul", 2, dims, true), dims);
    run_n(&c, false, 1);
    chain_runs first = read_chains(c.plan, 0);
    cr_assert_eq(first.events, 3, "%d chains in the first run", first.events);
    cr_expect_eq(first.forked, 0, "the first run forked before any chain was measured");
    unsigned long long after = 1;
    chain_runs sync = run_until_second_thread(&c, false, &after);
    cr_expect_gt(sync.forked, 0, "no sync run forked");
    cr_expect_gt(sync.second_thread, 0,
                 "no sync run (up to %d, %d s) ran a chain on a second worker", MAX_RUNS,
                 MAX_SECONDS);
    chain_runs async = run_until_second_thread(&c, true, &after);
    cr_expect_gt(async.forked, 0, "no async run forked");
    cr_expect_gt(async.second_thread, 0,
                 "no async run (up to %d, %d s) ran a chain on a second worker", MAX_RUNS,
                 MAX_SECONDS);
    case_check_and_free(&c);
}
