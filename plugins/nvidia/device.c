/* The device: why CUDA cannot start, the versions and the architecture, as
 * create and FULL_DEVICE_NAME / DEVICE_ARCHITECTURE / *_VERSION report them. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"

const char *nv_start_problem(int cuda_error, int device_count)
{
    switch ((cudaError_t)cuda_error) {
    case cudaSuccess:
        return device_count > 0 ? NULL : "no CUDA device";
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
        return "no CUDA device";
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorInitializationError:
    case cudaErrorSystemNotReady:
        return "no CUDA driver";
    default:
        return "CUDA cannot start";
    }
}

rn_status nv_check_cudnn_version(size_t version)
{
    if (version >= NV_CUDNN_MIN_VERSION)
        return RN_OK;
    return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: cuDNN %zu.%zu older than required %d.%d",
                        version / 10000, version / 100 % 100, NV_CUDNN_MIN_VERSION / 10000,
                        NV_CUDNN_MIN_VERSION / 100 % 100);
}

void nv_format_cuda_version(int version, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", version / 1000, version % 1000 / 10);
}

void nv_format_cudnn_version(size_t version, char *buf, size_t size)
{
    snprintf(buf, size, "%zu.%zu.%zu", version / 10000, version / 100 % 100, version % 100);
}

void nv_format_architecture(int major, int minor, char *buf, size_t size)
{
    snprintf(buf, size, "sm_%d%d", major, minor);
}

bool nv_has_tensor_cores(int cc_major)
{
    return cc_major >= 7;
}

bool nv_has_bf16(int cc_major)
{
    return cc_major >= 8;
}

rn_status nv_device_probe(int device_id, nv_device_info *out)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    const char *problem = nv_start_problem((int)e, count);
    if (problem != NULL) {
        if (e != cudaSuccess)
            return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: %s (cudaGetDeviceCount: %s: %s)", problem,
                                cudaGetErrorName(e), cudaGetErrorString(e));
        return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: %s (cudaGetDeviceCount found none)", problem);
    }
    if (device_id < 0 || device_id >= count)
        return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: no CUDA device %d (%d present)", device_id,
                            count);
    size_t dnn = cudnnGetVersion();
    rn_status st = nv_check_cudnn_version(dnn);
    if (st != RN_OK)
        return st;
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, device_id)) != cudaSuccess)
        return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: cudaGetDeviceProperties(%d): %s", device_id,
                            cudaGetErrorString(e));
    nv_device_info d = {.device_id = device_id,
                        .cc_major = prop.major,
                        .cc_minor = prop.minor,
                        .total_memory = prop.totalGlobalMem,
                        .sm_count = prop.multiProcessorCount,
                        .cudnn_version = dnn};
    snprintf(d.name, sizeof d.name, "%s", prop.name);
    cudaRuntimeGetVersion(&d.runtime_version);
    cudaDriverGetVersion(&d.driver_version);
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    d.cublas_version = major * 10000 + minor * 100 + patch;
    *out = d;
    return RN_OK;
}
