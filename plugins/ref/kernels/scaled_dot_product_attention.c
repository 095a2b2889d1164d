/* runnel ScaledDotProductAttention (made by transforms/fuse_attention.c):
 * y = Softmax(scale * Q @ Kt + mask) @ V over the last axis, per batch
 * index. Q [..., Sq, D], Kt [..., D, Sk], V [..., Sk, Dv] of one rank and the
 * same batch dims; the optional mask (input 3) broadcasts to the scores
 * [..., Sq, Sk] (right-aligned, dims 1 or equal). f32, in the same steps as
 * the unfused graph (sgemm, the mask added, softmax with the maximum
 * subtracted, sgemm), the scores in a buffer of one batch index. With
 * qkv_layout "BSHD" the inputs are [B, S, H, D] before the head Transposes
 * (Q and V permuted [0, 2, 1, 3], K [0, 2, 3, 1]): permuted copies first.
 * With out_layout "BSHD" (rank 4) the output is [B, S, H, Dv], the head
 * merge Transpose absorbed: each head's rows are written with a stride. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

static bool sdpa_supports(const graph_node *node, const char **why)
{
    int r = node->inputs[0] != NULL ? node->inputs[0]->shape.rank : -1;
    for (int k = 0; k < node->n_inputs; k++) {
        const graph_value *v = node->inputs[k];
        if (v != NULL && (v->type != RN_F32 || v->shape.rank < 0 || (k < 3 && v->shape.rank != r) ||
                          (k == 3 && v->shape.rank > r))) {
            *why = "f32 Q, Kt, V of one rank (2 or more) and a mask of no higher rank";
            return false;
        }
    }
    if (r < 2) {
        *why = "Q, Kt and V of rank 2 or more";
        return false;
    }
    if (strcmp(graph_node_attr_string(node, "qkv_layout", "BHSD"), "BHSD") != 0 &&
        (strcmp(graph_node_attr_string(node, "qkv_layout", "BHSD"), "BSHD") != 0 || r != 4)) {
        *why = "qkv_layout BHSD, or BSHD of rank-4 inputs";
        return false;
    }
    const char *out = graph_node_attr_string(node, "out_layout", "BHSD");
    if (strcmp(out, "BHSD") != 0 && (strcmp(out, "BSHD") != 0 || r != 4)) {
        *why = "out_layout BHSD, or BSHD of a rank-4 output";
        return false;
    }
    return true;
}

/* A dense copy of rank-4 x permuted by perm (dst dim d is x's dim perm[d]):
 * the head split an exporter's Transpose does. */
static rn_status permuted(const plugin_kernel_args *args, const graph_tensor *x, const int *perm,
                          graph_tensor *out)
{
    *out = *x;
    int64_t xs[4] = {x->dims[1] * x->dims[2] * x->dims[3], x->dims[2] * x->dims[3], x->dims[3], 1};
    for (int d = 0; d < 4; d++)
        out->dims[d] = x->dims[perm[d]];
    float *dst =
        malloc(sizeof(float) * (size_t)(graph_tensor_count(x) > 0 ? graph_tensor_count(x) : 1));
    if (dst == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory", args->node->name);
    const float *src = x->data;
    size_t i = 0;
    for (int64_t a = 0; a < out->dims[0]; a++)
        for (int64_t b = 0; b < out->dims[1]; b++)
            for (int64_t c = 0; c < out->dims[2]; c++)
                for (int64_t e = 0; e < out->dims[3]; e++)
                    dst[i++] =
                        src[a * xs[perm[0]] + b * xs[perm[1]] + c * xs[perm[2]] + e * xs[perm[3]]];
    out->data = dst;
    return RN_OK;
}

/* The offsets of the mask's elements for the scores' dims: 0 strides where
 * the mask broadcasts. */
static rn_status mask_strides(const plugin_kernel_args *args, const graph_tensor *m, int r,
                              const int64_t *sdims, int64_t *strides)
{
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        int md = d - (r - m->rank);
        int64_t n = md >= 0 ? m->dims[md] : 1;
        if (n != 1 && n != sdims[d])
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s': the mask's dim %d (%lld) does not broadcast to %lld",
                                args->node->name, md, (long long)n, (long long)sdims[d]);
        strides[d] = n == 1 ? 0 : step;
        step *= n;
    }
    return RN_OK;
}

