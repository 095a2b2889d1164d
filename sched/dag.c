/* DAG topologies: the builder, and its compilation to the immutable sched_dag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/internal.h"

typedef struct builder_node {
    char *name; /* NULL: a generated name */
    sched_task_fn fn;
    void *arg;
    uint32_t executor;
} builder_node;

typedef struct builder_edge {
    uint32_t from;
    uint32_t to;
} builder_edge;

struct sched_dag_builder {
    builder_node *nodes;
    size_t n_nodes;
    size_t cap_nodes;
    builder_edge *edges;
    size_t n_edges;
    size_t cap_edges;
};

/* The largest node count: indices must stay below SCHED_NONE and leave room for the root. */
#define MAX_NODES (UINT32_MAX - 2u)
/* The largest edge count, sources included (edge indices are 32-bit, ranges are lo..hi). */
#define MAX_EDGES (UINT32_MAX - 1u)

static int grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*items, n * size);
    if (p == NULL)
        return -ENOMEM;
    *items = p;
    *cap = n;
    return 0;
}

int sched_dag_builder_create(sched_dag_builder **out)
{
    if (out == NULL)
        return -EINVAL;
    sched_dag_builder *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return -ENOMEM;
    *out = b;
    return 0;
}

void sched_dag_builder_free(sched_dag_builder *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n_nodes; i++)
        free(b->nodes[i].name);
    free(b->nodes);
    free(b->edges);
    free(b);
}

int sched_dag_add_node(sched_dag_builder *b, const char *name, sched_task_fn fn, void *node_arg,
                       uint32_t executor, uint32_t *out_node)
{
    if (b == NULL || fn == NULL || executor > SCHED_MAX_EXECUTORS || b->n_nodes >= MAX_NODES)
        return -EINVAL;
    if (grow((void **)&b->nodes, &b->cap_nodes, b->n_nodes + 1, sizeof(*b->nodes)) != 0)
        return -ENOMEM;
    char *copy = NULL;
    if (name != NULL && (copy = strdup(name)) == NULL)
        return -ENOMEM;
    uint32_t index = (uint32_t)b->n_nodes++;
    b->nodes[index] = (builder_node){.name = copy, .fn = fn, .arg = node_arg, .executor = executor};
    if (out_node != NULL)
        *out_node = index;
    return 0;
}

int sched_dag_add_edge(sched_dag_builder *b, uint32_t from, uint32_t to)
{
    if (b == NULL || from >= b->n_nodes || to >= b->n_nodes || b->n_edges >= MAX_EDGES)
        return -EINVAL;
    if (grow((void **)&b->edges, &b->cap_edges, b->n_edges + 1, sizeof(*b->edges)) != 0)
        return -ENOMEM;
    b->edges[b->n_edges++] = (builder_edge){.from = from, .to = to};
    return 0;
}

/* Kahn's algorithm over the compiled successor lists: true when every node can be ordered. */
static bool acyclic(const sched_dag *d, uint32_t *indegree, uint32_t *queue)
{
    uint32_t n = d->n_nodes;
    uint32_t head = 0, tail = 0;
    for (uint32_t v = 0; v < n; v++) {
        indegree[v] = d->nodes[v].pred;
        if (indegree[v] == 0)
            queue[tail++] = v;
    }
    while (head < tail) {
        uint32_t v = queue[head++];
        for (uint32_t e = d->nodes[v].succ_begin; e < d->nodes[v].succ_end; e++)
            if (--indegree[d->succ[e]] == 0)
                queue[tail++] = d->succ[e];
    }
    return tail == n;
}

