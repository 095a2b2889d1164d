/* NN op schemas: convolution, pooling, normalisation, Gemm / MatMul, softmax,
 * Dropout and Flatten, with shape inference following the ONNX spec for
 * opsets 7 to 17.
 *
 * Every infer function works on partial shapes: a dim or a rank it cannot
 * know yet stays RN_DIM_DYNAMIC / -1, and only known facts are checked. */
#include <string.h>

#include "graph/ops.h"
#include "graph/ops/attr_parse.h"

/* ---- small helpers ---- */

static bool nn_is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* Input i, when present and of known type, must be a float type. */
static rn_status nn_want_float(const graph_node *node, const graph_port *in, int i)
{
    if (in[i].present && in[i].type != RN_UNDEFINED && !nn_is_float(in[i].type))
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input %d has type %s, not a float type", node->name,
                            node->op_type, i, rn_element_type_name(in[i].type));
    return RN_OK;
}

/* Inputs i and j, when present and known, must have the same type. */
static rn_status nn_same_type(const graph_node *node, const graph_port *in, int i, int j)
{
    if (in[i].present && in[j].present && in[i].type != RN_UNDEFINED &&
        in[j].type != RN_UNDEFINED && in[i].type != in[j].type)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input %d is %s but input %d is %s",
                            node->name, node->op_type, i, rn_element_type_name(in[i].type), j,
                            rn_element_type_name(in[j].type));
    return RN_OK;
}

static rn_status nn_rank_at_least(const graph_node *node, const graph_port *p, int i, int min)
{
    if (p->shape.rank >= 0 && p->shape.rank < min)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input %d has rank %d; at least %d needed", node->name,
                            node->op_type, i, p->shape.rank, min);
    return RN_OK;
}

static rn_status nn_rank_is(const graph_node *node, const graph_port *p, int i, int rank)
{
    if (p->shape.rank >= 0 && p->shape.rank != rank)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input %d has rank %d; expected %d",
                            node->name, node->op_type, i, p->shape.rank, rank);
    return RN_OK;
}

/* Two dims that must agree when both are known. */
static rn_status nn_dims_agree(const graph_node *node, const char *what, int64_t a, int64_t b)
{
    if (a >= 0 && b >= 0 && a != b)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): %s: %lld vs %lld", node->name,
                            node->op_type, what, (long long)a, (long long)b);
    return RN_OK;
}

/* Output `o` (when present) gets `type` and `shape`. */
static void nn_set_out(graph_port *out, int n_out, int o, rn_element_type type,
                       const graph_shape *shape)
{
    if (o < n_out && out[o].present) {
        out[o].type = type;
        out[o].shape = *shape;
    }
}

/* Product of dims [from, to), or RN_DIM_DYNAMIC when one of them is unknown. */
static int64_t nn_span(const graph_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        if (s->dims[i] < 0)
            return RN_DIM_DYNAMIC;
        p *= s->dims[i];
    }
    return p;
}

/* ---- sliding windows (Conv and the pools; graph/ops/window.c reads them) ---- */

