/* Remote contexts and tensors of the GPU device (OpenVINO's GPU
 * RemoteContext and OCL_BUFFER RemoteTensor).
 *
 * A context is one device's OpenCL context: one of the plugin's own (the
 * default context of a device, or CONTEXT_TYPE=OCL with DEVICE_ID), or a
 * user's OCL_CONTEXT, optionally with the user's OCL_QUEUE, which every
 * request of a model compiled in the context then runs on (in order after
 * what the user enqueued before the run). Its tensors are cl_mem buffers:
 * allocated by the context, or the user's (MEM_HANDLE), checked to belong
 * to the context and to hold the tensor's bytes. Bound to a request, a
 * remote tensor is device memory in the layout "cl" (plugin_plan_options.
 * remote_view): the plan skips the upload of such an input and its readers
 * read the user's cl_mem (one device-to-device copy instead when a node
 * writes in place over it); a result is copied device to device into it.
 * Nothing goes through the host. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/remote.h"
#include "plugins/gpu/gpu.h"

struct gpu_context {
    gpu_device *dev;
    bool owns_dev;          /* a user's OCL_CONTEXT, wrapped */
    int device_id;          /* the plugin's device index (-1: a user's context) */
    cl_uint ocl_device_id;  /* the device's index in the OpenCL context */
    cl_command_queue queue; /* tensor copies: the user's queue or one of ours */
};

typedef struct gpu_tensor {
    gpu_context *context;
    gpu_arena mem;       /* dev and mem (queue and owner NULL) */
    rn_layout layout;    /* "cl": plain bytes in device memory */
    rn_kernel_tensor td; /* the view: device memory at offset 0, in layout */
} gpu_tensor;

static const char *const context_keys =
    "CONTEXT_TYPE OCL_CONTEXT OCL_QUEUE OCL_CONTEXT_DEVICE_ID DEVICE_ID SUPPORTED_PROPERTIES";
static const char *const context_params = "CONTEXT_TYPE, OCL_CONTEXT, OCL_QUEUE, "
                                          "OCL_CONTEXT_DEVICE_ID, DEVICE_ID";

static rn_status context_new(gpu_device *dev, bool owns, int device_id, cl_uint ocl_id,
                             gpu_context **out)
{
    gpu_context *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU context: out of memory");
    cl_int err = CL_SUCCESS;
    if (dev->queue != NULL && clRetainCommandQueue(dev->queue) == CL_SUCCESS)
        c->queue = dev->queue;
    else
        c->queue = clCreateCommandQueue(dev->context, dev->device, 0, &err);
    if (c->queue == NULL) {
        free(c);
        return rn_set_error(RN_DEVICE_ERROR, "GPU context: clCreateCommandQueue failed: %s",
                            gpu_cl_error(err));
    }
    c->dev = dev;
    c->owns_dev = owns;
    c->device_id = device_id;
    c->ocl_device_id = ocl_id;
    *out = c;
    return RN_OK;
}

rn_status gpu_context_default(gpu_device *dev, int index, gpu_context **out)
{
    return context_new(dev, false, index, 0, out);
}

void gpu_context_free(gpu_context *c)
{
    if (c == NULL)
        return;
    clReleaseCommandQueue(c->queue);
    if (c->owns_dev)
        gpu_device_close(c->dev);
    free(c);
}

gpu_device *gpu_context_device(const gpu_context *c)
{
    return c->dev;
}

/* A non-negative decimal index. */
static rn_status parse_index(const char *key, const char *value, long *out)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || v > 1024)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU context: %s '%s' is not a device index (accepted: 0, 1, ...)", key,
                            value);
    *out = v;
    return RN_OK;
}

/* The parameters of create_context. */
typedef struct context_params {
    cl_context context;
    cl_command_queue queue;
    long device_id, ocl_device_id; /* -1: not given */
} context_params_t;

