/* The request pipeline: named stages and the device's tasks as one DAG. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "executors/pipeline.h"

static const char *const stage_names[EXECUTORS_STAGE_COUNT] = {
    "preprocess", "upload", "execute", "wait", "download", "postprocess", "callback",
};

const char *executors_stage_name(executors_stage stage)
{
    return (unsigned)stage < EXECUTORS_STAGE_COUNT ? stage_names[stage] : "unknown";
}

typedef struct pipeline_node {
    const char *name;
    sched_task_fn fn;
    void *arg;
    executors_where where;
} pipeline_node;

typedef struct pipeline_stage {
    executors_stage stage;
    executors_where where;
    sched_task_fn fn;
    void *arg;
} pipeline_stage;

struct executors_pipeline_builder {
    executors_pool *pool;
    int n_stages;
    pipeline_stage stages[EXECUTORS_STAGE_COUNT];
    uint32_t n_tasks, cap_tasks;
    pipeline_node *tasks;
    uint32_t n_edges, cap_edges;
    uint32_t (*edges)[2];
};

struct executors_pipeline {
    executors_pool *pool;
    sched_dag *dag;
    uint32_t n_nodes;
    pipeline_node *nodes; /* per DAG node (names are the builder's: static or the caller's) */
    uint32_t *order;      /* a topological order of the DAG's nodes */
    uint32_t stage_node[EXECUTORS_STAGE_COUNT];
    size_t n_described;
    rn_pipeline_stage described[EXECUTORS_STAGE_COUNT + 1];
};

