/* REF Gemm: Y = alpha * op(A) * op(B) + beta * C, with C (optional)
 * broadcast one-way to (M, N).
 *
 * f32 runs the blocked sgemm (f16 / bf16 widened to f32 around it), f64 and
 * the integer types plain loops. Y is first filled with beta * C, then the
 * product is accumulated into it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool gemm_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    for (int i = 0; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL && node->inputs[i]->type != t) {
            *why = "inputs of different element types";
            return false;
        }
    }
    if (!ref_nn_is_float(t) && !ref_nn_is_gemm_int(t)) {
        *why = "input type is not f32, f64, f16, bf16, i32, i64, u32 or u64";
        return false;
    }
    if (ref_nn_is_gemm_int(t)) {
        float alpha = graph_node_attr_float_or_default(node, "alpha");
        float beta = graph_node_attr_float_or_default(node, "beta");
        if (alpha != floorf(alpha) || beta != floorf(beta)) {
            *why = "alpha or beta is not an integer for an integer Gemm";
            return false;
        }
    }
    return true;
}

/* Where C's element for Y(i, j) is: C broadcast one-way to (m, n). */
typedef struct gemm_bias {
    int64_t row_step, col_step;
} gemm_bias;

static rn_status gemm_bias_init(const graph_node *node, const graph_tensor *c, int64_t m, int64_t n,
                                gemm_bias *bias)
{
    int64_t rows = c->rank == 2 ? c->dims[0] : 1;
    int64_t cols = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    if (c->rank > 2 || (rows != 1 && rows != m) || (cols != 1 && cols != n))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input C (rank %d) does not broadcast to (%lld, %lld)",
                            node->name, node->op_type, c->rank, (long long)m, (long long)n);
    bias->col_step = cols == 1 ? 0 : 1;
    bias->row_step = rows == 1 ? 0 : cols;
    return RN_OK;
}

static rn_status gemm_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 2);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    const graph_tensor *c = args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    graph_tensor *y = &args->outputs[0];
    bool ta = graph_node_attr_int_or_default(node, "transA") != 0;
    bool tb = graph_node_attr_int_or_default(node, "transB") != 0;
    float alpha = graph_node_attr_float_or_default(node, "alpha");
    float beta = graph_node_attr_float_or_default(node, "beta");
    if (a->rank != 2 || b->rank != 2 || y->rank != 2)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): A, B and Y must be 2-D", node->name,
                            node->op_type);
    int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1];
    int64_t n = b->dims[tb ? 0 : 1];
    if (b->dims[tb ? 1 : 0] != k || y->dims[0] != m || y->dims[1] != n)
        return rn_set_error(
            RN_SHAPE_MISMATCH,
            "node '%s' (%s): op(A) is %lld x %lld, op(B) %lld x %lld, Y %lld x %lld", node->name,
            node->op_type, (long long)m, (long long)k, (long long)b->dims[tb ? 1 : 0], (long long)n,
            (long long)y->dims[0], (long long)y->dims[1]);
    gemm_bias bias = {0, 0};
    bool use_c = c != NULL && beta != 0.0f;
    if (use_c) {
        rn_status st = gemm_bias_init(node, c, m, n, &bias);
        if (st != RN_OK)
            return st;
    }
    int64_t lda = a->dims[1], ldb = b->dims[1];

    if (ref_nn_is_gemm_int(a->type)) {
        size_t es = rn_element_type_size(a->type);
        if (use_c) {
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++)
                    memcpy((char *)y->data + (size_t)(i * n + j) * es,
                           (const char *)c->data +
                               (size_t)(i * bias.row_step + j * bias.col_step) * es,
                           es);
        }
        ref_igemm(a->type, ta, tb, m, n, k, (int64_t)alpha, a->data, lda, b->data, ldb,
                  use_c ? (int64_t)beta : 0, y->data, n);
        return RN_OK;
    }
    if (a->type == RN_F64) {
        double *yd = y->data;
        const double *cd = use_c ? c->data : NULL;
        for (int64_t i = 0; use_c && i < m; i++)
            for (int64_t j = 0; j < n; j++)
                yd[i * n + j] = (double)beta * cd[i * bias.row_step + j * bias.col_step];
        ref_dgemm(ta, tb, m, n, k, alpha, a->data, lda, b->data, ldb, use_c ? 1.0 : 0.0, yd, n);
        return RN_OK;
    }

    const float *av, *bv, *cv = NULL;
    float *ao = NULL, *bo = NULL, *co = NULL, *yo = NULL;
    rn_status st = ref_nn_f32_view(a, &av, &ao);
    if (st == RN_OK)
        st = ref_nn_f32_view(b, &bv, &bo);
    if (st == RN_OK && use_c)
        st = ref_nn_f32_view(c, &cv, &co);
    float *yv = y->data;
    if (st == RN_OK && y->type != RN_F32) {
        yo = ref_tmp_alloc((size_t)(m * n > 0 ? m * n : 1) * sizeof(float));
        yv = yo;
        if (!yo)
            st = RN_OUT_OF_MEMORY;
    }
    if (st == RN_OK) {
        for (int64_t i = 0; use_c && i < m; i++)
            for (int64_t j = 0; j < n; j++)
                yv[i * n + j] = beta * cv[i * bias.row_step + j * bias.col_step];
        st = ref_sgemm(ta, tb, m, n, k, alpha, av, lda, bv, ldb, use_c ? 1.0f : 0.0f, yv, n);
    }
    if (st == RN_OK && y->type != RN_F32)
        ref_nn_from_f32(y->type, y->data, yv, (size_t)(m * n));
    ref_tmp_free(ao);
    ref_tmp_free(bo);
    ref_tmp_free(co);
    ref_tmp_free(yo);
    return st == RN_OK ? RN_OK : ref_nn_oom(node);
}

const plugin_kernel ref_kernel_gemm = {
    .domain = "",
    .op_type = "Gemm",
    .impl_type = "ref",
    .supports = gemm_supports,
    .run = gemm_run,
};
