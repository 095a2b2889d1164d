/* REF FusedMatMul and DynamicQuantizeMatMul (com.microsoft), f32.
 *
 * FusedMatMul: Y = alpha * op(A) @ op(B), op a transpose of the last two
 * dims when transA / transB say so, batch dims broadcast as in MatMul
 * (transBatchA / transBatchB are refused).
 *
 * DynamicQuantizeMatMul: A is quantized to uint8 per tensor as
 * DynamicQuantizeLinear does (the range widened to hold 0, scale =
 * range / 255, zero point rounded half to even), multiplied in integers
 * with B (int8 or uint8, [K, N]) less its zero point, and scaled back by
 * a_scale * b_scale (b_scale and b_zero_point per tensor or per column),
 * plus the optional bias [N]: what ONNX Runtime computes. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/contrib.h"
#include "plugins/ref/kernels/nn_util.h"

static bool fused_matmul_supports(const graph_node *node, const char **why)
{
    if (graph_node_attr_int(node, "transBatchA", 0) ||
        graph_node_attr_int(node, "transBatchB", 0)) {
        *why = "transBatchA / transBatchB are not implemented";
        return false;
    }
    return ref_contrib_supports_f32(node, 2, 0x3u, why);
}

/* The offset of the batch-th matrix of t (rank >= 2) in y's batch dims
 * (rank yr >= 2), broadcast. */
static size_t batch_offset(const graph_tensor *t, const graph_tensor *y, size_t batch)
{
    size_t off = 0, stride = (size_t)(t->dims[t->rank - 1] * t->dims[t->rank - 2]);
    for (int d = y->rank - 3, td = t->rank - 3; d >= 0; d--, td--) {
        size_t i = batch % (size_t)y->dims[d];
        batch /= (size_t)y->dims[d];
        if (td >= 0) {
            if (t->dims[td] != 1)
                off += i * stride;
            stride *= (size_t)t->dims[td];
        }
    }
    return off;
}

static rn_status fused_matmul_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *a = ref_contrib_input(args, 0), *b = ref_contrib_input(args, 1);
    graph_tensor *y;
    rn_status st = ref_contrib_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    if (a == NULL || b == NULL || y == NULL || a->rank < 2 || b->rank < 2 || y->rank < 2)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "A, B and Y need rank >= 2");
    bool ta = graph_node_attr_int(node, "transA", 0) != 0;
    bool tb = graph_node_attr_int(node, "transB", 0) != 0;
    float alpha = graph_node_attr_float(node, "alpha", 1.0f);
    int64_t m = y->dims[y->rank - 2], n = y->dims[y->rank - 1];
    int64_t k = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    size_t batches = graph_tensor_count(y) / (size_t)(m * n > 0 ? m * n : 1);
    for (size_t i = 0; i < batches && m * n > 0; i++) {
        const float *ad = (const float *)a->data + batch_offset(a, y, i);
        const float *bd = (const float *)b->data + batch_offset(b, y, i);
        float *yd = (float *)y->data + i * (size_t)(m * n);
        if (k == 0) {
            for (int64_t j = 0; j < m * n; j++)
                yd[j] = 0.0f;
            continue;
        }
        st = ref_sgemm(ta, tb, m, n, k, alpha, ad, a->dims[a->rank - 1], bd, b->dims[b->rank - 1],
                       0.0f, yd, n);
        if (st != RN_OK)
            return ref_nn_oom(node);
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_ms_fused_matmul = {
    .domain = "com.microsoft",
    .op_type = "FusedMatMul",
    .impl_type = "ref",
    .supports = fused_matmul_supports,
    .run = fused_matmul_run,
};

/* ---- DynamicQuantizeMatMul ---- */

static bool dq_matmul_supports(const graph_node *node, const char **why)
{
    const graph_value *b = node->inputs[1];
    if (b != NULL && b->type != RN_I8 && b->type != RN_U8) {
        *why = "B is not int8 or uint8";
        return false;
    }
    return ref_contrib_supports_f32(node, 3, 0x1u | 0x4u | 0x10u, why);
}

/* Element i of B or of its zero point (int8 or uint8). */
static int32_t int_at(const graph_tensor *t, size_t i)
{
    return t->type == RN_I8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

static rn_status dq_matmul_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *a = ref_contrib_input(args, 0), *b = ref_contrib_input(args, 1);
    const graph_tensor *bs = ref_contrib_input(args, 2), *bzp = ref_contrib_input(args, 3);
    const graph_tensor *bias = ref_contrib_input(args, 4);
    graph_tensor *y;
    rn_status st = ref_contrib_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    if (a == NULL || b == NULL || bs == NULL || y == NULL || a->rank < 2 || b->rank != 2)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "A needs rank >= 2 and B rank 2");
    int64_t k = b->dims[0], n = b->dims[1];
    size_t ns = graph_tensor_count(bs);
    if (a->dims[a->rank - 1] != k || (ns != 1 && ns != (size_t)n) ||
        (bzp != NULL && graph_tensor_count(bzp) != ns) ||
        (bias != NULL && graph_tensor_count(bias) != (size_t)n))
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "B is [%lld, %lld]: A's last dim, b_scale, b_zero_point and "
                                 "bias do not fit it",
                                 (long long)k, (long long)n);
    size_t count = graph_tensor_count(a), rows = k > 0 ? count / (size_t)k : 0;
    const float *ad = a->data;
    float lo = 0.0f, hi = 0.0f;
    for (size_t i = 0; i < count; i++) {
        lo = ad[i] < lo ? ad[i] : lo;
        hi = ad[i] > hi ? ad[i] : hi;
    }
    float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float zpf = nearbyintf(fminf(fmaxf(0.0f - lo / scale, 0.0f), 255.0f));
    int32_t zp = (int32_t)zpf;
    uint8_t *qa = malloc(count ? count : 1);
    if (qa == NULL)
        return ref_nn_oom(node);
    for (size_t i = 0; i < count; i++) {
        float q = nearbyintf(ad[i] / scale) + zpf;
        qa[i] = (uint8_t)fminf(fmaxf(q, 0.0f), 255.0f);
    }
    const float *sd = bs->data;
    float *yd = y->data;
    for (size_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            size_t q = ns == 1 ? 0 : (size_t)j;
            int32_t bz = bzp != NULL ? int_at(bzp, q) : 0;
            int64_t acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (int64_t)((int32_t)qa[r * (size_t)k + (size_t)p] - zp) *
                       (int64_t)(int_at(b, (size_t)(p * n + j)) - bz);
            float v = (float)acc * (scale * sd[q]);
            yd[r * (size_t)n + (size_t)j] = v + (bias != NULL ? ((const float *)bias->data)[j] : 0);
        }
    free(qa);
    return RN_OK;
}

const plugin_kernel ref_kernel_ms_dynamic_quantize_matmul = {
    .domain = "com.microsoft",
    .op_type = "DynamicQuantizeMatMul",
    .impl_type = "ref",
    .supports = dq_matmul_supports,
    .run = dq_matmul_run,
};
