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
/* On a team's master before each primitive with a team: makes the
 * process's teams spin or sleep, and starts measuring the master's time
 * off a CPU while its team works. */
void cpu_wait_check(void);
/* On the master after that primitive (its team joined): adds the
 * primitive's wall time and the master's CPU time over it to the master's
 * window, and decides when the window is full. The time between two
 * primitives (a stream worker waiting for its next request) is in no
 * window. */
void cpu_wait_done(void);
/* A master's window: the wall time of its primitives with a team and its
 * CPU time over them, summed (run: CPU time; delay: the rest, time it was
 * not on a CPU). Adds one primitive's (wall, cpu) in ns; true once the
 * window reaches a decision's demand (then its sums in *d_run, *d_delay,
 * and the window starts over). Pure: tests drive it. */
typedef struct cpu_wait_window {
    int64_t run, delay;
} cpu_wait_window;
bool cpu_wait_window_add(cpu_wait_window *w, int64_t wall, int64_t cpu, int64_t *d_run,
                         int64_t *d_delay);
/* Whether a window (d_run ns on a CPU, d_delay ns off one) is contended. */
bool cpu_wait_contended(int64_t d_run, int64_t d_delay);
/* The adaptive policy's decision after one window: whether the teams
 * sleep from now on (hold the idle pool). Spinning, that takes two
 * contended windows in a row (one is a blip: another thread's tick on the
 * master's CPU); on a trial (`trial`: the pool was released to see whether
 * the contention went away) one window decides, and sets the time to
 * sleep before the next trial (`backoff`, ns). Pure: tests drive it. */
typedef struct cpu_wait_state {
    bool trial;
    int strikes; /* contended windows in a row while spinning */
    int64_t backoff;
} cpu_wait_state;
bool cpu_wait_decide(cpu_wait_state *s, int64_t d_run, int64_t d_delay);
/* Whether the teams sleep now; how often they began to, and how often a
 * trial let them spin again (for tests and benchmarks). */
bool cpu_wait_sleeping(void);
unsigned cpu_wait_holds(void);
unsigned cpu_wait_trials(void);

#endif /* RUNNEL_PLUGINS_CPU_WAIT_H */
