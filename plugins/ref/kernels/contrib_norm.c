/* REF SkipLayerNormalization and EmbedLayerNormalization (com.microsoft),
 * f32 data, statistics in double.
 *
 * SkipLayerNormalization: s = input + skip (+ bias); output = LayerNorm(s)
 * over the last dim, times gamma (+ beta). skip may have fewer leading dims
 * (it repeats over them). Optional outputs: mean and inv_std_var per row,
 * and s itself (input_skip_bias_sum). epsilon 1e-12 by default.
 *
 * EmbedLayerNormalization: e[b, s] = word_embedding[input_ids[b, s]] +
 * position_embedding[position_ids or s] (+ segment_embedding[segment_ids]),
 * then LayerNorm with gamma and beta. mask_index[b] counts the ones in row
 * b of mask (0 without a mask), as ONNX Runtime's CPU kernel does; the
 * optional embedding_sum output is e. Indices out of range are errors. */
#include <math.h>

#include "plugins/ref/kernels/contrib.h"

/* Normalizes one row of h values into y (gamma, beta may be NULL). */
static void norm_row(const float *x, int64_t h, const float *gamma, const float *beta, double eps,
                     float *y, float *mean_out, float *inv_out)
{
    double s = 0.0, s2 = 0.0;
    for (int64_t j = 0; j < h; j++)
        s += x[j];
    double mu = h > 0 ? s / (double)h : 0.0;
    for (int64_t j = 0; j < h; j++)
        s2 += ((double)x[j] - mu) * ((double)x[j] - mu);
    double inv = 1.0 / sqrt((h > 0 ? s2 / (double)h : 0.0) + eps);
    for (int64_t j = 0; j < h; j++)
        y[j] = (float)(((double)x[j] - mu) * inv * (gamma ? gamma[j] : 1.0f) +
                       (beta ? beta[j] : 0.0f));
    if (mean_out)
        *mean_out = (float)mu;
    if (inv_out)
        *inv_out = (float)inv;
}

/* A 1-D parameter of h values, or NULL when omitted. */
static rn_status param(const plugin_kernel_args *args, int i, int64_t h, const float **out)
{
    const graph_tensor *t = ref_contrib_input(args, i);
    *out = NULL;
    if (t == NULL)
        return RN_OK;
    if ((int64_t)graph_tensor_count(t) != h)
        return ref_contrib_error(args->node, RN_SHAPE_MISMATCH,
                                 "input %d must hold %lld values (the hidden size)", i,
                                 (long long)h);
    *out = t->data;
    return RN_OK;
}

static bool skip_layernorm_supports(const graph_node *node, const char **why)
{
    return ref_contrib_supports_f32(node, 3, 0x1fu, why);
}

static rn_status skip_layernorm_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = ref_contrib_input(args, 0), *skip = ref_contrib_input(args, 1);
    graph_tensor *y, *mean, *inv, *sum;
    rn_status st;
    if ((st = ref_contrib_output(args, 0, &y)) != RN_OK ||
        (st = ref_contrib_output(args, 1, &mean)) != RN_OK ||
        (st = ref_contrib_output(args, 2, &inv)) != RN_OK ||
        (st = ref_contrib_output(args, 3, &sum)) != RN_OK)
        return st;
    if (x == NULL || skip == NULL || y == NULL || x->rank < 1)
        return ref_contrib_error(node, RN_INVALID_ARG, "input, skip and output are required");
    int64_t h = x->dims[x->rank - 1];
    size_t n = graph_tensor_count(x), ns = graph_tensor_count(skip);
    size_t rows = h > 0 ? n / (size_t)h : 0;
    if (ns == 0 || n % ns != 0 || skip->dims[skip->rank - 1] != h)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "skip does not fit the input's shape");
    const float *gamma, *beta, *bias;
    if ((st = param(args, 2, h, &gamma)) != RN_OK || (st = param(args, 3, h, &beta)) != RN_OK ||
        (st = param(args, 4, h, &bias)) != RN_OK)
        return st;
    double eps = graph_node_attr_float(node, "epsilon", 1e-12f);
    const float *xd = x->data, *sd = skip->data;
    float *yd = y->data;
    /* s is built in the sum output when asked for, else in y, then normalized in place */
    float *s = sum != NULL ? sum->data : yd;
    for (size_t i = 0; i < n; i++)
        s[i] = xd[i] + sd[i % ns] + (bias != NULL ? bias[i % (size_t)h] : 0.0f);
    for (size_t r = 0; r < rows; r++)
        norm_row(s + r * (size_t)h, h, gamma, beta, eps, yd + r * (size_t)h,
                 mean != NULL ? (float *)mean->data + r : NULL,
                 inv != NULL ? (float *)inv->data + r : NULL);
    return RN_OK;
}

const plugin_kernel ref_kernel_ms_skip_layernorm = {
    .domain = "com.microsoft",
    .op_type = "SkipLayerNormalization",
    .impl_type = "ref",
    .supports = skip_layernorm_supports,
    .run = skip_layernorm_run,
};

