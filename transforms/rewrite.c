/* Graph rewriting helpers the passes share: use counting and rewiring (which
 * reach into subgraphs, since a subgraph may read any outer value), fresh
 * names, fused names, attributes, constants and node removal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

bool transforms_is_constant(const graph_value *v)
{
    return v != NULL && v->constant != NULL && !v->is_parameter;
}

bool transforms_is_result(const graph *g, const graph_value *v)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* The subgraphs an attribute holds: one GRAPH, or the GRAPHS list. */
static int attr_graph_count(const graph_attr *at)
{
    return at->g != NULL ? 1 : (at->graphs != NULL ? at->count : 0);
}

static graph *attr_graph(const graph_attr *at, int s)
{
    return at->g != NULL ? at->g : at->graphs[s];
}

bool transforms_has_subgraphs(const graph_node *n)
{
    for (int a = 0; a < n->n_attrs; a++)
        if (attr_graph_count(&n->attrs[a]) > 0)
            return true;
    return false;
}

/* Reads of v inside the subgraphs of `node`, at any depth. */
static int subgraph_uses(const graph_node *node, const graph_value *v)
{
    int uses = 0;
    for (int a = 0; a < node->n_attrs; a++) {
        for (int s = 0; s < attr_graph_count(&node->attrs[a]); s++) {
            const graph *sub = attr_graph(&node->attrs[a], s);
            for (int i = 0; i < sub->n_nodes; i++) {
                const graph_node *inner = sub->nodes[i];
                for (int k = 0; k < inner->n_inputs; k++)
                    uses += inner->inputs[k] == v;
                uses += subgraph_uses(inner, v);
            }
            for (int o = 0; o < sub->n_outputs; o++)
                uses += sub->outputs[o] == v;
        }
    }
    return uses;
}

int transforms_count_uses(const graph *g, const graph_value *v)
{
    int uses = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            uses += n->inputs[k] == v;
        uses += subgraph_uses(n, v);
    }
    for (int o = 0; o < g->n_outputs; o++)
        uses += g->outputs[o] == v;
    return uses;
}

static int subgraph_replace(const graph_node *node, const graph_value *from, graph_value *to)
{
    int done = 0;
    for (int a = 0; a < node->n_attrs; a++) {
        for (int s = 0; s < attr_graph_count(&node->attrs[a]); s++) {
            graph *sub = attr_graph(&node->attrs[a], s);
            for (int i = 0; i < sub->n_nodes; i++) {
                graph_node *inner = sub->nodes[i];
                for (int k = 0; k < inner->n_inputs; k++)
                    if (inner->inputs[k] == from) {
                        inner->inputs[k] = to;
                        done++;
                    }
                done += subgraph_replace(inner, from, to);
            }
            for (int o = 0; o < sub->n_outputs; o++)
                if (sub->outputs[o] == from) {
                    sub->outputs[o] = to;
                    done++;
                }
        }
    }
    return done;
}

int transforms_replace_uses(graph *g, const graph_value *from, graph_value *to)
{
    int done = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from) {
                n->inputs[k] = to;
                done++;
            }
        done += subgraph_replace(n, from, to);
    }
    return done;
}

static bool name_taken(const graph *g, const char *name)
{
    if (graph_find_value(g, name, true) != NULL)
        return true;
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->name, name) == 0)
            return true;
    return false;
}

rn_status transforms_unique_name(const graph *g, const char *base, const char *suffix, char **out)
{
    size_t size = strlen(base) + strlen(suffix) + 24;
    char *s = malloc(size);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    snprintf(s, size, "%s%s", base, suffix);
    for (long k = 2; name_taken(g, s); k++)
        snprintf(s, size, "%s%s_%ld", base, suffix, k);
    *out = s;
    return RN_OK;
}

static bool has_fused(const graph_node *n, const char *name)
{
    for (int i = 0; i < n->n_fused; i++)
        if (strcmp(n->fused_names[i], name) == 0)
            return true;
    return false;
}

rn_status transforms_merge_fused(graph_node *dst, const graph_node *src)
{
    for (int i = 0; i < src->n_fused; i++) {
        if (has_fused(dst, src->fused_names[i]))
            continue;
        rn_status st = graph_node_add_fused_name(dst, src->fused_names[i]);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

rn_status transforms_copy_fused(graph_node *dst, const graph_node *src)
{
    for (int i = 0; i < dst->n_fused; i++)
        free(dst->fused_names[i]);
    dst->n_fused = 0;
    return transforms_merge_fused(dst, src);
}

rn_status transforms_set_attr_int(graph_node *n, const char *name, int64_t value)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_INT, .i = value};
    if (a.name == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    return graph_node_add_attr(n, &a);
}

rn_status transforms_set_attr_string(graph_node *n, const char *name, const char *value)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_STRING, .s = strdup(value)};
    if (a.name == NULL || a.s == NULL) {
        graph_attr_release(&a);
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    }
    return graph_node_add_attr(n, &a);
}

