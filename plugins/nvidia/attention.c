/* The cuBLAS form of an attention step (NV_STEP_BLAS_ATTENTION): the two
 * strided batched GEMMs that read Q, K, V and write the output in place,
 * whatever their strides over (batch, head, row, feature), as long as each
 * matrix has a unit stride along its rows or its features (the BSHD head
 * split, a BHSD tensor, Kt [.., D, Sk] all have). Plain C: exec.c calls
 * cuBLAS with it, the tests check it against a CPU model of cuBLAS.
 *
 * The derivation. Every matrix is a logical Z[r, c] with Z(i, j) at
 * i * rs + j * cs (element strides, row-major when cs == 1). cuBLAS computes, per
 * product, C = alpha op(A) op(B) + beta C on column-major storage: a
 * column-major M[rows, cols] with leading dimension ld has M(i, j) at
 * i + j * ld. So Z is:
 *   - op N of M = Z when rs == 1: ld = cs (>= r);
 *   - op T of M = Z^T [c, r] when cs == 1: M(j, i) at j + i * ld, ld = rs
 *     (>= c);
 * (a dim of 1 leaves its stride free). cuBLAS's C takes no op: it needs
 * rs == 1 (ldc = cs). For C[m, n] = X[m, k] Y[k, n]:
 *   - swapped (tried first: row-major outputs, cs == 1): C^T[n, m] =
 *     Y^T[n, k] X^T[k, m], i.e. cuBLAS's (M, N, K) = (n, m, k), A = Y^T
 *     (strides rs = Y.cs, cs = Y.rs), B = X^T (rs = X.cs, cs = X.rs), and
 *     C^T has rs = C.cs = 1, ldc = C.rs;
 *   - direct: (M, N, K) = (m, n, k), A = X, B = Y, ldc = C.cs (C.rs == 1).
 * For the BSHD head split (row stride H*D, feature stride 1) the scores
 * S[Sq, Sk] = Q K^T come out as cublasGemmStridedBatchedEx(OP_T, OP_N, Sk,
 * Sq, D, scale, K, ld H*D, Q, ld H*D, 0, S, ld Sk), and out = P V as (OP_N,
 * OP_N, Dv, Sq, Sk, 1, V, ld H*Dv, P, ld Sk, 0, O, ld = the output's row
 * stride, H*Dv when the head merge is a view).
 *
 * Batches: the (batch, head) pairs are one call of batch x heads matrices
 * when every operand's batch stride is heads times its head stride (or a
 * count is 1); else a loop over the smaller of the two counts, each call
 * batching the larger with its stride. */
#include <limits.h>

#include "plugins/nvidia/nvidia.h"

/* One operand Z[rows, cols] (strides rs, cs) as cuBLAS reads it: *trans
 * and *ld, or false when neither stride is a unit one. */
static bool blas_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                         int64_t *ld)
{
    bool n_ok = (rs == 1 || rows == 1) && (cols == 1 || cs >= rows);
    bool t_ok = (cs == 1 || cols == 1) && (rows == 1 || rs >= cols);
    if (n_ok) {
        *trans = false;
        *ld = cols == 1 ? rows : cs;
    } else if (t_ok) {
        *trans = true;
        *ld = rows == 1 ? cols : rs;
    } else {
        return false;
    }
    if (*ld < 1)
        *ld = 1;
    return *ld <= INT_MAX;
}

/* The strides of one operand of an attention product over (batch, head,
 * row, column). */
typedef struct operand {
    int64_t batch, head, row, col;
} operand;

/* C[m, n] = alpha X[m, k] Y[k, n] for each (batch, head) pair: the
 * cuBLAS call (above), or false. */
static bool plan_product(int64_t batch, int64_t heads, int64_t m, int64_t n, int64_t k, operand x,
                         operand y, operand c, float alpha, nv_blas_gemm *g)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || m < 1 || n < 1 || k < 1 || batch < 1 ||
        heads < 1 || batch * heads > INT_MAX)
        return false;
    bool found = false;
    for (int swap = 1; swap >= 0 && !found; swap--) {
        int64_t bm = swap ? n : m, bn = swap ? m : n; /* cuBLAS's M, N */
        int64_t lda, ldb, ldc;
        bool ta, tb, tc;
        if (!blas_operand(bm, bn, swap ? c.col : c.row, swap ? c.row : c.col, &tc, &ldc) || tc ||
            !blas_operand(bm, k, swap ? y.col : x.row, swap ? y.row : x.col, &ta, &lda) ||
            !blas_operand(k, bn, swap ? x.col : y.row, swap ? x.row : y.col, &tb, &ldb))
            continue;
        *g = (nv_blas_gemm){.swap = swap,
                            .trans_a = ta,
                            .trans_b = tb,
                            .m = (int)bm,
                            .n = (int)bn,
                            .k = (int)k,
                            .lda = (int)lda,
                            .ldb = (int)ldb,
                            .ldc = (int)ldc,
                            .alpha = alpha};
        found = true;
    }
    if (!found)
        return false;
    const operand *a = g->swap ? &y : &x, *b = g->swap ? &x : &y;
    bool merged =
        batch == 1 || heads == 1 ||
        (a->batch == heads * a->head && b->batch == heads * b->head && c.batch == heads * c.head);
    if (merged) { /* one call over batch x heads */
        bool by_head = heads > 1;
        g->count = (int)(batch * heads), g->calls = 1;
        g->stride_a = by_head ? a->head : a->batch;
        g->stride_b = by_head ? b->head : b->batch;
        g->stride_c = by_head ? c.head : c.batch;
        g->step_a = g->step_b = g->step_c = 0;
    } else if (batch <= heads) { /* a call per batch row, its heads batched */
        g->count = (int)heads, g->calls = (int)batch;
        g->stride_a = a->head, g->stride_b = b->head, g->stride_c = c.head;
        g->step_a = a->batch, g->step_b = b->batch, g->step_c = c.batch;
    } else { /* a call per head, the batch rows batched */
        g->count = (int)batch, g->calls = (int)heads;
        g->stride_a = a->batch, g->stride_b = b->batch, g->stride_c = c.batch;
        g->step_a = a->head, g->step_b = b->head, g->step_c = c.head;
    }
    return true;
}

bool nv_attention_blas_plan(const nvk_attention_args *a, nv_blas_gemm out[2])
{
    int64_t sqk = a->sq * a->sk;
    /* The scores [B, H, Sq, Sk], contiguous. */
    operand s = {a->heads * sqk, sqk, a->sk, 1};
    operand q = {a->q_strides[0], a->q_strides[1], a->q_strides[2], a->q_strides[3]};
    /* K^T [D, Sk]: its rows are K's features, its columns K's keys. */
    operand kt = {a->k_strides[0], a->k_strides[1], a->k_strides[3], a->k_strides[2]};
    operand v = {a->v_strides[0], a->v_strides[1], a->v_strides[2], a->v_strides[3]};
    operand o = {a->o_strides[0], a->o_strides[1], a->o_strides[2], a->o_strides[3]};
    return plan_product(a->batch, a->heads, a->sq, a->sk, a->d, q, kt, s, a->scale, &out[0]) &&
           plan_product(a->batch, a->heads, a->sq, a->dv, a->sk, s, v, o, 1.0f, &out[1]);
}
