/* Contrib op schemas of domain com.microsoft: the ops ONNX Runtime's
 * transformer optimizer and Optimum exports write (Gelu family, BiasAdd,
 * FusedMatMul, Skip/EmbedLayerNormalization, Attention,
 * MultiHeadAttention, DynamicQuantizeMatMul), with shape inference following
 * ONNX Runtime's contrib op definitions (onnxruntime/core/graph/contrib_ops).
 * Forms runnel does not implement (past/present key-value caches, packed
 * QKV inputs) are inferred where the shapes say enough and refused by the
 * kernels with a message naming the input. */
#include <string.h>

#include "graph/ops.h"

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

static void set_out(graph_port *out, int n_out, int i, rn_element_type t, const graph_shape *s)
{
    if (i < n_out && out[i].present) {
        out[i].type = t;
        out[i].shape = *s;
    }
}

/* Input i, when present and known, must be float. */
static rn_status want_float(const graph_node *node, const graph_port *in, int n_in, int i)
{
    if (i < n_in && in[i].present && in[i].type != RN_UNDEFINED && !is_float(in[i].type))
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input %d has type %s, not a float type", node->name,
                            node->op_type, i, rn_element_type_name(in[i].type));
    return RN_OK;
}

/* Input i, when present with a known rank, must have rank `rank`. */
static rn_status want_rank(const graph_node *node, const graph_port *in, int n_in, int i, int rank)
{
    if (i < n_in && in[i].present && in[i].shape.rank >= 0 && in[i].shape.rank != rank)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input %d has rank %d, expected %d",
                            node->name, node->op_type, i, in[i].shape.rank, rank);
    return RN_OK;
}

/* Gelu, FastGelu, QuickGelu, BiasGelu, BiasAdd: Y has X's type and shape
 * (the bias and skip inputs broadcast into it). */
static rn_status infer_like_x(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    rn_status st = want_float(node, in, n_in, 0);
    if (st != RN_OK)
        return st;
    set_out(out, n_out, 0, in[0].type, &in[0].shape);
    return RN_OK;
}

/* The dims of a matrix product of a [.., M, K] and b [.., K, N] (the last
 * two dims of each already transposed as the op says), batch dims
 * broadcast. */
static rn_status matmul_shape(const graph_node *node, const graph_shape *a, const graph_shape *b,
                              graph_shape *y)
{
    y->rank = -1;
    if (a->rank < 0 || b->rank < 0)
        return RN_OK;
    if (a->rank < 2 || b->rank < 2)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): inputs of rank %d and %d; both need rank >= 2",
                            node->name, node->op_type, a->rank, b->rank);
    int64_t ka = a->dims[a->rank - 1], kb = b->dims[b->rank - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): inner dims differ (%lld and %lld)",
                            node->name, node->op_type, (long long)ka, (long long)kb);
    graph_shape ba = *a, bb = *b;
    ba.rank -= 2;
    bb.rank -= 2;
    rn_status st = graph_broadcast_shapes(node, &ba, &bb, y);
    if (st != RN_OK)
        return st;
    y->dims[y->rank] = a->dims[a->rank - 2];
    y->dims[y->rank + 1] = b->dims[b->rank - 1];
    y->rank += 2;
    return RN_OK;
}

static void transpose_last_two(graph_shape *s)
{
    if (s->rank >= 2) {
        int64_t t = s->dims[s->rank - 1];
        s->dims[s->rank - 1] = s->dims[s->rank - 2];
        s->dims[s->rank - 2] = t;
    }
}

/* FusedMatMul: alpha * op(A) @ op(B), op a transpose of the last two dims. */
static rn_status infer_fused_matmul(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    rn_status st = want_float(node, in, n_in, 0);
    if (st != RN_OK)
        return st;
    graph_shape a = in[0].shape, b = in[1].shape, y;
    if (graph_node_attr_int(node, "transA", 0))
        transpose_last_two(&a);
    if (graph_node_attr_int(node, "transB", 0))
        transpose_last_two(&b);
    if ((st = matmul_shape(node, &a, &b, &y)) != RN_OK)
        return st;
    set_out(out, n_out, 0, in[0].type, &y);
    return RN_OK;
}

