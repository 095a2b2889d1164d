/* Op schemas of the control-flow family: If (opset 1+), Loop (1+) and Scan
 * (8, and 9+ with per-input axes and directions), and graph_infer_body, which
 * infers a subgraph for them and for SequenceMap.
 *
 * A body is inferred on a copy that gets the kinds, types and shapes the node
 * feeds it, so the graph itself is never changed by inference (inference also
 * runs at run time, from several requests at once). Output shapes that depend
 * on the number of iterations or on the branch taken stay dynamic: the REF
 * kernels hand their outputs over when the body has run.
 *
 * Semantics (ONNX): If runs then_branch or else_branch on a one-element bool
 * condition; both have no inputs and as many results as the node has
 * outputs. Loop(M?, cond?, v_initial...) runs body(iteration, cond, v...) ->
 * (cond, v..., scan...) while the iteration is below M and cond holds; its
 * outputs are the final v... and each scan result stacked along a new first
 * axis. Scan(v_initial..., x...) runs body(v..., x slice...) -> (v..., y
 * slice...) once per slice of the scan inputs along their axes; opset 8 adds a
 * leading batch axis to every input and output and a sequence_lens input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        if (st_ != RN_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

/* ---- inferring a body ---- */

/* Fills what the declaration of v leaves unknown from port p. */
static void seed_value(graph_value *v, const graph_port *p)
{
    if (v->kind == GRAPH_KIND_TENSOR && p->kind != GRAPH_KIND_TENSOR)
        v->kind = p->kind;
    if (v->type == RN_UNDEFINED)
        v->type = p->type;
    if (v->shape.rank < 0) {
        v->shape = p->shape;
    } else if (p->shape.rank == v->shape.rank) {
        for (int d = 0; d < p->shape.rank; d++)
            if (v->shape.dims[d] < 0)
                v->shape.dims[d] = p->shape.dims[d];
    }
}

rn_status graph_infer_body(const graph_node *node, const graph *body, const graph_port *inputs,
                           int n_in, graph_port *out, int n_out)
{
    graph *copy = NULL;
    rn_status st = graph_clone(body, &copy);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < n_in && i < copy->n_inputs; i++)
        if (inputs[i].present)
            seed_value(copy->inputs[i], &inputs[i]);
    st = graph_infer_shapes(copy);
    if (st != RN_OK) {
        graph_free(copy);
        return rn_wrap_error(st, NODE_FMT "body '%s': ", NODE_ARGS(node), body->name);
    }
    for (int o = 0; o < n_out; o++) {
        memset(&out[o], 0, sizeof out[o]);
        out[o].present = true;
        out[o].shape.rank = -1;
        if (o >= copy->n_outputs)
            continue;
        const graph_value *v = copy->outputs[o];
        out[o].kind = v->kind;
        out[o].type = v->type;
        if (v->constant != NULL && v->constant->kind == GRAPH_KIND_TENSOR) {
            out[o].type = v->constant->type;
            out[o].shape.rank = v->constant->rank;
            memcpy(out[o].shape.dims, v->constant->dims, sizeof out[o].shape.dims);
        } else if (v->kind != GRAPH_KIND_SEQUENCE) {
            out[o].shape = v->shape;
        }
    }
    graph_free(copy);
    return RN_OK;
}

/* The GRAPH attribute `name` of node, or an error. */
static rn_status body_attr(const graph_node *node, const char *name, const graph **out)
{
    const graph_attr *a = graph_node_attr(node, name);
    if (a == NULL || a->type != GRAPH_ATTR_GRAPH || a->g == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the graph attribute '%s'",
                            NODE_ARGS(node), name);
    *out = a->g;
    return RN_OK;
}

/* Two inferred shapes of one value, merged: the same dims stay, others turn
 * dynamic, different ranks give an unknown rank. */
static graph_shape merge_shapes(const graph_shape *a, const graph_shape *b)
{
    if (a->rank < 0 || b->rank < 0 || a->rank != b->rank)
        return (graph_shape){.rank = -1};
    graph_shape m = *a;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            m.dims[d] = RN_DIM_DYNAMIC;
    return m;
}

static graph_port scalar_port(rn_element_type type)
{
    return (graph_port){.present = true, .type = type, .shape = {.rank = 0}};
}

/* ---- If ---- */

