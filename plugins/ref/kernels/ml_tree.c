/* REF TreeEnsembleClassifier, TreeEnsembleRegressor (ai.onnx.ml opsets 1
 * and 3) and TreeEnsemble (opset 5), as ONNX's reference evaluates them.
 *
 * Opsets 1 and 3 list nodes by (tree id, node id): each row walks every
 * tree from its first node, comparing X[feature] with the node's value
 * (BRANCH_LEQ, _LT, _GTE, _GT, _EQ, _NEQ; a NaN goes the way
 * nodes_missing_value_tracks_true says) until a LEAF, whose class or target
 * weights are added up. The classifier adds base_values, handles the binary
 * forms (one class id), applies post_transform and labels each row with the
 * class of the highest score; the regressor aggregates (SUM, AVERAGE, MIN,
 * MAX), then adds base_values. Opset 5 stores trees by index (tree_roots,
 * leaves apart, modes as a u8 tensor, MEMBER sets in membership_values) and
 * computes in X's type. A walk that does not reach a leaf within the node
 * count, or a node id no node has, is an error naming the node. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/ml.h"

enum { LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF };

static int mode_of(const char *s)
{
    static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT",  "BRANCH_GTE",    "BRANCH_GT",
                                        "BRANCH_EQ",  "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
    for (int i = 0; i < 8; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static bool compare(int mode, double x, double th)
{
    switch (mode) {
    case LEQ:
        return x <= th;
    case LT:
        return x < th;
    case GTE:
        return x >= th;
    case GT:
        return x > th;
    case EQ:
        return x == th;
    default:
        return x != th;
    }
}

/* ---- opsets 1 and 3 ---- */

typedef struct key {
    int64_t tree, node;
    int index;
} key;

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->index - y->index;
}

/* The first entry of keys[0..n) (sorted) for (tree, node), or -1. */
static int find(const key *keys, int n, int64_t tree, int64_t node)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (keys[mid].tree < tree || (keys[mid].tree == tree && keys[mid].node < node))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo].tree == tree && keys[lo].node == node ? lo : -1;
}

typedef struct ensemble {
    int n;
    const int64_t *tree, *node, *feature, *yes, *no, *missing;
    int n_missing;
    int *mode;
    double *value;
    key *nodes;   /* sorted node keys */
    int n_trees;  /* distinct tree ids */
    int *roots;   /* first node index of each tree */
    key *weights; /* sorted (tree, node) -> weight entry */
    int n_weights;
    const int64_t *weight_id;
    double *weight;
} ensemble;

static void ensemble_free(ensemble *e)
{
    free(e->mode);
    free(e->value);
    free(e->nodes);
    free(e->roots);
    free(e->weights);
    free(e->weight);
}

