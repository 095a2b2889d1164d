/* Op schemas of the sequence family: SequenceEmpty, SequenceConstruct,
 * SequenceInsert, SequenceAt, SequenceErase, SequenceLength (opset 11+),
 * SplitToSequence, ConcatFromSequence (11+), SequenceMap (17+), and the
 * optionals: Optional, OptionalGetElement, OptionalHasElement (15+; 18 lets
 * the last two take plain tensors and sequences too).
 *
 * Sequences have no shape of their own (their items may differ), so what a
 * sequence op infers is the kind and the element type; the tensors taken out
 * of a sequence (SequenceAt, ConcatFromSequence) get their shape at run time.
 * At compile time a value whose kind is unknown reads as a tensor, so these
 * functions refuse only kinds that are known to be wrong (a sequence where a
 * tensor must be, an optional where a sequence must be); the REF kernels
 * check the values they get. */
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

/* Input i must be a sequence (or of unknown kind). */
static rn_status want_sequence(const graph_node *node, const graph_port *in, int i)
{
    if (in[i].present && in[i].kind != GRAPH_KIND_SEQUENCE && in[i].kind != GRAPH_KIND_TENSOR)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is a %s, expected a sequence",
                            NODE_ARGS(node), i, graph_kind_name(in[i].kind));
    return RN_OK;
}

/* Input i must be a tensor. */
static rn_status want_tensor(const graph_node *node, const graph_port *in, int i)
{
    if (in[i].present && in[i].kind != GRAPH_KIND_TENSOR)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is a %s, expected a tensor",
                            NODE_ARGS(node), i, graph_kind_name(in[i].kind));
    return RN_OK;
}

/* Input i, when present, must be an integer scalar (a position). */
static rn_status want_position(const graph_node *node, const graph_port *in, int n_in, int i)
{
    if (i >= n_in || !in[i].present)
        return RN_OK;
    TRY(want_tensor(node, in, i));
    if (in[i].type != RN_UNDEFINED && in[i].type != RN_I32 && in[i].type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "position is %s, expected i32 or i64",
                            NODE_ARGS(node), rn_element_type_name(in[i].type));
    int64_t n = graph_shape_count(&in[i].shape);
    if (n >= 0 && n != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "position has %lld elements, expected 1",
                            NODE_ARGS(node), (long long)n);
    return RN_OK;
}

static void set_sequence(graph_port *out, rn_element_type type)
{
    out->kind = GRAPH_KIND_SEQUENCE;
    out->type = type;
    out->shape.rank = -1;
}

static rn_status infer_sequence_empty(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    (void)in, (void)n_in, (void)n_out;
    int64_t dtype = graph_node_attr_int(node, "dtype", RN_F32);
    if (!rn_element_type_is_valid((rn_element_type)dtype))
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "dtype %lld is not an element type",
                            NODE_ARGS(node), (long long)dtype);
    set_sequence(&out[0], (rn_element_type)dtype);
    return RN_OK;
}

static rn_status infer_sequence_construct(const graph_node *node, const graph_port *in, int n_in,
                                          graph_port *out, int n_out)
{
    (void)n_out;
    rn_element_type type = RN_UNDEFINED;
    for (int i = 0; i < n_in; i++) {
        if (!in[i].present)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d is empty", NODE_ARGS(node), i);
        TRY(want_tensor(node, in, i));
        if (in[i].type == RN_UNDEFINED)
            continue;
        if (type != RN_UNDEFINED && in[i].type != type)
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "input %d is %s, the inputs before it %s; a sequence "
                                         "holds one element type",
                                NODE_ARGS(node), i, rn_element_type_name(in[i].type),
                                rn_element_type_name(type));
        type = in[i].type;
    }
    set_sequence(&out[0], type);
    return RN_OK;
}

static rn_status infer_sequence_insert(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    (void)n_out;
    TRY(want_sequence(node, in, 0));
    TRY(want_tensor(node, in, 1));
    TRY(want_position(node, in, n_in, 2));
    if (in[0].type != RN_UNDEFINED && in[1].type != RN_UNDEFINED && in[0].type != in[1].type)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "inserts a %s tensor into a sequence of %s",
                            NODE_ARGS(node), rn_element_type_name(in[1].type),
                            rn_element_type_name(in[0].type));
    set_sequence(&out[0], in[0].type != RN_UNDEFINED ? in[0].type : in[1].type);
    return RN_OK;
}

