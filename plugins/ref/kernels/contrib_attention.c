/* REF Attention and MultiHeadAttention (com.microsoft), f32 data, scores
 * and softmax in double.
 *
 * Attention: Q, K, V = input @ weights (+ bias), split by qkv_hidden_sizes
 * (three equal parts by default); MultiHeadAttention takes query, key and
 * value already projected ([batch, length, hidden]; bias, when given, is
 * added to each). Both then split the hidden dim into num_heads heads and
 * compute softmax(Q K^T * scale + attention_bias + mask) V per head, scale
 * 1 / sqrt(head size) by default, and merge the heads back.
 *
 * Masks (mask_index of Attention, key_padding_mask of MultiHeadAttention):
 * 1-D [batch] valid key lengths (right padding), 2-D [batch, keys] or 3-D
 * [batch, queries, keys] of ones and zeros; a masked score gets
 * mask_filter_value (-10000 by default) as ONNX Runtime does;
 * unidirectional masks the keys after each query. Key-value caches (past,
 * present) and packed or 4-D inputs are refused with the input named. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/contrib.h"
#include "plugins/ref/kernels/nn_util.h"

/* Where Q, K and V are: element (b, s, head, d) of Q is
 * q[(b * S + s) * q_row + head * dq + d]; K and V alike over T keys. */
typedef struct qkv {
    const float *q, *k, *v;
    size_t q_row, k_row, v_row;
    int64_t batch, s, t, heads, dq, dv;
} qkv;

typedef struct mask {
    const graph_tensor *index; /* 1-D lengths, 2-D or 3-D ones and zeros, or NULL */
    const graph_tensor *bias;  /* [batch or 1, heads or 1, S, T], or NULL */
    bool causal;
    float filter;
} mask;

static rn_status check_mask(const graph_node *node, const mask *m, const qkv *x)
{
    const graph_tensor *mi = m->index, *ab = m->bias;
    if (mi != NULL) {
        bool ok = mi->type == RN_I32 &&
                  ((mi->rank == 1 && mi->dims[0] == x->batch) ||
                   (mi->rank == 2 && mi->dims[0] == x->batch && mi->dims[1] == x->t) ||
                   (mi->rank == 3 && mi->dims[0] == x->batch && mi->dims[1] == x->s &&
                    mi->dims[2] == x->t));
        if (!ok)
            return ref_contrib_error(node, RN_UNSUPPORTED,
                                     "the mask must be int32 [batch] lengths or a [batch, %lld] "
                                     "or [batch, %lld, %lld] mask",
                                     (long long)x->t, (long long)x->s, (long long)x->t);
    }
    if (ab != NULL &&
        (ab->type != RN_F32 || ab->rank != 4 || (ab->dims[0] != 1 && ab->dims[0] != x->batch) ||
         (ab->dims[1] != 1 && ab->dims[1] != x->heads) || ab->dims[2] != x->s ||
         ab->dims[3] != x->t))
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "attention_bias must be f32 [batch or 1, heads or 1, %lld, %lld]",
                                 (long long)x->s, (long long)x->t);
    return RN_OK;
}

static bool masked(const mask *m, int64_t b, int64_t i, int64_t j, const qkv *x)
{
    if (m->causal && j > i + (x->t - x->s))
        return true;
    const graph_tensor *mi = m->index;
    if (mi == NULL)
        return false;
    const int32_t *d = mi->data;
    if (mi->rank == 1)
        return j >= d[b];
    if (mi->rank == 2)
        return d[b * x->t + j] == 0;
    return d[(b * x->s + i) * x->t + j] == 0;
}

/* out [batch, S, heads * dv] = attention of x under m; scores: T doubles. */
static void attend(const qkv *x, const mask *m, double scale, double *scores, float *out)
{
    size_t out_row = (size_t)(x->heads * x->dv);
    const graph_tensor *ab = m->bias;
    for (int64_t b = 0; b < x->batch; b++)
        for (int64_t h = 0; h < x->heads; h++)
            for (int64_t i = 0; i < x->s; i++) {
                const float *qr = x->q + (size_t)(b * x->s + i) * x->q_row + (size_t)(h * x->dq);
                double top = -INFINITY;
                for (int64_t j = 0; j < x->t; j++) {
                    const float *kr =
                        x->k + (size_t)(b * x->t + j) * x->k_row + (size_t)(h * x->dq);
                    double dot = 0.0;
                    for (int64_t d = 0; d < x->dq; d++)
                        dot += (double)qr[d] * kr[d];
                    dot *= scale;
                    if (ab != NULL) {
                        int64_t bb = ab->dims[0] == 1 ? 0 : b, hh = ab->dims[1] == 1 ? 0 : h;
                        dot += ((const float *)
                                    ab->data)[((bb * ab->dims[1] + hh) * x->s + i) * x->t + j];
                    }
                    if (masked(m, b, i, j, x))
                        dot += m->filter;
                    scores[j] = dot;
                    top = dot > top ? dot : top;
                }
                double sum = 0.0;
                for (int64_t j = 0; j < x->t; j++)
                    sum += scores[j] = exp(scores[j] - top);
                float *o = out + (size_t)(b * x->s + i) * out_row + (size_t)(h * x->dv);
                for (int64_t d = 0; d < x->dv; d++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < x->t; j++)
                        acc += scores[j] *
                               x->v[(size_t)(b * x->t + j) * x->v_row + (size_t)(h * x->dv + d)];
                    o[d] = (float)(sum > 0 ? acc / sum : 0.0);
                }
            }
}

