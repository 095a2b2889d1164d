/* Element-type conversions and small helpers of the REF NN kernels. */
#include <stdlib.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

bool ref_nn_is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

double ref_nn_get(rn_element_type t, const void *data, size_t i)
{
    switch (t) {
    case RN_F32:
        return ((const float *)data)[i];
    case RN_F64:
        return ((const double *)data)[i];
    case RN_F16:
        return plugin_f16_to_f32(((const uint16_t *)data)[i]);
    case RN_BF16:
        return plugin_bf16_to_f32(((const uint16_t *)data)[i]);
    default:
        return 0.0;
    }
}

void ref_nn_set(rn_element_type t, void *data, size_t i, double v)
{
    switch (t) {
    case RN_F32:
        ((float *)data)[i] = (float)v;
        break;
    case RN_F64:
        ((double *)data)[i] = v;
        break;
    case RN_F16:
        ((uint16_t *)data)[i] = plugin_f32_to_f16((float)v);
        break;
    case RN_BF16:
        ((uint16_t *)data)[i] = plugin_f32_to_bf16((float)v);
        break;
    default:
        break;
    }
}

double *ref_nn_to_f64(rn_element_type t, const void *data, size_t n)
{
    double *dst = ref_tmp_alloc((n ? n : 1) * sizeof(double));
    if (!dst)
        return NULL;
    switch (t) {
    case RN_F32: {
        const float *s = data;
        for (size_t i = 0; i < n; i++)
            dst[i] = s[i];
        break;
    }
    case RN_F64: {
        const double *s = data;
        for (size_t i = 0; i < n; i++)
            dst[i] = s[i];
        break;
    }
    default:
        for (size_t i = 0; i < n; i++)
            dst[i] = ref_nn_get(t, data, i);
        break;
    }
    return dst;
}

void ref_nn_from_f64(rn_element_type t, void *data, const double *src, size_t n)
{
    switch (t) {
    case RN_F32: {
        float *d = data;
        for (size_t i = 0; i < n; i++)
            d[i] = (float)src[i];
        break;
    }
    case RN_F64: {
        double *d = data;
        for (size_t i = 0; i < n; i++)
            d[i] = src[i];
        break;
    }
    default:
        for (size_t i = 0; i < n; i++)
            ref_nn_set(t, data, i, src[i]);
        break;
    }
}

rn_status ref_nn_f32_view(const graph_tensor *t, const float **view, float **owned)
{
    *owned = NULL;
    if (t->type == RN_F32) {
        *view = t->data;
        return RN_OK;
    }
    size_t n = graph_tensor_count(t);
    float *dst = ref_tmp_alloc((n ? n : 1) * sizeof(float));
    if (!dst)
        return RN_OUT_OF_MEMORY;
    const uint16_t *s = t->data;
    for (size_t i = 0; i < n; i++)
        dst[i] = t->type == RN_F16 ? plugin_f16_to_f32(s[i]) : plugin_bf16_to_f32(s[i]);
    *view = dst;
    *owned = dst;
    return RN_OK;
}

void ref_nn_from_f32(rn_element_type t, void *data, const float *src, size_t n)
{
    uint16_t *d = data;
    switch (t) {
    case RN_F32:
        if ((const void *)src != data) {
            float *f = data;
            for (size_t i = 0; i < n; i++)
                f[i] = src[i];
        }
        break;
    case RN_F16:
        for (size_t i = 0; i < n; i++)
            d[i] = plugin_f32_to_f16(src[i]);
        break;
    case RN_BF16:
        for (size_t i = 0; i < n; i++)
            d[i] = plugin_f32_to_bf16(src[i]);
        break;
    default:
        break;
    }
}

int64_t ref_nn_span(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

rn_status ref_nn_oom(const graph_node *node)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                        node->op_type);
}

bool ref_nn_node_ok(const graph_node *node, int n_required, const char **why)
{
    if (node->n_inputs < n_required) {
        *why = "too few inputs";
        return false;
    }
    for (int i = 0; i < n_required; i++) {
        if (node->inputs[i] == NULL) {
            *why = "a required input is omitted";
            return false;
        }
    }
    if (node->n_outputs < 1 || node->outputs[0] == NULL) {
        *why = "output 0 is omitted";
        return false;
    }
    return true;
}

/* A tensor that is present must have a buffer unless it holds no values. */
static bool nn_tensor_ok(const graph_tensor *t)
{
    return t->type != RN_UNDEFINED && (t->data != NULL || graph_tensor_count(t) == 0);
}

rn_status ref_nn_args_ok(const plugin_kernel_args *args, int n_required)
{
    const graph_node *node = args->node;
    for (int i = 0; i < n_required; i++) {
        if (i >= args->n_inputs || !nn_tensor_ok(&args->inputs[i]))
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): required input %d is missing",
                                node->name, node->op_type, i);
    }
    if (args->n_outputs < 1 || !nn_tensor_ok(&args->outputs[0]))
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): output 0 has no buffer", node->name,
                            node->op_type);
    return RN_OK;
}
