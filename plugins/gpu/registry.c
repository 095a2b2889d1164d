/* The GPU device's kernels, in registration order. */
#include "plugins/gpu/gpu.h"

extern const rn_kernel gpu_kernel_conv;
extern const rn_kernel gpu_kernel_fused_conv;
extern const rn_kernel gpu_kernel_relu;
extern const rn_kernel gpu_kernel_leaky_relu;
extern const rn_kernel gpu_kernel_clip;
extern const rn_kernel gpu_kernel_sigmoid;
extern const rn_kernel gpu_kernel_tanh;
extern const rn_kernel gpu_kernel_elu;
extern const rn_kernel gpu_kernel_hard_sigmoid;
extern const rn_kernel gpu_kernel_gelu;
extern const rn_kernel gpu_kernel_abs;
extern const rn_kernel gpu_kernel_neg;
extern const rn_kernel gpu_kernel_exp;
extern const rn_kernel gpu_kernel_log;
extern const rn_kernel gpu_kernel_sqrt;
extern const rn_kernel gpu_kernel_erf;
extern const rn_kernel gpu_kernel_reciprocal;
extern const rn_kernel gpu_kernel_add;
extern const rn_kernel gpu_kernel_sub;
extern const rn_kernel gpu_kernel_mul;
extern const rn_kernel gpu_kernel_div;
extern const rn_kernel gpu_kernel_max;
extern const rn_kernel gpu_kernel_min;
extern const rn_kernel gpu_kernel_pow;
extern const rn_kernel gpu_kernel_sum;
extern const rn_kernel gpu_kernel_batchnorm;
extern const rn_kernel gpu_kernel_gemm;
extern const rn_kernel gpu_kernel_fused_gemm;
extern const rn_kernel gpu_kernel_matmul;
extern const rn_kernel gpu_kernel_concat;
extern const rn_kernel gpu_kernel_transpose;
extern const rn_kernel gpu_kernel_reshape;
extern const rn_kernel gpu_kernel_flatten;
extern const rn_kernel gpu_kernel_squeeze;
extern const rn_kernel gpu_kernel_unsqueeze;
extern const rn_kernel gpu_kernel_identity;
extern const rn_kernel gpu_kernel_dropout;
extern const rn_kernel gpu_kernel_dropout_mask;
extern const rn_kernel gpu_kernel_max_pool;
extern const rn_kernel gpu_kernel_average_pool;
extern const rn_kernel gpu_kernel_global_max_pool;
extern const rn_kernel gpu_kernel_global_average_pool;
extern const rn_kernel gpu_kernel_lrn;
extern const rn_kernel gpu_kernel_softmax;
extern const rn_kernel gpu_kernel_log_softmax;
extern const rn_kernel gpu_kernel_layernorm;
extern const rn_kernel gpu_kernel_gather;
extern const rn_kernel gpu_kernel_cast;
extern const rn_kernel gpu_kernel_cast_like;
extern const rn_kernel gpu_kernel_where;
extern const rn_kernel gpu_kernel_equal;
extern const rn_kernel gpu_kernel_less;
extern const rn_kernel gpu_kernel_greater;
extern const rn_kernel gpu_kernel_less_or_equal;
extern const rn_kernel gpu_kernel_greater_or_equal;
extern const rn_kernel gpu_kernel_not;
extern const rn_kernel gpu_kernel_expand;
extern const rn_kernel gpu_kernel_slice;
extern const rn_kernel gpu_kernel_reduce_sum;
extern const rn_kernel gpu_kernel_reduce_mean;
extern const rn_kernel gpu_kernel_reduce_max;

const rn_kernel *const gpu_kernels[] = {
    &gpu_kernel_conv,
    &gpu_kernel_fused_conv,
    &gpu_kernel_relu,
    &gpu_kernel_leaky_relu,
    &gpu_kernel_clip,
    &gpu_kernel_sigmoid,
    &gpu_kernel_tanh,
    &gpu_kernel_elu,
    &gpu_kernel_hard_sigmoid,
    &gpu_kernel_gelu,
    &gpu_kernel_abs,
    &gpu_kernel_neg,
    &gpu_kernel_exp,
    &gpu_kernel_log,
    &gpu_kernel_sqrt,
    &gpu_kernel_erf,
    &gpu_kernel_reciprocal,
    &gpu_kernel_add,
    &gpu_kernel_sub,
    &gpu_kernel_mul,
    &gpu_kernel_div,
    &gpu_kernel_max,
    &gpu_kernel_min,
    &gpu_kernel_pow,
    &gpu_kernel_sum,
    &gpu_kernel_batchnorm,
    &gpu_kernel_gemm,
    &gpu_kernel_fused_gemm,
    &gpu_kernel_matmul,
    &gpu_kernel_concat,
    &gpu_kernel_transpose,
    &gpu_kernel_reshape,
    &gpu_kernel_flatten,
    &gpu_kernel_squeeze,
    &gpu_kernel_unsqueeze,
    &gpu_kernel_identity,
    &gpu_kernel_dropout,
    &gpu_kernel_dropout_mask,
    &gpu_kernel_max_pool,
    &gpu_kernel_average_pool,
    &gpu_kernel_global_max_pool,
    &gpu_kernel_global_average_pool,
    &gpu_kernel_lrn,
    &gpu_kernel_softmax,
    &gpu_kernel_log_softmax,
    &gpu_kernel_layernorm,
    &gpu_kernel_gather,
    &gpu_kernel_cast,
    &gpu_kernel_cast_like,
    &gpu_kernel_where,
    &gpu_kernel_equal,
    &gpu_kernel_less,
    &gpu_kernel_greater,
    &gpu_kernel_less_or_equal,
    &gpu_kernel_greater_or_equal,
    &gpu_kernel_not,
    &gpu_kernel_expand,
    &gpu_kernel_slice,
    &gpu_kernel_reduce_sum,
    &gpu_kernel_reduce_mean,
    &gpu_kernel_reduce_max,
    NULL,
};
