/* How the CPU device's OpenMP teams wait (plugins/cpu/wait.c): spinning
 * while the cores are free, sleeping while something else wants them.
 * libgomp spins at a team's barriers unless the process has more OpenMP
 * threads than CPUs; a spinning team on contended cores waits for
 * preempted threads (SqueezeNet 6.6 ms -> hundreds of ms under LATENCY
 * beside a build). So:
 *   - the adaptive policy's decision: a window that waited for a CPU more
 *     than a tenth of the time is contended; trials back off, and a quiet
 *     window starts over; a window leaves out the intervals in which its
 *     master blocked (a stream worker's wake-up between requests);
 *   - RUNNEL_OMP_WAIT=sleep holds an idle pool of more OpenMP threads than
 *     CPUs (threads named rn-omp-idle), and the team's master then blocks in
 *     its waits (voluntary context switches) instead of spinning;
 *   - RUNNEL_OMP_WAIT=spin never holds one, whatever the load;
 *   - adaptive (the default) holds one when busy threads contend for the
 *     cores, and lets go on trial after a while.
 * Each test runs in a process of its own (Criterion), so each reads its
 * RUNNEL_OMP_WAIT. The runtime is linked statically to read wait.c's
 * counters of the copy the Core runs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "plugins/cpu/wait.h"
#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

#define MS (1000000ll)

/* ---- the decision ---- */

Test(cpu_wait, a_window_mostly_on_a_cpu_is_not_contended)
{
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_expect_not(cpu_wait_decide(&s, 20 * MS, 0));
    cr_expect_not(cpu_wait_decide(&s, 20 * MS, 1 * MS), "5 %% of the time waiting");
    cr_expect_gt(s.backoff, 0, "a quiet window sets the first wait before a trial");
}

Test(cpu_wait, a_window_waiting_for_a_cpu_is_contended)
{
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_expect(cpu_wait_decide(&s, 14 * MS, 6 * MS), "30 %% of the time waiting");
    cr_expect(cpu_wait_decide(&s, 10 * MS, 10 * MS));
    cr_expect_not(s.trial, "a decision ends any trial");
}

/* A stream worker's readings across requests: while a request runs it has
 * its CPU (1 ms of run_delay in 10 ms), between two requests it parks and
 * its wake-up waits 4 ms for a CPU. Those intervals (it blocked in them)
 * are left out: the window is the requests' own demand, 5 % waiting, not
 * contended; with them in it the same readings were (issue 30: async runs
 * slept in every team wait, sync ones did not). */
Test(cpu_wait, a_workers_wake_up_between_requests_is_not_contention)
{
    cpu_wait_window w = {0};
    int64_t run = 0, delay = 0, d_run = 0, d_delay = 0;
    int64_t all_run = 0, all_delay = 0;
    bool done = cpu_wait_window_add(&w, run, delay, false, &d_run, &d_delay);
    cr_expect_not(done, "the first reading opens the window");
    for (int request = 0; request < 2 && !done; request++) {
        /* Parked and woken: the reading after it says it blocked. */
        delay += 4 * MS;
        all_delay += 4 * MS;
        done = cpu_wait_window_add(&w, run, delay, true, &d_run, &d_delay);
        cr_expect_not(done, "an interval with a block adds nothing");
        /* The request: two readings 10 ms of demand apart. */
        for (int k = 0; k < 2 && !done; k++) {
            run += 9500000;
            delay += 500000;
            all_run += 9500000;
            all_delay += 500000;
            done = cpu_wait_window_add(&w, run, delay, false, &d_run, &d_delay);
        }
    }
    cr_assert(done, "20 ms of the requests' demand make a window");
    cr_expect_eq(d_run, 19 * MS);
    cr_expect_eq(d_delay, 1 * MS);
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_expect_not(cpu_wait_decide(&s, d_run, d_delay), "the requests had their CPUs");
    cpu_wait_state all = {.trial = false, .backoff = 0};
    cr_expect(cpu_wait_decide(&all, all_run, all_delay),
              "with the wake-ups counted (%.1f ms of %.1f) the window would be contended",
              all_delay / 1e6, (all_run + all_delay) / 1e6);
    /* A window starts over after a decision. */
    cr_expect_not(cpu_wait_window_add(&w, run + MS, delay, false, &d_run, &d_delay));
}

Test(cpu_wait, a_window_sums_readings_without_blocks)
{
    cpu_wait_window w = {0};
    int64_t d_run = 0, d_delay = 0;
    cr_expect_not(cpu_wait_window_add(&w, 100 * MS, 7 * MS, true, &d_run, &d_delay),
                  "a first reading that blocked only opens the window");
    cr_expect_not(cpu_wait_window_add(&w, 110 * MS, 10 * MS, false, &d_run, &d_delay));
    cr_expect(cpu_wait_window_add(&w, 116 * MS, 11 * MS, false, &d_run, &d_delay));
    cr_expect_eq(d_run, 16 * MS);
    cr_expect_eq(d_delay, 4 * MS);
}

