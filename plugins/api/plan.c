/* The compiled plan: its base spec, the shape cache, and what the compiled
 * model reports (properties, pipeline, runtime model, trace). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/log.h"
#include "plugins/api/plan_internal.h"
#include "plugins/api/properties.h"

size_t plugin_tensor_nbytes(rn_element_type type, size_t count)
{
    if (type == RN_STRING)
        return count * sizeof(char *);
    return count * rn_element_type_size(type);
}

void plugin_plan_free(plugin_plan *plan)
{
    if (plan == NULL)
        return;
    pthread_mutex_lock(&plan->cache_lock);
    plan_spec *s = plan->cache_head;
    plan->cache_head = NULL;
    pthread_mutex_unlock(&plan->cache_lock);
    while (s != NULL) {
        plan_spec *next = s->lru_next;
        plan_spec_release(s);
        s = next;
    }
    plan_spec_release(plan->base); /* frees plan->g */
    executors_release(plan->pool);
    free(plan->capture_ids);
    free(plan->outer_values);
    free(plan->runtime_nodes);
    plan_branch_trace_free(plan->branch_trace);
    pthread_mutex_destroy(&plan->runtime_lock);
    pthread_mutex_destroy(&plan->cache_lock);
    free(plan);
}

static plugin_plan *plan_new(const plugin_kernel_registry *registry)
{
    plugin_plan *plan = calloc(1, sizeof *plan);
    if (plan == NULL)
        return NULL;
    pthread_mutex_init(&plan->runtime_lock, NULL);
    pthread_mutex_init(&plan->cache_lock, NULL);
    plan->registry = registry;
    return plan;
}

/* Builds the base spec of the plan's own graph (taken over). */
static rn_status build_base(plugin_plan *plan, graph *g)
{
    plan->g = g;
    rn_status st = plan_spec_build(plan, g, &plan->base);
    if (st != RN_OK) {
        plan->g = NULL; /* freed by plan_spec_build */
        return st;
    }
    plan->dynamic_inputs = plugin_graph_has_dynamic_inputs(g);
    return RN_OK;
}

bool plugin_graph_has_dynamic_inputs(const graph *g)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i]->kind == GRAPH_KIND_TENSOR && !graph_shape_is_static(&g->inputs[i]->shape))
            return true;
    return false;
}

rn_status plugin_plan_build(const graph *model, const plugin_kernel_registry *registry,
                            const plugin_plan_options *options, plugin_plan **out)
{
    graph *g = NULL;
    rn_status st = graph_clone(model, &g);
    return st == RN_OK ? plugin_plan_build_owned(g, registry, options, out) : st;
}

