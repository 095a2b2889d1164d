/* NVIDIA's properties: the shared ones (plugins/api/properties.h) with f32,
 * f16 and, from compute capability 8.0, bf16 as INFERENCE_PRECISION_HINT,
 * its own rows, and the read-only keys it answers from the probe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"

const plugin_property_def nv_property_keys[NV_N_PROPERTY_KEYS] = {
    PLUGIN_OWN_BOOL("NVIDIA_ALLOW_TF32", nv_own, allow_tf32, PLUGIN_PROPERTY_RW, "NO"),
    PLUGIN_OWN_BOOL("NVIDIA_CUDA_GRAPH", nv_own, cuda_graph, PLUGIN_PROPERTY_RW, "YES"),
    PLUGIN_OWN_UINT("NVIDIA_MAX_SLOTS", nv_own, max_slots, 1, 64, "8"),
    PLUGIN_OWN_BOOL("NVIDIA_STEP_TIMING", nv_own, step_timing, PLUGIN_PROPERTY_LIVE, "NO"),
    PLUGIN_OWN_BOOL("NVIDIA_AUTOTUNE", nv_own, autotune, PLUGIN_PROPERTY_RW, "NO"),
    PLUGIN_OWN_BOOL("NVIDIA_ASYNC_STAGES", nv_own, async_stages, PLUGIN_PROPERTY_RW, "NO"),
};

void nv_precision_defaults(plugin_properties *p, int cc_major)
{
    /* Not offered where the device lacks it: the shared parser then
     * refuses bf16 naming what it accepts, rather than computing in f32
     * (native_precisions) behind the user's back. */
    p->precisions = PLUGIN_PRECISION(RN_F32) | PLUGIN_PRECISION(RN_F16) |
                    (nv_has_bf16(cc_major) ? PLUGIN_PRECISION(RN_BF16) : 0);
    p->inference_precision = nv_has_tensor_cores(cc_major) ? RN_F16 : RN_F32;
}

void nv_properties_default(nv_properties *p, int cc_major)
{
    plugin_properties_default(&p->base);
    plugin_property_defaults(nv_property_keys, NV_N_PROPERTY_KEYS, &p->own, sizeof p->own);
    nv_precision_defaults(&p->base, cc_major);
}

rn_status nv_properties_apply(nv_properties *p, const rn_property *props, size_t n)
{
    return plugin_properties_apply_own(nv_property_keys, NV_N_PROPERTY_KEYS, sizeof p->own,
                                       &p->base, &p->own, props, n);
}

rn_status nv_properties_get(const nv_properties *p, const char *key, char *buf, size_t size)
{
    return plugin_properties_get_own(nv_property_keys, NV_N_PROPERTY_KEYS, &p->base, &p->own, key,
                                     buf, size);
}

/* The read-only device keys nv_device_property answers. */
const char *const nv_device_keys[] = {
    "DEVICE_TOTAL_MEM_SIZE",
    "NVIDIA_CUDA_VERSION",
    "NVIDIA_DRIVER_VERSION",
    "NVIDIA_CUDNN_VERSION",
    "NVIDIA_CUBLAS_VERSION",
    "NVIDIA_SM_COUNT",
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
    else if (strcmp(key, "OPTIMIZATION_CAPABILITIES") == 0)
        value = nv_has_bf16(d->cc_major)           ? "FP32 FP16 BF16 EXPORT_IMPORT"
                : nv_has_tensor_cores(d->cc_major) ? "FP32 FP16 EXPORT_IMPORT"
                                                   : "FP32 EXPORT_IMPORT";
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
