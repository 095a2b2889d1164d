/* HETERO's requests: one task DAG per request (executors/pipeline.h) with a
 * node per part, which runs the part's own request on its device, and a
 * node per tensor that crosses devices; and the trace of those nodes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/plan.h"
#include "plugins/api/run.h"
#include "plugins/hetero/hetero.h"

/* A part's node in one request: what its device's completion needs. */
typedef struct part_slot {
    struct rn_plugin_request *request;
    int part;
    uint64_t start_ns;
} part_slot;

typedef struct rn_plugin_request {
    plugin_run runs; /* first: state, error, cancel, callback, waiting (run.h) */
    hetero_compiled *c;
    rn_plugin_request **sub; /* per part, on its device */
    part_slot *slots;
    plugin_run_instances instances; /* of c->pipeline */
    bool outputs_valid, ran;
    uint64_t id, run;
    rn_profiling_info *profile;
    size_t n_profile;
    char **profile_strings;
    size_t n_profile_strings;
} hetero_request;

PLUGIN_RUN_FIRST(hetero_request, runs);

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
}

static const rn_request_ops *sub_ops(const hetero_request *r, int p)
{
    return r->c->split.parts[p].ops->request_ops;
}

static bool skipping(hetero_request *r)
{
    return plugin_run_stopping(&r->runs);
}

/* ---- trace ---- */

void hetero_trace_event(hetero_compiled *c, const char *name, int lane, uint64_t request,
                        uint64_t run, uint64_t start_ns, uint64_t end_ns)
{
    if (!c->trace)
        return;
    pthread_mutex_lock(&c->lock);
    if (c->n_events == c->cap_events) {
        size_t cap = c->cap_events ? c->cap_events * 2 : 256;
        hetero_event *e = realloc(c->events, cap * sizeof *e);
        if (e == NULL) {
            pthread_mutex_unlock(&c->lock);
            return; /* a trace is best effort */
        }
        c->events = e;
        c->cap_events = cap;
    }
    c->events[c->n_events++] = (hetero_event){name, lane, request, run, start_ns, end_ns};
    pthread_mutex_unlock(&c->lock);
}

rn_status hetero_write_trace(hetero_compiled *c, const char *path)
{
    if (!c->trace)
        return rn_set_error(RN_INVALID_ARG, "HETERO: tracing is off: compile with "
                                            "ENABLE_TRACE=YES to write a trace");
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return rn_set_error(RN_NOT_FOUND, "HETERO: cannot write the trace to '%s': %s", path,
                            strerror(errno));
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    for (int d = 0; d <= c->devs.n; d++)
        fprintf(f,
                "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"name\":\"%s%s\"}}",
                d ? "," : "", d, d < c->devs.n ? "device " : "HETERO transfers",
                d < c->devs.n ? c->devs.at[d].name : "");
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_events; i++) {
        const hetero_event *e = &c->events[i];
        fprintf(f,
                ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%llu,"
                "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"request\":%llu,\"run\":%llu}}",
                e->name, e->lane < c->devs.n ? "part" : "transfer", e->lane,
                (unsigned long long)e->request,
                e->start_ns >= c->t0_ns ? (double)(e->start_ns - c->t0_ns) / 1000.0 : 0.0,
                (double)(e->end_ns - e->start_ns) / 1000.0, (unsigned long long)e->request,
                (unsigned long long)e->run);
    }
    pthread_mutex_unlock(&c->lock);
    fputs("\n]}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return rn_set_error(RN_INTERNAL, "HETERO: writing the trace to '%s' failed", path);
    return RN_OK;
}

/* ---- the DAG's tasks ---- */

static int task_preprocess(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return SCHED_OK;
}

/* A part's device finished its request: release the part's node. */
static void part_done(rn_infer_request *owner, rn_status st, void *data)
{
    (void)owner;
    part_slot *slot = data;
    hetero_request *r = slot->request;
    hetero_compiled *c = r->c;
    int device = c->split.parts[slot->part].device;
    if (st != RN_OK)
        rn_wrap_error(st, "HETERO: part %d on %s: ", slot->part, c->devs.at[device].name);
    hetero_trace_event(c, c->part_names[slot->part], device, r->id, r->run, slot->start_ns,
                       hetero_now_ns());
    plugin_run_complete_node(&r->runs, false, (uint32_t)slot->part, st, c->pool);
}

