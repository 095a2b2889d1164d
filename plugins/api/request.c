/* The generic infer request: sync runs in the caller's thread, async runs as
 * an instance of the plan's task DAG on its executor pool. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/log.h"
#include "plugins/api/plan_internal.h"
#include "plugins/api/remote.h"

static const max_align_t empty_tensor_data;

/* ---- value slots ---- */

static void slot_clear(value_slot *s)
{
    if (s->owned)
        graph_tensor_release(&s->t); /* data, strings, a sequence's items */
    s->t.data = NULL;
    s->t.items = NULL;
    s->t.n_items = 0;
    s->owned = false;
    s->has_value = false;
}

/* Frees every value a node produces (intermediates and results), keeping
 * parameters and constants. */
static void clear_produced(plugin_request *r)
{
    const graph *g = r->plan->g;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v]->producer != NULL)
            slot_clear(&r->slots[v]);
}

/* ---- create / free / bind ---- */

void plugin_request_free(plugin_request *r)
{
    if (r == NULL)
        return;
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        plugin_request_wait(r);
    for (int i = 0; i < 2; i++)
        sched_instance_free(r->instances[i]); /* waits for a completion in progress */
    if (r->slots != NULL)
        for (int v = 0; v < r->plan->g->n_values; v++)
            slot_clear(&r->slots[v]);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->done);
    free(r->slots);
    free(r->remaining);
    free(r->user_out);
    free(r->remote_in);
    free(r->remote_out);
    free(r->profile);
    free(r->io);
    free(r->ports);
    free(r);
}

rn_status plugin_request_create(const plugin_plan *plan, plugin_request **out)
{
    const graph *g = plan->g;
    plugin_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
    r->plan = plan;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->done, NULL);
    r->slots = calloc((size_t)g->n_values + 1, sizeof *r->slots);
    r->remaining = calloc((size_t)g->n_values + 1, sizeof *r->remaining);
    r->user_out = calloc((size_t)g->n_outputs + 1, sizeof *r->user_out);
    r->remote_in = calloc((size_t)g->n_inputs + 1, sizeof *r->remote_in);
    r->remote_out = calloc((size_t)g->n_outputs + 1, sizeof *r->remote_out);
    r->profile = calloc((size_t)g->n_nodes + PLUGIN_STAGES, sizeof *r->profile);
    r->io = calloc((size_t)plan->io_total + 1, sizeof *r->io);
    r->ports = calloc((size_t)plan->io_total + 1, sizeof *r->ports);
    bool ok = r->slots && r->remaining && r->user_out && r->remote_in && r->remote_out &&
              r->profile && r->io && r->ports;
    for (int i = 0; ok && !plan->nested && i < 2; i++)
        ok = sched_instance_create(plan->dag, r, &r->instances[i]) == 0;
    if (!ok) {
        plugin_request_free(r);
        return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
    }
    memcpy(r->profile, plan->profile_template,
           ((size_t)g->n_nodes + PLUGIN_STAGES) * sizeof *r->profile);
    /* Constants are views of the plan's graph. */
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v]->constant != NULL) {
            r->slots[v].t = *g->values[v]->constant;
            r->slots[v].has_value = true;
        }
    *out = r;
    return RN_OK;
}

static rn_status busy_error(const char *what)
{
    return rn_set_error(RN_REQUEST_BUSY, "%s: the infer request is running", what);
}

/* Checks a value bound to v (an input or a capture): its kind must be one
 * v's declaration accepts (a value of unknown kind in a nested plan takes
 * any), a sequence's items must be tensors of its element type, and a
 * string tensor must have every string set. */
static rn_status check_value(const plugin_request *r, const graph_value *v, const graph_tensor *t,
                             const char *what)
{
    bool kind_ok =
        graph_kind_accepts(v->kind, t->kind) || (r->plan->nested && v->kind == GRAPH_KIND_TENSOR);
    if (!kind_ok)
        return rn_set_error(RN_TYPE_MISMATCH, "%s '%s': expected a %s, got a %s", what, v->name,
                            graph_kind_name(v->kind), graph_kind_name(t->kind));
    if (t->kind == GRAPH_KIND_SEQUENCE) {
        if (t->n_items > 0 && t->items == NULL)
            return rn_set_error(RN_INVALID_ARG, "%s '%s': a sequence of %zu items has none", what,
                                v->name, t->n_items);
        for (size_t i = 0; i < t->n_items; i++) {
            const graph_tensor *it = &t->items[i];
            if (it->kind != GRAPH_KIND_TENSOR || it->type != t->type)
                return rn_set_error(RN_TYPE_MISMATCH,
                                    "%s '%s': sequence item %zu is a %s %s, expected a %s tensor",
                                    what, v->name, i, rn_element_type_name(it->type),
                                    graph_kind_name(it->kind), rn_element_type_name(t->type));
            if (it->data == NULL && it->nbytes != 0)
                return rn_set_error(RN_INVALID_ARG, "%s '%s': sequence item %zu has no data", what,
                                    v->name, i);
        }
        return RN_OK;
    }
    if (t->kind == GRAPH_KIND_TENSOR && t->type == RN_STRING && t->data != NULL) {
        char *const *str = t->data;
        size_t n = graph_tensor_count(t);
        for (size_t i = 0; i < n; i++)
            if (str[i] == NULL)
                return rn_set_error(RN_INVALID_ARG, "%s '%s': string %zu is not set", what, v->name,
                                    i);
    }
    return RN_OK;
}

