/* The infer request's runs (docs/architecture.md, "The request walk"):
 * its bindings, starting sync and async runs, and the task functions of
 * the request pipeline with what they run — the exec nodes, the device
 * stages, the device events and engines that complete a pending stage —,
 * then the results: of the generic request, a run passes through this
 * file (and run.c, the run object) only. What is made ahead of runs — the
 * request and its memory per spec — is request_spec.c's. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/log.h"
#include "plugins/api/plan_internal.h"
#include "plugins/api/remote.h"

/* The node this thread runs (plugin_running_node). */
static _Thread_local const char *running_node;

const char *plugin_running_node(void)
{
    return running_node;
}

/* Every request's kernel arguments carry it as their alloc_ctx
 * (request_spec.c). */
plugin_request *plugin_kernel_request(const rn_kernel_args *args)
{
    return args->alloc_ctx;
}

static const max_align_t empty_tensor_data;

uint64_t plugin_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- bindings ---- */

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
    char why[160];
    if (t->kind == GRAPH_KIND_MAP && !graph_map_check(t, why, sizeof why))
        return rn_set_error(RN_INVALID_ARG, "%s '%s': %s", what, v->name, why);
    for (size_t i = 0; t->kind == GRAPH_KIND_SEQUENCE_MAP && i < t->n_items; i++) {
        if (t->items == NULL)
            return rn_set_error(RN_INVALID_ARG, "%s '%s': a sequence of %zu items has none", what,
                                v->name, t->n_items);
        if (!graph_map_check(&t->items[i], why, sizeof why))
            return rn_set_error(RN_INVALID_ARG, "%s '%s': sequence item %zu: %s", what, v->name, i,
                                why);
        if (t->items[i].type != t->type)
            return rn_set_error(
                RN_TYPE_MISMATCH, "%s '%s': sequence item %zu maps to %s, expected %s", what,
                v->name, i, rn_element_type_name(t->items[i].type), rn_element_type_name(t->type));
    }
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

static rn_status bind_input(plugin_request *r, const graph_value *v, int index,
                            const graph_tensor *t, const char *what)
{
    rn_status st = check_value(r, v, t, what);
    if (st != RN_OK)
        return st;
    r->inputs[index] = *t;
    r->input_bound[index] = true;
    return RN_OK;
}

rn_status plugin_request_set_input(plugin_request *r, size_t index, const graph_tensor *t)
{
    const graph *g = r->plan->g;
    rn_status busy = plugin_run_check_idle(&r->run, "set_input");
    if (busy != RN_OK)
        return busy;
    if (index >= (size_t)g->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%d inputs)", index,
                            g->n_inputs);
    rn_status st = bind_input(r, g->inputs[index], (int)index, t, "input");
    if (st == RN_OK)
        r->remote_in[index] = false;
    return st;
}

rn_status plugin_request_set_capture(plugin_request *r, int i, const graph_tensor *t)
{
    const plugin_plan *plan = r->plan;
    if (i < 0 || i >= plan->n_captures)
        return rn_set_error(RN_INVALID_ARG, "capture %d is out of range (%d captures)", i,
                            plan->n_captures);
    /* Captures are inputs of the nested graph that no declaration lists:
     * their value is bound straight into the slot. */
    const graph_value *v = plan->g->values[plan->capture_ids[i]];
    rn_status st = check_value(r, v, t, "outer value");
    if (st != RN_OK)
        return st;
    value_slot *s = &r->rs->slots[v->id];
    s->t = *t;
    s->owned = false;
    s->has_value = true;
    return RN_OK;
}

void plugin_request_set_cancel_source(plugin_request *r, const atomic_bool *cancel)
{
    plugin_run_set_cancel_source(&r->run, cancel);
    for (int k = 0; k < REQUEST_SPECS; k++)
        for (int i = 0; r->specs[k] != NULL && i < r->specs[k]->spec->n_nodes; i++)
            r->specs[k]->args[i].cancel = plugin_run_cancel_flag(&r->run);
}

