/* REF kernels of the ai.onnx.ml ops, one node at a time, with values
 * worked out by hand beside each case and the errors bad input gets. Their
 * parity with ONNX Runtime on scikit-learn exports is tests/wild
 * (wild_sklearn_*); ONNX's own ML node tests run in the conformance suite. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
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

/* ZipMap through the generic plan (its output is a sequence of maps, which
 * the kernel hands over with move_output): X [2, 3] -> two maps from the
 * labels to each row. */
static graph_tensor run_zipmap(plan_case *r, graph **gp, graph_attr labels, const float *x)
{
    static const int64_t d23[] = {2, 3};
    graph *g = *gp = pc_graph("main", NULL, 17);
    graph_value *xv = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 2, d23), *z = pc_value(g, "z");
    graph_node *n = pc_node(g, "n", "ZipMap", 1, &xv, 1, &z);
    free(n->domain);
    n->domain = strdup("ai.onnx.ml");
    n->opset = 1;
    pc_attr(n, labels);
    graph_add_output(g, z);
    cr_assert_eq(pc_compile(g, 1, r), RN_OK, "%s", rn_last_error());
    pc_set_input(r, 0, tensor_view(RN_F32, 2, d23, x));
    cr_assert_eq(plugin_request_infer(r->req), RN_OK, "%s", rn_last_error());
    graph_tensor t = pc_output(r, 0);
    cr_assert_eq(t.kind, GRAPH_KIND_SEQUENCE_MAP);
    cr_assert_eq(t.type, RN_F32);
    cr_assert_eq(t.n_items, 2, "one map per row");
    char why[160];
    for (size_t i = 0; i < t.n_items; i++)
        cr_assert(graph_map_check(&t.items[i], why, sizeof why), "map %zu: %s", i, why);
    return t;
}

Test(ml, zipmap_maps_labels_to_each_row)
{
    static const float x[] = {0.1f, 0.2f, 0.7f, 0.5f, 0.25f, 0.25f};
    static const char *const names[] = {"cat", "dog", "eel"};
    plan_case r;
    graph *g;
    graph_tensor t = run_zipmap(&r, &g, attr_strings("classlabels_strings", 3, names), x);
    for (size_t row = 0; row < 2; row++) {
        const graph_tensor *keys = &t.items[row].items[0], *values = &t.items[row].items[1];
        cr_assert_eq(keys->type, RN_STRING);
        cr_assert_eq(keys->dims[0], 3);
        for (int k = 0; k < 3; k++)
            cr_assert_str_eq(((char *const *)keys->data)[k], names[k]);
        expect_f32(values, 3, x + 3 * row, 0);
    }
    pc_free(&r);
    graph_free(g);
    static const int64_t ids[] = {7, -1, 40};
    t = run_zipmap(&r, &g, attr_ints("classlabels_int64s", 3, ids), x);
    expect_i64(&t.items[1].items[0], 3, ids);
    expect_f32(&t.items[1].items[1], 3, x + 3, 0);
    pc_free(&r);
    graph_free(g);
}

Test(ml, zipmap_refuses_what_it_cannot_zip)
{
    /* labels that do not match X's columns, and no labels at all */
    node_case c = ml_case("ZipMap");
    nc_f32(&c, 2, (int64_t[]){1, 2}, (float[]){1, 2});
    nc_ints(&c, "classlabels_int64s", 3, (int64_t[]){1, 2, 3});
    expect_error(nc_build(&c, 1), RN_SHAPE_MISMATCH, "2 columns for 3 labels");
    nc_free(&c);
    c = ml_case("ZipMap");
    nc_f32(&c, 2, (int64_t[]){1, 2}, (float[]){1, 2});
    expect_error(nc_build(&c, 1), RN_INVALID_ARG, "exactly one of");
    nc_free(&c);
    /* i64 X: the schema wants f32 */
    c = ml_case("ZipMap");
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){1, 2}, false);
    nc_ints(&c, "classlabels_int64s", 2, (int64_t[]){1, 2});
    expect_error(nc_build(&c, 1), RN_TYPE_MISMATCH, "expected f32");
    nc_free(&c);
}
