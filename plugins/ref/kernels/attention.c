/* REF Attention (opsets 23 and 24), following the ONNX reference:
 *   K' = concat(past_key, K), V' = concat(past_value, V) along the sequence;
 *   S = scale * Q K'^T (scale defaults to 1 / sqrt(head size));
 *   S = softcap * tanh(S / softcap) when softcap > 0 (before the mask, so a
 *       -inf mask entry stays -inf);
 *   S += bias: attn_mask (added; a boolean mask adds -inf where false; a
 *       mask shorter than the total sequence is padded with -inf), the
 *       causal mask (key j is hidden from query i when j > i + past length)
 *       and, from opset 24, nonpad_kv_seqlen (keys at or past it hidden);
 *   Y = softmax(S) V', with q_num_heads / kv_num_heads query heads sharing
 *       each key / value head (grouped-query attention).
 * Inputs are 4-D (batch, heads, sequence, head size) or 3-D (batch,
 * sequence, heads * head size). present_key / present_value return K' / V'
 * (4-D); qk_matmul_output returns S after softcap (modes 0 and 1), after the
 * bias (mode 2) or after the softmax (mode 3). A row whose every key is
 * masked has no defined softmax and gives NaN, as in the reference.
 * Everything is computed in double (softmax_precision is thus met or
 * exceeded). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool attention_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    for (int i = 0; i < node->n_inputs && i < 6; i++) {
        const graph_value *v = node->inputs[i];
        if (v == NULL || i == 3)
            continue;
        if (!ref_nn_is_float(v->type)) {
            *why = "Q, K, V and the past key / value must be f32, f64, f16 or bf16";
            return false;
        }
    }
    if (node->n_inputs > 3 && node->inputs[3] != NULL) {
        rn_element_type t = node->inputs[3]->type;
        bool integer = t == RN_I8 || t == RN_I16 || t == RN_I32 || t == RN_I64 || t == RN_U8 ||
                       t == RN_U16 || t == RN_U32 || t == RN_U64;
        if (t != RN_BOOL && !integer && !ref_nn_is_float(t)) {
            *why = "attn_mask must be boolean or numeric";
            return false;
        }
    }
    int64_t mode = graph_node_attr_int(node, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) {
        *why = "qk_matmul_output_mode is not 0, 1, 2 or 3";
        return false;
    }
    return true;
}

/* Reads element i of a boolean or numeric tensor as a double. */
static double attention_mask_value(const graph_tensor *m, size_t i)
{
    switch (m->type) {
    case RN_BOOL:
        return ((const uint8_t *)m->data)[i] ? 0.0 : -INFINITY;
    case RN_I8:
        return ((const int8_t *)m->data)[i];
    case RN_I16:
        return ((const int16_t *)m->data)[i];
    case RN_I32:
        return ((const int32_t *)m->data)[i];
    case RN_I64:
        return (double)((const int64_t *)m->data)[i];
    case RN_U8:
        return ((const uint8_t *)m->data)[i];
    case RN_U16:
        return ((const uint16_t *)m->data)[i];
    case RN_U32:
        return ((const uint32_t *)m->data)[i];
    case RN_U64:
        return (double)((const uint64_t *)m->data)[i];
    default:
        return ref_nn_get(m->type, m->data, i);
    }
}

typedef struct attention_dims {
    int rank; /* of Q, K, V */
    int64_t batch, qh, kvh, sq, skv, past, total, dk, dv;
} attention_dims;

static rn_status attention_bad(const graph_node *node, const char *what)
{
    return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): %s", node->name, node->op_type, what);
}

