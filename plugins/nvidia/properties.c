/* NVIDIA's properties: the shared ones (plugins/api/properties.h) with f32
 * and f16 as INFERENCE_PRECISION_HINT, and its own keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"

void nv_properties_default(nv_properties *p, bool tensor_cores)
{
    memset(p, 0, sizeof *p);
    plugin_properties_default(&p->base);
    p->base.precisions = PLUGIN_PRECISION(RN_F32) | PLUGIN_PRECISION(RN_F16);
    p->base.inference_precision = tensor_cores ? RN_F16 : RN_F32;
    p->allow_tf32 = false;
    p->cuda_graph = true;
    p->max_slots = 8;
}

static rn_status yes_no(const char *key, const char *value, bool *out)
{
    if (strcmp(value, "YES") != 0 && strcmp(value, "NO") != 0)
        return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: YES, NO)", key,
                            value);
    *out = strcmp(value, "YES") == 0;
    return RN_OK;
}

static rn_status set_one(nv_properties *p, const char *key, const char *value)
{
    if (strcmp(key, "NVIDIA_ALLOW_TF32") == 0)
        return yes_no(key, value, &p->allow_tf32);
    if (strcmp(key, "NVIDIA_CUDA_GRAPH") == 0)
        return yes_no(key, value, &p->cuda_graph);
    if (strcmp(key, "NVIDIA_MAX_SLOTS") == 0) {
        char *end;
        long v = strtol(value, &end, 10);
        if (*value == '\0' || *end != '\0' || v < 1 || v > 64)
            return rn_set_error(RN_INVALID_ARG,
                                "property NVIDIA_MAX_SLOTS: bad value '%s' (accepted: 1 to 64)",
                                value);
        p->max_slots = (int)v;
        return RN_OK;
    }
    return plugin_properties_set(&p->base, key, value);
}

rn_status nv_properties_apply(nv_properties *p, const rn_property *props, size_t n)
{
    nv_properties tmp = *p;
    for (size_t i = 0; i < n; i++) {
        if (props[i].key == NULL || props[i].value == NULL)
            return rn_set_error(RN_INVALID_ARG, "NVIDIA: property %zu has no key or value", i);
        rn_status st = set_one(&tmp, props[i].key, props[i].value);
        if (st != RN_OK)
            return st;
    }
    *p = tmp;
    return RN_OK;
}

rn_status nv_properties_get(const nv_properties *p, const char *key, char *buf, size_t size)
{
    char tmp[16];
    if (strcmp(key, "NVIDIA_ALLOW_TF32") == 0)
        return plugin_property_string(key, p->allow_tf32 ? "YES" : "NO", buf, size);
    if (strcmp(key, "NVIDIA_CUDA_GRAPH") == 0)
        return plugin_property_string(key, p->cuda_graph ? "YES" : "NO", buf, size);
    if (strcmp(key, "NVIDIA_MAX_SLOTS") == 0) {
        snprintf(tmp, sizeof tmp, "%d", p->max_slots);
        return plugin_property_string(key, tmp, buf, size);
    }
    return plugin_properties_get(&p->base, key, buf, size);
}

/* The read-only device keys nv_device_property answers. */
const char *const nv_device_keys[] = {
    "SUPPORTED_PROPERTIES",
    "AVAILABLE_DEVICES",
    "FULL_DEVICE_NAME",
    "DEVICE_ARCHITECTURE",
    "DEVICE_TYPE",
    "OPTIMIZATION_CAPABILITIES",
    "RANGE_FOR_ASYNC_INFER_REQUESTS",
    "RANGE_FOR_STREAMS",
    "EXECUTION_DEVICES",
    "CACHING_PROPERTIES",
    "DEVICE_TOTAL_MEM_SIZE",
    "NVIDIA_CUDA_VERSION",
    "NVIDIA_DRIVER_VERSION",
    "NVIDIA_CUDNN_VERSION",
    "NVIDIA_CUBLAS_VERSION",
    "NVIDIA_SM_COUNT",
    "NVIDIA_ALLOW_TF32",
    "NVIDIA_MAX_SLOTS",
    NULL,
};

rn_status nv_device_property(const nv_device_info *d, const char *key, char *buf, size_t size)
{
    char tmp[320];
    const char *value = tmp;
    if (strcmp(key, "AVAILABLE_DEVICES") == 0)
        snprintf(tmp, sizeof tmp, "%d", d->device_id);
    else if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        snprintf(tmp, sizeof tmp, "%s (NVIDIA, cuDNN)", d->name);
    else if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        nv_format_architecture(d->cc_major, d->cc_minor, tmp, sizeof tmp);
    else if (strcmp(key, "DEVICE_TYPE") == 0)
        value = "discrete";
    else if (strcmp(key, "OPTIMIZATION_CAPABILITIES") == 0)
        value = nv_has_tensor_cores(d->cc_major) ? "FP32 FP16 EXPORT_IMPORT" : "FP32 EXPORT_IMPORT";
    else if (strcmp(key, "RANGE_FOR_ASYNC_INFER_REQUESTS") == 0)
        value = "1 64 1";
    else if (strcmp(key, "RANGE_FOR_STREAMS") == 0)
        value = "1 64";
    else if (strcmp(key, "EXECUTION_DEVICES") == 0)
        value = "NVIDIA";
    else if (strcmp(key, "CACHING_PROPERTIES") == 0)
        value = "DEVICE_ARCHITECTURE INFERENCE_PRECISION_HINT NVIDIA_ALLOW_TF32";
    else if (strcmp(key, "DEVICE_TOTAL_MEM_SIZE") == 0)
        snprintf(tmp, sizeof tmp, "%zu", d->total_memory);
    else if (strcmp(key, "NVIDIA_CUDA_VERSION") == 0)
        nv_format_cuda_version(d->runtime_version, tmp, sizeof tmp);
    else if (strcmp(key, "NVIDIA_DRIVER_VERSION") == 0)
        nv_format_cuda_version(d->driver_version, tmp, sizeof tmp);
    else if (strcmp(key, "NVIDIA_CUDNN_VERSION") == 0)
        nv_format_cudnn_version(d->cudnn_version, tmp, sizeof tmp);
    else if (strcmp(key, "NVIDIA_CUBLAS_VERSION") == 0)
        nv_format_cudnn_version((size_t)d->cublas_version, tmp, sizeof tmp);
    else if (strcmp(key, "NVIDIA_SM_COUNT") == 0)
        snprintf(tmp, sizeof tmp, "%d", d->sm_count);
    else
        return RN_NOT_FOUND;
    return plugin_property_string(key, value, buf, size);
}