static int task_part(const sched_task_ctx *ctx, void *arg)
{
    hetero_request *r = ctx->user_arg;
    int p = (int)(intptr_t)arg;
    if (skipping(r))
        return SCHED_OK;
    part_slot *slot = &r->slots[p];
    slot->start_ns = hetero_now_ns();
    const rn_request_ops *ops = sub_ops(r, p);
    if (r->runs.inline_run || ops->start_async == NULL) {
        rn_status st = ops->infer(r->sub[p]);
        int device = r->c->split.parts[p].device;
        if (st != RN_OK) {
            rn_wrap_error(st, "HETERO: part %d on %s: ", p, r->c->devs.at[device].name);
            plugin_run_record_error(&r->runs, st);
        }
        hetero_trace_event(r->c, r->c->part_names[p], device, r->id, r->run, slot->start_ns,
                           hetero_now_ns());
        return SCHED_OK;
    }
    rn_status st = ops->start_async(r->sub[p]);
    if (st != RN_OK) {
        plugin_run_record_error(&r->runs, st);
        return SCHED_OK;
    }
    return SCHED_PENDING;
}

/* Hands the producer's output (in host memory: the producer's pipeline
 * downloaded it) to the consumer as an input (its pipeline uploads it). */
static int task_transfer(const sched_task_ctx *ctx, void *arg)
{
    hetero_request *r = ctx->user_arg;
    const hetero_transfer *t = &r->c->transfers[(intptr_t)arg];
    if (skipping(r))
        return SCHED_OK;
    uint64_t start = hetero_now_ns();
    rn_kernel_tensor value;
    rn_status st =
        sub_ops(r, t->from_part)->get_output(r->sub[t->from_part], (size_t)t->from_output, &value);
    if (st == RN_OK)
        st = sub_ops(r, t->to_part)->set_input(r->sub[t->to_part], (size_t)t->to_input, &value);
    if (st != RN_OK)
        plugin_run_record_error(&r->runs, rn_wrap_error(st, "HETERO: %s: ", t->name));
    hetero_trace_event(r->c, t->name, r->c->devs.n, r->id, r->run, start, hetero_now_ns());
    return SCHED_OK;
}

static int task_postprocess(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    hetero_request *r = ctx->user_arg;
    r->outputs_valid = !skipping(r);
    return SCHED_OK;
}

/* Publishes the status, calls the user's callback (which may start the
 * request again), then releases waiters. Inline runs call no callback. */
static int task_callback(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    hetero_request *r = ctx->user_arg;
    plugin_run_finish(&r->runs);
    return SCHED_OK;
}

rn_status hetero_pipeline_build(hetero_compiled *c)
{
    int n_parts = c->split.n_parts, n = 0;
    for (int p = 0; p < n_parts; p++)
        for (int k = 0; k < c->split.parts[p].n_inputs; k++)
            n += c->split.parts[p].inputs[k].part >= 0;
    c->transfers = calloc((size_t)n + 1, sizeof *c->transfers);
    c->part_names = calloc((size_t)n_parts + 1, sizeof *c->part_names);
    if (c->transfers == NULL || c->part_names == NULL)
        return oom();
    for (int p = 0; p < n_parts; p++)
        snprintf(c->part_names[p], sizeof c->part_names[p], "part%d on %s", p,
                 c->devs.at[c->split.parts[p].device].name);
    for (int p = 0; p < n_parts; p++) {
        const hetero_part *part = &c->split.parts[p];
        for (int k = 0; k < part->n_inputs; k++) {
            hetero_source src = part->inputs[k];
            if (src.part < 0)
                continue;
            hetero_transfer *t = &c->transfers[c->n_transfers++];
            *t = (hetero_transfer){src.part, src.index, p, k, ""};
            snprintf(t->name, sizeof t->name, "transfer %s: %s->%s", part->io->inputs[k]->name,
                     c->devs.at[c->split.parts[src.part].device].name,
                     c->devs.at[part->device].name);
        }
    }
    /* HETERO's own tasks (preprocess, starting parts, transfers) run on the
     * process's host workers, with the stream configuration its parts' plans
     * get from the same properties: the pool they run on (plugins/api/
     * plan.c), not a pool of its own whose worker would be busy beside them
     * (more busy threads than cores; tests/runtime:test_workers). */
    uint32_t streams = 1, threads = 1, optimal = 1;
    plugin_properties_streams(&c->s.props, executors_cpu_count(), &streams, &threads, &optimal);
    executors_config cfg = {
        .name = PLUGIN_HOST_WORKERS, .n_streams = streams, .threads_per_stream = threads};
    rn_status st = executors_acquire(&cfg, &c->pool);
    executors_pipeline_builder *b = NULL;
    if (st == RN_OK)
        st = executors_pipeline_builder_create(c->pool, &b);
    if (st == RN_OK)
        st = executors_pipeline_add_stage(b, EXECUTORS_STAGE_PREPROCESS, EXECUTORS_ON_STREAM,
                                          task_preprocess, NULL);
    /* Tasks 0 .. n_parts-1 are the parts, then the transfers. */
    for (int p = 0; p < n_parts && st == RN_OK; p++)
        st = executors_pipeline_add_task(b, c->part_names[p], task_part, (void *)(intptr_t)p, NULL);
    for (int t = 0; t < c->n_transfers && st == RN_OK; t++) {
        uint32_t id;
        st = executors_pipeline_add_task(b, c->transfers[t].name, task_transfer,
                                         (void *)(intptr_t)t, &id);
        if (st == RN_OK)
            st = executors_pipeline_add_edge(b, (uint32_t)c->transfers[t].from_part, id);
        if (st == RN_OK)
            st = executors_pipeline_add_edge(b, id, (uint32_t)c->transfers[t].to_part);
    }
    if (st == RN_OK)
        st = executors_pipeline_add_stage(b, EXECUTORS_STAGE_POSTPROCESS, EXECUTORS_ON_STREAM,
                                          task_postprocess, NULL);
    if (st == RN_OK)
        st = executors_pipeline_add_stage(b, EXECUTORS_STAGE_CALLBACK, EXECUTORS_ON_CALLBACK,
                                          task_callback, NULL);
    if (st == RN_OK)
        st = executors_pipeline_build(b, &c->pipeline);
    executors_pipeline_builder_free(b);
    if (st == RN_OK)
        c->n_stages = executors_pipeline_describe(c->pipeline, c->stages,
                                                  sizeof c->stages / sizeof c->stages[0]);
    return st;
}