static rn_status attention_read_dims(const plugin_kernel_args *args, attention_dims *d)
{
    const graph_node *node = args->node;
    const graph_tensor *q = &args->inputs[0], *k = &args->inputs[1], *v = &args->inputs[2];
    memset(d, 0, sizeof *d);
    d->rank = q->rank;
    if ((q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank)
        return attention_bad(node, "Q, K and V must all be 3-D or all 4-D");
    d->batch = q->dims[0];
    if (k->dims[0] != d->batch || v->dims[0] != d->batch)
        return attention_bad(node, "Q, K and V have different batch sizes");
    if (q->rank == 4) {
        d->qh = q->dims[1];
        d->kvh = k->dims[1];
        d->sq = q->dims[2];
        d->skv = k->dims[2];
        d->dk = q->dims[3];
        d->dv = v->dims[3];
        if (k->dims[3] != d->dk || v->dims[1] != d->kvh || v->dims[2] != d->skv)
            return attention_bad(node, "K must be (B, kv_heads, S_kv, head size of Q) and V "
                                       "(B, kv_heads, S_kv, v head size)");
    } else {
        d->qh = graph_node_attr_int(node, "q_num_heads", 0);
        d->kvh = graph_node_attr_int(node, "kv_num_heads", 0);
        if (d->qh < 1 || d->kvh < 1)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): 3-D inputs need q_num_heads and kv_num_heads",
                                node->name, node->op_type);
        d->sq = q->dims[1];
        d->skv = k->dims[1];
        if (q->dims[2] % d->qh != 0 || k->dims[2] % d->kvh != 0 || v->dims[2] % d->kvh != 0 ||
            v->dims[1] != d->skv)
            return attention_bad(node, "hidden sizes of Q, K, V do not split into the heads");
        d->dk = q->dims[2] / d->qh;
        d->dv = v->dims[2] / d->kvh;
        if (k->dims[2] / d->kvh != d->dk)
            return attention_bad(node, "head sizes of Q and K differ");
    }
    if (d->kvh < 1 || d->qh % d->kvh != 0)
        return attention_bad(node, "the query heads are not a multiple of the key / value heads");
    const graph_tensor *pk = args->n_inputs > 4 && args->inputs[4].data ? &args->inputs[4] : NULL;
    const graph_tensor *pv = args->n_inputs > 5 && args->inputs[5].data ? &args->inputs[5] : NULL;
    if ((pk == NULL) != (pv == NULL))
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): past_key and past_value come together",
                            node->name, node->op_type);
    if (pk != NULL) {
        if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != d->batch || pk->dims[1] != d->kvh ||
            pk->dims[3] != d->dk || pv->dims[0] != d->batch || pv->dims[1] != d->kvh ||
            pv->dims[2] != pk->dims[2] || pv->dims[3] != d->dv)
            return attention_bad(node, "past_key / past_value must be (B, kv_heads, P, head size)");
        d->past = pk->dims[2];
    }
    d->total = d->past + d->skv;
    return RN_OK;
}

/* Copies a 3-D (B, S, H * D) or 4-D (B, H, S, D) tensor into a 4-D double
 * array (B, H, offset + S, D) of `len` rows per head, at row `offset`. */
static void attention_gather(const graph_tensor *t, int64_t heads, int64_t seq, int64_t hd,
                             int64_t len, int64_t offset, double *dst)
{
    int64_t batch = t->dims[0];
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t s = 0; s < seq; s++) {
                size_t src = t->rank == 4 ? (size_t)(((b * heads + h) * seq + s) * hd)
                                          : (size_t)((b * seq + s) * heads * hd + h * hd);
                double *row = dst + ((b * heads + h) * len + offset + s) * hd;
                for (int64_t e = 0; e < hd; e++)
                    row[e] = ref_nn_get(t->type, t->data, src + (size_t)e);
            }
}

/* Mask strides for broadcasting attn_mask (aligned right) to
 * (B, q_heads, S_q, mask length); 0 along broadcast dims. */
