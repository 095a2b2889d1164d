/* REF reduction kernels (kernels/reduce.c and kernels/argmax.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_reduce_mean, ref_kernel_reduce_sum, ref_kernel_reduce_max,
    ref_kernel_reduce_min, ref_kernel_reduce_prod, ref_kernel_reduce_l1, ref_kernel_reduce_l2,
    ref_kernel_reduce_log_sum, ref_kernel_reduce_log_sum_exp, ref_kernel_reduce_sum_square,
    ref_kernel_argmax, ref_kernel_argmin;

const plugin_kernel *const ref_kernels_reduce[] = {
    &ref_kernel_reduce_mean,
    &ref_kernel_reduce_sum,
    &ref_kernel_reduce_max,
    &ref_kernel_reduce_min,
    &ref_kernel_reduce_prod,
    &ref_kernel_reduce_l1,
    &ref_kernel_reduce_l2,
    &ref_kernel_reduce_log_sum,
    &ref_kernel_reduce_log_sum_exp,
    &ref_kernel_reduce_sum_square,
    &ref_kernel_argmax,
    &ref_kernel_argmin,
    NULL,
};
