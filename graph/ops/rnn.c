/* Op schemas of the rnn family: RNN, GRU and LSTM (opsets 7 to 22).
 *
 * Inputs X, W, R, B, sequence_lens, initial_h (and for LSTM initial_c, P);
 * outputs Y, Y_h (and for LSTM Y_c), all optional but X, W and R. With
 * layout 0 (the default) X is [seq, batch, input], Y [seq, dirs, batch,
 * hidden] and the states [dirs, batch, hidden]; with layout 1 (opset 14+)
 * batch comes first: X [batch, seq, input], Y [batch, seq, dirs, hidden],
 * states [batch, dirs, hidden]. W is [dirs, gates * hidden, input], R
 * [dirs, gates * hidden, hidden], B [dirs, 2 * gates * hidden], P [dirs, 3 *
 * hidden], with 1 gate for RNN, 3 for GRU and 4 for LSTM.
 */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static int rnn_gates(const graph_node *node)
{
    if (strcmp(node->op_type, "LSTM") == 0)
        return 4;
    if (strcmp(node->op_type, "GRU") == 0)
        return 3;
    return 1;
}

/* dims[d] must be `want` when both are known. */
static rn_status rnn_dim(const graph_node *node, const graph_port *p, int i, int d, int64_t want,
                         const char *what)
{
    if (!p->present || p->shape.rank < 0 || want < 0 || p->shape.dims[d] < 0 ||
        p->shape.dims[d] == want)
        return RN_OK;
    char buf[128];
    return rn_set_error(RN_SHAPE_MISMATCH,
                        NODE_FMT "input %d has shape %s; dim %d must be %s (%lld)", NODE_ARGS(node),
                        i, graph_shape_str(&p->shape, buf, sizeof buf), d, what, (long long)want);
}

static rn_status rnn_rank(const graph_node *node, const graph_port *p, int i, int rank)
{
    if (!p->present || p->shape.rank < 0 || p->shape.rank == rank)
        return RN_OK;
    return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input %d has rank %d; expected %d",
                        NODE_ARGS(node), i, p->shape.rank, rank);
}