rn_status executors_pipeline_builder_create(executors_pool *pool, executors_pipeline_builder **out)
{
    executors_pipeline_builder *b = calloc(1, sizeof *b);
    if (b == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
    b->pool = pool;
    *out = b;
    return RN_OK;
}

void executors_pipeline_builder_free(executors_pipeline_builder *b)
{
    if (b == NULL)
        return;
    free(b->tasks);
    free(b->edges);
    free(b);
}

rn_status executors_pipeline_add_stage(executors_pipeline_builder *b, executors_stage stage,
                                       executors_where where, sched_task_fn fn, void *arg)
{
    if ((unsigned)stage >= EXECUTORS_STAGE_COUNT || fn == NULL)
        return rn_set_error(RN_INVALID_ARG, "pipeline: bad stage %d", (int)stage);
    for (int i = 0; i < b->n_stages; i++)
        if (b->stages[i].stage == stage)
            return rn_set_error(RN_INVALID_ARG, "pipeline: stage '%s' added twice",
                                stage_names[stage]);
    b->stages[b->n_stages++] = (pipeline_stage){stage, where, fn, arg};
    return RN_OK;
}

rn_status executors_pipeline_move_stage(executors_pipeline_builder *b, executors_stage stage,
                                        executors_where where)
{
    for (int i = 0; i < b->n_stages; i++)
        if (b->stages[i].stage == stage) {
            b->stages[i].where = where;
            return RN_OK;
        }
    return rn_set_error(RN_INVALID_ARG, "pipeline: no '%s' stage to move",
                        executors_stage_name(stage));
}

rn_status executors_pipeline_add_task(executors_pipeline_builder *b, const char *name,
                                      sched_task_fn fn, void *arg, uint32_t *out)
{
    if (b->n_tasks == b->cap_tasks) {
        uint32_t cap = b->cap_tasks ? b->cap_tasks * 2 : 64;
        pipeline_node *t = realloc(b->tasks, cap * sizeof *t);
        if (t == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
        b->tasks = t;
        b->cap_tasks = cap;
    }
    b->tasks[b->n_tasks] = (pipeline_node){name, fn, arg, EXECUTORS_ON_STREAM};
    if (out != NULL)
        *out = b->n_tasks;
    b->n_tasks++;
    return RN_OK;
}

rn_status executors_pipeline_add_edge(executors_pipeline_builder *b, uint32_t from, uint32_t to)
{
    if (from >= b->n_tasks || to >= b->n_tasks)
        return rn_set_error(RN_INVALID_ARG, "pipeline: edge %u -> %u names no task", from, to);
    if (b->n_edges == b->cap_edges) {
        uint32_t cap = b->cap_edges ? b->cap_edges * 2 : 128;
        uint32_t(*e)[2] = realloc(b->edges, cap * sizeof *e);
        if (e == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
        b->edges = e;
        b->cap_edges = cap;
    }
    b->edges[b->n_edges][0] = from;
    b->edges[b->n_edges][1] = to;
    b->n_edges++;
    return RN_OK;
}

static uint32_t executor_id(const executors_pool *pool, executors_where where)
{
    if (pool == NULL || where == EXECUTORS_ON_STREAM)
        return SCHED_EXECUTOR_STREAM;
    return where == EXECUTORS_ON_CALLBACK ? executors_callback_id(pool) : executors_wait_id(pool);
}

static const char *where_name(executors_where where)
{
    return where == EXECUTORS_ON_CALLBACK      ? "callback"
           : where == EXECUTORS_ON_DEVICE_WAIT ? "device-wait"
                                               : "stream";
}

/* Kahn's algorithm over the DAG the builder describes, into p->order. */
static rn_status topo_order(executors_pipeline *p, uint32_t (*edges)[2], uint32_t n_edges)
{
    uint32_t n = p->n_nodes;
    uint32_t *indeg = calloc(n + 1, sizeof *indeg);
    uint32_t *start = calloc(n + 2, sizeof *start);
    uint32_t *succ = malloc(((size_t)n_edges + 1) * sizeof *succ);
    p->order = malloc(((size_t)n + 1) * sizeof *p->order);
    rn_status st = RN_OK;
    if (indeg == NULL || start == NULL || succ == NULL || p->order == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
        goto done;
    }
    for (uint32_t e = 0; e < n_edges; e++) {
        indeg[edges[e][1]]++;
        start[edges[e][0] + 1]++;
    }
    for (uint32_t v = 0; v < n; v++)
        start[v + 1] += start[v];
    uint32_t *fill = calloc(n + 1, sizeof *fill);
    if (fill == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
        goto done;
    }
    for (uint32_t e = 0; e < n_edges; e++)
        succ[start[edges[e][0]] + fill[edges[e][0]]++] = edges[e][1];
    free(fill);
    uint32_t head = 0, tail = 0;
    for (uint32_t v = 0; v < n; v++)
        if (indeg[v] == 0)
            p->order[tail++] = v;
    while (head < tail) {
        uint32_t v = p->order[head++];
        for (uint32_t k = start[v]; k < start[v + 1]; k++)
            if (--indeg[succ[k]] == 0)
                p->order[tail++] = succ[k];
    }
    if (tail != n)
        st = rn_set_error(RN_INTERNAL, "pipeline: the task graph has a cycle");
done:
    free(indeg);
    free(start);
    free(succ);
    return st;
}

rn_status executors_pipeline_build(const executors_pipeline_builder *b, executors_pipeline **out)
{
    const pipeline_stage *by_stage[EXECUTORS_STAGE_COUNT] = {0};
    for (int i = 0; i < b->n_stages; i++)
        by_stage[b->stages[i].stage] = &b->stages[i];
    static const executors_stage required[] = {
        EXECUTORS_STAGE_PREPROCESS, EXECUTORS_STAGE_POSTPROCESS, EXECUTORS_STAGE_CALLBACK};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (by_stage[required[i]] == NULL)
            return rn_set_error(RN_INVALID_ARG, "pipeline: no '%s' stage",
                                stage_names[required[i]]);
    executors_pipeline *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
    p->pool = b->pool;
    /* Nodes: the tasks first (their indices are the builder's), then the
     * stages in pipeline order. */
    p->n_nodes = b->n_tasks + (uint32_t)b->n_stages;
    p->nodes = calloc((size_t)p->n_nodes + 1, sizeof *p->nodes);
    uint32_t cap_edges = b->n_edges + 2 * b->n_tasks + EXECUTORS_STAGE_COUNT + 4;
    uint32_t(*edges)[2] = malloc((size_t)cap_edges * sizeof *edges);
    bool *has_pred = calloc((size_t)b->n_tasks + 1, sizeof *has_pred);
    bool *has_succ = calloc((size_t)b->n_tasks + 1, sizeof *has_succ);
    rn_status st = RN_OK;
    if (p->nodes == NULL || edges == NULL || has_pred == NULL || has_succ == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "pipeline: out of memory");
        goto done;
    }
    if (b->n_tasks > 0)
        memcpy(p->nodes, b->tasks, b->n_tasks * sizeof *p->nodes);
    for (int s = 0; s < EXECUTORS_STAGE_COUNT; s++)
        p->stage_node[s] = UINT32_MAX;
    uint32_t next = b->n_tasks;
    uint32_t n_edges = 0;
    /* The chain before the tasks: preprocess, then the upload stages. */
    static const executors_stage before[] = {EXECUTORS_STAGE_PREPROCESS, EXECUTORS_STAGE_UPLOAD};
    static const executors_stage after[] = {EXECUTORS_STAGE_EXECUTE, EXECUTORS_STAGE_WAIT,
                                            EXECUTORS_STAGE_DOWNLOAD, EXECUTORS_STAGE_POSTPROCESS,
                                            EXECUTORS_STAGE_CALLBACK};
    for (uint32_t e = 0; e < b->n_edges; e++) {
        edges[n_edges][0] = b->edges[e][0];
        edges[n_edges][1] = b->edges[e][1];
        n_edges++;
        has_succ[b->edges[e][0]] = true;
        has_pred[b->edges[e][1]] = true;
    }
    uint32_t prev = UINT32_MAX;
    bool tasks_linked = false;
    for (int pass = 0; pass < 2; pass++) {
        const executors_stage *list = pass == 0 ? before : after;
        size_t n = pass == 0 ? sizeof before / sizeof *before : sizeof after / sizeof *after;
        if (pass == 1)
            p->described[p->n_described++] = (rn_pipeline_stage){"infer", "stream"};
        for (size_t i = 0; i < n; i++) {
            const pipeline_stage *s = by_stage[list[i]];
            if (s == NULL)
                continue;
            uint32_t id = next++;
            p->nodes[id] = (pipeline_node){stage_names[s->stage], s->fn, s->arg, s->where};
            p->stage_node[s->stage] = id;
            p->described[p->n_described++] =
                (rn_pipeline_stage){stage_names[s->stage], where_name(s->where)};
            if (pass == 1 && !tasks_linked) {
                /* The first stage after the tasks: their sources hang off
                 * the last stage before, their sinks precede this one. */
                for (uint32_t t = 0; t < b->n_tasks; t++) {
                    if (!has_pred[t]) {
                        edges[n_edges][0] = prev;
                        edges[n_edges][1] = t;
                        n_edges++;
                    }
                    if (!has_succ[t]) {
                        edges[n_edges][0] = t;
                        edges[n_edges][1] = id;
                        n_edges++;
                    }
                }
                tasks_linked = true;
            }
            if (prev != UINT32_MAX) {
                edges[n_edges][0] = prev;
                edges[n_edges][1] = id;
                n_edges++;
            }
            prev = id;
        }
    }
    sched_dag_builder *db = NULL;
    int rc = sched_dag_builder_create(&db);
    for (uint32_t v = 0; v < p->n_nodes && rc == 0; v++)
        rc = sched_dag_add_node(db, p->nodes[v].name, p->nodes[v].fn, p->nodes[v].arg,
                                executor_id(p->pool, p->nodes[v].where), NULL);
    for (uint32_t e = 0; e < n_edges && rc == 0; e++)
        rc = sched_dag_add_edge(db, edges[e][0], edges[e][1]);
    if (rc == 0)
        rc = sched_dag_build(db, &p->dag);
    sched_dag_builder_free(db);
    if (rc != 0) {
        st = rn_set_error(rc == -ENOMEM ? RN_OUT_OF_MEMORY : RN_INTERNAL,
                          "pipeline: cannot build the task DAG (error %d)", rc);
        goto done;
    }
    st = topo_order(p, edges, n_edges);
done:
    free(edges);
    free(has_pred);
    free(has_succ);
    if (st != RN_OK) {
        executors_pipeline_free(p);
        return st;
    }
    *out = p;
    return RN_OK;
}

void executors_pipeline_free(executors_pipeline *p)
{
    if (p == NULL)
        return;
    sched_dag_free(p->dag);
    free(p->nodes);
    free(p->order);
    free(p);
}

const sched_dag *executors_pipeline_dag(const executors_pipeline *p)
{
    return p->dag;
}

uint32_t executors_pipeline_stage_node(const executors_pipeline *p, executors_stage stage)
{
    return (unsigned)stage < EXECUTORS_STAGE_COUNT ? p->stage_node[stage] : UINT32_MAX;
}

bool executors_pipeline_has_stage(const executors_pipeline *p, executors_stage stage)
{
    return executors_pipeline_stage_node(p, stage) != UINT32_MAX;
}

size_t executors_pipeline_describe(const executors_pipeline *p, rn_pipeline_stage *out, size_t cap)
{
    for (size_t i = 0; i < p->n_described && i < cap; i++)
        out[i] = p->described[i];
    return p->n_described;
}

int executors_pipeline_run_inline(const executors_pipeline *p, void *user_arg)
{
    int status = SCHED_OK;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        uint32_t v = p->order[i];
        sched_task_ctx ctx = {
            .user_arg = user_arg,
            .node = v,
            .worker = UINT32_MAX,
            .executor = executor_id(p->pool, p->nodes[v].where),
        };
        int rc = p->nodes[v].fn(&ctx, p->nodes[v].arg);
        if (rc != SCHED_OK && rc != SCHED_PENDING && status == SCHED_OK)
            status = rc;
    }
    return status;
}

int executors_pipeline_start(const executors_pipeline *p, sched_instance *inst)
{
    if (p->pool == NULL)
        return -EINVAL;
    return sched_instance_start(executors_sched(p->pool), inst, SCHED_STREAM_ANY, NULL, NULL);
}
