/* REF kernels of the ai.onnx.ml ops, one node at a time, with values
 * worked out by hand beside each case and the errors bad input gets. Their
 * parity with ONNX Runtime on scikit-learn exports is tests/wild
 * (wild_sklearn_*); ONNX's own ML node tests run in the conformance suite. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/ref/node_case.h"

static void expect_error(rn_status got, rn_status want, const char *fragment)
{
    cr_assert_eq(got, want, "status %d, expected %d (%s)", got, want, rn_last_error());
    cr_assert(strstr(rn_last_error(), "'n'") != NULL, "error names no node: %s", rn_last_error());
    cr_assert(strstr(rn_last_error(), fragment) != NULL, "error lacks '%s': %s", fragment,
              rn_last_error());
}

static node_case ml_case(const char *op)
{
    node_case c = nc_new(op, 1);
    c.domain = "ai.onnx.ml";
    return c;
}

Test(ml, linear_classifier_labels_the_best_score)
{
    /* coefficients I (2 classes of 2 features): scores = x; x = [1, 2] and
     * [3, -1]: labels 20 and 10, scores as they are (NONE) */
    node_case c = ml_case("LinearClassifier");
    nc_f32(&c, 2, (int64_t[]){2, 2}, (float[]){1, 2, 3, -1});
    nc_floats(&c, "coefficients", 4, (float[]){1, 0, 0, 1});
    nc_floats(&c, "intercepts", 2, (float[]){0, 0});
    nc_ints(&c, "classlabels_ints", 2, (int64_t[]){10, 20});
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 2, (int64_t[]){20, 10});
    expect_f32(&c.out[1], 4, (float[]){1, 2, 3, -1}, 1e-6);
    nc_free(&c);
}

/* One tree: x[0] <= 0.5 goes to leaf 1 (class 0), else leaf 2 (class 1). */
static node_case stump(const int64_t *truenodes)
{
    static const char *const modes[] = {"BRANCH_LEQ", "LEAF", "LEAF"};
    node_case c = ml_case("TreeEnsembleClassifier");
    nc_f32(&c, 2, (int64_t[]){2, 1}, (float[]){0, 1});
    nc_ints(&c, "nodes_treeids", 3, (int64_t[]){0, 0, 0});
    nc_ints(&c, "nodes_nodeids", 3, (int64_t[]){0, 1, 2});
    nc_ints(&c, "nodes_featureids", 3, (int64_t[]){0, 0, 0});
    nc_floats(&c, "nodes_values", 3, (float[]){0.5f, 0, 0});
    nc_strings(&c, "nodes_modes", 3, modes);
    nc_ints(&c, "nodes_truenodeids", 3, truenodes);
    nc_ints(&c, "nodes_falsenodeids", 3, (int64_t[]){2, 0, 0});
    nc_ints(&c, "class_treeids", 2, (int64_t[]){0, 0});
    nc_ints(&c, "class_nodeids", 2, (int64_t[]){1, 2});
    nc_ints(&c, "class_ids", 2, (int64_t[]){0, 1});
    nc_floats(&c, "class_weights", 2, (float[]){1, 1});
    nc_ints(&c, "classlabels_int64s", 2, (int64_t[]){7, 8});
    return c;
}

Test(ml, tree_classifier_walks_to_the_leaf)
{
    node_case c = stump((int64_t[]){1, 0, 0});
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 2, (int64_t[]){7, 8});
    expect_f32(&c.out[1], 4, (float[]){1, 0, 0, 1}, 1e-6);
    nc_free(&c);
}

Test(ml, tree_classifier_refuses_cycles_and_missing_nodes)
{
    node_case c = stump((int64_t[]){0, 0, 0}); /* the root's true branch is itself */
    expect_error(nc_build_run(&c, 2), RN_INVALID_ARG, "no leaf");
    nc_free(&c);
    c = stump((int64_t[]){9, 0, 0});
    expect_error(nc_build_run(&c, 2), RN_INVALID_ARG, "no node 9");
    nc_free(&c);
}

Test(ml, label_encoder_maps_and_defaults)
{
    static const char *const keys[] = {"a", "b"};
    const char *x[] = {"b", "z", "a"};
    node_case c = ml_case("LabelEncoder");
    nc_input(&c, RN_STRING, 1, (int64_t[]){3}, x, false);
    nc_strings(&c, "keys_strings", 2, keys);
    nc_ints(&c, "values_int64s", 2, (int64_t[]){5, 6});
    nc_int(&c, "default_int64", 42);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 3, (int64_t[]){6, 42, 5});
    nc_free(&c);
}

Test(ml, preprocessing_values)
{
    /* Scaler: (x - 1) * 2; Normalizer L2 of [3, 4]: [0.6, 0.8];
     * Imputer: NaN -> 9; Binarizer at 1: [0, 1] */
    static const int64_t d12[] = {1, 2};
    node_case c = ml_case("Scaler");
    nc_f32(&c, 2, d12, (float[]){3, 4});
    nc_floats(&c, "offset", 1, (float[]){1});
    nc_floats(&c, "scale", 1, (float[]){2});
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){4, 6}, 1e-6);
    nc_free(&c);
    c = ml_case("Normalizer");
    nc_f32(&c, 2, d12, (float[]){3, 4});
    nc_string(&c, "norm", "L2");
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.6f, 0.8f}, 1e-6);
    nc_free(&c);
    c = ml_case("Imputer");
    nc_f32(&c, 2, d12, (float[]){NAN, 4});
    nc_floats(&c, "imputed_value_floats", 1, (float[]){9});
    nc_float(&c, "replaced_value_float", NAN);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){9, 4}, 1e-6);
    nc_free(&c);
    c = ml_case("Binarizer");
    nc_f32(&c, 2, d12, (float[]){1, 4});
    nc_float(&c, "threshold", 1.0f);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0, 1}, 0);
    nc_free(&c);
}

Test(ml, bad_attributes_are_errors)
{
    static const int64_t d13[] = {1, 3};
    node_case c = ml_case("Scaler");
    nc_f32(&c, 2, d13, (float[]){3, 4, 5});
    nc_floats(&c, "offset", 2, (float[]){1, 2});
    expect_error(nc_build_run(&c, 1), RN_SHAPE_MISMATCH, "offset");
    nc_free(&c);
    c = ml_case("OneHotEncoder");
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){1, 5}, false);
    nc_ints(&c, "cats_int64s", 2, (int64_t[]){1, 2});
    nc_int(&c, "zeros", 0);
    expect_error(nc_build_run(&c, 1), RN_INVALID_ARG, "no category");
    nc_free(&c);
}
