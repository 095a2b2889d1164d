/*
 * sched/sched.h — runnel's work-stealing task-DAG scheduler (the internal API of sched/).
 *
 * The scheduler knows tasks and DAGs, not models. Its pieces, in the order a user meets them:
 *
 *   sched           N streams x T workers (threads), each worker with a Chase–Lev deque, each
 *                   stream with a bounded injection queue; plus named executors.
 *   executor        a named group of threads outside the streams ("callback", "device-wait")
 *                   with its own queue; DAG nodes routed to it run only on its threads.
 *   sched_dag       an immutable DAG topology, built once with a sched_dag_builder and shared
 *                   by any number of instances (and schedulers).
 *   sched_instance  one run-able copy of a DAG: its own join counters, user argument, status
 *                   and completion. Bound to a stream when started; restartable after it has
 *                   completed.
 *
 * Conventions: functions that can fail return 0 or a negative errno value (-EINVAL, -ENOMEM,
 * -EAGAIN, -EBUSY, -ETIMEDOUT); out parameters are written only on success; every _create has
 * a _free/_destroy that accepts NULL. docs/sched.md explains the design.
 */
#ifndef RN_SCHED_SCHED_H
#define RN_SCHED_SCHED_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/kit.h"

typedef struct sched sched;
typedef struct sched_dag sched_dag;
typedef struct sched_dag_builder sched_dag_builder;
typedef struct sched_instance sched_instance;

/* ------------------------------------------------------------------ status codes */

/* A task returns SCHED_OK when done, SCHED_PENDING when it has handed its work to someone
 * else who will call sched_instance_complete_node later, or any other value (use negative
 * ones) as an error code that fails the instance. */
#define SCHED_OK      0
#define SCHED_PENDING 1

/* The status of an instance that was cancelled before it completed. */
#define SCHED_CANCELLED (-ECANCELED)

/* The executor id of "the instance's stream workers" (the default for DAG nodes). */
#define SCHED_EXECUTOR_STREAM 0u

/* Named executors per scheduler, ids 1..SCHED_MAX_EXECUTORS. */
#define SCHED_MAX_EXECUTORS 16u

/* Pass as a stream index to let the scheduler choose: the calling worker's own stream when
 * called from a task, otherwise round-robin over the streams. */
#define SCHED_STREAM_ANY (-1)

/* ------------------------------------------------------------------ configuration */

typedef struct sched_config {
    uint32_t n_streams;          /* streams (>= 1) */
    uint32_t workers_per_stream; /* worker threads per stream (>= 1) */
    bool steal_across_streams;   /* an idle worker may steal from other streams */
    uint32_t steal_idle_us;      /* ... after being idle this long (microseconds) */
    bool pin_cpus;               /* pin worker i to CPU i mod the number of CPUs */
    uint32_t spin_us;            /* an idle worker spins and steals this long before parking;
                                    also how long sched_instance_wait spins before sleeping;
                                    0 where the creator may run on one CPU only */
    bool trace;                  /* record every task for sched_trace_write_json */
    uint32_t injection_capacity; /* per-stream injection queue bound (rounded up to a power
                                    of two); a full queue makes external submissions fail with
                                    -EAGAIN (admission control) */
    uint32_t deque_capacity;     /* per-worker deque bound (rounded up to a power of two, >= 2);
                                    a full deque spills to the stream's injection queue */
} sched_config;

/* Defaults from the hardware: one stream with one worker per online CPU, stealing across
 * streams after 20 us idle, 50 us spin before parking, no pinning, no tracing, injection
 * queues of 4096 and deques of 1024 items. */
sched_config sched_config_default(void);

/* ------------------------------------------------------------------ scheduler */

/* Creates a scheduler and starts its worker threads. Returns 0, -EINVAL for a bad config
 * (zero streams or workers, more than 4096 workers), -ENOMEM, or -EAGAIN when threads cannot
 * be started. The caller owns *out and releases it with sched_destroy. */
int sched_create(const sched_config *cfg, sched **out);

/* Stops and joins every worker and executor thread, then frees the scheduler. Must not be
 * called from one of its own threads, nor while an instance started on it is still running
 * (wait for them first); one-off tasks not yet run are dropped. NULL is a no-op. */
void sched_destroy(sched *s);

/* The configuration the scheduler runs with: capacities rounded up, and spin_us 0 when the
 * creating thread may run on one CPU only (spinning there only delays the thread spun for). */
const sched_config *sched_get_config(const sched *s);

/* Number of streams and of stream workers (executor threads not included). */
uint32_t sched_stream_count(const sched *s);
uint32_t sched_worker_count(const sched *s);

/* The stream of the calling thread when it is a stream worker (of any scheduler), else -1 (a
 * user's thread running a request inline, an executor thread). */