static rn_status read_params(const rn_property *params, size_t n, context_params_t *p)
{
    *p = (context_params_t){NULL, NULL, -1, -1};
    for (size_t i = 0; i < n; i++) {
        const char *key = params[i].key, *value = params[i].value;
        rn_status st = RN_OK;
        void *h;
        if (strcmp(key, "CONTEXT_TYPE") == 0) {
            if (strcmp(value, "OCL") != 0)
                st = rn_set_error(RN_INVALID_ARG,
                                  "GPU context: CONTEXT_TYPE '%s' is not supported (accepted: OCL)",
                                  value);
        } else if (strcmp(key, "OCL_CONTEXT") == 0) {
            if ((st = plugin_parse_handle("GPU context", key, value, &h)) == RN_OK)
                p->context = h;
        } else if (strcmp(key, "OCL_QUEUE") == 0) {
            if ((st = plugin_parse_handle("GPU context", key, value, &h)) == RN_OK)
                p->queue = h;
        } else if (strcmp(key, "DEVICE_ID") == 0) {
            st = parse_index(key, value, &p->device_id);
        } else if (strcmp(key, "OCL_CONTEXT_DEVICE_ID") == 0) {
            st = parse_index(key, value, &p->ocl_device_id);
        } else {
            st = rn_set_error(RN_INVALID_ARG, "GPU context: unknown parameter '%s' (accepted: %s)",
                              key, context_params);
        }
        if (st != RN_OK)
            return st;
    }
    if ((p->context != NULL || p->queue != NULL) && p->device_id >= 0)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU context: DEVICE_ID picks one of the plugin's devices; with "
                            "OCL_CONTEXT or OCL_QUEUE use OCL_CONTEXT_DEVICE_ID");
    if (p->context == NULL && p->queue == NULL && p->ocl_device_id >= 0)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU context: OCL_CONTEXT_DEVICE_ID needs OCL_CONTEXT (use DEVICE_ID "
                            "for the plugin's devices)");
    return RN_OK;
}

/* The device of a user's context (and queue): the queue's, else device
 * ocl_device_id of the context. */
