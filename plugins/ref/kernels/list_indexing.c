/* REF kernels of the indexing family (one file per op or op group under
 * kernels/). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_scatter_elements, ref_kernel_scatter, ref_kernel_scatter_nd,
    ref_kernel_tensor_scatter, ref_kernel_trilu, ref_kernel_cumsum, ref_kernel_cumprod,
    ref_kernel_one_hot, ref_kernel_compress, ref_kernel_eye_like, ref_kernel_top_k,
    ref_kernel_unique, ref_kernel_non_zero, ref_kernel_reverse_sequence, ref_kernel_center_crop_pad,
    ref_kernel_hardmax, ref_kernel_col2im, ref_kernel_bit_cast, ref_kernel_tfidf_vectorizer,
    ref_kernel_array_feature_extractor;

const plugin_kernel *const ref_kernels_indexing[] = {
    &ref_kernel_scatter_elements,
    &ref_kernel_scatter,
    &ref_kernel_scatter_nd,
    &ref_kernel_tensor_scatter,
    &ref_kernel_trilu,
    &ref_kernel_cumsum,
    &ref_kernel_cumprod,
    &ref_kernel_one_hot,
    &ref_kernel_compress,
    &ref_kernel_eye_like,
    &ref_kernel_top_k,
    &ref_kernel_unique,
    &ref_kernel_non_zero,
    &ref_kernel_reverse_sequence,
    &ref_kernel_center_crop_pad,
    &ref_kernel_hardmax,
    &ref_kernel_col2im,
    &ref_kernel_bit_cast,
    &ref_kernel_tfidf_vectorizer,
    &ref_kernel_array_feature_extractor,
    NULL,
};