int sched_current_stream(void);

/* Whether the calling thread is one of `s`'s stream workers or executor threads (which cannot
 * destroy `s`: sched_destroy joins them). */
bool sched_is_own_thread(const sched *s);

/* Adds a named executor with `n_threads` (>= 1) threads of its own and writes its id (1, 2,
 * ...) to *out_id. DAG nodes whose executor is that id run only on these threads, in FIFO
 * order. Names are unique per scheduler. Returns 0, -EINVAL (bad name or thread count),
 * -EEXIST (name taken), -ENOSPC (SCHED_MAX_EXECUTORS reached), -ENOMEM or -EAGAIN.
 * Thread-safe; instances that use the executor must be started after it was added. */
int sched_add_executor(sched *s, const char *name, uint32_t n_threads, uint32_t *out_id);

/* Looks an executor up by name. Returns 0 and writes *out_id, or -ENOENT. */
int sched_find_executor(const sched *s, const char *name, uint32_t *out_id);

/* ------------------------------------------------------------------ tasks */

/* What a task knows about where and for whom it runs. Valid only during the call. */
typedef struct sched_task_ctx {
    sched *sched;
    sched_instance *instance; /* NULL for a one-off task from sched_submit */
    void *user_arg;           /* the instance's user argument (sched_submit: its arg) */
    uint32_t node;            /* the DAG node index (UINT32_MAX for a one-off task) */
    uint32_t stream;          /* the stream the instance (or task) is bound to */
    uint32_t worker;          /* the thread running it: stream workers are 0..W-1, executor
                                 threads follow in the order they were added */
    uint32_t executor;        /* SCHED_EXECUTOR_STREAM or the executor id */
} sched_task_ctx;

/* A task: a DAG node's function, or a one-off task. `node_arg` is the argument given when the
 * node was added (sched_submit: its arg). Returns SCHED_OK, SCHED_PENDING (DAG nodes only) or
 * an error code. A task may submit work and start other instances; it must not wait for an
 * instance of the same scheduler (the worker would be blocked, not helping). */
typedef int (*sched_task_fn)(const sched_task_ctx *ctx, void *node_arg);

/* Runs fn(ctx, arg) once on a worker of `stream` (or SCHED_STREAM_ANY). From a worker of that
 * stream the task goes to the worker's own deque, otherwise to the stream's injection queue.
 * Returns 0, -EINVAL (bad stream), -ENOMEM, or -EAGAIN when the injection queue is full. */
int sched_submit(sched *s, int stream, sched_task_fn fn, void *arg);

/* A one-off task's record that its caller owns (sched_post). */
typedef struct sched_job {
    sched_task_fn fn;
    void *arg;
    uint32_t stream; /* written by sched_post */
} sched_job;

/* sched_submit without its allocation: runs job->fn(ctx, job->arg) once on a worker of
 * `stream`. The scheduler reads *job when the task starts, before calling fn, and never after:
 * the caller keeps it valid until then (fn may free or reuse it). Returns 0, -EINVAL or
 * -EAGAIN (the injection queue is full). */
int sched_post(sched *s, int stream, sched_job *job);

/* ------------------------------------------------------------------ DAG topology */

/* Creates an empty builder. Returns 0 or -ENOMEM. */
int sched_dag_builder_create(sched_dag_builder **out);

/* Frees a builder (not the DAGs built from it). NULL is a no-op. */
void sched_dag_builder_free(sched_dag_builder *b);

/* Adds a node and writes its index (0, 1, 2, ... in order of addition) to *out_node (may be
 * NULL). `name` is copied (NULL: "node<index>"); `fn` must not be NULL; `node_arg` is passed to
 * fn; `executor` is SCHED_EXECUTOR_STREAM or an executor id of the scheduler that will run
 * the instances. Returns 0, -EINVAL or -ENOMEM. */
int sched_dag_add_node(sched_dag_builder *b, const char *name, sched_task_fn fn, void *node_arg,
                       uint32_t executor, uint32_t *out_node);

/* Adds the edge from -> to: `to` runs only after `from` has completed. Adding an edge twice
 * is allowed and means nothing more. Returns 0, -EINVAL (unknown node) or -ENOMEM. */
int sched_dag_add_edge(sched_dag_builder *b, uint32_t from, uint32_t to);

/* Compiles the builder's nodes and edges into an immutable DAG: successors in compressed-row
 * form, predecessor counts, names, executors. The builder is unchanged and may be reused.
 * Returns 0, -ELOOP when the edges form a cycle, or -ENOMEM. The caller owns *out. */
int sched_dag_build(const sched_dag_builder *b, sched_dag **out);

/* Frees a DAG. Every instance of it must have been freed first. NULL is a no-op. */
void sched_dag_free(sched_dag *d);