rn_status transforms_set_attr_ints(graph_node *n, const char *name, const int64_t *values,
                                   int count)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_INTS, .count = count};
    a.ints = malloc((size_t)count * sizeof(int64_t) + 1);
    if (a.name == NULL || a.ints == NULL) {
        graph_attr_release(&a);
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    }
    if (count > 0)
        memcpy(a.ints, values, (size_t)count * sizeof(int64_t));
    return graph_node_add_attr(n, &a);
}

rn_status transforms_add_constant(graph *g, const char *base, const char *suffix, graph_tensor *t,
                                  graph_value **out)
{
    char *name = NULL;
    graph_value *v = NULL;
    graph_tensor *holder = malloc(sizeof *holder);
    rn_status st =
        holder != NULL ? RN_OK : rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    if (st == RN_OK)
        st = transforms_unique_name(g, base, suffix, &name);
    if (st == RN_OK)
        st = graph_add_value(g, name, &v);
    free(name);
    if (st != RN_OK) {
        free(holder);
        graph_tensor_release(t);
        return st;
    }
    *holder = *t;
    memset(t, 0, sizeof *t);
    v->constant = holder;
    v->type = holder->type;
    v->shape.rank = holder->rank;
    memcpy(v->shape.dims, holder->dims, sizeof v->shape.dims);
    *out = v;
    return RN_OK;
}

rn_status transforms_node_list_push(transforms_node_list *l, graph_node *n)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        graph_node **p = realloc(l->nodes, (size_t)cap * sizeof *p);
        if (p == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
        l->nodes = p;
        l->cap = cap;
    }
    l->nodes[l->n++] = n;
    return RN_OK;
}

void transforms_node_list_free(transforms_node_list *l)
{
    free(l->nodes);
    memset(l, 0, sizeof *l);
}

/* The index of n in g->nodes: its id while ids are fresh (graph_sort sets
 * them and graph_add_node appends with id = count), else found by a scan. */
static int node_index(const graph *g, const graph_node *n)
{
    if (n->id >= 0 && n->id < g->n_nodes && g->nodes[n->id] == n)
        return n->id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == n)
            return i;
    return -1;
}

rn_status transforms_remove_nodes(graph *g, const transforms_node_list *l)
{
    if (l->n == 0)
        return RN_OK;
    /* The graph API frees nodes only with their graph, so the removed nodes
     * move into a scratch graph that graph_free then releases (names,
     * attributes and subgraphs included; it holds no values). */
    graph *scratch = NULL;
    char *gone = calloc((size_t)g->n_nodes + 1, 1);
    graph_node **moved = malloc((size_t)l->n * sizeof *moved);
    rn_status st =
        gone != NULL && moved != NULL ? graph_create("removed", &scratch) : RN_OUT_OF_MEMORY;
    if (st != RN_OK) {
        free(gone);
        free(moved);
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory removing nodes");
    }
    int n_moved = 0;
    for (int i = 0; i < l->n; i++) {
        int at = node_index(g, l->nodes[i]);
        if (at < 0 || gone[at])
            continue;
        gone[at] = 1;
        graph_node *n = g->nodes[at];
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] != NULL && n->outputs[o]->producer == n)
                n->outputs[o]->producer = NULL;
        moved[n_moved++] = n;
    }
    int kept = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (gone[i])
            continue;
        g->nodes[kept] = g->nodes[i];
        g->nodes[kept]->id = kept;
        kept++;
    }
    g->n_nodes = kept;
    scratch->nodes = moved;
    scratch->n_nodes = n_moved;
    scratch->cap_nodes = l->n;
    graph_free(scratch);
    free(gone);
    return RN_OK;
}

int transforms_new_node_opset(const graph *g)
{
    return g->opset >= 7 ? g->opset : 7;
}

rn_status transforms_finish_removal(graph *g, transforms_node_list *l, rn_status st, int *changes)
{
    if (st == RN_OK)
        st = transforms_remove_nodes(g, l);
    if (st == RN_OK && l->n > 0)
        st = graph_sort(g);
    if (st == RN_OK)
        *changes = l->n;
    transforms_node_list_free(l);
    return st;
}

graph_node *transforms_sole_reader(const graph *g, const graph_value *v)
{
    if (v == NULL || transforms_is_result(g, v) || transforms_count_uses(g, v) != 1)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            if (g->nodes[i]->inputs[k] == v)
                return g->nodes[i];
    return NULL;
}
