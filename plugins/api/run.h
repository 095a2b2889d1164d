/* One run object: the life of a request's runs over a pipeline
 * (executors/pipeline.h), which the generic request (request.c), HETERO's
 * and AUTO's embed. It owns whether the request is idle or running, the
 * first error of the run in progress with its message, cancel, the user's
 * callback, the two DAG instances a request alternates between (so that a
 * callback may start the request again), and waiting for a run, with
 * OpenVINO's InferRequest rules: RN_REQUEST_BUSY while running, the callback
 * called with the request's owner before waiters are released, wait_for's
 * RN_RESULT_NOT_READY after its timeout.
 *
 * A run over a pipeline: plugin_run_begin, then plugin_run_inline (every
 * node in the caller's thread; a node that hands work elsewhere is waited
 * for there) or plugin_run_start (an instance on the pipeline's pool). The
 * pipeline's tasks call plugin_run_record_error and skip their work once
 * plugin_run_stopping; its callback stage calls plugin_run_finish; a node
 * that returned SCHED_PENDING completes with plugin_run_complete_node. AUTO,
 * whose run is its device request's run, uses the same object with no
 * pipeline: begin, then plugin_run_finish from the device's callback (or
 * plugin_run_end after a sync run). */
#ifndef RUNNEL_PLUGINS_API_RUN_H
#define RUNNEL_PLUGINS_API_RUN_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "executors/pipeline.h"
#include "runnel/infer_request.h"
#include "runnel/plugin.h"

#define PLUGIN_RUN_ERROR 1024

/* A request's two instances of one pipeline's DAG. */
typedef struct plugin_run_instances {
    sched_instance *at[2];
} plugin_run_instances;

typedef struct plugin_run {
    rn_infer_request *owner; /* what the callback is called with */
    atomic_int running;
    /* The run in progress: its first error (message in error, written by
     * the thread that set status) and its cancel flag, or the outer run's
     * (a subgraph body's run is cancelled with the node's). */
    atomic_int status;
    atomic_bool cancel;
    const atomic_bool *cancel_source;
    bool inline_run; /* the run executes in the caller's thread */
    char error[PLUGIN_RUN_ERROR];
    pthread_mutex_t lock;
    pthread_cond_t done;
    /* Async runs (under lock): counted when started and completed; the
     * instance running and its pipeline; a node an inline run waits for. */
    uint64_t started, completed;
    atomic_uint_fast64_t done_runs; /* completed, read by waiters spinning */
    /* When the run in flight started, and how long the last one took from
     * its start to its completion (CLOCK_MONOTONIC ns; 0: none yet), for
     * the waiters' choice to spin (wait_until in run.c). */
    uint64_t start_ns, last_run_ns;
    /* plugin_run_finish calls between publishing a completion and their
     * broadcast, which comes after the unlock (plugin_run_destroy waits
     * for them). */
    unsigned finishing;
    bool destroying; /* plugin_run_destroy waits for the finishers */
    int current;
    sched_instance *instance;
    const executors_pipeline *pipeline;
    bool inline_pending;
    rn_status inline_pending_status;
    rn_status last_status;
    char last_error[PLUGIN_RUN_ERROR];
    rn_infer_callback callback;
    void *callback_data;
} plugin_run;

void plugin_run_init(plugin_run *run, rn_infer_request *owner);
/* Waits for an async run to be done (its completion published and waiters
 * released; its DAG instance may still be finishing: free the instances
 * after), then frees the lock. */
void plugin_run_destroy(plugin_run *run);

/* Two instances of p's DAG whose tasks get ctx->user_arg = user_arg. */
rn_status plugin_run_instances_create(const executors_pipeline *p, void *user_arg,
                                      plugin_run_instances *out);
/* Waits for a completion in progress, then frees them. */
void plugin_run_instances_free(plugin_run_instances *pair);

/* RN_REQUEST_BUSY naming `what` while a run is in flight. */
rn_status plugin_run_check_idle(const plugin_run *run, const char *what);
bool plugin_run_busy(const plugin_run *run);

/* Marks a run begun, with no error and not cancelled (RN_REQUEST_BUSY
 * naming `what` when one is in flight). */
rn_status plugin_run_begin(plugin_run *run, const char *what);
/* Ends a sync run, or one that could not start. */
void plugin_run_end(plugin_run *run);

/* Runs p's DAG in the calling thread with ctx->user_arg = user_arg, then
 * ends the run; returns its outcome with its message. */
rn_status plugin_run_inline(plugin_run *run, const executors_pipeline *p, void *user_arg);
/* Starts one of `pair` (instances of p) on p's pool; the callback stage
 * ends the run (plugin_run_finish). On failure the run has ended. */
