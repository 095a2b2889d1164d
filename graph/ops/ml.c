/* ai.onnx.ml op schemas that scikit-learn exports need (skl2onnx):
 * LinearClassifier, LinearRegressor, TreeEnsembleClassifier,
 * TreeEnsembleRegressor, TreeEnsemble (opset 5), LabelEncoder, Scaler,
 * Normalizer, Binarizer, Imputer, OneHotEncoder and ZipMap (which makes a
 * sequence of maps) (ArrayFeatureExtractor lives with the indexing ops).
 *
 * A 2-D input X is [N, C]; a 1-D one is a single row [C] (N = 1), as ONNX
 * Runtime reads it. */
#include <string.h>

#include "graph/ops.h"

static void set_out(graph_port *out, int n_out, int i, rn_element_type t, const graph_shape *s)
{
    if (i < n_out && out[i].present) {
        out[i].type = t;
        out[i].shape = *s;
    }
}

/* The rows N of X (dynamic when unknown); an X of rank above 2 is refused. */
static rn_status rows_of(const graph_node *node, const graph_port *x, int64_t *rows)
{
    *rows = RN_DIM_DYNAMIC;
    if (x->shape.rank > 2 || x->shape.rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): X has rank %d; 1 or 2 expected",
                            node->name, node->op_type, x->shape.rank);
    if (x->shape.rank == 1)
        *rows = 1;
    else if (x->shape.rank == 2)
        *rows = x->shape.dims[0];
    return RN_OK;
}

static int attr_count(const graph_node *node, const char *name)
{
    const graph_attr *a = graph_node_attr(node, name);
    if (a == NULL)
        return 0;
    if (a->t != NULL)
        return (int)graph_tensor_count(a->t);
    return a->count;
}

/* Y [N] labels (int64, or string with classlabels_strings) and Z [N, E]. */
static void set_classifier_outs(const graph_node *node, int64_t rows, int64_t e, graph_port *out,
                                int n_out)
{
    rn_element_type label = attr_count(node, "classlabels_strings") > 0 ? RN_STRING : RN_I64;
    graph_shape y = {.rank = 1, .dims = {rows}}, z = {.rank = 2, .dims = {rows, e}};
    set_out(out, n_out, 0, label, &y);
    set_out(out, n_out, 1, RN_F32, &z);
}

static int class_labels(const graph_node *node)
{
    int n = attr_count(node, "classlabels_ints") + attr_count(node, "classlabels_int64s");
    return n > 0 ? n : attr_count(node, "classlabels_strings");
}

static rn_status infer_linear_classifier(const graph_node *node, const graph_port *in, int n_in,
                                         graph_port *out, int n_out)
{
    (void)n_in;
    int64_t rows;
    rn_status st = rows_of(node, &in[0], &rows);
    if (st != RN_OK)
        return st;
    int n_int = attr_count(node, "intercepts"), labels = class_labels(node);
    int64_t e = n_int == 1 && labels == 2 ? 2 : (n_int > 0 ? n_int : RN_DIM_DYNAMIC);
    set_classifier_outs(node, rows, e, out, n_out);
    return RN_OK;
}

static rn_status infer_tree_classifier(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    (void)n_in;
    int64_t rows;
    rn_status st = rows_of(node, &in[0], &rows);
    if (st != RN_OK)
        return st;
    int labels = class_labels(node);
    set_classifier_outs(node, rows, labels == 1 ? 2 : labels, out, n_out);
    return RN_OK;
}

/* LinearRegressor, TreeEnsembleRegressor, TreeEnsemble: Y [N, targets]. */
static rn_status infer_regressor(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    (void)n_in;
    int64_t rows;
    rn_status st = rows_of(node, &in[0], &rows);
    if (st != RN_OK)
        return st;
    bool v5 = strcmp(node->op_type, "TreeEnsemble") == 0;
    const char *key = strcmp(node->op_type, "LinearRegressor") == 0 ? "targets" : "n_targets";
    graph_shape y = {.rank = 2, .dims = {rows, graph_node_attr_int(node, key, 1)}};
    set_out(out, n_out, 0, v5 ? in[0].type : RN_F32, &y);
    return RN_OK;
}