static rn_status infer_sequence_at(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    (void)n_out;
    TRY(want_sequence(node, in, 0));
    TRY(want_position(node, in, n_in, 1));
    graph_port_unknown(&out[0], in[0].type);
    return RN_OK;
}

static rn_status infer_sequence_erase(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    (void)n_out;
    TRY(want_sequence(node, in, 0));
    TRY(want_position(node, in, n_in, 1));
    set_sequence(&out[0], in[0].type);
    return RN_OK;
}

static rn_status infer_sequence_length(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    TRY(want_sequence(node, in, 0));
    out[0].type = RN_I64;
    out[0].shape.rank = 0;
    return RN_OK;
}

static rn_status infer_split_to_sequence(const graph_node *node, const graph_port *in, int n_in,
                                         graph_port *out, int n_out)
{
    (void)n_out;
    TRY(want_tensor(node, in, 0));
    if (n_in > 1 && in[1].present) {
        TRY(want_tensor(node, in, 1));
        if (in[1].type != RN_UNDEFINED && in[1].type != RN_I32 && in[1].type != RN_I64)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "split is %s, expected i32 or i64",
                                NODE_ARGS(node), rn_element_type_name(in[1].type));
        if (in[1].shape.rank > 1)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "split has rank %d, expected a scalar or a 1-D tensor",
                                NODE_ARGS(node), in[1].shape.rank);
    }
    if (in[0].shape.rank >= 0) {
        int axis;
        int rank = in[0].shape.rank;
        TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), rank, &axis));
    }
    set_sequence(&out[0], in[0].type);
    return RN_OK;
}

static rn_status infer_concat_from_sequence(const graph_node *node, const graph_port *in, int n_in,
                                            graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    TRY(want_sequence(node, in, 0));
    if (graph_node_attr(node, "axis") == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the attribute 'axis'", NODE_ARGS(node));
    int64_t new_axis = graph_node_attr_int(node, "new_axis", 0);
    if (new_axis != 0 && new_axis != 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "new_axis is %lld, expected 0 or 1",
                            NODE_ARGS(node), (long long)new_axis);
    graph_port_unknown(&out[0], in[0].type);
    return RN_OK;
}

/* ---- optionals ---- */

static rn_status infer_optional(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)n_out;
    const graph_attr *a = graph_node_attr(node, "type");
    bool has_input = n_in > 0 && in[0].present;
    if (!has_input && (a == NULL || a->type != GRAPH_ATTR_TYPE_PROTO))
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "without an input, the attribute 'type' must say what the "
                                     "optional holds",
                            NODE_ARGS(node));
    if (has_input) {
        if (graph_kind_is_optional(in[0].kind))
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "input is a %s; optionals of optionals are not supported",
                                NODE_ARGS(node), graph_kind_name(in[0].kind));
        out[0].kind =
            in[0].kind == GRAPH_KIND_SEQUENCE ? GRAPH_KIND_OPTIONAL_SEQUENCE : GRAPH_KIND_OPTIONAL;
        out[0].type = in[0].type;
        out[0].shape = in[0].kind == GRAPH_KIND_SEQUENCE ? (graph_shape){.rank = -1} : in[0].shape;
        return RN_OK;
    }
    if (graph_kind_is_optional(a->tp.kind))
        return rn_set_error(RN_TYPE_MISMATCH,
                            NODE_FMT "type is a %s; optionals of optionals are not supported",
                            NODE_ARGS(node), graph_kind_name(a->tp.kind));
    out[0].kind =
        a->tp.kind == GRAPH_KIND_SEQUENCE ? GRAPH_KIND_OPTIONAL_SEQUENCE : GRAPH_KIND_OPTIONAL;
    out[0].type = a->tp.elem;
    out[0].shape = a->tp.kind == GRAPH_KIND_SEQUENCE ? (graph_shape){.rank = -1} : a->tp.shape;
    return RN_OK;
}

