/* A cache-blocked single-precision GEMM in plain C (GotoBLAS loop order).
 *
 * op(B) is packed in KC x NC panels of NR-wide slivers and op(A) in MC x KC
 * blocks of MR-tall slivers, so the micro-kernel streams both from
 * contiguous memory; the micro-kernel keeps an MR x NR accumulator tile in
 * registers. It is written so that gcc vectorizes it at -O2: fixed trip
 * counts, `restrict`, and an unrolled row loop so the accumulators are scalar
 * -replaced into vector registers. The same driver is instantiated three
 * times: a baseline build (6x8, SSE2 on x86-64), an AVX2+FMA build (6x16)
 * and an AVX-512 build (6x32), the widest the CPU has being chosen at run
 * time.
 *
 * m == 1 and n == 1 (fully connected layers at batch 1, matrix-vector
 * products) skip packing: they read each element of the matrix once, so a
 * streaming dot / axpy form is what the memory bandwidth allows. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

/* -std=c17 turns floating-point contraction off, which keeps gcc from fusing
 * the micro-kernel's multiply and add into one FMA instruction: allowing it
 * here doubles the AVX2 / AVX-512 throughput (and rounds once, not twice). */
#pragma GCC optimize("fp-contract=fast")

enum {
    SGEMM_MR = 6,
    SGEMM_NR_MAX = 32,
    SGEMM_KC = 128, /* a 128 x 16 B sliver (8 KiB) stays in L1 */
    SGEMM_MC = 144, /* multiple of MR; a 144 x 128 A block (72 KiB) stays in L2 */
    SGEMM_NC = 512  /* multiple of every NR; a 128 x 512 B panel is 256 KiB */
};

#define SGEMM_INLINE static inline __attribute__((always_inline))

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Packs rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into MR-tall slivers,
 * zero-filling the rows past mc. */
SGEMM_INLINE void sgemm_pack_a(bool trans_a, const float *a, int64_t lda, int64_t i0, int64_t p0,
                               int64_t mc, int64_t kc, float *restrict dst)
{
    for (int64_t ir = 0; ir < mc; ir += SGEMM_MR) {
        int64_t mr = min64(SGEMM_MR, mc - ir);
        float *s = dst + ir * kc;
        if (!trans_a) {
            for (int64_t i = 0; i < SGEMM_MR; i++) {
                if (i < mr) {
                    const float *row = a + (i0 + ir + i) * lda + p0;
                    for (int64_t p = 0; p < kc; p++)
                        s[p * SGEMM_MR + i] = row[p];
                } else {
                    for (int64_t p = 0; p < kc; p++)
                        s[p * SGEMM_MR + i] = 0.0f;
                }
            }
        } else {
            for (int64_t p = 0; p < kc; p++) {
                const float *col = a + (p0 + p) * lda + i0 + ir;
                for (int64_t i = 0; i < SGEMM_MR; i++)
                    s[p * SGEMM_MR + i] = i < mr ? col[i] : 0.0f;
            }
        }
    }
}

/* Packs rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) into NR-wide slivers,
 * zero-filling the columns past nc. */
SGEMM_INLINE void sgemm_pack_b(const int nr_max, bool trans_b, const float *b, int64_t ldb,
                               int64_t p0, int64_t j0, int64_t kc, int64_t nc, float *restrict dst)
{
    for (int64_t jr = 0; jr < nc; jr += nr_max) {
        int64_t nr = min64(nr_max, nc - jr);
        float *s = dst + jr * kc;
        if (!trans_b) {
            for (int64_t p = 0; p < kc; p++) {
                const float *row = b + (p0 + p) * ldb + j0 + jr;
                float *d = s + p * nr_max;
                if (nr == nr_max) {
                    for (int j = 0; j < nr_max; j++)
                        d[j] = row[j];
                } else {
                    for (int64_t j = 0; j < nr_max; j++)
                        d[j] = j < nr ? row[j] : 0.0f;
                }
            }
        } else {
            for (int64_t j = 0; j < nr_max; j++) {
                if (j < nr) {
                    const float *col = b + (j0 + jr + j) * ldb + p0;
                    for (int64_t p = 0; p < kc; p++)
                        s[p * nr_max + j] = col[p];
                } else {
                    for (int64_t p = 0; p < kc; p++)
                        s[p * nr_max + j] = 0.0f;
                }
            }
        }
    }
}

