/* How the threads of a primitive's OpenMP team wait for each other:
 * spinning while every one of them has a core, sleeping while the cores are
 * contended.
 *
 * libgomp (GCC's OpenMP runtime, which Debian's oneDNN uses) makes a team
 * thread that reaches a barrier or its pool's dock spin up to GOMP_SPINCOUNT
 * (300,000) times before it sleeps in a futex, unless the process has more
 * OpenMP threads than CPUs: then it spins 100 times ("throttled"). Spinning
 * is what makes one request under LATENCY fast on a quiet machine (a
 * primitive's fork and join in microseconds). Where other processes (or the
 * process's own other threads) want the cores too it is a disaster: a
 * barrier waits for a team thread the kernel preempted while its peers burn
 * their time slices spinning. On 2 vCPUs beside a build, SqueezeNet's sync
 * LATENCY request took 372 ms spinning against 30 ms with sleeping waits
 * (6.6 ms on the quiet machine); docs/cpu.md, "Threads and streams".
 *
 * libgomp reads its spin counts once, when it loads, but checks at every
 * wait whether the process has more OpenMP threads than CPUs. So while the
 * cores are contended this file keeps an idle pool of (CPUs + 1) OpenMP
 * threads on a thread of its own (rn-omp-idle; all of them asleep in a
 * futex), which puts every team of the process in the throttled mode, and
 * releases the pool when they are not.
 *
 * Contention is measured by the team masters themselves (a stream worker,
 * or a user's thread running a sync request) while their teams work: over
 * a random one in SAMPLE_ONE_IN of the primitives with a team
 * (cpu_wait_check to cpu_wait_done), the time the master was not on a
 * CPU, its wall time less its CPU time (CLOCK_THREAD_CPUTIME_ID), each
 * sample counted SAMPLE_ONE_IN times, summed over windows of
 * WINDOW_DEMAND_NS of that wall time. The time between two primitives is left out: a stream
 * worker waits there between requests (it spins, yields its CPU to the
 * caller whose wait it just ended, and parks), and those waits are the
 * request's hand-off between two threads of the process, not contention
 * while a team runs; counted, they made a short request's windows look
 * contended on the worker where the sync caller (which never waits between
 * requests) found them quiet (issue 30; bench/LOG.md, "Short async
 * requests and the adaptive wait"). A block inside a primitive (a
 * barrier's futex wait once libgomp's spin ran out: a team thread was
 * preempted) is time the master was not on a CPU and counts.
 * A window that waited above CONTENDED_SHARE is contended; CONFIRM_WINDOWS
 * of them in a row, and the teams sleep: one window is 20 ms, one tick or
 * two of another thread on the master's CPU (a shell, a kernel worker, a
 * compiler starting beside it), and a hold lasts at least TRIAL_FIRST_NS,
 * longer than a benchmark's round of short requests; a machine that really
 * is contended is contended in the next window too. Sleeping
 * waits hide whether the contention went away (the team's own wake-ups then
 * wait on run queues too), so the pool is released on trial after a while;
 * the next window decides alone, and each trial that finds the cores still
 * contended doubles the time before the next one (TRIAL_FIRST_NS up to
 * TRIAL_MAX_NS).
 *
 * RUNNEL_OMP_WAIT=adaptive (the default), spin (never hold the pool: what
 * libgomp does alone) or sleep (hold it from the first team on) fixes the
 * policy, for benchmarks and tests. RUNNEL_OMP_WAIT_LOG=1 prints each
 * window's decision to stderr (the process, the master's name, the
 * monotonic time in ms, its run time and its time off a CPU over the
 * window, the share), to see which master found the cores contended, when,
 * and why. */
#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/cpu/wait.h"

#define WINDOW_DEMAND_NS (20 * 1000000ll)  /* a window: wall time of primitives with a team */
#define CONTENDED_SHARE  0.10              /* off a CPU above this share: contended */
#define CONFIRM_WINDOWS  2                 /* contended windows in a row before sleeping */
#define TRIAL_FIRST_NS   (500 * 1000000ll) /* sleeping this long, then a trial */
#define TRIAL_MAX_NS     (8000 * 1000000ll)

static struct {
    pthread_once_t once;
    cpu_wait_policy policy;
    bool log; /* RUNNEL_OMP_WAIT_LOG=1 */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    /* Under lock: whether the pool is wanted, and the episode (each hold
     * of the pool is one thread, which lets go when the episode changes). */
    bool held;
    uint64_t episode;
    bool trial;       /* the pool was released on trial: the next window decides */
    int strikes;      /* contended windows in a row while spinning */
    int64_t backoff;  /* time held before the next trial */
    int64_t trial_at; /* when the next trial is due (monotonic ns) */
    /* Published for the masters' fast path and for tests. */
    atomic_bool holding;
    atomic_int_fast64_t due; /* trial_at, read without the lock */
    atomic_uint holds;       /* pools held so far */
    atomic_uint trials;      /* pools released on trial */
    atomic_int formed;       /* the threads of the last pool held */
} g = {
    .once = PTHREAD_ONCE_INIT,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .changed = PTHREAD_COND_INITIALIZER,
    .backoff = TRIAL_FIRST_NS,
};

