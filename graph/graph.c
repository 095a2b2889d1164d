/* The model IR: construction, look-up, topological sort, clone and pruning.
 * Validation and shape inference live in graph/validate.c and graph/ops/. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static char *dup_str(const char *s)
{
    if (s == NULL)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* Grows *arr (of *cap elements of `size`) to hold at least `need`. */
static rn_status grow(void **arr, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return RN_OK;
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, (size_t)ncap * size);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    *arr = p;
    *cap = ncap;
    return RN_OK;
}

/* ---- tensors and shapes ---- */

size_t graph_tensor_count(const graph_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->dims[i];
    return n;
}

void graph_tensor_release(graph_tensor *t)
{
    if (t == NULL)
        return;
    if (t->items != NULL) {
        for (size_t i = 0; i < t->n_items; i++)
            graph_tensor_release(&t->items[i]);
        free(t->items);
        t->items = NULL;
        t->n_items = 0;
    }
    if (t->type == RN_STRING && t->data != NULL) {
        char **s = t->data;
        size_t n = graph_tensor_count(t);
        for (size_t i = 0; i < n; i++)
            free(s[i]);
    }
    free(t->data);
    t->data = NULL;
    t->nbytes = 0;
}

rn_status graph_tensor_copy(graph_tensor *dst, const graph_tensor *src)
{
    graph_tensor t = *src;
    t.data = NULL;
    t.items = NULL;
    t.n_items = 0;
    if (src->kind != GRAPH_KIND_TENSOR) {
        /* A sequence or a map (item by item) or an absent optional (nothing
         * to copy). */
        for (size_t i = 0; i < src->n_items; i++) {
            graph_tensor item;
            rn_status st = graph_tensor_copy(&item, &src->items[i]);
            if (st == RN_OK)
                st = graph_sequence_append(&t, &item);
            if (st != RN_OK) {
                graph_tensor_release(&item);
                graph_tensor_release(&t);
                return st;
            }
        }
        *dst = t;
        return RN_OK;
    }
    size_t alloc = src->nbytes ? src->nbytes : 1;
    t.data = malloc(alloc);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory copying a tensor");
    if (src->type == RN_STRING) {
        size_t n = graph_tensor_count(src);
        char **d = t.data;
        char *const *s = src->data;
        memset(d, 0, alloc);
        for (size_t i = 0; i < n; i++) {
            d[i] = dup_str(s[i]);
            if (d[i] == NULL) {
                graph_tensor_release(&t);
                return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory copying strings");
            }
        }
    } else if (src->nbytes) {
        memcpy(t.data, src->data, src->nbytes);
    }
    *dst = t;
    return RN_OK;
}

int64_t graph_shape_count(const graph_shape *s)
{
    if (s->rank < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0 || __builtin_mul_overflow(n, s->dims[i], &n))
            return -1; /* dynamic, or too large to be a real tensor */
    }
    return n;
}

bool graph_shape_is_static(const graph_shape *s)
{
    return graph_shape_count(s) >= 0;
}

const char *graph_shape_str(const graph_shape *s, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (s->rank < 0) {
        snprintf(buf, size, "[...]");
        return buf;
    }
    size_t pos = 0;
    pos += (size_t)snprintf(buf + pos, size - pos, "[");
    for (int i = 0; i < s->rank && pos < size; i++) {
        const char *sep = i ? "," : "";
        if (s->dims[i] < 0)
            pos += (size_t)snprintf(buf + pos, size - pos, "%s?", sep);
        else
            pos += (size_t)snprintf(buf + pos, size - pos, "%s%lld", sep, (long long)s->dims[i]);
    }
    if (pos < size)
        snprintf(buf + pos, size - pos, "]");
    return buf;
}

/* ---- attributes ---- */

void graph_attr_release(graph_attr *a)
{
    if (a == NULL)
        return;
    free(a->name);
    free(a->s);
    if (a->t != NULL) {
        graph_tensor_release(a->t);
        free(a->t);
    }
    graph_free(a->g);
    free(a->floats);
    free(a->ints);
    if (a->strings != NULL) {
        for (int i = 0; i < a->count; i++)
            free(a->strings[i]);
        free(a->strings);
    }
    if (a->tensors != NULL) {
        for (int i = 0; i < a->count; i++)
            graph_tensor_release(&a->tensors[i]);
        free(a->tensors);
    }
    if (a->graphs != NULL) {
        for (int i = 0; i < a->count; i++)
            graph_free(a->graphs[i]);
        free(a->graphs);
    }
    memset(a, 0, sizeof *a);
}

