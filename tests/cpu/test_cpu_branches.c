/* Branch parallelism on the CPU device under LATENCY (plugins/api/branch.c,
 * docs/cpu.md "Branches side by side"): a request of Inception-v1 (four
 * branches per module) runs two chains of nodes at once, on the threads of
 * the stream's OpenMP team and never more of them than its cores, with the
 * outputs of one chain at a time. Branches are off by default (team.c):
 * each case turns them on with RN_CPU_BRANCHES=1 at compile time.
 *
 * The chains' runs are read from the compiled model's trace
 * (ENABLE_TRACE=YES): events of category "branch" with the request and run
 * they belong to and the fork's thread (0: the worker or the caller). The
 * threads are counted from /proc/self/task as in test_cpu_threads: a fork
 * adds none. Under ThreadSanitizer the fork's threads are plain threads
 * (cpu_branch_fork), so the runner is checked there too; the thread census
 * needs OpenMP teams and is left out there (said in the test). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static const char *const model_path = ".cache/onnx-1.22.0/light/light_inception_v1.onnx";

/* Requests until one ran two chains at once (a fork's other thread can be
 * late on a busy machine), at most this many. */
#define MAX_RUNS 24

typedef struct compiled {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm;
    rn_infer_request *rq;
} compiled;

static void compile_latency(compiled *c, bool branches)
{
    setenv("RN_CPU_BRANCHES", branches ? "1" : "0", 1);
    OK(rn_core_create(&c->core));
    OK(rn_core_read_model(c->core, model_path, &c->model));
    rn_property p[] = {{"PERFORMANCE_HINT", "LATENCY"}, {"ENABLE_TRACE", "YES"}};
    OK(rn_core_compile_model(c->core, c->model, "CPU", p, 2, &c->cm));
    unsetenv("RN_CPU_BRANCHES");
    OK(rn_compiled_model_create_infer_request(c->cm, &c->rq));
    rn_tensor *in = NULL;
    OK(rn_infer_request_get_input_tensor(c->rq, 0, &in));
    float *x = rn_tensor_data(in);
    size_t n = rn_tensor_element_count(in);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
}

static void free_compiled(compiled *c)
{
    rn_infer_request_free(c->rq);
    rn_compiled_model_free(c->cm);
    rn_model_free(c->model);
    rn_core_free(c->core);
}

static int team_size(const compiled *c)
{
    char threads[32];
    OK(rn_compiled_model_get_property(c->cm, "INFERENCE_NUM_THREADS", threads, sizeof threads));
    return atoi(threads);
}

static void skip_on_one_cpu(void)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        cr_skip_test("one CPU: LATENCY's team is one thread, no two chains can run at once");
}

/* ---- the trace's chain events ---- */

typedef struct chain_event {
    double start, end;
    unsigned long long run;
    int thread;
} chain_event;

typedef struct trace_stats {
    int events;
    int runs_with_two;  /* runs in which two chains overlapped */
    int most_at_once;   /* over every run */
    int highest_thread; /* the largest fork thread index seen */
} trace_stats;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open the trace %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    return text;
}

static trace_stats read_trace(const compiled *c)
{
    char path[] = "/tmp/test_cpu_branches_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    OK(rn_compiled_model_write_trace(c->cm, path));
    char *text = read_file(path);
    unlink(path);
    size_t cap = 1024, n = 0;
    chain_event *ev = malloc(cap * sizeof *ev);
    cr_assert_not_null(ev);
    for (const char *p = strstr(text, "\"cat\":\"branch\""); p != NULL;
         p = strstr(p + 1, "\"cat\":\"branch\"")) {
        const char *ts = strstr(p, "\"ts\":");
        cr_assert_not_null(ts);
        double start, dur;
        unsigned long long instance, run;
        int thread;
        cr_assert_eq(sscanf(ts,
                            "\"ts\":%lf,\"dur\":%lf,\"args\":{\"instance\":%llu,\"run\":%llu,"
                            "\"thread\":%d",
                            &start, &dur, &instance, &run, &thread),
                     5, "a branch event the test cannot read: %.120s", p);
        if (n == cap) {
            cap *= 2;
            ev = realloc(ev, cap * sizeof *ev);
            cr_assert_not_null(ev);
        }
        ev[n++] = (chain_event){start, start + dur, run, thread};
    }
    free(text);
    trace_stats s = {.events = (int)n};
    /* Per run: the most chains running at one chain's start. */
    for (size_t i = 0; i < n; i++) {
        s.highest_thread = ev[i].thread > s.highest_thread ? ev[i].thread : s.highest_thread;
        int at_once = 0;
        for (size_t j = 0; j < n; j++)
            if (ev[j].run == ev[i].run && ev[j].start <= ev[i].start && ev[j].end > ev[i].start)
                at_once++;
        s.most_at_once = at_once > s.most_at_once ? at_once : s.most_at_once;
    }
    unsigned long long last_run = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].run == last_run)
            continue;
        for (size_t j = 0; j < n; j++)
            if (j != i && ev[j].run == ev[i].run && ev[j].start < ev[i].end &&
                ev[i].start < ev[j].end) {
                s.runs_with_two++;
                last_run = ev[i].run;
                break;
            }
    }
    free(ev);
    return s;
}

/* ---- thread census (cpu_testing) ---- */

static void take_census(int *caller_team, int *worker_team)
{
    cpu_testing_census c = cpu_testing_take_census();
    *caller_team = c.caller_team;
    *worker_team = c.worker_team;
}

static void run_once(compiled *c, bool async)
{
    if (async) {
        OK(rn_infer_request_start_async(c->rq));
        OK(rn_infer_request_wait(c->rq));
    } else {
        OK(rn_infer_request_infer(c->rq));
    }
}

