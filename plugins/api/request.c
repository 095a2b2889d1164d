/* The infer request: bindings, its state per spec (arena, prebuilt kernel
 * arguments, DAG instances), sync and async runs, results. */
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

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
}

/* ---- the request's state for one spec ---- */

static void request_spec_free(request_spec *rs, const rn_allocator *alloc)
{
    if (rs == NULL)
        return;
    plugin_run_instances_free(&rs->instances);
    plugin_run_instances_free(&rs->direct_instances);
    const plan_spec *s = rs->spec;
    for (int v = 0; rs->slots != NULL && v < s->n_values; v++)
        if (rs->slots[v].owned)
            graph_tensor_release(&rs->slots[v].t);
    if (rs->arena_buffer != NULL) {
        if (alloc != NULL)
            alloc->free(alloc->ctx, rs->arena_buffer);
        else
            free(rs->arena_buffer);
    }
    free(rs->host_arena);
    free(rs->slots);
    free(rs->remaining);
    free(rs->io);
    free(rs->ports);
    free(rs->args);
    free(rs->refresh_io);
    free(rs->refresh_value);
    free(rs->zc_node);
    free(rs->zo_node);
    free(rs->skip_node);
    plan_spec_release(rs->spec);
    free(rs);
}

/* The descriptor of static value v in this request's memory. */
static void static_desc(const request_spec *rs, int v, graph_tensor *t)
{
    const plan_spec *s = rs->spec;
    const plan_value *pv = &s->values[v];
    const plan_value *root = &s->values[pv->root];
    *t = pv->desc;
    if (root->storage == PLAN_CONST) {
        t->data = root->desc.data;
    } else if (root->storage == PLAN_ARENA) {
        if (root->host) {
            t->data = rs->host_arena + pv->offset;
        } else if (rs->arena != NULL) {
            t->data = rs->arena + pv->offset;
        } else {
            t->data = NULL;
            t->buffer = rs->arena_buffer;
            t->offset = pv->offset;
        }
    }
}

/* Whether exec node n is the upload of a model input to a device layout
 * whose output nothing aliases: a run may skip it and read the input's
 * device memory instead (request_spec.zc_node). */
static bool skippable_upload(const plan_spec *spec, const plan_node *n)
{
    if (n->kind != PLAN_NODE_CONVERT || n->to == NULL || n->in[0] < 0 || n->out[0] < 0)
        return false;
    int src = n->in[0], cv = n->out[0];
    const plan_value *s = &spec->values[src], *c = &spec->values[cv];
    if (s->storage != PLAN_INPUT || s->root != src || c->storage != PLAN_ARENA || c->root != cv)
        return false;
    for (int v = 0; v < spec->n_values; v++)
        if (v != cv && spec->values[v].root == cv)
            return false;
    return true;
}

/* Whether exec node n is the download of a result from a device layout
 * whose source the producer may as well write into the caller's device
 * memory: an arena value nothing aliases, that only n reads and that is no
 * result itself (request_spec.zo_node). */
static bool skippable_download(const plan_spec *spec, const plan_node *n)
{
    if (n->kind != PLAN_NODE_CONVERT || n->to != NULL || n->from == NULL || n->in[0] < 0 ||
        n->out[0] < 0)
        return false;
    int src = n->in[0], res = n->out[0];
    const plan_value *s = &spec->values[src], *d = &spec->values[res];
    if (s->storage != PLAN_ARENA || s->root != src || s->n_readers != 1 || s->result >= 0 ||
        d->storage != PLAN_ARENA || d->root != res || d->result < 0)
        return false;
    for (int v = 0; v < spec->n_values; v++)
        if (v != src && v != res && (spec->values[v].root == src || spec->values[v].root == res))
            return false;
    return true;
}

