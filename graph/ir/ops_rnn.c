/* Recurrent OpenVINO ops: LSTMSequence, GRUSequence, RNNSequence (opset5)
 * and LSTMCell, GRUCell, RNNCell, as ONNX's LSTM, GRU and RNN.
 *
 * A sequence op is batch first ([batch, seq, input]; states [batch, dirs,
 * hidden]), which is ONNX's layout 1 except for Y: OpenVINO's is [batch,
 * dirs, seq, hidden], ONNX's [batch, seq, dirs, hidden], so Y is
 * transposed. A cell is one step of layout 0 (its inputs get a leading dim
 * of 1, its outputs lose it). Weights are [dirs, gates * hidden, ...] in
 * both, but the gates come in another order for LSTM (OpenVINO f, i, c, o;
 * ONNX i, o, f, c), and OpenVINO's bias is one per gate where ONNX keeps
 * the input's and the recurrence's apart: the recurrence's becomes zeros,
 * except GRU's linear_before_reset bias of h, which OpenVINO keeps as a
 * fourth block. */
#include <string.h>
#include <strings.h>

#include "graph/ir/ir_internal.h"

typedef struct rnn_kind {
    const char *onnx;
    int gates;
    bool cell_state; /* LSTM: a second state C */
} rnn_kind;

static const rnn_kind LSTM = {"LSTM", 4, true}, GRU = {"GRU", 3, false}, RNN = {"RNN", 1, false};

static const rnn_kind *kind_of(const ir_build *b)
{
    const char *t = b->layer->type;
    return strncmp(t, "LSTM", 4) == 0 ? &LSTM : strncmp(t, "GRU", 3) == 0 ? &GRU : &RNN;
}

/* Splits v along axis 1 into `n` blocks of `h` and concatenates
 * blocks[order[0]], blocks[order[1]], ... (order[k] -1: a zero block). */
static rn_status regroup(ir_build *b, graph_value *v, rn_element_type elem, int64_t dirs, int n,
                         int64_t h, const int *order, int n_order, graph_value **out)
{
    /* A constant (the common case) is regrouped here, into a new constant;
     * so is one that a Cast decompresses (ovc's f16 weights), before the
     * Cast. */
    const graph_node *cast = v->producer;
    if (v->constant == NULL && cast != NULL && strcmp(cast->op_type, "Cast") == 0 &&
        cast->n_inputs == 1 && cast->inputs[0] != NULL && cast->inputs[0]->constant != NULL) {
        graph_value *packed;
        IR_TRY(regroup(b, cast->inputs[0], elem, dirs, n, h, order, n_order, &packed));
        graph_node *c;
        IR_TRY(ir_node1(b, "Cast", 13, 1, &packed, out, &c));
        return ir_attr_int(c, "to", v->type);
    }
    const graph_tensor *t = v->constant;
    if (t != NULL && t->rank >= 2 && t->dims[0] == dirs && t->dims[1] == n * h) {
        size_t inner = rn_element_type_size(t->type);
        for (int i = 2; i < t->rank; i++)
            inner *= (size_t)t->dims[i];
        int64_t dims[RN_MAX_RANK];
        memcpy(dims, t->dims, sizeof dims);
        dims[1] = n_order * h;
        IR_TRY(ir_const_zeros(b, t->type, t->rank, dims, out));
        unsigned char *dst = (*out)->constant->data;
        const unsigned char *src = t->data;
        size_t block = (size_t)h * inner;
        for (int64_t d = 0; d < dirs; d++)
            for (int k = 0; k < n_order; k++)
                if (order[k] >= 0)
                    memcpy(dst + ((size_t)d * (size_t)n_order + (size_t)k) * block,
                           src + ((size_t)d * (size_t)n + (size_t)order[k]) * block, block);
        return RN_OK;
    }
    graph_value *blocks[8], *parts[8], *zero = NULL;
    int64_t sizes[8] = {0};
    for (int i = 0; i < n; i++)
        sizes[i] = h;
    graph_value *split_in[2] = {v};
    graph_node *node;
    IR_TRY(ir_const_i64(b, sizes, n, false, &split_in[1]));
    for (int i = 0; i < n; i++)
        IR_TRY(ir_tmp_value(b, &blocks[i]));
    IR_TRY(ir_node(b, "Split", 13, 2, split_in, n, blocks, &node));
    IR_TRY(ir_attr_int(node, "axis", 1));
    for (int k = 0; k < n_order; k++) {
        if (order[k] >= 0) {
            parts[k] = blocks[order[k]];
            continue;
        }
        if (zero == NULL) {
            int64_t dims[2] = {dirs, h};
            IR_TRY(ir_const_zeros(b, elem, 2, dims, &zero));
        }
        parts[k] = zero;
    }
    IR_TRY(ir_node1(b, "Concat", 13, n_order, parts, out, &node));
    return ir_attr_int(node, "axis", 1);
}