/* Fills out->dims[2..] from x's spatial dims. */
static rn_status nn_window_shape(const graph_node *node, const graph_window *w,
                                 const graph_shape *x, graph_shape *out)
{
    for (int i = 0; i < w->n; i++) {
        int64_t in = x->rank >= 0 ? x->dims[2 + i] : RN_DIM_DYNAMIC;
        rn_status st = graph_window_out(node, w, i, in, &out->dims[2 + i]);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

/* ---- Conv ---- */

static rn_status infer_conv(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    const graph_port *x = &in[0], *w = &in[1];
    const graph_port *b = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = nn_want_float(node, in, 0);
    if (st == RN_OK)
        st = nn_same_type(node, in, 0, 1);
    if (st == RN_OK && b != NULL)
        st = nn_same_type(node, in, 0, 2);
    if (st == RN_OK)
        st = nn_rank_at_least(node, x, 0, 3);
    if (st == RN_OK)
        st = nn_rank_at_least(node, w, 1, 3);
    if (st != RN_OK)
        return st;
    int rank = x->shape.rank >= 0 ? x->shape.rank : w->shape.rank;
    if (x->shape.rank >= 0 && w->shape.rank >= 0 && x->shape.rank != w->shape.rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input X has rank %d but weight W has %d", node->name,
                            node->op_type, x->shape.rank, w->shape.rank);
    rn_element_type type = x->type != RN_UNDEFINED ? x->type : w->type;
    int64_t group = graph_node_attr_int(node, "group", 1);
    if (group < 1)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): group is %lld; must be >= 1",
                            node->name, node->op_type, (long long)group);
    if (rank < 0) {
        graph_port_unknown(&out[0], type);
        return RN_OK;
    }
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): rank %d exceeds %d", node->name,
                            node->op_type, rank, RN_MAX_RANK);
    int64_t m = w->shape.rank >= 0 ? w->shape.dims[0] : RN_DIM_DYNAMIC;
    int64_t c = x->shape.rank >= 0 ? x->shape.dims[1] : RN_DIM_DYNAMIC;
    int64_t cg = w->shape.rank >= 0 ? w->shape.dims[1] : RN_DIM_DYNAMIC;
    if (m >= 0 && m % group != 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): weight W has %lld output channels, not a multiple of "
                            "group %lld",
                            node->name, node->op_type, (long long)m, (long long)group);
    if (c >= 0 && cg >= 0 && c != cg * group)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input X has %lld channels but weight W expects %lld "
                            "x group %lld",
                            node->name, node->op_type, (long long)c, (long long)cg,
                            (long long)group);
    if (b != NULL) {
        if ((st = nn_rank_is(node, b, 2, 1)) != RN_OK)
            return st;
        if (b->shape.rank == 1 && (st = nn_dims_agree(node, "bias B length vs output channels",
                                                      b->shape.dims[0], m)) != RN_OK)
            return st;
    }
    int n = rank - 2;
    int64_t wk[RN_MAX_RANK];
    for (int i = 0; i < n; i++)
        wk[i] = w->shape.rank >= 0 ? w->shape.dims[2 + i] : RN_DIM_DYNAMIC;
    graph_window win;
    if ((st = graph_window_read(node, n, wk, false, &win)) != RN_OK)
        return st;
    win.ceil_mode = false; /* not a Conv attribute */
    graph_shape y = {.rank = rank};
    y.dims[0] = x->shape.rank >= 0 ? x->shape.dims[0] : RN_DIM_DYNAMIC;
    y.dims[1] = m;
    if ((st = nn_window_shape(node, &win, &x->shape, &y)) != RN_OK)
        return st;
    nn_set_out(out, n_out, 0, type, &y);
    return RN_OK;
}

static rn_status infer_matmul(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out);

static rn_status residual_matches(const graph_node *node, const graph_port *in, int n_in, int k,
                                  const graph_port *out);

/* FusedMatMul (runnel): MatMul of inputs 0 and 1, plus a bias over the
 * last axis (input 2), plus a residual of the output's shape (input 3),
 * then the activation. */
static rn_status infer_fused_matmul(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    rn_status st = infer_matmul(node, in, 2, out, n_out);
    if (st == RN_OK)
        st = residual_matches(node, in, n_in, 3, out);
    if (st != RN_OK || n_in < 3 || !in[2].present || in[2].shape.rank < 0 || out[0].shape.rank < 1)
        return st;
    int64_t n = out[0].shape.dims[out[0].shape.rank - 1];
    int64_t count = graph_shape_count(&in[2].shape);
    if (n >= 0 && count >= 0 && count != n)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): the bias has %lld values for %lld columns", node->name,
                            node->op_type, (long long)count, (long long)n);
    return RN_OK;
}

/* ScaledDotProductAttention (runnel; transforms/fuse_attention.c):
 * Softmax(scale * Q @ Kt + mask) @ V over the last axis, Q [..., Sq, D], Kt
 * [..., D, Sk], V [..., Sk, Dv], the optional mask (input 3) broadcast to
 * the scores [..., Sq, Sk]: MatMul's shapes twice. With qkv_layout "BSHD"
 * the inputs are rank 4 before the exporters' head Transposes: Q [B, Sq,
 * H, D], K [B, Sk, H, D] and V [B, Sk, H, Dv] (Q and V permuted [0, 2, 1,
 * 3], K [0, 2, 3, 1]). The output is [B, H, Sq, Dv], or with out_layout
 * "BSHD" (rank 4) [B, Sq, H, Dv]: the exporters' head merge Transpose
 * [0, 2, 1, 3] absorbed too. */