rn_status plugin_request_set_input(plugin_request *r, size_t index, const graph_tensor *t)
{
    const graph *g = r->plan->g;
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        return busy_error("set_input");
    if (index >= (size_t)g->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%d inputs)", index,
                            g->n_inputs);
    rn_status st = check_value(r, g->inputs[index], t, "input");
    if (st != RN_OK)
        return st;
    value_slot *s = &r->slots[g->inputs[index]->id];
    slot_clear(s);
    s->t = *t;
    s->bound = true;
    s->has_value = true;
    r->remote_in[index] = false;
    return RN_OK;
}

rn_status plugin_request_set_capture(plugin_request *r, int i, const graph_tensor *t)
{
    const plugin_plan *plan = r->plan;
    if (i < 0 || i >= plan->n_captures)
        return rn_set_error(RN_INVALID_ARG, "capture %d is out of range (%d captures)", i,
                            plan->n_captures);
    const graph_value *v = plan->g->values[plan->capture_ids[i]];
    rn_status st = check_value(r, v, t, "outer value");
    if (st != RN_OK)
        return st;
    value_slot *s = &r->slots[v->id];
    slot_clear(s);
    s->t = *t;
    s->bound = true;
    s->has_value = true;
    return RN_OK;
}

void plugin_request_set_cancel_source(plugin_request *r, const atomic_bool *cancel)
{
    r->outer_cancel = cancel;
}

rn_status plugin_request_set_output(plugin_request *r, size_t index, const graph_tensor *t)
{
    const graph *g = r->plan->g;
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        return busy_error("set_output");
    if (index >= (size_t)g->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            g->n_outputs);
    if (t->kind != GRAPH_KIND_TENSOR || g->outputs[index]->kind != GRAPH_KIND_TENSOR ||
        t->type == RN_STRING)
        return rn_set_error(RN_INVALID_ARG,
                            "output '%s': only numeric tensor results can be written into the "
                            "caller's buffer",
                            g->outputs[index]->name);
    r->user_out[index] = *t;
    r->remote_out[index] = false;
    return RN_OK;
}

/* The host view of a remote tensor of the plan's context. */
static rn_status remote_view(const plugin_request *r, const void *tensor, graph_tensor *out)
{
    const plugin_host_context *context = r->plan->options.context;
    if (context == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "this compiled model takes no remote tensors");
    return plugin_host_tensor_view(tensor, context, out);
}

rn_status plugin_request_set_remote_input(plugin_request *r, size_t index, const void *tensor)
{
    graph_tensor view;
    rn_status st = remote_view(r, tensor, &view);
    if (st == RN_OK)
        st = plugin_request_set_input(r, index, &view);
    if (st == RN_OK)
        r->remote_in[index] = true;
    return st;
}

rn_status plugin_request_set_remote_output(plugin_request *r, size_t index, const void *tensor)
{
    graph_tensor view;
    rn_status st = remote_view(r, tensor, &view);
    if (st == RN_OK)
        st = plugin_request_set_output(r, index, &view);
    if (st == RN_OK)
        r->remote_out[index] = true;
    return st;
}

size_t plugin_request_host_bytes(const plugin_request *r, bool outputs)
{
    const graph *g = r->plan->g;
    size_t bytes = 0;
    if (!outputs) {
        for (int i = 0; i < g->n_inputs; i++)
            if (!r->remote_in[i])
                bytes += r->slots[g->inputs[i]->id].t.nbytes;
        return bytes;
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (!r->remote_out[o])
            bytes += r->slots[g->outputs[o]->id].t.nbytes;
    return bytes;
}

/* ---- running one node ---- */

typedef struct alloc_ctx {
    plugin_request *request;
    const graph_node *node;
} alloc_ctx;

/* The caller's buffer for value v when v is a result whose bound output
 * buffer has exactly the size the kernel will write; else NULL. */
static void *user_buffer_for(plugin_request *r, const graph_value *v, const graph_tensor *t)
{
    const graph *g = r->plan->g;
    for (int o = 0; o < g->n_outputs; o++) {
        const graph_tensor *u = &r->user_out[o];
        if (g->outputs[o] == v && u->data != NULL && u->type == t->type && u->nbytes == t->nbytes &&
            t->type != RN_STRING)
            return u->data;
    }
    return NULL;
}

static rn_status alloc_value(plugin_request *r, const graph_node *node, int index, graph_tensor *t)
{
    graph_value *v = node->outputs[index];
    value_slot *s = &r->slots[v->id];
    slot_clear(s);
    t->nbytes = plugin_tensor_nbytes(t->type, graph_tensor_count(t));
    void *user = user_buffer_for(r, v, t);
    if (user != NULL) {
        t->data = user;
        s->owned = false;
    } else {
        /* calloc: STRING outputs must start as NULL pointers; a 0-byte tensor
         * still gets a valid pointer. */
        t->data = calloc(1, t->nbytes ? t->nbytes : 1);
        if (t->data == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): cannot allocate %zu bytes",
                                node->name, node->op_type, t->nbytes);
        s->owned = true;
    }
    s->t = *t;
    s->has_value = true;
    return RN_OK;
}

