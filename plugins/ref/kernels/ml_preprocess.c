/* REF Scaler, Normalizer, Binarizer, Imputer and OneHotEncoder
 * (ai.onnx.ml), as ONNX Runtime computes them:
 *   Scaler:     Y = (X - offset) * scale, per column (or one of each), f32
 *   Normalizer: each row divided by its MAX (largest value), L1 (sum of
 *               absolute values) or L2 norm, f32; a row whose divisor is 0
 *               is copied
 *   Binarizer:  Y = X > threshold ? 1 : 0, in X's type
 *   Imputer:    entries equal to replaced_value_float / _int64 (NaN matches
 *               NaN) become imputed_value_floats / _int64s (per column, or
 *               one for all)
 *   OneHotEncoder: Y[..., k] = 1 where X equals category k (cats_int64s,
 *               numbers compared as int64, or cats_strings); a value of no
 *               category is a row of zeros, or an error when zeros = 0. */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/ml.h"

static bool numeric_supports(const graph_node *node, const char **why)
{
    return ref_ml_supports_numeric(node, why);
}

/* Input X and output Y of the same element count. */
static rn_status x_and_y(plugin_kernel_args *args, const graph_tensor **x, graph_tensor **y)
{
    *x = &args->inputs[0];
    rn_status st = ref_contrib_output(args, 0, y);
    if (st == RN_OK && (*y == NULL || graph_tensor_count(*y) < graph_tensor_count(*x)))
        st = ref_contrib_error(args->node, RN_INTERNAL, "Y is smaller than X");
    return st;
}

static rn_status scaler_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x;
    graph_tensor *y;
    rn_status st = x_and_y(args, &x, &y);
    if (st != RN_OK)
        return st;
    const float *off, *sc;
    int n_off = graph_node_attr_floats(node, "offset", &off);
    int n_sc = graph_node_attr_floats(node, "scale", &sc);
    int64_t c = x->rank > 0 ? x->dims[x->rank - 1] : 1;
    if ((n_off != 1 && n_off != c && n_off != 0) || (n_sc != 1 && n_sc != c && n_sc != 0))
        return ref_contrib_error(node, RN_SHAPE_MISMATCH,
                                 "offset (%d) and scale (%d) must hold 1 or %lld values", n_off,
                                 n_sc, (long long)c);
    size_t n = graph_tensor_count(x);
    for (size_t i = 0; i < n; i++) {
        size_t k = c > 0 ? i % (size_t)c : 0;
        float o = n_off == 0 ? 0.0f : off[n_off == 1 ? 0 : k];
        float s = n_sc == 0 ? 1.0f : sc[n_sc == 1 ? 0 : k];
        ((float *)y->data)[i] = ((float)ref_ml_at(x, i) - o) * s;
    }
    return RN_OK;
}

static rn_status normalizer_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x;
    graph_tensor *y;
    rn_status st = x_and_y(args, &x, &y);
    int64_t rows, cols;
    if (st != RN_OK || (st = ref_ml_rows(node, x, &rows, &cols)) != RN_OK)
        return st;
    const graph_attr *a = graph_node_attr(node, "norm");
    const char *norm = a != NULL && a->s != NULL ? a->s : "MAX";
    int kind = strcmp(norm, "MAX") == 0  ? 0
               : strcmp(norm, "L1") == 0 ? 1
               : strcmp(norm, "L2") == 0 ? 2
                                         : -1;
    if (kind < 0)
        return ref_contrib_error(node, RN_INVALID_ARG, "norm '%s' is not MAX, L1 or L2", norm);
    float *yd = y->data;
    for (int64_t r = 0; r < rows; r++) {
        float d = kind == 0 ? -INFINITY : 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            float v = (float)ref_ml_at(x, (size_t)(r * cols + c));
            d = kind == 0 ? (v > d ? v : d) : kind == 1 ? d + fabsf(v) : d + v * v;
        }
        if (kind == 2)
            d = sqrtf(d);
        for (int64_t c = 0; c < cols; c++) {
            float v = (float)ref_ml_at(x, (size_t)(r * cols + c));
            yd[r * cols + c] = d != 0.0f ? v / d : v;
        }
    }
    return RN_OK;
}

static bool binarizer_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] != NULL ? node->inputs[0]->type : RN_UNDEFINED;
    if (t != RN_F32 && t != RN_F64) {
        *why = "X must be f32 or f64";
        return false;
    }
    return true;
}

static rn_status binarizer_run(plugin_kernel_args *args)
{
    const graph_tensor *x;
    graph_tensor *y;
    rn_status st = x_and_y(args, &x, &y);
    if (st != RN_OK)
        return st;
    double th = graph_node_attr_float(args->node, "threshold", 0.0f);
    size_t n = graph_tensor_count(x);
    for (size_t i = 0; i < n; i++) {
        bool on = ref_ml_at(x, i) > th;
        if (x->type == RN_F64)
            ((double *)y->data)[i] = on;
        else
            ((float *)y->data)[i] = on;
    }
    return RN_OK;
}

