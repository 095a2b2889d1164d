/* How the CPU device's OpenMP teams wait (plugins/cpu/wait.c): spinning
 * while the cores are free, sleeping while something else wants them.
 * libgomp spins at a team's barriers unless the process has more OpenMP
 * threads than CPUs; a spinning team on contended cores waits for
 * preempted threads (SqueezeNet 6.6 ms -> hundreds of ms under LATENCY
 * beside a build). So:
 *   - the adaptive policy's decision: a window (the master's time in its
 *     primitives with a team) off a CPU more than a tenth of the time is
 *     contended; two in a row make the teams sleep (one is a blip); trials
 *     decide alone and back off, and a quiet window starts over; what a
 *     stream worker waits between requests is in no window;
 *   - RUNNEL_OMP_WAIT=sleep holds an idle pool of more OpenMP threads than
 *     CPUs (threads named rn-omp-idle), and the team's master then blocks in
 *     its waits (voluntary context switches) instead of spinning;
 *   - RUNNEL_OMP_WAIT=spin never holds one, whatever the load;
 *   - adaptive (the default) holds one when busy threads contend for the
 *     cores, for sync requests (the caller is the master) and async ones
 *     (the stream worker is), and lets go on trial after a while.
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
    cr_expect_not(cpu_wait_contended(20 * MS, 0));
    cr_expect_not(cpu_wait_contended(20 * MS, 1 * MS), "5 %% of the time off a CPU");
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_expect_not(cpu_wait_decide(&s, 20 * MS, 0));
    cr_expect_gt(s.backoff, 0, "a quiet window sets the first wait before a trial");
}

Test(cpu_wait, a_window_waiting_for_a_cpu_is_contended)
{
    cr_expect(cpu_wait_contended(14 * MS, 6 * MS), "30 %% of the time off a CPU");
    cr_expect(cpu_wait_contended(10 * MS, 10 * MS));
}

/* One contended window while the teams spin is a blip (a tick or two of
 * another thread on the master's CPU); the teams sleep after two in a
 * row. A quiet window in between starts the count over. */
Test(cpu_wait, two_contended_windows_in_a_row_make_the_teams_sleep)
{
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_expect_not(cpu_wait_decide(&s, 16 * MS, 4 * MS), "one contended window");
    cr_expect_not(cpu_wait_decide(&s, 20 * MS, 0), "then a quiet one");
    cr_expect_not(cpu_wait_decide(&s, 16 * MS, 4 * MS), "one contended window again");
    cr_expect(cpu_wait_decide(&s, 10 * MS, 10 * MS), "the second in a row: sleep");
    cr_expect_not(s.trial, "a decision ends any trial");
    cr_expect_not(cpu_wait_decide(&s, 10 * MS, 10 * MS),
                  "the count starts over once the teams sleep");
}

/* Windows as RUNNEL_OMP_WAIT_LOG=1 printed them (run ms, off-CPU ms),
 * recorded on the 2-vCPU machine of bench/LOG.md "Short async requests and
 * the adaptive wait": an async ShuffleNet round on nearly free cores (the
 * bench in an autogroup of its own at nice -20, load 15-17 around it): two
 * windows at 0.22 and 0.17, each with a quiet one after it; had one window
 * decided alone (the rule before), either would have held the pool for
 * 0.5 s, longer than the round. And a sync SqueezeNet round at load 26: the
 * second window sleeps, and each trial that finds the cores still contended
 * sleeps again, twice as long. */
static const double quiet_async_shufflenet[][2] = {
    {28.644, 0.301}, {19.783, 0.298}, {16.239, 4.484}, {19.970, 0.135},
    {16.558, 3.477}, {19.835, 0.334}, {19.812, 0.296}, {19.815, 0.209},
    {19.788, 0.217}, {19.812, 0.282}, {19.760, 0.278}, {19.729, 0.280},
};
static const double contended_sync_squeezenet[][2] = {
    {15.996, 248.892}, {4.397, 44.018}, {3.692, 1024.025}, {1.797, 980.921}};

static bool decide_ms(cpu_wait_state *s, const double window[2])
{
    return cpu_wait_decide(s, (int64_t)(window[0] * MS), (int64_t)(window[1] * MS));
}

Test(cpu_wait, recorded_windows_blips_on_free_cores_and_a_contended_machine)
{
    cpu_wait_state s = {.trial = false, .backoff = 0};
    int contended = 0;
    size_t n = sizeof quiet_async_shufflenet / sizeof quiet_async_shufflenet[0];
    for (size_t i = 0; i < n; i++) {
        contended += cpu_wait_contended((int64_t)(quiet_async_shufflenet[i][0] * MS),
                                        (int64_t)(quiet_async_shufflenet[i][1] * MS));
        cr_expect_not(decide_ms(&s, quiet_async_shufflenet[i]),
                      "free cores: window %zu made the teams sleep", i);
    }
    cr_expect_eq(contended, 2, "the recording has its two blips");

    s = (cpu_wait_state){.trial = false, .backoff = 0};
    cr_expect_not(decide_ms(&s, contended_sync_squeezenet[0]));
    cr_expect(decide_ms(&s, contended_sync_squeezenet[1]), "load 26: sleep after two windows");
    int64_t first = s.backoff;
    s.trial = true;
    cr_expect(decide_ms(&s, contended_sync_squeezenet[2]), "a trial that finds contention");
    cr_expect_eq(s.backoff, 2 * first);
    s.trial = true;
    cr_expect(decide_ms(&s, contended_sync_squeezenet[3]));
    cr_expect_eq(s.backoff, 4 * first);
}