static rn_status alloc_output_cb(plugin_kernel_args *args, int index, int rank, const int64_t *dims)
{
    alloc_ctx *ctx = args->alloc_ctx;
    if (index < 0 || index >= args->n_outputs || ctx->node->outputs[index] == NULL)
        return rn_set_error(RN_INTERNAL, "node '%s': alloc_output(%d) is not an output",
                            ctx->node->name, index);
    if (rank < 0 || rank > RN_MAX_RANK)
        return rn_set_error(RN_INTERNAL, "node '%s': output rank %d", ctx->node->name, rank);
    graph_tensor *t = &args->outputs[index];
    t->rank = rank;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            return rn_set_error(RN_INTERNAL, "node '%s': negative output dim", ctx->node->name);
        t->dims[d] = dims[d];
    }
    return alloc_value(ctx->request, ctx->node, index, t);
}

static rn_status move_output_cb(plugin_kernel_args *args, int index, graph_tensor *value)
{
    alloc_ctx *ctx = args->alloc_ctx;
    const graph_node *node = ctx->node;
    if (index < 0 || index >= args->n_outputs || node->outputs[index] == NULL)
        return rn_set_error(RN_INTERNAL, "node '%s': move_output(%d) is not an output", node->name,
                            index);
    const graph_value *v = node->outputs[index];
    /* A value whose kind was not known at compile time reads as a tensor. */
    if (v->kind != GRAPH_KIND_TENSOR && !graph_kind_accepts(v->kind, value->kind))
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): output '%s' is a %s, got a %s",
                            node->name, node->op_type, v->name, graph_kind_name(v->kind),
                            graph_kind_name(value->kind));
    if (value->kind == GRAPH_KIND_TENSOR) {
        if (value->rank < 0 || value->rank > RN_MAX_RANK)
            return rn_set_error(RN_INTERNAL, "node '%s': output rank %d", node->name, value->rank);
        value->nbytes = plugin_tensor_nbytes(value->type, graph_tensor_count(value));
        if (value->data == NULL && (value->data = calloc(1, 1)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                                node->op_type);
    }
    value_slot *s = &ctx->request->slots[v->id];
    slot_clear(s);
    s->t = *value;
    s->owned = true;
    s->has_value = true;
    args->outputs[index] = *value;
    memset(value, 0, sizeof *value);
    return RN_OK;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs node i: run-time shape inference, output allocation, kernel. Safe to
 * call for different nodes of one request at once (each node has its own
 * scratch and writes only its own outputs). */
static rn_status run_node(plugin_request *r, int i)
{
    const plugin_plan *plan = r->plan;
    const graph_node *node = plan->g->nodes[i];
    graph_tensor *in = r->io + plan->io_offset[i];
    graph_tensor *out = in + node->n_inputs;
    graph_tensor *implicit = out + node->n_outputs;
    graph_port *pin = r->ports + plan->io_offset[i];
    graph_port *pout = pin + node->n_inputs;
    for (int k = 0; k < node->n_inputs; k++) {
        const graph_value *v = node->inputs[k];
        memset(&in[k], 0, sizeof in[k]);
        memset(&pin[k], 0, sizeof pin[k]);
        if (v == NULL)
            continue;
        const value_slot *s = &r->slots[v->id];
        if (!s->has_value)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): input '%s' has no data", node->name,
                                node->op_type, v->name);
        in[k] = s->t;
        pin[k].present = true;
        pin[k].type = s->t.type;
        pin[k].kind = s->t.kind;
        if (s->t.kind != GRAPH_KIND_TENSOR && !plan->kernels[i]->values)
            return rn_set_error(RN_TYPE_MISMATCH,
                                "node '%s' (%s): input '%s' is a %s, and the kernel takes tensors",
                                node->name, node->op_type, v->name, graph_kind_name(s->t.kind));
        if (s->t.kind != GRAPH_KIND_TENSOR) {
            pin[k].shape.rank = -1; /* sequences and absent optionals have no shape */
            continue;
        }
        if (in[k].data == NULL) /* an empty tensor: kernels still get a valid pointer */
            in[k].data = (void *)&empty_tensor_data;
        pin[k].shape.rank = s->t.rank;
        memcpy(pin[k].shape.dims, s->t.dims, sizeof pin[k].shape.dims);
        pin[k].data = in[k].data;
    }
    for (int k = 0; k < plan->n_implicit[i]; k++) {
        const value_slot *s = &r->slots[plan->implicit[i][k]];
        if (!s->has_value)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): outer value '%s' has no data",
                                node->name, node->op_type,
                                plan->g->values[plan->implicit[i][k]]->name);
        implicit[k] = s->t;
        if (implicit[k].kind == GRAPH_KIND_TENSOR && implicit[k].data == NULL)
            implicit[k].data = (void *)&empty_tensor_data;
    }
    for (int k = 0; k < node->n_outputs; k++) {
        memset(&pout[k], 0, sizeof pout[k]);
        pout[k].present = node->outputs[k] != NULL;
        pout[k].shape.rank = -1;
    }
    /* Nodes with subgraphs learn their output shapes by running them: their
     * kernels hand over the outputs (move_output), so inference, which would
     * have to infer the bodies again, is skipped. */
    const graph_op_schema *schema = graph_op_find(node->domain, node->op_type);
    if (schema != NULL && schema->infer != NULL && !plan->has_subgraphs[i]) {
        rn_status st = schema->infer(node, pin, node->n_inputs, pout, node->n_outputs);
        if (st != RN_OK)
            return st;
    }
    for (int k = 0; k < node->n_outputs; k++) {
        memset(&out[k], 0, sizeof out[k]);
        if (node->outputs[k] == NULL)
            continue;
        out[k].type = pout[k].type != RN_UNDEFINED ? pout[k].type : node->outputs[k]->type;
        out[k].kind = pout[k].kind;
        if (pout[k].kind == GRAPH_KIND_TENSOR && graph_shape_is_static(&pout[k].shape)) {
            out[k].rank = pout[k].shape.rank;
            memcpy(out[k].dims, pout[k].shape.dims, sizeof out[k].dims);
            rn_status st = alloc_value(r, node, k, &out[k]);
            if (st != RN_OK)
                return st;
        } else {
            slot_clear(&r->slots[node->outputs[k]->id]); /* the kernel writes it */
        }
    }
    alloc_ctx actx = {.request = r, .node = node};
    plugin_kernel_args args = {
        .node = node,
        .inputs = in,
        .n_inputs = node->n_inputs,
        .outputs = out,
        .n_outputs = node->n_outputs,
        .state = plan->states[i],
        .alloc_output = alloc_output_cb,
        .alloc_ctx = &actx,
        .move_output = move_output_cb,
        .implicit = plan->n_implicit[i] > 0 ? implicit : NULL,
        .n_implicit = plan->n_implicit[i],
        .cancel = r->outer_cancel != NULL ? r->outer_cancel : &r->cancel,
    };
    bool timed = r->profiling || r->log_level >= PLUGIN_LOG_TRACE;
    uint64_t t0 = timed ? now_ns() : 0;
    rn_status st = plan->kernels[i]->run(&args);
    rn_profiling_info *prof = &r->profile[PLUGIN_STAGES + i];
    uint64_t us = timed ? (now_ns() - t0) / 1000 : 0;
    if (r->profiling) {
        prof->real_time_us = us;
        plan->last_us[i] = (int64_t)us;
    }
    if (r->log_level >= PLUGIN_LOG_TRACE) /* once per kernel: skip the call when off */
        plugin_log(r->log_level, PLUGIN_LOG_TRACE, plan->options.device,
                   "request %p: node '%s' (%s, %s): %llu us%s", (void *)r, node->name,
                   node->op_type, prof->exec_type, (unsigned long long)us,
                   st == RN_OK ? "" : ", failed");
    if (st != RN_OK)
        return st;
    prof->status = RN_NODE_EXECUTED;
    for (int k = 0; k < node->n_outputs; k++) {
        if (node->outputs[k] != NULL && !r->slots[node->outputs[k]->id].has_value)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): kernel left output %d unallocated",
                                node->name, node->op_type, k);
    }
    return RN_OK;
}

