/* REF LabelEncoder (ai.onnx.ml opsets 1, 2 and 4): each element of X is
 * looked up among the keys (keys_strings, keys_int64s, keys_floats or
 * keys_tensor, of X's type) and replaced by the value at the same position
 * (values_*), or by the default (default_string "_Unused", default_int64
 * -1, default_float -0.0, or default_tensor) when no key matches. Opset 1
 * maps strings to their index in classes_strings and indices back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/ml.h"
#include "plugins/ref/kernels/values.h"

/* One list attribute: keys or values, from whichever field is set. */
typedef struct column {
    rn_element_type type;
    int n;
    const int64_t *ints;
    const float *floats;
    char **strings;
    const graph_tensor *tensor;
} column;

static bool column_read(const graph_node *node, const char *what, column *c)
{
    char name[64];
    memset(c, 0, sizeof *c);
    snprintf(name, sizeof name, "%s_tensor", what);
    const graph_attr *a = graph_node_attr(node, name);
    if (a != NULL && a->t != NULL) {
        c->type = a->t->type;
        c->n = (int)graph_tensor_count(a->t);
        c->tensor = a->t;
        if (c->type == RN_STRING)
            c->strings = a->t->data;
        return true;
    }
    snprintf(name, sizeof name, "%s_strings", what);
    if ((a = graph_node_attr(node, name)) != NULL) {
        c->type = RN_STRING, c->n = a->count, c->strings = a->strings;
        return true;
    }
    snprintf(name, sizeof name, "%s_int64s", what);
    if ((a = graph_node_attr(node, name)) != NULL) {
        c->type = RN_I64, c->n = a->count, c->ints = a->ints;
        return true;
    }
    snprintf(name, sizeof name, "%s_floats", what);
    if ((a = graph_node_attr(node, name)) != NULL) {
        c->type = RN_F32, c->n = a->count, c->floats = a->floats;
        return true;
    }
    return false;
}

/* Element k of a numeric column as a double, and as an int64. */
static double column_double(const column *c, int k)
{
    if (c->tensor != NULL)
        return c->tensor->type == RN_I16 ? ((const int16_t *)c->tensor->data)[k]
                                         : ref_ml_at(c->tensor, (size_t)k);
    return c->ints != NULL ? (double)c->ints[k] : c->floats[k];
}

static int64_t column_int(const column *c, int k)
{
    if (c->ints != NULL)
        return c->ints[k];
    if (c->tensor != NULL && c->tensor->type == RN_I64)
        return ((const int64_t *)c->tensor->data)[k];
    return (int64_t)column_double(c, k);
}

static bool label_encoder_supports(const graph_node *node, const char **why)
{
    column keys, values;
    bool v1 = graph_node_attr(node, "classes_strings") != NULL;
    rn_element_type x = node->inputs[0] != NULL ? node->inputs[0]->type : RN_UNDEFINED;
    if (v1) {
        if (x != RN_STRING && x != RN_I64) {
            *why = "opset 1 maps strings and int64";
            return false;
        }
        return true;
    }
    if (!column_read(node, "keys", &keys) || !column_read(node, "values", &values) ||
        keys.n != values.n) {
        *why = "keys and values must be given, of the same length";
        return false;
    }
    rn_element_type ok[] = {RN_STRING, RN_I64, RN_F32, RN_F64, RN_I32, RN_I16};
    bool kt = false, vt = false;
    for (int i = 0; i < 6; i++) {
        kt |= keys.type == ok[i];
        vt |= values.type == ok[i];
    }
    if (!kt || !vt || keys.type != x) {
        *why = "keys must have X's type, and keys and values a type REF implements";
        return false;
    }
    return true;
}

/* Whether element i of x equals key k. */
static bool key_matches(const graph_tensor *x, size_t i, const column *keys, int k)
{
    if (x->type == RN_STRING) {
        const char *s = ((char *const *)x->data)[i];
        return strcmp(s != NULL ? s : "", keys->strings[k] != NULL ? keys->strings[k] : "") == 0;
    }
    if (x->type == RN_I64)
        return ((const int64_t *)x->data)[i] == column_int(keys, k);
    double v = x->type == RN_I16 ? ((const int16_t *)x->data)[i] : ref_ml_at(x, i);
    double key = column_double(keys, k);
    return v == key || (isnan(v) && isnan(key));
}

