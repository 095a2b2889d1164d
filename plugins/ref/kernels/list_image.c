/* REF kernels of the image family: transposed and deformable convolution,
 * the normalisations beyond NN's, LpPool, Resize / Upsample, GridSample /
 * AffineGrid, the RoI ops, MaxUnpool, NonMaxSuppression, Attention and its
 * relatives, RotaryEmbedding, Swish, the losses and the training
 * optimizers. */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_conv_transpose;
extern const plugin_kernel ref_kernel_deform_conv;
extern const plugin_kernel ref_kernel_instance_norm;
extern const plugin_kernel ref_kernel_group_norm;
extern const plugin_kernel ref_kernel_rms_norm;
extern const plugin_kernel ref_kernel_mvn;
extern const plugin_kernel ref_kernel_lp_norm;
extern const plugin_kernel ref_kernel_lp_pool;
extern const plugin_kernel ref_kernel_swish;
extern const plugin_kernel ref_kernel_resize;
extern const plugin_kernel ref_kernel_upsample;
extern const plugin_kernel ref_kernel_grid_sample;
extern const plugin_kernel ref_kernel_affine_grid;
extern const plugin_kernel ref_kernel_roi_align;
extern const plugin_kernel ref_kernel_max_roi_pool;
extern const plugin_kernel ref_kernel_max_unpool;
extern const plugin_kernel ref_kernel_nms;
extern const plugin_kernel ref_kernel_attention;
extern const plugin_kernel ref_kernel_linear_attention;
extern const plugin_kernel ref_kernel_flex_attention;
extern const plugin_kernel ref_kernel_causal_conv;
extern const plugin_kernel ref_kernel_rotary_embedding;
extern const plugin_kernel ref_kernel_sce_loss;
extern const plugin_kernel ref_kernel_nll_loss;
extern const plugin_kernel ref_kernel_adagrad;
extern const plugin_kernel ref_kernel_adam;
extern const plugin_kernel ref_kernel_momentum;

const plugin_kernel *const ref_kernels_image[] = {
    &ref_kernel_conv_transpose,
    &ref_kernel_deform_conv,
    &ref_kernel_instance_norm,
    &ref_kernel_group_norm,
    &ref_kernel_rms_norm,
    &ref_kernel_mvn,
    &ref_kernel_lp_norm,
    &ref_kernel_lp_pool,
    &ref_kernel_swish,
    &ref_kernel_resize,
    &ref_kernel_upsample,
    &ref_kernel_grid_sample,
    &ref_kernel_affine_grid,
    &ref_kernel_roi_align,
    &ref_kernel_max_roi_pool,
    &ref_kernel_max_unpool,
    &ref_kernel_nms,
    &ref_kernel_attention,
    &ref_kernel_linear_attention,
    &ref_kernel_flex_attention,
    &ref_kernel_causal_conv,
    &ref_kernel_rotary_embedding,
    &ref_kernel_sce_loss,
    &ref_kernel_nll_loss,
    &ref_kernel_adagrad,
    &ref_kernel_adam,
    &ref_kernel_momentum,
    NULL,
};
