/* Running shape inference over nodes and graphs, and the helpers that infer
 * functions share. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"

void graph_node_ports(const graph_node *node, graph_port *in, graph_port *out)
{
    for (int i = 0; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        graph_port p = {.present = v != NULL, .type = RN_UNDEFINED, .shape = {.rank = -1}};
        if (v != NULL) {
            p.type = v->type;
            p.kind = v->kind;
            p.shape = v->shape;
            if (v->constant != NULL && v->constant->kind == GRAPH_KIND_TENSOR) {
                p.type = v->constant->type;
                p.shape.rank = v->constant->rank;
                memcpy(p.shape.dims, v->constant->dims, sizeof p.shape.dims);
                p.data = v->constant->data;
            }
        }
        in[i] = p;
    }
    for (int i = 0; i < node->n_outputs; i++) {
        const graph_value *v = node->outputs[i];
        graph_port p = {.present = v != NULL, .type = RN_UNDEFINED, .shape = {.rank = -1}};
        out[i] = p;
    }
}

/* Merges an inferred shape with a declared one (value_info, a declared graph
 * output): known dims win. A declaration that contradicts inference (another
 * rank, or another static dim) loses to it, as in ONNX Runtime: exporters
 * write stale or wrong value_info, and the op's semantics decide what the
 * model computes. The contradiction becomes a warning on `warn_to` (the
 * graph being inferred; NULL at run time, when there is nobody to tell). */
static void merge_shape(const graph_node *node, graph_value *v, const graph_shape *inferred,
                        graph *warn_to)
{
    graph_shape merged = *inferred;
    if (v->shape.rank >= 0 && inferred->rank >= 0) {
        bool agree = v->shape.rank == inferred->rank;
        for (int d = 0; agree && d < inferred->rank; d++) {
            int64_t x = v->shape.dims[d], y = inferred->dims[d];
            agree = x < 0 || y < 0 || x == y;
            merged.dims[d] = y >= 0 ? y : x;
        }
        if (!agree) {
            merged = *inferred;
            if (warn_to != NULL) {
                char a[128], b[128];
                graph_add_warning(warn_to,
                                  "value '%s': declared shape %s contradicts %s inferred by node "
                                  "'%s' (%s); using the inferred shape",
                                  v->name, graph_shape_str(&v->shape, a, sizeof a),
                                  graph_shape_str(inferred, b, sizeof b), node->name,
                                  node->op_type);
            }
        }
    } else if (inferred->rank < 0) {
        merged = v->shape;
    }
    v->shape = merged;
}

static rn_status infer_node(graph_node *node, graph *warn_to);

rn_status graph_infer_node(graph_node *node)
{
    return infer_node(node, NULL);
}