/* Drops node i's reads of its inputs; the last reader frees an intermediate. */
static void release_inputs(plugin_request *r, int i)
{
    const graph_node *node = r->plan->g->nodes[i];
    for (int k = 0; k < node->n_inputs; k++) {
        const graph_value *v = node->inputs[k];
        if (v != NULL && v->producer != NULL && atomic_fetch_sub(&r->remaining[v->id], 1) == 1)
            slot_clear(&r->slots[v->id]);
    }
    for (int k = 0; k < r->plan->n_implicit[i]; k++) {
        int id = r->plan->implicit[i][k];
        if (r->plan->g->values[id]->producer != NULL && atomic_fetch_sub(&r->remaining[id], 1) == 1)
            slot_clear(&r->slots[id]);
    }
    for (int k = 0; k < node->n_outputs; k++) {
        const graph_value *v = node->outputs[k];
        if (v != NULL && r->plan->consumers[v->id] == 0)
            slot_clear(&r->slots[v->id]); /* nobody reads it */
    }
}

/* ---- the stages, shared by sync and async runs ---- */

static rn_status check_inputs(plugin_request *r)
{
    const graph *g = r->plan->g;
    for (int i = 0; i < g->n_inputs; i++)
        if (!r->slots[g->inputs[i]->id].bound)
            return rn_set_error(RN_INVALID_ARG, "input '%s' is not set", g->inputs[i]->name);
    for (int i = 0; i < r->plan->n_captures; i++)
        if (!r->slots[r->plan->capture_ids[i]].bound)
            return rn_set_error(RN_INVALID_ARG, "outer value '%s' is not bound",
                                g->values[r->plan->capture_ids[i]]->name);
    return RN_OK;
}