rn_status plugin_request_set_output(plugin_request *r, size_t index, const graph_tensor *t)
{
    const graph *g = r->plan->g;
    rn_status busy = plugin_run_check_idle(&r->run, "set_output");
    if (busy != RN_OK)
        return busy;
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
static rn_status remote_view(const plugin_request *r, const rn_plugin_tensor *tensor,
                             graph_tensor *out)
{
    const plugin_host_context *context = r->plan->options.context;
    if (context == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "this compiled model takes no remote tensors");
    if (r->plan->options.remote_view != NULL)
        return r->plan->options.remote_view(context, tensor, out);
    return plugin_host_tensor_view(tensor, context, out);
}

rn_status plugin_request_set_remote_input(plugin_request *r, size_t index, rn_plugin_tensor *tensor)
{
    graph_tensor view;
    rn_status st = remote_view(r, tensor, &view);
    if (st == RN_OK)
        st = plugin_request_set_input(r, index, &view);
    if (st == RN_OK)
        r->remote_in[index] = true;
    return st;
}

rn_status plugin_request_set_remote_output(plugin_request *r, size_t index,
                                           rn_plugin_tensor *tensor)
{
    graph_tensor view;
    rn_status st = remote_view(r, tensor, &view);
    if (st == RN_OK)
        st = plugin_request_set_output(r, index, &view);
    if (st == RN_OK)
        r->remote_out[index] = true;
    return st;
}

void *plugin_request_arena(const plugin_request *r)
{
    return r->rs != NULL ? r->rs->arena_buffer : NULL;
}

size_t plugin_request_host_bytes(const plugin_request *r, bool outputs)
{
    const graph *g = r->plan->g;
    size_t bytes = 0;
    if (!outputs) {
        for (int i = 0; i < g->n_inputs; i++)
            if (!r->remote_in[i])
                bytes += r->inputs[i].nbytes;
        return bytes;
    }
    const plan_spec *s = r->rs->spec;
    for (int o = 0; o < g->n_outputs; o++)
        if (!r->remote_out[o])
            bytes += r->rs->slots[s->results[o]].t.nbytes;
    return bytes;
}

/* ---- starting a run ---- */

/* Checks the bindings and picks the spec for the inputs' shapes. */
static rn_status begin_run(plugin_request *r)
{
    const plugin_plan *plan = r->plan;
    const graph *g = plan->g;
    for (int i = 0; i < g->n_inputs; i++) {
        if (!r->input_bound[i])
            return rn_set_error(RN_INVALID_ARG, "input '%s' is not set", g->inputs[i]->name);
        const graph_tensor *t = &r->inputs[i];
        graph_shape *sh = &r->shapes[i];
        sh->rank = t->kind == GRAPH_KIND_TENSOR ? t->rank : -1;
        for (int d = 0; d < t->rank && d < RN_MAX_RANK; d++)
            sh->dims[d] = t->dims[d];
        const graph_value *v = g->inputs[i];
        if (t->kind == GRAPH_KIND_TENSOR && v->shape.rank >= 0 && !plan->nested) {
            if (v->shape.rank != t->rank)
                return rn_set_error(RN_SHAPE_MISMATCH, "input '%s': expected rank %d, got %d",
                                    v->name, v->shape.rank, t->rank);
            for (int d = 0; d < t->rank; d++)
                if (v->shape.dims[d] >= 0 && v->shape.dims[d] != t->dims[d])
                    return rn_set_error(
                        RN_SHAPE_MISMATCH, "input '%s': dim %d is %lld, the model expects %lld",
                        v->name, d, (long long)t->dims[d], (long long)v->shape.dims[d]);
        }
        if (t->kind == GRAPH_KIND_TENSOR && v->type != RN_UNDEFINED && t->type != v->type &&
            !plan->nested)
            return rn_set_error(RN_TYPE_MISMATCH, "input '%s': expected %s, got %s", v->name,
                                rn_element_type_name(v->type), rn_element_type_name(t->type));
    }
    if (!plan->dynamic_inputs || plan->nested) {
        r->rs = NULL;
        for (int k = 0; k < REQUEST_SPECS && r->rs == NULL; k++)
            if (r->specs[k] != NULL && r->specs[k]->spec == plan->base)
                r->rs = r->specs[k];
    } else if (!plan_spec_matches(r->rs->spec, r->shapes)) {
        plan_spec *spec = NULL;
        for (int k = 0; k < REQUEST_SPECS && spec == NULL; k++)
            if (r->specs[k] != NULL && plan_spec_matches(r->specs[k]->spec, r->shapes)) {
                r->rs = r->specs[k];
                r->rs->last_used = ++r->use_clock;
                spec = r->specs[k]->spec;
                atomic_fetch_add(&((plugin_plan *)plan)->cache_hits, 1);
            }
        /* Shapes this request has no state for: the plan's spec for them
         * (plan.c: cached, or built here the first time) and the request's
         * memory for it (request_spec.c). */
        if (spec == NULL) {
            rn_status st = plugin_plan_spec_for((plugin_plan *)plan, r->shapes, &spec);
            if (st == RN_OK)
                st = plugin_request_use_spec(r, spec);
            if (st != RN_OK)
                return st;
        }
        plugin_request_profile_init(r);
    }
    r->ran = true;
    return RN_OK;
}

rn_status plugin_request_infer(plugin_request *r)
{
    rn_status st = plugin_run_begin(&r->run, "infer");
    if (st != RN_OK)
        return st;
    if ((st = begin_run(r)) != RN_OK) {
        plugin_run_end(&r->run);
        return st;
    }
    return plugin_run_inline(&r->run, r->rs->spec->pipeline, r);
}

rn_status plugin_request_start_async(plugin_request *r)
{
    if (r->plan->nested)
        return rn_set_error(RN_NOT_IMPLEMENTED, "start_async: a subgraph's request runs with "
                                                "infer only");
    rn_status st = plugin_run_begin(&r->run, "start_async");
    if (st != RN_OK)
        return st;
    if ((st = begin_run(r)) != RN_OK) {
        plugin_run_end(&r->run);
        return st;
    }
    /* Runs without a user callback complete on the stream (pipeline_direct). */
    pthread_mutex_lock(&r->run.lock);
    bool direct = r->run.callback == NULL;
    pthread_mutex_unlock(&r->run.lock);
    request_spec *rs = r->rs;
    return direct ? plugin_run_start(&r->run, rs->spec->pipeline_direct, &rs->direct_instances)
                  : plugin_run_start(&r->run, rs->spec->pipeline, &rs->instances);
}

rn_status plugin_request_cancel(plugin_request *r)
{
    plugin_run_cancel(&r->run);
    return RN_OK;
}

/* ---- value slots of dynamic values ---- */

static void slot_clear(value_slot *s)
{
    if (s->owned)
        graph_tensor_release(&s->t);
    s->t.data = NULL;
    s->t.items = NULL;
    s->t.n_items = 0;
    s->owned = false;
    s->has_value = false;
}

/* The caller's buffer for result value v when it has exactly the size the
 * kernel will write; else NULL. */
static void *user_buffer_for(plugin_request *r, int v, const graph_tensor *t)
{
    const plan_spec *s = r->rs->spec;
    int o = s->values[v].result;
    if (o < 0)
        return NULL;
    const graph_tensor *u = &r->user_out[o];
    if (u->data != NULL && u->type == t->type && u->nbytes == t->nbytes && t->type != RN_STRING)
        return u->data;
    return NULL;
}

/* Allocates dynamic value v (shape in *t) for this run. */
static rn_status alloc_dynamic(plugin_request *r, const plan_node *n, int v, graph_tensor *t)
{
    value_slot *s = &r->rs->slots[v];
    slot_clear(s);
    t->nbytes = plugin_tensor_nbytes(t->type, graph_tensor_count(t));
    plan_dense_strides(t);
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
                                n->name, n->type, t->nbytes);
        s->owned = true;
    }
    s->t = *t;
    s->has_value = true;
    return RN_OK;
}