static rn_status infer_sdpa(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)n_in;
    graph_port ops[3] = {in[0], in[1], in[2]};
    if (strcmp(graph_node_attr_string(node, "qkv_layout", "BHSD"), "BSHD") == 0) {
        static const int perm[3][4] = {{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
        for (int k = 0; k < 3; k++) {
            if (in[k].shape.rank < 0)
                continue;
            if (in[k].shape.rank != 4)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): qkv_layout BSHD takes rank-4 inputs, input %d "
                                    "has rank %d",
                                    node->name, node->op_type, k, in[k].shape.rank);
            for (int d = 0; d < 4; d++)
                ops[k].shape.dims[d] = in[k].shape.dims[perm[k][d]];
        }
    }
    graph_port scores = {.present = true};
    rn_status st = infer_matmul(node, ops, 2, &scores, 1);
    if (st != RN_OK)
        return st;
    graph_port pv[2] = {scores, ops[2]};
    if ((st = infer_matmul(node, pv, 2, out, n_out)) != RN_OK ||
        strcmp(graph_node_attr_string(node, "out_layout", "BHSD"), "BSHD") != 0 ||
        out[0].shape.rank < 0)
        return st;
    if (out[0].shape.rank != 4)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): out_layout BSHD writes a rank-4 output, this one "
                            "has rank %d",
                            node->name, node->op_type, out[0].shape.rank);
    int64_t h = out[0].shape.dims[1];
    out[0].shape.dims[1] = out[0].shape.dims[2];
    out[0].shape.dims[2] = h;
    return RN_OK;
}

/* ShuffleChannels (runnel; OpenVINO's): the input's shape, the group
 * dividing the axis. */
static rn_status infer_shuffle_channels(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    (void)n_in;
    const graph_shape *x = &in[0].shape;
    int64_t axis = graph_node_attr_int(node, "axis", 1);
    int64_t group = graph_node_attr_int(node, "group", 1);
    if (x->rank >= 0) {
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank || group < 1 ||
            (x->dims[axis] >= 0 && x->dims[axis] % group != 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): group %lld does not divide axis %lld", node->name,
                                node->op_type, (long long)group, (long long)axis);
    }
    nn_set_out(out, n_out, 0, in[0].type, x);
    return RN_OK;
}

/* Whether the residual (input k, when present) has the output's shape
 * (unknown dims agree); an error naming the node when not. */
static rn_status residual_matches(const graph_node *node, const graph_port *in, int n_in, int k,
                                  const graph_port *out)
{
    if (n_in <= k || !in[k].present || in[k].shape.rank < 0 || out[0].shape.rank < 0)
        return RN_OK;
    bool same = in[k].shape.rank == out[0].shape.rank;
    for (int d = 0; same && d < out[0].shape.rank; d++)
        same = in[k].shape.dims[d] == out[0].shape.dims[d] || in[k].shape.dims[d] < 0 ||
               out[0].shape.dims[d] < 0;
    if (!same)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): the residual input does not have the output's shape",
                            node->name, node->op_type);
    return RN_OK;
}

/* FusedConv: Conv's output, which the residual Sum (input 3) must match. */
static rn_status infer_fused_conv(const graph_node *node, const graph_port *in, int n_in,
                                  graph_port *out, int n_out)
{
    rn_status st = infer_conv(node, in, n_in < 3 ? n_in : 3, out, n_out);
    return st != RN_OK ? st : residual_matches(node, in, n_in, 3, out);
}

/* ---- MaxPool / AveragePool ---- */