rn_status plugin_plan_build_owned(graph *g, const plugin_kernel_registry *registry,
                                  const plugin_plan_options *options, plugin_plan **out)
{
    plugin_plan *plan = plan_new(registry);
    if (plan == NULL) {
        graph_free(g);
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    }
    if (options != NULL)
        plan->options = *options;
    plugin_plan_options *o = &plan->options;
    atomic_init(&plan->profiling, o->profiling);
    atomic_init(&plan->log_level, o->log_level);
    plan->cache_capacity = o->shape_cache > 0 ? o->shape_cache : 8;
    rn_status st = RN_OK;
    if (o->n_stages < 0 || o->n_stages > PLUGIN_MAX_STAGES) {
        st = rn_set_error(RN_INVALID_ARG, "compile: %d device stages (at most %d)", o->n_stages,
                          PLUGIN_MAX_STAGES);
        goto fail;
    }
    if (o->n_streams == 0)
        o->n_streams = 1;
    if (o->threads_per_stream == 0) {
        uint32_t cpus = executors_cpu_count();
        o->threads_per_stream = cpus > o->n_streams ? cpus / o->n_streams : 1;
    }
    /* The process's host workers, not the device's: every plan-based device
     * (REF, CPU, GPU, NVIDIA, SLOWDEV; the dlopen'ed ones link libruntime.so
     * and so acquire from the same table) asking for this configuration
     * shares one pool, so that devices used together (HETERO, AUTO) do not
     * each start a worker per core. */
    executors_config ec = {
        .name = PLUGIN_HOST_WORKERS,
        .n_streams = o->n_streams,
        .threads_per_stream = o->threads_per_stream,
        .trace = o->trace,
    };
    if ((st = executors_acquire(&ec, &plan->pool)) != RN_OK)
        goto fail;
    if (o->trace && o->branch_threads > 1 &&
        (st = plan_branch_trace_new(&plan->branch_trace)) != RN_OK)
        goto fail;
    st = build_base(plan, g);
    g = NULL; /* the plan's (freed by build_base on failure) */
    if (st != RN_OK)
        goto fail;
    plan->n_pipeline = executors_pipeline_describe(plan->base->pipeline, plan->pipeline,
                                                   sizeof plan->pipeline / sizeof *plan->pipeline);
    const plan_spec *b = plan->base;
    plugin_log(o->log_level, PLUGIN_LOG_INFO, o->device,
               "compiled '%s': %d nodes (%d without run-time shape inference, %d views, %d in "
               "place, %d Concat inputs in place, %d layout conversions) in %d tasks, arena %zu "
               "bytes per request, %u streams x %u threads, %d device stages%s",
               plan->g->name, b->n_nodes, b->n_fast, b->n_views, b->n_inplace,
               b->n_concat_inputs_in_place, b->n_conversions, b->n_tasks, b->arena_bytes,
               o->n_streams, o->threads_per_stream, o->n_stages, o->profiling ? ", profiling" : "");
    *out = plan;
    return RN_OK;
fail:
    graph_free(g);
    plugin_plan_free(plan);
    return st;
}

/* Seeds the declared types of a nested plan's inputs from what the node
 * feeds them (the parts the body leaves unknown). */
static void seed_inputs(graph *g, const graph_port *inputs, int n_inputs)
{
    for (int i = 0; inputs != NULL && i < n_inputs && i < g->n_inputs; i++) {
        graph_value *v = g->inputs[i];
        const graph_port *p = &inputs[i];
        if (!p->present)
            continue;
        if (v->kind == GRAPH_KIND_TENSOR && p->kind != GRAPH_KIND_TENSOR)
            v->kind = p->kind;
        if (v->type == RN_UNDEFINED)
            v->type = p->type;
        if (v->shape.rank < 0) {
            v->shape = p->shape;
        } else if (p->shape.rank == v->shape.rank) {
            for (int d = 0; d < p->shape.rank; d++)
                if (v->shape.dims[d] < 0)
                    v->shape.dims[d] = p->shape.dims[d];
        }
    }
}