/* Whether a tensor of this shape fits static value v. */
static bool fits_planned(const plan_value *pv, int rank, const int64_t *dims)
{
    if (pv->desc.rank != rank)
        return false;
    for (int d = 0; d < rank; d++)
        if (pv->desc.dims[d] != dims[d])
            return false;
    return true;
}

static int node_of_args(const plugin_request *r, const plugin_kernel_args *args)
{
    return (int)(args - r->rs->args);
}

rn_status plugin_alloc_output(plugin_kernel_args *args, int index, int rank, const int64_t *dims)
{
    plugin_request *r = args->alloc_ctx;
    const plan_spec *s = r->rs->spec;
    const plan_node *n = &s->nodes[node_of_args(r, args)];
    if (index < 0 || index >= n->n_out || n->out[index] < 0)
        return rn_set_error(RN_INTERNAL, "node '%s': alloc_output(%d) is not an output", n->name,
                            index);
    if (rank < 0 || rank > RN_MAX_RANK)
        return rn_set_error(RN_INTERNAL, "node '%s': output rank %d", n->name, rank);
    for (int d = 0; d < rank; d++)
        if (dims[d] < 0)
            return rn_set_error(RN_INTERNAL, "node '%s': negative output dim", n->name);
    int v = n->out[index];
    const plan_value *pv = &s->values[v];
    if (pv->storage == PLAN_ARENA) {
        if (!fits_planned(pv, rank, dims))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): output '%s' has a shape other than the planned "
                                "one",
                                n->name, n->type, pv->name);
        return RN_OK; /* the planned buffer stands */
    }
    graph_tensor *t = &args->outputs[index];
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    return alloc_dynamic(r, n, v, t);
}

rn_status plugin_move_output(plugin_kernel_args *args, int index, graph_tensor *value)
{
    plugin_request *r = args->alloc_ctx;
    const plan_spec *s = r->rs->spec;
    const plan_node *n = &s->nodes[node_of_args(r, args)];
    if (index < 0 || index >= n->n_out || n->out[index] < 0)
        return rn_set_error(RN_INTERNAL, "node '%s': move_output(%d) is not an output", n->name,
                            index);
    int v = n->out[index];
    const plan_value *pv = &s->values[v];
    const graph_value *gv = pv->gv;
    /* A value whose kind was not known at compile time reads as a tensor. */
    if (gv != NULL && gv->kind != GRAPH_KIND_TENSOR && !graph_kind_accepts(gv->kind, value->kind))
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): output '%s' is a %s, got a %s",
                            n->name, n->type, pv->name, graph_kind_name(gv->kind),
                            graph_kind_name(value->kind));
    if (value->kind == GRAPH_KIND_TENSOR) {
        if (value->rank < 0 || value->rank > RN_MAX_RANK)
            return rn_set_error(RN_INTERNAL, "node '%s': output rank %d", n->name, value->rank);
        value->nbytes = plugin_tensor_nbytes(value->type, graph_tensor_count(value));
        plan_dense_strides(value);
    }
    if (pv->storage == PLAN_ARENA) {
        /* Planned statically: copy into the plan's buffer. */
        if (value->kind != GRAPH_KIND_TENSOR || value->type != pv->desc.type ||
            !fits_planned(pv, value->rank, value->dims))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): output '%s' differs from the planned one", n->name,
                                n->type, pv->name);
        memcpy(args->outputs[index].data, value->data, value->nbytes);
        graph_tensor_release(value);
        memset(value, 0, sizeof *value);
        return RN_OK;
    }
    if (value->kind == GRAPH_KIND_TENSOR && value->data == NULL &&
        (value->data = calloc(1, 1)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", n->name, n->type);
    value_slot *slot = &r->rs->slots[v];
    slot_clear(slot);
    slot->t = *value;
    slot->owned = true;
    slot->has_value = true;
    args->outputs[index] = *value;
    memset(value, 0, sizeof *value);
    return RN_OK;
}

/* Drops a slow node's reads of dynamic values; the last reader frees one. */
static void release_inputs(plugin_request *r, const plan_node *n)
{
    request_spec *rs = r->rs;
    const plan_spec *s = rs->spec;
    for (int k = 0; k < n->n_in + n->n_implicit; k++) {
        int v = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
        if (v >= 0 && s->values[v].storage == PLAN_DYNAMIC &&
            atomic_fetch_sub(&rs->remaining[v], 1) == 1)
            slot_clear(&rs->slots[v]);
    }
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        if (v >= 0 && s->values[v].storage == PLAN_DYNAMIC && s->consumers[v] == 0)
            slot_clear(&rs->slots[v]); /* nobody reads it */
    }
}

