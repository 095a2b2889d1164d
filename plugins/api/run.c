/* One run object (see run.h). */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "plugins/api/run.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static rn_status busy_error(const char *what)
{
    return rn_set_error(RN_REQUEST_BUSY, "%s: the infer request is running", what);
}

void plugin_run_init(plugin_run *run, rn_infer_request *owner)
{
    run->owner = owner;
    atomic_init(&run->running, 0);
    atomic_init(&run->status, RN_OK);
    atomic_init(&run->cancel, false);
    atomic_init(&run->done_runs, 0);
    run->start_ns = run->last_run_ns = 0;
    run->finishing = 0;
    run->destroying = false;
    run->cancel_source = &run->cancel;
    pthread_mutex_init(&run->lock, NULL);
    pthread_cond_init(&run->done, NULL);
}

void plugin_run_destroy(plugin_run *run)
{
    /* An async run is idle before its callback is called, and done only
     * once its outcome is published and waiters released: wait for that
     * (a run started, or one whose completion is still under way, up to
     * its broadcast). */
    pthread_mutex_lock(&run->lock);
    run->destroying = true;
    while (run->completed < run->started || run->finishing > 0)
        pthread_cond_wait(&run->done, &run->lock);
    pthread_mutex_unlock(&run->lock);
    pthread_cond_destroy(&run->done);
    pthread_mutex_destroy(&run->lock);
}

rn_status plugin_run_instances_create(const executors_pipeline *p, void *user_arg,
                                      plugin_run_instances *out)
{
    for (int i = 0; i < 2; i++)
        if (sched_instance_create(executors_pipeline_dag(p), user_arg, &out->at[i]) != 0) {
            plugin_run_instances_free(out);
            return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
        }
    return RN_OK;
}

void plugin_run_instances_free(plugin_run_instances *pair)
{
    for (int i = 0; i < 2; i++) {
        sched_instance_free(pair->at[i]); /* waits for a completion in progress */
        pair->at[i] = NULL;
    }
}

rn_status plugin_run_check_idle(const plugin_run *run, const char *what)
{
    return plugin_run_busy(run) ? busy_error(what) : RN_OK;
}

bool plugin_run_busy(const plugin_run *run)
{
    return atomic_load(&((plugin_run *)run)->running) != 0;
}

rn_status plugin_run_begin(plugin_run *run, const char *what)
{
    int idle = 0;
    if (!atomic_compare_exchange_strong(&run->running, &idle, 1))
        return busy_error(what);
    atomic_store(&run->status, RN_OK);
    atomic_store(&run->cancel, false);
    run->error[0] = '\0';
    return RN_OK;
}

void plugin_run_end(plugin_run *run)
{
    atomic_store(&run->running, 0);
}

void plugin_run_record_error(plugin_run *run, rn_status st)
{
    int expected = RN_OK;
    if (atomic_compare_exchange_strong(&run->status, &expected, (int)st))
        snprintf(run->error, sizeof run->error, "%s", rn_last_error());
}

rn_status plugin_run_outcome(const plugin_run *run, char *message, size_t cap)
{
    rn_status st = (rn_status)atomic_load(&((plugin_run *)run)->status);
    if (st != RN_OK) {
        snprintf(message, cap, "%s", run->error);
        return st;
    }
    if (atomic_load(run->cancel_source)) {
        snprintf(message, cap, "the infer request was cancelled");
        return RN_CANCELLED;
    }
    if (cap > 0)
        message[0] = '\0';
    return RN_OK;
}

const atomic_bool *plugin_run_cancel_flag(const plugin_run *run)
{
    return run->cancel_source;
}

void plugin_run_set_cancel_source(plugin_run *run, const atomic_bool *source)
{
    run->cancel_source = source != NULL ? source : &run->cancel;
}

rn_status plugin_run_inline(plugin_run *run, const executors_pipeline *p, void *user_arg)
{
    run->inline_run = true;
    executors_pipeline_run_inline(p, user_arg);
    run->inline_run = false;
    char message[PLUGIN_RUN_ERROR];
    rn_status st = plugin_run_outcome(run, message, sizeof message);
    plugin_run_end(run);
    return st == RN_OK ? RN_OK : rn_set_error(st, "%s", message);
}

void plugin_run_start_external(plugin_run *run)
{
    pthread_mutex_lock(&run->lock);
    run->started++;
    run->start_ns = now_ns();
    pthread_mutex_unlock(&run->lock);
}

rn_status plugin_run_start_failed(plugin_run *run, rn_status st)
{
    pthread_mutex_lock(&run->lock);
    run->started--;
    pthread_mutex_unlock(&run->lock);
    plugin_run_end(run);
    return st;
}