/* One primitive with a team in SAMPLE_ONE_IN (at random) is timed: the
 * master's CPU time is a system call (CLOCK_THREAD_CPUTIME_ID has no vDSO
 * path: 0.38 us on a Zen 5 VM, against 0.02 for CLOCK_MONOTONIC), and two
 * a primitive cost SqueezeNet's LATENCY request (25 primitives, most with
 * a team) 25-35 us of its 0.9 ms: 0.92 ms async against 0.88 with libgomp's
 * own spinning (RUNNEL_OMP_WAIT=spin); one in 8 timed, 0.89. Contention is
 * time-random, so a random sample of the primitives sees its share. */
#define SAMPLE_ONE_IN 8

/* A master's window (cpu_wait_window_add), where its current primitive
 * with a team began (between cpu_wait_check and cpu_wait_done), and its
 * sampling state (xorshift32). */
static _Thread_local struct {
    cpu_wait_window win;
    int64_t wall0, cpu0;
    bool in_team;
    uint32_t rng;
} w;

/* Whether the master's next primitive is timed. */
static bool sampled(void)
{
    uint32_t x = w.rng != 0 ? w.rng : (uint32_t)(uintptr_t)&w | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w.rng = x;
    return x % SAMPLE_ONE_IN == 0;
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec t;
    if (clock_gettime(clock, &t) != 0)
        return -1;
    return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

static void init(void)
{
    const char *e = getenv("RUNNEL_OMP_WAIT");
    g.policy = CPU_WAIT_ADAPTIVE;
    if (e != NULL && strcmp(e, "spin") == 0)
        g.policy = CPU_WAIT_SPIN;
    else if (e != NULL && strcmp(e, "sleep") == 0)
        g.policy = CPU_WAIT_SLEEP;
    const char *l = getenv("RUNNEL_OMP_WAIT_LOG");
    g.log = l != NULL && strcmp(l, "1") == 0;
}

cpu_wait_policy cpu_wait_policy_get(void)
{
    pthread_once(&g.once, init);
    return g.policy;
}

/* The thread that holds one episode's pool: forks a team of CPUs + 1 (its
 * threads then dock, asleep, in libgomp's pool of this thread), waits for
 * the episode to end, and releases the pool. */
static void *hold_pool(void *arg)
{
    uint64_t episode = (uint64_t)(uintptr_t)arg;
    (void)pthread_setname_np(pthread_self(), "rn-omp-idle");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = (int)(cpus > 0 ? cpus : 1) + 1;
    omp_set_dynamic(0);
    /* The team's size, read in the region: an empty region is compiled
     * away (GCC), and then no pool is forked. */
    int formed = 0;
#pragma omp parallel num_threads(n)
    {
        if (omp_get_thread_num() == 0)
            formed = omp_get_num_threads();
    }
    atomic_store(&g.formed, formed);
    pthread_mutex_lock(&g.lock);
    while (g.episode == episode)
        pthread_cond_wait(&g.changed, &g.lock);
    pthread_mutex_unlock(&g.lock);
    (void)omp_pause_resource(omp_pause_soft, omp_get_initial_device());
    return NULL;
}

/* Under g.lock: starts an episode (a thread that holds the pool). */
static void hold_locked(void)
{
    if (g.held)
        return;
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0)
        return;
    (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    uint64_t episode = g.episode + 1;
    if (pthread_create(&t, &attr, hold_pool, (void *)(uintptr_t)episode) == 0) {
        /* Named here as well as by itself: until it runs, a new thread has
         * the process's name, which tests count as the caller's OpenMP
         * pool (tests/cpu/test_cpu_threads.c). It cannot have ended: it
         * waits for g.lock, held here, before it returns. */
        (void)pthread_setname_np(t, "rn-omp-idle");
        g.episode = episode;
        g.held = true;
        atomic_store(&g.holding, true);
        atomic_fetch_add(&g.holds, 1u);
    }
    pthread_attr_destroy(&attr);
}

/* Under g.lock: ends the episode (its thread releases the pool). */
static void release_locked(void)
{
    if (!g.held)
        return;
    g.held = false;
    g.episode++;
    atomic_store(&g.holding, false);
    pthread_cond_broadcast(&g.changed);
}

bool cpu_wait_window_add(cpu_wait_window *win, int64_t wall, int64_t cpu, int64_t *d_run,
                         int64_t *d_delay)
{
    if (wall < 0 || cpu < 0)
        return false;
    if (cpu > wall) /* two clocks: the master was on a CPU all along */
        cpu = wall;
    win->run += cpu;
    win->delay += wall - cpu;
    if (win->run + win->delay < WINDOW_DEMAND_NS)
        return false;
    *d_run = win->run;
    *d_delay = win->delay;
    win->run = win->delay = 0;
    return true;
}

bool cpu_wait_contended(int64_t d_run, int64_t d_delay)
{
    return (double)d_delay > CONTENDED_SHARE * (double)(d_run + d_delay);
}

bool cpu_wait_decide(cpu_wait_state *s, int64_t d_run, int64_t d_delay)
{
    bool contended = cpu_wait_contended(d_run, d_delay);
    bool hold;
    if (s->trial) {
        /* The pool was held: the cores were contended then. A trial that
         * finds them still contended holds again at once, and waits twice
         * as long before the next. */
        hold = contended;
        s->backoff = contended ? (s->backoff * 2 > TRIAL_MAX_NS ? TRIAL_MAX_NS : s->backoff * 2)
                               : TRIAL_FIRST_NS;
        s->strikes = 0;
    } else {
        /* Spinning: contention has to last CONFIRM_WINDOWS windows. */
        s->strikes = contended ? s->strikes + 1 : 0;
        hold = s->strikes >= CONFIRM_WINDOWS;
        if (hold)
            s->strikes = 0;
        s->backoff = TRIAL_FIRST_NS;
    }
    s->trial = false;
    return hold;
}

void cpu_wait_check(void)
{
    cpu_wait_policy policy = cpu_wait_policy_get();
    if (policy == CPU_WAIT_SPIN)
        return;
    if (policy == CPU_WAIT_SLEEP) {
        if (!atomic_load_explicit(&g.holding, memory_order_relaxed)) {
            pthread_mutex_lock(&g.lock);
            hold_locked();
            pthread_mutex_unlock(&g.lock);
        }
        return;
    }
    if (atomic_load_explicit(&g.holding, memory_order_relaxed)) {
        /* Sleeping: windows say nothing; a trial when it is due. */
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        w.win = (cpu_wait_window){0};
        w.in_team = false;
        if (now < atomic_load_explicit(&g.due, memory_order_relaxed))
            return;
        pthread_mutex_lock(&g.lock);
        if (g.held && now >= g.trial_at) {
            release_locked();
            g.trial = true;
            atomic_fetch_add(&g.trials, 1u);
        }
        pthread_mutex_unlock(&g.lock);
        return;
    }
    if (!sampled())
        return;
    w.cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    w.wall0 = clock_ns(CLOCK_MONOTONIC);
    w.in_team = w.cpu0 >= 0 && w.wall0 >= 0;
}

/* A full window's decision (takes g.lock): holds the pool when it says so. */
static void decide(int64_t d_run, int64_t d_delay, int64_t now)
{
    pthread_mutex_lock(&g.lock);
    cpu_wait_state s = {.trial = g.trial, .backoff = g.backoff, .strikes = g.strikes};
    bool hold = cpu_wait_decide(&s, d_run, d_delay);
    if (g.log) {
        char name[16] = "";
        (void)pthread_getname_np(pthread_self(), name, sizeof name);
        bool contended = cpu_wait_contended(d_run, d_delay);
        fprintf(stderr, "runnel omp wait: %d %s t %.3f run %.3f ms delay %.3f ms share %.3f%s%s\n",
                (int)getpid(), name, (double)now / 1e6, (double)d_run / 1e6, (double)d_delay / 1e6,
                (double)d_delay / (double)(d_run + d_delay), contended ? " contended" : "",
                hold && !g.held                  ? ": holding the idle pool"
                : contended && !g.trial && !hold ? ": once, spinning on"
                                                 : "");
    }
    g.trial = s.trial;
    g.backoff = s.backoff;
    g.strikes = s.strikes;
    if (hold && !g.held) {
        hold_locked();
        g.trial_at = now + g.backoff;
        atomic_store(&g.due, g.trial_at);
    }
    pthread_mutex_unlock(&g.lock);
}

void cpu_wait_done(void)
{
    if (!w.in_team)
        return;
    w.in_team = false;
    int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    int64_t d_run, d_delay;
    /* The sample stands for SAMPLE_ONE_IN primitives: the window's sums
     * estimate all of them, so that a window spans the same time as if
     * each were timed. */
    if (cpu >= 0 && now >= 0 &&
        cpu_wait_window_add(&w.win, (now - w.wall0) * SAMPLE_ONE_IN, (cpu - w.cpu0) * SAMPLE_ONE_IN,
                            &d_run, &d_delay))
        decide(d_run, d_delay, now);
}

bool cpu_wait_sleeping(void)
{
    return atomic_load(&g.holding);
}

unsigned cpu_wait_holds(void)
{
    return atomic_load(&g.holds);
}

unsigned cpu_wait_trials(void)
{
    return atomic_load(&g.trials);
}
