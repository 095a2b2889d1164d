/* Helpers of the REF ai.onnx.ml kernels (kernels/ml.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/ml.h"
#include "plugins/ref/kernels/values.h"

double ref_ml_at(const graph_tensor *t, size_t i)
{
    switch (t->type) {
    case RN_F32:
        return ((const float *)t->data)[i];
    case RN_F64:
        return ((const double *)t->data)[i];
    case RN_I64:
        return (double)((const int64_t *)t->data)[i];
    case RN_I32:
        return ((const int32_t *)t->data)[i];
    default:
        return 0.0;
    }
}

bool ref_ml_numeric(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_I64 || t == RN_I32;
}

bool ref_ml_supports_numeric(const graph_node *node, const char **why)
{
    if (node->n_inputs < 1 || node->inputs[0] == NULL || !ref_ml_numeric(node->inputs[0]->type)) {
        *why = "X must be f32, f64, i64 or i32";
        return false;
    }
    return true;
}

rn_status ref_ml_rows(const graph_node *node, const graph_tensor *x, int64_t *rows, int64_t *cols)
{
    if (x->rank == 1) {
        *rows = 1;
        *cols = x->dims[0];
    } else if (x->rank == 2) {
        *rows = x->dims[0];
        *cols = x->dims[1];
    } else {
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "X has rank %d; 1 or 2 expected",
                                 x->rank);
    }
    return RN_OK;
}

int ref_ml_post_transform(const graph_node *node)
{
    const graph_attr *a = graph_node_attr(node, "post_transform");
    if (a == NULL)
        return REF_ML_NONE;
    if (a->type == GRAPH_ATTR_INT)
        return a->i >= REF_ML_NONE && a->i <= REF_ML_PROBIT ? (int)a->i : -1;
    static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    for (int i = 0; i < 5; i++)
        if (a->s != NULL && strcmp(a->s, names[i]) == 0)
            return i;
    return -1;
}

/* ONNX Runtime's approximation of the inverse error function (probit). */
static float erf_inv(float x)
{
    float sgn = x < 0 ? -1.0f : 1.0f;
    x = (1 - x) * (1 + x);
    float lg = logf(x);
    float v = 2 / (3.14159f * 0.147f) + 0.5f * lg;
    float v2 = 1 / 0.147f * lg;
    float v3 = -v + sqrtf(v * v - v2);
    return sgn * sqrtf(v3);
}

void ref_ml_transform_row(int transform, float *row, int64_t n)
{
    switch (transform) {
    case REF_ML_LOGISTIC:
        for (int64_t j = 0; j < n; j++)
            row[j] = 1.0f / (1.0f + expf(-row[j]));
        break;
    case REF_ML_SOFTMAX:
    case REF_ML_SOFTMAX_ZERO: {
        float top = -INFINITY;
        for (int64_t j = 0; j < n; j++)
            top = row[j] > top ? row[j] : top;
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++) {
            bool zero = transform == REF_ML_SOFTMAX_ZERO && fabsf(row[j]) <= 1e-7f;
            row[j] = zero ? row[j] * expf(-top) : expf(row[j] - top);
            sum += row[j];
        }
        for (int64_t j = 0; j < n; j++)
            row[j] = sum == 0.0 ? 0.5f : (float)(row[j] / sum);
        break;
    }
    case REF_ML_PROBIT:
        for (int64_t j = 0; j < n; j++)
            row[j] = 1.41421356f * erf_inv(row[j] * 2 - 1);
        break;
    default:
        break;
    }
}

rn_status ref_ml_floats(const graph_node *node, const char *name, double **out, int *n)
{
    *out = NULL;
    *n = 0;
    const graph_attr *a = graph_node_attr(node, name);
    char tname[128];
    snprintf(tname, sizeof tname, "%s_as_tensor", name);
    const graph_attr *t = graph_node_attr(node, tname);
    if (a == NULL && (t == NULL || t->t == NULL))
        return RN_OK;
    int count = a != NULL ? a->count : (int)graph_tensor_count(t->t);
    if (a == NULL && t->t->type != RN_F32 && t->t->type != RN_F64)
        return ref_contrib_error(node, RN_TYPE_MISMATCH, "attribute '%s' must be f32 or f64",
                                 tname);
    double *v = malloc((size_t)(count > 0 ? count : 1) * sizeof *v);
    if (v == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < count; i++)
        v[i] = a != NULL ? a->floats[i] : ref_ml_at(t->t, (size_t)i);
    *out = v;
    *n = count;
    return RN_OK;
}

rn_status ref_ml_labels(plugin_kernel_args *args, const int64_t *ints, char *const *strings,
                        const int64_t *index, int64_t rows)
{
    if (strings == NULL) {
        graph_tensor *y;
        rn_status st = ref_contrib_output(args, 0, &y);
        if (st != RN_OK || y == NULL)
            return st;
        for (int64_t r = 0; r < rows; r++)
            ((int64_t *)y->data)[r] = ints != NULL ? ints[index[r]] : index[r];
        return RN_OK;
    }
    graph_tensor y = {.type = RN_STRING, .rank = 1, .dims = {rows}};
    rn_status st = ref_tensor_alloc(args->node, &y);
    for (int64_t r = 0; r < rows && st == RN_OK; r++)
        if ((((char **)y.data)[r] = strdup(strings[index[r]])) == NULL)
            st = ref_contrib_error(args->node, RN_OUT_OF_MEMORY, "out of memory");
    if (st == RN_OK)
        st = args->move_output(args, 0, &y);
    graph_tensor_release(&y);
    return st;
}