static rn_status infer_node(graph_node *node, graph *warn_to)
{
    const graph_op_schema *s = graph_op_find(node->domain, node->op_type);
    if (s == NULL)
        return rn_set_error(RN_UNSUPPORTED, "node '%s': unknown op '%s'", node->name,
                            node->op_type);
    if (s->infer == NULL)
        return RN_OK;
    graph_port in_small[16], out_small[16];
    graph_port *in = in_small, *out = out_small;
    graph_port *heap = NULL;
    if (node->n_inputs > 16 || node->n_outputs > 16) {
        heap = calloc((size_t)(node->n_inputs + node->n_outputs), sizeof *heap);
        if (heap == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory", node->name);
        in = heap;
        out = heap + node->n_inputs;
    }
    graph_node_ports(node, in, out);
    rn_status st = s->infer(node, in, node->n_inputs, out, node->n_outputs);
    /* Identity is the one op outside the sequence families that passes any
     * value through, so its output has its input's kind. */
    if (st == RN_OK && node->n_inputs == 1 && node->n_outputs == 1 && in[0].present &&
        node->domain[0] == '\0' && strcmp(node->op_type, "Identity") == 0)
        out[0].kind = in[0].kind;
    for (int i = 0; st == RN_OK && i < node->n_outputs; i++) {
        graph_value *v = node->outputs[i];
        if (v == NULL || !out[i].present)
            continue;
        /* Kinds other than tensor are set by the ops that make them; a
         * tensor result leaves a declared kind as it is. */
        if (out[i].kind != GRAPH_KIND_TENSOR) {
            if (v->kind != GRAPH_KIND_TENSOR && v->kind != out[i].kind &&
                !graph_kind_accepts(v->kind, out[i].kind)) {
                st = rn_set_error(RN_TYPE_MISMATCH,
                                  "node '%s' (%s): output '%s' is declared a %s but inferred a %s",
                                  node->name, node->op_type, v->name, graph_kind_name(v->kind),
                                  graph_kind_name(out[i].kind));
                break;
            }
            if (v->kind == GRAPH_KIND_TENSOR)
                v->kind = out[i].kind;
        }
        if (out[i].type != RN_UNDEFINED) {
            if (v->type != RN_UNDEFINED && v->type != out[i].type) {
                st = rn_set_error(RN_TYPE_MISMATCH,
                                  "node '%s' (%s): output '%s' is declared %s but inferred %s",
                                  node->name, node->op_type, v->name, rn_element_type_name(v->type),
                                  rn_element_type_name(out[i].type));
                break;
            }
            v->type = out[i].type;
        }
        merge_shape(node, v, &out[i].shape, warn_to);
    }
    free(heap);
    return st;
}

rn_status graph_infer_shapes(graph *g)
{
    graph *root = g;
    while (root->parent != NULL)
        root = root->parent;
    for (int i = 0; i < g->n_nodes; i++) {
        rn_status st = infer_node(g->nodes[i], root);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

rn_status graph_broadcast_shapes(const graph_node *node, const graph_shape *a, const graph_shape *b,
                                 graph_shape *out)
{
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return RN_OK;
    }
    int rank = a->rank > b->rank ? a->rank : b->rank;
    graph_shape r = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t x = ia >= 0 ? a->dims[ia] : 1;
        int64_t y = ib >= 0 ? b->dims[ib] : 1;
        int64_t d;
        if (x == 1)
            d = y;
        else if (y == 1)
            d = x;
        else if (x < 0 || y < 0)
            d = x < 0 ? y : x; /* a dynamic dim must equal the other, or be 1 */
        else if (x == y)
            d = x;
        else {
            char sa[128], sb[128];
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): shapes %s and %s cannot be broadcast", node->name,
                                node->op_type, graph_shape_str(a, sa, sizeof sa),
                                graph_shape_str(b, sb, sizeof sb));
        }
        if (x < 0 && y == 1)
            d = RN_DIM_DYNAMIC;
        if (y < 0 && x == 1)
            d = RN_DIM_DYNAMIC;
        if (x < 0 && y < 0)
            d = RN_DIM_DYNAMIC;
        r.dims[i] = d;
    }
    *out = r;
    return RN_OK;
}

int64_t graph_port_int(const graph_port *p, size_t i)
{
    switch (p->type) {
    case RN_I64:
        return ((const int64_t *)p->data)[i];
    case RN_I32:
        return ((const int32_t *)p->data)[i];
    case RN_I16:
        return ((const int16_t *)p->data)[i];
    case RN_I8:
        return ((const int8_t *)p->data)[i];
    case RN_U64:
        return (int64_t)((const uint64_t *)p->data)[i];
    case RN_U32:
        return ((const uint32_t *)p->data)[i];
    case RN_U16:
        return ((const uint16_t *)p->data)[i];
    case RN_U8:
    case RN_BOOL:
        return ((const uint8_t *)p->data)[i];
    case RN_F32:
        return (int64_t)((const float *)p->data)[i];
    case RN_F64:
        return (int64_t)((const double *)p->data)[i];
    case RN_F16:
    case RN_BF16:
        return (int64_t)graph_port_double(p, i);
    default:
        return 0;
    }
}

/* Half-precision decoding (the graph layer cannot use the plugins' helpers). */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bfloat_to_double(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double graph_port_double(const graph_port *p, size_t i)
{
    switch (p->type) {
    case RN_F16:
        return half_to_double(((const uint16_t *)p->data)[i]);
    case RN_BF16:
        return bfloat_to_double(((const uint16_t *)p->data)[i]);
    case RN_F32:
        return ((const float *)p->data)[i];
    case RN_F64:
        return ((const double *)p->data)[i];
    case RN_U64:
        return (double)((const uint64_t *)p->data)[i];
    default:
        return (double)graph_port_int(p, i);
    }
}

rn_status graph_normalize_axis(const graph_node *node, int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank || (rank == 0 && axis != 0))
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): axis %lld is out of range for rank %d",
                            node->name, node->op_type, (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return RN_OK;
}

void graph_port_unknown(graph_port *out, rn_element_type type)
{
    out->type = type;
    out->shape.rank = -1;
}
