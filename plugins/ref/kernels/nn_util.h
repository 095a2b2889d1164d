/* Private helpers of the REF NN kernels (conv, pool, gemm, matmul, norms):
 * the blocked sgemm, sliding-window geometry shared by Conv and the pools,
 * and element-type conversions to the kernels' compute types.
 *
 * Compute types: f32 runs natively; f16 and bf16 are widened to f32 and
 * narrowed back; f64 runs in double. The simple kernels (pools, norms,
 * softmax) widen every float type to double, compute there, and narrow back. */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_NN_UTIL_H
#define RUNNEL_PLUGINS_REF_KERNELS_NN_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/ops/attr_parse.h"
#include "plugins/api/kernel.h"

/* ---- sgemm (sgemm.c) ---- */

/* C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major.
 * op(A)(i, p) is a[i * lda + p], or a[p * lda + i] when trans_a.
 * op(B)(p, j) is b[p * ldb + j], or b[j * ldb + p] when trans_b.
 * With beta == 0, C is written without being read (so NaNs in it vanish).
 * Packs cache-sized panels and runs a register-blocked micro-kernel of 6x32
 * (AVX-512), 6x16 (AVX2+FMA) or 6x8 (baseline), picked at run time;
 * single-threaded.
 * Returns RN_OUT_OF_MEMORY (without a message) when a panel cannot be allocated;
 * C is then unspecified. */
rn_status ref_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                    int64_t ldc);

/* ---- GEMM for the other types (gemm_generic.c) ---- */

/* The same contract as ref_sgemm for f64, in plain loops. */
void ref_dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
               int64_t ldc);

/* The same contract for the integer types i32, i64, u32 and u64 (type t for
 * a, b and c): products and sums wrap around modulo the type's width, and
 * alpha / beta are integers. */
void ref_igemm(rn_element_type t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               int64_t alpha, const void *a, int64_t lda, const void *b, int64_t ldb, int64_t beta,
               void *c, int64_t ldc);

/* i32, i64, u32 or u64. */
bool ref_nn_is_gemm_int(rn_element_type t);

/* ---- sliding windows (nn_window.c) ---- */

/* The geometry of a Conv or pooling window over the spatial dims of an
 * N x C x D1 x ... x Dn input. pad_begin is where the window starts
 * (output o covers input positions o * stride - pad_begin + t * dilation for
 * t < kernel). */
typedef struct ref_nn_window {
    int n;                          /* number of spatial dims */
    int64_t in[RN_MAX_RANK];        /* input spatial dims */
    int64_t out[RN_MAX_RANK];       /* output spatial dims */
    int64_t kernel[RN_MAX_RANK];    /* window size (undilated) */
    int64_t stride[RN_MAX_RANK];    /* >= 1 */
    int64_t dilation[RN_MAX_RANK];  /* >= 1 */
    int64_t pad_begin[RN_MAX_RANK]; /* leading padding */
    int64_t pad_end[RN_MAX_RANK];   /* trailing padding (explicit or SAME) */
    graph_window attrs;             /* the attributes as read (auto_pad, pads as written) */
} ref_nn_window;

/* Fills w from the node's window attributes (graph_window_read), the input
 * x (rank >= 3), the output y (already shaped by inference) and the window
 * size `kernel` (the weight's spatial dims, n = x->rank - 2 entries), or,
 * for the pools (kernel NULL), the required kernel_shape. SAME_UPPER /
 * SAME_LOWER padding is derived from the output size (graph_window_pads). An
 * attribute of the wrong length or value is an error naming the node and the
 * attribute. */
rn_status ref_nn_window_init(const graph_node *node, const graph_tensor *x, const graph_tensor *y,
                             const int64_t *kernel, ref_nn_window *w);

/* Whether the node's window attributes are ones the kernels understand
 * (1 to RN_MAX_RANK - 2 spatial dims, and attributes graph_window_read
 * accepts for them). Sets *why on false. */
bool ref_nn_window_attrs_ok(const graph_node *node, int n_spatial, const char **why);

/* ---- element types (nn_util.c) ---- */

/* f16, bf16, f32 or f64. */
bool ref_nn_is_float(rn_element_type t);

/* Reads element i of a float tensor of type t as a double. */
double ref_nn_get(rn_element_type t, const void *data, size_t i);
/* Writes v into element i of a float tensor of type t (rounding to nearest). */
void ref_nn_set(rn_element_type t, void *data, size_t i, double v);

/* Copies n elements of a float tensor into a new double array from
 * ref_tmp_alloc (tmp.h). Returns NULL when out of memory. The caller frees it
 * with ref_tmp_free. */
double *ref_nn_to_f64(rn_element_type t, const void *data, size_t n);
/* Writes n doubles into a float tensor of type t. */
void ref_nn_from_f64(rn_element_type t, void *data, const double *src, size_t n);

/* An f32 view of a float tensor (f16 / bf16 / f32): *view points at the data
 * itself for f32, else at a new widened copy from ref_tmp_alloc stored in
 * *owned (ref_tmp_free it; *owned is NULL for f32). Returns RN_OUT_OF_MEMORY
 * (no message) on failure. */
rn_status ref_nn_f32_view(const graph_tensor *t, const float **view, float **owned);
/* Writes n floats into a tensor of type f16 / bf16 / f32. */
void ref_nn_from_f32(rn_element_type t, void *data, const float *src, size_t n);

/* ---- vector loops ----
 * gcc 12 at -O2 vectorizes only loops whose trip count is a multiple of the
 * vector width, so the hot f32 loops run in fixed blocks of 16, then 4, then
 * a scalar tail;
 * `restrict` parameters let it skip alias checks once inlined. */

/* y[i] += a * x[i] for i < n. */
static inline void ref_nn_axpy_f32(int64_t n, float a, const float *restrict x, float *restrict y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            y[i + j] += a * x[i + j];
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++)
            y[i + j] += a * x[i + j];
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* y[i] = x[i] * a + b for i < n. */
static inline void ref_nn_scale_shift_f32(int64_t n, const float *restrict x, float a, float b,
                                          float *restrict y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            y[i + j] = x[i + j] * a + b;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++)
            y[i + j] = x[i + j] * a + b;
    for (; i < n; i++)
        y[i] = x[i] * a + b;
}

/* y[i] = v for i < n. */
static inline void ref_nn_fill_f32(int64_t n, float v, float *restrict y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            y[i + j] = v;
    for (; i < n; i++)
        y[i] = v;
}

/* Product of dims[from, to). */
int64_t ref_nn_span(const int64_t *dims, int from, int to);

/* Compile time: whether inputs [0, n_required) and output 0 are present
 * (not omitted). Sets *why on false. */
bool ref_nn_node_ok(const graph_node *node, int n_required, const char **why);

/* Run time: RN_INVALID_ARG naming the node when one of inputs
 * [0, n_required) or output 0 is absent, or holds values without a buffer. */
rn_status ref_nn_args_ok(const plugin_kernel_args *args, int n_required);

/* rn_set_error(RN_OUT_OF_MEMORY, ...) naming the node. */
rn_status ref_nn_oom(const graph_node *node);

#endif /* RUNNEL_PLUGINS_REF_KERNELS_NN_UTIL_H */