rn_status plugin_run_start(plugin_run *run, const executors_pipeline *p, plugin_run_instances *pair)
{
    pthread_mutex_lock(&run->lock);
    run->current ^= 1;
    sched_instance *inst = pair->at[run->current];
    run->instance = inst;
    run->pipeline = p;
    run->started++;
    run->start_ns = now_ns();
    pthread_mutex_unlock(&run->lock);
    /* The other run of this request may still be finishing its completion
     * (after its callback returned): wait for it, it is not blocked on us. */
    if (sched_instance_running(inst))
        sched_instance_wait(inst);
    int rc = executors_pipeline_start(p, inst);
    if (rc == 0)
        return RN_OK;
    return plugin_run_start_failed(
        run, rc == -EAGAIN
                 ? rn_set_error(RN_REQUEST_BUSY,
                                "start_async: the stream's queue is full, try again later")
                 : rn_set_error(RN_INTERNAL, "start_async: scheduler error %d", rc));
}

void plugin_run_expect(plugin_run *run)
{
    pthread_mutex_lock(&run->lock);
    run->inline_pending = true;
    pthread_mutex_unlock(&run->lock);
}

rn_status plugin_run_await(plugin_run *run, bool pending)
{
    rn_status st = RN_OK;
    pthread_mutex_lock(&run->lock);
    if (pending) {
        while (run->inline_pending)
            pthread_cond_wait(&run->done, &run->lock);
        st = run->inline_pending_status;
    }
    run->inline_pending = false;
    pthread_mutex_unlock(&run->lock);
    return st;
}

void plugin_run_complete_node(plugin_run *run, bool is_stage, uint32_t which, rn_status status,
                              executors_pool *pool)
{
    pthread_mutex_lock(&run->lock);
    if (run->inline_pending) {
        run->inline_pending = false;
        run->inline_pending_status = status;
        pthread_cond_broadcast(&run->done);
        pthread_mutex_unlock(&run->lock);
        return;
    }
    sched_instance *inst = run->instance;
    const executors_pipeline *p = run->pipeline;
    pthread_mutex_unlock(&run->lock);
    if (status != RN_OK)
        plugin_run_record_error(run, status);
    uint32_t node = is_stage ? executors_pipeline_stage_node(p, (executors_stage)which) : which;
    /* Errors travel in the run's status; the DAG always runs on to the
     * callback stage, so the node completes with SCHED_OK. The run may
     * complete inside this call, and its owner then free the request, the
     * plan and, with the last compiled model, the executor pool while this
     * thread is still in the scheduler: hold the pool. */
    executors_retain(pool);
    sched_instance_complete_node(inst, node, SCHED_OK);
    executors_release(pool);
}

void plugin_run_finish(plugin_run *run)
{
    if (run->inline_run)
        return;
    char message[PLUGIN_RUN_ERROR];
    rn_status st = plugin_run_outcome(run, message, sizeof message);
    pthread_mutex_lock(&run->lock);
    uint64_t started = run->started;
    rn_infer_callback cb = run->callback;
    void *cb_data = run->callback_data;
    uint64_t now = now_ns();
    run->last_run_ns = now > run->start_ns ? now - run->start_ns : 1;
    pthread_mutex_unlock(&run->lock);
    plugin_run_end(run);
    if (cb != NULL) {
        if (st != RN_OK)
            rn_set_error(st, "%s", message);
        cb(run->owner, st, cb_data);
    }
    pthread_mutex_lock(&run->lock);
    if (run->completed < started) {
        run->completed = started;
        run->last_status = st;
        snprintf(run->last_error, sizeof run->last_error, "%s", message);
        atomic_store_explicit(&run->done_runs, started, memory_order_release);
    }
    run->finishing++;
    pthread_mutex_unlock(&run->lock);
    /* The broadcast after the unlock: a waiter it wakes takes the lock at
     * once. Under the lock, the woken waiter (which the kernel runs at once
     * on this thread's core, preempting it) blocked on the mutex this
     * thread still held and was woken a second time by the unlock (issue
     * 30: 1.5-1.9 wake-ups of the caller per async request). The condition
     * outlives this call: plugin_run_destroy waits for `finishing`. */
    pthread_cond_broadcast(&run->done);
    pthread_mutex_lock(&run->lock);
    /* Only for plugin_run_destroy: a waiter of the next run (which the
     * woken caller may have started already) would be woken for nothing,
     * and on a busy core it preempts this thread again. */
    if (--run->finishing == 0 && run->destroying)
        pthread_cond_broadcast(&run->done);
    pthread_mutex_unlock(&run->lock);
}