rn_status plugin_plan_build_nested(const graph *body, const plugin_kernel_registry *registry,
                                   const graph_port *inputs, int n_inputs, plugin_plan **out)
{
    plugin_plan *plan = plan_new(registry);
    if (plan == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    plan->nested = true;
    plan->options.n_streams = 1;
    plan->options.threads_per_stream = 1;
    graph_value **captures = NULL;
    graph *g = NULL;
    rn_status st = graph_clone(body, &g);
    if (st == RN_OK)
        st = graph_capture_outer(g, &plan->outer_values, &captures, &plan->n_captures);
    if (st == RN_OK && plan->n_captures > 0 &&
        (plan->capture_ids = calloc((size_t)plan->n_captures, sizeof(int))) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    for (int j = 0; st == RN_OK && j < plan->n_captures; j++)
        plan->capture_ids[j] = captures[j]->id;
    free(captures);
    if (st == RN_OK) {
        seed_inputs(g, inputs, n_inputs);
        st = build_base(plan, g); /* takes g over */
        g = NULL;
    }
    graph_free(g);
    if (st != RN_OK) {
        plugin_plan_free(plan);
        return st;
    }
    *out = plan;
    return RN_OK;
}

/* ---- the shape cache ---- */

static void lru_unlink(plugin_plan *plan, plan_spec *s)
{
    if (s->lru_prev != NULL)
        s->lru_prev->lru_next = s->lru_next;
    else
        plan->cache_head = s->lru_next;
    if (s->lru_next != NULL)
        s->lru_next->lru_prev = s->lru_prev;
    s->lru_prev = s->lru_next = NULL;
}

static void lru_push(plugin_plan *plan, plan_spec *s)
{
    s->lru_next = plan->cache_head;
    s->lru_prev = NULL;
    if (plan->cache_head != NULL)
        plan->cache_head->lru_prev = s;
    plan->cache_head = s;
}

rn_status plugin_graph_with_shapes(const graph *model, const graph_shape *shapes, graph **out)
{
    graph *g;
    rn_status st = graph_clone(model, &g);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < g->n_inputs; i++)
        g->inputs[i]->shape = shapes[i];
    /* Drop what inference wrote for the declared shapes. */
    for (int v = 0; v < g->n_values; v++) {
        graph_value *gv = g->values[v];
        if (gv->producer != NULL && gv->kind == GRAPH_KIND_TENSOR)
            gv->shape.rank = -1;
    }
    for (int r = 0; r < g->n_outputs; r++)
        if (g->outputs[r]->producer != NULL)
            g->outputs[r]->shape.rank = -1;
    *out = g;
    return RN_OK;
}

rn_status plugin_plan_spec_for(plugin_plan *plan, const graph_shape *shapes, plan_spec **out)
{
    if (!plan->dynamic_inputs || plan_spec_matches(plan->base, shapes)) {
        atomic_fetch_add(&plan->base->refs, 1);
        *out = plan->base;
        return RN_OK;
    }
    pthread_mutex_lock(&plan->cache_lock);
    for (plan_spec *s = plan->cache_head; s != NULL; s = s->lru_next)
        if (plan_spec_matches(s, shapes)) {
            lru_unlink(plan, s);
            lru_push(plan, s);
            atomic_fetch_add(&s->refs, 1);
            pthread_mutex_unlock(&plan->cache_lock);
            atomic_fetch_add(&plan->cache_hits, 1);
            *out = s;
            return RN_OK;
        }
    pthread_mutex_unlock(&plan->cache_lock);
    /* Build outside the lock: a clone of the model with these input shapes. */
    graph *g;
    rn_status st = plugin_graph_with_shapes(plan->g, shapes, &g);
    if (st != RN_OK)
        return st;
    const plugin_plan_options *o = &plan->options;
    if (o->specialize != NULL) {
        if ((st = graph_infer_shapes(g)) == RN_OK)
            st = o->specialize(o->specialize_ctx, g);
        if (st != RN_OK) {
            graph_free(g);
            return rn_wrap_error(st, "re-specialising for the inputs' shapes: ");
        }
    }
    plan_spec *s;
    if ((st = plan_spec_build(plan, g, &s)) != RN_OK)
        return rn_wrap_error(st, "re-specialising for the inputs' shapes: ");
    atomic_fetch_add(&plan->cache_builds, 1);
    plugin_log(atomic_load(&plan->log_level), PLUGIN_LOG_INFO, plan->options.device,
               "'%s': plan for new input shapes: %d nodes, %d fast, arena %zu bytes", plan->g->name,
               s->n_nodes, s->n_fast, s->arena_bytes);
    pthread_mutex_lock(&plan->cache_lock);
    atomic_fetch_add(&s->refs, 1); /* the cache's */
    lru_push(plan, s);
    if (++plan->cache_size > plan->cache_capacity) {
        plan_spec *last = plan->cache_head;
        while (last->lru_next != NULL)
            last = last->lru_next;
        lru_unlink(plan, last);
        plan->cache_size--;
        plan_spec_release(last); /* freed when its last request lets go */
    }
    pthread_mutex_unlock(&plan->cache_lock);
    *out = s;
    return RN_OK;
}

void plugin_plan_get_stats(plugin_plan *plan, plugin_plan_stats *out)
{
    const plan_spec *b = plan->base;
    *out = (plugin_plan_stats){
        .nodes = b->n_nodes,
        .fast_nodes = b->n_fast,
        .views = b->n_views,
        .inplace = b->n_inplace,
        .conversions = b->n_conversions,
        .tasks = b->n_tasks,
        .arena_bytes = b->arena_bytes,
        .shape_builds = atomic_load(&plan->cache_builds),
        .shape_hits = atomic_load(&plan->cache_hits),
    };
    pthread_mutex_lock(&plan->cache_lock);
    out->shape_cached = plan->cache_size;
    pthread_mutex_unlock(&plan->cache_lock);
}

/* ---- what the compiled model reports ---- */

int plugin_plan_capture_count(const plugin_plan *plan)
{
    return plan->n_captures;
}

const graph_value *plugin_plan_capture_source(const plugin_plan *plan, int i)
{
    return i >= 0 && i < plan->n_captures ? plan->outer_values[i] : NULL;
}

const graph *plugin_plan_graph(const plugin_plan *plan)
{
    return plan->g;
}

rn_status plugin_plan_converted_constants(const plugin_plan *plan, plugin_converted_fn fn,
                                          void *ctx)
{
    const plan_spec *b = plan->base;
    rn_status st = RN_OK;
    for (int i = 0; b != NULL && i < b->n_values && st == RN_OK; i++) {
        const plan_value *v = &b->values[i];
        if (v->storage == PLAN_CONST && v->owned_data != NULL)
            st = fn(ctx, &b->values[v->converted_from].desc, &v->desc);
    }
    return st;
}

const plugin_plan_options *plugin_plan_get_options(const plugin_plan *plan)
{
    return &plan->options;
}

const char *const plugin_plan_property_keys[] = {
    "NUM_STREAMS",      "INFERENCE_NUM_THREADS", "PLAN_ARENA_BYTES", "PLAN_FAST_NODES",
    "PLAN_CONVERSIONS", "SHAPE_CACHE_BUILDS",    "SHAPE_CACHE_HITS", NULL,
};

rn_status plugin_plan_get_property(const plugin_plan *plan, const char *key, char *buf, size_t size)
{
    const plugin_plan_options *o = &plan->options;
    const plan_spec *b = plan->base;
    char tmp[32];
    if (strcmp(key, "NUM_STREAMS") == 0)
        snprintf(tmp, sizeof tmp, "%u", o->n_streams);
    else if (strcmp(key, "INFERENCE_NUM_THREADS") == 0)
        snprintf(tmp, sizeof tmp, "%u",
                 o->n_streams * (o->compute_threads_per_stream ? o->compute_threads_per_stream
                                                               : o->threads_per_stream));
    else if (strcmp(key, "PLAN_ARENA_BYTES") == 0)
        snprintf(tmp, sizeof tmp, "%zu", b->arena_bytes);
    else if (strcmp(key, "PLAN_FAST_NODES") == 0)
        snprintf(tmp, sizeof tmp, "%d", b->n_fast);
    else if (strcmp(key, "PLAN_CONVERSIONS") == 0)
        snprintf(tmp, sizeof tmp, "%d", b->n_conversions);
    else if (strcmp(key, "SHAPE_CACHE_BUILDS") == 0)
        snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)atomic_load(&plan->cache_builds));
    else if (strcmp(key, "SHAPE_CACHE_HITS") == 0)
        snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)atomic_load(&plan->cache_hits));
    else
        return RN_NOT_FOUND;
    return plugin_property_string(key, tmp, buf, size);
}