/* Fills the inputs and outputs of slow node i from the slots: run-time
 * shape inference and allocation of its dynamic outputs. */
static rn_status prepare_slow(plugin_request *r, int i)
{
    request_spec *rs = r->rs;
    const plan_spec *s = rs->spec;
    const plan_node *n = &s->nodes[i];
    graph_tensor *in = rs->io + n->io;
    graph_tensor *out = in + n->n_in;
    graph_tensor *implicit = out + n->n_out;
    graph_port *pin = rs->ports + n->io;
    graph_port *pout = pin + n->n_in;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        memset(&in[k], 0, sizeof in[k]);
        memset(&pin[k], 0, sizeof pin[k]);
        if (v < 0)
            continue;
        const value_slot *sl = &rs->slots[v];
        if (!sl->has_value)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): input '%s' has no data", n->name,
                                n->type, s->values[v].name);
        in[k] = sl->t;
        pin[k].present = true;
        pin[k].type = sl->t.type;
        pin[k].kind = sl->t.kind;
        if (sl->t.kind != GRAPH_KIND_TENSOR && !n->kernel->values)
            return rn_set_error(RN_TYPE_MISMATCH,
                                "node '%s' (%s): input '%s' is a %s, and the kernel takes tensors",
                                n->name, n->type, s->values[v].name, graph_kind_name(sl->t.kind));
        if (sl->t.kind != GRAPH_KIND_TENSOR) {
            pin[k].shape.rank = -1; /* sequences and absent optionals have no shape */
            continue;
        }
        if (in[k].data == NULL && in[k].buffer == NULL) /* empty: still a valid pointer */
            in[k].data = (void *)&empty_tensor_data;
        pin[k].shape.rank = sl->t.rank;
        memcpy(pin[k].shape.dims, sl->t.dims, sizeof pin[k].shape.dims);
        pin[k].data = in[k].data;
    }
    for (int k = 0; k < n->n_implicit; k++) {
        const value_slot *sl = &rs->slots[n->implicit[k]];
        if (!sl->has_value)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): outer value '%s' has no data",
                                n->name, n->type, s->values[n->implicit[k]].name);
        implicit[k] = sl->t;
        if (implicit[k].kind == GRAPH_KIND_TENSOR && implicit[k].data == NULL)
            implicit[k].data = (void *)&empty_tensor_data;
    }
    for (int k = 0; k < n->n_out; k++) {
        memset(&pout[k], 0, sizeof pout[k]);
        pout[k].present = n->out[k] >= 0;
        pout[k].shape.rank = -1;
    }
    /* Nodes with subgraphs learn their output shapes by running them (their
     * kernels hand the outputs over); partitions allocate what they make. */
    if (n->kind == PLAN_NODE_KERNEL && n->schema != NULL && n->schema->infer != NULL &&
        !n->has_subgraphs) {
        rn_status st = n->schema->infer(n->node, pin, n->n_in, pout, n->n_out);
        if (st != RN_OK)
            return st;
    }
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        memset(&out[k], 0, sizeof out[k]);
        if (v < 0)
            continue;
        const plan_value *pv = &s->values[v];
        bool known = pout[k].kind == GRAPH_KIND_TENSOR && graph_shape_is_static(&pout[k].shape);
        if (pv->storage == PLAN_ARENA) {
            if (known && !fits_planned(pv, pout[k].shape.rank, pout[k].shape.dims)) {
                char a[128], b[128];
                graph_shape planned = {.rank = pv->desc.rank};
                memcpy(planned.dims, pv->desc.dims, sizeof planned.dims);
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): output '%s' is %s at run time, %s when "
                                    "compiled",
                                    n->name, n->type, pv->name,
                                    graph_shape_str(&pout[k].shape, a, sizeof a),
                                    graph_shape_str(&planned, b, sizeof b));
            }
            out[k] = rs->slots[v].t;
            continue;
        }
        out[k].type = pout[k].type != RN_UNDEFINED ? pout[k].type
                      : pv->gv != NULL             ? pv->gv->type
                                                   : RN_UNDEFINED;
        out[k].kind = pout[k].kind;
        if (known) {
            out[k].rank = pout[k].shape.rank;
            memcpy(out[k].dims, pout[k].shape.dims, sizeof out[k].dims);
            rn_status st = alloc_dynamic(r, n, v, &out[k]);
            if (st != RN_OK)
                return st;
        } else {
            slot_clear(&rs->slots[v]); /* the kernel writes it */
        }
    }
    return RN_OK;
}

