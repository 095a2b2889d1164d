/* REF kernels of the math family: Einsum (einsum.c) and Det (det.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_einsum, ref_kernel_det;

const plugin_kernel *const ref_kernels_math[] = {
    &ref_kernel_einsum,
    &ref_kernel_det,
    NULL,
};
