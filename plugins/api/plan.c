/* The generic plan: kernel choice, liveness and the lowering to a task DAG. */
#include <errno.h>
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
    if (plan->g != NULL && plan->kernels != NULL) {
        for (int i = 0; i < plan->g->n_nodes; i++)
            if (plan->kernels[i] != NULL && plan->kernels[i]->release != NULL)
                plan->kernels[i]->release(plan->states[i]);
    }
    sched_dag_free(plan->dag);
    executors_release(plan->pool);
    free(plan->kernels);
    free(plan->states);
    free(plan->consumers);
    if (plan->implicit != NULL && plan->g != NULL)
        for (int i = 0; i < plan->g->n_nodes; i++)
            free(plan->implicit[i]);
    free(plan->implicit);
    free(plan->n_implicit);
    free(plan->has_subgraphs);
    free(plan->capture_ids);
    free(plan->outer_values);
    free(plan->io_offset);
    free(plan->profile_template);
    free((void *)plan->last_us);
    free(plan->runtime_nodes);
    if (plan->original_names != NULL && plan->g != NULL)
        for (int i = 0; i < plan->g->n_nodes; i++)
            free(plan->original_names[i]);
    free(plan->original_names);
    pthread_mutex_destroy(&plan->runtime_lock);
    graph_free(plan->g);
    free(plan);
}

/* Joins a node's fused (original) names with commas into *out. */
static rn_status join_names(const graph_node *node, char **out)
{
    size_t len = 1;
    for (int k = 0; k < node->n_fused; k++)
        len += strlen(node->fused_names[k]) + 1;
    char *s = malloc(len);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    s[0] = '\0';
    for (int k = 0; k < node->n_fused; k++) {
        if (k)
            strcat(s, ",");
        strcat(s, node->fused_names[k]);
    }
    *out = s;
    return RN_OK;
}

rn_status plugin_plan_runtime_model(plugin_plan *plan, const rn_runtime_node **nodes, size_t *count)
{
    pthread_mutex_lock(&plan->runtime_lock);
    for (int i = 0; i < plan->g->n_nodes; i++) {
        const graph_node *node = plan->g->nodes[i];
        rn_runtime_node *rt = &plan->runtime_nodes[i];
        rt->name = node->name;
        rt->layer_type = node->op_type;
        rt->execution_order = i;
        rt->impl_type = plan->profile_template[PLUGIN_STAGES + i].exec_type;
        rt->perf_counter_us = plan->last_us[i];
        rt->original_names = plan->original_names[i];
    }
    pthread_mutex_unlock(&plan->runtime_lock);
    *nodes = plan->runtime_nodes;
    *count = (size_t)plan->g->n_nodes;
    return RN_OK;
}

/* Lowers the graph to the task DAG (task functions live in request.c):
 * preprocess → device stages before the kernels → kernels (edges from data
 * dependencies) → device stages after the kernels → postprocess → callback
 * (on the callback executor). */