rn_status plugin_run_node(plugin_request *r, int i)
{
    request_spec *rs = r->rs;
    const plan_spec *s = rs->spec;
    const plan_node *n = &s->nodes[i];
    if (n->skip || rs->skip_node[i])
        return RN_OK;
    rn_status st;
    if (!n->fast && (st = prepare_slow(r, i)) != RN_OK)
        return st;
    plugin_kernel_args *args = &rs->args[i];
    bool timed = r->profiling || r->log_level >= PLUGIN_LOG_TRACE;
    uint64_t t0 = timed ? plugin_now_ns() : 0;
    if (n->concat_partial) {
        /* The inputs not produced in place go to their slices. */
        unsigned char *y = args->outputs[0].data;
        size_t off = 0;
        for (int k = 0; k < n->n_in; k++) {
            const graph_tensor *x = &args->inputs[k];
            if (!(n->concat_placed >> k & 1) && x->nbytes > 0)
                memcpy(y + off, x->data, x->nbytes);
            off += x->nbytes;
        }
        st = RN_OK;
    } else if (n->kind == PLAN_NODE_CONVERT) {
        const rn_layout_ops *ops = n->to != NULL ? n->to->ops : n->from->ops;
        running_node = n->name;
        st = ops->convert(&args->inputs[0], &args->outputs[0]);
        running_node = NULL;
    } else {
        running_node = n->name;
        st = n->kernel->run(args);
        running_node = NULL;
    }
    if (timed) {
        uint64_t us = (plugin_now_ns() - t0) / 1000;
        if (r->profiling) {
            r->profile[PLUGIN_STAGES + i].real_time_us = us;
            s->last_us[i] = (int64_t)us;
        }
        if (r->log_level >= PLUGIN_LOG_TRACE)
            plugin_log(r->log_level, PLUGIN_LOG_TRACE, r->plan->options.device,
                       "request %p: node '%s' (%s, %s): %llu us%s", (void *)r, n->name, n->type,
                       n->impl, (unsigned long long)us, st == RN_OK ? "" : ", failed");
    }
    if (st != RN_OK)
        return st;
    if (r->profiling)
        r->profile[PLUGIN_STAGES + i].status = RN_NODE_EXECUTED;
    if (!n->fast) {
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v >= 0 && s->values[v].storage == PLAN_DYNAMIC && !rs->slots[v].has_value)
                return rn_set_error(RN_INTERNAL,
                                    "node '%s' (%s): kernel left output %d unallocated", n->name,
                                    n->type, k);
        }
        release_inputs(r, n);
    }
    return RN_OK;
}

/* ---- stages ---- */

static void stage_begin(plugin_request *r, int stage)
{
    if (r->profiling)
        r->stage_start[stage] = plugin_now_ns();
}

static void stage_end(plugin_request *r, int stage)
{
    if (!r->profiling)
        return;
    r->profile[stage].real_time_us = (plugin_now_ns() - r->stage_start[stage]) / 1000;
    r->profile[stage].status = RN_NODE_EXECUTED;
}

/* Binds the run's inputs and the caller's output buffers into the slots
 * and the prebuilt descriptors that point at them. */