static rn_status sdpa_compute(plugin_kernel_args *args, const graph_tensor *q,
                              const graph_tensor *kt, const graph_tensor *v)
{
    const graph_tensor *mask =
        args->n_inputs > 3 && args->inputs[3].data != NULL ? &args->inputs[3] : NULL;
    int r = q->rank;
    int64_t sq = q->dims[r - 2], d = q->dims[r - 1], sk = kt->dims[r - 1], dv = v->dims[r - 1];
    int64_t batch = 1;
    for (int i = 0; i < r - 2; i++) {
        if (kt->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
            return rn_set_error(RN_SHAPE_MISMATCH, "node '%s': Q, Kt and V differ in batch dim %d",
                                args->node->name, i);
        batch *= q->dims[i];
    }
    if (kt->dims[r - 2] != d || v->dims[r - 2] != sk)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s': Q [.., %lld, %lld], Kt [.., %lld, %lld] and V [.., %lld, "
                            "%lld] do not chain",
                            args->node->name, (long long)sq, (long long)d,
                            (long long)kt->dims[r - 2], (long long)sk, (long long)v->dims[r - 2],
                            (long long)dv);
    int64_t sdims[RN_MAX_RANK], ms[RN_MAX_RANK] = {0};
    for (int i = 0; i < r; i++)
        sdims[i] = i < r - 2 ? q->dims[i] : (i == r - 2 ? sq : sk);
    rn_status st = mask != NULL ? mask_strides(args, mask, r, sdims, ms) : RN_OK;
    if (st != RN_OK)
        return st;
    float scale = graph_node_attr_float(args->node, "scale", 1.0f);
    float *s = malloc(sizeof(float) * (size_t)(sq * sk > 0 ? sq * sk : 1));
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory", args->node->name);
    const float *qd = q->data, *kd = kt->data, *vd = v->data;
    float *y = args->outputs[0].data;
    /* out_layout BSHD: batch index b is (b / H, b % H) of [B, S, H, Dv]. */
    bool merged = strcmp(graph_node_attr_string(args->node, "out_layout", "BHSD"), "BSHD") == 0;
    int64_t heads = merged ? q->dims[1] : 1, ldy = merged ? heads * dv : dv;
    for (int64_t b = 0; b < batch && st == RN_OK; b++) {
        st = ref_sgemm(false, false, sq, sk, d, scale, qd + b * sq * d, d, kd + b * d * sk, sk,
                       0.0f, s, sk);
        if (st != RN_OK) {
            st = rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory", args->node->name);
            break;
        }
        /* The mask's offset of this batch index, then of each row. */
        int64_t mb = 0, rest = b;
        for (int i = r - 3; i >= 0; i--) {
            mb += rest % sdims[i] * ms[i];
            rest /= sdims[i];
        }
        for (int64_t i = 0; i < sq; i++) {
            float *row = s + i * sk;
            if (mask != NULL) {
                const float *m = (const float *)mask->data + mb + i * ms[r - 2];
                for (int64_t j = 0; j < sk; j++)
                    row[j] += m[j * ms[r - 1]];
            }
            float max = -INFINITY;
            for (int64_t j = 0; j < sk; j++)
                max = row[j] > max ? row[j] : max;
            float sum = 0.0f;
            for (int64_t j = 0; j < sk; j++) {
                row[j] = expf(row[j] - max);
                sum += row[j];
            }
            for (int64_t j = 0; j < sk; j++)
                row[j] /= sum;
        }
        float *yb = merged ? y + (b / heads) * sq * ldy + (b % heads) * dv : y + b * sq * dv;
        if (ref_sgemm(false, false, sq, dv, sk, 1.0f, s, sk, vd + b * sk * dv, dv, 0.0f, yb, ldy) !=
            RN_OK)
            st = rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory", args->node->name);
    }
    free(s);
    return st;
}

static rn_status sdpa_run(plugin_kernel_args *args)
{
    if (strcmp(graph_node_attr_string(args->node, "qkv_layout", "BHSD"), "BSHD") != 0)
        return sdpa_compute(args, &args->inputs[0], &args->inputs[1], &args->inputs[2]);
    static const int split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
    graph_tensor t[3] = {0};
    rn_status st = RN_OK;
    int k = 0;
    for (; k < 3 && st == RN_OK; k++)
        st = permuted(args, &args->inputs[k], k == 1 ? split_t : split, &t[k]);
    if (st == RN_OK)
        st = sdpa_compute(args, &t[0], &t[1], &t[2]);
    for (int i = 0; i < 3; i++)
        if (t[i].data != args->inputs[i].data)
            free(t[i].data);
    return st;
}

const plugin_kernel ref_kernel_scaled_dot_product_attention = {
    .domain = "runnel",
    .op_type = "ScaledDotProductAttention",
    .impl_type = "ref",
    .supports = sdpa_supports,
    .run = sdpa_run,
};
