/* runnel ScaledDotProductAttention (made by transforms/fuse_attention.c):
 * y = Softmax(scale * Q @ Kt + mask) @ V over the last axis, per batch
 * index. Q [..., Sq, D], Kt [..., D, Sk], V [..., Sk, Dv] of one rank and the
 * same batch dims; the optional mask (input 3) broadcasts to the scores
 * [..., Sq, Sk] (right-aligned, dims 1 or equal). f32, in the same steps as
 * the unfused graph (sgemm, the mask added, softmax with the maximum
 * subtracted, sgemm), the scores in a buffer of one batch index. */
#include <math.h>
#include <stdlib.h>

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
    return true;
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

static rn_status sdpa_run(plugin_kernel_args *args)
{
    const graph_tensor *q = &args->inputs[0], *kt = &args->inputs[1], *v = &args->inputs[2];
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
        if (ref_sgemm(false, false, sq, dv, sk, 1.0f, s, sk, vd + b * sk * dv, dv, 0.0f,
                      y + b * sq * dv, dv) != RN_OK)
            st = rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory", args->node->name);
    }
    free(s);
    return st;
}

const plugin_kernel ref_kernel_scaled_dot_product_attention = {
    .domain = "runnel",
    .op_type = "ScaledDotProductAttention",
    .impl_type = "ref",
    .supports = sdpa_supports,
    .run = sdpa_run,
};
