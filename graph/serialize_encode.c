/* Graph -> bytes: the graph encoding of docs/export.md, deterministic so that
 * it doubles as the input of graph_hash. Subgraphs are encoded inline; the
 * values they read from enclosing graphs are written by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize_internal.h"

/* Records an encoding error (the first one wins) and returns it. */
static rn_status enc_fail(serial_sink *s, rn_status st)
{
    if (s->st == RN_OK)
        s->st = st;
    return s->st;
}

/* The chain of graphs being encoded, innermost first: outer-scope references
 * must resolve in it. */
typedef struct scope {
    const graph *g;
    const struct scope *up;
    int depth;
} scope;

static bool is_local(const graph *g, const graph_value *v)
{
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v;
}

/* The values of enclosing graphs that g's nodes and results read, in first-use
 * order. They are written by name, so that a reader resolves them in the
 * graphs it has rebuilt around the subgraph. */
typedef struct outer_refs {
    int n, cap;
    const graph_value **v;
} outer_refs;

static int outer_index(const outer_refs *o, const graph_value *v)
{
    for (int i = 0; i < o->n; i++)
        if (o->v[i] == v)
            return i;
    return -1;
}

static rn_status outer_add(serial_sink *s, const scope *sc, outer_refs *o, const graph_value *v,
                           const char *user)
{
    if (v == NULL || is_local(sc->g, v) || outer_index(o, v) >= 0)
        return RN_OK;
    const graph_value *found = NULL;
    for (const scope *up = sc->up; up != NULL && found == NULL; up = up->up)
        found = graph_find_value(up->g, v->name, false);
    if (found != v)
        return enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                        "graph encoding: graph '%s': %s reads value '%s', which "
                                        "is defined neither in the graph nor in an enclosing one",
                                        sc->g->name, user, v->name));
    if (o->n == o->cap) {
        int ncap = o->cap ? 2 * o->cap : 8;
        const graph_value **p = realloc(o->v, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return enc_fail(s, rn_set_error(RN_OUT_OF_MEMORY, "graph encoding: out of memory"));
        o->v = p;
        o->cap = ncap;
    }
    o->v[o->n++] = v;
    return RN_OK;
}

/* -1 for an omitted value, the id of a local value, n_values + k for entry k
 * of the outer references. */
static int32_t value_ref(const graph *g, const outer_refs *o, const graph_value *v)
{
    if (v == NULL)
        return -1;
    if (is_local(g, v))
        return v->id;
    return g->n_values + outer_index(o, v);
}

static void enc_graph(serial_sink *s, const graph *g, const scope *up);

static void enc_tensor(serial_sink *s, const graph_tensor *t, const char *owner)
{
    size_t count = 0, want = 0;
    bool ok = rn_element_type_is_valid(t->type) && t->rank >= 0 && t->rank <= RN_MAX_RANK &&
              serial_dims_count(t->rank, t->dims, &count);
    if (ok && t->type != RN_STRING)
        ok = !__builtin_mul_overflow(count, rn_element_type_size(t->type), &want) &&
             want == t->nbytes;
    if (!ok || (count > 0 && t->data == NULL)) {
        enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                 "graph encoding: %s: a tensor of type %d, rank %d and %zu bytes "
                                 "whose dims, byte count and data disagree",
                                 owner, (int)t->type, t->rank, t->nbytes));
        return;
    }
    serial_put_u32(s, (uint32_t)t->type);
    serial_put_u32(s, (uint32_t)t->rank);
    for (int i = 0; i < t->rank; i++)
        serial_put_u64(s, (uint64_t)t->dims[i]);
    if (t->type == RN_STRING) {
        char *const *str = t->data;
        for (size_t i = 0; i < count; i++)
            serial_put_str(s, str[i]);
    } else {
        serial_put_u64(s, t->nbytes);
        serial_put(s, t->data, t->nbytes);
    }
}

