/* The life of a request that runs on other requests (HETERO's, AUTO's):
 * idle or running, the runs started and completed, the last run's status and
 * message, the user's callback, and waiting for a run, with the same rules as
 * the generic request (REQUEST_BUSY while running, the callback called with
 * the request's owner before waiters are released, wait_for's
 * RESULT_NOT_READY). */
#ifndef RUNNEL_PLUGINS_API_RUN_STATE_H
#define RUNNEL_PLUGINS_API_RUN_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runnel/infer_request.h"

typedef struct plugin_run_state {
    atomic_int running;
    pthread_mutex_t lock;
    pthread_cond_t done;
    uint64_t started, completed; /* async runs (under lock) */
    rn_status last_status;
    char last_error[512];
    rn_infer_callback callback;
    void *callback_data;
} plugin_run_state;

void plugin_run_state_init(plugin_run_state *s);
void plugin_run_state_destroy(plugin_run_state *s);

/* RN_REQUEST_BUSY naming `what` while a run is in flight. */
rn_status plugin_run_check_idle(plugin_run_state *s, const char *what);

/* Marks a run begun (RN_REQUEST_BUSY naming `what` when one is in flight);
 * an async run also counts itself started (async). */
rn_status plugin_run_begin(plugin_run_state *s, const char *what, bool async);

/* Ends a sync run, or an async run that could not start (which then does
 * not count). */
void plugin_run_abort(plugin_run_state *s, bool async);

/* Ends an async run: idle, the user's callback with (owner, st) and
 * `message` as the thread's last error, then the status published and the
 * waiters released. */
void plugin_run_finish(plugin_run_state *s, rn_infer_request *owner, rn_status st,
                       const char *message);

/* Waits for the run started last and returns its status with its message;
 * wait_for at most timeout_ms (negative: RN_INVALID_ARG). */
rn_status plugin_run_wait(plugin_run_state *s);
rn_status plugin_run_wait_for(plugin_run_state *s, int64_t timeout_ms);

rn_status plugin_run_set_callback(plugin_run_state *s, rn_infer_callback fn, void *user_data);
bool plugin_run_busy(const plugin_run_state *s);

#endif /* RUNNEL_PLUGINS_API_RUN_STATE_H */