/* Scaler, Normalizer: f32 of X's shape; Binarizer, Imputer: X's type too. */
static rn_status infer_elementwise(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    (void)n_in;
    bool keep_type =
        strcmp(node->op_type, "Binarizer") == 0 || strcmp(node->op_type, "Imputer") == 0;
    if (in[0].type == RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): X must be numeric", node->name,
                            node->op_type);
    set_out(out, n_out, 0, keep_type ? in[0].type : RN_F32, &in[0].shape);
    return RN_OK;
}

static rn_status infer_one_hot_encoder(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    (void)n_in;
    int cats = attr_count(node, "cats_int64s") + attr_count(node, "cats_strings");
    if (cats == 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): no categories (cats_int64s or "
                            "cats_strings)",
                            node->name, node->op_type);
    graph_shape y = in[0].shape;
    if (y.rank >= RN_MAX_RANK)
        return rn_set_error(RN_UNSUPPORTED, "node '%s' (%s): X has too high a rank", node->name,
                            node->op_type);
    if (y.rank >= 0)
        y.dims[y.rank++] = cats;
    set_out(out, n_out, 0, RN_F32, &y);
    return RN_OK;
}

/* The element type LabelEncoder's values have. */
static rn_element_type label_encoder_out(const graph_node *node, rn_element_type in)
{
    const graph_attr *vt = graph_node_attr(node, "values_tensor");
    if (vt != NULL && vt->t != NULL)
        return vt->t->type;
    if (graph_node_attr(node, "values_strings") != NULL)
        return RN_STRING;
    if (graph_node_attr(node, "values_int64s") != NULL)
        return RN_I64;
    if (graph_node_attr(node, "values_floats") != NULL)
        return RN_F32;
    /* opset 1: classes_strings maps strings to their index and back */
    return in == RN_STRING ? RN_I64 : in == RN_I64 ? RN_STRING : RN_UNDEFINED;
}

static rn_status infer_label_encoder(const graph_node *node, const graph_port *in, int n_in,
                                     graph_port *out, int n_out)
{
    (void)n_in;
    set_out(out, n_out, 0, label_encoder_out(node, in[0].type), &in[0].shape);
    return RN_OK;
}

/* ZipMap: X [N, C] (or [C]) f32 -> a sequence of N maps from the C class
 * labels (classlabels_strings: string keys; classlabels_int64s: int64) to
 * the row's values. */
static rn_status infer_zipmap(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_in;
    int n_str = attr_count(node, "classlabels_strings"),
        n_int = attr_count(node, "classlabels_int64s");
    if ((n_str > 0) == (n_int > 0))
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): exactly one of classlabels_strings and "
                            "classlabels_int64s must be given",
                            node->name, node->op_type);
    if (in[0].type != RN_UNDEFINED && in[0].type != RN_F32)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): X is %s, expected f32", node->name,
                            node->op_type, rn_element_type_name(in[0].type));
    int64_t rows;
    rn_status st = rows_of(node, &in[0], &rows);
    if (st != RN_OK)
        return st;
    int64_t c = in[0].shape.rank > 0 ? in[0].shape.dims[in[0].shape.rank - 1] : RN_DIM_DYNAMIC;
    int labels = n_str + n_int;
    if (c >= 0 && c != labels)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): X has %lld columns for %d labels",
                            node->name, node->op_type, (long long)c, labels);
    if (n_out > 0 && out[0].present) {
        out[0].kind = GRAPH_KIND_SEQUENCE_MAP;
        out[0].type = RN_F32;
        out[0].shape.rank = -1;
    }
    return RN_OK;
}

/* Each entry: domain, op, input and output counts, the value_inputs mask,
 * the infer function, then the attributes that must have their type. */