static rn_status infer_pool(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)n_in;
    const graph_port *x = &in[0];
    bool is_max = strcmp(node->op_type, "MaxPool") == 0;
    rn_element_type type = x->type;
    if (type != RN_UNDEFINED && !nn_is_float(type) && !(is_max && (type == RN_I8 || type == RN_U8)))
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input 0 has type %s, not a float type%s", node->name,
                            node->op_type, rn_element_type_name(type), is_max ? ", i8 or u8" : "");
    rn_status st = nn_rank_at_least(node, x, 0, 3);
    if (st != RN_OK)
        return st;
    const int64_t *ks;
    int n = graph_node_attr_ints(node, "kernel_shape", &ks);
    if (n < 1)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): attribute kernel_shape is required",
                            node->name, node->op_type);
    if (n > RN_MAX_RANK - 2 || (x->shape.rank >= 0 && x->shape.rank != n + 2))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): kernel_shape has %d dims but input 0 has rank %d",
                            node->name, node->op_type, n, x->shape.rank);
    graph_window win;
    if ((st = graph_window_read(node, n, NULL, true, &win)) != RN_OK)
        return st;
    int64_t storage_order = graph_node_attr_int(node, "storage_order", 0);
    if (storage_order != 0 && storage_order != 1)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): storage_order is %lld; expected 0 or 1", node->name,
                            node->op_type, (long long)storage_order);
    graph_shape y = {.rank = n + 2};
    y.dims[0] = x->shape.rank >= 0 ? x->shape.dims[0] : RN_DIM_DYNAMIC;
    y.dims[1] = x->shape.rank >= 0 ? x->shape.dims[1] : RN_DIM_DYNAMIC;
    if ((st = nn_window_shape(node, &win, &x->shape, &y)) != RN_OK)
        return st;
    nn_set_out(out, n_out, 0, type, &y);
    nn_set_out(out, n_out, 1, RN_I64, &y); /* MaxPool's Indices */
    return RN_OK;
}

/* ---- GlobalAveragePool / GlobalMaxPool ---- */

static rn_status infer_global_pool(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    (void)n_in;
    rn_status st = nn_want_float(node, in, 0);
    if (st == RN_OK)
        st = nn_rank_at_least(node, &in[0], 0, 3);
    if (st != RN_OK)
        return st;
    graph_shape y = in[0].shape;
    for (int i = 2; i < y.rank; i++)
        y.dims[i] = 1;
    nn_set_out(out, n_out, 0, in[0].type, &y);
    return RN_OK;
}

/* ---- LRN ---- */

static rn_status infer_lrn(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_in;
    rn_status st = nn_want_float(node, in, 0);
    if (st == RN_OK)
        st = nn_rank_at_least(node, &in[0], 0, 2);
    if (st != RN_OK)
        return st;
    int64_t size = graph_node_attr_int(node, "size", 0);
    if (size < 1)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): attribute size is %lld; must be >= 1",
                            node->name, node->op_type, (long long)size);
    nn_set_out(out, n_out, 0, in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- BatchNormalization ---- */

static rn_status infer_batchnorm(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    (void)n_in;
    const graph_port *x = &in[0];
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && i < 5; i++)
        st = nn_want_float(node, in, i);
    /* Opset 15 lets scale/B and mean/var have their own types; before, all match X. */
    if (st == RN_OK && node->opset < 15) {
        for (int i = 1; st == RN_OK && i < 5; i++)
            st = nn_same_type(node, in, 0, i);
    } else if (st == RN_OK) {
        st = nn_same_type(node, in, 1, 2);
        if (st == RN_OK)
            st = nn_same_type(node, in, 3, 4);
    }
    if (st == RN_OK)
        st = nn_rank_at_least(node, x, 0, 2);
    if (st != RN_OK)
        return st;
    int64_t training = graph_node_attr_int(node, "training_mode", 0);
    if (training != 0 && training != 1)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): training_mode is %lld; expected 0 or 1", node->name,
                            node->op_type, (long long)training);
    bool spatial = graph_node_attr_int(node, "spatial", 1) != 0;
    /* The per-channel parameters: [C], or X's dims after N when spatial=0 (opset 7). */
    graph_shape p = {.rank = -1};
    if (x->shape.rank >= 0) {
        if (spatial) {
            p.rank = 1;
            p.dims[0] = x->shape.dims[1];
        } else {
            p.rank = x->shape.rank - 1;
            memcpy(p.dims, x->shape.dims + 1, sizeof(int64_t) * (size_t)p.rank);
        }
    }
    for (int i = 1; i < 5; i++) {
        const graph_shape *s = &in[i].shape;
        if (s->rank < 0)
            continue;
        if (p.rank < 0) {
            p = *s;
            continue;
        }
        bool ok = s->rank == p.rank;
        for (int d = 0; ok && d < p.rank; d++)
            ok = s->dims[d] < 0 || p.dims[d] < 0 || s->dims[d] == p.dims[d];
        if (!ok) {
            char a[128], b[128];
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): input %d has shape %s; expected %s (per channel "
                                "of X)",
                                node->name, node->op_type, i, graph_shape_str(s, a, sizeof a),
                                graph_shape_str(&p, b, sizeof b));
        }
    }
    nn_set_out(out, n_out, 0, x->type, &x->shape);
    rn_element_type stat_type = in[3].type != RN_UNDEFINED ? in[3].type : x->type;
    for (int o = 1; o < n_out; o++)
        nn_set_out(out, n_out, o, stat_type, &p);
    return RN_OK;
}