uint32_t sched_dag_node_count(const sched_dag *d);
uint32_t sched_dag_edge_count(const sched_dag *d);
/* The node's name, owned by the DAG; NULL for an index out of range. */
const char *sched_dag_node_name(const sched_dag *d, uint32_t node);

/* ------------------------------------------------------------------ instances */

/* Called exactly once per run when an instance completes, on the thread that finished its
 * last node (a worker, an executor thread, or the thread that called
 * sched_instance_complete_node). `status` is SCHED_OK, SCHED_CANCELLED, or the first error
 * code a task returned. Waiters are released after it returns. It must not free or restart
 * `inst`. */
typedef void (*sched_done_fn)(sched_instance *inst, int status, void *cb_arg);

/* Creates an idle instance of `dag` with its own join counters. `user_arg` reaches every task
 * as ctx->user_arg. The DAG must outlive the instance. Returns 0, -EINVAL or -ENOMEM. */
int sched_instance_create(const sched_dag *dag, void *user_arg, sched_instance **out);

/* Frees an instance; if it is running, first waits for it to complete. NULL is a no-op. */
void sched_instance_free(sched_instance *inst);

/* Starts a run of `inst` on scheduler `s`, bound to `stream` (or SCHED_STREAM_ANY). Nodes
 * without predecessors become ready at once; every node runs once, after all its
 * predecessors. `cb` (may be NULL) is called on completion with `cb_arg`. An instance may be
 * started again once its previous run has completed. Returns 0, -EBUSY (still running),
 * -EINVAL (bad stream, or the DAG names an executor `s` does not have) or -EAGAIN (the
 * stream's injection queue is full; nothing was started). A DAG with no nodes completes
 * before this returns, calling `cb` on the caller's thread. */
int sched_instance_start(sched *s, sched_instance *inst, int stream, sched_done_fn cb,
                         void *cb_arg);

/* Blocks until the current run has completed (its callback has returned) and returns its
 * status; returns at once with the last status when the instance is not running. Spins for
 * the scheduler's spin_us before sleeping. */
int sched_instance_wait(sched_instance *inst);

/* Like sched_instance_wait, but gives up after `timeout_ns` nanoseconds: returns 0 when the
 * run has completed (read its status with sched_instance_status) or -ETIMEDOUT. */
int sched_instance_wait_for(sched_instance *inst, uint64_t timeout_ns);

/* Cancels the current run: nodes that have not started are skipped (pending nodes must
 * still be completed), and the run completes, exactly once, with SCHED_CANCELLED unless it
 * failed or completed first. Returns 0, or -EINVAL when the instance is not running. */
int sched_instance_cancel(sched_instance *inst);

/* Completes a node whose task returned SCHED_PENDING, from any thread (a device completion).
 * `status` is SCHED_OK or an error code that fails the instance. The node's successors are
 * released; the instance may complete (and its callback run) inside this call. Calling it for
 * a node that is not pending is a programmer error. Returns 0 or -EINVAL. */
int sched_instance_complete_node(sched_instance *inst, uint32_t node, int status);

/* The status of the last completed run (SCHED_OK before the first); while a run is in
 * progress, its status so far (an error or SCHED_CANCELLED once one is set). */
int sched_instance_status(const sched_instance *inst);

/* True from a successful start until the run's waiters are released. */
bool sched_instance_running(const sched_instance *inst);

/* A process-unique id (also the "instance" field of trace events), and the user argument. */
uint64_t sched_instance_id(const sched_instance *inst);
void *sched_instance_user_arg(const sched_instance *inst);

/* ------------------------------------------------------------------ tracing */

/* Writes every task recorded so far (config.trace) as Chrome trace-event JSON, readable in
 * Perfetto and chrome://tracing: one complete ("X") event per task with the node's name, the
 * worker's stream as pid and the worker as tid (executors appear as their own processes), the
 * start and duration in microseconds, and args {instance, run, node, stream}. Safe while tasks
 * run (events still in flight are left out). Returns 0, -EINVAL when tracing is off, or a
 * negative errno from opening or writing the file. */
int sched_trace_write_json(sched *s, const char *path);

/* Number of task events recorded so far. */
size_t sched_trace_event_count(sched *s);

/* The instant (sched_now_ns, CLOCK_MONOTONIC) that the trace's timestamps count from: what
 * another source of events (a device's own timestamps) subtracts to share the time axis. */
uint64_t sched_trace_origin_ns(const sched *s);

/* Writes `str` as a JSON string (quoted, escaped) the way the trace writes names: for another
 * writer of events into the same file. */
RN_KIT void sched_trace_put_string(FILE *f, const char *str);

#endif /* RN_SCHED_SCHED_H */