/* Profiling: marks the start of a stage / ends it with its real time. */
static void stage_begin(plugin_request *r, int stage)
{
    if (r->profiling)
        r->stage_start[stage] = now_ns();
}

static void stage_end(plugin_request *r, int stage)
{
    if (!r->profiling)
        return;
    r->profile[stage].real_time_us = (now_ns() - r->stage_start[stage]) / 1000;
    r->profile[stage].status = RN_NODE_EXECUTED;
}

static void preprocess(plugin_request *r)
{
    const plugin_plan *plan = r->plan;
    const graph *g = plan->g;
    r->profiling = plugin_plan_profiling(plan);
    r->log_level = atomic_load_explicit(&plan->log_level, memory_order_relaxed);
    if (r->log_level >= PLUGIN_LOG_DEBUG)
        r->run_start_ns = now_ns();
    stage_begin(r, STAGE_PREPROCESS);
    for (int v = 0; v < g->n_values; v++)
        atomic_store_explicit(&r->remaining[v], plan->consumers[v], memory_order_relaxed);
    for (int i = 0; i < g->n_nodes + PLUGIN_STAGES; i++) {
        r->profile[i].status = RN_NODE_NOT_RUN;
        r->profile[i].real_time_us = 0;
    }
    stage_end(r, STAGE_PREPROCESS);
    stage_begin(r, STAGE_EXECUTE);
}

/* Records the first error of a run with its message (from this thread). */
static void record_error(plugin_request *r, rn_status st)
{
    int expected = RN_OK;
    if (atomic_compare_exchange_strong(&r->status, &expected, (int)st))
        snprintf(r->error, sizeof r->error, "%s", rn_last_error());
}

static rn_status postprocess_results(plugin_request *r);

static rn_status postprocess(plugin_request *r)
{
    stage_end(r, STAGE_EXECUTE);
    stage_begin(r, STAGE_POSTPROCESS);
    rn_status st = postprocess_results(r);
    stage_end(r, STAGE_POSTPROCESS);
    const char *device = r->plan->options.device;
    if (st == RN_CANCELLED)
        plugin_log(r->log_level, PLUGIN_LOG_INFO, device, "request %p: run cancelled", (void *)r);
    else if (st != RN_OK)
        plugin_log(r->log_level, PLUGIN_LOG_ERROR, device, "request %p: run failed: %s", (void *)r,
                   r->error);
    else if (r->log_level >= PLUGIN_LOG_DEBUG)
        plugin_log(r->log_level, PLUGIN_LOG_DEBUG, device, "request %p: run done in %llu us",
                   (void *)r, (unsigned long long)((now_ns() - r->run_start_ns) / 1000));
    return st;
}

static rn_status postprocess_results(plugin_request *r)
{
    const graph *g = r->plan->g;
    rn_status st = (rn_status)atomic_load(&r->status);
    if (st == RN_OK && atomic_load(&r->cancel))
        st = RN_CANCELLED;
    if (st != RN_OK) {
        clear_produced(r); /* leave no stale intermediates or partial results */
        return st;
    }
    /* Copy results into the caller's buffers where they were not written in place. */
    for (int o = 0; o < g->n_outputs; o++) {
        const graph_tensor *u = &r->user_out[o];
        const graph_tensor *t = &r->slots[g->outputs[o]->id].t;
        if (u->data == NULL || u->data == t->data)
            continue;
        if (u->type != t->type || u->nbytes != t->nbytes || t->type == RN_STRING) {
            st = rn_set_error(RN_SHAPE_MISMATCH,
                              "output '%s': the result (%s, %zu bytes) does not fit the tensor "
                              "set for it (%s, %zu bytes)",
                              g->outputs[o]->name, rn_element_type_name(t->type), t->nbytes,
                              rn_element_type_name(u->type), u->nbytes);
            record_error(r, st);
            return st;
        }
        memcpy(u->data, t->data, t->nbytes);
    }
    return RN_OK;
}