/* ---- Gemm ---- */

static rn_status infer_gemm(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    const graph_port *a = &in[0], *b = &in[1];
    const graph_port *c = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = nn_same_type(node, in, 0, 1);
    if (st == RN_OK && c != NULL)
        st = nn_same_type(node, in, 0, 2);
    if (st == RN_OK)
        st = nn_rank_is(node, a, 0, 2);
    if (st == RN_OK)
        st = nn_rank_is(node, b, 1, 2);
    if (st != RN_OK)
        return st;
    rn_element_type type = a->type != RN_UNDEFINED ? a->type : b->type;
    if (type == RN_BOOL || type == RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input 0 has type %s; expected a number", node->name,
                            node->op_type, rn_element_type_name(type));
    bool ta = graph_node_attr_int(node, "transA", 0) != 0;
    bool tb = graph_node_attr_int(node, "transB", 0) != 0;
    int64_t m = a->shape.rank == 2 ? a->shape.dims[ta ? 1 : 0] : RN_DIM_DYNAMIC;
    int64_t ka = a->shape.rank == 2 ? a->shape.dims[ta ? 0 : 1] : RN_DIM_DYNAMIC;
    int64_t kb = b->shape.rank == 2 ? b->shape.dims[tb ? 1 : 0] : RN_DIM_DYNAMIC;
    int64_t n = b->shape.rank == 2 ? b->shape.dims[tb ? 0 : 1] : RN_DIM_DYNAMIC;
    if ((st = nn_dims_agree(node, "inner dims of op(A) and op(B)", ka, kb)) != RN_OK)
        return st;
    if (c != NULL && c->shape.rank >= 0) {
        /* C broadcasts one-way to (M, N). */
        if (c->shape.rank > 2)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): input C has rank %d; it must broadcast to (M, N)",
                                node->name, node->op_type, c->shape.rank);
        int64_t mn[2] = {m, n};
        for (int d = 0; d < c->shape.rank; d++) {
            int64_t cd = c->shape.dims[d], t = mn[2 - c->shape.rank + d];
            if (cd >= 0 && cd != 1 && t >= 0 && cd != t)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): input C dim %d is %lld; it must be 1 or %lld "
                                    "to broadcast to (M, N) = (%lld, %lld)",
                                    node->name, node->op_type, d, (long long)cd, (long long)t,
                                    (long long)m, (long long)n);
        }
    }
    graph_shape y = {.rank = 2, .dims = {m, n}};
    nn_set_out(out, n_out, 0, type, &y);
    return RN_OK;
}

/* ---- MatMul ---- */

