/* REF data-movement kernels (one file per op or op pair under kernels/). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_reshape, ref_kernel_squeeze, ref_kernel_unsqueeze,
    ref_kernel_transpose, ref_kernel_concat, ref_kernel_split, ref_kernel_slice, ref_kernel_shape,
    ref_kernel_size, ref_kernel_gather, ref_kernel_gather_elements, ref_kernel_gather_nd,
    ref_kernel_expand, ref_kernel_constant_of_shape, ref_kernel_range, ref_kernel_tile,
    ref_kernel_depth_to_space, ref_kernel_space_to_depth, ref_kernel_pad;

const plugin_kernel *const ref_kernels_movement[] = {
    &ref_kernel_reshape,
    &ref_kernel_squeeze,
    &ref_kernel_unsqueeze,
    &ref_kernel_transpose,
    &ref_kernel_concat,
    &ref_kernel_split,
    &ref_kernel_slice,
    &ref_kernel_shape,
    &ref_kernel_size,
    &ref_kernel_gather,
    &ref_kernel_gather_elements,
    &ref_kernel_gather_nd,
    &ref_kernel_expand,
    &ref_kernel_constant_of_shape,
    &ref_kernel_range,
    &ref_kernel_tile,
    &ref_kernel_depth_to_space,
    &ref_kernel_space_to_depth,
    &ref_kernel_pad,
    NULL,
};
