/* Attribute defaults from the op schemas (rn_attr_spec.dflt): what a node
 * means when it omits an attribute is said once, in its op's schema, and
 * every device reads it from there. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "graph/ops.h"

const rn_attr_spec *rn_op_attr_spec(const char *domain, const char *op_type, const char *name)
{
    const graph_op_schema *op = graph_op_find(domain, op_type);
    for (int i = 0; op != NULL && i < GRAPH_MAX_ATTR_SPECS && op->attrs[i].name != NULL; i++)
        if (strcmp(op->attrs[i].name, name) == 0)
            return &op->attrs[i];
    return NULL;
}

/* The default of `name` for n's op, of `type`; NULL (asserting) when the
 * schema gives none. */
static const rn_attr_spec *default_of(const graph_node *n, const char *name, rn_attr_type type)
{
    const rn_attr_spec *spec = rn_op_attr_spec(n->domain, n->op_type, name);
    bool ok = spec != NULL && spec->has_default && spec->type == type;
    assert(ok && "the op's schema gives this attribute no default of this type");
    return ok ? spec : NULL;
}

bool graph_node_attr_has_default(const graph_node *n, const char *name)
{
    const rn_attr_spec *spec = rn_op_attr_spec(n->domain, n->op_type, name);
    return spec != NULL && spec->has_default;
}

float graph_node_attr_float_or_default(const graph_node *n, const char *name)
{
    const graph_attr *a = graph_node_attr(n, name);
    if (a != NULL && a->type == GRAPH_ATTR_FLOAT)
        return a->f;
    const rn_attr_spec *spec = default_of(n, name, RN_ATTR_FLOAT);
    return spec != NULL ? spec->dflt.f : NAN;
}

int64_t graph_node_attr_int_or_default(const graph_node *n, const char *name)
{
    const graph_attr *a = graph_node_attr(n, name);
    if (a != NULL && a->type == GRAPH_ATTR_INT)
        return a->i;
    const rn_attr_spec *spec = default_of(n, name, RN_ATTR_INT);
    return spec != NULL ? spec->dflt.i : 0;
}

const char *graph_node_attr_string_or_default(const graph_node *n, const char *name)
{
    const graph_attr *a = graph_node_attr(n, name);
    if (a != NULL && a->type == GRAPH_ATTR_STRING && a->s != NULL)
        return a->s;
    const rn_attr_spec *spec = default_of(n, name, RN_ATTR_STRING);
    return spec != NULL ? spec->dflt.s : NULL;
}

float rn_node_attr_float_or_default(const rn_node *node, const char *name)
{
    return graph_node_attr_float_or_default(node, name);
}

int64_t rn_node_attr_int_or_default(const rn_node *node, const char *name)
{
    return graph_node_attr_int_or_default(node, name);
}

const char *rn_node_attr_string_or_default(const rn_node *node, const char *name)
{
    return graph_node_attr_string_or_default(node, name);
}

int rn_activation_params(const char *op, const float *params, int n, float *out, int max)
{
    const graph_op_schema *s = graph_op_find("", op);
    int filled = 0;
    for (; filled < n && filled < max; filled++)
        out[filled] = params[filled];
    int k = 0; /* index among the op's FLOAT attributes */
    for (int i = 0; s != NULL && i < GRAPH_MAX_ATTR_SPECS && s->attrs[i].name != NULL; i++) {
        if (s->attrs[i].type != RN_ATTR_FLOAT)
            continue;
        if (k++ < filled)
            continue;
        if (!s->attrs[i].has_default || filled == max)
            break;
        out[filled++] = s->attrs[i].dflt.f;
    }
    return filled;
}