static rn_status build_dag(plugin_plan *plan)
{
    const graph *g = plan->g;
    int n = g->n_nodes;
    const plugin_plan_options *o = &plan->options;
    sched_dag_builder *b;
    if (sched_dag_builder_create(&b) != 0)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory building the task DAG");
    int rc = sched_dag_add_node(b, "preprocess", plugin_task_preprocess, NULL,
                                SCHED_EXECUTOR_STREAM, NULL);
    for (int i = 0; i < n && rc == 0; i++)
        rc = sched_dag_add_node(b, g->nodes[i]->name, plugin_task_kernel, (void *)(intptr_t)i,
                                SCHED_EXECUTOR_STREAM, NULL);
    if (rc == 0)
        rc = sched_dag_add_node(b, "postprocess", plugin_task_postprocess, NULL,
                                SCHED_EXECUTOR_STREAM, NULL);
    if (rc == 0)
        rc = sched_dag_add_node(b, "callback", plugin_task_callback, NULL,
                                executors_callback_id(plan->pool), NULL);
    for (int k = 0; k < o->n_stages && rc == 0; k++)
        rc = sched_dag_add_node(b, o->stages[k].name, plugin_task_stage, (void *)(intptr_t)k,
                                o->stages[k].executor == PLUGIN_STAGE_ON_DEVICE_WAIT
                                    ? executors_wait_id(plan->pool)
                                    : SCHED_EXECUTOR_STREAM,
                                NULL);
    uint32_t post = (uint32_t)n + 1, cb = (uint32_t)n + 2;
    /* The chain ends around the kernels: `head` precedes every kernel without
     * predecessors, every kernel precedes `tail`'s chain. */
    uint32_t head = 0;
    for (int k = 0; k < o->n_stages && rc == 0; k++)
        if (!o->stages[k].after_kernels) {
            rc = sched_dag_add_edge(b, head, (uint32_t)(n + 3 + k));
            head = (uint32_t)(n + 3 + k);
        }
    uint32_t first_after = post, prev = UINT32_MAX;
    for (int k = 0; k < o->n_stages && rc == 0; k++)
        if (o->stages[k].after_kernels) {
            uint32_t id = (uint32_t)(n + 3 + k);
            if (prev == UINT32_MAX)
                first_after = id;
            else
                rc = sched_dag_add_edge(b, prev, id);
            prev = id;
        }
    if (rc == 0 && prev != UINT32_MAX)
        rc = sched_dag_add_edge(b, prev, post);
    for (int i = 0; i < n && rc == 0; i++) {
        const graph_node *node = g->nodes[i];
        bool has_pred = false;
        /* Edges from the producers of the node's inputs, explicit and
         * implicit (what its subgraphs read); the builder tolerates a
         * repeated edge. */
        for (int k = 0; k < node->n_inputs + plan->n_implicit[i] && rc == 0; k++) {
            const graph_value *v = k < node->n_inputs
                                       ? node->inputs[k]
                                       : g->values[plan->implicit[i][k - node->n_inputs]];
            if (v != NULL && v->producer != NULL && v->producer->id < n &&
                g->nodes[v->producer->id] == v->producer) {
                rc = sched_dag_add_edge(b, (uint32_t)v->producer->id + 1, (uint32_t)i + 1);
                has_pred = true;
            }
        }
        if (rc == 0 && !has_pred)
            rc = sched_dag_add_edge(b, head, (uint32_t)i + 1);
        /* Every kernel precedes the stages after it: results must be complete
         * and intermediate buffers released before the run is declared done. */
        if (rc == 0)
            rc = sched_dag_add_edge(b, (uint32_t)i + 1, first_after);
    }
    if (rc == 0)
        rc = sched_dag_add_edge(b, head, first_after);
    if (rc == 0)
        rc = sched_dag_add_edge(b, post, cb);
    if (rc == 0)
        rc = sched_dag_build(b, &plan->dag);
    sched_dag_builder_free(b);
    if (rc != 0)
        return rn_set_error(rc == -ENOMEM ? RN_OUT_OF_MEMORY : RN_INTERNAL,
                            "compile: cannot build the task DAG (error %d)", rc);
    return RN_OK;
}

/* Records, per node, the values of g its subgraphs read (implicit inputs). */
static rn_status find_implicit(plugin_plan *plan)
{
    const graph *g = plan->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *node = g->nodes[i];
        for (int a = 0; a < node->n_attrs; a++)
            if (node->attrs[a].g != NULL || node->attrs[a].graphs != NULL)
                plan->has_subgraphs[i] = true;
        if (!plan->has_subgraphs[i])
            continue;
        graph_value **vals = NULL;
        int nv = 0;
        rn_status st = graph_node_outer_inputs(node, &vals, &nv);
        if (st != RN_OK)
            return st;
        plan->implicit[i] = calloc((size_t)nv + 1, sizeof(int));
        if (plan->implicit[i] == NULL) {
            free(vals);
            return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
        }
        for (int k = 0; k < nv; k++) {
            const graph_value *v = vals[k];
            if (!(v->id < g->n_values && g->values[v->id] == v)) {
                free(vals);
                return rn_set_error(RN_INVALID_ARG,
                                    "node '%s' (%s): a subgraph reads '%s', which no enclosing "
                                    "graph defines",
                                    node->name, node->op_type, v->name);
            }
            plan->implicit[i][k] = v->id;
        }
        plan->n_implicit[i] = nv;
        free(vals);
    }
    return RN_OK;
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

/* The compile steps shared by top-level and nested plans: g (the plan's own
 * graph) is sorted and inferred, a kernel is picked and prepared per node,
 * liveness and scratch are laid out. */
