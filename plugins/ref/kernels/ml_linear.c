/* REF LinearClassifier and LinearRegressor (ai.onnx.ml).
 *
 * Scores are X @ coefficients^T + intercepts, coefficients laid out
 * [classes or targets, C]. LinearClassifier: with one coefficient row and
 * two class labels the scores become [-s, s] (binary), then post_transform
 * applies per row and the label is the class of the highest score (the
 * first on ties); with one score column the label is class 1 when the score
 * passes 0 (0.5 after a transform). LinearRegressor supports post_transform
 * NONE only, as ONNX's reference. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/ml.h"

static bool linear_supports(const graph_node *node, const char **why)
{
    if (!ref_ml_supports_numeric(node, why))
        return false;
    int pt = ref_ml_post_transform(node);
    if (pt < 0 || (strcmp(node->op_type, "LinearRegressor") == 0 && pt != REF_ML_NONE)) {
        *why = "post_transform is unknown or not implemented for this op";
        return false;
    }
    return true;
}

/* scores [rows, e] = x @ coef^T + intercepts, e = coefficient rows. */
static rn_status linear_scores(const plugin_kernel_args *args, int64_t *rows, int64_t *e,
                               float **scores)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    int64_t cols;
    rn_status st = ref_ml_rows(node, x, rows, &cols);
    if (st != RN_OK)
        return st;
    const float *coef, *icpt;
    int n_coef = graph_node_attr_floats(node, "coefficients", &coef);
    int n_icpt = graph_node_attr_floats(node, "intercepts", &icpt);
    if (cols <= 0 || n_coef % cols != 0 || n_coef == 0)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "%d coefficients do not fill rows of X's %lld columns", n_coef,
                                 (long long)cols);
    *e = n_coef / cols;
    if (n_icpt != 0 && n_icpt != *e)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "%d intercepts for %lld score columns",
                                 n_icpt, (long long)*e);
    float *s = malloc((size_t)(*rows * (*e + 1) + 1) * sizeof *s);
    if (s == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    for (int64_t r = 0; r < *rows; r++)
        for (int64_t k = 0; k < *e; k++) {
            double acc = n_icpt ? icpt[k] : 0.0;
            for (int64_t c = 0; c < cols; c++)
                acc += ref_ml_at(x, (size_t)(r * cols + c)) * coef[k * cols + c];
            s[r * *e + k] = (float)acc;
        }
    *scores = s;
    return RN_OK;
}

static rn_status classifier_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    int64_t rows, e;
    float *s;
    rn_status st = linear_scores(args, &rows, &e, &s);
    if (st != RN_OK)
        return st;
    const int64_t *ints;
    int n_ints = graph_node_attr_ints(node, "classlabels_ints", &ints);
    const graph_attr *sa = graph_node_attr(node, "classlabels_strings");
    int labels = n_ints > 0 ? n_ints : (sa != NULL ? sa->count : 0);
    int64_t width = e;
    if (e == 1 && labels == 2) { /* binary: [-s, s] */
        for (int64_t r = rows - 1; r >= 0; r--) {
            s[2 * r + 1] = s[r];
            s[2 * r] = -s[r];
        }
        width = 2;
    }
    int pt = ref_ml_post_transform(node);
    int64_t *best = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *best);
    graph_tensor *z;
    if (best == NULL)
        st = ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    if (st == RN_OK)
        st = ref_contrib_output(args, 1, &z);
    for (int64_t r = 0; st == RN_OK && r < rows; r++) {
        float *row = s + r * width;
        ref_ml_transform_row(pt, row, width);
        int64_t k = 0;
        if (width > 1) {
            for (int64_t j = 1; j < width; j++)
                k = row[j] > row[k] ? j : k;
        } else {
            k = row[0] >= (pt == REF_ML_NONE ? 0.0f : 0.5f) ? 1 : 0;
        }
        if (k >= labels && labels > 0)
            st = ref_contrib_error(node, RN_INVALID_ARG, "class %lld has no label", (long long)k);
        best[r] = k;
        if (z != NULL)
            memcpy((float *)z->data + r * width, row, (size_t)width * sizeof *row);
    }
    if (st == RN_OK)
        st = ref_ml_labels(args, n_ints > 0 ? ints : NULL, sa != NULL ? sa->strings : NULL, best,
                           rows);
    free(best);
    free(s);
    return st;
}

static rn_status regressor_run(plugin_kernel_args *args)
{
    int64_t rows, e;
    float *s;
    rn_status st = linear_scores(args, &rows, &e, &s);
    if (st != RN_OK)
        return st;
    graph_tensor *y;
    if ((st = ref_contrib_output(args, 0, &y)) == RN_OK && y != NULL) {
        if ((int64_t)graph_tensor_count(y) != rows * e)
            st =
                ref_contrib_error(args->node, RN_SHAPE_MISMATCH,
                                  "%lld coefficient rows but targets says otherwise", (long long)e);
        else
            memcpy(y->data, s, (size_t)(rows * e) * sizeof *s);
    }
    free(s);
    return st;
}

const plugin_kernel ref_kernel_ml_linear_classifier = {
    .domain = "ai.onnx.ml",
    .op_type = "LinearClassifier",
    .impl_type = "ref",
    .supports = linear_supports,
    .run = classifier_run,
};

const plugin_kernel ref_kernel_ml_linear_regressor = {
    .domain = "ai.onnx.ml",
    .op_type = "LinearRegressor",
    .impl_type = "ref",
    .supports = linear_supports,
    .run = regressor_run,
};