static rn_status user_device(context_params_t *p, cl_device_id *device, cl_uint *index)
{
    cl_int err;
    if (p->queue != NULL) {
        cl_context qc = NULL;
        cl_command_queue_properties qp = 0;
        err = clGetCommandQueueInfo(p->queue, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
        if (err == CL_SUCCESS)
            err = clGetCommandQueueInfo(p->queue, CL_QUEUE_DEVICE, sizeof *device, device, NULL);
        if (err == CL_SUCCESS)
            err = clGetCommandQueueInfo(p->queue, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
        if (err != CL_SUCCESS)
            return rn_set_error(RN_INVALID_ARG, "GPU context: OCL_QUEUE is not a command queue: %s",
                                gpu_cl_error(err));
        if (p->context != NULL && qc != p->context)
            return rn_set_error(RN_INVALID_ARG,
                                "GPU context: OCL_QUEUE belongs to another OpenCL context than "
                                "OCL_CONTEXT");
        if (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
            return rn_set_error(RN_INVALID_ARG,
                                "GPU context: OCL_QUEUE is an out-of-order queue (the device's "
                                "requests need an in-order one)");
        p->context = qc;
    }
    cl_device_id ids[16];
    size_t bytes = 0;
    err = clGetContextInfo(p->context, CL_CONTEXT_DEVICES, sizeof ids, ids, &bytes);
    if (err != CL_SUCCESS)
        return rn_set_error(RN_INVALID_ARG, "GPU context: OCL_CONTEXT is not an OpenCL context: %s",
                            gpu_cl_error(err));
    cl_uint n = (cl_uint)(bytes / sizeof ids[0]);
    if (p->queue != NULL) {
        for (*index = 0; *index < n && ids[*index] != *device; (*index)++)
            ;
        if (p->ocl_device_id >= 0 && (cl_uint)p->ocl_device_id != *index)
            return rn_set_error(RN_INVALID_ARG,
                                "GPU context: OCL_CONTEXT_DEVICE_ID %ld is not the device of "
                                "OCL_QUEUE (%u)",
                                p->ocl_device_id, *index);
        return RN_OK;
    }
    *index = p->ocl_device_id >= 0 ? (cl_uint)p->ocl_device_id : 0;
    if (*index >= n)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU context: OCL_CONTEXT_DEVICE_ID %u does not exist (the context "
                            "has %u devices)",
                            *index, n);
    *device = ids[*index];
    return RN_OK;
}

rn_status gpu_context_create(const rn_property *params, size_t n,
                             rn_status (*devices)(void *ctx, int index, gpu_device **dev),
                             void *devices_ctx, gpu_context **out)
{
    context_params_t p;
    rn_status st = read_params(params, n, &p);
    if (st != RN_OK)
        return st;
    if (p.context == NULL && p.queue == NULL) {
        int index = p.device_id >= 0 ? (int)p.device_id : 0;
        gpu_device *dev;
        if ((st = devices(devices_ctx, index, &dev)) != RN_OK)
            return st;
        return context_new(dev, false, index, 0, out);
    }
    cl_device_id device = NULL;
    cl_uint index = 0;
    if ((st = user_device(&p, &device, &index)) != RN_OK)
        return st;
    gpu_device *dev;
    if ((st = gpu_device_wrap(p.context, device, p.queue, &dev)) != RN_OK)
        return st;
    if ((st = context_new(dev, true, -1, index, out)) != RN_OK)
        gpu_device_close(dev);
    return st;
}

static rn_status handle_string(const char *key, const void *h, char *buf, size_t size)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "0x%" PRIxPTR, (uintptr_t)h);
    return plugin_property_string(key, tmp, buf, size);
}

static rn_status context_get_property(rn_plugin_context *context, const char *key, char *buf,
                                      size_t size)
{
    const gpu_context *c = (const gpu_context *)context;
    char tmp[32];
    if (strcmp(key, "CONTEXT_TYPE") == 0)
        return plugin_property_string(key, "OCL", buf, size);
    if (strcmp(key, "OCL_CONTEXT") == 0)
        return handle_string(key, c->dev->context, buf, size);
    if (strcmp(key, "OCL_QUEUE") == 0 && c->dev->queue != NULL)
        return handle_string(key, c->dev->queue, buf, size);
    if (strcmp(key, "OCL_QUEUE") == 0)
        return rn_set_error(RN_NOT_FOUND, "GPU context: OCL_QUEUE: the context shares no queue "
                                          "(each request has its own)");
    if (strcmp(key, "OCL_CONTEXT_DEVICE_ID") == 0 ||
        (strcmp(key, "DEVICE_ID") == 0 && c->device_id >= 0)) {
        snprintf(tmp, sizeof tmp, "%d", key[0] == 'D' ? c->device_id : (int)c->ocl_device_id);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "DEVICE_ID") == 0)
        return rn_set_error(RN_NOT_FOUND, "GPU context: DEVICE_ID: the context is the user's "
                                          "OCL_CONTEXT, not one of the plugin's devices");
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return plugin_property_string(key, context_keys, buf, size);
    return rn_set_error(RN_NOT_FOUND, "GPU context: unknown property '%s' (known: %s)", key,
                        context_keys);
}

/* The user's cl_mem for a tensor of `bytes` bytes: a buffer of this
 * context holding at least that many. */