/* C tile (mr x nr valid of MR x NR) = alpha * A sliver * B sliver + beta * C.
 * The accumulator tile is only ever indexed by constants (after unrolling)
 * so that it lives in registers; edge tiles go through a separate array. */
SGEMM_INLINE void sgemm_micro(const int nr_max, int64_t kc, const float *restrict a,
                              const float *restrict b, float *restrict c, int64_t ldc, int64_t mr,
                              int64_t nr, float alpha, float beta)
{
    float acc[SGEMM_MR][SGEMM_NR_MAX];
#pragma GCC unroll 8
    for (int i = 0; i < SGEMM_MR; i++)
        for (int j = 0; j < nr_max; j++)
            acc[i][j] = 0.0f;
    for (int64_t p = 0; p < kc; p++) {
#pragma GCC unroll 8
        for (int i = 0; i < SGEMM_MR; i++) {
            float av = a[p * SGEMM_MR + i];
            for (int j = 0; j < nr_max; j++)
                acc[i][j] += av * b[p * nr_max + j];
        }
    }
    if (mr == SGEMM_MR && nr == nr_max) {
        if (beta == 0.0f) {
#pragma GCC unroll 8
            for (int i = 0; i < SGEMM_MR; i++)
                for (int j = 0; j < nr_max; j++)
                    c[i * ldc + j] = alpha * acc[i][j];
        } else {
#pragma GCC unroll 8
            for (int i = 0; i < SGEMM_MR; i++)
                for (int j = 0; j < nr_max; j++)
                    c[i * ldc + j] = alpha * acc[i][j] + beta * c[i * ldc + j];
        }
        return;
    }
    float tile[SGEMM_MR * SGEMM_NR_MAX];
#pragma GCC unroll 8
    for (int i = 0; i < SGEMM_MR; i++)
        for (int j = 0; j < nr_max; j++)
            tile[i * nr_max + j] = acc[i][j];
    for (int64_t i = 0; i < mr; i++) {
        for (int64_t j = 0; j < nr; j++) {
            float v = alpha * tile[i * nr_max + j];
            c[i * ldc + j] = beta == 0.0f ? v : v + beta * c[i * ldc + j];
        }
    }
}

SGEMM_INLINE rn_status sgemm_blocked(const int nr_max, bool trans_a, bool trans_b, int64_t m,
                                     int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    int64_t kc_max = min64(SGEMM_KC, k);
    int64_t mc_max = min64(SGEMM_MC, (m + SGEMM_MR - 1) / SGEMM_MR * SGEMM_MR);
    int64_t nc_max = min64(SGEMM_NC, (n + nr_max - 1) / nr_max * nr_max);
    float *apack = ref_tmp_alloc((size_t)(mc_max * kc_max) * sizeof(float));
    float *bpack = ref_tmp_alloc((size_t)(kc_max * nc_max) * sizeof(float));
    if (!apack || !bpack) {
        ref_tmp_free(apack);
        ref_tmp_free(bpack);
        return RN_OUT_OF_MEMORY;
    }
    for (int64_t jc = 0; jc < n; jc += SGEMM_NC) {
        int64_t nc = min64(SGEMM_NC, n - jc);
        for (int64_t pc = 0; pc < k; pc += SGEMM_KC) {
            int64_t kc = min64(SGEMM_KC, k - pc);
            float beta_eff = pc == 0 ? beta : 1.0f;
            sgemm_pack_b(nr_max, trans_b, b, ldb, pc, jc, kc, nc, bpack);
            for (int64_t ic = 0; ic < m; ic += SGEMM_MC) {
                int64_t mc = min64(SGEMM_MC, m - ic);
                sgemm_pack_a(trans_a, a, lda, ic, pc, mc, kc, apack);
                for (int64_t jr = 0; jr < nc; jr += nr_max) {
                    for (int64_t ir = 0; ir < mc; ir += SGEMM_MR) {
                        sgemm_micro(nr_max, kc, apack + ir * kc, bpack + jr * kc,
                                    c + (ic + ir) * ldc + jc + jr, ldc, min64(SGEMM_MR, mc - ir),
                                    min64(nr_max, nc - jr), alpha, beta_eff);
                    }
                }
            }
        }
    }
    ref_tmp_free(apack);
    ref_tmp_free(bpack);
    return RN_OK;
}