Test(cpu_wait, failed_trials_back_off_and_a_quiet_trial_starts_over)
{
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_assert(cpu_wait_decide(&s, 10 * MS, 10 * MS));
    int64_t first = s.backoff;
    cr_assert_gt(first, 0);
    s.trial = true;
    cr_assert(cpu_wait_decide(&s, 10 * MS, 10 * MS));
    cr_expect_eq(s.backoff, 2 * first, "a trial that found contention waits twice as long");
    int64_t last = s.backoff;
    for (int i = 0; i < 40; i++) {
        s.trial = true;
        cpu_wait_decide(&s, 10 * MS, 10 * MS);
        cr_assert_geq(s.backoff, last);
        last = s.backoff;
    }
    cr_expect_leq(last, 60000 * MS, "the wait before a trial is bounded, got %lld ns",
                  (long long)last);
    s.trial = true;
    cr_expect_not(cpu_wait_decide(&s, 20 * MS, 0));
    cr_expect_eq(s.backoff, first, "a quiet trial starts over from the first wait");
    s.trial = false;
    cr_assert(cpu_wait_decide(&s, 10 * MS, 10 * MS));
    cr_expect_eq(s.backoff, first, "contention seen while spinning waits the first time");
}

/* ---- the device ---- */

/* SqueezeNet under LATENCY, and its request. */
static void compile_latency(cpu_testing_compiled *c)
{
    char path[512];
    cpu_testing_compile_latency(cpu_testing_light("squeezenet", path, sizeof path), c);
    OK(rn_compiled_model_create_infer_request(c->cm, &c->rq));
}

static int idle_threads(void)
{
    char path[300], comm[32];
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL && strncmp(comm, "rn-omp-idle", 11) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

static long voluntary_switches(void)
{
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return r.ru_nvcsw;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Threads that keep every CPU busy while `stop` is false. */
static atomic_bool stop;

static void *busy(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

typedef struct contention {
    pthread_t t[64];
    int n;
} contention;

static void contend(contention *c)
{
    atomic_store(&stop, false);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->n = cpus < 64 ? (int)cpus : 64;
    for (int i = 0; i < c->n; i++)
        cr_assert_eq(pthread_create(&c->t[i], NULL, busy, NULL), 0);
}

static void release(contention *c)
{
    atomic_store(&stop, true);
    for (int i = 0; i < c->n; i++)
        pthread_join(c->t[i], NULL);
}

Test(cpu_wait, sleep_policy_holds_an_idle_pool_and_the_team_blocks)
{
    cpu_testing_skip_without_teams();
    setenv("RUNNEL_OMP_WAIT", "sleep", 1);
    cpu_testing_compiled c = {0};
    compile_latency(&c);
    cr_assert_eq(cpu_wait_policy_get(), CPU_WAIT_SLEEP);
    OK(rn_infer_request_infer(c.rq));
    long before = voluntary_switches();
    const int runs = 10;
    for (int i = 0; i < runs; i++)
        OK(rn_infer_request_infer(c.rq));
    long blocked = voluntary_switches() - before;
    cr_expect(cpu_wait_sleeping());
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cr_expect_geq(idle_threads(), cpus + 1,
                  "the idle pool has %d thread(s) named rn-omp-idle, more than the %ld CPUs "
                  "are needed for libgomp to stop spinning",
                  idle_threads(), cpus);
    /* SqueezeNet has tens of primitives with a team; each join would be a
     * futex wait of the master (the caller, in a sync run). */
    cr_expect_geq(blocked, runs,
                  "the caller blocked %ld times in %d sync runs: its team still spins", blocked,
                  runs);
    cpu_testing_free(&c);
}

Test(cpu_wait, spin_policy_never_holds_a_pool)
{
    cpu_testing_skip_without_teams();
    setenv("RUNNEL_OMP_WAIT", "spin", 1);
    cpu_testing_compiled c = {0};
    compile_latency(&c);
    contention k;
    contend(&k);
    double end = now_s() + 1.0;
    while (now_s() < end)
        OK(rn_infer_request_infer(c.rq));
    release(&k);
    cr_expect_eq(cpu_wait_holds(), 0u);
    cr_expect_eq(idle_threads(), 0);
    cpu_testing_free(&c);
}

Test(cpu_wait, adaptive_sleeps_under_contention_and_tries_spinning_again, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    unsetenv("RUNNEL_OMP_WAIT");
    cpu_testing_compiled c = {0};
    compile_latency(&c);
    cr_assert_eq(cpu_wait_policy_get(), CPU_WAIT_ADAPTIVE);
    contention k;
    contend(&k);
    double end = now_s() + 30.0;
    while (cpu_wait_holds() == 0 && now_s() < end)
        OK(rn_infer_request_infer(c.rq));
    cr_expect_gt(cpu_wait_holds(), 0u,
                 "%d busy threads beside the team for 30 s, and the teams still spin", k.n);
    /* The first trial is due well within this (wait.c: TRIAL_FIRST_NS). */
    end = now_s() + 20.0;
    while (cpu_wait_trials() == 0 && now_s() < end)
        OK(rn_infer_request_infer(c.rq));
    release(&k);
    cr_expect_gt(cpu_wait_trials(), 0u, "the idle pool was never released on trial");
    cpu_testing_free(&c);
}