static void bind_memory(plugin_request *r)
{
    request_spec *rs = r->rs;
    const plan_spec *s = rs->spec;
    const graph *g = s->g;
    for (int i = 0; i < g->n_inputs; i++) {
        value_slot *sl = &rs->slots[g->inputs[i]->id];
        sl->t = r->inputs[i];
        sl->has_value = true;
    }
    for (int o = 0; o < s->n_results; o++) {
        int v = s->results[o];
        const plan_value *pv = &s->values[v];
        if (pv->storage != PLAN_ARENA || pv->root != v)
            continue;
        value_slot *sl = &rs->slots[v];
        void *user = user_buffer_for(r, v, &pv->desc);
        const graph_tensor *u = &r->user_out[o];
        sl->t.buffer = NULL;
        sl->t.offset = 0;
        if (user == NULL && u->data == NULL && u->buffer != NULL && u->nbytes == pv->desc.nbytes) {
            /* A remote tensor in device memory: the device's conversion
             * writes the result there. */
            sl->t.data = NULL;
            sl->t.buffer = u->buffer;
            sl->t.offset = u->offset;
        } else if (user != NULL || pv->host || rs->arena != NULL) {
            sl->t.data = user != NULL ? user
                         : pv->host   ? rs->host_arena + pv->offset
                                      : rs->arena + pv->offset;
        } else {
            sl->t.data = NULL;
            sl->t.buffer = rs->arena_buffer;
            sl->t.offset = pv->offset;
        }
    }
    /* Views of inputs and of results follow their roots. */
    for (int v = 0; v < s->n_values; v++) {
        const plan_value *pv = &s->values[v];
        if (pv->root != v && (pv->storage == PLAN_INPUT || s->values[pv->root].result >= 0)) {
            const graph_tensor *root = &rs->slots[pv->root].t;
            rs->slots[v].t.data = root->data;
            rs->slots[v].t.buffer = root->buffer;
            rs->slots[v].t.offset = root->offset;
            rs->slots[v].has_value = true;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        value_slot *sl = &rs->slots[g->inputs[i]->id];
        if (sl->t.kind == GRAPH_KIND_TENSOR && sl->t.data == NULL && sl->t.buffer == NULL)
            sl->t.data = (void *)&empty_tensor_data; /* empty: still a valid pointer */
    }
    /* An input in device memory already in the layout its upload writes:
     * the upload is skipped and its readers read the caller's buffer. */
    for (int k = 0; k < rs->n_zc; k++) {
        const plan_node *n = &s->nodes[rs->zc_node[k]];
        const graph_tensor *in = &rs->slots[n->in[0]].t;
        graph_tensor *cv = &rs->slots[n->out[0]].t;
        bool direct = in->data == NULL && in->buffer != NULL && in->layout != NULL &&
                      in->layout->ops == n->to->ops && n->to->ops->equal(in->layout, n->to);
        rs->skip_node[rs->zc_node[k]] = direct;
        cv->buffer = direct ? in->buffer : rs->arena_buffer;
        cv->offset = direct ? in->offset : s->values[n->out[0]].offset;
    }
    /* A result bound to device memory in the layout its producer writes:
     * the download is skipped and the producer writes the caller's
     * buffer. */
    for (int k = 0; k < rs->n_zo; k++) {
        const plan_node *n = &s->nodes[rs->zo_node[k]];
        const graph_tensor *u = &r->user_out[s->values[n->out[0]].result];
        graph_tensor *src = &rs->slots[n->in[0]].t;
        bool direct = u->data == NULL && u->buffer != NULL && u->layout != NULL &&
                      u->nbytes == src->nbytes && u->layout->ops == n->from->ops &&
                      n->from->ops->equal(u->layout, n->from);
        /* Not over a tensor that is also an input: the kernels before the
         * producer may still read it. */
        for (int i = 0; direct && i < g->n_inputs; i++)
            direct = r->inputs[i].buffer != u->buffer;
        rs->skip_node[rs->zo_node[k]] = direct;
        src->buffer = direct ? u->buffer : rs->arena_buffer;
        src->offset = direct ? u->offset : s->values[n->in[0]].offset;
    }
    for (int k = 0; k < rs->n_refresh; k++) {
        graph_tensor *t = &rs->io[rs->refresh_io[k]];
        const value_slot *sl = &rs->slots[rs->refresh_value[k]];
        t->data = sl->t.data;
        t->buffer = sl->t.buffer; /* device memory bound by a remote tensor */
        t->offset = sl->t.offset;
    }
}

static void preprocess(plugin_request *r)
{
    const plugin_plan *plan = r->plan;
    request_spec *rs = r->rs;
    const plan_spec *s = rs->spec;
    r->profiling = plugin_plan_profiling(plan);
    r->log_level = atomic_load_explicit(&plan->log_level, memory_order_relaxed);
    if (r->log_level >= PLUGIN_LOG_DEBUG)
        r->run_start_ns = plugin_now_ns();
    stage_begin(r, STAGE_PREPROCESS);
    bind_memory(r);
    for (int k = 0; k < s->n_dynamic; k++) {
        int v = s->dynamic[k];
        atomic_store_explicit(&rs->remaining[v], s->consumers[v], memory_order_relaxed);
    }
    if (r->profiling) {
        for (int i = 0; i < PLUGIN_STAGES + s->n_nodes; i++) {
            r->profile[i].status = RN_NODE_NOT_RUN;
            r->profile[i].real_time_us = 0;
        }
    }
    stage_end(r, STAGE_PREPROCESS);
    stage_begin(r, STAGE_EXECUTE);
}

/* Frees every dynamic value (intermediates and results) after a failed run. */
static void clear_dynamic(plugin_request *r)
{
    const plan_spec *s = r->rs->spec;
    for (int k = 0; k < s->n_dynamic; k++)
        slot_clear(&r->rs->slots[s->dynamic[k]]);
}

static rn_status postprocess_results(plugin_request *r)
{
    request_spec *rs = r->rs;
    const plan_spec *s = rs->spec;
    rn_status st = plugin_run_status(&r->run);
    if (st != RN_OK) {
        clear_dynamic(r); /* leave no stale intermediates or partial results */
        r->outputs_valid = false;
        return st;
    }
    /* Copy results into the caller's buffers where they were not written in place. */
    for (int o = 0; o < s->n_results; o++) {
        const graph_tensor *u = &r->user_out[o];
        const graph_tensor *t = &rs->slots[s->results[o]].t;
        if (u->data == NULL || u->data == t->data)
            continue;
        if (u->type != t->type || u->nbytes != t->nbytes || t->type == RN_STRING ||
            t->kind != GRAPH_KIND_TENSOR) {
            st = rn_set_error(RN_SHAPE_MISMATCH,
                              "output '%s': the result (%s, %zu bytes) does not fit the tensor "
                              "set for it (%s, %zu bytes)",
                              s->values[s->results[o]].name, rn_element_type_name(t->type),
                              t->nbytes, rn_element_type_name(u->type), u->nbytes);
            plugin_run_record_error(&r->run, st);
            r->outputs_valid = false;
            return st;
        }
        memcpy(u->data, t->data, t->nbytes);
    }
    r->outputs_valid = true;
    return RN_OK;
}

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
                   r->run.error);
    else if (r->log_level >= PLUGIN_LOG_DEBUG)
        plugin_log(r->log_level, PLUGIN_LOG_DEBUG, device, "request %p: run done in %llu us",
                   (void *)r, (unsigned long long)((plugin_now_ns() - r->run_start_ns) / 1000));
    return st;
}

/* Profiling slot of a device stage. */
static int stage_slot(executors_stage stage)
{
    return stage == EXECUTORS_STAGE_UPLOAD     ? STAGE_UPLOAD
           : stage == EXECUTORS_STAGE_DOWNLOAD ? STAGE_DOWNLOAD
                                               : STAGE_EXECUTE;
}

static void device_stage_done(plugin_request *r, int k)
{
    if (!r->profiling)
        return;
    rn_profiling_info *p = &r->profile[stage_slot(r->plan->options.stages[k].stage)];
    p->real_time_us += (plugin_now_ns() - r->device_stage_start[k]) / 1000;
    p->status = RN_NODE_EXECUTED;
}

/* A stage that waits for a device event: armed on the run's arena. */
static int arm_event(plugin_request *r, int k)
{
    plugin_event *e = &r->events[k];
    e->request = r;
    e->stage = (uint32_t)k;
    e->arena = plugin_request_arena(r);
    if (e->arena == NULL)
        return RN_OK;
    atomic_store_explicit(&e->armed, 1, memory_order_release);
    return r->plan->options.stages[k].arm(e->arena, e);
}