static rn_status clone_in(const graph *g, graph *parent, graph **out);

/* Deep copy of an attribute; subgraphs get `parent` as their enclosing graph. */
static rn_status attr_copy(graph_attr *dst, const graph_attr *src, graph *parent)
{
    graph_attr a = {
        .type = src->type, .f = src->f, .i = src->i, .count = src->count, .tp = src->tp};
    rn_status st = RN_OK;
    a.name = dup_str(src->name);
    if (a.name == NULL)
        goto oom;
    if (src->s != NULL && (a.s = dup_str(src->s)) == NULL)
        goto oom;
    if (src->t != NULL) {
        a.t = calloc(1, sizeof *a.t);
        if (a.t == NULL)
            goto oom;
        if ((st = graph_tensor_copy(a.t, src->t)) != RN_OK)
            goto fail;
    }
    if (src->g != NULL && (st = clone_in(src->g, parent, &a.g)) != RN_OK)
        goto fail;
    size_t n = (size_t)(src->count > 0 ? src->count : 0);
    if (src->floats != NULL) {
        if ((a.floats = malloc(n * sizeof(float) + 1)) == NULL)
            goto oom;
        memcpy(a.floats, src->floats, n * sizeof(float));
    }
    if (src->ints != NULL) {
        if ((a.ints = malloc(n * sizeof(int64_t) + 1)) == NULL)
            goto oom;
        memcpy(a.ints, src->ints, n * sizeof(int64_t));
    }
    if (src->strings != NULL) {
        if ((a.strings = calloc(n + 1, sizeof(char *))) == NULL)
            goto oom;
        for (size_t i = 0; i < n; i++)
            if ((a.strings[i] = dup_str(src->strings[i])) == NULL)
                goto oom;
    }
    if (src->tensors != NULL) {
        if ((a.tensors = calloc(n + 1, sizeof(graph_tensor))) == NULL)
            goto oom;
        for (size_t i = 0; i < n; i++)
            if ((st = graph_tensor_copy(&a.tensors[i], &src->tensors[i])) != RN_OK)
                goto fail;
    }
    if (src->graphs != NULL) {
        if ((a.graphs = calloc(n + 1, sizeof(graph *))) == NULL)
            goto oom;
        for (size_t i = 0; i < n; i++)
            if ((st = clone_in(src->graphs[i], parent, &a.graphs[i])) != RN_OK)
                goto fail;
    }
    *dst = a;
    return RN_OK;
oom:
    st = rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory copying attribute '%s'", src->name);
fail:
    graph_attr_release(&a);
    return st;
}

/* ---- graphs, values, nodes ---- */

rn_status graph_create(const char *name, graph **out)
{
    graph *g = calloc(1, sizeof *g);
    if (g == NULL || (g->name = dup_str(name)) == NULL) {
        free(g);
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    }
    *out = g;
    return RN_OK;
}

static void value_free(graph_value *v)
{
    if (v == NULL)
        return;
    free(v->name);
    if (v->constant != NULL) {
        graph_tensor_release(v->constant);
        free(v->constant);
    }
    free(v);
}

static void node_free(graph_node *n)
{
    if (n == NULL)
        return;
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->inputs);
    free(n->outputs);
    for (int i = 0; i < n->n_attrs; i++)
        graph_attr_release(&n->attrs[i]);
    free(n->attrs);
    for (int i = 0; i < n->n_fused; i++)
        free(n->fused_names[i]);
    free(n->fused_names);
    free(n);
}

void graph_free(graph *g)
{
    if (g == NULL)
        return;
    for (int i = 0; i < g->n_nodes; i++)
        node_free(g->nodes[i]);
    for (int i = 0; i < g->n_values; i++)
        value_free(g->values[i]);
    free(g->nodes);
    free(g->values);
    free(g->inputs);
    free(g->outputs);
    free(g->index);
    for (int i = 0; i < g->n_warnings; i++)
        free(g->warnings[i]);
    free(g->warnings);
    free(g->name);
    free(g);
}