static rn_status infer_optional_get_element(const graph_node *node, const graph_port *in, int n_in,
                                            graph_port *out, int n_out)
{
    (void)node, (void)n_in, (void)n_out;
    out[0].kind = graph_kind_element(in[0].kind);
    out[0].type = in[0].type;
    /* An absent optional (at run time) has no shape: the kernel says it is
     * absent. */
    out[0].shape = out[0].kind == GRAPH_KIND_SEQUENCE ? (graph_shape){.rank = -1} : in[0].shape;
    return RN_OK;
}

static rn_status infer_optional_has_element(const graph_node *node, const graph_port *in, int n_in,
                                            graph_port *out, int n_out)
{
    (void)node, (void)in, (void)n_in, (void)n_out;
    out[0].type = RN_BOOL;
    out[0].shape.rank = 0;
    return RN_OK;
}

/* ---- SequenceMap ---- */

static rn_status infer_sequence_map(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    const graph_attr *a = graph_node_attr(node, "body");
    if (a == NULL || a->type != GRAPH_ATTR_GRAPH || a->g == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the graph attribute 'body'",
                            NODE_ARGS(node));
    const graph *body = a->g;
    if (body->n_inputs != n_in || body->n_outputs != n_out)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "body takes %d inputs and has %d results, expected %d and %d",
                            NODE_ARGS(node), body->n_inputs, body->n_outputs, n_in, n_out);
    TRY(want_sequence(node, in, 0));
    graph_port *ports = calloc((size_t)(n_in + n_out) + 1, sizeof *ports);
    if (ports == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    graph_port *bin = ports, *bout = ports + n_in;
    /* The body sees one item of each sequence, and the tensors whole. */
    for (int i = 0; i < n_in; i++) {
        bin[i] = in[i];
        bin[i].data = NULL;
        if (i == 0 || in[i].kind == GRAPH_KIND_SEQUENCE) {
            bin[i].kind = GRAPH_KIND_TENSOR;
            bin[i].shape.rank = -1;
        }
    }
    rn_status st = graph_infer_body(node, body, bin, n_in, bout, n_out);
    for (int o = 0; o < n_out && st == RN_OK; o++) {
        if (bout[o].kind != GRAPH_KIND_TENSOR) {
            st = rn_set_error(RN_TYPE_MISMATCH,
                              NODE_FMT "body result %d is a %s, expected a "
                                       "tensor",
                              NODE_ARGS(node), o, graph_kind_name(bout[o].kind));
            break;
        }
        set_sequence(&out[o], bout[o].type);
    }
    free(ports);
    return st;
}

const graph_op_schema graph_ops_sequence[] = {
    {"", "SequenceEmpty", 0, 0, 1, 1, 0, infer_sequence_empty, {GRAPH_OPTIONAL("dtype", INT)}},
    {"", "SequenceConstruct", 1, -1, 1, 1, 0, infer_sequence_construct, {{NULL}}},
    {"", "SequenceInsert", 2, 3, 1, 1, 0, infer_sequence_insert, {{NULL}}},
    {"", "SequenceAt", 2, 2, 1, 1, 0, infer_sequence_at, {{NULL}}},
    {"", "SequenceErase", 1, 2, 1, 1, 0, infer_sequence_erase, {{NULL}}},
    {"", "SequenceLength", 1, 1, 1, 1, 0, infer_sequence_length, {{NULL}}},
    {"",
     "SplitToSequence",
     1,
     2,
     1,
     1,
     0,
     infer_split_to_sequence,
     {GRAPH_OPTIONAL("axis", INT), GRAPH_OPTIONAL("keepdims", INT)}},
    {"",
     "ConcatFromSequence",
     1,
     1,
     1,
     1,
     0,
     infer_concat_from_sequence,
     {GRAPH_REQUIRED("axis", INT), GRAPH_OPTIONAL("new_axis", INT)}},
    {"", "SequenceMap", 1, -1, 1, -1, 0, infer_sequence_map, {GRAPH_REQUIRED("body", GRAPH)}},
    {"", "Optional", 0, 1, 1, 1, 0, infer_optional, {GRAPH_OPTIONAL("type", TYPE_PROTO)}},
    {"", "OptionalGetElement", 1, 1, 1, 1, 0, infer_optional_get_element, {{NULL}}},
    {"", "OptionalHasElement", 0, 1, 1, 1, 0, infer_optional_has_element, {{NULL}}},
    {0},
};