static rn_status build_common(plugin_plan *plan)
{
    graph *g = plan->g;
    rn_status st;
    if ((st = graph_sort(g)) != RN_OK || (st = graph_infer_shapes(g)) != RN_OK)
        return st;
    int n = g->n_nodes;
    plan->kernels = calloc((size_t)n + 1, sizeof *plan->kernels);
    plan->states = calloc((size_t)n + 1, sizeof *plan->states);
    plan->consumers = calloc((size_t)g->n_values + 1, sizeof *plan->consumers);
    plan->implicit = calloc((size_t)n + 1, sizeof *plan->implicit);
    plan->n_implicit = calloc((size_t)n + 1, sizeof *plan->n_implicit);
    plan->has_subgraphs = calloc((size_t)n + 1, sizeof *plan->has_subgraphs);
    plan->io_offset = calloc((size_t)n + 1, sizeof *plan->io_offset);
    plan->profile_template = calloc((size_t)n + PLUGIN_STAGES, sizeof *plan->profile_template);
    plan->last_us = calloc((size_t)n + 1, sizeof *plan->last_us);
    plan->runtime_nodes = calloc((size_t)n + 1, sizeof *plan->runtime_nodes);
    plan->original_names = calloc((size_t)n + 1, sizeof *plan->original_names);
    if (!plan->kernels || !plan->states || !plan->consumers || !plan->implicit ||
        !plan->n_implicit || !plan->has_subgraphs || !plan->io_offset || !plan->profile_template ||
        !plan->last_us || !plan->runtime_nodes || !plan->original_names)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    if ((st = find_implicit(plan)) != RN_OK)
        return st;
    plugin_kernel_ctx kctx = {.registry = plan->registry};
    for (int i = 0; i < n; i++) {
        graph_node *node = g->nodes[i];
        if ((st = plugin_kernel_registry_pick(plan->registry, node, &plan->kernels[i])) != RN_OK)
            return st;
        const plugin_kernel *k = plan->kernels[i];
        if (k->prepare_ctx != NULL)
            st = k->prepare_ctx(node, &kctx, &plan->states[i]);
        else if (k->prepare != NULL)
            st = k->prepare(node, &plan->states[i]);
        if (st != RN_OK) {
            plan->kernels[i] = NULL; /* nothing to release */
            return st;
        }
        plan->last_us[i] = -1;
        if ((st = join_names(node, &plan->original_names[i])) != RN_OK)
            return st;
        rn_profiling_info *p = &plan->profile_template[PLUGIN_STAGES + i];
        p->node_name = node->name;
        p->node_type = node->op_type;
        p->exec_type = k->impl_type ? k->impl_type : "unknown";
        p->status = RN_NODE_NOT_RUN;
        plan->io_offset[i] = plan->io_total;
        plan->io_total += node->n_inputs + node->n_outputs + plan->n_implicit[i];
    }
    plan->io_offset[n] = plan->io_total;
    static const char *const stage_names[PLUGIN_STAGES] = {
        "input preprocessing", "transfer to device", "execution", "transfer from device",
        "output postprocessing"};
    for (int k = 0; k < PLUGIN_STAGES; k++) {
        rn_profiling_info *p = &plan->profile_template[k];
        p->node_name = stage_names[k];
        p->node_type = "Stage";
        p->exec_type = "stage";
        p->status = RN_NODE_NOT_RUN;
    }
    /* Liveness: a produced value is freed when its consumers are done (the
     * nodes that read it, and those whose subgraphs read it); results are
     * pinned (one extra reference that no node drops). */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            if (g->nodes[i]->inputs[k] != NULL)
                plan->consumers[g->nodes[i]->inputs[k]->id]++;
        for (int k = 0; k < plan->n_implicit[i]; k++)
            plan->consumers[plan->implicit[i][k]]++;
    }
    for (int r = 0; r < g->n_outputs; r++)
        plan->consumers[g->outputs[r]->id]++;
    return RN_OK;
}

/* The pipeline the DAG implements, in order (see plugin_plan_pipeline). */
static void describe_pipeline(plugin_plan *plan)
{
    const plugin_plan_options *o = &plan->options;
    rn_pipeline_stage *p = plan->pipeline;
    size_t n = 0;
    p[n++] = (rn_pipeline_stage){"preprocess", "stream"};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            p[n++] = (rn_pipeline_stage){"infer", "stream"};
        for (int k = 0; k < o->n_stages; k++)
            if (o->stages[k].after_kernels == (pass == 1))
                p[n++] = (rn_pipeline_stage){o->stages[k].name,
                                             o->stages[k].executor == PLUGIN_STAGE_ON_DEVICE_WAIT
                                                 ? "device-wait"
                                                 : "stream"};
    }
    p[n++] = (rn_pipeline_stage){"postprocess", "stream"};
    p[n++] = (rn_pipeline_stage){"callback", "callback"};
    plan->n_pipeline = n;
}

