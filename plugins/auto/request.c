/* AUTO's requests: a request runs on the device AUTO picks for the run (or,
 * with CUMULATIVE_THROUGHPUT, the one with the most of its optimal number
 * of runs free when the run starts), through that device's own request; a
 * failed run is retried on the next device (ENABLE_RUNTIME_FALLBACK), in
 * one place (run_from) for sync runs, async starts and async completions.
 * Its run object (plugins/api/run.h) has no pipeline of its own: a run is
 * its device request's run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/run.h"
#include "plugins/auto/auto.h"

typedef struct rn_plugin_request {
    plugin_run run; /* first: state, error, cancel, callback, waiting (run.h) */
    auto_compiled *c;
    rn_plugin_request *sub[PLUGIN_MAX_DEVICES]; /* per target, made on first use */
    int n_inputs, n_outputs;
    rn_kernel_tensor *inputs, *outputs; /* the bindings, to repeat on any device */
    bool *has_input, *has_output;
    int dispatched;    /* CUMULATIVE_THROUGHPUT: the target the run counts on, or -1 */
    atomic_int target; /* of the run in progress, then of the last run (-1: none) */
    uint32_t tried;    /* the targets the run in progress has tried */
} auto_request;

PLUGIN_RUN_FIRST(auto_request, run);

static const rn_request_ops *ops_of(const auto_request *r, int t)
{
    return r->c->targets[t].ops->request_ops;
}

static void auto_done(rn_infer_request *owner, rn_status st, void *data);

/* The request of target t with the bindings of r. */
static rn_status prepare(auto_request *r, int t)
{
    const auto_target *target = &r->c->targets[t];
    rn_status st = RN_OK;
    if (r->sub[t] == NULL) {
        if ((st = target->ops->create_request(target->compiled, r->run.owner, &r->sub[t])) !=
            RN_OK) {
            r->sub[t] = NULL;
            return st;
        }
        if (ops_of(r, t)->set_callback != NULL &&
            (st = ops_of(r, t)->set_callback(r->sub[t], auto_done, r)) != RN_OK)
            return st;
    }
    for (int i = 0; i < r->n_inputs && st == RN_OK; i++)
        if (r->has_input[i])
            st = ops_of(r, t)->set_input(r->sub[t], (size_t)i, &r->inputs[i]);
    for (int o = 0; o < r->n_outputs && st == RN_OK; o++)
        if (r->has_output[o] && ops_of(r, t)->set_output != NULL)
            st = ops_of(r, t)->set_output(r->sub[t], (size_t)o, &r->outputs[o]);
    return st;
}

/* The target runs go to and the one a failed run moves to: beside the
 * runs that ask (the request walk names this file), over the targets'
 * states that plugin.c's compiles set. */
int auto_current_target(auto_compiled *c)
{
    if (atomic_load(&c->targets[c->chosen].state) == TARGET_READY || c->startup < 0)
        return c->chosen;
    return c->startup;
}

int auto_next_target(auto_compiled *c, int t, uint32_t tried)
{
    for (int k = 1; k < c->devs.n; k++) {
        int next = (t + k) % c->devs.n;
        int state = atomic_load(&c->targets[next].state);
        if (state == TARGET_COMPILING || state == TARGET_FAILED || (tried & (1u << next)))
            continue;
        if (auto_target_compile(c, next) == RN_OK)
            return next;
    }
    return -1;
}

/* Where a run goes: with CUMULATIVE_THROUGHPUT, the ready device with the
 * most of its optimal number of runs free (the run counts there until it
 * ends), else the device AUTO runs requests on now. */
static int pick(auto_request *r)
{
    auto_compiled *c = r->c;
    r->dispatched = -1;
    if (!c->cumulative)
        return auto_current_target(c);
    long best_free = 0;
    for (int t = 0; t < c->devs.n; t++) {
        if (atomic_load(&c->targets[t].state) != TARGET_READY)
            continue;
        long free_slots = (long)c->targets[t].optimal - (long)atomic_load(&c->targets[t].running);
        if (r->dispatched < 0 || free_slots > best_free)
            r->dispatched = t, best_free = free_slots;
    }
    atomic_fetch_add(&c->targets[r->dispatched].running, 1);
    return r->dispatched;
}

/* The run ended: it no longer counts on its device. */
static void release(auto_request *r)
{
    if (r->dispatched >= 0)
        atomic_fetch_sub(&r->c->targets[r->dispatched].running, 1);
    r->dispatched = -1;
}

/* Whether a failure is the device's (not the input's nor a cancel) and may
 * be retried on another device. */
static bool may_retry(const auto_request *r, rn_status st)
{
    bool device = st == RN_DEVICE_ERROR || st == RN_INTERNAL || st == RN_OUT_OF_MEMORY ||
                  st == RN_UNSUPPORTED || st == RN_NOT_IMPLEMENTED || st == RN_IO_ERROR;
    return device && r->c->cfg.runtime_fallback && !atomic_load(&r->run.cancel);
}

/* Runs the run on target t (sync: the device's infer; async: its
 * start_async, which completes in auto_done) and, while that fails in a way
 * another device may fix, on the next device not tried yet. `failed`: the
 * run already failed on t with that status (an async completion). The one
 * place a run moves to another device. Returns RN_OK when the run is done
 * (sync) or started (async), else the last failure (its message the
 * thread's last error). */
static rn_status run_from(auto_request *r, int t, rn_status failed, bool sync)
{
    for (rn_status st = failed;;) {
        if (st != RN_OK) {
            r->tried |= 1u << t;
            if (!may_retry(r, st) || (t = auto_next_target(r->c, t, r->tried)) < 0)
                return st;
        }
        st = prepare(r, t);
        atomic_store(&r->target, t); /* before the device may complete */
        if (st == RN_OK)
            st = sync ? ops_of(r, t)->infer(r->sub[t]) : ops_of(r, t)->start_async(r->sub[t]);
        if (st == RN_OK)
            return RN_OK;
    }
}