/* ---- the request ---- */

static void request_free(hetero_request *r);

rn_status hetero_request_create(hetero_compiled *c, rn_infer_request *owner,
                                rn_plugin_request **out)
{
    int n = c->split.n_parts;
    hetero_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return oom();
    r->c = c;
    plugin_run_init(&r->runs, owner);
    r->id = atomic_fetch_add(&c->next_request, 1);
    r->sub = calloc((size_t)n, sizeof *r->sub);
    r->slots = calloc((size_t)n, sizeof *r->slots);
    rn_status st = r->sub != NULL && r->slots != NULL ? RN_OK : oom();
    for (int p = 0; p < n && st == RN_OK; p++) {
        const hetero_part *part = &c->split.parts[p];
        r->slots[p] = (part_slot){r, p, 0};
        st = part->ops->create_request(part->compiled, owner, &r->sub[p]);
        if (st != RN_OK) {
            r->sub[p] = NULL;
            break;
        }
        if (part->ops->request_ops->set_callback != NULL)
            st = part->ops->request_ops->set_callback(r->sub[p], part_done, &r->slots[p]);
    }
    if (st == RN_OK)
        st = plugin_run_instances_create(c->pipeline, r, &r->instances);
    if (st != RN_OK) {
        request_free(r);
        return st;
    }
    *out = r;
    return RN_OK;
}

static void request_free(hetero_request *r)
{
    if (r == NULL)
        return;
    plugin_run_destroy(&r->runs); /* waits for a run in flight */
    plugin_run_instances_free(&r->instances);
    for (int p = 0; r->sub != NULL && p < r->c->split.n_parts; p++)
        if (r->sub[p] != NULL)
            sub_ops(r, p)->free(r->sub[p]);
    free(r->sub);
    free(r->slots);
    free(r->profile);
    for (size_t i = 0; i < r->n_profile_strings; i++)
        free(r->profile_strings[i]);
    free(r->profile_strings);
    free(r);
}

static rn_status request_set_input(hetero_request *r, size_t index, const rn_kernel_tensor *t)
{
    rn_status busy = plugin_run_check_idle(&r->runs, "set_input");
    if (busy != RN_OK)
        return busy;
    if (index >= (size_t)r->c->io->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%d inputs)", index,
                            r->c->io->n_inputs);
    for (int p = 0; p < r->c->split.n_parts; p++) {
        const hetero_part *part = &r->c->split.parts[p];
        for (int k = 0; k < part->n_inputs; k++)
            if (part->inputs[k].part < 0 && part->inputs[k].index == (int)index) {
                rn_status st = sub_ops(r, p)->set_input(r->sub[p], (size_t)k, t);
                if (st != RN_OK)
                    return st;
            }
    }
    return RN_OK;
}