static rn_status run_attend(const graph_node *node, const qkv *x, const mask *m, float *out)
{
    rn_status st = check_mask(node, m, x);
    if (st != RN_OK)
        return st;
    float scale_attr = graph_node_attr_float(node, "scale", 0.0f);
    double scale = scale_attr != 0.0f ? scale_attr : 1.0 / sqrt((double)(x->dq > 0 ? x->dq : 1));
    double *scores = malloc((size_t)(x->t > 0 ? x->t : 1) * sizeof *scores);
    if (scores == NULL)
        return ref_nn_oom(node);
    attend(x, m, scale, scores, out);
    free(scores);
    return RN_OK;
}

/* Refuses inputs and outputs of a key-value cache, which REF lacks. */
static bool no_cache(const graph_node *node, const int *inputs, int n_in, int first_cache_output,
                     const char **why)
{
    for (int k = 0; k < n_in; k++)
        if (inputs[k] < node->n_inputs && node->inputs[inputs[k]] != NULL) {
            *why = "past key-value inputs are not implemented";
            return false;
        }
    for (int i = first_cache_output; i < node->n_outputs; i++)
        if (node->outputs[i] != NULL) {
            *why = "present key-value outputs are not implemented";
            return false;
        }
    if (graph_node_attr_int(node, "do_rotary", 0) != 0) {
        *why = "do_rotary is not implemented";
        return false;
    }
    return true;
}

/* ---- Attention ---- */

static bool attention_supports(const graph_node *node, const char **why)
{
    static const int cache[] = {4, 6};
    return no_cache(node, cache, 2, 1, why) && ref_contrib_supports_f32(node, 2, 0x27u, why);
}

static rn_status attention_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *in = ref_contrib_input(args, 0), *w = ref_contrib_input(args, 1);
    const graph_tensor *bias = ref_contrib_input(args, 2);
    graph_tensor *y;
    rn_status st = ref_contrib_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    if (in == NULL || w == NULL || y == NULL || in->rank != 3 || w->rank != 2 ||
        w->dims[0] != in->dims[2])
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "input must be [batch, sequence, hidden] and weights "
                                 "[hidden, q + k + v]");
    int64_t heads = graph_node_attr_int(node, "num_heads", 0), total = w->dims[1];
    int64_t sizes[3] = {total / 3, total / 3, total / 3};
    const int64_t *qkv_sizes;
    if (graph_node_attr_ints(node, "qkv_hidden_sizes", &qkv_sizes) == 3)
        memcpy(sizes, qkv_sizes, sizeof sizes);
    if (heads <= 0 || sizes[0] + sizes[1] + sizes[2] != total || sizes[0] != sizes[1] ||
        sizes[0] % heads != 0 || sizes[2] % heads != 0 ||
        (bias != NULL && (int64_t)graph_tensor_count(bias) != total))
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "num_heads %lld and the q, k, v sizes %lld, %lld, %lld do not "
                                 "fit weights of %lld columns",
                                 (long long)heads, (long long)sizes[0], (long long)sizes[1],
                                 (long long)sizes[2], (long long)total);
    int64_t rows = in->dims[0] * in->dims[1];
    float *proj = malloc((size_t)(rows * total > 0 ? rows * total : 1) * sizeof *proj);
    if (proj == NULL)
        return ref_nn_oom(node);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < total; c++)
            proj[r * total + c] = bias != NULL ? ((const float *)bias->data)[c] : 0.0f;
    if (rows > 0 && total > 0 && in->dims[2] > 0)
        st = ref_sgemm(false, false, rows, total, in->dims[2], 1.0f, in->data, in->dims[2], w->data,
                       total, 1.0f, proj, total);
    qkv x = {.q = proj,
             .k = proj + sizes[0],
             .v = proj + sizes[0] + sizes[1],
             .q_row = (size_t)total,
             .k_row = (size_t)total,
             .v_row = (size_t)total,
             .batch = in->dims[0],
             .s = in->dims[1],
             .t = in->dims[1],
             .heads = heads,
             .dq = sizes[0] / heads,
             .dv = sizes[2] / heads};
    mask m = {.index = ref_contrib_input(args, 3),
              .bias = ref_contrib_input(args, 5),
              .causal = graph_node_attr_int(node, "unidirectional", 0) != 0,
              .filter = graph_node_attr_float(node, "mask_filter_value", -10000.0f)};
    if (st == RN_OK)
        st = run_attend(node, &x, &m, y->data);
    else
        st = ref_nn_oom(node);
    free(proj);
    return st;
}