static rn_status infer_matmul(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_in;
    const graph_port *a = &in[0], *b = &in[1];
    rn_status st = nn_same_type(node, in, 0, 1);
    if (st != RN_OK)
        return st;
    rn_element_type type = a->type != RN_UNDEFINED ? a->type : b->type;
    if (type == RN_BOOL || type == RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input 0 has type %s; expected a number", node->name,
                            node->op_type, rn_element_type_name(type));
    if (a->shape.rank == 0 || b->shape.rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input %d is a scalar; MatMul needs "
                            "rank >= 1",
                            node->name, node->op_type, a->shape.rank == 0 ? 0 : 1);
    if (a->shape.rank < 0 || b->shape.rank < 0) {
        graph_port_unknown(&out[0], type);
        return RN_OK;
    }
    /* numpy.matmul: a 1-D A is a row (1, K), a 1-D B a column (K, 1); the
     * added dim is dropped from the result; the batch dims broadcast. */
    graph_shape sa = a->shape, sb = b->shape;
    bool a_vec = sa.rank == 1, b_vec = sb.rank == 1;
    if (a_vec) {
        sa.rank = 2;
        sa.dims[1] = sa.dims[0];
        sa.dims[0] = 1;
    }
    if (b_vec) {
        sb.rank = 2;
        sb.dims[1] = 1;
    }
    if ((st = nn_dims_agree(node, "inner dims of A and B", sa.dims[sa.rank - 1],
                            sb.dims[sb.rank - 2])) != RN_OK)
        return st;
    graph_shape ba = {.rank = sa.rank - 2}, bb = {.rank = sb.rank - 2}, batch;
    memcpy(ba.dims, sa.dims, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dims, sb.dims, sizeof(int64_t) * (size_t)bb.rank);
    if ((st = graph_broadcast_shapes(node, &ba, &bb, &batch)) != RN_OK)
        return st;
    if (batch.rank + 2 > RN_MAX_RANK)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): result rank exceeds %d", node->name,
                            node->op_type, RN_MAX_RANK);
    graph_shape y = batch;
    if (!a_vec)
        y.dims[y.rank++] = sa.dims[sa.rank - 2];
    if (!b_vec)
        y.dims[y.rank++] = sb.dims[sb.rank - 1];
    nn_set_out(out, n_out, 0, type, &y);
    return RN_OK;
}

/* ---- Softmax / LogSoftmax ---- */

static rn_status infer_softmax(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    (void)n_in;
    rn_status st = nn_want_float(node, in, 0);
    if (st != RN_OK)
        return st;
    /* Opset < 13: the input is coerced to 2-D at `axis` (default 1);
     * from 13: one axis (default -1). Either way the range is [-r, r-1]. */
    int64_t axis = graph_node_attr_int(node, "axis", node->opset < 13 ? 1 : -1);
    int r = in[0].shape.rank;
    if (r >= 0) {
        int ax;
        if (r == 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): input 0 is a scalar; rank >= 1 "
                                "needed",
                                node->name, node->op_type);
        if ((st = graph_normalize_axis(node, axis, r, &ax)) != RN_OK)
            return st;
    }
    nn_set_out(out, n_out, 0, in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- LayerNormalization ---- */

static rn_status infer_layernorm(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    const graph_port *x = &in[0];
    rn_status st = nn_want_float(node, in, 0);
    if (st == RN_OK)
        st = nn_same_type(node, in, 0, 1);
    if (st == RN_OK && n_in > 2)
        st = nn_same_type(node, in, 0, 2);
    if (st != RN_OK)
        return st;
    int64_t stash = graph_node_attr_int(node, "stash_type", 1);
    if (stash != RN_F32 && stash != RN_F64 && stash != RN_F16 && stash != RN_BF16)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): stash_type %lld is not a float type",
                            node->name, node->op_type, (long long)stash);
    int64_t axis_attr = graph_node_attr_int(node, "axis", -1);
    graph_shape stat = {.rank = -1};
    int r = x->shape.rank;
    if (r >= 0) {
        int axis;
        if (r == 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): input X is a scalar; rank >= 1 "
                                "needed",
                                node->name, node->op_type);
        if ((st = graph_normalize_axis(node, axis_attr, r, &axis)) != RN_OK)
            return st;
        /* Scale and B broadcast one-way to X's dims [axis, r). */
        for (int i = 1; i < n_in && i < 3; i++) {
            const graph_shape *s = &in[i].shape;
            if (!in[i].present || s->rank < 0)
                continue;
            if (s->rank > r - axis)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): input %d has rank %d; it must broadcast to "
                                    "the %d normalized dims",
                                    node->name, node->op_type, i, s->rank, r - axis);
            for (int d = 0; d < s->rank; d++) {
                int64_t sd = s->dims[d], xd = x->shape.dims[r - s->rank + d];
                if (sd >= 0 && sd != 1 && xd >= 0 && sd != xd)
                    return rn_set_error(
                        RN_SHAPE_MISMATCH, "node '%s' (%s): input %d dim %d is %lld but X has %lld",
                        node->name, node->op_type, i, d, (long long)sd, (long long)xd);
            }
        }
        stat = x->shape;
        for (int d = axis; d < r; d++)
            stat.dims[d] = 1;
    }
    nn_set_out(out, n_out, 0, x->type, &x->shape);
    nn_set_out(out, n_out, 1, (rn_element_type)stash, &stat);
    nn_set_out(out, n_out, 2, (rn_element_type)stash, &stat);
    return RN_OK;
}