static rn_status check_user_mem(const gpu_context *c, cl_mem mem, size_t bytes)
{
    cl_context owner = NULL;
    cl_mem_object_type type = 0;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return rn_set_error(RN_INVALID_ARG, "GPU tensor: MEM_HANDLE is not a cl_mem: %s",
                            gpu_cl_error(err));
    if (owner != c->dev->context)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU tensor: MEM_HANDLE belongs to another OpenCL context (0x%" PRIxPTR
                            ") than this GPU context's (0x%" PRIxPTR ")",
                            (uintptr_t)owner, (uintptr_t)c->dev->context);
    if (type != CL_MEM_OBJECT_BUFFER)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU tensor: MEM_HANDLE is not a buffer (SHARED_MEM_TYPE OCL_BUFFER)");
    if (size < bytes)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU tensor: MEM_HANDLE holds %zu bytes, the tensor needs %zu", size,
                            bytes);
    return RN_OK;
}

static rn_status tensor_params(const rn_property *params, size_t n, cl_mem *shared)
{
    *shared = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *key = params[i].key, *value = params[i].value;
        rn_status st = RN_OK;
        void *h;
        if (strcmp(key, "SHARED_MEM_TYPE") == 0) {
            if (strcmp(value, "OCL_BUFFER") != 0)
                st = rn_set_error(RN_INVALID_ARG,
                                  "GPU tensor: SHARED_MEM_TYPE '%s' is not supported (accepted: "
                                  "OCL_BUFFER)",
                                  value);
        } else if (strcmp(key, "MEM_HANDLE") == 0) {
            if ((st = plugin_parse_handle("GPU tensor", key, value, &h)) == RN_OK)
                *shared = h;
        } else {
            st = rn_set_error(RN_INVALID_ARG,
                              "GPU tensor: unknown parameter '%s' (accepted: SHARED_MEM_TYPE, "
                              "MEM_HANDLE)",
                              key);
        }
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

extern const rn_remote_tensor_ops gpu_tensor_ops;

static rn_status context_create_tensor(rn_plugin_context *context, rn_element_type type,
                                       const int64_t *dims, size_t rank, const rn_property *params,
                                       size_t n_params, const rn_remote_tensor_ops **ops,
                                       rn_plugin_tensor **tensor)
{
    gpu_context *c = (gpu_context *)context;
    cl_mem shared;
    rn_status st = tensor_params(params, n_params, &shared);
    if (st != RN_OK)
        return st;
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "GPU tensor: rank %zu (at most %d)", rank, RN_MAX_RANK);
    gpu_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU tensor: out of memory");
    rn_kernel_tensor *d = &t->td;
    d->kind = RN_KERNEL_TENSOR;
    d->type = type;
    d->rank = (int)rank;
    size_t count = 1;
    for (int i = (int)rank - 1; i >= 0; i--) {
        d->dims[i] = dims[i];
        d->strides[i] = (int64_t)count;
        count *= (size_t)dims[i];
    }
    d->nbytes = plugin_tensor_nbytes(type, count);
    cl_int err = CL_SUCCESS;
    if (shared != NULL) {
        if ((st = check_user_mem(c, shared, d->nbytes)) == RN_OK &&
            (err = clRetainMemObject(shared)) != CL_SUCCESS)
            st = rn_set_error(RN_INVALID_ARG, "GPU tensor: MEM_HANDLE: %s", gpu_cl_error(err));
        if (st == RN_OK)
            t->mem.mem = shared;
    } else {
        t->mem.mem = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE, d->nbytes ? d->nbytes : 4,
                                    NULL, &err);
        if (t->mem.mem == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, "GPU tensor: cannot allocate %zu bytes: %s",
                              d->nbytes, gpu_cl_error(err));
        const cl_uchar zero = 0;
        if (st == RN_OK && d->nbytes > 0 &&
            ((err = clEnqueueFillBuffer(c->queue, t->mem.mem, &zero, 1, 0, d->nbytes, 0, NULL,
                                        NULL)) != CL_SUCCESS ||
             (err = clFinish(c->queue)) != CL_SUCCESS))
            st = rn_set_error(RN_DEVICE_ERROR, "GPU tensor: zero-filling failed: %s",
                              gpu_cl_error(err));
    }
    if (st != RN_OK) {
        if (t->mem.mem != NULL)
            clReleaseMemObject(t->mem.mem);
        free(t);
        return st;
    }
    t->context = c;
    t->mem.dev = c->dev;
    t->layout = (rn_layout){&gpu_layout_ops, "cl", d->nbytes, NULL};
    d->buffer = &t->mem;
    d->layout = &t->layout;
    *ops = &gpu_tensor_ops;
    *tensor = (rn_plugin_tensor *)t;
    return RN_OK;
}

