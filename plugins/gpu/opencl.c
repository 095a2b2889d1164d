/* The OpenCL device: discovery through the ICD loader and its context
 * (runnel's program, built once per context: program_cache.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h>

#include "plugins/gpu/gpu.h"

const char *gpu_cl_error(cl_int err)
{
    switch (err) {
#define CASE(e)                                                                                    \
    case e:                                                                                        \
        return #e;
        CASE(CL_SUCCESS)
        CASE(CL_DEVICE_NOT_FOUND)
        CASE(CL_DEVICE_NOT_AVAILABLE)
        CASE(CL_COMPILER_NOT_AVAILABLE)
        CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        CASE(CL_OUT_OF_RESOURCES)
        CASE(CL_OUT_OF_HOST_MEMORY)
        CASE(CL_BUILD_PROGRAM_FAILURE)
        CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        CASE(CL_INVALID_VALUE)
        CASE(CL_INVALID_DEVICE)
        CASE(CL_INVALID_CONTEXT)
        CASE(CL_INVALID_COMMAND_QUEUE)
        CASE(CL_INVALID_MEM_OBJECT)
        CASE(CL_INVALID_PROGRAM)
        CASE(CL_INVALID_PROGRAM_EXECUTABLE)
        CASE(CL_INVALID_KERNEL_NAME)
        CASE(CL_INVALID_KERNEL)
        CASE(CL_INVALID_ARG_INDEX)
        CASE(CL_INVALID_ARG_VALUE)
        CASE(CL_INVALID_ARG_SIZE)
        CASE(CL_INVALID_KERNEL_ARGS)
        CASE(CL_INVALID_WORK_DIMENSION)
        CASE(CL_INVALID_WORK_GROUP_SIZE)
        CASE(CL_INVALID_GLOBAL_OFFSET)
        CASE(CL_INVALID_EVENT)
        CASE(CL_INVALID_OPERATION)
        CASE(CL_INVALID_BUFFER_SIZE)
        CASE(CL_INVALID_GLOBAL_WORK_SIZE)
        CASE(CL_PLATFORM_NOT_FOUND_KHR)
#undef CASE
    default:
        return "an OpenCL error";
    }
}

static _Thread_local gpu_device *current_device;

void gpu_set_current(gpu_device *dev)
{
    current_device = dev;
}

gpu_device *gpu_current(void)
{
    return current_device;
}

#define MAX_PLATFORMS 8
#define MAX_DEVICES   16

/* Every device of every platform: GPUs first, then the others (CPU,
 * accelerator), each group in platform order. */
static rn_status list_devices(cl_device_id *out, cl_platform_id *plat, int *n)
{
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, platforms, &np);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0))
        return rn_set_error(RN_DEVICE_ERROR,
                            "GPU: no OpenCL platform (the ICD loader found no driver: install one, "
                            "such as pocl-opencl-icd, or check OCL_ICD_VENDORS)");
    if (err != CL_SUCCESS)
        return rn_set_error(RN_DEVICE_ERROR, "GPU: clGetPlatformIDs failed: %s", gpu_cl_error(err));
    if (np > MAX_PLATFORMS)
        np = MAX_PLATFORMS;
    *n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (cl_uint p = 0; p < np; p++) {
            cl_device_id ids[MAX_DEVICES];
            cl_uint nd = 0;
            cl_device_type want =
                pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR;
            if (clGetDeviceIDs(platforms[p], want, MAX_DEVICES, ids, &nd) != CL_SUCCESS)
                continue;
            for (cl_uint d = 0; d < nd && d < MAX_DEVICES && *n < MAX_DEVICES; d++) {
                plat[*n] = platforms[p];
                out[(*n)++] = ids[d];
            }
        }
    if (*n == 0)
        return rn_set_error(RN_DEVICE_ERROR,
                            "GPU: the OpenCL platforms have no GPU, CPU or accelerator device");
    return RN_OK;
}

static void describe(gpu_device *d)
{
    char vendor[128] = "", version[128] = "", driver[128] = "", ext[4096] = "";
    clGetDeviceInfo(d->device, CL_DEVICE_NAME, sizeof d->name - 1, d->name, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_VENDOR, sizeof vendor - 1, vendor, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    clGetDeviceInfo(d->device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL);
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(d->device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    if (d->type & CL_DEVICE_TYPE_GPU)
        d->device_type = unified ? "integrated" : "discrete";
    else
        d->device_type = d->type & CL_DEVICE_TYPE_CPU ? "cpu" : "accelerator";
    d->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    snprintf(d->architecture, sizeof d->architecture, "%s; %s; %s; driver %s", vendor, d->name,
             version, driver);
}

rn_status gpu_device_open(int index, gpu_device **out)
{
    cl_device_id ids[MAX_DEVICES];
    cl_platform_id plat[MAX_DEVICES];
    int n = 0;
    rn_status st = list_devices(ids, plat, &n);
    if (st != RN_OK)
        return st;
    if (index < 0 || index >= n)
        return rn_set_error(RN_INVALID_ARG, "GPU: DEVICE_ID %d: there are %d OpenCL devices", index,
                            n);
    gpu_device *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    d->platform = plat[index];
    d->device = ids[index];
    d->n_devices = n;
    describe(d);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
    cl_int err;
    d->context = clCreateContext(props, 1, &d->device, NULL, NULL, &err);
    if (d->context == NULL) {
        st = rn_set_error(RN_DEVICE_ERROR, "GPU: clCreateContext on '%s' failed: %s", d->name,
                          gpu_cl_error(err));
        free(d);
        return st;
    }
    pthread_mutex_init(&d->build_lock, NULL);
    *out = d;
    return RN_OK;
}

rn_status gpu_device_wrap(cl_context context, cl_device_id device, cl_command_queue queue,
                          gpu_device **out)
{
    gpu_device *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    d->device = device;
    clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof d->platform, &d->platform, NULL);
    d->n_devices = 1;
    describe(d);
    clRetainContext(context);
    d->context = context;
    if (queue != NULL)
        clRetainCommandQueue(queue);
    d->queue = queue;
    pthread_mutex_init(&d->build_lock, NULL);
    *out = d;
    return RN_OK;
}

void gpu_device_close(gpu_device *d)
{
    if (d == NULL)
        return;
    gpu_device_program_release(d);
    if (d->queue != NULL)
        clReleaseCommandQueue(d->queue);
    clReleaseContext(d->context);
    pthread_mutex_destroy(&d->build_lock);
    free(d);
}
