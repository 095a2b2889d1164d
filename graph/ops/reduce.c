/* Reductions: schemas and shape inference for Reduce* and ArgMax/ArgMin.
 *
 * The axes of a Reduce* op are an attribute in early opsets and input 1 later
 * (ReduceSum from opset 13, the others from 18). The infer function takes the
 * input when the node has it and the attribute otherwise. No axes means every
 * axis, unless noop_with_empty_axes is set: then nothing is reduced and the
 * output has the input's shape.
 */

#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool reduce_type_ok(rn_element_type t)
{
    switch (t) {
    case RN_UNDEFINED:
    case RN_F32:
    case RN_F64:
    case RN_F16:
    case RN_BF16:
    case RN_I32:
    case RN_I64:
    case RN_U32:
    case RN_U64:
    case RN_I8:
    case RN_U8:
        return true;
    default:
        return false;
    }
}

static rn_status infer_reduce(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    /* ReduceMax and ReduceMin also take bool (opset 20). */
    bool bool_ok =
        strcmp(node->op_type, "ReduceMax") == 0 || strcmp(node->op_type, "ReduceMin") == 0;
    if (!reduce_type_ok(in[0].type) && !(bool_ok && in[0].type == RN_BOOL))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input type %s is not supported",
                            NODE_ARGS(node), rn_element_type_name(in[0].type));
    bool keepdims = graph_node_attr_int(node, "keepdims", 1) != 0;
    bool noop = graph_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
    out[0].type = in[0].type;

    /* Axes: input 1 when present, else the attribute; -1 entries unknown. */
    const graph_port *ap = n_in > 1 && in[1].present ? &in[1] : NULL;
    const int64_t *attr_axes = NULL;
    int n_axes;
    if (ap) {
        if (ap->type != RN_UNDEFINED && ap->type != RN_I64)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "axes must be i64, got %s",
                                NODE_ARGS(node), rn_element_type_name(ap->type));
        if (ap->shape.rank > 1)
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "axes must be 1-D, got rank %d",
                                NODE_ARGS(node), ap->shape.rank);
        int64_t count = graph_shape_count(&ap->shape);
        if (!ap->data || count < 0) {
            /* Which axes go is not known: so is the rank unless dims are kept. */
            if (keepdims && xs->rank >= 0) {
                out[0].shape.rank = xs->rank;
                for (int d = 0; d < xs->rank; d++)
                    out[0].shape.dims[d] = RN_DIM_DYNAMIC;
            } else {
                graph_port_unknown(&out[0], in[0].type);
            }
            return RN_OK;
        }
        n_axes = (int)count;
    } else {
        n_axes = graph_node_attr_ints(node, "axes", &attr_axes);
        if (n_axes < 0)
            n_axes = 0;
    }
    if (n_axes == 0 && noop) {
        out[0].shape = *xs;
        return RN_OK;
    }
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    bool reduced[RN_MAX_RANK] = {false};
    for (int i = 0; i < n_axes; i++) {
        int64_t a = ap ? graph_port_int(ap, (size_t)i) : attr_axes[i];
        if (xs->rank == 0 && a == -1)
            continue; /* -1 names a scalar's one "axis", like 0 */
        int ax;
        rn_status st = graph_normalize_axis(node, a, xs->rank, &ax);
        if (st != RN_OK)
            return st;
        reduced[ax] = true; /* a repeated axis is reduced once, as numpy does */
    }
    if (n_axes == 0)
        for (int d = 0; d < xs->rank; d++)
            reduced[d] = true;
    graph_shape os = {.rank = 0};
    for (int d = 0; d < xs->rank; d++) {
        if (!reduced[d])
            os.dims[os.rank++] = xs->dims[d];
        else if (keepdims)
            os.dims[os.rank++] = 1;
    }
    out[0].shape = os;
    return RN_OK;
}

static rn_status infer_arg(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    if (!reduce_type_ok(in[0].type))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input type %s is not supported",
                            NODE_ARGS(node), rn_element_type_name(in[0].type));
    bool keepdims = graph_node_attr_int(node, "keepdims", 1) != 0;
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], RN_I64);
        return RN_OK;
    }
    if (xs->rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must have rank >= 1",
                            NODE_ARGS(node));
    int ax;
    rn_status st = graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &ax);
    if (st != RN_OK)
        return st;
    out[0].type = RN_I64;
    out[0].shape.rank = 0;
    for (int d = 0; d < xs->rank; d++) {
        if (d != ax)
            out[0].shape.dims[out[0].shape.rank++] = xs->dims[d];
        else if (keepdims)
            out[0].shape.dims[out[0].shape.rank++] = 1;
    }
    return RN_OK;
}

#define A(name_, type_)                                                                            \
    {                                                                                              \
        name_, GRAPH_ATTR_##type_, false                                                           \
    }
#define REDUCE(op_)                                                                                \
    {                                                                                              \
        "", op_, 1, 2, 1, 1, 1u << 1, infer_reduce,                                                \
        {                                                                                          \
            A("axes", INTS), A("keepdims", INT), A("noop_with_empty_axes", INT)                    \
        }                                                                                          \
    }
#define ARG(op_)                                                                                   \
    {                                                                                              \
        "", op_, 1, 1, 1, 1, 0, infer_arg,                                                         \
        {                                                                                          \
            A("axis", INT), A("keepdims", INT), A("select_last_index", INT)                        \
        }                                                                                          \
    }

const graph_op_schema graph_ops_reduce[] = {
    REDUCE("ReduceMean"),
    REDUCE("ReduceSum"),
    REDUCE("ReduceMax"),
    REDUCE("ReduceMin"),
    REDUCE("ReduceProd"),
    REDUCE("ReduceL1"),
    REDUCE("ReduceL2"),
    REDUCE("ReduceLogSum"),
    REDUCE("ReduceLogSumExp"),
    REDUCE("ReduceSumSquare"),
    ARG("ArgMax"),
    ARG("ArgMin"),
    {0},
};