static rn_status attention_mask_strides(const graph_node *node, const graph_tensor *m,
                                        const attention_dims *d, int64_t strides[4])
{
    int64_t want[4] = {d->batch, d->qh, d->sq, m->rank > 0 ? m->dims[m->rank - 1] : 1};
    if (m->rank < 1 || m->rank > 4)
        return attention_bad(node, "attn_mask must have rank 1 to 4");
    if (want[3] > d->total)
        return attention_bad(node, "attn_mask is longer than the total key sequence");
    int64_t s = 1;
    for (int i = 3; i >= 0; i--) {
        int md = i - (4 - m->rank);
        int64_t dim = md >= 0 ? m->dims[md] : 1;
        if (dim != 1 && dim != want[i])
            return attention_bad(node, "attn_mask does not broadcast to (B, heads, S_q, S_total)");
        strides[i] = dim == 1 ? 0 : s;
        s *= dim;
    }
    return RN_OK;
}

static rn_status attention_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    attention_dims d;
    rn_status st = attention_read_dims(args, &d);
    if (st != RN_OK)
        return st;
    const graph_tensor *q = &args->inputs[0], *k = &args->inputs[1], *v = &args->inputs[2];
    const graph_tensor *mask = args->n_inputs > 3 && args->inputs[3].data ? &args->inputs[3] : NULL;
    const graph_tensor *nonpad =
        node->opset >= 24 && args->n_inputs > 6 && args->inputs[6].data ? &args->inputs[6] : NULL;
    int64_t mask_strides[4] = {0}, mask_len = 0;
    if (mask != NULL) {
        if ((st = attention_mask_strides(node, mask, &d, mask_strides)) != RN_OK)
            return st;
        mask_len = mask->dims[mask->rank - 1];
    }
    if (nonpad != NULL && (nonpad->type != RN_I64 || graph_tensor_count(nonpad) != (size_t)d.batch))
        return attention_bad(node, "nonpad_kv_seqlen must be i64 of shape (B)");
    graph_tensor *y = &args->outputs[0];
    graph_tensor *present_k =
        args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    graph_tensor *present_v =
        args->n_outputs > 2 && args->outputs[2].data ? &args->outputs[2] : NULL;
    graph_tensor *qk_out = args->n_outputs > 3 && args->outputs[3].data ? &args->outputs[3] : NULL;
    size_t n_q = (size_t)(d.batch * d.qh * d.sq * d.dk);
    size_t n_k = (size_t)(d.batch * d.kvh * d.total * d.dk);
    size_t n_v = (size_t)(d.batch * d.kvh * d.total * d.dv);
    if (graph_tensor_count(y) != (size_t)(d.batch * d.qh * d.sq * d.dv) ||
        (present_k && graph_tensor_count(present_k) != n_k) ||
        (present_v && graph_tensor_count(present_v) != n_v) ||
        (qk_out && graph_tensor_count(qk_out) != (size_t)(d.batch * d.qh * d.sq * d.total)))
        return attention_bad(node, "an output does not have the expected size");
    double *qd = ref_tmp_alloc((n_q + n_k + n_v + 1) * sizeof(double));
    double *row = ref_tmp_alloc((size_t)(d.total > 0 ? d.total : 1) * sizeof(double));
    double *acc = ref_tmp_alloc((size_t)(d.dv > 0 ? d.dv : 1) * sizeof(double));
    if (!qd || !row || !acc) {
        ref_tmp_free(qd);
        ref_tmp_free(row);
        ref_tmp_free(acc);
        return ref_nn_oom(node);
    }
    double *kd = qd + n_q, *vd = kd + n_k;
    attention_gather(q, d.qh, d.sq, d.dk, d.sq, 0, qd);
    if (d.past > 0) {
        attention_gather(&args->inputs[4], d.kvh, d.past, d.dk, d.total, 0, kd);
        attention_gather(&args->inputs[5], d.kvh, d.past, d.dv, d.total, 0, vd);
    }
    attention_gather(k, d.kvh, d.skv, d.dk, d.total, d.past, kd);
    attention_gather(v, d.kvh, d.skv, d.dv, d.total, d.past, vd);

    double scale = 1.0 / sqrt((double)d.dk);
    const graph_attr *scale_attr = graph_node_attr(node, "scale");
    if (scale_attr != NULL && scale_attr->type == GRAPH_ATTR_FLOAT)
        scale = scale_attr->f;
    double softcap = graph_node_attr_float(node, "softcap", 0.0f);
    bool causal = graph_node_attr_int(node, "is_causal", 0) != 0;
    int64_t mode = graph_node_attr_int(node, "qk_matmul_output_mode", 0);
    int64_t reps = d.qh / d.kvh;
    for (int64_t b = 0; b < d.batch; b++) {
        int64_t valid = d.total;
        if (nonpad != NULL)
            valid = ((const int64_t *)nonpad->data)[b];
        for (int64_t h = 0; h < d.qh; h++) {
            const double *kh = kd + (b * d.kvh + h / reps) * d.total * d.dk;
            const double *vh = vd + (b * d.kvh + h / reps) * d.total * d.dv;
            for (int64_t i = 0; i < d.sq; i++) {
                const double *qi = qd + ((b * d.qh + h) * d.sq + i) * d.dk;
                size_t qk_base = (size_t)(((b * d.qh + h) * d.sq + i) * d.total);
                double mx = -INFINITY;
                for (int64_t j = 0; j < d.total; j++) {
                    double s = 0.0;
                    for (int64_t e = 0; e < d.dk; e++)
                        s += qi[e] * kh[j * d.dk + e];
                    s *= scale;
                    if (softcap > 0.0)
                        s = softcap * tanh(s / softcap);
                    if (qk_out != NULL && mode < 2)
                        ref_nn_set(qk_out->type, qk_out->data, qk_base + (size_t)j, s);
                    if (mask != NULL) {
                        if (j < mask_len)
                            s += attention_mask_value(
                                mask, (size_t)(b * mask_strides[0] + h * mask_strides[1] +
                                               i * mask_strides[2] + j * mask_strides[3]));
                        else
                            s = -INFINITY;
                    }
                    if ((causal && j > i + d.past) || j >= valid)
                        s = -INFINITY;
                    if (qk_out != NULL && mode == 2)
                        ref_nn_set(qk_out->type, qk_out->data, qk_base + (size_t)j, s);
                    row[j] = s;
                    if (s > mx)
                        mx = s;
                }
                double sum = 0.0;
                for (int64_t j = 0; j < d.total; j++) {
                    row[j] = exp(row[j] - mx); /* all -inf: NaN, as in the reference */
                    sum += row[j];
                }
                for (int64_t e = 0; e < d.dv; e++)
                    acc[e] = 0.0;
                for (int64_t j = 0; j < d.total; j++) {
                    double p = row[j] / sum;
                    if (qk_out != NULL && mode == 3)
                        ref_nn_set(qk_out->type, qk_out->data, qk_base + (size_t)j, p);
                    for (int64_t e = 0; e < d.dv; e++)
                        acc[e] += p * vh[j * d.dv + e];
                }
                for (int64_t e = 0; e < d.dv; e++) {
                    size_t at = d.rank == 4 ? (size_t)(((b * d.qh + h) * d.sq + i) * d.dv + e)
                                            : (size_t)((b * d.sq + i) * d.qh * d.dv + h * d.dv + e);
                    ref_nn_set(y->type, y->data, at, acc[e]);
                }
            }
        }
    }
    if (present_k != NULL)
        ref_nn_from_f64(present_k->type, present_k->data, kd, n_k);
    if (present_v != NULL)
        ref_nn_from_f64(present_v->type, present_v->data, vd, n_v);
    ref_tmp_free(qd);
    ref_tmp_free(row);
    ref_tmp_free(acc);
    return RN_OK;
}

const plugin_kernel ref_kernel_attention = {
    .domain = "",
    .op_type = "Attention",
    .impl_type = "ref",
    .supports = attention_supports,
    .run = attention_run,
};