void graph_add_warning(graph *g, const char *fmt, ...)
{
    char *msg;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char **grown = realloc(g->warnings, (size_t)(g->n_warnings + 1) * sizeof *grown);
    if (grown == NULL) {
        free(msg);
        return;
    }
    g->warnings = grown;
    g->warnings[g->n_warnings++] = msg;
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* Inserts value id into g's name index (which has room). */
static void index_put(graph *g, int id)
{
    size_t mask = (size_t)g->index_cap - 1;
    size_t i = (size_t)name_hash(g->values[id]->name) & mask;
    while (g->index[i] != 0)
        i = (i + 1) & mask;
    g->index[i] = id + 1;
}

/* Rebuilds the name index for at least `need` values (load factor <= 1/2). */
static rn_status index_rebuild(graph *g, int need)
{
    int cap = 64;
    while (cap < 2 * need)
        cap *= 2;
    int *index = calloc((size_t)cap, sizeof *index);
    if (index == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    free(g->index);
    g->index = index;
    g->index_cap = cap;
    for (int v = 0; v < g->n_values; v++)
        index_put(g, v);
    return RN_OK;
}

static graph_value *index_get(const graph *g, const char *name)
{
    if (g->index_cap == 0)
        return NULL;
    size_t mask = (size_t)g->index_cap - 1;
    for (size_t i = (size_t)name_hash(name) & mask; g->index[i] != 0; i = (i + 1) & mask) {
        graph_value *v = g->values[g->index[i] - 1];
        if (strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}

graph_value *graph_find_value(const graph *g, const char *name, bool outer)
{
    for (; g != NULL; g = outer ? g->parent : NULL) {
        graph_value *v = index_get(g, name);
        if (v != NULL)
            return v;
    }
    return NULL;
}

rn_status graph_add_value(graph *g, const char *name, graph_value **out)
{
    if (name == NULL || name[0] == '\0')
        return rn_set_error(RN_INVALID_ARG, "graph '%s': a value needs a name", g->name);
    if (graph_find_value(g, name, false) != NULL)
        return rn_set_error(RN_PARSE_ERROR, "graph '%s': value '%s' is defined twice", g->name,
                            name);
    rn_status st = grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof(void *));
    if (st == RN_OK && 2 * (g->n_values + 1) > g->index_cap)
        st = index_rebuild(g, g->n_values + 1);
    if (st != RN_OK)
        return st;
    graph_value *v = calloc(1, sizeof *v);
    if (v == NULL || (v->name = dup_str(name)) == NULL) {
        free(v);
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    }
    v->shape.rank = -1;
    v->id = g->n_values;
    g->values[g->n_values++] = v;
    index_put(g, v->id);
    *out = v;
    return RN_OK;
}

static rn_status append_value(graph_value ***arr, int *n, graph_value *v)
{
    graph_value **p = realloc(*arr, (size_t)(*n + 1) * sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    p[(*n)++] = v;
    *arr = p;
    return RN_OK;
}

rn_status graph_add_input(graph *g, graph_value *v)
{
    rn_status st = append_value(&g->inputs, &g->n_inputs, v);
    if (st == RN_OK)
        v->is_parameter = true;
    return st;
}

rn_status graph_add_output(graph *g, graph_value *v)
{
    return append_value(&g->outputs, &g->n_outputs, v);
}

rn_status graph_node_add_fused_name(graph_node *n, const char *name)
{
    char **p = realloc(n->fused_names, (size_t)(n->n_fused + 1) * sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    n->fused_names = p;
    if ((p[n->n_fused] = dup_str(name)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    n->n_fused++;
    return RN_OK;
}

rn_status graph_add_node(graph *g, const char *name, const char *domain, const char *op_type,
                         int opset, int n_inputs, graph_value *const *inputs, int n_outputs,
                         graph_value *const *outputs, graph_node **out)
{
    if (n_inputs < 0 || n_outputs < 0)
        return rn_set_error(RN_INVALID_ARG, "node '%s': negative input or output count", name);
    for (int i = 0; i < n_outputs; i++) {
        if (outputs[i] != NULL && outputs[i]->producer != NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "node '%s' (%s): output '%s' is already produced by node '%s'",
                                name, op_type, outputs[i]->name, outputs[i]->producer->name);
        for (int j = 0; j < i; j++)
            if (outputs[i] != NULL && outputs[i] == outputs[j])
                return rn_set_error(RN_PARSE_ERROR, "node '%s' (%s): output '%s' is listed twice",
                                    name, op_type, outputs[i]->name);
    }
    rn_status st = grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(void *));
    if (st != RN_OK)
        return st;
    graph_node *n = calloc(1, sizeof *n);
    if (n == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    n->name = dup_str(name);
    n->domain = dup_str(domain);
    n->op_type = dup_str(op_type);
    n->inputs = calloc((size_t)n_inputs + 1, sizeof(graph_value *));
    n->outputs = calloc((size_t)n_outputs + 1, sizeof(graph_value *));
    if (!n->name || !n->domain || !n->op_type || !n->inputs || !n->outputs ||
        graph_node_add_fused_name(n, name) != RN_OK) {
        node_free(n);
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    }
    n->opset = opset;
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    if (n_inputs)
        memcpy(n->inputs, inputs, (size_t)n_inputs * sizeof(graph_value *));
    if (n_outputs)
        memcpy(n->outputs, outputs, (size_t)n_outputs * sizeof(graph_value *));
    for (int i = 0; i < n_outputs; i++) {
        if (outputs[i] != NULL) {
            outputs[i]->producer = n;
            outputs[i]->producer_output = i;
        }
    }
    n->id = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    if (out != NULL)
        *out = n;
    return RN_OK;
}

rn_status graph_node_add_attr(graph_node *n, graph_attr *attr)
{
    if (attr->name == NULL || graph_node_attr(n, attr->name) != NULL) {
        rn_status st = rn_set_error(RN_PARSE_ERROR, "node '%s' (%s): attribute '%s' is %s", n->name,
                                    n->op_type, attr->name ? attr->name : "",
                                    attr->name ? "given twice" : "unnamed");
        graph_attr_release(attr);
        return st;
    }
    graph_attr *p = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof *p);
    if (p == NULL) {
        graph_attr_release(attr);
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    }
    n->attrs = p;
    n->attrs[n->n_attrs++] = *attr;
    memset(attr, 0, sizeof *attr);
    return RN_OK;
}

const graph_attr *graph_node_attr(const graph_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t graph_node_attr_int(const graph_node *n, const char *name, int64_t dflt)
{
    const graph_attr *a = graph_node_attr(n, name);
    return a != NULL && a->type == GRAPH_ATTR_INT ? a->i : dflt;
}

float graph_node_attr_float(const graph_node *n, const char *name, float dflt)
{
    const graph_attr *a = graph_node_attr(n, name);
    return a != NULL && a->type == GRAPH_ATTR_FLOAT ? a->f : dflt;
}

const char *graph_node_attr_string(const graph_node *n, const char *name, const char *dflt)
{
    const graph_attr *a = graph_node_attr(n, name);
    return a != NULL && a->type == GRAPH_ATTR_STRING && a->s != NULL ? a->s : dflt;
}

int graph_node_attr_ints(const graph_node *n, const char *name, const int64_t **vals)
{
    const graph_attr *a = graph_node_attr(n, name);
    if (a == NULL || a->type != GRAPH_ATTR_INTS) {
        *vals = NULL;
        return -1;
    }
    *vals = a->ints;
    return a->count;
}

int graph_node_attr_floats(const graph_node *n, const char *name, const float **vals)
{
    const graph_attr *a = graph_node_attr(n, name);
    if (a == NULL || a->type != GRAPH_ATTR_FLOATS) {
        *vals = NULL;
        return -1;
    }
    *vals = a->floats;
    return a->count;
}

/* ---- topological sort ---- */

/* The node of g that produces v, or NULL (parameters, constants, values of
 * other graphs). */
static graph_node *local_producer(const graph *g, const graph_value *v)
{
    if (v == NULL || v->producer == NULL || !(v->id < g->n_values && g->values[v->id] == v))
        return NULL;
    return v->producer;
}

typedef struct dep_list {
    int n, cap;
    int *producers; /* node indices */
} dep_list;

static rn_status dep_add(dep_list *d, int producer)
{
    if (d->n == d->cap) {
        int ncap = d->cap ? d->cap * 2 : 8;
        int *p = realloc(d->producers, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory sorting");
        d->producers = p;
        d->cap = ncap;
    }
    d->producers[d->n++] = producer;
    return RN_OK;
}

/* Adds the producers in g of every value that the subgraphs of `node` read
 * from outer scopes (at any depth): a control-flow node runs after them. */
static rn_status subgraph_deps(const graph *g, const graph_node *node, dep_list *d)
{
    for (int a = 0; a < node->n_attrs; a++) {
        const graph_attr *at = &node->attrs[a];
        int ng = at->g != NULL ? 1 : (at->graphs != NULL ? at->count : 0);
        for (int s = 0; s < ng; s++) {
            const graph *sub = at->g != NULL ? at->g : at->graphs[s];
            for (int sn = 0; sn < sub->n_nodes; sn++) {
                const graph_node *inner = sub->nodes[sn];
                for (int k = 0; k < inner->n_inputs; k++) {
                    graph_node *p = local_producer(g, inner->inputs[k]);
                    if (p != NULL) {
                        rn_status st = dep_add(d, p->id);
                        if (st != RN_OK)
                            return st;
                    }
                }
                rn_status st = subgraph_deps(g, inner, d);
                if (st != RN_OK)
                    return st;
            }
            for (int o = 0; o < sub->n_outputs; o++) {
                graph_node *p = local_producer(g, sub->outputs[o]);
                if (p != NULL) {
                    rn_status st = dep_add(d, p->id);
                    if (st != RN_OK)
                        return st;
                }
            }
        }
    }
    return RN_OK;
}

/* A binary min-heap of node indices: ready nodes leave in file order, so the
 * sort is stable. */
static void heap_push(int *heap, int *n, int x)
{
    int i = (*n)++;
    while (i > 0 && heap[(i - 1) / 2] > x) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = x;
}

static int heap_pop(int *heap, int *n)
{
    int top = heap[0], x = heap[--(*n)], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap[c + 1] < heap[c])
            c++;
        if (heap[c] >= x)
            break;
        heap[i] = heap[c];
        i = c;
    }
    if (*n > 0)
        heap[i] = x;
    return top;
}

/* Kahn's algorithm over producer edges (direct inputs and the outer values
 * subgraphs read), taking ready nodes in their original order. O(E log N). */
rn_status graph_sort(graph *g)
{
    int n = g->n_nodes;
    if (n == 0)
        return RN_OK;
    for (int i = 0; i < n; i++)
        g->nodes[i]->id = i;
    rn_status st = RN_OK;
    dep_list *deps = calloc((size_t)n, sizeof *deps);
    int *pending = calloc((size_t)n, sizeof(int));
    int *n_consumers = calloc((size_t)n + 1, sizeof(int));
    int *heap = malloc((size_t)n * sizeof(int));
    graph_node **sorted = malloc((size_t)n * sizeof *sorted);
    int *consumers = NULL;
    if (!deps || !pending || !n_consumers || !heap || !sorted) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory sorting");
        goto done;
    }
    int edges = 0;
    for (int i = 0; i < n && st == RN_OK; i++) {
        const graph_node *node = g->nodes[i];
        for (int k = 0; k < node->n_inputs && st == RN_OK; k++) {
            graph_node *p = local_producer(g, node->inputs[k]);
            if (p != NULL)
                st = dep_add(&deps[i], p->id);
        }
        if (st == RN_OK)
            st = subgraph_deps(g, node, &deps[i]);
        pending[i] = deps[i].n;
        edges += deps[i].n;
        for (int k = 0; k < deps[i].n; k++)
            n_consumers[deps[i].producers[k] + 1]++;
    }
    if (st != RN_OK)
        goto done;
    /* Consumers in compressed-row form: n_consumers becomes row offsets. */
    for (int i = 0; i < n; i++)
        n_consumers[i + 1] += n_consumers[i];
    consumers = malloc((size_t)(edges ? edges : 1) * sizeof(int));
    int *fill = calloc((size_t)n, sizeof(int));
    if (consumers == NULL || fill == NULL) {
        free(fill);
        st = rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory sorting");
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < deps[i].n; k++) {
            int p = deps[i].producers[k];
            consumers[n_consumers[p] + fill[p]++] = i;
        }
    free(fill);
    int heap_n = 0, count = 0;
    for (int i = 0; i < n; i++)
        if (pending[i] == 0)
            heap_push(heap, &heap_n, i);
    while (heap_n > 0) {
        int i = heap_pop(heap, &heap_n);
        sorted[count++] = g->nodes[i];
        for (int c = n_consumers[i]; c < n_consumers[i + 1]; c++)
            if (--pending[consumers[c]] == 0)
                heap_push(heap, &heap_n, consumers[c]);
    }
    if (count < n) {
        for (int i = 0; i < n; i++) {
            if (pending[i] > 0) {
                st = rn_set_error(RN_PARSE_ERROR,
                                  "graph '%s': node '%s' (%s) is on a cycle or depends on one",
                                  g->name, g->nodes[i]->name, g->nodes[i]->op_type);
                break;
            }
        }
    } else {
        memcpy(g->nodes, sorted, (size_t)n * sizeof *sorted);
        for (int i = 0; i < n; i++)
            g->nodes[i]->id = i;
    }
done:
    if (deps != NULL)
        for (int i = 0; i < n; i++)
            free(deps[i].producers);
    free(deps);
    free(pending);
    free(n_consumers);
    free(heap);
    free(sorted);
    free(consumers);
    return st;
}

/* ---- clone ---- */

static graph_value *map_value(const graph *src, graph *dst, const graph_value *v)
{
    if (v == NULL)
        return NULL;
    /* Values of this graph map by id; outer-scope values map by name into the
     * clone's enclosing graphs (ONNX names are unique across scopes). */
    if (v->id < src->n_values && src->values[v->id] == v)
        return dst->values[v->id];
    graph_value *outer = graph_find_value(dst->parent, v->name, true);
    return outer != NULL ? outer : (graph_value *)v;
}

static rn_status clone_in(const graph *g, graph *parent, graph **out);

rn_status graph_clone(const graph *g, graph **out)
{
    return clone_in(g, g->parent, out);
}

/* Clones g as a child of `parent` (NULL for a top-level graph). */
static rn_status clone_in(const graph *g, graph *parent, graph **out)
{
    graph *c = NULL;
    rn_status st = graph_create(g->name, &c);
    if (st != RN_OK)
        return st;
    c->opset = g->opset;
    c->ir_version = g->ir_version;
    c->parent = parent;
    graph_value **tmp = NULL;
    for (int i = 0; i < g->n_values; i++) {
        const graph_value *v = g->values[i];
        graph_value *nv;
        if ((st = graph_add_value(c, v->name, &nv)) != RN_OK)
            goto fail;
        nv->type = v->type;
        nv->kind = v->kind;
        nv->shape = v->shape;
        nv->is_parameter = v->is_parameter;
        if (v->constant != NULL) {
            nv->constant = calloc(1, sizeof *nv->constant);
            if (nv->constant == NULL) {
                st = rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory cloning");
                goto fail;
            }
            if ((st = graph_tensor_copy(nv->constant, v->constant)) != RN_OK)
                goto fail;
        }
    }
    int most = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->n_inputs > most)
            most = g->nodes[i]->n_inputs;
        if (g->nodes[i]->n_outputs > most)
            most = g->nodes[i]->n_outputs;
    }
    tmp = malloc((size_t)most * 2 * sizeof *tmp);
    if (tmp == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory cloning");
        goto fail;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = g->nodes[i];
        graph_value **ins = tmp, **outs = tmp + most;
        for (int k = 0; k < n->n_inputs; k++)
            ins[k] = map_value(g, c, n->inputs[k]);
        for (int k = 0; k < n->n_outputs; k++)
            outs[k] = map_value(g, c, n->outputs[k]);
        graph_node *nn;
        if ((st = graph_add_node(c, n->name, n->domain, n->op_type, n->opset, n->n_inputs, ins,
                                 n->n_outputs, outs, &nn)) != RN_OK)
            goto fail;
        /* graph_add_node seeded fused_names with the name; copy the real list. */
        for (int k = 0; k < nn->n_fused; k++)
            free(nn->fused_names[k]);
        nn->n_fused = 0;
        for (int k = 0; k < n->n_fused; k++)
            if ((st = graph_node_add_fused_name(nn, n->fused_names[k])) != RN_OK)
                goto fail;
        for (int k = 0; k < n->n_attrs; k++) {
            graph_attr a;
            if ((st = attr_copy(&a, &n->attrs[k], c)) != RN_OK)
                goto fail;
            if ((st = graph_node_add_attr(nn, &a)) != RN_OK)
                goto fail;
        }
    }
    for (int i = 0; i < g->n_inputs; i++)
        if ((st = append_value(&c->inputs, &c->n_inputs, map_value(g, c, g->inputs[i]))) != RN_OK)
            goto fail;
    for (int i = 0; i < g->n_outputs; i++)
        if ((st = graph_add_output(c, map_value(g, c, g->outputs[i]))) != RN_OK)
            goto fail;
    free(tmp);
    *out = c;
    return RN_OK;
fail:
    free(tmp);
    graph_free(c);
    return st;
}

/* ---- pruning ---- */

/* Marks the values of g that the subgraphs of `node` (at any depth) read. */
static void mark_subgraph_uses(const graph *g, const graph_node *node, char *used)
{
    for (int a = 0; a < node->n_attrs; a++) {
        const graph_attr *at = &node->attrs[a];
        int ng = at->g != NULL ? 1 : (at->graphs != NULL ? at->count : 0);
        for (int s = 0; s < ng; s++) {
            const graph *sub = at->g != NULL ? at->g : at->graphs[s];
            for (int sn = 0; sn < sub->n_nodes; sn++) {
                const graph_node *inner = sub->nodes[sn];
                for (int k = 0; k < inner->n_inputs; k++) {
                    graph_value *v = inner->inputs[k];
                    if (v != NULL && v->id < g->n_values && g->values[v->id] == v)
                        used[v->id] = 1;
                }
                mark_subgraph_uses(g, inner, used);
            }
            /* A subgraph may also return an outer value as it is. */
            for (int o = 0; o < sub->n_outputs; o++) {
                graph_value *v = sub->outputs[o];
                if (v != NULL && v->id < g->n_values && g->values[v->id] == v)
                    used[v->id] = 1;
            }
        }
    }
}

void graph_prune(graph *g)
{
    int n = g->n_nodes;
    if (n == 0)
        return;
    char *live = calloc((size_t)n, 1);
    char *used = calloc((size_t)g->n_values, 1);
    if (live == NULL || used == NULL) {
        free(live);
        free(used);
        return; /* pruning is an optimisation: leave the graph as it is */
    }
    for (int i = 0; i < g->n_outputs; i++)
        used[g->outputs[i]->id] = 1;
    for (int i = 0; i < g->n_inputs; i++)
        used[g->inputs[i]->id] = 1;
    /* Walk in reverse topological order: a node is live if any output is used. */
    for (int i = n - 1; i >= 0; i--) {
        graph_node *node = g->nodes[i];
        for (int o = 0; o < node->n_outputs && !live[i]; o++)
            if (node->outputs[o] != NULL && used[node->outputs[o]->id])
                live[i] = 1;
        if (!live[i])
            continue;
        for (int k = 0; k < node->n_inputs; k++) {
            graph_value *v = node->inputs[k];
            if (v != NULL && v->id < g->n_values && g->values[v->id] == v)
                used[v->id] = 1;
        }
        mark_subgraph_uses(g, node, used);
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (live[i]) {
            g->nodes[kept] = g->nodes[i];
            g->nodes[kept]->id = kept;
            kept++;
        } else {
            for (int o = 0; o < g->nodes[i]->n_outputs; o++)
                if (g->nodes[i]->outputs[o] != NULL)
                    g->nodes[i]->outputs[o]->producer = NULL;
            node_free(g->nodes[i]);
        }
    }
    g->n_nodes = kept;
    /* Drop values nobody produces or uses (outputs of removed nodes, unused constants). */
    int vk = 0;
    for (int i = 0; i < g->n_values; i++) {
        graph_value *v = g->values[i];
        bool keep = used[i] || v->producer != NULL;
        if (keep) {
            g->values[vk] = v;
            v->id = vk++;
        } else {
            value_free(v);
        }
    }
    g->n_values = vk;
    free(live);
    free(used);
    if (index_rebuild(g, g->n_values) != RN_OK) {
        /* Without an index look-ups would miss: fall back to an empty index of
         * the old size is impossible, so drop it; graph_find_value then finds
         * nothing, which callers report as an error rather than misbehaving. */
        free(g->index);
        g->index = NULL;
        g->index_cap = 0;
    }
}