rn_status plugin_run_start(plugin_run *run, const executors_pipeline *p,
                           plugin_run_instances *pair);

/* A run whose work is not a pipeline of the object's (AUTO's: its device
 * request's run) going async: counted as started before the work may
 * complete (which ends it with plugin_run_finish); when the work could not
 * start, plugin_run_start_failed uncounts it, ends the run and returns st. */
void plugin_run_start_external(plugin_run *run);
rn_status plugin_run_start_failed(plugin_run *run, rn_status st);

/* Keeps the run's first error, with the thread's last error message. */
void plugin_run_record_error(plugin_run *run, rn_status st);

/* Whether the run failed or was cancelled: tasks not started skip. */
static inline bool plugin_run_stopping(const plugin_run *run)
{
    return atomic_load_explicit(&run->status, memory_order_relaxed) != RN_OK ||
           atomic_load_explicit(run->cancel_source, memory_order_relaxed);
}

/* The run's status so far: its first error, else RN_CANCELLED when
 * cancelled, else RN_OK. */
static inline rn_status plugin_run_status(const plugin_run *run)
{
    rn_status st = (rn_status)atomic_load(&((plugin_run *)run)->status);
    return st == RN_OK && atomic_load(run->cancel_source) ? RN_CANCELLED : st;
}

/* The run's outcome: its first error, else RN_CANCELLED when cancelled,
 * else RN_OK; its message written to `message`. */
rn_status plugin_run_outcome(const plugin_run *run, char *message, size_t cap);

/* The flag kernels poll (rn_kernel_args.cancel); `source` replaces the
 * run's own (NULL: back to it). */
const atomic_bool *plugin_run_cancel_flag(const plugin_run *run);
void plugin_run_set_cancel_source(plugin_run *run, const atomic_bool *source);

/* An inline run's node that hands work elsewhere: plugin_run_expect before
 * handing it, then plugin_run_await(pending) waits, in the caller's thread,
 * for plugin_run_complete_node when the node said it was pending; returns
 * the status the work completed with. */
void plugin_run_expect(plugin_run *run);
rn_status plugin_run_await(plugin_run *run, bool pending);

/* A node that returned SCHED_PENDING is done with `status` (a failure's
 * message the thread's last error): an inline run's plugin_run_await
 * returns it; an async run keeps it as the run's error (the first) and
 * completes the node of the running pipeline, a stage node named by its
 * stage (`is_stage`), a task by its index. `pool` is
 * held through the completion, which may end the run and let its owner
 * free everything. */
void plugin_run_complete_node(plugin_run *run, bool is_stage, uint32_t which, rn_status status,
                              executors_pool *pool);

/* The callback stage: ends the run, calls the user's callback with
 * (owner, outcome) and the message as the thread's last error, then
 * publishes the outcome and releases waiters. Inline runs do nothing. */
void plugin_run_finish(plugin_run *run);

/* Whether a waiter at `now` spins before it sleeps, for a run started at
 * `start_ns` whose previous run took `last_run_ns` (0: none yet): only
 * when the run is expected to complete within the spin (30 us). */
bool plugin_run_wait_spins(uint64_t start_ns, uint64_t last_run_ns, uint64_t now);

/* Waits for the run started last; returns its outcome with its message.
 * wait_for: at most timeout_ms (negative: RN_INVALID_ARG). */
rn_status plugin_run_wait(plugin_run *run);
rn_status plugin_run_wait_for(plugin_run *run, int64_t timeout_ms);

/* Sets the cancel flag of a run in flight; returns whether one was. */
bool plugin_run_cancel(plugin_run *run);

rn_status plugin_run_set_callback(plugin_run *run, rn_infer_callback fn, void *user_data);

/* rn_request_ops' wait, wait_for, set_callback and busy, once for every
 * request that embeds a run object as its first member (the generic
 * request, HETERO's and AUTO's, each checking it with PLUGIN_RUN_FIRST):
 * what a request answers there is its run's. */
#define PLUGIN_RUN_FIRST(type, member)                                                             \
    _Static_assert(offsetof(type, member) == 0, #type ": its run object must be its first member")
rn_status plugin_run_op_wait(rn_plugin_request *request);
rn_status plugin_run_op_wait_for(rn_plugin_request *request, int64_t timeout_ms);
rn_status plugin_run_op_set_callback(rn_plugin_request *request, rn_infer_callback fn,
                                     void *user_data);
bool plugin_run_op_busy(const rn_plugin_request *request);

#endif /* RUNNEL_PLUGINS_API_RUN_H */
