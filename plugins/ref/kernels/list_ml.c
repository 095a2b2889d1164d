/* REF kernels of the ai.onnx.ml ops scikit-learn exports need (the
 * ArrayFeatureExtractor kernel is listed with the indexing family). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_ml_linear_classifier, ref_kernel_ml_linear_regressor,
    ref_kernel_ml_tree_classifier, ref_kernel_ml_tree_regressor, ref_kernel_ml_tree_ensemble,
    ref_kernel_ml_label_encoder, ref_kernel_ml_scaler, ref_kernel_ml_normalizer,
    ref_kernel_ml_binarizer, ref_kernel_ml_imputer, ref_kernel_ml_one_hot_encoder,
    ref_kernel_ml_zipmap;

const plugin_kernel *const ref_kernels_ml[] = {
    &ref_kernel_ml_linear_classifier,
    &ref_kernel_ml_linear_regressor,
    &ref_kernel_ml_tree_classifier,
    &ref_kernel_ml_tree_regressor,
    &ref_kernel_ml_tree_ensemble,
    &ref_kernel_ml_label_encoder,
    &ref_kernel_ml_scaler,
    &ref_kernel_ml_normalizer,
    &ref_kernel_ml_binarizer,
    &ref_kernel_ml_imputer,
    &ref_kernel_ml_one_hot_encoder,
    &ref_kernel_ml_zipmap,
    NULL,
};