static rn_status request_spec_create(plugin_request *r, plan_spec *spec, request_spec **out)
{
    const plugin_plan *plan = r->plan;
    const rn_allocator *alloc = plan->options.allocator;
    request_spec *rs = calloc(1, sizeof *rs);
    if (rs == NULL) {
        plan_spec_release(spec);
        return oom();
    }
    rs->spec = spec; /* the caller's reference passes to rs */
    int nv = spec->n_values, nn = spec->n_nodes;
    rs->slots = calloc((size_t)nv + 1, sizeof *rs->slots);
    rs->remaining = calloc((size_t)nv + 1, sizeof *rs->remaining);
    rs->io = calloc((size_t)spec->io_total + 1, sizeof *rs->io);
    rs->ports = calloc((size_t)spec->io_total + 1, sizeof *rs->ports);
    rs->args = calloc((size_t)nn + 1, sizeof *rs->args);
    rs->refresh_io = calloc((size_t)spec->io_total + 1, sizeof *rs->refresh_io);
    rs->refresh_value = calloc((size_t)spec->io_total + 1, sizeof *rs->refresh_value);
    rs->zc_node = calloc((size_t)nn + 1, sizeof *rs->zc_node);
    rs->zo_node = calloc((size_t)nn + 1, sizeof *rs->zo_node);
    rs->skip_node = calloc((size_t)nn + 1, sizeof *rs->skip_node);
    rn_status st = RN_OK;
    if (!rs->slots || !rs->remaining || !rs->io || !rs->ports || !rs->args || !rs->refresh_io ||
        !rs->refresh_value || !rs->zc_node || !rs->zo_node || !rs->skip_node) {
        st = oom();
        goto fail;
    }
    size_t bytes = spec->arena_bytes ? spec->arena_bytes : 64;
    if (alloc != NULL) {
        if ((st = alloc->alloc(alloc->ctx, bytes, 64, &rs->arena_buffer)) != RN_OK)
            goto fail;
        if (alloc->host)
            rs->arena = rs->arena_buffer;
        else if (spec->host_bytes > 0 &&
                 (rs->host_arena = aligned_alloc(64, spec->host_bytes)) == NULL) {
            st = rn_set_error(RN_OUT_OF_MEMORY,
                              "infer request: cannot allocate its %zu bytes of results",
                              spec->host_bytes);
            goto fail;
        }
    } else {
        rs->arena_buffer = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (rs->arena_buffer == NULL) {
            st = rn_set_error(RN_OUT_OF_MEMORY, "infer request: cannot allocate its %zu-byte arena",
                              bytes);
            goto fail;
        }
        rs->arena = rs->arena_buffer;
    }
    /* Slots of static values hold their descriptors for good. */
    for (int v = 0; v < nv; v++) {
        const plan_value *pv = &spec->values[v];
        plan_storage root = spec->values[pv->root].storage;
        if (root == PLAN_CONST || root == PLAN_ARENA) {
            static_desc(rs, v, &rs->slots[v].t);
            rs->slots[v].has_value = true;
        } else if (root == PLAN_INPUT) {
            rs->slots[v].t = pv->desc; /* data bound per run */
        }
    }
    /* Uploads a remote input may replace (device arenas only). */
    for (int i = 0; rs->arena == NULL && i < nn; i++)
        if (skippable_upload(spec, &spec->nodes[i]))
            rs->zc_node[rs->n_zc++] = i;
        else if (skippable_download(spec, &spec->nodes[i]))
            rs->zo_node[rs->n_zo++] = i;
    /* Prebuilt arguments. */
    for (int i = 0; i < nn; i++) {
        const plan_node *n = &spec->nodes[i];
        graph_tensor *in = rs->io + n->io, *outs = in + n->n_in, *impl = outs + n->n_out;
        for (int k = 0; k < n->n_in + n->n_out; k++) {
            int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
            if (v < 0)
                continue;
            in[k] = rs->slots[v].t;
            const plan_value *pv = &spec->values[v];
            bool follows =
                spec->values[pv->root].storage == PLAN_INPUT || spec->values[pv->root].result >= 0;
            for (int z = 0; z < rs->n_zc && !follows; z++)
                follows = spec->nodes[rs->zc_node[z]].out[0] == v;
            for (int z = 0; z < rs->n_zo && !follows; z++)
                follows = spec->nodes[rs->zo_node[z]].in[0] == v;
            if (n->fast && follows) {
                rs->refresh_io[rs->n_refresh] = n->io + k;
                rs->refresh_value[rs->n_refresh++] = v;
            }
        }
        rs->args[i] = (plugin_kernel_args){
            .node = n->node,
            .inputs = in,
            .n_inputs = n->n_in,
            .outputs = outs,
            .n_outputs = n->n_out,
            .state = n->state,
            .alloc_output = plugin_alloc_output,
            .alloc_ctx = r,
            .move_output = plugin_move_output,
            .implicit = n->n_implicit > 0 ? impl : NULL,
            .n_implicit = n->n_implicit,
            .cancel = plugin_run_cancel_flag(&r->run),
        };
        if (n->scratch >= 0)
            static_desc(rs, n->scratch, &rs->args[i].scratch);
    }
    if (!plan->nested &&
        ((st = plugin_run_instances_create(spec->pipeline, r, &rs->instances)) != RN_OK ||
         (st = plugin_run_instances_create(spec->pipeline_direct, r, &rs->direct_instances)) !=
             RN_OK))
        goto fail;
    *out = rs;
    return RN_OK;
fail:
    request_spec_free(rs, alloc);
    return st;
}