/* ---- device stages ---- */

/* Profiling: adds device stage k's time to its slot. */
static void stage_done(plugin_request *r, int k)
{
    const plugin_plan_options *o = &r->plan->options;
    if (!r->profiling)
        return;
    rn_profiling_info *p = &r->profile[o->stages[k].slot];
    p->real_time_us += (now_ns() - r->device_stage_start[k]) / 1000;
    p->status = RN_NODE_EXECUTED;
}

/* Runs device stage k (unless the run already failed or was cancelled);
 * returns what its run returned. */
static int start_stage(plugin_request *r, int k)
{
    if (atomic_load(&r->status) != RN_OK || atomic_load(&r->cancel))
        return RN_OK;
    const plugin_plan_options *o = &r->plan->options;
    const plugin_stage *s = &o->stages[k];
    if (r->profiling)
        r->device_stage_start[k] = now_ns();
    int rc = s->run(r, (uint32_t)k, o->stage_ctx);
    /* A pending stage's time is recorded by its completion (another thread,
     * which may already have run by now). */
    if (rc != PLUGIN_STAGE_PENDING)
        stage_done(r, k);
    if (rc < 0)
        record_error(r, (rn_status)rc);
    return rc;
}

/* Sync: a pending stage is waited for in the caller's thread. */
static void run_stage_sync(plugin_request *r, int k)
{
    pthread_mutex_lock(&r->lock);
    r->sync_stage_pending = true;
    pthread_mutex_unlock(&r->lock);
    int rc = start_stage(r, k);
    pthread_mutex_lock(&r->lock);
    if (rc == PLUGIN_STAGE_PENDING) {
        while (r->sync_stage_pending)
            pthread_cond_wait(&r->done, &r->lock);
        if (r->sync_stage_status != RN_OK) {
            pthread_mutex_unlock(&r->lock);
            record_error(r, r->sync_stage_status);
            return;
        }
    }
    r->sync_stage_pending = false;
    pthread_mutex_unlock(&r->lock);
}

int plugin_task_stage(const sched_task_ctx *ctx, void *arg)
{
    int rc = start_stage(ctx->user_arg, (int)(intptr_t)arg);
    return rc == PLUGIN_STAGE_PENDING ? SCHED_PENDING : SCHED_OK;
}

void plugin_request_complete_stage(plugin_request *r, uint32_t stage, rn_status status)
{
    stage_done(r, (int)stage);
    pthread_mutex_lock(&r->lock);
    if (r->sync_stage_pending) {
        r->sync_stage_pending = false;
        r->sync_stage_status = status;
        pthread_cond_broadcast(&r->done);
        pthread_mutex_unlock(&r->lock);
        return;
    }
    sched_instance *inst = r->instances[r->current];
    pthread_mutex_unlock(&r->lock);
    if (status != RN_OK) {
        rn_set_error(status, "device stage '%s' failed", r->plan->options.stages[stage].name);
        record_error(r, status);
    }
    /* Errors travel in the request's status; the DAG always runs on to the
     * callback stage, so the node completes with SCHED_OK. */
    sched_instance_complete_node(inst, (uint32_t)r->plan->g->n_nodes + 3 + stage, SCHED_OK);
}

/* ---- sync ---- */

rn_status plugin_request_infer(plugin_request *r)
{
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        return busy_error("infer");
    rn_status st = check_inputs(r);
    if (st != RN_OK)
        return st;
    atomic_store(&r->status, RN_OK);
    atomic_store(&r->cancel, false);
    preprocess(r);
    const plugin_plan_options *o = &r->plan->options;
    for (int k = 0; k < o->n_stages; k++)
        if (!o->stages[k].after_kernels)
            run_stage_sync(r, k);
    const graph *g = r->plan->g;
    for (int i = 0; i < g->n_nodes && atomic_load(&r->status) == RN_OK; i++) {
        if (r->outer_cancel != NULL && atomic_load(r->outer_cancel)) {
            record_error(r, rn_set_error(RN_CANCELLED, "the infer request was cancelled"));
            break;
        }
        if ((st = run_node(r, i)) != RN_OK) {
            record_error(r, st);
            break;
        }
        release_inputs(r, i);
    }
    for (int k = 0; k < o->n_stages; k++)
        if (o->stages[k].after_kernels)
            run_stage_sync(r, k);
    st = postprocess(r);
    if (st != RN_OK)
        return rn_set_error(st, "%s", r->error);
    return RN_OK;
}

/* ---- async: the DAG's task functions ---- */

int plugin_task_preprocess(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    preprocess(ctx->user_arg);
    return SCHED_OK;
}