/* ---- Dropout ---- */

static rn_status infer_dropout(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    if (n_in > 1 && in[1].present && in[1].type != RN_UNDEFINED && !nn_is_float(in[1].type))
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): ratio (input 1) has type %s, not a "
                            "float type",
                            node->name, node->op_type, rn_element_type_name(in[1].type));
    if (n_in > 2 && in[2].present && in[2].type != RN_UNDEFINED && in[2].type != RN_BOOL)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): training_mode (input 2) has type "
                            "%s, not boolean",
                            node->name, node->op_type, rn_element_type_name(in[2].type));
    for (int i = 1; i < n_in && i < 3; i++) {
        if (in[i].present && in[i].shape.rank > 0 &&
            nn_span(&in[i].shape, 0, in[i].shape.rank) != 1)
            return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input %d must be a scalar",
                                node->name, node->op_type, i);
    }
    nn_set_out(out, n_out, 0, in[0].type, &in[0].shape);
    /* The mask is boolean from opset 10; Dropout-7's mask has the data's type. */
    nn_set_out(out, n_out, 1, node->opset >= 10 ? RN_BOOL : in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- Flatten ---- */

static rn_status infer_flatten(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    (void)n_in;
    int64_t axis = graph_node_attr_int(node, "axis", 1);
    int r = in[0].shape.rank;
    graph_shape y = {.rank = 2, .dims = {RN_DIM_DYNAMIC, RN_DIM_DYNAMIC}};
    if (r >= 0) {
        /* axis is in [-r, r] (negative values from opset 11); r itself makes (N, 1). */
        if (axis < -r || axis > r || (axis < 0 && node->opset < 11))
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): axis %lld is out of range for "
                                "rank %d",
                                node->name, node->op_type, (long long)axis, r);
        int ax = (int)(axis < 0 ? axis + r : axis);
        y.dims[0] = nn_span(&in[0].shape, 0, ax);
        y.dims[1] = nn_span(&in[0].shape, ax, r);
    }
    nn_set_out(out, n_out, 0, in[0].type, &y);
    return RN_OK;
}

/* ---- the table ---- */

#define NN_WINDOW_ATTRS                                                                            \
    GRAPH_DEFAULT_STRING("auto_pad", "NOTSET"), GRAPH_OPTIONAL("kernel_shape", INTS),              \
        GRAPH_OPTIONAL("pads", INTS), GRAPH_OPTIONAL("strides", INTS),                             \
        GRAPH_OPTIONAL("dilations", INTS)