/* Unsqueeze(v, [0]). */
static rn_status lead_one(ir_build *b, graph_value *v, graph_value **out)
{
    int64_t zero = 0;
    graph_value *xs[2] = {v};
    IR_TRY(ir_const_i64(b, &zero, 1, false, &xs[1]));
    return ir_node1(b, "Unsqueeze", 13, 2, xs, out, NULL);
}

/* OpenVINO's activation names (sigmoid, tanh, relu) -> ONNX's. */
static rn_status activations(ir_build *b, graph_node *n, int want, int dirs)
{
    const char *s = ir_data_str(b, "activations", NULL);
    const char *names[8];
    const char *defaults[3] = {"Sigmoid", "Tanh", "Tanh"};
    const rnn_kind *k = kind_of(b);
    int count = 0;
    if (s == NULL) {
        for (int i = 0; i < want; i++)
            names[count++] = k == &RNN ? "Tanh" : defaults[i];
    } else {
        for (const char *p = s; *p != '\0' && count < want;) {
            while (*p == ' ' || *p == ',')
                p++;
            size_t len = strcspn(p, ", ");
            if (len == 0)
                break;
            if (len == 7 && strncasecmp(p, "sigmoid", 7) == 0)
                names[count++] = "Sigmoid";
            else if (len == 4 && strncasecmp(p, "tanh", 4) == 0)
                names[count++] = "Tanh";
            else if (len == 4 && strncasecmp(p, "relu", 4) == 0)
                names[count++] = "Relu";
            else
                return ir_error(b, RN_UNSUPPORTED,
                                "activation '%.*s' is not supported (sigmoid, tanh, relu)",
                                (int)len, p);
            p += len;
        }
        if (count != want)
            return ir_error(b, RN_PARSE_ERROR, "activations '%s': expected %d names", s, want);
    }
    for (int i = want; i < want * dirs; i++)
        names[i] = names[i - want];
    return ir_attr_strs(n, "activations", names, want * dirs);
}