int plugin_task_kernel(const sched_task_ctx *ctx, void *arg)
{
    plugin_request *r = ctx->user_arg;
    int i = (int)(intptr_t)arg;
    /* After an error or a cancel, kernels not yet started are skipped; their
     * buffers are cleared by postprocess. */
    if (atomic_load_explicit(&r->status, memory_order_relaxed) != RN_OK ||
        atomic_load_explicit(&r->cancel, memory_order_relaxed))
        return SCHED_OK;
    rn_status st = run_node(r, i);
    if (st != RN_OK)
        record_error(r, st);
    else
        release_inputs(r, i);
    return SCHED_OK;
}

int plugin_task_postprocess(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    postprocess(ctx->user_arg);
    return SCHED_OK;
}

/* The last stage, on the callback executor: publish the status, call the
 * user's callback (which may start the request again), then release waiters. */
int plugin_task_callback(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    plugin_request *r = ctx->user_arg;
    rn_status st = (rn_status)atomic_load(&r->status);
    if (st == RN_OK && atomic_load(&r->cancel))
        st = RN_CANCELLED;
    char message[sizeof r->error];
    if (st == RN_CANCELLED && atomic_load(&r->status) == RN_OK)
        snprintf(message, sizeof message, "the infer request was cancelled");
    else
        snprintf(message, sizeof message, "%s", st == RN_OK ? "" : r->error);
    pthread_mutex_lock(&r->lock);
    uint64_t run = r->started;
    rn_request_callback cb = r->callback;
    void *cb_data = r->callback_data;
    pthread_mutex_unlock(&r->lock);
    atomic_store(&r->state, REQUEST_IDLE);
    if (cb != NULL) {
        if (st != RN_OK)
            rn_set_error(st, "%s", message);
        cb(cb_data, st);
    }
    pthread_mutex_lock(&r->lock);
    if (r->completed < run) {
        r->completed = run;
        r->last_status = st;
        snprintf(r->last_error, sizeof r->last_error, "%s", message);
    }
    pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->lock);
    return SCHED_OK;
}

rn_status plugin_request_start_async(plugin_request *r)
{
    if (r->plan->nested)
        return rn_set_error(RN_NOT_IMPLEMENTED, "start_async: a subgraph's request runs with "
                                                "infer only");
    int idle = REQUEST_IDLE;
    if (!atomic_compare_exchange_strong(&r->state, &idle, REQUEST_RUNNING))
        return busy_error("start_async");
    rn_status st = check_inputs(r);
    if (st != RN_OK) {
        atomic_store(&r->state, REQUEST_IDLE);
        return st;
    }
    atomic_store(&r->status, RN_OK);
    atomic_store(&r->cancel, false);
    pthread_mutex_lock(&r->lock);
    r->current ^= 1;
    sched_instance *inst = r->instances[r->current];
    r->started++;
    pthread_mutex_unlock(&r->lock);
    /* The other run of this request may still be finishing its completion
     * (after its callback returned): wait for it, it is not blocked on us. */
    if (sched_instance_running(inst))
        sched_instance_wait(inst);
    int rc =
        sched_instance_start(executors_sched(r->plan->pool), inst, SCHED_STREAM_ANY, NULL, NULL);
    if (rc != 0) {
        pthread_mutex_lock(&r->lock);
        r->started--;
        pthread_mutex_unlock(&r->lock);
        atomic_store(&r->state, REQUEST_IDLE);
        if (rc == -EAGAIN)
            return rn_set_error(RN_REQUEST_BUSY,
                                "start_async: the stream's queue is full, try again later");
        return rn_set_error(RN_INTERNAL, "start_async: scheduler error %d", rc);
    }
    return RN_OK;
}

/* Waits until the run started last has completed, or until `deadline_ns`
 * (0: no deadline). */
