/* runnel's own CUDA kernels (plugins/nvidia/kernels/, the .cu files, built by nvcc in
 * a Bazel genrule for sm_80, sm_90 and compute_90 PTX): a C interface of
 * launchers that queue work on a stream and return the launch's
 * cudaError_t (0: queued). `type` is the data's element type, an NVK_*
 * value; arithmetic is in f32 for every type (each kernel is a template
 * instantiated per type). Activations are nv_act's numbers (nvidia.h). */
#ifndef RUNNEL_PLUGINS_NVIDIA_KERNELS_H
#define RUNNEL_PLUGINS_NVIDIA_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *nvk_stream;

/* Element types of the kernels' data. */
#define NVK_F32  0
#define NVK_F16  1
#define NVK_BF16 2 /* bfloat16: stored rounded to nearest even */

#define NVK_MAX_RANK 6

/* Broadcast shapes: the output's dims and each input's strides in
 * elements over them (0 along a broadcast dim). */
typedef struct nvk_broadcast {
    int rank;
    int64_t dims[NVK_MAX_RANK];
    int64_t a_strides[NVK_MAX_RANK];
    int64_t b_strides[NVK_MAX_RANK];
} nvk_broadcast;

/* y = act(x) over n elements (y may be x). */
int nvk_unary(nvk_stream s, int type, int act, float alpha, float beta, const void *x, void *y,
              int64_t n);
/* y = a op b with broadcasting (nv_binary_op), then nothing else. */
int nvk_binary(nvk_stream s, int type, int op, const nvk_broadcast *b, const void *a,
               const void *bb, void *y);
/* y[o][c][i] = act(y[o][c][i] + bias[c] + residual[o][c][i]) for a
 * [outer, channels, inner] tensor; bias or residual may be NULL. */
int nvk_bias_act(nvk_stream s, int type, void *y, const void *bias, const void *residual,
                 int64_t outer, int64_t channels, int64_t inner, int act, float alpha, float beta);
/* y = broadcast of x (rows x cols from a C of [cols], [1, cols], [rows, 1],
 * [rows, cols] or a scalar: x_row_stride / x_col_stride 0 where broadcast),
 * scaled by `scale`. For Gemm's C before cuBLAS adds the product. */
int nvk_broadcast_2d(nvk_stream s, int type, const void *x, int64_t x_row_stride,
                     int64_t x_col_stride, float scale, void *y, int64_t rows, int64_t cols);
/* Element type conversion of n elements from NVK_* type `from` to `to`
 * (rounded to nearest even). */
int nvk_convert(nvk_stream s, int from, int to, const void *x, void *y, int64_t n);
/* Inference batch normalization (+ act) of [outer, channels, inner]. */
int nvk_batchnorm(nvk_stream s, int type, const void *x, const void *scale, const void *bias,
                  const void *mean, const void *var, float epsilon, void *y, int64_t outer,
                  int64_t channels, int64_t inner, int act, float alpha, float beta);
/* y = x transposed: out_dims of the output, in_strides the input's strides
 * permuted to the output's dims (elements); esize bytes per element. */
int nvk_transpose(nvk_stream s, int esize, const void *x, void *y, int rank,
                  const int64_t *out_dims, const int64_t *in_strides);
/* Gather along an axis: x [outer, axis_dim, inner], indices (i64 when
 * idx64, else i32; negative ones count from the end) -> y [outer, n_idx,
 * inner]. An index out of range writes zeros. */
int nvk_gather(nvk_stream s, int esize, const void *x, const void *indices, int idx64, void *y,
               int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx);
/* LayerNormalization over the last axis of [rows, cols] of x (+ residual,
 * of x's shape, when not NULL); bias may be NULL. */
int nvk_layernorm(nvk_stream s, int type, const void *x, const void *residual, const void *scale,
                  const void *bias, float epsilon, void *y, int64_t rows, int64_t cols);
/* Mean over the last axis: [rows, cols] -> [rows]. */
int nvk_reduce_mean(nvk_stream s, int type, const void *x, void *y, int64_t rows, int64_t cols);
/* ONNX's cross-channel LRN of NCHW [outer, channels, inner] (what cuDNN's
 * LRN does for f32 and f16; cuDNN has no bf16 LRN). */
int nvk_lrn(nvk_stream s, int type, const void *x, void *y, int64_t outer, int64_t channels,
            int64_t inner, int64_t size, float alpha, float beta, float bias);
/* 2D pooling of NCHW (mode 0 max, 1 average; count_include_pad), any pads:
 * what cuDNN's pooling does not cover (asymmetric pads, ceil_mode). */
int nvk_pool2d(nvk_stream s, int type, int mode, int count_include_pad, const void *x, void *y,
               int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
               int64_t kw, int64_t sh, int64_t sw, int64_t pad_top, int64_t pad_left,
               int64_t pad_bottom, int64_t pad_right);

/* Scaled dot-product attention: o = Softmax(scale * q k^T + mask) v for
 * each of batch x heads, q [sq, d], k [sk, d], v [sk, dv], the mask (NULL:
 * none) broadcast to [sq, sk], o [sq, dv]; every tensor addressed with
 * element strides over (batch, head, row, feature) (the mask's: batch,
 * head, query, key; 0 where broadcast). f16 and bf16 with d, dv <= 128
 * run on tensor cores (mode NVK_ATTENTION_AUTO; bf16 needs compute
 * capability 8.0); any type with d, dv <= 256 on the scalar kernel (or
 * with mode NVK_ATTENTION_ROWS). */
typedef struct nvk_attention_args {
    int64_t batch, heads, sq, sk, d, dv;
    int64_t q_strides[4], k_strides[4], v_strides[4], o_strides[4], mask_strides[4];
    float scale;
} nvk_attention_args;
#define NVK_ATTENTION_AUTO 0
#define NVK_ATTENTION_ROWS 1
int nvk_attention(nvk_stream s, int type, const nvk_attention_args *a, const void *q, const void *k,
                  const void *v, const void *mask, void *o, int mode);
/* Softmax over the last axis of [rows, cols] (one warp per row). */
int nvk_softmax(nvk_stream s, int type, const void *x, void *y, int64_t rows, int64_t cols);
/* The attention's probabilities in place: scores [batch, heads, sq, sk]
 * (contiguous, already scaled) plus the mask (NULL: none) read with
 * a->mask_strides over (batch, head, query, key) and clamped to -1e30 as
 * nvk_attention does, then Softmax over each row of sk keys (one warp per
 * row). */
int nvk_attention_softmax(nvk_stream s, int type, const nvk_attention_args *a, void *scores,
                          const void *mask);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_PLUGINS_NVIDIA_KERNELS_H */