/* Reads the node and weight attributes; `prefix` is "class" or "target". */
static rn_status ensemble_read(const graph_node *node, const char *prefix, ensemble *e)
{
    memset(e, 0, sizeof *e);
    e->n = graph_node_attr_ints(node, "nodes_treeids", &e->tree);
    int n_values;
    char name[64];
    rn_status st = ref_ml_floats(node, "nodes_values", &e->value, &n_values);
    if (st != RN_OK)
        return st;
    const graph_attr *modes = graph_node_attr(node, "nodes_modes");
    if (graph_node_attr_ints(node, "nodes_nodeids", &e->node) != e->n ||
        graph_node_attr_ints(node, "nodes_featureids", &e->feature) != e->n ||
        graph_node_attr_ints(node, "nodes_truenodeids", &e->yes) != e->n ||
        graph_node_attr_ints(node, "nodes_falsenodeids", &e->no) != e->n || n_values != e->n ||
        modes == NULL || modes->count != e->n || e->n == 0)
        return ref_contrib_error(node, RN_INVALID_ARG,
                                 "the nodes_* attributes must all list the same nodes");
    e->n_missing = graph_node_attr_ints(node, "nodes_missing_value_tracks_true", &e->missing);
    snprintf(name, sizeof name, "%s_treeids", prefix);
    const int64_t *wt, *wn;
    e->n_weights = graph_node_attr_ints(node, name, &wt);
    snprintf(name, sizeof name, "%s_nodeids", prefix);
    int nwn = graph_node_attr_ints(node, name, &wn);
    snprintf(name, sizeof name, "%s_ids", prefix);
    int nwi = graph_node_attr_ints(node, name, &e->weight_id);
    snprintf(name, sizeof name, "%s_weights", prefix);
    int nww;
    if ((st = ref_ml_floats(node, name, &e->weight, &nww)) != RN_OK)
        return st;
    if (nwn != e->n_weights || nwi != e->n_weights || nww != e->n_weights)
        return ref_contrib_error(node, RN_INVALID_ARG,
                                 "the %s_* attributes must all list the same leaves", prefix);
    e->mode = malloc((size_t)e->n * sizeof *e->mode);
    e->nodes = malloc((size_t)e->n * sizeof *e->nodes);
    e->roots = malloc((size_t)e->n * sizeof *e->roots);
    e->weights = malloc((size_t)(e->n_weights + 1) * sizeof *e->weights);
    if (e->mode == NULL || e->nodes == NULL || e->roots == NULL || e->weights == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < e->n; i++) {
        if ((e->mode[i] = mode_of(modes->strings[i])) < 0 || e->mode[i] == MEMBER)
            return ref_contrib_error(node, RN_INVALID_ARG, "node mode '%s' is not known",
                                     modes->strings[i]);
        e->nodes[i] = (key){e->tree[i], e->node[i], i};
    }
    qsort(e->nodes, (size_t)e->n, sizeof *e->nodes, key_cmp);
    for (int i = 0; i < e->n; i++)
        if (i == 0 || e->nodes[i].tree != e->nodes[i - 1].tree)
            e->roots[e->n_trees++] = e->nodes[i].index;
    /* a tree's root is its node listed first */
    for (int t = 0; t < e->n_trees; t++)
        for (int i = 0; i < e->n; i++)
            if (e->tree[i] == e->tree[e->roots[t]]) {
                e->roots[t] = i < e->roots[t] ? i : e->roots[t];
                break;
            }
    for (int i = 0; i < e->n_weights; i++)
        e->weights[i] = (key){wt[i], wn[i], i};
    qsort(e->weights, (size_t)e->n_weights, sizeof *e->weights, key_cmp);
    return RN_OK;
}

/* The leaf index that row x reaches in tree t. */
static rn_status walk(const graph_node *node, const ensemble *e, int t, const graph_tensor *x,
                      int64_t row, int64_t cols, int *leaf)
{
    int i = e->roots[t];
    for (int steps = 0; e->mode[i] != LEAF; steps++) {
        if (steps > e->n || e->feature[i] < 0 || e->feature[i] >= cols)
            return ref_contrib_error(node, RN_INVALID_ARG,
                                     "tree %lld: a walk from its root reaches no leaf (or a "
                                     "feature beyond X's %lld columns)",
                                     (long long)e->tree[i], (long long)cols);
        double v = ref_ml_at(x, (size_t)(row * cols + e->feature[i]));
        bool yes = isnan(v) ? (i < e->n_missing && e->missing[i] != 0)
                            : compare(e->mode[i], v, e->value[i]);
        int64_t next = yes ? e->yes[i] : e->no[i];
        int k = find(e->nodes, e->n, e->tree[i], next);
        if (k < 0)
            return ref_contrib_error(node, RN_INVALID_ARG, "tree %lld has no node %lld",
                                     (long long)e->tree[i], (long long)next);
        i = e->nodes[k].index;
    }
    *leaf = i;
    return RN_OK;
}

enum { AVERAGE, SUM, MIN, MAX };

static int aggregate_of(const graph_node *node)
{
    const graph_attr *a = graph_node_attr(node, "aggregate_function");
    if (a == NULL)
        return SUM;
    if (a->type == GRAPH_ATTR_INT)
        return a->i >= AVERAGE && a->i <= MAX ? (int)a->i : -1;
    static const char *const names[] = {"AVERAGE", "SUM", "MIN", "MAX"};
    for (int i = 0; i < 4; i++)
        if (a->s != NULL && strcmp(a->s, names[i]) == 0)
            return i;
    return -1;
}

static void aggregate(int agg, double *acc, double w)
{
    if (agg == MIN)
        *acc = w < *acc ? w : *acc;
    else if (agg == MAX)
        *acc = w > *acc ? w : *acc;
    else
        *acc += w;
}

static double aggregate_start(int agg)
{
    return agg == MIN ? FLT_MAX : agg == MAX ? -FLT_MAX : 0.0;
}

/* Walks row r of x through every tree and aggregates the weights of the
 * leaves reached into acc[] (indexed by class or target id). */