static rn_status wait_until(plugin_request *r, uint64_t deadline_ns)
{
    pthread_mutex_lock(&r->lock);
    while (r->completed < r->started) {
        if (deadline_ns == 0) {
            pthread_cond_wait(&r->done, &r->lock);
            continue;
        }
        if (now_ns() >= deadline_ns) {
            pthread_mutex_unlock(&r->lock);
            return rn_set_error(RN_RESULT_NOT_READY, "the infer request is still running");
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t left = deadline_ns - now_ns();
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + left;
        ts.tv_sec = (time_t)(abs_ns / 1000000000u);
        ts.tv_nsec = (long)(abs_ns % 1000000000u);
        pthread_cond_timedwait(&r->done, &r->lock, &ts);
    }
    rn_status st = r->started == 0 ? RN_OK : r->last_status;
    char message[sizeof r->last_error];
    snprintf(message, sizeof message, "%s", r->last_error);
    pthread_mutex_unlock(&r->lock);
    if (st != RN_OK)
        return rn_set_error(st, "%s", message);
    return RN_OK;
}

rn_status plugin_request_wait(plugin_request *r)
{
    return wait_until(r, 0);
}

rn_status plugin_request_wait_for(plugin_request *r, int64_t timeout_ms)
{
    if (timeout_ms < 0)
        return rn_set_error(RN_INVALID_ARG, "wait_for: negative timeout %lld ms",
                            (long long)timeout_ms);
    return wait_until(r, now_ns() + (uint64_t)timeout_ms * 1000000u + 1);
}

rn_status plugin_request_cancel(plugin_request *r)
{
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        atomic_store(&r->cancel, true);
    return RN_OK;
}

rn_status plugin_request_set_callback(plugin_request *r, rn_request_callback fn, void *user_data)
{
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        return busy_error("set_callback");
    pthread_mutex_lock(&r->lock);
    r->callback = fn;
    r->callback_data = user_data;
    pthread_mutex_unlock(&r->lock);
    return RN_OK;
}

bool plugin_request_busy(const plugin_request *r)
{
    return atomic_load(&((plugin_request *)r)->state) == REQUEST_RUNNING;
}

/* ---- results ---- */

rn_status plugin_request_get_output(plugin_request *r, size_t index, graph_tensor *out)
{
    const graph *g = r->plan->g;
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        return busy_error("get_output");
    if (index >= (size_t)g->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            g->n_outputs);
    const value_slot *s = &r->slots[g->outputs[index]->id];
    const graph_tensor *t = &s->t;
    if (!s->has_value && t->type == RN_UNDEFINED && t->kind == GRAPH_KIND_TENSOR)
        return rn_set_error(RN_INFER_NOT_STARTED, "output '%s' has no value before infer",
                            g->outputs[index]->name);
    if (!s->has_value)
        return rn_set_error(RN_INFER_NOT_STARTED,
                            "output '%s' has no value: the last run did not complete",
                            g->outputs[index]->name);
    *out = *t;
    const graph_tensor *u = &r->user_out[index];
    if (u->data != NULL)
        out->data = u->data;
    return RN_OK;
}

rn_status plugin_request_profiling(plugin_request *r, const rn_profiling_info **info, size_t *count)
{
    if (atomic_load(&r->state) == REQUEST_RUNNING)
        return busy_error("profiling");
    if (!plugin_plan_profiling(r->plan))
        return rn_set_error(RN_INVALID_ARG,
                            "profiling is off: compile with ENABLE_PROFILING=YES (or set it on "
                            "the compiled model) to read it");
    *info = r->profile;
    *count = (size_t)r->plan->g->n_nodes + PLUGIN_STAGES;
    return RN_OK;
}

/* ---- rn_request_ops ---- */

static rn_status generic_set_input(void *request, size_t index, const struct graph_tensor *t)
{
    return plugin_request_set_input(request, index, t);
}

static rn_status generic_set_output(void *request, size_t index, const struct graph_tensor *t)
{
    return plugin_request_set_output(request, index, t);
}

static rn_status generic_infer(void *request)
{
    return plugin_request_infer(request);
}

static rn_status generic_get_output(void *request, size_t index, struct graph_tensor *out)
{
    return plugin_request_get_output(request, index, out);
}

static rn_status generic_profiling(void *request, const rn_profiling_info **info, size_t *count)
{
    return plugin_request_profiling(request, info, count);
}

static rn_status generic_start_async(void *request)
{
    return plugin_request_start_async(request);
}

static rn_status generic_wait(void *request)
{
    return plugin_request_wait(request);
}

static rn_status generic_wait_for(void *request, int64_t timeout_ms)
{
    return plugin_request_wait_for(request, timeout_ms);
}

static rn_status generic_cancel(void *request)
{
    return plugin_request_cancel(request);
}

static rn_status generic_set_callback(void *request, rn_request_callback fn, void *user_data)
{
    return plugin_request_set_callback(request, fn, user_data);
}

static rn_status generic_set_remote_input(void *request, size_t index, void *tensor)
{
    return plugin_request_set_remote_input(request, index, tensor);
}

static rn_status generic_set_remote_output(void *request, size_t index, void *tensor)
{
    return plugin_request_set_remote_output(request, index, tensor);
}

static bool generic_busy(const void *request)
{
    return plugin_request_busy(request);
}

static void generic_free(void *request)
{
    plugin_request_free(request);
}

const rn_request_ops plugin_generic_request_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .set_input = generic_set_input,
    .set_output = generic_set_output,
    .infer = generic_infer,
    .get_output = generic_get_output,
    .profiling = generic_profiling,
    .start_async = generic_start_async,
    .wait = generic_wait,
    .wait_for = generic_wait_for,
    .cancel = generic_cancel,
    .set_callback = generic_set_callback,
    .busy = generic_busy,
    .set_remote_input = generic_set_remote_input,
    .set_remote_output = generic_set_remote_output,
    .free = generic_free,
};
