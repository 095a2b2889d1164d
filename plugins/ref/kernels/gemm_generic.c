/* Plain-loop GEMMs for the element types the blocked sgemm does not cover:
 * f64 (ONNX tests in double) and the integer types MatMul and Gemm accept.
 * They favour clarity over speed; models run f32 through ref_sgemm. */
#include "plugins/ref/kernels/nn_util.h"

void ref_dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
               int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double x = trans_a ? a[p * lda + i] : a[i * lda + p];
                double y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
                acc += x * y;
            }
            double *dst = &c[i * ldc + j];
            *dst = beta == 0.0 ? alpha * acc : alpha * acc + beta * *dst;
        }
    }
}

bool ref_nn_is_gemm_int(rn_element_type t)
{
    return t == RN_I32 || t == RN_I64 || t == RN_U32 || t == RN_U64;
}

/* Element i as a 64-bit two's-complement pattern (sign-extended when signed). */
static uint64_t igemm_get(rn_element_type t, const void *data, int64_t i)
{
    switch (t) {
    case RN_I32:
        return (uint64_t)(int64_t)((const int32_t *)data)[i];
    case RN_U32:
        return ((const uint32_t *)data)[i];
    case RN_I64:
        return (uint64_t)((const int64_t *)data)[i];
    default:
        return ((const uint64_t *)data)[i];
    }
}

/* Stores the low bits of v (wrapping as the type's arithmetic does). */
static void igemm_set(rn_element_type t, void *data, int64_t i, uint64_t v)
{
    switch (t) {
    case RN_I32:
    case RN_U32:
        ((uint32_t *)data)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)data)[i] = v;
        break;
    }
}

void ref_igemm(rn_element_type t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               int64_t alpha, const void *a, int64_t lda, const void *b, int64_t ldb, int64_t beta,
               void *c, int64_t ldc)
{
    /* Unsigned arithmetic modulo 2^64 gives the wrapped result for every
     * width and signedness without undefined behaviour. */
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            uint64_t acc = 0;
            for (int64_t p = 0; p < k; p++) {
                uint64_t x = igemm_get(t, a, trans_a ? p * lda + i : i * lda + p);
                uint64_t y = igemm_get(t, b, trans_b ? j * ldb + p : p * ldb + j);
                acc += x * y;
            }
            uint64_t v = acc * (uint64_t)alpha;
            if (beta != 0)
                v += (uint64_t)beta * igemm_get(t, c, i * ldc + j);
            igemm_set(t, c, i * ldc + j, v);
        }
    }
}
