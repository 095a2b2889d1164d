/* Structural validation of a graph against the op schemas. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops.h"

/* A value is defined when it is a parameter, a constant, produced by a node
 * of g, or (for subgraphs) defined in an enclosing scope. */
static bool value_defined(const graph *g, const graph_value *v)
{
    if (v->is_parameter || v->constant != NULL || v->producer != NULL)
        return true;
    /* Outer-scope values belong to another graph's table. */
    return !(v->id < g->n_values && g->values[v->id] == v) && g->parent != NULL;
}

static rn_status validate_attrs(const graph_node *n, const graph_op_schema *s)
{
    for (int k = 0; k < GRAPH_MAX_ATTR_SPECS && s->attrs[k].name != NULL; k++) {
        const graph_attr_spec *spec = &s->attrs[k];
        const graph_attr *a = graph_node_attr(n, spec->name);
        if (a == NULL) {
            if (spec->required)
                return rn_set_error(RN_PARSE_ERROR,
                                    "node '%s' (%s): required attribute '%s' is missing", n->name,
                                    n->op_type, spec->name);
            continue;
        }
        if (spec->type != GRAPH_ATTR_UNDEFINED && a->type != spec->type)
            return rn_set_error(RN_PARSE_ERROR,
                                "node '%s' (%s): attribute '%s' has type %d, expected %d", n->name,
                                n->op_type, spec->name, (int)a->type, (int)spec->type);
    }
    return RN_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Node names are unique: sort a copy of them and compare neighbours. */
static rn_status check_node_names(const graph *g)
{
    if (g->n_nodes < 2)
        return RN_OK;
    char **names = malloc((size_t)g->n_nodes * sizeof *names);
    if (names == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph: out of memory validating");
    for (int i = 0; i < g->n_nodes; i++)
        names[i] = g->nodes[i]->name;
    qsort(names, (size_t)g->n_nodes, sizeof *names, cmp_names);
    rn_status st = RN_OK;
    for (int i = 1; i < g->n_nodes; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            st = rn_set_error(RN_PARSE_ERROR, "graph '%s': node name '%s' is used twice", g->name,
                              names[i]);
            break;
        }
    free(names);
    return st;
}

static bool onnx_domain(const graph_node *n)
{
    return n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0;
}

static bool has_subgraph(const graph_node *n)
{
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].g != NULL || n->attrs[a].graphs != NULL)
            return true;
    return false;
}

rn_status graph_validate(const graph *g)
{
    for (int i = 0; i < g->n_values; i++)
        if (graph_find_value(g, g->values[i]->name, false) != g->values[i])
            return rn_set_error(RN_PARSE_ERROR, "graph '%s': value '%s' is defined twice", g->name,
                                g->values[i]->name);
    rn_status st = check_node_names(g);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = g->nodes[i];
        const graph_op_schema *s = graph_op_find(n->domain, n->op_type);
        if (s == NULL)
            return rn_set_error(RN_UNSUPPORTED, "node '%s': unknown op '%s%s%s'", n->name,
                                n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
        if (n->n_inputs < s->min_inputs || (s->max_inputs >= 0 && n->n_inputs > s->max_inputs))
            return rn_set_error(RN_PARSE_ERROR, "node '%s' (%s): %d inputs, expected %d to %d",
                                n->name, n->op_type, n->n_inputs, s->min_inputs, s->max_inputs);
        if (n->n_outputs < s->min_outputs || (s->max_outputs >= 0 && n->n_outputs > s->max_outputs))
            return rn_set_error(RN_PARSE_ERROR, "node '%s' (%s): %d outputs, expected %d to %d",
                                n->name, n->op_type, n->n_outputs, s->min_outputs, s->max_outputs);
        for (int k = 0; k < n->n_inputs; k++) {
            const graph_value *v = n->inputs[k];
            /* An ONNX op's leading inputs (below the schema's minimum) are
             * required in every opset: one given as "" (omitted) leaves the
             * op without its data. Not for control flow (Loop's M and cond,
             * Scan-8's sequence_lens may be omitted) nor other domains,
             * whose schemas count optional inputs among the minimum
             * (runnel's fused QLinear ops, com.microsoft's
             * EmbedLayerNormalization). */
            if (v == NULL && k < s->min_inputs && onnx_domain(n) && !has_subgraph(n))
                return rn_set_error(RN_PARSE_ERROR,
                                    "node '%s' (%s): input %d is required but omitted (named \"\")",
                                    n->name, n->op_type, k);
            if (v != NULL && !value_defined(g, v))
                return rn_set_error(RN_PARSE_ERROR,
                                    "node '%s' (%s): input %d '%s' is not defined by any node, "
                                    "input or initializer",
                                    n->name, n->op_type, k, v->name);
        }
        st = validate_attrs(n, s);
        if (st != RN_OK)
            return st;
        for (int a = 0; a < n->n_attrs; a++) {
            const graph_attr *at = &n->attrs[a];
            if (at->g != NULL && (st = graph_validate(at->g)) != RN_OK)
                return rn_wrap_error(st, "node '%s' (%s), subgraph '%s': ", n->name, n->op_type,
                                     at->name);
            for (int s2 = 0; at->graphs != NULL && s2 < at->count; s2++)
                if ((st = graph_validate(at->graphs[s2])) != RN_OK)
                    return rn_wrap_error(st, "node '%s' (%s), subgraph '%s': ", n->name, n->op_type,
                                         at->name);
        }
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (!value_defined(g, g->outputs[i]))
            return rn_set_error(RN_PARSE_ERROR,
                                "graph '%s': output '%s' is not produced by any node, input or "
                                "initializer",
                                g->name, g->outputs[i]->name);
    return RN_OK;
}