static rn_status score_row(const graph_node *node, const ensemble *e, const graph_tensor *x,
                           int64_t r, int64_t cols, int agg, double *acc)
{
    for (int t = 0; t < e->n_trees; t++) {
        int leaf = 0;
        rn_status st = walk(node, e, t, x, r, cols, &leaf);
        if (st != RN_OK)
            return st;
        for (int w = find(e->weights, e->n_weights, e->tree[leaf], e->node[leaf]);
             w >= 0 && w < e->n_weights && e->weights[w].tree == e->tree[leaf] &&
             e->weights[w].node == e->node[leaf];
             w++)
            aggregate(agg, &acc[e->weight_id[e->weights[w].index]], e->weight[e->weights[w].index]);
    }
    return RN_OK;
}

static bool tree_supports(const graph_node *node, const char **why)
{
    if (!ref_ml_supports_numeric(node, why))
        return false;
    if (ref_ml_post_transform(node) < 0) {
        *why = "post_transform is not known";
        return false;
    }
    return true;
}

static rn_status tree_classifier_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    int64_t rows, cols;
    ensemble e;
    rn_status st = ref_ml_rows(node, x, &rows, &cols);
    if (st == RN_OK)
        st = ensemble_read(node, "class", &e);
    else
        memset(&e, 0, sizeof e);
    const int64_t *ints;
    int n_ints = graph_node_attr_ints(node, "classlabels_int64s", &ints);
    const graph_attr *sa = graph_node_attr(node, "classlabels_strings");
    int labels = n_ints > 0 ? n_ints : (sa != NULL ? sa->count : 0);
    int64_t width = labels == 1 ? 2 : labels;
    double *base = NULL;
    int n_base = 0;
    if (st == RN_OK)
        st = ref_ml_floats(node, "base_values", &base, &n_base);
    bool binary = true;
    for (int i = 1; st == RN_OK && i < e.n_weights; i++)
        binary &= e.weight_id[i] == e.weight_id[0];
    for (int i = 0; st == RN_OK && i < e.n_weights; i++)
        if (e.weight_id[i] < 0 || e.weight_id[i] >= width)
            st = ref_contrib_error(node, RN_INVALID_ARG, "class id %lld is not below %lld",
                                   (long long)e.weight_id[i], (long long)width);
    float *s = st == RN_OK ? calloc((size_t)(rows * width + 1), sizeof *s) : NULL;
    int64_t *best = st == RN_OK ? malloc((size_t)(rows + 1) * sizeof *best) : NULL;
    if (st == RN_OK && (s == NULL || best == NULL))
        st = ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    int pt = ref_ml_post_transform(node);
    for (int64_t r = 0; st == RN_OK && r < rows; r++) {
        float *row = s + r * width;
        double acc[width > 0 ? width : 1];
        for (int64_t k = 0; k < width; k++)
            acc[k] = k < n_base ? base[k] : 0.0;
        st = score_row(node, &e, x, r, cols, SUM, acc);
        for (int64_t k = 0; k < width; k++)
            row[k] = (float)acc[k];
        if (binary && width == 2) { /* the one class's score, and its complement */
            row[1] = row[0];
            row[0] = pt == REF_ML_NONE || pt == REF_ML_PROBIT ? 1 - row[1] : -row[1];
        }
        ref_ml_transform_row(pt, row, width);
        int64_t k = 0;
        for (int64_t j = 1; j < width; j++)
            k = row[j] > row[k] ? j : k;
        best[r] = labels == 1 ? (k == 1 ? 0 : -1) : k;
    }
    graph_tensor *z;
    if (st == RN_OK && (st = ref_contrib_output(args, 1, &z)) == RN_OK && z != NULL)
        memcpy(z->data, s, (size_t)(rows * width) * sizeof *s);
    if (st == RN_OK && labels == 1) { /* one label: it or 0 */
        for (int64_t r = 0; r < rows; r++)
            best[r] = best[r] == 0 ? (n_ints > 0 ? ints[0] : 0) : 0;
        st = ref_ml_labels(args, NULL, NULL, best, rows);
    } else if (st == RN_OK) {
        st = ref_ml_labels(args, n_ints > 0 ? ints : NULL, sa != NULL ? sa->strings : NULL, best,
                           rows);
    }
    free(s);
    free(best);
    free(base);
    ensemble_free(&e);
    return st;
}

static bool tree_regressor_supports(const graph_node *node, const char **why)
{
    if (!ref_ml_supports_numeric(node, why))
        return false;
    if (ref_ml_post_transform(node) != REF_ML_NONE || aggregate_of(node) < 0) {
        *why = "post_transform other than NONE, or an unknown aggregate_function";
        return false;
    }
    return true;
}

