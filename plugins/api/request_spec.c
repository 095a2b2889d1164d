/* An infer request and its memory: creating and freeing it, and its state
 * per spec (arena, value slots, prebuilt kernel arguments, DAG instances):
 * the base spec's, made with the request, and, when a run of a model with
 * dynamic inputs brings shapes the request has no state for, the state for
 * the plan's spec of those shapes (up to REQUEST_SPECS, least recently used
 * first out). What a run passes through is request.c's. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/pages.h"
#include "plugins/api/plan_internal.h"

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
    plan_branch_state_free(rs->branch);
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
    if (spec->branches != NULL &&
        (st = plan_branch_state_new(spec->branches, &rs->branch)) != RN_OK)
        goto fail;
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
        rs->arena_buffer = plugin_pages_alloc(bytes);
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

/* ---- create / free ---- */

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
    plugin_request_profile_init(r);
    *out = r;
    return RN_OK;
}