/* clang-format off */
#define A(name, t) GRAPH_OPTIONAL(name, t)
#define OP(op, in_lo, in_hi, out_lo, out_hi, fn, ...) \
    {"ai.onnx.ml", op, in_lo, in_hi, out_lo, out_hi, 0, fn, {__VA_ARGS__}}
#define TREE_ATTRS \
    A("nodes_treeids", INTS), A("nodes_nodeids", INTS), A("nodes_featureids", INTS), \
    A("nodes_values", FLOATS), A("nodes_modes", STRINGS), A("nodes_truenodeids", INTS), \
    A("nodes_falsenodeids", INTS), A("nodes_missing_value_tracks_true", INTS), \
    A("base_values", FLOATS), A("post_transform", STRING)
/* clang-format on */

const graph_op_schema graph_ops_ml[] = {
    OP("LinearClassifier", 1, 1, 2, 2, infer_linear_classifier, A("coefficients", FLOATS),
       A("intercepts", FLOATS), A("classlabels_ints", INTS), A("classlabels_strings", STRINGS),
       A("multi_class", INT), A("post_transform", STRING)),
    OP("LinearRegressor", 1, 1, 1, 1, infer_regressor, A("coefficients", FLOATS),
       A("intercepts", FLOATS), A("targets", INT), A("post_transform", STRING)),
    OP("TreeEnsembleClassifier", 1, 1, 2, 2, infer_tree_classifier, TREE_ATTRS,
       A("class_treeids", INTS), A("class_nodeids", INTS), A("class_ids", INTS),
       A("class_weights", FLOATS), A("classlabels_int64s", INTS),
       A("classlabels_strings", STRINGS)),
    OP("TreeEnsembleRegressor", 1, 1, 1, 1, infer_regressor, TREE_ATTRS, A("target_treeids", INTS),
       A("target_nodeids", INTS), A("target_ids", INTS), A("target_weights", FLOATS),
       A("n_targets", INT), A("aggregate_function", STRING)),
    OP("TreeEnsemble", 1, 1, 1, 1, infer_regressor, A("nodes_splits", TENSOR),
       A("nodes_featureids", INTS), A("nodes_modes", TENSOR), A("nodes_truenodeids", INTS),
       A("nodes_falsenodeids", INTS), A("nodes_trueleafs", INTS), A("nodes_falseleafs", INTS),
       A("leaf_targetids", INTS), A("leaf_weights", TENSOR), A("tree_roots", INTS),
       A("post_transform", INT), A("aggregate_function", INT), A("membership_values", TENSOR),
       A("n_targets", INT), A("nodes_missing_value_tracks_true", INTS)),
    OP("LabelEncoder", 1, 1, 1, 1, infer_label_encoder, A("keys_strings", STRINGS),
       A("keys_int64s", INTS), A("keys_floats", FLOATS), A("keys_tensor", TENSOR),
       A("values_strings", STRINGS), A("values_int64s", INTS), A("values_floats", FLOATS),
       A("values_tensor", TENSOR), A("default_string", STRING), A("default_int64", INT),
       A("default_float", FLOAT), A("default_tensor", TENSOR), A("classes_strings", STRINGS)),
    OP("Scaler", 1, 1, 1, 1, infer_elementwise, A("offset", FLOATS), A("scale", FLOATS)),
    OP("Normalizer", 1, 1, 1, 1, infer_elementwise, A("norm", STRING)),
    OP("Binarizer", 1, 1, 1, 1, infer_elementwise, A("threshold", FLOAT)),
    OP("Imputer", 1, 1, 1, 1, infer_elementwise, A("imputed_value_floats", FLOATS),
       A("imputed_value_int64s", INTS), A("replaced_value_float", FLOAT),
       A("replaced_value_int64", INT)),
    OP("OneHotEncoder", 1, 1, 1, 1, infer_one_hot_encoder, A("cats_int64s", INTS),
       A("cats_strings", STRINGS), A("zeros", INT)),
    OP("ZipMap", 1, 1, 1, 1, infer_zipmap, A("classlabels_strings", STRINGS),
       A("classlabels_int64s", INTS)),
    {0},
};
