/* Task executors shared by compiled models.
 *
 * An executor pool is one scheduler (sched/) with N streams of T workers (the
 * task executors, one per stream) plus two named executors of its own threads:
 * "device-wait" (waits on device completions) and "callback" (runs request
 * callbacks, one thread so that a request's callbacks never run concurrently).
 * Pools have names (a plugin uses its device's): compiled models asking for
 * the same name and stream configuration share a pool, created when the
 * first user acquires it and destroyed when the last releases it, which is
 * how a plugin's executors are released when its last compiled model goes. */
#ifndef RUNNEL_EXECUTORS_EXECUTORS_H
#define RUNNEL_EXECUTORS_EXECUTORS_H

#include <stdbool.h>
#include <stdint.h>

#include "runnel/status.h"
#include "sched/sched.h"

typedef struct executors_config {
    const char *name;            /* who shares it ("REF"); NULL is "" */
    uint32_t n_streams;          /* >= 1 */
    uint32_t threads_per_stream; /* >= 1 */
    bool trace;                  /* record tasks for sched_trace_write_json */
} executors_config;

typedef struct executors_pool executors_pool;

/* Returns the shared pool for `cfg`, creating it on first use. Thread-safe.
 * Each successful acquire must be paired with executors_release. */
rn_status executors_acquire(const executors_config *cfg, executors_pool **out);

/* Takes one more reference on a pool the caller holds (or that a compiled
 * model it serves holds): a thread outside the pool that completes a DAG
 * node (a device's completion) keeps the pool alive through the call, since
 * the run may complete inside it and its owner free everything. */
void executors_retain(executors_pool *pool);

/* Drops one reference; the last one stops the pool's threads and frees it.
 * Called on one of the pool's own threads (a device's completion that its
 * runtime ran on the thread that armed it: PoCL runs an event callback
 * there when the event is already complete), the last one hands that to a
 * thread of its own ("rn-pool-reaper"), since a thread cannot join itself.
 * NULL is a no-op. */
void executors_release(executors_pool *pool);

/* The pool's scheduler and the ids of its named executors. */
sched *executors_sched(const executors_pool *pool);
uint32_t executors_callback_id(const executors_pool *pool);
uint32_t executors_wait_id(const executors_pool *pool);

/* Number of pools alive (for tests of sharing and release). */
int executors_pool_count(void);

/* Defaults from the hardware: the number of online CPUs. */
uint32_t executors_cpu_count(void);

#endif /* RUNNEL_EXECUTORS_EXECUTORS_H */