#define WAIT_SPIN_NS 30000u

/* Whether a waiter at `now` should spin before it sleeps: when the run is
 * expected to complete within the spin, as long after its start as the
 * last run took (or when no run has completed yet). */
bool plugin_run_wait_spins(uint64_t start_ns, uint64_t last_run_ns, uint64_t now)
{
    return last_run_ns == 0 || start_ns + last_run_ns <= now + WAIT_SPIN_NS;
}

/* Waits until the run started last has completed, or until `deadline_ns`
 * (0: no deadline). */
static rn_status wait_until(plugin_run *run, uint64_t deadline_ns)
{
    /* Spin a little first where the run should complete within the spin: a
     * short run completes sooner than a sleep and a wake-up take. A longer
     * one is waited for asleep at once: the spin would only keep a core
     * from the threads that run it (on the CPU device under LATENCY the
     * stream worker and its OpenMP team want every core; a caller spinning
     * 30 us beside them delayed each async request's first primitive by as
     * much, issue 30). */
    pthread_mutex_lock(&run->lock);
    uint64_t target = run->started;
    bool spin = plugin_run_wait_spins(run->start_ns, run->last_run_ns, now_ns());
    pthread_mutex_unlock(&run->lock);
    uint64_t spin_end = now_ns() + WAIT_SPIN_NS;
    if (deadline_ns != 0 && deadline_ns < spin_end)
        spin_end = deadline_ns;
    for (unsigned i = 1;
         spin && atomic_load_explicit(&run->done_runs, memory_order_acquire) < target; i++)
        if ((i & 63) == 0 && now_ns() >= spin_end)
            break;
    pthread_mutex_lock(&run->lock);
    while (run->completed < run->started) {
        if (deadline_ns == 0) {
            pthread_cond_wait(&run->done, &run->lock);
            continue;
        }
        uint64_t now = now_ns();
        if (now >= deadline_ns) {
            pthread_mutex_unlock(&run->lock);
            return rn_set_error(RN_RESULT_NOT_READY, "the infer request is still running");
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t abs_ns =
            (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (deadline_ns - now);
        ts.tv_sec = (time_t)(abs_ns / 1000000000u);
        ts.tv_nsec = (long)(abs_ns % 1000000000u);
        pthread_cond_timedwait(&run->done, &run->lock, &ts);
    }
    rn_status st = run->started == 0 ? RN_OK : run->last_status;
    char message[PLUGIN_RUN_ERROR];
    snprintf(message, sizeof message, "%s", run->last_error);
    pthread_mutex_unlock(&run->lock);
    return st == RN_OK ? RN_OK : rn_set_error(st, "%s", message);
}

rn_status plugin_run_wait(plugin_run *run)
{
    return wait_until(run, 0);
}

rn_status plugin_run_wait_for(plugin_run *run, int64_t timeout_ms)
{
    if (timeout_ms < 0)
        return rn_set_error(RN_INVALID_ARG, "wait_for: negative timeout %lld ms",
                            (long long)timeout_ms);
    return wait_until(run, now_ns() + (uint64_t)timeout_ms * 1000000u + 1);
}

bool plugin_run_cancel(plugin_run *run)
{
    if (!plugin_run_busy(run))
        return false;
    atomic_store(&run->cancel, true);
    return true;
}

rn_status plugin_run_set_callback(plugin_run *run, rn_infer_callback fn, void *user_data)
{
    rn_status st = plugin_run_check_idle(run, "set_callback");
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&run->lock);
    run->callback = fn;
    run->callback_data = user_data;
    pthread_mutex_unlock(&run->lock);
    return RN_OK;
}

/* ---- the request ops over the run (PLUGIN_RUN_FIRST) ---- */

static plugin_run *run_of(const rn_plugin_request *request)
{
    return (plugin_run *)(void *)request;
}

rn_status plugin_run_op_wait(rn_plugin_request *request)
{
    return plugin_run_wait(run_of(request));
}

rn_status plugin_run_op_wait_for(rn_plugin_request *request, int64_t timeout_ms)
{
    return plugin_run_wait_for(run_of(request), timeout_ms);
}

rn_status plugin_run_op_set_callback(rn_plugin_request *request, rn_infer_callback fn,
                                     void *user_data)
{
    return plugin_run_set_callback(run_of(request), fn, user_data);
}

bool plugin_run_op_busy(const rn_plugin_request *request)
{
    return plugin_run_busy(run_of(request));
}