static void enc_attr(serial_sink *s, const graph_attr *a, const graph_node *n, const scope *sc)
{
    char owner[256];
    snprintf(owner, sizeof owner, "node '%s' (%s), attribute '%s'", n->name, n->op_type,
             a->name ? a->name : "");
    serial_put_str(s, a->name);
    serial_put_u32(s, (uint32_t)a->type);
    int count = a->count > 0 ? a->count : 0;
    switch (a->type) {
    case GRAPH_ATTR_UNDEFINED:
        break;
    case GRAPH_ATTR_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &a->f, 4);
        serial_put_u32(s, bits);
        break;
    }
    case GRAPH_ATTR_INT:
        serial_put_u64(s, (uint64_t)a->i);
        break;
    case GRAPH_ATTR_STRING:
        serial_put_u8(s, a->s != NULL);
        if (a->s != NULL)
            serial_put_str(s, a->s);
        break;
    case GRAPH_ATTR_TENSOR:
        serial_put_u8(s, a->t != NULL);
        if (a->t != NULL)
            enc_tensor(s, a->t, owner);
        break;
    case GRAPH_ATTR_GRAPH:
        serial_put_u8(s, a->g != NULL);
        if (a->g != NULL)
            enc_graph(s, a->g, sc);
        break;
    case GRAPH_ATTR_TYPE_PROTO: /* kind, element type, rank, dims */
        serial_put_u32(s, (uint32_t)a->tp.kind);
        serial_put_u32(s, (uint32_t)a->tp.elem);
        serial_put_u32(s, (uint32_t)a->tp.shape.rank);
        for (int i = 0; i < a->tp.shape.rank && i < RN_MAX_RANK; i++)
            serial_put_u64(s, (uint64_t)a->tp.shape.dims[i]);
        break;
    case GRAPH_ATTR_FLOATS:
    case GRAPH_ATTR_INTS:
    case GRAPH_ATTR_STRINGS:
    case GRAPH_ATTR_TENSORS:
    case GRAPH_ATTR_GRAPHS: {
        serial_put_u32(s, (uint32_t)count);
        for (int k = 0; k < count && s->st == RN_OK; k++) {
            if (a->type == GRAPH_ATTR_FLOATS) {
                uint32_t bits;
                memcpy(&bits, &a->floats[k], 4);
                serial_put_u32(s, bits);
            } else if (a->type == GRAPH_ATTR_INTS) {
                serial_put_u64(s, (uint64_t)a->ints[k]);
            } else if (a->type == GRAPH_ATTR_STRINGS) {
                serial_put_str(s, a->strings[k]);
            } else if (a->type == GRAPH_ATTR_TENSORS) {
                enc_tensor(s, &a->tensors[k], owner);
            } else {
                enc_graph(s, a->graphs[k], sc);
            }
        }
        break;
    }
    default:
        enc_fail(s, rn_set_error(RN_INVALID_ARG, "graph encoding: %s: unknown attribute type %d",
                                 owner, (int)a->type));
    }
}

static void enc_node(serial_sink *s, const graph_node *n, const scope *sc, const outer_refs *o)
{
    const graph *g = sc->g;
    serial_put_str(s, n->name);
    serial_put_str(s, n->domain);
    serial_put_str(s, n->op_type);
    serial_put_u32(s, (uint32_t)n->opset);
    serial_put_u32(s, (uint32_t)n->n_inputs);
    for (int k = 0; k < n->n_inputs; k++)
        serial_put_u32(s, (uint32_t)value_ref(g, o, n->inputs[k]));
    serial_put_u32(s, (uint32_t)n->n_outputs);
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] != NULL && !is_local(g, n->outputs[k])) {
            enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                     "graph encoding: node '%s' (%s): output %d '%s' is not a "
                                     "value of graph '%s'",
                                     n->name, n->op_type, k, n->outputs[k]->name, g->name));
            return;
        }
        serial_put_u32(s, (uint32_t)value_ref(g, o, n->outputs[k]));
    }
    serial_put_u32(s, (uint32_t)n->n_attrs);
    for (int k = 0; k < n->n_attrs && s->st == RN_OK; k++)
        enc_attr(s, &n->attrs[k], n, sc);
    serial_put_u32(s, (uint32_t)n->n_fused);
    for (int k = 0; k < n->n_fused; k++)
        serial_put_str(s, n->fused_names[k]);
}