static rn_status tree_regressor_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    int64_t rows, cols, targets = graph_node_attr_int(node, "n_targets", 1);
    int agg = aggregate_of(node);
    ensemble e;
    rn_status st = ref_ml_rows(node, x, &rows, &cols);
    if (st == RN_OK)
        st = ensemble_read(node, "target", &e);
    else
        memset(&e, 0, sizeof e);
    double *base = NULL;
    int n_base = 0;
    if (st == RN_OK)
        st = ref_ml_floats(node, "base_values", &base, &n_base);
    for (int i = 0; st == RN_OK && i < e.n_weights; i++)
        if (e.weight_id[i] < 0 || e.weight_id[i] >= targets)
            st = ref_contrib_error(node, RN_INVALID_ARG, "target id %lld is not below %lld",
                                   (long long)e.weight_id[i], (long long)targets);
    graph_tensor *y = NULL;
    if (st == RN_OK && (st = ref_contrib_output(args, 0, &y)) == RN_OK &&
        (y == NULL || (int64_t)graph_tensor_count(y) != rows * targets))
        st = ref_contrib_error(node, RN_SHAPE_MISMATCH, "Y must be [N, n_targets]");
    for (int64_t r = 0; st == RN_OK && r < rows; r++) {
        double acc[targets > 0 ? targets : 1];
        for (int64_t k = 0; k < targets; k++)
            acc[k] = aggregate_start(agg);
        st = score_row(node, &e, x, r, cols, agg, acc);
        for (int64_t k = 0; k < targets; k++) {
            double v = agg == AVERAGE && e.n_trees > 0 ? acc[k] / e.n_trees : acc[k];
            ((float *)y->data)[r * targets + k] = (float)(v + (k < n_base ? base[k] : 0.0));
        }
    }
    free(base);
    ensemble_free(&e);
    return st;
}

const plugin_kernel ref_kernel_ml_tree_classifier = {
    .domain = "ai.onnx.ml",
    .op_type = "TreeEnsembleClassifier",
    .impl_type = "ref",
    .supports = tree_supports,
    .run = tree_classifier_run,
};

const plugin_kernel ref_kernel_ml_tree_regressor = {
    .domain = "ai.onnx.ml",
    .op_type = "TreeEnsembleRegressor",
    .impl_type = "ref",
    .supports = tree_regressor_supports,
    .run = tree_regressor_run,
};

/* ---- TreeEnsemble (opset 5) ---- */

static bool tree5_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] != NULL ? node->inputs[0]->type : RN_UNDEFINED;
    if (t != RN_F32 && t != RN_F64) {
        *why = "X must be f32 or f64";
        return false;
    }
    if (ref_ml_post_transform(node) < 0 || aggregate_of(node) < 0) {
        *why = "unknown post_transform or aggregate_function";
        return false;
    }
    return true;
}

/* Element i of a tensor attribute as a double (f32, f64, u8). */
static double attr_at(const graph_tensor *t, size_t i)
{
    return t->type == RN_U8 ? ((const uint8_t *)t->data)[i] : ref_ml_at(t, i);
}

