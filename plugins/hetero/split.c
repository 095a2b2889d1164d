/* HETERO's split: nodes grouped by device into parts that form a DAG, and
 * each part's subgraph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "plugins/hetero/hetero.h"

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
}

/* The values node n reads: its inputs and the outer values its subgraphs
 * read. *vals is malloc'ed. */
static rn_status node_reads(const graph_node *n, graph_value ***vals, int *count)
{
    graph_value **outer = NULL;
    int n_outer = 0;
    rn_status st = graph_node_outer_inputs(n, &outer, &n_outer);
    if (st != RN_OK)
        return st;
    graph_value **all = malloc(((size_t)n->n_inputs + (size_t)n_outer + 1) * sizeof *all);
    if (all == NULL) {
        free(outer);
        return oom();
    }
    int k = 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] != NULL)
            all[k++] = n->inputs[i];
    for (int i = 0; i < n_outer; i++)
        all[k++] = outer[i];
    free(outer);
    *vals = all;
    *count = k;
    return RN_OK;
}

/* Adds v to list (once). */
static rn_status add_once(const graph_value ***list, int *n, int *cap, const graph_value *v)
{
    for (int i = 0; i < *n; i++)
        if ((*list)[i] == v)
            return RN_OK;
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        const graph_value **p = realloc((void *)*list, (size_t)c * sizeof *p);
        if (p == NULL)
            return oom();
        *list = p;
        *cap = c;
    }
    (*list)[(*n)++] = v;
    return RN_OK;
}

/* The subgraph of the nodes of `g` with in_part set: a clone of g in which
 * `inputs` (values of g) become parameters and `outputs` (values of g) the
 * results, pruned to what they need. */
static rn_status extract(const graph *g, const char *name, const graph_value *const *inputs,
                         int n_inputs, const graph_value *const *outputs, int n_outputs,
                         graph **out)
{
    graph *c;
    rn_status st = graph_clone(g, &c);
    if (st != RN_OK)
        return st;
    free(c->name);
    c->name = strdup(name);
    c->n_inputs = 0;
    c->n_outputs = 0;
    for (int i = 0; i < c->n_values; i++)
        c->values[i]->is_parameter = false;
    /* Cut inputs lose their producer (a node of another part, which the
     * pruning then removes with everything else the results do not need). */
    for (int i = 0; i < n_inputs && st == RN_OK; i++) {
        graph_value *v = graph_find_value(c, inputs[i]->name, false);
        if (v->producer != NULL) {
            v->producer->outputs[v->producer_output] = NULL;
            v->producer = NULL;
        }
        st = graph_add_input(c, v);
    }
    for (int i = 0; i < n_outputs && st == RN_OK; i++)
        st = graph_add_output(c, graph_find_value(c, outputs[i]->name, false));
    if (st == RN_OK) {
        graph_prune(c);
        st = graph_sort(c);
    }
    if (st != RN_OK) {
        graph_free(c);
        return st;
    }
    *out = c;
    return RN_OK;
}

/* Builds part p's inputs, outputs and subgraph. */
static rn_status build_part(const graph *g, const int *part_of, int p, hetero_part *part,
                            const hetero_split *s)
{
    int n = g->n_nodes;
    const graph_value **ins = NULL, **outs = NULL;
    int n_ins = 0, cap_ins = 0, n_outs = 0, cap_outs = 0;
    bool *in_part = calloc((size_t)n + 1, sizeof *in_part);
    if (in_part == NULL)
        return oom();
    rn_status st = RN_OK;
    for (int i = 0; i < n; i++)
        in_part[i] = part_of[i] == p;
    /* Inputs: what the part's nodes read that no node of the part makes. */
    for (int i = 0; i < n && st == RN_OK; i++) {
        if (!in_part[i])
            continue;
        graph_value **reads;
        int n_reads;
        if ((st = node_reads(g->nodes[i], &reads, &n_reads)) != RN_OK)
            break;
        for (int k = 0; k < n_reads && st == RN_OK; k++) {
            const graph_value *v = reads[k];
            if (v->constant != NULL || (v->producer != NULL && in_part[v->producer->id]))
                continue;
            if (v->producer == NULL && !v->is_parameter)
                continue; /* an outer-scope value of a subgraph: not ours */
            st = add_once(&ins, &n_ins, &cap_ins, v);
        }
        free(reads);
    }
    /* Outputs: what the part makes that the model returns or another part
     * reads. */
    for (int i = 0; i < n && st == RN_OK; i++) {
        if (!in_part[i])
            continue;
        for (int o = 0; o < g->nodes[i]->n_outputs && st == RN_OK; o++) {
            const graph_value *v = g->nodes[i]->outputs[o];
            if (v == NULL)
                continue;
            bool needed = false;
            for (int k = 0; k < g->n_outputs; k++)
                needed = needed || g->outputs[k] == v;
            for (int j = 0; j < n && !needed && st == RN_OK; j++) {
                if (in_part[j])
                    continue;
                graph_value **reads;
                int n_reads;
                if ((st = node_reads(g->nodes[j], &reads, &n_reads)) != RN_OK)
                    break;
                for (int k = 0; k < n_reads; k++)
                    needed = needed || reads[k] == v;
                free(reads);
            }
            if (needed && st == RN_OK)
                st = add_once(&outs, &n_outs, &cap_outs, v);
        }
    }
    char name[256];
    snprintf(name, sizeof name, "%s_part%d", g->name != NULL ? g->name : "model", p);
    if (st == RN_OK && n_outs == 0)
        st = rn_set_error(RN_INTERNAL, "HETERO: part %d has no outputs", p);
    if (st == RN_OK)
        st = extract(g, name, ins, n_ins, outs, n_outs, &part->g);
    /* Where each input comes from. */
    if (st == RN_OK && (part->inputs = calloc((size_t)n_ins + 1, sizeof *part->inputs)) == NULL)
        st = oom();
    for (int k = 0; k < n_ins && st == RN_OK; k++) {
        const graph_value *v = ins[k];
        hetero_source src = {-1, -1};
        if (v->producer == NULL) {
            for (int m = 0; m < g->n_inputs; m++)
                if (g->inputs[m] == v)
                    src.index = m;
        } else {
            int q = part_of[v->producer->id];
            src.part = q;
            for (int o = 0; o < s->parts[q].g->n_outputs; o++)
                if (strcmp(s->parts[q].g->outputs[o]->name, v->name) == 0)
                    src.index = o;
        }
        if (src.index < 0)
            st = rn_set_error(RN_INTERNAL, "HETERO: part %d: no source for value '%s'", p, v->name);
        part->inputs[k] = src;
    }
    part->n_inputs = n_ins;
    free((void *)ins);
    free((void *)outs);
    free(in_part);
    return st;
}

