#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_conv;
extern const plugin_kernel ref_kernel_maxpool;
extern const plugin_kernel ref_kernel_averagepool;
extern const plugin_kernel ref_kernel_global_averagepool;
extern const plugin_kernel ref_kernel_global_maxpool;
extern const plugin_kernel ref_kernel_lrn;
extern const plugin_kernel ref_kernel_batchnorm;
extern const plugin_kernel ref_kernel_gemm;
extern const plugin_kernel ref_kernel_matmul;
extern const plugin_kernel ref_kernel_softmax;
extern const plugin_kernel ref_kernel_logsoftmax;
extern const plugin_kernel ref_kernel_layernorm;
extern const plugin_kernel ref_kernel_dropout;
extern const plugin_kernel ref_kernel_flatten;
extern const plugin_kernel ref_kernel_fused_conv;
extern const plugin_kernel ref_kernel_fused_gemm;
extern const plugin_kernel ref_kernel_fused_batchnorm;
extern const plugin_kernel ref_kernel_shuffle_channels;
extern const plugin_kernel ref_kernel_fused_matmul;
extern const plugin_kernel ref_kernel_scaled_dot_product_attention;

/* The NN family of REF kernels (conv, pool, normalisation, gemm, softmax, ...). */
const plugin_kernel *const ref_kernels_nn[] = {
    &ref_kernel_conv,
    &ref_kernel_maxpool,
    &ref_kernel_averagepool,
    &ref_kernel_global_averagepool,
    &ref_kernel_global_maxpool,
    &ref_kernel_lrn,
    &ref_kernel_batchnorm,
    &ref_kernel_gemm,
    &ref_kernel_matmul,
    &ref_kernel_softmax,
    &ref_kernel_logsoftmax,
    &ref_kernel_layernorm,
    &ref_kernel_dropout,
    &ref_kernel_flatten,
    &ref_kernel_fused_conv,
    &ref_kernel_fused_gemm,
    &ref_kernel_fused_batchnorm,
    &ref_kernel_shuffle_channels,
    &ref_kernel_fused_matmul,
    &ref_kernel_scaled_dot_product_attention,
    NULL,
};