static rn_status request_set_output(hetero_request *r, size_t index, const rn_kernel_tensor *t)
{
    rn_status busy = plugin_run_check_idle(&r->runs, "set_output");
    if (busy != RN_OK)
        return busy;
    if (index >= (size_t)r->c->split.n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            r->c->split.n_outputs);
    hetero_source src = r->c->split.outputs[index];
    const rn_request_ops *ops = sub_ops(r, src.part);
    if (ops->set_output == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "HETERO: %s cannot write outputs in place",
                            r->c->devs.at[r->c->split.parts[src.part].device].name);
    return ops->set_output(r->sub[src.part], (size_t)src.index, t);
}

static rn_status begin_run(hetero_request *r, const char *what)
{
    rn_status st = plugin_run_begin(&r->runs, what);
    if (st != RN_OK)
        return st;
    r->outputs_valid = false;
    r->ran = true;
    r->run++;
    return RN_OK;
}

static rn_status request_infer(hetero_request *r)
{
    rn_status st = begin_run(r, "infer");
    return st != RN_OK ? st : plugin_run_inline(&r->runs, r->c->pipeline, r);
}

static rn_status request_start_async(hetero_request *r)
{
    rn_status st = begin_run(r, "start_async");
    return st != RN_OK ? st : plugin_run_start(&r->runs, r->c->pipeline, &r->instances);
}

static rn_status request_cancel(hetero_request *r)
{
    if (!plugin_run_cancel(&r->runs))
        return RN_OK;
    for (int p = 0; p < r->c->split.n_parts; p++)
        if (sub_ops(r, p)->cancel != NULL)
            sub_ops(r, p)->cancel(r->sub[p]);
    return RN_OK;
}

static rn_status request_get_output(hetero_request *r, size_t index, rn_kernel_tensor *out)
{
    rn_status busy = plugin_run_check_idle(&r->runs, "get_output");
    if (busy != RN_OK)
        return busy;
    if (index >= (size_t)r->c->split.n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            r->c->split.n_outputs);
    if (!r->outputs_valid)
        return rn_set_error(RN_INFER_NOT_STARTED,
                            !r->ran ? "output '%s' has no value before infer"
                                    : "output '%s' has no value: the last run did not complete",
                            r->c->io->outputs[index]->name);
    hetero_source src = r->c->split.outputs[index];
    return sub_ops(r, src.part)->get_output(r->sub[src.part], (size_t)src.index, out);
}

/* Profiling: every part's entries in part order, each exec_type naming the
 * device that ran it ("SLOWDEV:ref"). */
static rn_status request_profiling(hetero_request *r, const rn_profiling_info **info, size_t *count)
{
    rn_status busy = plugin_run_check_idle(&r->runs, "profiling");
    if (busy != RN_OK)
        return busy;
    free(r->profile);
    r->profile = NULL;
    r->n_profile = 0;
    for (size_t i = 0; i < r->n_profile_strings; i++)
        free(r->profile_strings[i]);
    free(r->profile_strings);
    r->profile_strings = NULL;
    r->n_profile_strings = 0;
    for (int p = 0; p < r->c->split.n_parts; p++) {
        const rn_profiling_info *sub;
        size_t n;
        rn_status st = sub_ops(r, p)->profiling(r->sub[p], &sub, &n);
        if (st != RN_OK)
            return st;
        rn_profiling_info *grown = realloc(r->profile, (r->n_profile + n + 1) * sizeof *grown);
        char **strings =
            realloc(r->profile_strings, (r->n_profile_strings + n + 1) * sizeof *strings);
        if (grown != NULL)
            r->profile = grown;
        if (strings != NULL)
            r->profile_strings = strings;
        if (grown == NULL || strings == NULL)
            return oom();
        const char *dev = r->c->devs.at[r->c->split.parts[p].device].name;
        for (size_t k = 0; k < n; k++) {
            rn_profiling_info e = sub[k];
            size_t len = strlen(dev) + strlen(sub[k].exec_type) + 2;
            char *exec = malloc(len);
            if (exec == NULL)
                return oom();
            snprintf(exec, len, "%s:%s", dev, sub[k].exec_type);
            r->profile_strings[r->n_profile_strings++] = exec;
            e.exec_type = exec;
            r->profile[r->n_profile++] = e;
        }
    }
    *info = r->profile;
    *count = r->n_profile;
    return RN_OK;
}

const rn_request_ops hetero_request_ops = {
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