void plugin_plan_set_log_level(plugin_plan *plan, int level)
{
    atomic_store(&plan->log_level, level);
}

void plugin_plan_set_profiling(plugin_plan *plan, bool on)
{
    atomic_store(&plan->profiling, on);
}

bool plugin_plan_profiling(const plugin_plan *plan)
{
    return atomic_load(&plan->profiling);
}

rn_status plugin_plan_pipeline(const plugin_plan *plan, const rn_pipeline_stage **stages,
                               size_t *count)
{
    *stages = plan->pipeline;
    *count = plan->n_pipeline;
    return RN_OK;
}

rn_status plugin_plan_write_trace(const plugin_plan *plan, const char *path)
{
    if (!plan->options.trace)
        return rn_set_error(RN_INVALID_ARG,
                            "tracing is off: compile with ENABLE_TRACE=YES to write a trace");
    int rc = sched_trace_write_json(executors_sched(plan->pool), path);
    if (rc != 0)
        return rn_set_error(RN_IO_ERROR, "trace '%s': cannot write (error %d)", path, rc);
    return plan_branch_trace_append(plan->branch_trace, path, plugin_plan_trace_origin_ns(plan));
}

uint64_t plugin_plan_trace_origin_ns(const plugin_plan *plan)
{
    return plan->options.trace ? sched_trace_origin_ns(executors_sched(plan->pool)) : 0;
}