rn_status plugin_request_use_spec(plugin_request *r, plan_spec *spec)
{
    int free_slot = -1, oldest = -1;
    for (int k = 0; k < REQUEST_SPECS; k++) {
        request_spec *rs = r->specs[k];
        if (rs == NULL) {
            if (free_slot < 0)
                free_slot = k;
            continue;
        }
        if (rs->spec == spec) {
            plan_spec_release(spec); /* rs holds its own reference */
            rs->last_used = ++r->use_clock;
            r->rs = rs;
            return RN_OK;
        }
        if (rs != r->rs && (oldest < 0 || rs->last_used < r->specs[oldest]->last_used))
            oldest = k;
    }
    if (free_slot < 0) {
        if (oldest < 0) {
            plan_spec_release(spec);
            return rn_set_error(RN_INTERNAL, "infer request: no room for another plan");
        }
        request_spec_free(r->specs[oldest], r->plan->options.allocator);
        r->specs[oldest] = NULL;
        free_slot = oldest;
    }
    request_spec *rs = NULL;
    rn_status st = request_spec_create(r, spec, &rs);
    if (st != RN_OK)
        return st;
    size_t need = (size_t)spec->n_nodes + PLUGIN_STAGES;
    if (need > r->profile_cap) {
        rn_profiling_info *p = realloc(r->profile, need * sizeof *p);
        if (p == NULL) {
            request_spec_free(rs, r->plan->options.allocator);
            return oom();
        }
        r->profile = p;
        r->profile_cap = need;
    }
    rs->last_used = ++r->use_clock;
    r->specs[free_slot] = rs;
    r->rs = rs;
    return RN_OK;
}

/* Profiling entries: the stages, then the spec's exec nodes. */
static void profile_template(plugin_request *r)
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

/* ---- create / free / bind ---- */

void plugin_request_free(plugin_request *r)
{
    if (r == NULL)
        return;
    plugin_run_destroy(&r->run); /* waits for a run in flight */
    for (int k = 0; k < REQUEST_SPECS; k++)
        request_spec_free(r->specs[k], r->plan->options.allocator);
    free(r->inputs);
    free(r->input_bound);
    free(r->user_out);
    free(r->remote_in);
    free(r->remote_out);
    free(r->shapes);
    free(r->profile);
    free(r);
}

rn_status plugin_request_create(const plugin_plan *plan, rn_infer_request *owner,
                                plugin_request **out)
{
    const graph *g = plan->g;
    plugin_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return oom();
    r->plan = plan;
    plugin_run_init(&r->run, owner);
    r->inputs = calloc((size_t)g->n_inputs + 1, sizeof *r->inputs);
    r->input_bound = calloc((size_t)g->n_inputs + 1, sizeof *r->input_bound);
    r->user_out = calloc((size_t)g->n_outputs + 1, sizeof *r->user_out);
    r->remote_in = calloc((size_t)g->n_inputs + 1, sizeof *r->remote_in);
    r->remote_out = calloc((size_t)g->n_outputs + 1, sizeof *r->remote_out);
    r->shapes = calloc((size_t)g->n_inputs + 1, sizeof *r->shapes);
    if (!r->inputs || !r->input_bound || !r->user_out || !r->remote_in || !r->remote_out ||
        !r->shapes) {
        plugin_request_free(r);
        return oom();
    }
    atomic_fetch_add(&plan->base->refs, 1);
    rn_status st = plugin_request_use_spec(r, plan->base);
    if (st != RN_OK) {
        plugin_request_free(r);
        return st;
    }
    profile_template(r);
    *out = r;
    return RN_OK;
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
        if (spec == NULL) {
            rn_status st = plugin_plan_spec_for((plugin_plan *)plan, r->shapes, &spec);
            if (st == RN_OK)
                st = plugin_request_use_spec(r, spec);
            if (st != RN_OK)
                return st;
        }
        profile_template(r);
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