/* Writes a numeric value of `type` at index i of data. */
static void put(rn_element_type type, void *data, size_t i, double v, int64_t iv)
{
    switch (type) {
    case RN_I64:
        ((int64_t *)data)[i] = iv;
        break;
    case RN_I32:
        ((int32_t *)data)[i] = (int32_t)iv;
        break;
    case RN_I16:
        ((int16_t *)data)[i] = (int16_t)iv;
        break;
    case RN_F64:
        ((double *)data)[i] = v;
        break;
    default:
        ((float *)data)[i] = (float)v;
        break;
    }
}

static rn_status label_encoder_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    size_t n = graph_tensor_count(x);
    column keys, values;
    const graph_attr *classes = graph_node_attr(node, "classes_strings");
    if (classes != NULL) { /* opset 1: strings <-> indices */
        keys = (column){.type = RN_STRING, .n = classes->count, .strings = classes->strings};
        values = (column){.type = RN_I64, .n = classes->count};
    } else {
        column_read(node, "keys", &keys);
        column_read(node, "values", &values);
    }
    rn_element_type out =
        classes != NULL ? (x->type == RN_STRING ? RN_I64 : RN_STRING) : values.type;
    const graph_attr *dflt_t = graph_node_attr(node, "default_tensor");
    const graph_attr *dflt_s = graph_node_attr(node, "default_string");
    const char *dflt_str = dflt_s != NULL && dflt_s->s != NULL ? dflt_s->s : "_Unused";
    if (dflt_t != NULL && dflt_t->t != NULL && dflt_t->t->type == RN_STRING)
        dflt_str = ((char *const *)dflt_t->t->data)[0];
    double dflt_f = graph_node_attr_float(node, "default_float", -0.0f);
    int64_t dflt_i = graph_node_attr_int(node, "default_int64", -1);
    if (dflt_t != NULL && dflt_t->t != NULL && dflt_t->t->type != RN_STRING &&
        graph_tensor_count(dflt_t->t) > 0) {
        column d = {.tensor = dflt_t->t};
        dflt_f = column_double(&d, 0);
        dflt_i = column_int(&d, 0);
    }
    graph_tensor owned = {.type = RN_STRING, .rank = x->rank};
    memcpy(owned.dims, x->dims, sizeof owned.dims);
    graph_tensor *y = &owned;
    rn_status st =
        out == RN_STRING ? ref_tensor_alloc(node, &owned) : ref_contrib_output(args, 0, &y);
    if (st == RN_OK && y == NULL)
        st = ref_contrib_error(node, RN_INTERNAL, "Y is absent");
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        int hit = -1;
        if (classes != NULL && x->type == RN_I64) {
            int64_t v = ((const int64_t *)x->data)[i];
            hit = v >= 0 && v < classes->count ? (int)v : -1;
        } else {
            for (int k = 0; k < keys.n && hit < 0; k++)
                hit = key_matches(x, i, &keys, k) ? k : -1;
        }
        if (out == RN_STRING) {
            const char *s = hit >= 0
                                ? (classes != NULL ? classes->strings[hit] : values.strings[hit])
                                : dflt_str;
            if ((((char **)y->data)[i] = strdup(s != NULL ? s : "")) == NULL)
                st = ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
        } else if (classes != NULL) {
            put(out, y->data, i, hit >= 0 ? hit : (double)dflt_i, hit >= 0 ? hit : dflt_i);
        } else {
            put(out, y->data, i, hit >= 0 ? column_double(&values, hit) : dflt_f,
                hit >= 0 ? column_int(&values, hit) : dflt_i);
        }
    }
    if (st == RN_OK && out == RN_STRING)
        st = args->move_output(args, 0, &owned);
    if (out == RN_STRING)
        graph_tensor_release(&owned);
    return st;
}

const plugin_kernel ref_kernel_ml_label_encoder = {
    .domain = "ai.onnx.ml",
    .op_type = "LabelEncoder",
    .impl_type = "ref",
    .supports = label_encoder_supports,
    .run = label_encoder_run,
};
