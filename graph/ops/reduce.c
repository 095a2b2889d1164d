/* Reductions: schemas and shape inference for Reduce* and ArgMax/ArgMin.
 *
 * The axes of a Reduce* op are an attribute in early opsets and input 1 later
 * (ReduceSum from opset 13, the others from 18). The infer function takes the
 * input when the node has it and the attribute otherwise, and reads them with
 * graph_reduce_axes (graph/ops/reduce_axes.c), as the kernels do. No axes
 * means every axis, unless noop_with_empty_axes is set: then nothing is
 * reduced and the output has the input's shape.
 */

#include <string.h>

#include "graph/ops.h"
#include "graph/ops/attr_parse.h"

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

/* x's shape less the reduced dims, or with 1 for them under keepdims. */
static void reduce_shape(const graph_shape *x, const bool *reduced, bool keepdims, graph_shape *out)
{
    out->rank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!reduced[d])
            out->dims[out->rank++] = x->dims[d];
        else if (keepdims)
            out->dims[out->rank++] = 1;
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
    out[0].type = in[0].type;

    /* Axes: input 1 when present, else the attribute (graph_reduce_axes). */
    const graph_port *ap = n_in > 1 && in[1].present ? &in[1] : NULL;
    const int64_t *axes = NULL;
    int64_t n_axes = -1;
    if (ap) {
        if (ap->type != RN_UNDEFINED && ap->type != RN_I64)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "axes must be i64, got %s",
                                NODE_ARGS(node), rn_element_type_name(ap->type));
        if (ap->shape.rank > 1)
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "axes must be 1-D, got rank %d",
                                NODE_ARGS(node), ap->shape.rank);
        n_axes = graph_shape_count(&ap->shape);
        if (!ap->data || ap->type != RN_I64 || n_axes < 0) {
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
        axes = ap->data;
    }
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    bool reduced[RN_MAX_RANK];
    rn_status st = graph_reduce_axes(node, xs->rank, axes, n_axes, reduced);
    if (st != RN_OK)
        return st;
    reduce_shape(xs, reduced, keepdims, &out[0].shape);
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
    bool reduced[RN_MAX_RANK] = {false};
    reduced[ax] = true;
    reduce_shape(xs, reduced, keepdims, &out[0].shape);
    return RN_OK;
}

#define A(name_, type_) GRAPH_OPTIONAL(name_, type_)
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
