/* Helpers of the REF kernels of the ai.onnx.ml ops (kernels/ml_*.c). */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_ML_H
#define RUNNEL_PLUGINS_REF_KERNELS_ML_H

#include "plugins/ref/kernels/contrib.h"

/* Element i of a numeric tensor (f32, f64, i64, i32) as a double. */
double ref_ml_at(const graph_tensor *t, size_t i);

/* Whether t's type is one ref_ml_at reads. */
bool ref_ml_numeric(rn_element_type t);

/* Compile time: input 0 is numeric; sets *why otherwise. */
bool ref_ml_supports_numeric(const graph_node *node, const char **why);

/* X's rows and columns: [N, C], or one row for a 1-D X; other ranks are
 * an error naming the node. */
rn_status ref_ml_rows(const graph_node *node, const graph_tensor *x, int64_t *rows, int64_t *cols);

/* The post transforms of the classifiers and regressors, by their codes in
 * TreeEnsemble (opset 5) and their names elsewhere. */
enum { REF_ML_NONE, REF_ML_SOFTMAX, REF_ML_LOGISTIC, REF_ML_SOFTMAX_ZERO, REF_ML_PROBIT };

/* The code of the node's post_transform attribute (a name; NONE when
 * absent), or -1 for a name ONNX does not define. */
int ref_ml_post_transform(const graph_node *node);

/* Applies a post transform to one row of n scores. */
void ref_ml_transform_row(int transform, float *row, int64_t n);

/* A float list attribute read either as FLOATS (`name`) or as a TENSOR
 * (`name` + "_as_tensor", f32 or f64), as doubles in a new malloc'ed array
 * (*out NULL and *n 0 when absent). */
rn_status ref_ml_floats(const graph_node *node, const char *name, double **out, int *n);

/* Hands class labels (int64, or strings copied from `strings`) to output
 * 0: labels[i] indexes `ints` or `strings`. */
rn_status ref_ml_labels(plugin_kernel_args *args, const int64_t *ints, char *const *strings,
                        const int64_t *index, int64_t rows);

#endif /* RUNNEL_PLUGINS_REF_KERNELS_ML_H */