/* "nChw16c,plain" for the runtime model. */
static char *layouts_of(const plan_spec *s, const int *ids, int n)
{
    size_t len = 1;
    for (int k = 0; k < n; k++) {
        const rn_layout *l = ids[k] >= 0 ? s->values[ids[k]].desc.layout : NULL;
        len += strlen(l != NULL && l->name != NULL ? l->name : "plain") + 1;
    }
    char *out = malloc(len);
    if (out == NULL)
        return NULL;
    out[0] = '\0';
    for (int k = 0; k < n; k++) {
        const rn_layout *l = ids[k] >= 0 ? s->values[ids[k]].desc.layout : NULL;
        if (k)
            strcat(out, ",");
        strcat(out, l != NULL && l->name != NULL ? l->name : "plain");
    }
    return out;
}

rn_status plugin_plan_runtime_model(plugin_plan *plan, const rn_runtime_node **nodes, size_t *count)
{
    plan_spec *s = plan->base;
    pthread_mutex_lock(&plan->runtime_lock);
    if (plan->runtime_nodes == NULL) {
        plan->runtime_nodes = calloc((size_t)s->n_nodes + 1, sizeof *plan->runtime_nodes);
        for (int i = 0; plan->runtime_nodes != NULL && i < s->n_nodes; i++) {
            plan_node *n = &s->nodes[i];
            if (n->in_layouts == NULL)
                n->in_layouts = layouts_of(s, n->in, n->n_in);
            if (n->out_layouts == NULL)
                n->out_layouts = layouts_of(s, n->out, n->n_out);
        }
    }
    if (plan->runtime_nodes == NULL) {
        pthread_mutex_unlock(&plan->runtime_lock);
        return rn_set_error(RN_OUT_OF_MEMORY, "runtime model: out of memory");
    }
    for (int i = 0; i < s->n_nodes; i++) {
        const plan_node *n = &s->nodes[i];
        rn_runtime_node *rt = &plan->runtime_nodes[i];
        rt->name = n->name;
        rt->layer_type = n->type;
        rt->execution_order = i;
        rt->impl_type = n->impl;
        rt->perf_counter_us = s->last_us[i];
        rt->original_names = n->original_names;
        rt->input_layouts = n->in_layouts != NULL ? n->in_layouts : "";
        rt->output_layouts = n->out_layouts != NULL ? n->out_layouts : "";
        rt->fallback = n->fallback;
    }
    pthread_mutex_unlock(&plan->runtime_lock);
    *nodes = plan->runtime_nodes;
    *count = (size_t)s->n_nodes;
    return RN_OK;
}