static void check_two_at_once(bool async)
{
    skip_on_one_cpu();
    int caller0, worker0;
    take_census(&caller0, &worker0);
    compiled c = {0};
    compile_latency(&c, true);
    int team = team_size(&c);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_leq(team, cpus, "INFERENCE_NUM_THREADS %d on %ld CPUs", team, cpus);
    trace_stats s = {0};
    for (int i = 0; i < MAX_RUNS && s.runs_with_two == 0; i++) {
        run_once(&c, async);
        s = read_trace(&c);
    }
    cr_assert_gt(s.events, 0, "no chain events in the trace: branch parallelism is off");
    cr_expect_gt(s.runs_with_two, 0,
                 "%s: no request ran two chains at once in %d runs (%d chain events)",
                 async ? "async" : "sync", MAX_RUNS, s.events);
    cr_expect_leq(s.most_at_once, team, "%d chains ran at once on a team of %d threads",
                  s.most_at_once, team);
    cr_expect_lt(s.highest_thread, team, "a chain ran on fork thread %d of a team of %d",
                 s.highest_thread, team);
#if defined(__SANITIZE_THREAD__)
    cr_log_info("thread census left out: no OpenMP teams under ThreadSanitizer (cpu_enter)");
#else
    /* The forks ran on the team that the primitives use: no thread more. */
    int caller, worker;
    take_census(&caller, &worker);
    if (async) {
        cr_expect_eq(caller, caller0, "async runs left %d thread(s) on the caller",
                     caller - caller0);
        cr_expect_eq(worker, team - 1,
                     "the stream worker's team has %d thread(s) besides the worker, "
                     "INFERENCE_NUM_THREADS is %d",
                     worker, team);
    } else {
        cr_expect_eq(worker, worker0, "a sync run started the stream worker's team");
        cr_expect_eq(caller - caller0, team - 1,
                     "the caller's team has %d thread(s) besides the caller, "
                     "INFERENCE_NUM_THREADS is %d",
                     caller - caller0, team);
    }
#endif
    free_compiled(&c);
}

Test(cpu_branches, a_sync_latency_request_runs_two_chains_at_once_on_the_team)
{
    check_two_at_once(false);
}

Test(cpu_branches, an_async_latency_request_runs_two_chains_at_once_on_the_team)
{
    check_two_at_once(true);
}

static float *outputs(compiled *c, bool async, size_t *count)
{
    run_once(c, async);
    rn_tensor *out = NULL;
    OK(rn_infer_request_get_output_tensor(c->rq, 0, &out));
    *count = rn_tensor_element_count(out);
    float *copy = malloc(*count * sizeof *copy);
    cr_assert_not_null(copy);
    memcpy(copy, rn_tensor_data(out), *count * sizeof *copy);
    return copy;
}

Test(cpu_branches, outputs_equal_one_chain_at_a_time)
{
    skip_on_one_cpu();
    compiled on = {0}, off = {0};
    compile_latency(&on, true);
    compile_latency(&off, false);
    for (int mode = 0; mode < 2; mode++) {
        size_t n_on, n_off;
        float *y_off = outputs(&off, mode == 1, &n_off);
        float *y_on = outputs(&on, mode == 1, &n_on);
        cr_assert_eq(n_on, n_off);
        cr_assert_gt(n_on, 0);
        float worst = 0, peak = 0;
        for (size_t i = 0; i < n_on; i++) {
            float d = fabsf(y_on[i] - y_off[i]);
            worst = d > worst ? d : worst;
            peak = fabsf(y_off[i]) > peak ? fabsf(y_off[i]) : peak;
        }
        cr_expect_gt(peak, 0.0f, "all-zero outputs compare nothing");
        cr_expect_leq(worst, 1e-5f * (1.0f + peak),
                      "%s: outputs with branches differ from one chain at a time by %g",
                      mode ? "async" : "sync", (double)worst);
        free(y_on);
        free(y_off);
    }
    /* The switch is real: one chain at a time writes no chain events. */
    cr_expect_eq(read_trace(&off).events, 0, "RN_CPU_BRANCHES=0 still ran chains in forks");
    cr_expect_gt(read_trace(&on).events, 0, "no chain events with branch parallelism on");
    free_compiled(&on);
    free_compiled(&off);
}

/* THROUGHPUT's streams are single-core, and LATENCY with one thread has no
 * team: neither forks (no chain events), and the outputs are the same. */
Test(cpu_branches, single_core_streams_never_fork)
{
    const rn_property hints[][2] = {
        {{"PERFORMANCE_HINT", "THROUGHPUT"}, {"INFERENCE_PRECISION_HINT", "f32"}},
        {{"PERFORMANCE_HINT", "LATENCY"}, {"INFERENCE_NUM_THREADS", "1"}},
    };
    for (int h = 0; h < 2; h++) {
        compiled c = {0};
        OK(rn_core_create(&c.core));
        OK(rn_core_read_model(c.core, model_path, &c.model));
        rn_property p[3] = {hints[h][0], hints[h][1], {"ENABLE_TRACE", "YES"}};
        setenv("RN_CPU_BRANCHES", "1", 1); /* on: only the streams may keep it from forking */
        OK(rn_core_compile_model(c.core, c.model, "CPU", p, 3, &c.cm));
        unsetenv("RN_CPU_BRANCHES");
        OK(rn_compiled_model_create_infer_request(c.cm, &c.rq));
        run_once(&c, false);
        run_once(&c, true);
        cr_expect_eq(read_trace(&c).events, 0, "%s=%s, %s=%s: chains ran in forks", hints[h][0].key,
                     hints[h][0].value, hints[h][1].key, hints[h][1].value);
        free_compiled(&c);
    }
}