/* A window is the master's time in its primitives with a team: what
 * happens between them is not an input. */
Test(cpu_wait, a_window_sums_its_primitives)
{
    cpu_wait_window w = {0};
    int64_t d_run = 0, d_delay = 0;
    cr_expect_not(cpu_wait_window_add(&w, 10 * MS, 9 * MS, &d_run, &d_delay));
    cr_expect_not(cpu_wait_window_add(&w, 2 * MS, 3 * MS, &d_run, &d_delay),
                  "CPU time above the wall time (two clocks) counts as all on a CPU");
    cr_expect_not(cpu_wait_window_add(&w, -1, 0, &d_run, &d_delay), "a failed clock: nothing");
    cr_expect(cpu_wait_window_add(&w, 8 * MS, 6 * MS, &d_run, &d_delay));
    cr_expect_eq(d_run, 17 * MS);
    cr_expect_eq(d_delay, 3 * MS);
    cr_expect_not(cpu_wait_window_add(&w, MS, MS, &d_run, &d_delay), "a window starts over");
}

/* A stream worker's short requests (a synthetic timeline: 1 ms, 8
 * primitives with a team of 100 us and 200 us of single-threaded work), on
 * free cores: inside its primitives it is always on a CPU, and between two
 * requests it waits 150 us for one without blocking: it yields its CPU,
 * searching for work, to the caller whose wait it just ended, which spins
 * 50 us in its next wait (the wait log showed 50-60 us a request for
 * ShuffleNet's 5 ms ones; a caller that does anything between two requests
 * makes it longer). The old window (each interval between two schedstat
 * readings without a voluntary context switch) had those hand-offs in it:
 * 13 % off a CPU, every window contended, and async requests slept where
 * sync ones (a caller does not wait between its requests) spun. The
 * window of the worker's primitives has none of it. */
Test(cpu_wait, a_workers_hand_off_between_requests_is_not_contention)
{
    cpu_wait_window w = {0};
    cpu_wait_state s = {.trial = false, .backoff = 0};
    int64_t d_run = 0, d_delay = 0, all_run = 0, all_delay = 0;
    int windows = 0;
    for (int request = 0; request < 200; request++) {
        for (int k = 0; k < 8; k++) {
            if (cpu_wait_window_add(&w, 100000, 100000, &d_run, &d_delay)) {
                windows++;
                cr_expect_eq(d_delay, 0);
                cr_expect_not(cpu_wait_decide(&s, d_run, d_delay), "window %d", windows);
            }
            all_run += 100000;
        }
        all_run += 200000;   /* single-threaded nodes */
        all_delay += 150000; /* the hand-off to the next request */
    }
    cr_expect_geq(windows, 7, "200 requests of 0.8 ms in primitives fill 8 windows, got %d",
                  windows);
    cr_expect(cpu_wait_contended(all_run, all_delay),
              "the whole timeline (%.1f ms off a CPU in %.1f) is contended", all_delay / 1e6,
              (all_run + all_delay) / 1e6);
}

Test(cpu_wait, failed_trials_back_off_and_a_quiet_trial_starts_over)
{
    cpu_wait_state s = {.trial = false, .backoff = 0};
    cr_assert_not(cpu_wait_decide(&s, 10 * MS, 10 * MS));
    cr_assert(cpu_wait_decide(&s, 10 * MS, 10 * MS));
    int64_t first = s.backoff;
    cr_assert_gt(first, 0);
    s.trial = true;
    cr_assert(cpu_wait_decide(&s, 10 * MS, 10 * MS), "a trial decides alone");
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
    cr_assert_not(cpu_wait_decide(&s, 10 * MS, 10 * MS));
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

/* The same with async requests: the stream worker is the team's master,
 * and its windows (its primitives only, none of its waits between
 * requests) still find busy threads contending for the cores. */
Test(cpu_wait, adaptive_sleeps_under_contention_for_async_requests, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    unsetenv("RUNNEL_OMP_WAIT");
    cpu_testing_compiled c = {0};
    compile_latency(&c);
    contention k;
    contend(&k);
    double end = now_s() + 30.0;
    while (cpu_wait_holds() == 0 && now_s() < end) {
        OK(rn_infer_request_start_async(c.rq));
        OK(rn_infer_request_wait(c.rq));
    }
    release(&k);
    cr_expect_gt(cpu_wait_holds(), 0u,
                 "%d busy threads beside the worker's team for 30 s, and the teams still spin",
                 k.n);
    cpu_testing_free(&c);
}
