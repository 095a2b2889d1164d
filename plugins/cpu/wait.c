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
 * or a user's thread running a sync request): the share of the time the
 * master wanted a CPU that it spent waiting for one, run_delay / (run time
 * + run_delay) from /proc/thread-self/schedstat, over windows of
 * WINDOW_DEMAND_NS of its demand, leaving out each interval between two
 * readings in which the master blocked (cpu_wait_window_add): a stream
 * worker parks between requests, and its wake-up waits for a CPU beside
 * the caller that woke it and its team's threads spinning in their dock.
 * Counted, those waits made async runs on a quiet machine look contended
 * where sync ones (the caller never parks) did not, and their teams slept
 * (issue 30, bench/LOG.md "Async blocked more than sync again").
 * Above CONTENDED_SHARE: sleep. Sleeping
 * waits hide whether the contention went away (the team's own wake-ups then
 * wait on run queues too), so the pool is released on trial after a while;
 * the next window decides, and each trial that finds the cores still
 * contended doubles the time before the next one (TRIAL_FIRST_NS up to
 * TRIAL_MAX_NS).
 *
 * RUNNEL_OMP_WAIT=adaptive (the default), spin (never hold the pool: what
 * libgomp does alone) or sleep (hold it from the first team on) fixes the
 * policy, for benchmarks and tests. RUNNEL_OMP_WAIT_LOG=1 prints each
 * window's decision to stderr (the master's name, its run time and
 * run_delay over the window, the share), to see which master found the
 * cores contended and why. */
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/cpu/wait.h"

#define READ_EVERY_NS    (2 * 1000000ll)   /* a master reads its schedstat at most this often */
#define WINDOW_DEMAND_NS (20 * 1000000ll)  /* run time + run_delay a decision needs */
#define CONTENDED_SHARE  0.10              /* waiting for a CPU above this share: contended */
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

/* A master's window (cpu_wait_window_add) and when it read its schedstat
 * last, and its voluntary context switches at its last primitive. */
static _Thread_local struct {
    cpu_wait_window win;
    int64_t read_at;
    long nvcsw; /* at the end of its last primitive with a team */
    bool nvcsw_known;
    bool in_team; /* between cpu_wait_check and cpu_wait_done */
} w;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
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

bool cpu_wait_window_add(cpu_wait_window *win, int64_t run, int64_t delay, bool slept,
                         int64_t *d_run, int64_t *d_delay)
{
    if (win->open && !slept) {
        win->sum_run += run - win->run;
        win->sum_delay += delay - win->delay;
    }
    win->run = run;
    win->delay = delay;
    win->open = true;
    if (win->sum_run + win->sum_delay < WINDOW_DEMAND_NS)
        return false;
    *d_run = win->sum_run;
    *d_delay = win->sum_delay;
    win->sum_run = win->sum_delay = 0;
    return true;
}

bool cpu_wait_decide(cpu_wait_state *s, int64_t d_run, int64_t d_delay)
{
    bool contended = (double)d_delay > CONTENDED_SHARE * (double)(d_run + d_delay);
    if (contended) {
        /* A trial that found the cores still contended waits twice as
         * long before the next; contention seen while spinning starts
         * over from the first wait. */
        s->backoff = s->trial ? (s->backoff * 2 > TRIAL_MAX_NS ? TRIAL_MAX_NS : s->backoff * 2)
                              : TRIAL_FIRST_NS;
    } else {
        s->backoff = TRIAL_FIRST_NS;
    }
    s->trial = false;
    return contended;
}

/* Reads the calling thread's run time and run_delay (ns); false when the
 * kernel does not say (no schedstat). */
static bool read_schedstat(int64_t *run, int64_t *delay)
{
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[96];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    long long r, d;
    if (sscanf(buf, "%lld %lld", &r, &d) != 2)
        return false;
    *run = r;
    *delay = d;
    return true;
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
    int64_t now = now_ns();
    if (atomic_load_explicit(&g.holding, memory_order_relaxed)) {
        /* Sleeping: windows say nothing; a trial when it is due. */
        w.win = (cpu_wait_window){0};
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
    /* Whether the master blocked since the end of its last primitive with
     * a team (not inside one: a barrier's futex wait under contention is
     * what the window is there to see): a stream worker parks between
     * requests, and its wake-up waits for a CPU while the caller that woke
     * it and its team's spinning threads have them. */
    struct rusage ru;
    bool slept = false;
    if (w.nvcsw_known && getrusage(RUSAGE_THREAD, &ru) == 0)
        slept = ru.ru_nvcsw != w.nvcsw;
    w.in_team = true;
    if (!slept && w.win.open && now - w.read_at < READ_EVERY_NS)
        return;
    int64_t run, delay, d_run, d_delay;
    if (!read_schedstat(&run, &delay))
        return;
    w.read_at = now;
    if (!cpu_wait_window_add(&w.win, run, delay, slept, &d_run, &d_delay))
        return;
    pthread_mutex_lock(&g.lock);
    cpu_wait_state s = {.trial = g.trial, .backoff = g.backoff};
    bool contended = cpu_wait_decide(&s, d_run, d_delay);
    if (g.log) {
        char name[16] = "";
        (void)pthread_getname_np(pthread_self(), name, sizeof name);
        fprintf(stderr, "runnel omp wait: %s run %.3f ms delay %.3f ms share %.3f%s%s\n", name,
                (double)d_run / 1e6, (double)d_delay / 1e6,
                (double)d_delay / (double)(d_run + d_delay), contended ? " contended" : "",
                contended && !g.held ? ": holding the idle pool" : "");
    }
    g.trial = s.trial;
    g.backoff = s.backoff;
    if (contended && !g.held) {
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
    struct rusage ru;
    w.nvcsw_known = getrusage(RUSAGE_THREAD, &ru) == 0;
    w.nvcsw = w.nvcsw_known ? ru.ru_nvcsw : 0;
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