static rn_status infer_rnn(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    const graph_port *x = &in[0], *w = &in[1], *r = &in[2];
    rn_element_type t = x->type;
    for (int i = 0; i < n_in; i++) {
        if (!in[i].present || in[i].type == RN_UNDEFINED)
            continue;
        bool want_int = i == 4;
        bool ok = want_int ? in[i].type == RN_I32
                           : (in[i].type == RN_F32 || in[i].type == RN_F64 ||
                              in[i].type == RN_F16 || in[i].type == RN_BF16) &&
                                 (t == RN_UNDEFINED || in[i].type == t);
        if (!ok)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d has type %s; expected %s",
                                NODE_ARGS(node), i, rn_element_type_name(in[i].type),
                                want_int ? "i32" : "X's float type");
    }
    const char *direction = graph_node_attr_string(node, "direction", "forward");
    int64_t dirs;
    if (strcmp(direction, "forward") == 0 || strcmp(direction, "reverse") == 0)
        dirs = 1;
    else if (strcmp(direction, "bidirectional") == 0)
        dirs = 2;
    else
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "direction '%s' is not forward, reverse or bidirectional",
                            NODE_ARGS(node), direction);
    int64_t layout = graph_node_attr_int(node, "layout", 0);
    if (layout != 0 && layout != 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "layout is %lld; expected 0 or 1",
                            NODE_ARGS(node), (long long)layout);
    int64_t gates = rnn_gates(node);
    int64_t hidden = graph_node_attr_int(node, "hidden_size", RN_DIM_DYNAMIC);
    if (graph_node_attr(node, "hidden_size") != NULL && hidden < 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "hidden_size is %lld; must be >= 1",
                            NODE_ARGS(node), (long long)hidden);
    if (hidden < 0 && r->shape.rank == 3)
        hidden = r->shape.dims[2];
    rn_status st = RN_OK;
    st = rnn_rank(node, x, 0, 3);
    for (int i = 1; st == RN_OK && i < n_in; i++) {
        static const int ranks[] = {3, 3, 3, 2, 1, 3, 3, 2};
        if (i < 8)
            st = rnn_rank(node, &in[i], i, ranks[i]);
    }
    if (st != RN_OK)
        return st;
    int64_t seq = RN_DIM_DYNAMIC, batch = RN_DIM_DYNAMIC, input = RN_DIM_DYNAMIC;
    if (x->shape.rank == 3) {
        seq = x->shape.dims[layout ? 1 : 0];
        batch = x->shape.dims[layout ? 0 : 1];
        input = x->shape.dims[2];
    }
    int64_t gh = hidden >= 0 ? gates * hidden : RN_DIM_DYNAMIC;
    if ((st = rnn_dim(node, w, 1, 0, dirs, "the number of directions")) != RN_OK ||
        (st = rnn_dim(node, w, 1, 1, gh, "gates x hidden_size")) != RN_OK ||
        (st = rnn_dim(node, w, 1, 2, input, "X's input size")) != RN_OK ||
        (st = rnn_dim(node, r, 2, 0, dirs, "the number of directions")) != RN_OK ||
        (st = rnn_dim(node, r, 2, 1, gh, "gates x hidden_size")) != RN_OK ||
        (st = rnn_dim(node, r, 2, 2, hidden, "hidden_size")) != RN_OK)
        return st;
    if (n_in > 3 &&
        ((st = rnn_dim(node, &in[3], 3, 0, dirs, "the number of directions")) != RN_OK ||
         (st = rnn_dim(node, &in[3], 3, 1, gh >= 0 ? 2 * gh : -1, "2 x gates x hidden_size")) !=
             RN_OK))
        return st;
    if (n_in > 4 && (st = rnn_dim(node, &in[4], 4, 0, batch, "the batch size")) != RN_OK)
        return st;
    for (int i = 5; i < n_in && i < 7; i++) {
        if ((st = rnn_dim(node, &in[i], i, layout ? 1 : 0, dirs, "the number of directions")) !=
                RN_OK ||
            (st = rnn_dim(node, &in[i], i, layout ? 0 : 1, batch, "the batch size")) != RN_OK ||
            (st = rnn_dim(node, &in[i], i, 2, hidden, "hidden_size")) != RN_OK)
            return st;
    }
    if (n_in > 7 &&
        ((st = rnn_dim(node, &in[7], 7, 0, dirs, "the number of directions")) != RN_OK ||
         (st = rnn_dim(node, &in[7], 7, 1, hidden >= 0 ? 3 * hidden : -1, "3 x hidden_size")) !=
             RN_OK))
        return st;
    rn_element_type type = t != RN_UNDEFINED ? t : w->type;
    graph_shape y = {.rank = 4}, state = {.rank = 3};
    if (layout == 0) {
        int64_t yd[4] = {seq, dirs, batch, hidden}, sd[3] = {dirs, batch, hidden};
        memcpy(y.dims, yd, sizeof yd);
        memcpy(state.dims, sd, sizeof sd);
    } else {
        int64_t yd[4] = {batch, seq, dirs, hidden}, sd[3] = {batch, dirs, hidden};
        memcpy(y.dims, yd, sizeof yd);
        memcpy(state.dims, sd, sizeof sd);
    }
    for (int o = 0; o < n_out; o++) {
        if (!out[o].present)
            continue;
        out[o].type = type;
        out[o].shape = o == 0 ? y : state;
    }
    return RN_OK;
}

#define RNN_ATTRS                                                                                  \
    GRAPH_OPTIONAL("activation_alpha", FLOATS), GRAPH_OPTIONAL("activation_beta", FLOATS),         \
        GRAPH_OPTIONAL("activations", STRINGS), GRAPH_OPTIONAL("clip", FLOAT),                     \
        GRAPH_OPTIONAL("direction", STRING), GRAPH_OPTIONAL("hidden_size", INT),                   \
        GRAPH_OPTIONAL("layout", INT)

const graph_op_schema graph_ops_rnn[] = {
    {"", "RNN", 3, 6, 0, 2, 0, infer_rnn, {RNN_ATTRS}},
    {"", "GRU", 3, 6, 0, 2, 0, infer_rnn, {RNN_ATTRS, GRAPH_OPTIONAL("linear_before_reset", INT)}},
    {"", "LSTM", 3, 8, 0, 3, 0, infer_rnn, {RNN_ATTRS, GRAPH_OPTIONAL("input_forget", INT)}},
    {0},
};