/* DynamicQuantizeMatMul: A (f32) [.., M, K] quantized per tensor at run
 * time, B (i8/u8) [K, N]: Y f32 [.., M, N]. */
static rn_status infer_dynamic_quantize_matmul(const graph_node *node, const graph_port *in,
                                               int n_in, graph_port *out, int n_out)
{
    rn_status st = want_float(node, in, n_in, 0);
    if (st == RN_OK && in[1].type != RN_UNDEFINED && in[1].type != RN_I8 && in[1].type != RN_U8)
        st = rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): B has type %s, not int8 or uint8",
                          node->name, node->op_type, rn_element_type_name(in[1].type));
    graph_shape y = {.rank = -1};
    if (st == RN_OK)
        st = matmul_shape(node, &in[0].shape, &in[1].shape, &y);
    if (st != RN_OK)
        return st;
    set_out(out, n_out, 0, RN_F32, &y);
    return RN_OK;
}

/* SkipLayerNormalization: output and input_skip_bias_sum have the input's
 * shape; mean and inv_std_var are [.., 1]. */
static rn_status infer_skip_layernorm(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    rn_status st = want_float(node, in, n_in, 0);
    if (st != RN_OK)
        return st;
    const graph_shape *x = &in[0].shape, *skip = &in[1].shape;
    if (x->rank >= 0 && skip->rank >= 0 && skip->rank <= x->rank) {
        for (int d = 1; d <= skip->rank; d++) {
            int64_t sd = skip->dims[skip->rank - d], xd = x->dims[x->rank - d];
            if (sd >= 0 && xd >= 0 && sd != xd && sd != 1)
                return rn_set_error(
                    RN_SHAPE_MISMATCH, "node '%s' (%s): skip dim %d is %lld but input has %lld",
                    node->name, node->op_type, skip->rank - d, (long long)sd, (long long)xd);
        }
    }
    graph_shape stat = *x;
    if (stat.rank >= 1)
        stat.dims[stat.rank - 1] = 1;
    set_out(out, n_out, 0, in[0].type, x);
    set_out(out, n_out, 1, RN_F32, &stat);
    set_out(out, n_out, 2, RN_F32, &stat);
    set_out(out, n_out, 3, in[0].type, x);
    return RN_OK;
}

/* EmbedLayerNormalization: input_ids [B, S] -> output [B, S, H] (H from
 * word_embedding [V, H]), mask_index [B] (int32), embedding_sum [B, S, H]. */
static rn_status infer_embed_layernorm(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    rn_status st = want_rank(node, in, n_in, 0, 2);
    if (st == RN_OK)
        st = want_rank(node, in, n_in, 2, 2);
    if (st == RN_OK)
        st = want_float(node, in, n_in, 2);
    if (st != RN_OK)
        return st;
    graph_shape y = {.rank = 3, .dims = {RN_DIM_DYNAMIC, RN_DIM_DYNAMIC, RN_DIM_DYNAMIC}};
    graph_shape mask = {.rank = 1, .dims = {RN_DIM_DYNAMIC}};
    if (in[0].shape.rank == 2) {
        y.dims[0] = mask.dims[0] = in[0].shape.dims[0];
        y.dims[1] = in[0].shape.dims[1];
    }
    if (in[2].shape.rank == 2)
        y.dims[2] = in[2].shape.dims[1];
    set_out(out, n_out, 0, in[2].type, &y);
    set_out(out, n_out, 1, RN_I32, &mask);
    set_out(out, n_out, 2, in[2].type, &y);
    return RN_OK;
}

/* Attention: input [B, S, I], weights [I, Q + K + V] (qkv_hidden_sizes, or
 * three equal parts) -> output [B, S, V]. present (the key-value cache) is
 * left unknown. */