rn_status hetero_single_node(const graph *g, int node, graph **out)
{
    const graph_node *n = g->nodes[node];
    graph_value **reads;
    int n_reads;
    rn_status st = node_reads(n, &reads, &n_reads);
    if (st != RN_OK)
        return st;
    const graph_value **ins = NULL, **outs = NULL;
    int n_ins = 0, cap_ins = 0, n_outs = 0, cap_outs = 0;
    for (int k = 0; k < n_reads && st == RN_OK; k++)
        if (reads[k]->constant == NULL)
            st = add_once(&ins, &n_ins, &cap_ins, reads[k]);
    for (int o = 0; o < n->n_outputs && st == RN_OK; o++)
        if (n->outputs[o] != NULL)
            st = add_once(&outs, &n_outs, &cap_outs, n->outputs[o]);
    if (st == RN_OK)
        st = extract(g, n->name, ins, n_ins, outs, n_outs, out);
    free(reads);
    free((void *)ins);
    free((void *)outs);
    return st;
}

void hetero_split_release(hetero_split *s)
{
    for (int p = 0; p < s->n_parts; p++) {
        hetero_part *part = &s->parts[p];
        if (part->compiled != NULL)
            part->ops->free(part->compiled);
        graph_free(part->g);
        free(part->inputs);
    }
    free(s->parts);
    free(s->outputs);
    memset(s, 0, sizeof *s);
}

rn_status hetero_split_build(const graph *g, const int *device_of, hetero_split *out)
{
    int n = g->n_nodes;
    int *part_of = malloc(((size_t)n + 1) * sizeof *part_of);
    int *part_device = malloc(((size_t)n + 1) * sizeof *part_device);
    hetero_split s = {0};
    rn_status st = part_of != NULL && part_device != NULL ? RN_OK : oom();
    /* In node order: a node joins the latest part of its device that comes
     * no earlier than the parts of its producers, or starts a new one, so
     * every edge between parts goes forward and the parts form a DAG. */
    for (int i = 0; i < n && st == RN_OK; i++) {
        graph_value **reads;
        int n_reads;
        if ((st = node_reads(g->nodes[i], &reads, &n_reads)) != RN_OK)
            break;
        int m = -1;
        for (int k = 0; k < n_reads; k++)
            if (reads[k]->producer != NULL && reads[k]->producer->id < i &&
                part_of[reads[k]->producer->id] > m)
                m = part_of[reads[k]->producer->id];
        free(reads);
        int chosen = -1;
        for (int p = s.n_parts - 1; p >= 0 && p >= m && chosen < 0; p--)
            if (part_device[p] == device_of[i])
                chosen = p;
        if (chosen < 0) {
            chosen = s.n_parts;
            part_device[s.n_parts++] = device_of[i];
        }
        part_of[i] = chosen;
    }
    if (st == RN_OK && s.n_parts == 0)
        st = rn_set_error(RN_INVALID_ARG, "HETERO: the model has no nodes to split");
    if (st == RN_OK && (s.parts = calloc((size_t)s.n_parts, sizeof *s.parts)) == NULL)
        st = oom();
    for (int p = 0; p < s.n_parts && st == RN_OK; p++) {
        s.parts[p].device = part_device[p];
        st = build_part(g, part_of, p, &s.parts[p], &s);
    }
    /* Model outputs. */
    if (st == RN_OK && (s.outputs = calloc((size_t)g->n_outputs + 1, sizeof *s.outputs)) == NULL)
        st = oom();
    s.n_outputs = g->n_outputs;
    for (int o = 0; o < g->n_outputs && st == RN_OK; o++) {
        const graph_value *v = g->outputs[o];
        if (v->producer == NULL)
            st = rn_set_error(RN_UNSUPPORTED,
                              "HETERO: output '%s' is an input or a constant of the model, which "
                              "no device computes",
                              v->name);
        else {
            int q = part_of[v->producer->id];
            s.outputs[o] = (hetero_source){q, -1};
            for (int k = 0; k < s.parts[q].g->n_outputs; k++)
                if (strcmp(s.parts[q].g->outputs[k]->name, v->name) == 0)
                    s.outputs[o].index = k;
        }
    }
    free(part_of);
    free(part_device);
    if (st != RN_OK) {
        hetero_split_release(&s);
        return st;
    }
    *out = s;
    return RN_OK;
}