static void context_free(rn_plugin_context *context)
{
    gpu_context_free((gpu_context *)context);
}

const rn_remote_context_ops gpu_context_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .get_property = context_get_property,
    .create_tensor = context_create_tensor,
    .free = context_free,
};

static rn_status tensor_get_property(rn_plugin_tensor *tensor, const char *key, char *buf,
                                     size_t size)
{
    const gpu_tensor *t = (const gpu_tensor *)tensor;
    if (strcmp(key, "SHARED_MEM_TYPE") == 0)
        return plugin_property_string(key, "OCL_BUFFER", buf, size);
    if (strcmp(key, "MEM_HANDLE") == 0)
        return handle_string(key, t->mem.mem, buf, size);
    if (strcmp(key, "OCL_CONTEXT") == 0)
        return handle_string(key, t->context->dev->context, buf, size);
    return rn_set_error(
        RN_NOT_FOUND,
        "GPU tensor: unknown property '%s' (known: SHARED_MEM_TYPE MEM_HANDLE OCL_CONTEXT)", key);
}

/* A blocking copy between host memory and the whole tensor, on the
 * context's queue (after what the user enqueued there). */
static rn_status tensor_copy(gpu_tensor *t, bool to_host, void *host, size_t size)
{
    if (size != t->td.nbytes)
        return rn_set_error(RN_INVALID_ARG, "GPU tensor: a copy of %zu bytes for %zu bytes", size,
                            t->td.nbytes);
    if (size == 0)
        return RN_OK;
    cl_command_queue q = t->context->queue;
    cl_int err = to_host
                     ? clEnqueueReadBuffer(q, t->mem.mem, CL_TRUE, 0, size, host, 0, NULL, NULL)
                     : clEnqueueWriteBuffer(q, t->mem.mem, CL_TRUE, 0, size, host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return rn_set_error(RN_DEVICE_ERROR, "GPU tensor: copying %zu bytes %s the host failed: %s",
                            size, to_host ? "to" : "from", gpu_cl_error(err));
    return RN_OK;
}

static rn_status tensor_copy_from_host(rn_plugin_tensor *tensor, const void *src, size_t size)
{
    return tensor_copy((gpu_tensor *)tensor, false, (void *)src, size);
}

static rn_status tensor_copy_to_host(rn_plugin_tensor *tensor, void *dst, size_t size)
{
    return tensor_copy((gpu_tensor *)tensor, true, dst, size);
}

static void tensor_free(rn_plugin_tensor *tensor)
{
    gpu_tensor *t = (gpu_tensor *)tensor;
    if (t == NULL)
        return;
    clReleaseMemObject(t->mem.mem);
    free(t);
}

const rn_remote_tensor_ops gpu_tensor_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .get_property = tensor_get_property,
    .copy_from_host = tensor_copy_from_host,
    .copy_to_host = tensor_copy_to_host,
    .free = tensor_free,
};

rn_status gpu_remote_view(const struct rn_plugin_context *context, const rn_plugin_tensor *tensor,
                          rn_kernel_tensor *out)
{
    const gpu_context *c = (const gpu_context *)context;
    const gpu_tensor *t = (const gpu_tensor *)tensor;
    if (t->context->dev->context != c->dev->context)
        return rn_set_error(RN_INVALID_ARG,
                            "GPU: the remote tensor's cl_mem is in another OpenCL context than "
                            "the one the model runs in (its device '%s', the model's '%s')",
                            t->context->dev->name, c->dev->name);
    *out = t->td;
    return RN_OK;
}