/* ---- EmbedLayerNormalization ---- */

static bool embed_layernorm_supports(const graph_node *node, const char **why)
{
    static const int int_inputs[] = {0, 1, 7, 8};
    for (int k = 0; k < 4; k++) {
        int i = int_inputs[k];
        if (i < node->n_inputs && node->inputs[i] != NULL && node->inputs[i]->type != RN_I32) {
            *why = "input_ids, segment_ids, mask and position_ids must be int32";
            return false;
        }
    }
    static const int required[] = {0, 2, 3, 5, 6};
    for (int k = 0; k < 5; k++)
        if (required[k] >= node->n_inputs || node->inputs[required[k]] == NULL) {
            *why = "input_ids, word_embedding, position_embedding, gamma and beta are required";
            return false;
        }
    return ref_contrib_supports_f32(node, 1, 0x7cu, why);
}

/* Row `id` of an embedding table [rows, h], or an error naming the input. */
static rn_status embedding_row(const plugin_kernel_args *args, int i, int64_t id, int64_t h,
                               const float **row)
{
    const graph_tensor *t = ref_contrib_input(args, i);
    if (t == NULL || t->rank != 2 || t->dims[1] != h)
        return ref_contrib_error(args->node, RN_SHAPE_MISMATCH,
                                 "input %d must be an embedding table [rows, %lld]", i,
                                 (long long)h);
    if (id < 0 || id >= t->dims[0])
        return ref_contrib_error(args->node, RN_INVALID_ARG,
                                 "index %lld is out of range for input %d (%lld rows)",
                                 (long long)id, i, (long long)t->dims[0]);
    *row = (const float *)t->data + id * h;
    return RN_OK;
}

static rn_status embed_layernorm_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *ids = ref_contrib_input(args, 0), *seg = ref_contrib_input(args, 1);
    const graph_tensor *word = ref_contrib_input(args, 2), *mask = ref_contrib_input(args, 7);
    const graph_tensor *pos_ids = ref_contrib_input(args, 8);
    graph_tensor *y, *mask_index, *emb_sum;
    rn_status st;
    if ((st = ref_contrib_output(args, 0, &y)) != RN_OK ||
        (st = ref_contrib_output(args, 1, &mask_index)) != RN_OK ||
        (st = ref_contrib_output(args, 2, &emb_sum)) != RN_OK)
        return st;
    if (ids == NULL || ids->rank != 2 || word == NULL || word->rank != 2 || y == NULL)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "input_ids must be [batch, sequence] and word_embedding 2-D");
    int64_t batch = ids->dims[0], seq = ids->dims[1], h = word->dims[1];
    size_t n = (size_t)(batch * seq);
    if ((seg != NULL && graph_tensor_count(seg) != n) ||
        (mask != NULL && graph_tensor_count(mask) != n) ||
        (pos_ids != NULL && graph_tensor_count(pos_ids) != n &&
         graph_tensor_count(pos_ids) != (size_t)seq))
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "segment_ids, mask and position_ids must be [batch, sequence]");
    const float *gamma, *beta;
    if ((st = param(args, 5, h, &gamma)) != RN_OK || (st = param(args, 6, h, &beta)) != RN_OK)
        return st;
    double eps = graph_node_attr_float(node, "epsilon", 1e-12f);
    const int32_t *id = ids->data;
    float *yd = y->data;
    for (size_t t = 0; t < n; t++) {
        float *e = emb_sum != NULL ? (float *)emb_sum->data + t * (size_t)h : yd + t * (size_t)h;
        int64_t p = (int64_t)(t % (size_t)seq);
        if (pos_ids != NULL)
            p = ((const int32_t *)pos_ids->data)[graph_tensor_count(pos_ids) == n ? t : (size_t)p];
        const float *w, *pe, *se = NULL;
        if ((st = embedding_row(args, 2, id[t], h, &w)) != RN_OK ||
            (st = embedding_row(args, 3, p, h, &pe)) != RN_OK)
            return st;
        if (seg != NULL &&
            (st = embedding_row(args, 4, ((const int32_t *)seg->data)[t], h, &se)) != RN_OK)
            return st;
        for (int64_t j = 0; j < h; j++)
            e[j] = w[j] + pe[j] + (se != NULL ? se[j] : 0.0f);
        norm_row(e, h, gamma, beta, eps, yd + t * (size_t)h, NULL, NULL);
    }
    if (mask_index != NULL)
        for (int64_t b = 0; b < batch; b++) {
            int32_t ones = 0;
            for (int64_t s = 0; mask != NULL && s < seq; s++)
                ones += ((const int32_t *)mask->data)[b * seq + s] == 1;
            ((int32_t *)mask_index->data)[b] = ones;
        }
    return RN_OK;
}

const plugin_kernel ref_kernel_ms_embed_layernorm = {
    .domain = "com.microsoft",
    .op_type = "EmbedLayerNormalization",
    .impl_type = "ref",
    .supports = embed_layernorm_supports,
    .run = embed_layernorm_run,
};