static bool imputer_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] != NULL ? node->inputs[0]->type : RN_UNDEFINED;
    if (t != RN_F32 && t != RN_I64) {
        *why = "X must be f32 or i64";
        return false;
    }
    return true;
}

static rn_status imputer_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x;
    graph_tensor *y;
    rn_status st = x_and_y(args, &x, &y);
    if (st != RN_OK)
        return st;
    const float *fv;
    const int64_t *iv;
    int nf = graph_node_attr_floats(node, "imputed_value_floats", &fv);
    int ni = graph_node_attr_ints(node, "imputed_value_int64s", &iv);
    int nv = x->type == RN_F32 ? nf : ni;
    int64_t c = x->rank > 0 ? x->dims[x->rank - 1] : 1;
    if (nv != 1 && nv != c)
        return ref_contrib_error(node, RN_INVALID_ARG,
                                 "imputed values for %s must hold 1 or %lld values, not %d",
                                 rn_element_type_name(x->type), (long long)c, nv);
    float rf = graph_node_attr_float(node, "replaced_value_float", 0.0f);
    int64_t ri = graph_node_attr_int(node, "replaced_value_int64", 0);
    size_t n = graph_tensor_count(x);
    for (size_t i = 0; i < n; i++) {
        size_t k = nv == 1 || c <= 0 ? 0 : i % (size_t)c;
        if (x->type == RN_F32) {
            float v = ((const float *)x->data)[i];
            bool hit = isnan(rf) ? isnan(v) : v == rf;
            ((float *)y->data)[i] = hit ? fv[k] : v;
        } else {
            int64_t v = ((const int64_t *)x->data)[i];
            ((int64_t *)y->data)[i] = v == ri ? iv[k] : v;
        }
    }
    return RN_OK;
}

static bool one_hot_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] != NULL ? node->inputs[0]->type : RN_UNDEFINED;
    if (!ref_ml_numeric(t) && t != RN_STRING) {
        *why = "X must be numeric or string";
        return false;
    }
    return true;
}

static rn_status one_hot_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    rn_status st = ref_contrib_output(args, 0, &y);
    if (st != RN_OK || y == NULL)
        return st;
    const int64_t *ci;
    int n_int = graph_node_attr_ints(node, "cats_int64s", &ci);
    const graph_attr *cs = graph_node_attr(node, "cats_strings");
    bool strings = x->type == RN_STRING;
    int cats = strings ? (cs != NULL ? cs->count : 0) : n_int;
    size_t n = graph_tensor_count(x);
    if (cats == 0 || graph_tensor_count(y) != n * (size_t)cats)
        return ref_contrib_error(node, RN_INVALID_ARG, "no categories for %s input",
                                 rn_element_type_name(x->type));
    bool zeros = graph_node_attr_int(node, "zeros", 1) != 0;
    float *yd = y->data;
    memset(yd, 0, n * (size_t)cats * sizeof *yd);
    for (size_t i = 0; i < n; i++) {
        int hit = -1;
        for (int k = 0; k < cats && hit < 0; k++) {
            if (strings) {
                const char *s = ((char *const *)x->data)[i];
                hit = strcmp(s != NULL ? s : "", cs->strings[k]) == 0 ? k : -1;
            } else {
                hit = (int64_t)ref_ml_at(x, i) == ci[k] ? k : -1;
            }
        }
        if (hit >= 0)
            yd[i * (size_t)cats + (size_t)hit] = 1.0f;
        else if (!zeros)
            return ref_contrib_error(node, RN_INVALID_ARG,
                                     "element %zu is no category, and zeros is 0", i);
    }
    return RN_OK;
}

#define ML_KERNEL(sym, op, sup, fn)                                                                \
    const plugin_kernel sym = {                                                                    \
        .domain = "ai.onnx.ml",                                                                    \
        .op_type = op,                                                                             \
        .impl_type = "ref",                                                                        \
        .supports = sup,                                                                           \
        .run = fn,                                                                                 \
    }

ML_KERNEL(ref_kernel_ml_scaler, "Scaler", numeric_supports, scaler_run);
ML_KERNEL(ref_kernel_ml_normalizer, "Normalizer", numeric_supports, normalizer_run);
ML_KERNEL(ref_kernel_ml_binarizer, "Binarizer", binarizer_supports, binarizer_run);
ML_KERNEL(ref_kernel_ml_imputer, "Imputer", imputer_supports, imputer_run);
ML_KERNEL(ref_kernel_ml_one_hot_encoder, "OneHotEncoder", one_hot_supports, one_hot_run);
