/* How the threads of the CPU device's OpenMP teams wait for each other:
 * spinning while the cores are free, sleeping while they are contended
 * (wait.c says how and why). Private to plugins/cpu (and its tests). */
#ifndef RUNNEL_PLUGINS_CPU_WAIT_H
#define RUNNEL_PLUGINS_CPU_WAIT_H

#include <stdbool.h>
#include <stdint.h>

/* RUNNEL_OMP_WAIT: adaptive (spin while the cores are free, sleep while
 * they are contended), spin (libgomp alone) or sleep. */
typedef enum cpu_wait_policy { CPU_WAIT_ADAPTIVE, CPU_WAIT_SPIN, CPU_WAIT_SLEEP } cpu_wait_policy;
cpu_wait_policy cpu_wait_policy_get(void);
/* On a team's master before each primitive with a team: measures whether
 * the cores are contended and makes the process's teams spin or sleep. */
void cpu_wait_check(void);
/* On the master after that primitive (its team joined): notes its
 * voluntary context switches, so that the next cpu_wait_check can tell
 * whether it blocked between the two (cpu_wait_window_add). */
void cpu_wait_done(void);
/* The adaptive policy's decision for one window of a master's demand
 * (d_run ns on a CPU, d_delay ns waiting for one): whether the cores are
 * contended, and the time to sleep before the next trial (`trial`: the
 * window followed a trial). Pure: tests drive it. */
typedef struct cpu_wait_state {
    bool trial;
    int64_t backoff; /* ns */
} cpu_wait_state;
bool cpu_wait_decide(cpu_wait_state *s, int64_t d_run, int64_t d_delay);
/* A master's window: its demand summed over the intervals between its
 * schedstat readings (run time and run_delay, ns), leaving out each interval
 * in which it blocked (`slept`: a stream worker parked between requests;
 * that interval's run_delay is its wake-up waiting for a CPU beside the
 * caller that woke it, not contention while its team runs). Adds a reading;
 * true once the sums reach a window's demand (then in *d_run, *d_delay, and
 * the window starts over). Pure: tests drive it. */
typedef struct cpu_wait_window {
    int64_t run, delay;         /* the last reading */
    int64_t sum_run, sum_delay; /* the window so far */
    bool open;
} cpu_wait_window;
bool cpu_wait_window_add(cpu_wait_window *w, int64_t run, int64_t delay, bool slept, int64_t *d_run,
                         int64_t *d_delay);
/* Whether the teams sleep now; how often they began to, and how often a
 * trial let them spin again (for tests and benchmarks). */
bool cpu_wait_sleeping(void);
unsigned cpu_wait_holds(void);
unsigned cpu_wait_trials(void);

#endif /* RUNNEL_PLUGINS_CPU_WAIT_H */