static rn_status infer_if(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                          int n_out)
{
    (void)n_in;
    const graph *then_g, *else_g;
    TRY(body_attr(node, "then_branch", &then_g));
    TRY(body_attr(node, "else_branch", &else_g));
    if (in[0].type != RN_UNDEFINED && in[0].type != RN_BOOL)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "cond is %s, expected bool", NODE_ARGS(node),
                            rn_element_type_name(in[0].type));
    if (in[0].kind != GRAPH_KIND_TENSOR)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "cond is a %s, expected a tensor",
                            NODE_ARGS(node), graph_kind_name(in[0].kind));
    int64_t n = graph_shape_count(&in[0].shape);
    if (n >= 0 && n != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "cond has %lld elements, expected 1",
                            NODE_ARGS(node), (long long)n);
    for (int b = 0; b < 2; b++) {
        const graph *g = b == 0 ? then_g : else_g;
        if (g->n_inputs != 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "%s takes %d inputs, expected none",
                                NODE_ARGS(node), b == 0 ? "then_branch" : "else_branch",
                                g->n_inputs);
        if (g->n_outputs != n_out)
            return rn_set_error(
                RN_INVALID_ARG, NODE_FMT "%s has %d results for the node's %d outputs",
                NODE_ARGS(node), b == 0 ? "then_branch" : "else_branch", g->n_outputs, n_out);
    }
    graph_port *ports = calloc((size_t)(2 * n_out) + 1, sizeof *ports);
    if (ports == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    graph_port *t = ports, *e = ports + n_out;
    /* With the condition known, only the branch taken counts. Otherwise a
     * branch whose inference fails is one the shapes at hand rule out (an
     * expanded function's branch for another rank, say): the other one
     * decides, and only two failures are an error. */
    rn_status st;
    if (in[0].data != NULL && in[0].type == RN_BOOL) {
        bool taken = *(const uint8_t *)in[0].data != 0;
        st = graph_infer_body(node, taken ? then_g : else_g, NULL, 0, t, n_out);
        memcpy(e, t, sizeof *t * (size_t)n_out);
    } else {
        st = graph_infer_body(node, then_g, NULL, 0, t, n_out);
        if (st != RN_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", rn_last_error());
            if ((st = graph_infer_body(node, else_g, NULL, 0, e, n_out)) == RN_OK)
                memcpy(t, e, sizeof *t * (size_t)n_out);
            else
                st = rn_set_error(st, "%s", why);
        } else if (graph_infer_body(node, else_g, NULL, 0, e, n_out) != RN_OK) {
            rn_clear_error();
            memcpy(e, t, sizeof *t * (size_t)n_out);
        }
    }
    for (int o = 0; o < n_out && st == RN_OK; o++) {
        if (!out[o].present)
            continue;
        /* The kinds must agree; an optional branch result and a plain one
         * of its element kind make the output optional. */
        graph_kind k = t[o].kind;
        if (t[o].kind != e[o].kind) {
            if (graph_kind_accepts(t[o].kind, e[o].kind))
                k = t[o].kind;
            else if (graph_kind_accepts(e[o].kind, t[o].kind))
                k = e[o].kind;
            else
                st = rn_set_error(RN_TYPE_MISMATCH,
                                  NODE_FMT "result %d is a %s in then_branch, a %s in else_branch",
                                  NODE_ARGS(node), o, graph_kind_name(t[o].kind),
                                  graph_kind_name(e[o].kind));
        }
        if (t[o].type != RN_UNDEFINED && e[o].type != RN_UNDEFINED && t[o].type != e[o].type)
            st = rn_set_error(RN_TYPE_MISMATCH,
                              NODE_FMT "result %d is %s in then_branch, %s in else_branch",
                              NODE_ARGS(node), o, rn_element_type_name(t[o].type),
                              rn_element_type_name(e[o].type));
        out[o].kind = k;
        out[o].type = t[o].type != RN_UNDEFINED ? t[o].type : e[o].type;
        out[o].shape = merge_shapes(&t[o].shape, &e[o].shape);
    }
    free(ports);
    return st;
}

/* ---- Loop ---- */