int sched_dag_build(const sched_dag_builder *b, sched_dag **out)
{
    if (b == NULL || out == NULL)
        return -EINVAL;
    uint32_t n = (uint32_t)b->n_nodes;
    size_t n_edges = b->n_edges;

    size_t n_sources = 0;
    uint32_t *pred = calloc((size_t)n + 1, sizeof(*pred));
    uint32_t *outdeg = calloc((size_t)n + 1, sizeof(*outdeg));
    if (pred == NULL || outdeg == NULL) {
        free(pred);
        free(outdeg);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n_edges; i++) {
        pred[b->edges[i].to]++;
        outdeg[b->edges[i].from]++;
    }
    for (uint32_t v = 0; v < n; v++)
        n_sources += pred[v] == 0;
    if (n_edges + n_sources > MAX_EDGES) {
        free(pred);
        free(outdeg);
        return -EINVAL;
    }

    sched_dag *d = calloc(1, sizeof(*d));
    size_t name_bytes = 0;
    for (uint32_t v = 0; v < n; v++)
        name_bytes += b->nodes[v].name ? strlen(b->nodes[v].name) + 1 : 16;
    if (d != NULL) {
        d->nodes = calloc((size_t)n + 1, sizeof(*d->nodes));
        d->succ = malloc((n_edges + n_sources + 1) * sizeof(*d->succ));
        d->names = malloc(((size_t)n + 1) * sizeof(*d->names));
        d->name_blob = malloc(name_bytes + 1);
    }
    if (d == NULL || d->nodes == NULL || d->succ == NULL || d->names == NULL ||
        d->name_blob == NULL) {
        free(pred);
        free(outdeg);
        sched_dag_free(d);
        return -ENOMEM;
    }
    d->n_nodes = n;
    d->n_edges = (uint32_t)n_edges;

    /* Compressed rows: node v's successors are succ[begin .. end); the root's row (index n)
     * lists the sources and comes last. */
    uint32_t at = 0;
    for (uint32_t v = 0; v < n; v++) {
        const builder_node *bn = &b->nodes[v];
        d->nodes[v] = (sched_dag_node){
            .fn = bn->fn,
            .arg = bn->arg,
            .succ_begin = at,
            .succ_end = at, /* advanced while filling */
            .pred = pred[v],
            .executor = bn->executor,
        };
        at += outdeg[v];
        if (pred[v] >= 2)
            d->n_multi++;
        if (outdeg[v] == 0)
            d->n_sinks++;
        if (bn->executor > d->max_executor)
            d->max_executor = bn->executor;
    }
    for (size_t i = 0; i < n_edges; i++) {
        sched_dag_node *from = &d->nodes[b->edges[i].from];
        d->succ[from->succ_end++] = b->edges[i].to;
    }
    d->nodes[n] = (sched_dag_node){.succ_begin = at, .succ_end = at, .executor = 0};
    for (uint32_t v = 0; v < n; v++)
        if (pred[v] == 0)
            d->succ[d->nodes[n].succ_end++] = v;

    /* Names. */
    char *p = d->name_blob;
    for (uint32_t v = 0; v < n; v++) {
        d->names[v] = p;
        if (b->nodes[v].name != NULL) {
            size_t len = strlen(b->nodes[v].name);
            memcpy(p, b->nodes[v].name, len + 1);
            p += len + 1;
        } else {
            p += snprintf(p, 16, "node%u", v) + 1;
        }
    }
    d->names[n] = "(root)";

    /* Cycle check, reusing the scratch arrays; then the nodes that need a join counter. */
    bool ok = acyclic(d, pred, outdeg);
    free(pred);
    free(outdeg);
    if (!ok) {
        sched_dag_free(d);
        return -ELOOP;
    }
    d->multi = malloc((d->n_multi ? d->n_multi : 1) * sizeof(*d->multi));
    if (d->multi == NULL) {
        sched_dag_free(d);
        return -ENOMEM;
    }
    uint32_t m = 0;
    for (uint32_t v = 0; v < n; v++)
        if (d->nodes[v].pred >= 2)
            d->multi[m++] = v;
    *out = d;
    return 0;
}

void sched_dag_free(sched_dag *d)
{
    if (d == NULL)
        return;
    free(d->nodes);
    free(d->succ);
    free(d->multi);
    free(d->names);
    free(d->name_blob);
    free(d);
}

uint32_t sched_dag_node_count(const sched_dag *d)
{
    return d != NULL ? d->n_nodes : 0;
}

uint32_t sched_dag_edge_count(const sched_dag *d)
{
    return d != NULL ? d->n_edges : 0;
}

const char *sched_dag_node_name(const sched_dag *d, uint32_t node)
{
    if (d == NULL || node >= d->n_nodes)
        return NULL;
    return d->names[node];
}
