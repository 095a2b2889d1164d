/* Value kinds (tensor, sequence, optional, map), owned sequences, and the values
 * subgraphs read from enclosing scopes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

const char *graph_kind_name(graph_kind kind)
{
    switch (kind) {
    case GRAPH_KIND_TENSOR:
        return "tensor";
    case GRAPH_KIND_SEQUENCE:
        return "sequence";
    case GRAPH_KIND_OPTIONAL:
        return "optional tensor";
    case GRAPH_KIND_OPTIONAL_SEQUENCE:
        return "optional sequence";
    case GRAPH_KIND_MAP:
        return "map";
    case GRAPH_KIND_SEQUENCE_MAP:
        return "sequence of maps";
    }
    return "unknown kind";
}

bool graph_kind_is_optional(graph_kind kind)
{
    return kind == GRAPH_KIND_OPTIONAL || kind == GRAPH_KIND_OPTIONAL_SEQUENCE;
}

graph_kind graph_kind_element(graph_kind kind)
{
    if (kind == GRAPH_KIND_OPTIONAL)
        return GRAPH_KIND_TENSOR;
    if (kind == GRAPH_KIND_OPTIONAL_SEQUENCE)
        return GRAPH_KIND_SEQUENCE;
    return kind;
}

bool graph_kind_accepts(graph_kind declared, graph_kind value)
{
    if (declared == value)
        return true;
    return graph_kind_is_optional(declared) && value == graph_kind_element(declared);
}

rn_status graph_sequence_append(graph_tensor *seq, graph_tensor *item)
{
    /* One allocation per item: sequences are short, and an items array of
     * exactly n_items entries is what every other producer builds too. */
    graph_tensor *p = realloc(seq->items, (seq->n_items + 1) * sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "sequence: out of memory");
    seq->items = p;
    if (seq->kind != GRAPH_KIND_SEQUENCE_MAP)
        seq->kind = GRAPH_KIND_SEQUENCE;
    seq->items[seq->n_items++] = *item;
    memset(item, 0, sizeof *item);
    return RN_OK;
}

bool graph_map_check(const graph_tensor *m, char *why, size_t size)
{
    if (m->kind != GRAPH_KIND_MAP || m->n_items != 2 || m->items == NULL) {
        snprintf(why, size, "a %s is not a map", graph_kind_name(m->kind));
        return false;
    }
    const graph_tensor *k = &m->items[0], *v = &m->items[1];
    if (k->kind != GRAPH_KIND_TENSOR || v->kind != GRAPH_KIND_TENSOR || k->rank != 1 ||
        v->rank != 1) {
        snprintf(why, size, "a map's keys and values must be 1-D tensors");
        return false;
    }
    if (k->type != RN_STRING && k->type != RN_I64) {
        snprintf(why, size, "map keys of element type %s are not supported (string or i64)",
                 rn_element_type_name(k->type));
        return false;
    }
    if (v->type != m->type || k->dims[0] != v->dims[0]) {
        snprintf(why, size, "a map has %lld keys and %lld %s values, expected as many %s values",
                 (long long)k->dims[0], (long long)v->dims[0], rn_element_type_name(v->type),
                 rn_element_type_name(m->type));
        return false;
    }
    if ((k->dims[0] > 0 && k->data == NULL) || (v->dims[0] > 0 && v->data == NULL)) {
        snprintf(why, size, "a map of %lld entries has no data", (long long)k->dims[0]);
        return false;
    }
    for (int64_t i = 0; k->type == RN_STRING && i < k->dims[0]; i++)
        if (((char *const *)k->data)[i] == NULL) {
            snprintf(why, size, "map key %lld is not set", (long long)i);
            return false;
        }
    return true;
}

/* ---- values read from enclosing scopes ---- */

/* The chain of graphs from the subgraph being scanned down to the one whose
 * nodes are visited: a value of any of them is local. */
typedef struct scope_chain {
    const graph *g;
    const struct scope_chain *up;
} scope_chain;

static bool owns(const graph *g, const graph_value *v)
{
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v;
}

static bool local(const scope_chain *c, const graph_value *v)
{
    for (; c != NULL; c = c->up)
        if (owns(c->g, v))
            return true;
    return false;
}

typedef struct value_list {
    int n, cap;
    graph_value **v;
} value_list;

static rn_status list_add(value_list *l, graph_value *v)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return RN_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        graph_value **p = realloc(l->v, (size_t)cap * sizeof *p);
        if (p == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return RN_OK;
}

static rn_status scan_graph(const scope_chain *c, value_list *l);