static rn_status infer_loop(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    const graph *body;
    TRY(body_attr(node, "body", &body));
    int n_carried = n_in - 2;
    if (n_carried < 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "needs the inputs M and cond (each may be "
                                     "empty)",
                            NODE_ARGS(node));
    if (body->n_inputs != 2 + n_carried)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "body takes %d inputs, expected %d (iteration, condition "
                                     "and %d loop-carried values)",
                            NODE_ARGS(node), body->n_inputs, 2 + n_carried, n_carried);
    if (body->n_outputs < 1 + n_carried || body->n_outputs - 1 != n_out)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "body has %d results, expected the condition, %d "
                                     "loop-carried values and one per scan output (%d outputs)",
                            NODE_ARGS(node), body->n_outputs, n_carried, n_out);
    if (in[0].present && in[0].type != RN_UNDEFINED && in[0].type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "M is %s, expected i64", NODE_ARGS(node),
                            rn_element_type_name(in[0].type));
    if (in[1].present && in[1].type != RN_UNDEFINED && in[1].type != RN_BOOL)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "cond is %s, expected bool", NODE_ARGS(node),
                            rn_element_type_name(in[1].type));
    graph_port *ports = calloc((size_t)(body->n_inputs + body->n_outputs) + 1, sizeof *ports);
    if (ports == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    graph_port *bin = ports, *bout = ports + body->n_inputs;
    bin[0] = scalar_port(RN_I64);
    bin[1] = scalar_port(RN_BOOL);
    for (int k = 0; k < n_carried; k++) {
        /* Shapes may change from one iteration to the next: seed kind and
         * type only. */
        bin[2 + k] = (graph_port){.present = in[2 + k].present,
                                  .kind = in[2 + k].kind,
                                  .type = in[2 + k].type,
                                  .shape = {.rank = -1}};
    }
    rn_status st = graph_infer_body(node, body, bin, body->n_inputs, bout, body->n_outputs);
    for (int k = 0; k < n_carried && st == RN_OK; k++) {
        graph_port *o = &out[k];
        const graph_port *b = &bout[1 + k], *i = &in[2 + k];
        if (!o->present)
            continue;
        o->kind = b->kind != GRAPH_KIND_TENSOR ? b->kind : i->kind;
        o->type = i->type != RN_UNDEFINED ? i->type : b->type;
        /* Zero iterations return the initial value, others the body's. */
        o->shape = merge_shapes(&i->shape, &b->shape);
    }
    for (int k = n_carried; k < n_out && st == RN_OK; k++) {
        graph_port *o = &out[k];
        const graph_port *b = &bout[1 + k];
        if (!o->present)
            continue;
        if (b->kind != GRAPH_KIND_TENSOR) {
            st = rn_set_error(RN_TYPE_MISMATCH,
                              NODE_FMT "scan output %d is a %s, expected a "
                                       "tensor",
                              NODE_ARGS(node), k - n_carried, graph_kind_name(b->kind));
            break;
        }
        o->type = b->type;
        o->shape.rank = -1;
        if (b->shape.rank >= 0 && b->shape.rank < RN_MAX_RANK) {
            o->shape.rank = b->shape.rank + 1;
            o->shape.dims[0] = RN_DIM_DYNAMIC;
            memcpy(o->shape.dims + 1, b->shape.dims, sizeof(int64_t) * (size_t)b->shape.rank);
        }
    }
    free(ports);
    return st;
}

/* ---- Scan ---- */

/* Scan's attributes, resolved against the node's inputs (opset 8 has a
 * leading sequence_lens input and a batch axis everywhere). */
typedef struct scan_spec {
    int first;     /* index of the first state input (1 in opset 8, else 0) */
    int n_state;   /* N */
    int n_scan_in; /* M */
    int n_scan_out;
    bool batched; /* opset 8 */
} scan_spec;

static rn_status scan_spec_read(const graph_node *node, const graph *body, int n_in, int n_out,
                                scan_spec *s)
{
    s->batched = node->opset < 9;
    s->first = s->batched ? 1 : 0;
    int64_t m = graph_node_attr_int(node, "num_scan_inputs", -1);
    int n_values = n_in - s->first;
    if (m < 1 || m > n_values)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "num_scan_inputs is %lld, expected 1 to %d (the inputs)",
                            NODE_ARGS(node), (long long)m, n_values);
    s->n_scan_in = (int)m;
    s->n_state = n_values - s->n_scan_in;
    s->n_scan_out = n_out - s->n_state;
    if (s->n_scan_out < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d outputs for %d state values",
                            NODE_ARGS(node), n_out, s->n_state);
    if (body->n_inputs != n_values || body->n_outputs != n_out)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "body takes %d inputs and has %d results, expected %d and "
                                     "%d",
                            NODE_ARGS(node), body->n_inputs, body->n_outputs, n_values, n_out);
    return RN_OK;
}

/* An axis attribute entry (scan_input_axes / scan_output_axes) for index i,
 * 0 when the attribute is absent. */
