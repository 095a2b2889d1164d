/* The CPU device's oneDNN kernels, tried before REF's for each op. */
#include "plugins/cpu/cpu.h"

extern const rn_kernel cpu_kernel_conv, cpu_kernel_fused_conv;
extern const rn_kernel cpu_kernel_gemm, cpu_kernel_fused_gemm, cpu_kernel_matmul;
extern const rn_kernel cpu_kernel_max_pool, cpu_kernel_average_pool, cpu_kernel_global_average_pool,
    cpu_kernel_global_max_pool, cpu_kernel_lrn, cpu_kernel_softmax, cpu_kernel_log_softmax,
    cpu_kernel_batch_norm, cpu_kernel_fused_batch_norm, cpu_kernel_concat;
extern const rn_kernel cpu_kernel_relu, cpu_kernel_leaky_relu, cpu_kernel_elu, cpu_kernel_sigmoid,
    cpu_kernel_tanh, cpu_kernel_exp, cpu_kernel_sqrt, cpu_kernel_abs, cpu_kernel_neg,
    cpu_kernel_mish, cpu_kernel_hard_swish, cpu_kernel_gelu, cpu_kernel_clip, cpu_kernel_add,
    cpu_kernel_sub, cpu_kernel_mul, cpu_kernel_div, cpu_kernel_max, cpu_kernel_min, cpu_kernel_sum;

const rn_kernel *const cpu_kernels[] = {
    &cpu_kernel_conv,
    &cpu_kernel_fused_conv,
    &cpu_kernel_gemm,
    &cpu_kernel_fused_gemm,
    &cpu_kernel_matmul,
    &cpu_kernel_max_pool,
    &cpu_kernel_average_pool,
    &cpu_kernel_global_average_pool,
    &cpu_kernel_global_max_pool,
    &cpu_kernel_lrn,
    &cpu_kernel_softmax,
    &cpu_kernel_log_softmax,
    &cpu_kernel_batch_norm,
    &cpu_kernel_fused_batch_norm,
    &cpu_kernel_concat,
    &cpu_kernel_relu,
    &cpu_kernel_leaky_relu,
    &cpu_kernel_elu,
    &cpu_kernel_sigmoid,
    &cpu_kernel_tanh,
    &cpu_kernel_exp,
    &cpu_kernel_sqrt,
    &cpu_kernel_abs,
    &cpu_kernel_neg,
    &cpu_kernel_mish,
    &cpu_kernel_hard_swish,
    &cpu_kernel_gelu,
    &cpu_kernel_clip,
    &cpu_kernel_add,
    &cpu_kernel_sub,
    &cpu_kernel_mul,
    &cpu_kernel_div,
    &cpu_kernel_max,
    &cpu_kernel_min,
    &cpu_kernel_sum,
    NULL,
};