static rn_status infer_attention(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    rn_status st = want_rank(node, in, n_in, 0, 3);
    if (st == RN_OK)
        st = want_rank(node, in, n_in, 1, 2);
    if (st == RN_OK)
        st = want_float(node, in, n_in, 0);
    if (st != RN_OK)
        return st;
    graph_shape y = {.rank = 3, .dims = {RN_DIM_DYNAMIC, RN_DIM_DYNAMIC, RN_DIM_DYNAMIC}};
    if (in[0].shape.rank == 3) {
        y.dims[0] = in[0].shape.dims[0];
        y.dims[1] = in[0].shape.dims[1];
    }
    const graph_attr *qkv = graph_node_attr(node, "qkv_hidden_sizes");
    if (qkv != NULL && qkv->count == 3)
        y.dims[2] = qkv->ints[2];
    else if (in[1].shape.rank == 2 && in[1].shape.dims[1] >= 0)
        y.dims[2] = in[1].shape.dims[1] / 3;
    set_out(out, n_out, 0, in[0].type, &y);
    return RN_OK;
}

/* MultiHeadAttention: query [B, S, D], key [B, L, D], value [B, L, Dv] ->
 * output [B, S, Dv]. Packed forms (key or value absent, 5-D query) leave
 * the last dim unknown. */
static rn_status infer_multihead_attention(const graph_node *node, const graph_port *in, int n_in,
                                           graph_port *out, int n_out)
{
    rn_status st = want_float(node, in, n_in, 0);
    if (st != RN_OK)
        return st;
    graph_shape y = {.rank = 3, .dims = {RN_DIM_DYNAMIC, RN_DIM_DYNAMIC, RN_DIM_DYNAMIC}};
    if (in[0].shape.rank == 3) {
        y.dims[0] = in[0].shape.dims[0];
        y.dims[1] = in[0].shape.dims[1];
        y.dims[2] = in[0].shape.dims[2];
    }
    if (n_in > 2 && in[2].present && in[2].shape.rank == 3)
        y.dims[2] = in[2].shape.dims[2];
    set_out(out, n_out, 0, in[0].type, &y);
    return RN_OK;
}

/* Each entry: domain, op, input and output counts, the value_inputs mask,
 * the infer function, then the attributes. */
/* clang-format off */
#define A(name, t) GRAPH_OPTIONAL(name, t)
#define R(name, t) GRAPH_REQUIRED(name, t)
#define OP(op, in_lo, in_hi, out_lo, out_hi, fn, ...) \
    {"com.microsoft", op, in_lo, in_hi, out_lo, out_hi, 0, fn, {__VA_ARGS__}}
#define ATTENTION_ATTRS \
    R("num_heads", INT), A("unidirectional", INT), A("scale", FLOAT), \
    A("mask_filter_value", FLOAT)
/* clang-format on */

const graph_op_schema graph_ops_contrib[] = {
    OP("Gelu", 1, 1, 1, 1, infer_like_x, {0}),
    OP("FastGelu", 1, 2, 1, 1, infer_like_x, {0}),
    OP("BiasGelu", 2, 2, 1, 1, infer_like_x, {0}),
    OP("QuickGelu", 1, 1, 1, 1, infer_like_x, A("alpha", FLOAT)),
    OP("BiasAdd", 3, 3, 1, 1, infer_like_x, {0}),
    OP("FusedMatMul", 2, 2, 1, 1, infer_fused_matmul, A("alpha", FLOAT), A("transA", INT),
       A("transB", INT), A("transBatchA", INT), A("transBatchB", INT)),
    OP("DynamicQuantizeMatMul", 3, 5, 1, 1, infer_dynamic_quantize_matmul, {0}),
    OP("SkipLayerNormalization", 3, 5, 1, 4, infer_skip_layernorm, A("epsilon", FLOAT)),
    OP("EmbedLayerNormalization", 7, 9, 2, 3, infer_embed_layernorm, A("epsilon", FLOAT),
       A("mask_index_type", INT)),
    OP("Attention", 2, 7, 1, 2, infer_attention, ATTENTION_ATTRS, A("qkv_hidden_sizes", INTS),
       A("do_rotary", INT), A("past_present_share_buffer", INT), A("rotary_embedding_dim", INT)),
    OP("MultiHeadAttention", 1, 11, 1, 3, infer_multihead_attention, ATTENTION_ATTRS),
    {0},
};