/* The event, once its arming is visible to the calling thread. */
static plugin_event *armed(plugin_event *e)
{
    (void)atomic_load_explicit(&e->armed, memory_order_acquire);
    return e;
}

void plugin_event_signal(plugin_event *event, rn_status status)
{
    plugin_event *e = armed(event);
    plugin_request_complete_stage(e->request, e->stage, status);
}

void *plugin_event_arena(plugin_event *event)
{
    return armed(event)->arena;
}

rn_profiling_info *plugin_event_profile_entries(plugin_event *event, size_t *count)
{
    return plugin_request_profile_entries(armed(event)->request, count);
}

/* Runs device stage k (unless the run already failed or was cancelled and
 * the stage is not one that always runs). */
static int start_stage(plugin_request *r, int k)
{
    const plugin_plan_options *o = &r->plan->options;
    if (plugin_run_stopping(&r->run) && !o->stages[k].always)
        return RN_OK;
    if (r->profiling)
        r->device_stage_start[k] = plugin_now_ns();
    int rc =
        o->stages[k].arm != NULL ? arm_event(r, k) : o->stages[k].run(r, (uint32_t)k, o->stage_ctx);
    /* A pending stage's time is recorded by its completion. */
    if (rc != PLUGIN_STAGE_PENDING)
        device_stage_done(r, k);
    if (rc < 0)
        plugin_run_record_error(&r->run, (rn_status)rc);
    return rc;
}

int plugin_task_stage(const sched_task_ctx *ctx, void *arg)
{
    plugin_request *r = ctx->user_arg;
    int k = (int)(intptr_t)arg;
    if (!r->run.inline_run) {
        int rc = start_stage(r, k);
        return rc == PLUGIN_STAGE_PENDING ? SCHED_PENDING : SCHED_OK;
    }
    /* Inline: a pending stage is waited for in the caller's thread. */
    plugin_run_expect(&r->run);
    rn_status st = plugin_run_await(&r->run, start_stage(r, k) == PLUGIN_STAGE_PENDING);
    if (st != RN_OK) {
        rn_set_error(st, "device stage '%s' failed",
                     executors_stage_name(r->plan->options.stages[k].stage));
        plugin_run_record_error(&r->run, st);
    }
    return SCHED_OK;
}

void plugin_request_complete_stage(plugin_request *r, uint32_t stage, rn_status status)
{
    device_stage_done(r, (int)stage);
    executors_stage kind = r->plan->options.stages[stage].stage;
    if (status != RN_OK)
        rn_set_error(status, "device stage '%s' failed", executors_stage_name(kind));
    plugin_run_complete_node(&r->run, true, kind, status, r->plan->pool);
}

/* ---- engines: in-order device work on a thread of their own ---- */

/* A work item: a queued stage (completed by the engine) or a call (the
 * caller waits for `done`). */
typedef struct engine_job {
    plugin_request *request;
    uint32_t stage;
    plugin_engine_work work;
    void *arg;
    bool call;
    bool done;         /* a call's: it ran (under the engine's lock) */
    rn_status status;  /* a call's status */
    char message[256]; /* a call's error message */
    struct engine_job *next;
} engine_job;

struct plugin_engine {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* work queued, or stopping */
    pthread_cond_t done; /* a call ran */
    engine_job *head, *tail;
    bool stopping;
    char name[32];
};

static void *engine_main(void *arg)
{
    plugin_engine *e = arg;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (e->head == NULL && !e->stopping)
            pthread_cond_wait(&e->cond, &e->lock);
        engine_job *job = e->head;
        if (job == NULL)
            break; /* stopping, and everything queued ran */
        e->head = job->next;
        if (e->head == NULL)
            e->tail = NULL;
        pthread_mutex_unlock(&e->lock);
        rn_status st = job->work(job->request, job->arg);
        if (job->call) {
            if (st != RN_OK)
                snprintf(job->message, sizeof job->message, "%s", rn_last_error());
            pthread_mutex_lock(&e->lock);
            job->status = st;
            job->done = true;
            pthread_cond_broadcast(&e->done);
            continue; /* the caller owns the job */
        }
        plugin_request_complete_stage(job->request, job->stage, st);
        free(job);
        pthread_mutex_lock(&e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

rn_status plugin_engine_open(const char *name, plugin_engine **out)
{
    *out = NULL;
    plugin_engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "engine '%s': out of memory", name);
    snprintf(e->name, sizeof e->name, "%s", name);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    pthread_cond_init(&e->done, NULL);
    int rc = pthread_create(&e->thread, NULL, engine_main, e);
    if (rc != 0) {
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->cond);
        pthread_cond_destroy(&e->done);
        free(e);
        return rn_set_error(RN_DEVICE_ERROR, "engine '%s': cannot start its thread (error %d)",
                            name, rc);
    }
    *out = e;
    return RN_OK;
}

void plugin_engine_close(plugin_engine *e)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    pthread_cond_destroy(&e->done);
    free(e);
}

static void engine_push(plugin_engine *e, engine_job *job)
{
    if (e->tail != NULL)
        e->tail->next = job;
    else
        e->head = job;
    e->tail = job;
    pthread_cond_signal(&e->cond);
}