const plugin_kernel ref_kernel_ms_attention = {
    .domain = "com.microsoft",
    .op_type = "Attention",
    .impl_type = "ref",
    .supports = attention_supports,
    .run = attention_run,
};

/* ---- MultiHeadAttention ---- */

static bool mha_supports(const graph_node *node, const char **why)
{
    static const int cache[] = {6, 7, 8, 9, 10};
    if (node->n_inputs < 3 || node->inputs[1] == NULL || node->inputs[2] == NULL) {
        *why = "packed QKV or KV inputs are not implemented";
        return false;
    }
    return no_cache(node, cache, 5, 1, why) && ref_contrib_supports_f32(node, 3, 0x2fu, why);
}

/* A copy of t ([batch, length, width]) plus bias[off, off + width). */
static float *with_bias(const graph_tensor *t, const graph_tensor *bias, int64_t off)
{
    size_t n = graph_tensor_count(t), w = (size_t)t->dims[2];
    float *c = malloc((n ? n : 1) * sizeof *c);
    if (c == NULL)
        return NULL;
    const float *d = t->data, *b = bias != NULL ? (const float *)bias->data + off : NULL;
    for (size_t i = 0; i < n; i++)
        c[i] = d[i] + (b != NULL ? b[i % w] : 0.0f);
    return c;
}

static rn_status mha_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *q = ref_contrib_input(args, 0), *k = ref_contrib_input(args, 1);
    const graph_tensor *v = ref_contrib_input(args, 2), *bias = ref_contrib_input(args, 3);
    graph_tensor *y;
    rn_status st = ref_contrib_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    int64_t heads = graph_node_attr_int(node, "num_heads", 0);
    if (q == NULL || k == NULL || v == NULL || y == NULL || q->rank != 3 || k->rank != 3 ||
        v->rank != 3 || k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] ||
        k->dims[1] != v->dims[1] || k->dims[2] != q->dims[2] || heads <= 0 ||
        q->dims[2] % heads != 0 || v->dims[2] % heads != 0)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "query [B, S, D], key [B, L, D] and value [B, L, Dv] with D and "
                                 "Dv multiples of num_heads (%lld) are implemented",
                                 (long long)heads);
    if (bias != NULL && (int64_t)graph_tensor_count(bias) != 2 * q->dims[2] + v->dims[2])
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "bias must hold D + D + Dv values");
    float *qb = with_bias(q, bias, 0), *kb = with_bias(k, bias, q->dims[2]);
    float *vb = with_bias(v, bias, 2 * q->dims[2]);
    if (qb == NULL || kb == NULL || vb == NULL)
        st = ref_nn_oom(node);
    qkv x = {.q = qb,
             .k = kb,
             .v = vb,
             .q_row = (size_t)q->dims[2],
             .k_row = (size_t)k->dims[2],
             .v_row = (size_t)v->dims[2],
             .batch = q->dims[0],
             .s = q->dims[1],
             .t = k->dims[1],
             .heads = heads,
             .dq = q->dims[2] / heads,
             .dv = v->dims[2] / heads};
    mask m = {.index = ref_contrib_input(args, 4),
              .bias = ref_contrib_input(args, 5),
              .causal = graph_node_attr_int(node, "unidirectional", 0) != 0,
              .filter = graph_node_attr_float(node, "mask_filter_value", -10000.0f)};
    if (st == RN_OK)
        st = run_attend(node, &x, &m, y->data);
    free(qb);
    free(kb);
    free(vb);
    return st;
}

const plugin_kernel ref_kernel_ms_multihead_attention = {
    .domain = "com.microsoft",
    .op_type = "MultiHeadAttention",
    .impl_type = "ref",
    .supports = mha_supports,
    .run = mha_run,
};
