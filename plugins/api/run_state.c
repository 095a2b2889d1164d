/* The life of a request that runs on other requests (see run_state.h). */
#include <stdio.h>
#include <time.h>

#include "plugins/api/run_state.h"

void plugin_run_state_init(plugin_run_state *s)
{
    atomic_init(&s->running, 0);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->done, NULL);
}

void plugin_run_state_destroy(plugin_run_state *s)
{
    pthread_cond_destroy(&s->done);
    pthread_mutex_destroy(&s->lock);
}

rn_status plugin_run_check_idle(plugin_run_state *s, const char *what)
{
    if (atomic_load(&s->running))
        return rn_set_error(RN_REQUEST_BUSY, "%s: the infer request is running", what);
    return RN_OK;
}

rn_status plugin_run_begin(plugin_run_state *s, const char *what, bool async)
{
    int idle = 0;
    if (!atomic_compare_exchange_strong(&s->running, &idle, 1))
        return rn_set_error(RN_REQUEST_BUSY, "%s: the infer request is running", what);
    if (async) {
        pthread_mutex_lock(&s->lock);
        s->started++;
        pthread_mutex_unlock(&s->lock);
    }
    return RN_OK;
}

void plugin_run_abort(plugin_run_state *s, bool async)
{
    if (async) {
        pthread_mutex_lock(&s->lock);
        s->started--;
        pthread_mutex_unlock(&s->lock);
    }
    atomic_store(&s->running, 0);
}

void plugin_run_finish(plugin_run_state *s, rn_infer_request *owner, rn_status st,
                       const char *message)
{
    pthread_mutex_lock(&s->lock);
    uint64_t run = s->started;
    rn_infer_callback cb = s->callback;
    void *cb_data = s->callback_data;
    pthread_mutex_unlock(&s->lock);
    atomic_store(&s->running, 0);
    if (cb != NULL) {
        if (st != RN_OK)
            rn_set_error(st, "%s", message);
        cb(owner, st, cb_data);
    }
    pthread_mutex_lock(&s->lock);
    if (s->completed < run) {
        s->completed = run;
        s->last_status = st;
        snprintf(s->last_error, sizeof s->last_error, "%s", st == RN_OK ? "" : message);
    }
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->lock);
}

/* Waits until the run started last completed or until timeout_ms passed
 * (negative: no limit). */
static rn_status wait_run(plugin_run_state *s, int64_t timeout_ms)
{
    struct timespec deadline;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L)
            deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->lock);
    while (s->completed < s->started) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&s->done, &s->lock);
        } else if (pthread_cond_timedwait(&s->done, &s->lock, &deadline) != 0 &&
                   s->completed < s->started) {
            pthread_mutex_unlock(&s->lock);
            return rn_set_error(RN_RESULT_NOT_READY, "the infer request is still running");
        }
    }
    rn_status st = s->started == 0 ? RN_OK : s->last_status;
    char message[sizeof s->last_error];
    snprintf(message, sizeof message, "%s", s->last_error);
    pthread_mutex_unlock(&s->lock);
    return st == RN_OK ? RN_OK : rn_set_error(st, "%s", message);
}

rn_status plugin_run_wait(plugin_run_state *s)
{
    return wait_run(s, -1);
}

rn_status plugin_run_wait_for(plugin_run_state *s, int64_t timeout_ms)
{
    if (timeout_ms < 0)
        return rn_set_error(RN_INVALID_ARG, "wait_for: negative timeout %lld ms",
                            (long long)timeout_ms);
    return wait_run(s, timeout_ms);
}

rn_status plugin_run_set_callback(plugin_run_state *s, rn_infer_callback fn, void *user_data)
{
    rn_status st = plugin_run_check_idle(s, "set_callback");
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&s->lock);
    s->callback = fn;
    s->callback_data = user_data;
    pthread_mutex_unlock(&s->lock);
    return RN_OK;
}

bool plugin_run_busy(const plugin_run_state *s)
{
    return atomic_load(&((plugin_run_state *)s)->running) != 0;
}