static rn_status map_rnn(ir_build *b)
{
    const rnn_kind *k = kind_of(b);
    const char *type = b->layer->type;
    bool seq = strstr(type, "Sequence") != NULL;
    if (seq && ir_layer_opset(b) < 5)
        return ir_error(b, RN_UNSUPPORTED, "%s of %s is not supported (opset5)", type,
                        b->layer->version);
    /* Ports: X, H, [C], [sequence_lengths], W, R, B. */
    int n_states = k->cell_state ? 2 : 1;
    int p_w = 1 + n_states + (seq ? 1 : 0);
    int n_out = seq ? 1 + n_states : n_states;
    if (k == &LSTM && !seq && b->layer->n_in == p_w + 4)
        return ir_error(b, RN_UNSUPPORTED,
                        "peephole weights (LSTMCell opset1's input P) are not "
                        "supported");
    IR_TRY(ir_check_ports(b, p_w + 3, p_w + 3, n_out));
    int64_t hidden;
    IR_TRY(ir_data_int(b, "hidden_size", -1, &hidden));
    if (hidden <= 0 || hidden > (1 << 24))
        return ir_error(b, RN_PARSE_ERROR, "hidden_size %lld is not a positive size",
                        (long long)hidden);
    const char *direction = seq ? ir_data_str(b, "direction", "forward") : "forward";
    int dirs = 1;
    if (strcasecmp(direction, "forward") == 0)
        direction = "forward";
    else if (strcasecmp(direction, "reverse") == 0)
        direction = "reverse";
    else if (strcasecmp(direction, "bidirectional") == 0)
        direction = "bidirectional", dirs = 2;
    else
        return ir_error(b, RN_PARSE_ERROR, "unknown direction '%s'", direction);
    bool lbr = false;
    if (k == &GRU)
        IR_TRY(ir_data_bool(b, "linear_before_reset", false, &lbr));
    if (k == &LSTM && ir_data_str(b, "input_forget", NULL) != NULL) {
        bool forget;
        IR_TRY(ir_data_bool(b, "input_forget", false, &forget));
        if (forget)
            return ir_error(b, RN_UNSUPPORTED, "input_forget is not supported");
    }
    const ir_layer *l = b->layer;
    graph_value *x = l->in[0].value, *states[2] = {l->in[1].value, NULL};
    if (k->cell_state)
        states[1] = l->in[2].value;
    graph_value *w = l->in[p_w].value, *r = l->in[p_w + 1].value, *bias = l->in[p_w + 2].value;
    rn_element_type bias_elem = l->in[p_w + 2].elem;
    if (!seq) {
        IR_TRY(lead_one(b, x, &x));
        for (int i = 0; i < n_states; i++)
            IR_TRY(lead_one(b, states[i], &states[i]));
        IR_TRY(lead_one(b, w, &w));
        IR_TRY(lead_one(b, r, &r));
        IR_TRY(lead_one(b, bias, &bias));
    }
    /* W and R in ONNX's gate order; B as ONNX's [Wb, Rb]. */
    static const int lstm_order[4] = {1, 3, 0, 2};
    if (k == &LSTM) {
        static const int lstm_bias[8] = {1, 3, 0, 2, -1, -1, -1, -1};
        IR_TRY(regroup(b, w, l->in[p_w].elem, dirs, 4, hidden, lstm_order, 4, &w));
        IR_TRY(regroup(b, r, l->in[p_w + 1].elem, dirs, 4, hidden, lstm_order, 4, &r));
        IR_TRY(regroup(b, bias, bias_elem, dirs, 4, hidden, lstm_bias, 8, &bias));
    } else if (k == &GRU && lbr) {
        static const int gru_lbr[6] = {0, 1, 2, -1, -1, 3};
        IR_TRY(regroup(b, bias, bias_elem, dirs, 4, hidden, gru_lbr, 6, &bias));
    } else {
        static const int plain[6] = {0, 1, 2, -1, -1, -1};
        int n = k->gates;
        static const int rnn_plain[2] = {0, -1};
        IR_TRY(
            regroup(b, bias, bias_elem, dirs, n, hidden, n == 1 ? rnn_plain : plain, 2 * n, &bias));
    }
    graph_value *ins[8] = {x, w, r, bias, NULL, states[0], states[1]};
    if (seq) {
        int p_len = 1 + n_states;
        ins[4] = l->in[p_len].value;
        if (l->in[p_len].elem != RN_I32) {
            graph_node *c;
            IR_TRY(ir_node1(b, "Cast", 13, 1, &l->in[p_len].value, &ins[4], &c));
            IR_TRY(ir_attr_int(c, "to", RN_I32));
        }
    }
    graph_value *outs[3] = {NULL, NULL, NULL};
    if (seq) {
        IR_TRY(ir_tmp_value(b, &outs[0]));
        for (int i = 0; i < n_states; i++)
            outs[1 + i] = l->out[1 + i].value;
    } else {
        for (int i = 0; i < n_states; i++)
            IR_TRY(ir_tmp_value(b, &outs[1 + i]));
    }
    graph_node *n;
    IR_TRY(ir_node(b, k->onnx, 14, 5 + n_states, ins, 1 + n_states, outs, &n));
    IR_TRY(ir_attr_int(n, "hidden_size", hidden));
    IR_TRY(ir_attr_str(n, "direction", direction));
    if (seq)
        IR_TRY(ir_attr_int(n, "layout", 1));
    IR_TRY(activations(b, n, k == &RNN ? 1 : k == &GRU ? 2 : 3, dirs));
    float clip;
    IR_TRY(ir_data_float(b, "clip", 0.0f, &clip));
    if (clip > 0)
        IR_TRY(ir_attr_float(n, "clip", clip));
    if (lbr)
        IR_TRY(ir_attr_int(n, "linear_before_reset", 1));
    if (seq) {
        static const int64_t perm[4] = {0, 2, 1, 3};
        graph_node *t;
        IR_TRY(ir_node(b, "Transpose", 13, 1, &outs[0], 1, &l->out[0].value, &t));
        return ir_attr_ints(t, "perm", perm, 4);
    }
    for (int i = 0; i < n_states; i++) {
        int64_t zero = 0;
        graph_value *xs[2] = {outs[1 + i]};
        IR_TRY(ir_const_i64(b, &zero, 1, false, &xs[1]));
        IR_TRY(ir_node(b, "Squeeze", 13, 2, xs, 1, &l->out[i].value, NULL));
    }
    return RN_OK;
}

const ir_op ir_ops_rnn[] = {
    {"LSTMSequence", map_rnn, NULL, 0},
    {"GRUSequence", map_rnn, NULL, 0},
    {"RNNSequence", map_rnn, NULL, 0},
    {"LSTMCell", map_rnn, NULL, 0},
    {"GRUCell", map_rnn, NULL, 0},
    {"RNNCell", map_rnn, NULL, 0},
    {NULL, NULL, NULL, 0},
};