int plugin_engine_queue(plugin_engine *e, plugin_request *r, uint32_t stage,
                        plugin_engine_work work, void *arg)
{
    engine_job *job = malloc(sizeof *job);
    if (job == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "engine '%s': out of memory queueing work", e->name);
    *job = (engine_job){.request = r, .stage = stage, .work = work, .arg = arg};
    pthread_mutex_lock(&e->lock);
    engine_push(e, job);
    pthread_mutex_unlock(&e->lock);
    return PLUGIN_STAGE_PENDING;
}

rn_status plugin_engine_call(plugin_engine *e, plugin_request *r, plugin_engine_work work,
                             void *arg)
{
    engine_job job = {.request = r, .work = work, .arg = arg, .call = true};
    pthread_mutex_lock(&e->lock);
    engine_push(e, &job);
    while (!job.done)
        pthread_cond_wait(&e->done, &e->lock);
    pthread_mutex_unlock(&e->lock);
    if (job.status != RN_OK)
        return rn_set_error(job.status, "%s", job.message);
    return RN_OK;
}

/* ---- task functions ---- */

int plugin_task_preprocess(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    preprocess(ctx->user_arg);
    return SCHED_OK;
}

void plugin_run_task(plugin_request *r, int t)
{
    const plan_spec *s = r->rs->spec;
    for (int k = s->task_begin[t]; k < s->task_begin[t + 1]; k++) {
        /* After an error or a cancel, kernels not yet started are skipped;
         * their buffers are cleared by postprocess. */
        if (plugin_run_stopping(&r->run))
            return;
        rn_status st = plugin_run_node(r, s->task_nodes[k]);
        if (st != RN_OK) {
            plugin_run_record_error(&r->run, st);
            return;
        }
    }
}

int plugin_task_kernels(const sched_task_ctx *ctx, void *arg)
{
    plugin_run_task(ctx->user_arg, (int)(intptr_t)arg);
    return SCHED_OK;
}

int plugin_task_postprocess(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    postprocess(ctx->user_arg);
    return SCHED_OK;
}

/* The last stage, on the callback executor (or the stream): publish the
 * status, call the user's callback (which may start the request again),
 * then release waiters. Inline (sync) runs call no callback. */
int plugin_task_callback(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    plugin_request *r = ctx->user_arg;
    plugin_run_finish(&r->run);
    return SCHED_OK;
}

/* ---- results ---- */

rn_status plugin_request_get_output(plugin_request *r, size_t index, graph_tensor *out)
{
    const graph *g = r->plan->g;
    rn_status busy = plugin_run_check_idle(&r->run, "get_output");
    if (busy != RN_OK)
        return busy;
    if (index >= (size_t)g->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            g->n_outputs);
    const plan_spec *s = r->rs->spec;
    if (!r->outputs_valid)
        return rn_set_error(RN_INFER_NOT_STARTED,
                            !r->ran ? "output '%s' has no value before infer"
                                    : "output '%s' has no value: the last run did not complete",
                            g->outputs[index]->name);
    const value_slot *sl = &r->rs->slots[s->results[index]];
    *out = sl->t;
    const graph_tensor *u = &r->user_out[index];
    if (u->data != NULL)
        out->data = u->data;
    return RN_OK;
}

void plugin_request_profile_init(plugin_request *r)
{
    static const char *const stage_names[PLUGIN_STAGES] = {
        "input preprocessing", "transfer to device", "execution", "transfer from device",
        "output postprocessing"};
    for (int k = 0; k < PLUGIN_STAGES; k++)
        r->profile[k] = (rn_profiling_info){.node_name = stage_names[k],
                                            .node_type = "Stage",
                                            .exec_type = "stage",
                                            .status = RN_NODE_NOT_RUN};
    const plan_spec *s = r->rs->spec;
    for (int i = 0; i < s->n_nodes; i++) {
        const plan_node *n = &s->nodes[i];
        r->profile[PLUGIN_STAGES + i] = (rn_profiling_info){.node_name = n->name,
                                                            .node_type = n->type,
                                                            .exec_type = n->impl,
                                                            .status = RN_NODE_NOT_RUN};
    }
}

rn_status plugin_request_profiling(plugin_request *r, const rn_profiling_info **info, size_t *count)
{
    rn_status busy = plugin_run_check_idle(&r->run, "profiling");
    if (busy != RN_OK)
        return busy;
    if (!plugin_plan_profiling(r->plan))
        return rn_set_error(RN_INVALID_ARG,
                            "profiling is off: compile with ENABLE_PROFILING=YES (or set it on "
                            "the compiled model) to read it");
    *info = r->profile;
    *count = (size_t)r->rs->spec->n_nodes + PLUGIN_STAGES;
    return RN_OK;
}

rn_profiling_info *plugin_request_profile_entries(plugin_request *r, size_t *count)
{
    if (!r->profiling || r->rs == NULL)
        return NULL;
    *count = (size_t)r->rs->spec->n_nodes + PLUGIN_STAGES;
    return r->profile;
}

const rn_request_ops plugin_generic_request_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .set_input = plugin_request_set_input,
    .set_output = plugin_request_set_output,
    .infer = plugin_request_infer,
    .get_output = plugin_request_get_output,
    .profiling = plugin_request_profiling,
    .start_async = plugin_request_start_async,
    .wait = plugin_run_op_wait,
    .wait_for = plugin_run_op_wait_for,
    .cancel = plugin_request_cancel,
    .set_callback = plugin_run_op_set_callback,
    .busy = plugin_run_op_busy,
    .set_remote_input = plugin_request_set_remote_input,
    .set_remote_output = plugin_request_set_remote_output,
    .free = plugin_request_free,
};