/* The subgraphs of a node, one at a time: the i-th, or NULL past the end. */
static const graph *node_subgraph(const graph_node *n, int i)
{
    for (int a = 0; a < n->n_attrs; a++) {
        const graph_attr *at = &n->attrs[a];
        if (at->g != NULL) {
            if (i-- == 0)
                return at->g;
        } else if (at->graphs != NULL) {
            if (i < at->count)
                return at->graphs[i];
            i -= at->count;
        }
    }
    return NULL;
}

static rn_status scan_node(const scope_chain *c, const graph_node *n, value_list *l)
{
    for (int k = 0; k < n->n_inputs; k++) {
        graph_value *v = n->inputs[k];
        if (v != NULL && !local(c, v)) {
            rn_status st = list_add(l, v);
            if (st != RN_OK)
                return st;
        }
    }
    const graph *sub;
    for (int i = 0; (sub = node_subgraph(n, i)) != NULL; i++) {
        scope_chain inner = {.g = sub, .up = c};
        rn_status st = scan_graph(&inner, l);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

static rn_status scan_graph(const scope_chain *c, value_list *l)
{
    for (int i = 0; i < c->g->n_nodes; i++) {
        rn_status st = scan_node(c, c->g->nodes[i], l);
        if (st != RN_OK)
            return st;
    }
    for (int o = 0; o < c->g->n_outputs; o++) {
        graph_value *v = c->g->outputs[o];
        if (v != NULL && !local(c, v)) {
            rn_status st = list_add(l, v);
            if (st != RN_OK)
                return st;
        }
    }
    return RN_OK;
}

rn_status graph_outer_inputs(const graph *sub, graph_value ***out, int *n)
{
    value_list l = {0};
    scope_chain c = {.g = sub};
    rn_status st = scan_graph(&c, &l);
    if (st != RN_OK) {
        free(l.v);
        return st;
    }
    *out = l.v;
    *n = l.n;
    return RN_OK;
}

rn_status graph_node_outer_inputs(const graph_node *node, graph_value ***out, int *n)
{
    value_list l = {0};
    const graph *sub;
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && (sub = node_subgraph(node, i)) != NULL; i++) {
        scope_chain c = {.g = sub};
        st = scan_graph(&c, &l);
    }
    if (st != RN_OK) {
        free(l.v);
        return st;
    }
    *out = l.v;
    *n = l.n;
    return RN_OK;
}

/* Replaces every read of outer[i] by captures[i] in g and the graphs nested
 * in it. */
static void repoint(graph *g, graph_value *const *outer, graph_value *const *captures, int n)
{
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *node = g->nodes[i];
        for (int k = 0; k < node->n_inputs; k++)
            for (int j = 0; j < n; j++)
                if (node->inputs[k] == outer[j])
                    node->inputs[k] = captures[j];
        const graph *sub;
        for (int s = 0; (sub = node_subgraph(node, s)) != NULL; s++)
            repoint((graph *)sub, outer, captures, n);
    }
    for (int o = 0; o < g->n_outputs; o++)
        for (int j = 0; j < n; j++)
            if (g->outputs[o] == outer[j])
                g->outputs[o] = captures[j];
}

rn_status graph_capture_outer(graph *sub, graph_value ***outer_out, graph_value ***captures_out,
                              int *n_out)
{
    graph_value **outer = NULL;
    int n = 0;
    rn_status st = graph_outer_inputs(sub, &outer, &n);
    if (st != RN_OK)
        return st;
    graph_value **captures = n > 0 ? calloc((size_t)n, sizeof *captures) : NULL;
    if (n > 0 && captures == NULL) {
        free(outer);
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory");
    }
    for (int j = 0; j < n; j++) {
        if ((st = graph_add_value(sub, outer[j]->name, &captures[j])) != RN_OK) {
            free(outer);
            free(captures);
            return rn_wrap_error(st, "graph '%s': capturing outer value '%s': ", sub->name,
                                 outer[j]->name);
        }
        captures[j]->type = outer[j]->type;
        captures[j]->kind = outer[j]->kind;
        captures[j]->shape = outer[j]->shape;
        if (outer[j]->constant != NULL) {
            captures[j]->shape.rank = outer[j]->constant->rank;
            memcpy(captures[j]->shape.dims, outer[j]->constant->dims,
                   sizeof captures[j]->shape.dims);
        }
    }
    repoint(sub, outer, captures, n);
    sub->parent = NULL;
    *outer_out = outer;
    *captures_out = captures;
    *n_out = n;
    return RN_OK;
}