static int64_t axis_attr(const graph_node *node, const char *name, int i)
{
    const int64_t *v;
    int n = graph_node_attr_ints(node, name, &v);
    return n > i ? v[i] : 0;
}

static rn_status infer_scan(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    const graph *body;
    TRY(body_attr(node, "body", &body));
    scan_spec s = {0};
    TRY(scan_spec_read(node, body, n_in, n_out, &s));
    int b = s.batched ? 1 : 0; /* leading batch axis */
    graph_port *ports = calloc((size_t)(body->n_inputs + body->n_outputs) + 1, sizeof *ports);
    if (ports == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    graph_port *bin = ports, *bout = ports + body->n_inputs;
    rn_status st = RN_OK;
    int64_t seq_len = RN_DIM_DYNAMIC;
    for (int i = 0; i < s.n_state + s.n_scan_in && st == RN_OK; i++) {
        const graph_port *p = &in[s.first + i];
        graph_port *q = &bin[i];
        *q = (graph_port){.present = true, .type = p->type, .shape = {.rank = -1}};
        if (p->kind != GRAPH_KIND_TENSOR) {
            st = rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is a %s, expected a tensor",
                              NODE_ARGS(node), s.first + i, graph_kind_name(p->kind));
            break;
        }
        if (p->shape.rank < 0)
            continue;
        /* The body sees a state without the batch axis, a scan input
         * without the batch and scan axes. */
        int axis = -1;
        if (i >= s.n_state) {
            int rank = p->shape.rank - b;
            int64_t a = s.batched ? 0 : axis_attr(node, "scan_input_axes", i - s.n_state);
            int ax;
            if ((st = graph_normalize_axis(node, a, rank, &ax)) != RN_OK)
                break;
            axis = ax + b;
            if (p->shape.dims[axis] >= 0)
                seq_len = p->shape.dims[axis];
        }
        q->shape.rank = 0;
        for (int d = b; d < p->shape.rank; d++)
            if (d != axis)
                q->shape.dims[q->shape.rank++] = p->shape.dims[d];
    }
    if (st == RN_OK)
        st = graph_infer_body(node, body, bin, body->n_inputs, bout, body->n_outputs);
    int64_t batch = RN_DIM_DYNAMIC;
    if (s.batched && n_in > 1 && in[1].shape.rank > 0)
        batch = in[1].shape.dims[0];
    for (int o = 0; o < n_out && st == RN_OK; o++) {
        if (!out[o].present)
            continue;
        const graph_port *bo = &bout[o];
        out[o].type = bo->type;
        out[o].shape.rank = -1;
        if (o < s.n_state) {
            const graph_port *p = &in[s.first + o];
            if (p->type != RN_UNDEFINED)
                out[o].type = p->type;
            out[o].shape = p->shape;
            continue;
        }
        if (bo->shape.rank < 0 || bo->shape.rank + 1 + b > RN_MAX_RANK)
            continue;
        int rank = bo->shape.rank + 1;
        int64_t a = s.batched ? 0 : axis_attr(node, "scan_output_axes", o - s.n_state);
        int ax;
        if ((st = graph_normalize_axis(node, a, rank, &ax)) != RN_OK)
            break;
        graph_shape sh = {.rank = rank + b};
        if (b)
            sh.dims[0] = batch;
        for (int d = 0, k = 0; d < rank; d++)
            sh.dims[b + d] = d == ax ? seq_len : bo->shape.dims[k++];
        out[o].shape = sh;
    }
    free(ports);
    return st;
}

const graph_op_schema graph_ops_control[] = {
    {"",
     "If",
     1,
     1,
     1,
     -1,
     0,
     infer_if,
     {GRAPH_REQUIRED("then_branch", GRAPH), GRAPH_REQUIRED("else_branch", GRAPH)}},
    {"", "Loop", 2, -1, 1, -1, 0, infer_loop, {GRAPH_REQUIRED("body", GRAPH)}},
    {"",
     "Scan",
     1,
     -1,
     1,
     -1,
     0,
     infer_scan,
     {GRAPH_REQUIRED("body", GRAPH), GRAPH_REQUIRED("num_scan_inputs", INT),
      GRAPH_OPTIONAL("directions", INTS), GRAPH_OPTIONAL("scan_input_axes", INTS),
      GRAPH_OPTIONAL("scan_input_directions", INTS), GRAPH_OPTIONAL("scan_output_axes", INTS),
      GRAPH_OPTIONAL("scan_output_directions", INTS)}},
    {0},
};
