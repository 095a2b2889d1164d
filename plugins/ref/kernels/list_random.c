/* REF kernels of the random family (random.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_random_normal, ref_kernel_random_uniform,
    ref_kernel_random_normal_like, ref_kernel_random_uniform_like, ref_kernel_multinomial,
    ref_kernel_bernoulli;

const plugin_kernel *const ref_kernels_random[] = {
    &ref_kernel_random_normal,
    &ref_kernel_random_uniform,
    &ref_kernel_random_normal_like,
    &ref_kernel_random_uniform_like,
    &ref_kernel_multinomial,
    &ref_kernel_bernoulli,
    NULL,
};
