/*
 * bench/sched: what the runnel side (bench_sched.c) and the oneTBB peer (tbb_peer.cc) share.
 * Both run the same task bodies, so the difference is the scheduler.
 */
#ifndef RN_BENCH_SCHED_BENCH_H
#define RN_BENCH_SCHED_BENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The body of a trivial task: counts itself in a per-thread counter (no sharing). */
void bench_work(void);
/* The body of a task of `ns` nanoseconds: spins on the clock, then counts itself. */
void bench_spin(uint64_t ns);
/* Tasks counted by every thread since the last reset (call only while nothing runs). */
uint64_t bench_work_total(void);
void bench_work_reset(void);
uint64_t bench_now_ns(void);

/* ---------------------------------------------------------------- the oneTBB peer */

/* oneTBB with `threads` threads in all (global_control::max_allowed_parallelism): the thread
 * that waits on a flow graph joins its arena and runs tasks, as oneTBB intends. */
typedef struct tbb_peer tbb_peer;
tbb_peer *tbb_peer_create(int threads);
void tbb_peer_destroy(tbb_peer *p);

/* A flow graph of continue_nodes, built before timing. */
typedef struct tbb_graph tbb_graph;
tbb_graph *tbb_graph_chain(size_t n);                                /* n nodes in a line */
tbb_graph *tbb_graph_fan(size_t n, uint64_t spin_ns, int with_sink); /* 1 -> n (-> 1) */
tbb_graph *tbb_graph_tree(size_t n); /* binary out-tree of n nodes */
void tbb_graph_free(tbb_graph *g);
/* Runs the graph once (try_put to its source, wait_for_all); returns the elapsed ns. */
uint64_t tbb_graph_run(tbb_graph *g);

/* One wake-up sample: after `idle_us` of idleness, enqueue a task into an arena from this
 * (outside) thread; returns ns from enqueue to the task's start. */
uint64_t tbb_wake_latency(tbb_peer *p, uint64_t idle_us);

/* oneTBB's version string. */
const char *tbb_peer_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RN_BENCH_SCHED_BENCH_H */