rn_status plugin_plan_build(const graph *model, const plugin_kernel_registry *registry,
                            const plugin_plan_options *options, plugin_plan **out)
{
    plugin_plan *plan = calloc(1, sizeof *plan);
    if (plan == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    pthread_mutex_init(&plan->runtime_lock, NULL);
    plan->registry = registry;
    if (options != NULL)
        plan->options = *options;
    atomic_init(&plan->profiling, plan->options.profiling);
    atomic_init(&plan->log_level, plan->options.log_level);
    rn_status st = RN_OK;
    if (plan->options.n_stages < 0 || plan->options.n_stages > PLUGIN_MAX_STAGES) {
        st = rn_set_error(RN_INVALID_ARG, "compile: %d device stages (at most %d)",
                          plan->options.n_stages, PLUGIN_MAX_STAGES);
        goto fail;
    }
    describe_pipeline(plan);
    if ((st = graph_clone(model, &plan->g)) != RN_OK || (st = build_common(plan)) != RN_OK)
        goto fail;
    if (plan->options.n_streams == 0)
        plan->options.n_streams = 1;
    if (plan->options.threads_per_stream == 0) {
        uint32_t cpus = executors_cpu_count();
        plan->options.threads_per_stream =
            cpus > plan->options.n_streams ? cpus / plan->options.n_streams : 1;
    }
    executors_config ec = {
        .name = plan->options.device,
        .n_streams = plan->options.n_streams,
        .threads_per_stream = plan->options.threads_per_stream,
        .trace = plan->options.trace,
    };
    if ((st = executors_acquire(&ec, &plan->pool)) != RN_OK)
        goto fail;
    if ((st = build_dag(plan)) != RN_OK)
        goto fail;
    plugin_log(plan->options.log_level, PLUGIN_LOG_INFO, plan->options.device,
               "compiled '%s': %d nodes, %u streams x %u threads, %d device stages%s",
               plan->g->name, plan->g->n_nodes, plan->options.n_streams,
               plan->options.threads_per_stream, plan->options.n_stages,
               plan->options.profiling ? ", profiling" : "");
    *out = plan;
    return RN_OK;
fail:
    plugin_plan_free(plan);
    return st;
}

rn_status plugin_plan_build_nested(const graph *body, const plugin_kernel_registry *registry,
                                   const graph_port *inputs, int n_inputs, plugin_plan **out)
{
    plugin_plan *plan = calloc(1, sizeof *plan);
    if (plan == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    pthread_mutex_init(&plan->runtime_lock, NULL);
    plan->registry = registry;
    plan->nested = true;
    plan->options.n_streams = 1;
    plan->options.threads_per_stream = 1;
    graph_value **captures = NULL;
    rn_status st = graph_clone(body, &plan->g);
    if (st == RN_OK)
        st = graph_capture_outer(plan->g, &plan->outer_values, &captures, &plan->n_captures);
    if (st == RN_OK && plan->n_captures > 0 &&
        (plan->capture_ids = calloc((size_t)plan->n_captures, sizeof(int))) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    for (int j = 0; st == RN_OK && j < plan->n_captures; j++)
        plan->capture_ids[j] = captures[j]->id;
    free(captures);
    if (st == RN_OK) {
        seed_inputs(plan->g, inputs, n_inputs);
        st = build_common(plan);
    }
    /* Capture ids survive build_common: it sorts nodes, not values. */
    if (st != RN_OK) {
        plugin_plan_free(plan);
        return st;
    }
    *out = plan;
    return RN_OK;
}

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

const plugin_kernel *plugin_plan_kernel(const plugin_plan *plan, int node)
{
    return plan->kernels[node];
}

const plugin_plan_options *plugin_plan_get_options(const plugin_plan *plan)
{
    return &plan->options;
}

rn_status plugin_plan_get_property(const plugin_plan *plan, const char *key, char *buf, size_t size)
{
    const plugin_plan_options *o = &plan->options;
    char tmp[32];
    if (strcmp(key, "NUM_STREAMS") == 0)
        snprintf(tmp, sizeof tmp, "%u", o->n_streams);
    else if (strcmp(key, "INFERENCE_NUM_THREADS") == 0)
        snprintf(tmp, sizeof tmp, "%u", o->n_streams * o->threads_per_stream);
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
    return RN_OK;
}