static void enc_value(serial_sink *s, const graph *g, const graph_value *v)
{
    if (!serial_type_ok(v->type) || v->shape.rank < -1 || v->shape.rank > RN_MAX_RANK) {
        enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                 "graph encoding: graph '%s': value '%s' has type %d and rank %d",
                                 g->name, v->name, (int)v->type, v->shape.rank));
        return;
    }
    serial_put_str(s, v->name);
    serial_put_u32(s, (uint32_t)v->type);
    serial_put_u32(s, (uint32_t)v->shape.rank);
    for (int i = 0; i < v->shape.rank; i++)
        serial_put_u64(s, (uint64_t)v->shape.dims[i]);
    serial_put_u8(s, (uint8_t)((v->is_parameter ? 1 : 0) | (v->constant != NULL ? 2 : 0) |
                               ((unsigned)v->kind & 7u) << 2));
    if (v->constant != NULL) {
        char owner[256];
        snprintf(owner, sizeof owner, "graph '%s': constant '%s'", g->name, v->name);
        enc_tensor(s, v->constant, owner);
    }
}

/* graph: name, opset, ir_version, values, outer references, nodes, inputs
 * (local ids), outputs (references). */
static void enc_graph(serial_sink *s, const graph *g, const scope *up)
{
    scope sc = {.g = g, .up = up, .depth = up != NULL ? up->depth + 1 : 0};
    if (sc.depth > GRAPH_SERIAL_MAX_DEPTH) {
        enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                 "graph encoding: graph '%s': subgraphs nest deeper than %d",
                                 g->name, GRAPH_SERIAL_MAX_DEPTH));
        return;
    }
    outer_refs o = {0};
    char user[256];
    for (int i = 0; i < g->n_nodes && s->st == RN_OK; i++) {
        const graph_node *n = g->nodes[i];
        snprintf(user, sizeof user, "node '%s' (%s)", n->name, n->op_type);
        for (int k = 0; k < n->n_inputs && s->st == RN_OK; k++)
            outer_add(s, &sc, &o, n->inputs[k], user);
    }
    for (int i = 0; i < g->n_outputs && s->st == RN_OK; i++) {
        if (g->outputs[i] == NULL)
            enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                     "graph encoding: graph '%s': result %d is NULL", g->name, i));
        else
            outer_add(s, &sc, &o, g->outputs[i], "a result");
    }
    serial_put_str(s, g->name);
    serial_put_u32(s, (uint32_t)g->opset);
    serial_put_u32(s, (uint32_t)g->ir_version);
    serial_put_u32(s, (uint32_t)g->n_values);
    for (int i = 0; i < g->n_values && s->st == RN_OK; i++)
        enc_value(s, g, g->values[i]);
    serial_put_u32(s, (uint32_t)o.n);
    for (int i = 0; i < o.n; i++)
        serial_put_str(s, o.v[i]->name);
    serial_put_u32(s, (uint32_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes && s->st == RN_OK; i++)
        enc_node(s, g->nodes[i], &sc, &o);
    serial_put_u32(s, (uint32_t)g->n_inputs);
    for (int i = 0; i < g->n_inputs && s->st == RN_OK; i++) {
        if (g->inputs[i] == NULL || !is_local(g, g->inputs[i]))
            enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                     "graph encoding: graph '%s': input %d is not a value of the "
                                     "graph",
                                     g->name, i));
        else
            serial_put_u32(s, (uint32_t)g->inputs[i]->id);
    }
    serial_put_u32(s, (uint32_t)g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++)
        serial_put_u32(s, (uint32_t)value_ref(g, &o, g->outputs[i]));
    free(o.v);
}

void serial_encode_payload(serial_sink *s, const graph *g)
{
    serial_put(s, GRAPH_SERIAL_TAG, 4);
    serial_put_u32(s, GRAPH_SERIAL_VERSION);
    enc_graph(s, g, NULL);
}

rn_status graph_serialize(const graph *g, graph_buffer *out)
{
    serial_sink count = {0};
    serial_encode_payload(&count, g);
    if (count.st != RN_OK)
        return count.st;
    serial_sink w = {.data = malloc(count.size ? count.size : 1), .cap = count.size};
    if (w.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph encoding: out of memory for %zu bytes",
                            count.size);
    serial_encode_payload(&w, g);
    if (w.st != RN_OK) {
        free(w.data);
        return w.st;
    }
    out->data = w.data;
    out->size = w.size;
    return RN_OK;
}
