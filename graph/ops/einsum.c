/* Einsum's equation (graph/ops/attr_parse.h): parsed once for the schema
 * (graph/ops/math.c, which infers the output shape) and for the kernels. */
#include <string.h>

#include "graph/ops/attr_parse.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static int einsum_label(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return 26 + c - 'A';
    return -1;
}

/* The terms of eq into e (no count check against the inputs yet). */
static rn_status einsum_terms(const graph_node *node, const char *eq, graph_einsum *e)
{
    int t = 0;
    graph_einsum_term *cur = &e->in[0];
    for (const char *c = eq; *c; c++) {
        if (*c == ' ')
            continue;
        if (*c == ',' && !e->has_out) {
            if (++t >= GRAPH_EINSUM_MAX_TERMS)
                return rn_set_error(RN_INVALID_ARG,
                                    NODE_FMT "equation '%s' has more terms than inputs",
                                    NODE_ARGS(node), eq);
            cur = &e->in[t];
            continue;
        }
        if (c[0] == '-' && c[1] == '>' && !e->has_out) {
            e->has_out = true;
            cur = &e->out;
            c++;
            continue;
        }
        int l = einsum_label(*c);
        if (c[0] == '.' && c[1] == '.' && c[2] == '.') {
            if (cur->has_ellipsis)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s': a term has two '...'",
                                    NODE_ARGS(node), eq);
            cur->has_ellipsis = true;
            l = GRAPH_EINSUM_ELLIPSIS;
            c += 2;
        } else if (l < 0) {
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s': unexpected '%c'",
                                NODE_ARGS(node), eq, *c);
        }
        if (cur->n > RN_MAX_RANK)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s': a term is too long",
                                NODE_ARGS(node), eq);
        cur->label[cur->n++] = l;
    }
    e->n_terms = t + 1;
    return RN_OK;
}

rn_status graph_einsum_parse(const graph_node *node, int n_inputs, graph_einsum *e)
{
    memset(e, 0, sizeof *e);
    e->equation = graph_node_attr_string(node, "equation", NULL);
    if (e->equation == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute equation is required",
                            NODE_ARGS(node));
    if (n_inputs > GRAPH_EINSUM_MAX_TERMS)
        return rn_set_error(RN_UNSUPPORTED, NODE_FMT "more than %d inputs", NODE_ARGS(node),
                            GRAPH_EINSUM_MAX_TERMS);
    rn_status st = einsum_terms(node, e->equation, e);
    if (st != RN_OK)
        return st;
    if (e->n_terms != n_inputs)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s' has %d terms for %d inputs",
                            NODE_ARGS(node), e->equation, e->n_terms, n_inputs);
    for (int i = 0; i < e->n_terms; i++)
        for (int k = 0; k < e->in[i].n; k++)
            if (e->in[i].label[k] != GRAPH_EINSUM_ELLIPSIS)
                e->count[e->in[i].label[k]]++;
    return RN_OK;
}

rn_status graph_einsum_output(const graph_node *node, const graph_einsum *e, int *labels, int *n)
{
    *n = 0;
    if (!e->has_out) {
        labels[(*n)++] = GRAPH_EINSUM_ELLIPSIS;
        /* ASCII order: 'A'..'Z' (labels 26..51) before 'a'..'z' (0..25) */
        for (int k = 0; k < GRAPH_EINSUM_LABELS; k++) {
            int l = k < 26 ? 26 + k : k - 26;
            if (e->count[l] == 1)
                labels[(*n)++] = l;
        }
        return RN_OK;
    }
    for (int k = 0; k < e->out.n; k++) {
        int l = e->out.label[k];
        if (l != GRAPH_EINSUM_ELLIPSIS) {
            if (e->count[l] == 0)
                return rn_set_error(RN_INVALID_ARG,
                                    NODE_FMT "equation '%s': an output label is in no input",
                                    NODE_ARGS(node), e->equation);
            for (int j = 0; j < k; j++)
                if (e->out.label[j] == l)
                    return rn_set_error(RN_INVALID_ARG,
                                        NODE_FMT "equation '%s': an output label repeats",
                                        NODE_ARGS(node), e->equation);
        }
        labels[(*n)++] = l;
    }
    return RN_OK;
}