/* Sum of x[p] * y[p]; 16 independent partial sums let gcc vectorize the
 * loop without reassociating a single float sum. */
SGEMM_INLINE float sgemm_dot(const float *restrict x, const float *restrict y, int64_t k)
{
    float lanes[16] = {0};
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        for (int l = 0; l < 16; l++)
            lanes[l] += x[p + l] * y[p + l];
    }
    float s = 0.0f;
    for (; p < k; p++)
        s += x[p] * y[p];
    for (int l = 0; l < 16; l++)
        s += lanes[l];
    return s;
}

/* out[r * ldo] = alpha * sum_p x[p] * M(r, p) + beta * out[r * ldo] for r < rows,
 * where M(r, p) = mat[r * ldm + p] (dot form) or mat[p * ldm + r] (axpy form).
 * x is contiguous. */
SGEMM_INLINE rn_status sgemm_gemv(bool axpy_form, int64_t rows, int64_t k, float alpha,
                                  const float *mat, int64_t ldm, const float *x, float beta,
                                  float *out, int64_t ldo)
{
    if (!axpy_form) {
        for (int64_t r = 0; r < rows; r++) {
            float v = alpha * sgemm_dot(mat + r * ldm, x, k);
            out[r * ldo] = beta == 0.0f ? v : v + beta * out[r * ldo];
        }
        return RN_OK;
    }
    float *acc = ref_tmp_calloc((size_t)rows, sizeof(float));
    if (!acc)
        return RN_OUT_OF_MEMORY;
    for (int64_t p = 0; p < k; p++) {
        const float *restrict row = mat + p * ldm;
        float xp = x[p];
        for (int64_t r = 0; r < rows; r++)
            acc[r] += xp * row[r];
    }
    for (int64_t r = 0; r < rows; r++) {
        float v = alpha * acc[r];
        out[r * ldo] = beta == 0.0f ? v : v + beta * out[r * ldo];
    }
    ref_tmp_free(acc);
    return RN_OK;
}

/* The vector operand of a matrix-vector product, made contiguous. */
static const float *sgemm_vector(const float *v, int64_t stride, int64_t k, float **owned)
{
    *owned = NULL;
    if (stride == 1 || k <= 1)
        return v;
    float *copy = ref_tmp_alloc((size_t)k * sizeof(float));
    if (!copy)
        return NULL;
    for (int64_t p = 0; p < k; p++)
        copy[p] = v[p * stride];
    *owned = copy;
    return copy;
}

SGEMM_INLINE rn_status sgemm_any(const int nr_max, bool trans_a, bool trans_b, int64_t m, int64_t n,
                                 int64_t k, float alpha, const float *a, int64_t lda,
                                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m == 1 || n == 1) {
        float *owned;
        rn_status st;
        if (m == 1) {
            /* c[0, j] = sum_p A(0, p) * B(p, j): B rows are the matrix. */
            const float *x = sgemm_vector(a, trans_a ? lda : 1, k, &owned);
            if (!x)
                return RN_OUT_OF_MEMORY;
            st = sgemm_gemv(!trans_b, n, k, alpha, b, ldb, x, beta, c, 1);
        } else {
            /* c[i, 0] = sum_p A(i, p) * B(p, 0): A is the matrix. */
            const float *x = sgemm_vector(b, trans_b ? 1 : ldb, k, &owned);
            if (!x)
                return RN_OUT_OF_MEMORY;
            st = sgemm_gemv(trans_a, m, k, alpha, a, lda, x, beta, c, ldc);
        }
        ref_tmp_free(owned);
        return st;
    }
    return sgemm_blocked(nr_max, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static rn_status sgemm_baseline(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float *a, int64_t lda, const float *b,
                                int64_t ldb, float beta, float *c, int64_t ldc)
{
    return sgemm_any(8, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static rn_status
sgemm_avx2(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    return sgemm_any(16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((target("avx512f,avx2,fma,prefer-vector-width=512"))) static rn_status
sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc)
{
    return sgemm_any(32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static bool sgemm_has_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

rn_status ref_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                    int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return RN_OK;
    if (k <= 0) {
        /* An empty sum: C = beta * C. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return RN_OK;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f") && sgemm_has_avx2())
        return sgemm_avx512(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (sgemm_has_avx2())
        return sgemm_avx2(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
    return sgemm_baseline(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