/* A device finished the run: on to the next device when it failed, else
 * the run ends. */
static void auto_done(rn_infer_request *owner, rn_status st, void *data)
{
    (void)owner;
    auto_request *r = data;
    if (st != RN_OK && (st = run_from(r, atomic_load(&r->target), st, false)) == RN_OK)
        return;
    if (st != RN_OK)
        plugin_run_record_error(&r->run, st);
    release(r);
    plugin_run_finish(&r->run);
}

static void request_free(auto_request *r);

rn_status auto_request_create(auto_compiled *c, rn_infer_request *owner, rn_plugin_request **out)
{
    auto_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "AUTO: out of memory");
    r->c = c;
    atomic_init(&r->target, -1);
    r->dispatched = -1;
    plugin_run_init(&r->run, owner);
    r->n_inputs = c->model->n_inputs;
    r->n_outputs = c->model->n_outputs;
    r->inputs = calloc((size_t)r->n_inputs + 1, sizeof *r->inputs);
    r->outputs = calloc((size_t)r->n_outputs + 1, sizeof *r->outputs);
    r->has_input = calloc((size_t)r->n_inputs + 1, sizeof *r->has_input);
    r->has_output = calloc((size_t)r->n_outputs + 1, sizeof *r->has_output);
    if (r->inputs == NULL || r->outputs == NULL || r->has_input == NULL || r->has_output == NULL) {
        request_free(r);
        return rn_set_error(RN_OUT_OF_MEMORY, "AUTO: out of memory");
    }
    *out = r;
    return RN_OK;
}

static void request_free(auto_request *r)
{
    if (r == NULL)
        return;
    plugin_run_destroy(&r->run); /* waits for a run in flight */
    for (int t = 0; t < PLUGIN_MAX_DEVICES; t++)
        if (r->sub[t] != NULL)
            ops_of(r, t)->free(r->sub[t]);
    free(r->inputs);
    free(r->outputs);
    free(r->has_input);
    free(r->has_output);
    free(r);
}

static rn_status request_set_input(auto_request *r, size_t index, const rn_kernel_tensor *t)
{
    rn_status st = plugin_run_check_idle(&r->run, "set_input");
    if (st != RN_OK)
        return st;
    if (index >= (size_t)r->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%d inputs)", index,
                            r->n_inputs);
    r->inputs[index] = *t;
    r->has_input[index] = true;
    return RN_OK;
}

static rn_status request_set_output(auto_request *r, size_t index, const rn_kernel_tensor *t)
{
    rn_status st = plugin_run_check_idle(&r->run, "set_output");
    if (st != RN_OK)
        return st;
    if (index >= (size_t)r->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            r->n_outputs);
    r->outputs[index] = *t;
    r->has_output[index] = true;
    return RN_OK;
}

static rn_status request_infer(auto_request *r)
{
    rn_status st = plugin_run_begin(&r->run, "infer");
    if (st != RN_OK)
        return st;
    r->tried = 0;
    st = run_from(r, pick(r), RN_OK, true);
    release(r);
    plugin_run_end(&r->run);
    return st;
}

static rn_status request_start_async(auto_request *r)
{
    rn_status st = plugin_run_begin(&r->run, "start_async");
    if (st != RN_OK)
        return st;
    r->tried = 0;
    plugin_run_start_external(&r->run);
    if ((st = run_from(r, pick(r), RN_OK, false)) != RN_OK) {
        release(r);
        plugin_run_start_failed(&r->run, st);
    }
    return st;
}

static rn_status request_cancel(auto_request *r)
{
    if (!plugin_run_cancel(&r->run))
        return RN_OK;
    int t = atomic_load(&r->target);
    if (t >= 0 && r->sub[t] != NULL && ops_of(r, t)->cancel != NULL)
        return ops_of(r, t)->cancel(r->sub[t]);
    return RN_OK;
}

/* The last run's device request, or an error. */
static rn_status last_run(auto_request *r, const char *what)
{
    rn_status st = plugin_run_check_idle(&r->run, what);
    if (st != RN_OK)
        return st;
    int t = atomic_load(&r->target);
    if (t < 0 || r->sub[t] == NULL)
        return rn_set_error(RN_INFER_NOT_STARTED, "%s: the request has not run", what);
    return RN_OK;
}

static rn_status request_get_output(auto_request *r, size_t index, rn_kernel_tensor *out)
{
    rn_status st = last_run(r, "get_output");
    if (st == RN_INFER_NOT_STARTED && index < (size_t)r->n_outputs)
        return rn_set_error(RN_INFER_NOT_STARTED, "output '%s' has no value before infer",
                            r->c->model->outputs[index]->name);
    if (st != RN_OK)
        return st;
    return ops_of(r, r->target)->get_output(r->sub[r->target], index, out);
}

static rn_status request_profiling(auto_request *r, const rn_profiling_info **info, size_t *count)
{
    rn_status st = last_run(r, "profiling");
    if (st != RN_OK)
        return st;
    return ops_of(r, r->target)->profiling(r->sub[r->target], info, count);
}

const rn_request_ops auto_request_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .set_input = request_set_input,
    .set_output = request_set_output,
    .infer = request_infer,
    .get_output = request_get_output,
    .profiling = request_profiling,
    .start_async = request_start_async,
    .wait = plugin_run_op_wait,
    .wait_for = plugin_run_op_wait_for,
    .cancel = request_cancel,
    .set_callback = plugin_run_op_set_callback,
    .busy = plugin_run_op_busy,
    .free = request_free,
};