const graph_op_schema graph_ops_nn[] = {
    {"", "Conv", 2, 3, 1, 1, 0, infer_conv, {NN_WINDOW_ATTRS, GRAPH_DEFAULT_INT("group", 1)}},
    {"",
     "MaxPool",
     1,
     1,
     1,
     2,
     0,
     infer_pool,
     {NN_WINDOW_ATTRS, GRAPH_DEFAULT_INT("ceil_mode", 0), GRAPH_DEFAULT_INT("storage_order", 0)}},
    {"",
     "AveragePool",
     1,
     1,
     1,
     1,
     0,
     infer_pool,
     {NN_WINDOW_ATTRS, GRAPH_DEFAULT_INT("ceil_mode", 0),
      GRAPH_DEFAULT_INT("count_include_pad", 0)}},
    {"", "GlobalAveragePool", 1, 1, 1, 1, 0, infer_global_pool, {{NULL}}},
    {"", "GlobalMaxPool", 1, 1, 1, 1, 0, infer_global_pool, {{NULL}}},
    {"",
     "LRN",
     1,
     1,
     1,
     1,
     0,
     infer_lrn,
     {GRAPH_REQUIRED("size", INT), GRAPH_DEFAULT_FLOAT("alpha", 1e-4f),
      GRAPH_DEFAULT_FLOAT("beta", 0.75f), GRAPH_DEFAULT_FLOAT("bias", 1.0f)}},
    {"",
     "BatchNormalization",
     5,
     5,
     1,
     5,
     0,
     infer_batchnorm,
     {GRAPH_DEFAULT_FLOAT("epsilon", 1e-5f), GRAPH_DEFAULT_FLOAT("momentum", 0.9f),
      GRAPH_OPTIONAL("spatial", INT), GRAPH_DEFAULT_INT("training_mode", 0)}},
    {"",
     "Gemm",
     2,
     3,
     1,
     1,
     0,
     infer_gemm,
     {GRAPH_DEFAULT_FLOAT("alpha", 1.0f), GRAPH_DEFAULT_FLOAT("beta", 1.0f),
      GRAPH_DEFAULT_INT("transA", 0), GRAPH_DEFAULT_INT("transB", 0)}},
    {"", "MatMul", 2, 2, 1, 1, 0, infer_matmul, {{NULL}}},
    {"", "Softmax", 1, 1, 1, 1, 0, infer_softmax, {GRAPH_OPTIONAL("axis", INT)}},
    {"", "LogSoftmax", 1, 1, 1, 1, 0, infer_softmax, {GRAPH_OPTIONAL("axis", INT)}},
    {"",
     "LayerNormalization",
     2,
     3,
     1,
     3,
     0,
     infer_layernorm,
     {GRAPH_DEFAULT_INT("axis", -1), GRAPH_DEFAULT_FLOAT("epsilon", 1e-5f),
      GRAPH_DEFAULT_INT("stash_type", 1)}},
    {"",
     "Dropout",
     1,
     3,
     1,
     2,
     0,
     infer_dropout,
     {GRAPH_OPTIONAL("ratio", FLOAT), GRAPH_OPTIONAL("seed", INT)}},
    {"", "Flatten", 1, 1, 1, 1, 0, infer_flatten, {GRAPH_OPTIONAL("axis", INT)}},
    /* runnel's fused ops (transforms/fuse_conv.c makes them for devices
     * that run them as one primitive): y = activation(Conv(X, W, B) + Sum),
     * y = activation(MatMul(A, B) + bias + Sum), y = activation(Gemm(A, B, C)) and y =
     * Relu(BatchNormalization(...)), activation named by its ONNX op with its parameters in
     * activation_params, as ONNX Runtime's com.microsoft FusedConv and FusedGemm. */
    {"runnel",
     "FusedConv",
     2,
     4,
     1,
     1,
     0,
     infer_fused_conv,
     {NN_WINDOW_ATTRS, GRAPH_DEFAULT_INT("group", 1), GRAPH_OPTIONAL("activation", STRING),
      GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {"runnel",
     "FusedMatMul",
     2,
     4,
     1,
     1,
     0,
     infer_fused_matmul,
     {GRAPH_OPTIONAL("activation", STRING), GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {"runnel",
     "ScaledDotProductAttention",
     3,
     4,
     1,
     1,
     0,
     infer_sdpa,
     {GRAPH_REQUIRED("scale", FLOAT), GRAPH_OPTIONAL("qkv_layout", STRING),
      GRAPH_OPTIONAL("out_layout", STRING)}},
    {"runnel",
     "ShuffleChannels",
     1,
     1,
     1,
     1,
     0,
     infer_shuffle_channels,
     {GRAPH_OPTIONAL("axis", INT), GRAPH_REQUIRED("group", INT)}},
    {"runnel",
     "FusedBatchNormalization",
     5,
     5,
     1,
     1,
     0,
     infer_batchnorm,
     {GRAPH_DEFAULT_FLOAT("epsilon", 1e-5f), GRAPH_DEFAULT_FLOAT("momentum", 0.9f),
      GRAPH_OPTIONAL("spatial", INT), GRAPH_DEFAULT_INT("training_mode", 0),
      GRAPH_OPTIONAL("activation", STRING), GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {"runnel",
     "FusedGemm",
     2,
     3,
     1,
     1,
     0,
     infer_gemm,
     {GRAPH_DEFAULT_FLOAT("alpha", 1.0f), GRAPH_DEFAULT_FLOAT("beta", 1.0f),
      GRAPH_DEFAULT_INT("transA", 0), GRAPH_DEFAULT_INT("transB", 0),
      GRAPH_OPTIONAL("activation", STRING), GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {0},
};