static rn_status tree5_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    const int64_t *feat, *yes, *no, *yes_leaf, *no_leaf, *targetids, *roots, *missing;
    int n = graph_node_attr_ints(node, "nodes_featureids", &feat);
    int n_roots = graph_node_attr_ints(node, "tree_roots", &roots);
    int n_leaves = graph_node_attr_ints(node, "leaf_targetids", &targetids);
    int n_missing = graph_node_attr_ints(node, "nodes_missing_value_tracks_true", &missing);
    const graph_attr *splits = graph_node_attr(node, "nodes_splits");
    const graph_attr *modes = graph_node_attr(node, "nodes_modes");
    const graph_attr *weights = graph_node_attr(node, "leaf_weights");
    const graph_attr *members = graph_node_attr(node, "membership_values");
    int64_t targets = graph_node_attr_int(node, "n_targets", 1), rows, cols;
    int agg = aggregate_of(node), pt = ref_ml_post_transform(node);
    rn_status st = ref_ml_rows(node, x, &rows, &cols);
    if (st != RN_OK)
        return st;
    if (graph_node_attr_ints(node, "nodes_truenodeids", &yes) != n ||
        graph_node_attr_ints(node, "nodes_falsenodeids", &no) != n ||
        graph_node_attr_ints(node, "nodes_trueleafs", &yes_leaf) != n ||
        graph_node_attr_ints(node, "nodes_falseleafs", &no_leaf) != n || splits == NULL ||
        splits->t == NULL || graph_tensor_count(splits->t) != (size_t)n || modes == NULL ||
        modes->t == NULL || graph_tensor_count(modes->t) != (size_t)n || weights == NULL ||
        weights->t == NULL || graph_tensor_count(weights->t) != (size_t)n_leaves)
        return ref_contrib_error(node, RN_INVALID_ARG,
                                 "the nodes_* and leaf_* attributes must list the same nodes "
                                 "and leaves");
    /* where each MEMBER node's set starts in membership_values */
    size_t *set_start = calloc((size_t)n + 1, sizeof *set_start);
    if (set_start == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    size_t pos = 0, n_members = members != NULL && members->t ? graph_tensor_count(members->t) : 0;
    for (int i = 0; i < n && st == RN_OK; i++) {
        if (attr_at(modes->t, (size_t)i) != MEMBER)
            continue;
        set_start[i] = pos;
        while (pos < n_members && !isnan(attr_at(members->t, pos)))
            pos++;
        if (pos++ > n_members)
            st = ref_contrib_error(node, RN_INVALID_ARG,
                                   "membership_values lacks the set of node %d", i);
    }
    graph_tensor *y = NULL;
    if (st == RN_OK && (st = ref_contrib_output(args, 0, &y)) == RN_OK &&
        (y == NULL || (int64_t)graph_tensor_count(y) != rows * targets))
        st = ref_contrib_error(node, RN_SHAPE_MISMATCH, "Y must be [N, n_targets]");
    for (int64_t r = 0; st == RN_OK && r < rows; r++) {
        double acc[targets > 0 ? targets : 1];
        for (int64_t k = 0; k < targets; k++)
            acc[k] = aggregate_start(agg);
        for (int t = 0; st == RN_OK && t < n_roots; t++) {
            int64_t i = roots[t];
            bool leaf = i >= 0 && i < n && yes_leaf[i] && no_leaf[i] && yes[i] == no[i];
            if (leaf)
                i = yes[i];
            for (int steps = 0; !leaf; steps++) {
                if (i < 0 || i >= n || steps > n || feat[i] < 0 || feat[i] >= cols) {
                    st = ref_contrib_error(node, RN_INVALID_ARG,
                                           "tree %d: a walk reaches no leaf or a feature beyond "
                                           "X's columns",
                                           t);
                    break;
                }
                double v = ref_ml_at(x, (size_t)(r * cols + feat[i]));
                int mode = (int)attr_at(modes->t, (size_t)i);
                bool go;
                if (isnan(v)) {
                    go = i < n_missing && missing[i] != 0;
                } else if (mode == MEMBER) {
                    go = false;
                    for (size_t m = set_start[i]; m < n_members; m++) {
                        double mv = attr_at(members->t, m);
                        if (isnan(mv))
                            break;
                        go |= mv == v;
                    }
                } else {
                    go = compare(mode, v, attr_at(splits->t, (size_t)i));
                }
                leaf = go ? yes_leaf[i] : no_leaf[i];
                i = go ? yes[i] : no[i];
            }
            if (st != RN_OK)
                break;
            if (i < 0 || i >= n_leaves || targetids[i] < 0 || targetids[i] >= targets) {
                st = ref_contrib_error(node, RN_INVALID_ARG,
                                       "tree %d reaches leaf %lld, which "
                                       "is not one",
                                       t, (long long)i);
                break;
            }
            aggregate(agg, &acc[targetids[i]], attr_at(weights->t, (size_t)i));
        }
        float row[targets > 0 ? targets : 1];
        for (int64_t k = 0; st == RN_OK && k < targets; k++) {
            double v = agg == AVERAGE && n_roots > 0 ? acc[k] / n_roots : acc[k];
            row[k] = (float)v;
            if (y->type == RN_F64)
                ((double *)y->data)[r * targets + k] = v;
        }
        if (st == RN_OK && y->type == RN_F32) {
            ref_ml_transform_row(pt, row, targets);
            memcpy((float *)y->data + r * targets, row, (size_t)targets * sizeof *row);
        }
    }
    free(set_start);
    return st;
}

const plugin_kernel ref_kernel_ml_tree_ensemble = {
    .domain = "ai.onnx.ml",
    .op_type = "TreeEnsemble",
    .impl_type = "ref",
    .supports = tree5_supports,
    .run = tree5_run,
};
