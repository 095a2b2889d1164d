/* Device memory: the arenas of requests (one cl_mem and one in-order queue
 * each) with the run's two stages over the queue (flush, and the event that
 * completes the run once the queue drained), the device layout whose
 * conversions are the uploads and downloads, and the part every GPU
 * kernel's state shares (layouts, constants uploaded once, OpenCL kernels,
 * gpu_launch, which enqueues them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan.h"
#include "plugins/gpu/gpu.h"

/* ---- arenas ---- */

static rn_status arena_alloc(void *ctx, size_t size, size_t alignment, void **buffer)
{
    (void)alignment; /* a cl_mem starts at the device's base alignment */
    gpu_memory *m = ctx;
    gpu_device *d = m->dev;
    gpu_arena *a = calloc(1, sizeof *a);
    if (a == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    a->dev = d;
    a->owner = m;
    cl_int err;
    a->mem = clCreateBuffer(d->context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (a->mem == NULL) {
        free(a);
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: cannot allocate a %zu-byte arena: %s", size,
                            gpu_cl_error(err));
    }
    if (d->queue != NULL && clRetainCommandQueue(d->queue) == CL_SUCCESS)
        a->queue = d->queue; /* the user's: what they enqueued runs first */
    else
        a->queue = clCreateCommandQueue(d->context, d->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (a->queue == NULL) {
        clReleaseMemObject(a->mem);
        free(a);
        return rn_set_error(RN_DEVICE_ERROR, "GPU: clCreateCommandQueue failed: %s",
                            gpu_cl_error(err));
    }
    pthread_mutex_init(&a->events.lock, NULL);
    if (m->trace != NULL)
        gpu_trace_attach(m->trace, a);
    *buffer = a;
    return RN_OK;
}

static void arena_free(void *ctx, void *buffer)
{
    (void)ctx;
    gpu_arena *a = buffer;
    if (a == NULL)
        return;
    clFinish(a->queue); /* nothing of a cancelled run may still use the memory */
    gpu_events_release(a);
    free(a->events.items);
    pthread_mutex_destroy(&a->events.lock);
    clReleaseCommandQueue(a->queue);
    clReleaseMemObject(a->mem);
    free(a);
}

const rn_allocator gpu_allocator_template = {
    .name = "GPU",
    .host = false,
    .alloc = arena_alloc,
    .free = arena_free,
};

/* ---- the run's stages over its queue ---- */

int gpu_stage_flush(plugin_request *r, uint32_t stage, void *ctx)
{
    (void)stage, (void)ctx;
    gpu_arena *a = plugin_request_arena(r);
    cl_int err = a != NULL ? clFlush(a->queue) : CL_SUCCESS;
    if (err != CL_SUCCESS)
        return rn_set_error(RN_DEVICE_ERROR, "GPU: clFlush failed: %s", gpu_cl_error(err));
    return RN_OK;
}

/* The marker's callback, on the OpenCL runtime's thread: the run's
 * commands are complete, so its nodes get their device times, then the
 * event completes the stage. */
static void CL_CALLBACK queue_drained(cl_event ev, cl_int status, void *arg)
{
    plugin_event *e = arg;
    gpu_arena *a = plugin_event_arena(e);
    size_t count = 0;
    rn_profiling_info *entries = plugin_event_profile_entries(e, &count);
    if (a->owner != NULL)
        gpu_trace_record(a->owner->trace, a);
    gpu_events_apply(a, entries, count);
    clReleaseEvent(ev);
    plugin_event_signal(e, status == CL_COMPLETE ? RN_OK : RN_DEVICE_ERROR);
}

int gpu_arena_arm(void *arena, plugin_event *event)
{
    gpu_arena *a = arena;
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(a->queue, 0, NULL, &ev);
    if (err == CL_SUCCESS)
        err = clFlush(a->queue);
    if (err == CL_SUCCESS &&
        (err = clSetEventCallback(ev, CL_COMPLETE, queue_drained, event)) == CL_SUCCESS)
        return PLUGIN_STAGE_PENDING;
    if (ev != NULL)
        clReleaseEvent(ev);
    /* Nothing of the run may still use the caller's memory once it
     * completes (the copies are non-blocking). */
    clFinish(a->queue);
    return rn_set_error(RN_DEVICE_ERROR, "GPU: waiting for the queue failed: %s",
                        gpu_cl_error(err));
}

/* ---- the device layout ---- */

static bool layout_equal(const rn_layout *a, const rn_layout *b)
{
    (void)a, (void)b;
    return true; /* plain row-major in device memory, whatever the shape */
}

static void count(atomic_uint_fast64_t *device, gpu_memory *owner, bool up, size_t bytes)
{
    atomic_fetch_add(device, bytes);
    if (owner != NULL)
        atomic_fetch_add(up ? &owner->bytes_uploaded : &owner->bytes_downloaded, bytes);
}

/* A model input or result bound to a remote tensor (device memory, data
 * NULL): one copy on the device, in the run's queue after the user's
 * commands when it is theirs. Not an upload or a download. */
static rn_status device_copy(const gpu_arena *queue_of, const rn_kernel_tensor *src,
                             const rn_kernel_tensor *dst, size_t bytes)
{
    const gpu_arena *s = src->buffer, *d = dst->buffer;
    cl_int err = clEnqueueCopyBuffer(queue_of->queue, s->mem, d->mem, src->offset, dst->offset,
                                     bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return rn_set_error(RN_DEVICE_ERROR,
                            "GPU: a %zu-byte copy from or into a remote tensor "
                            "failed: %s",
                            bytes, gpu_cl_error(err));
    return RN_OK;
}

/* Uploads (plain host → device) and downloads (device → plain host), both
 * non-blocking: enqueued on the run's queue like the kernels, so that no
 * worker waits for the device and the uploads, kernels and downloads of
 * different requests (each on its own queue) overlap. The host memory they
 * read or write stays valid until the run completes, and the run completes
 * only after the wait stage, which runs after a failure or a cancellation
 * too (plugin_stage.always) and completes once the queue has drained. A
 * plain side in device memory (a remote tensor) is copied on the device. */
static rn_status layout_convert(const rn_kernel_tensor *src, rn_kernel_tensor *dst)
{
    if (src->data == NULL && src->buffer != NULL && dst->layout != NULL) {
        /* A remote input (an upload the plan could not skip). */
        return src->nbytes > 0 ? device_copy(dst->buffer, src, dst, src->nbytes) : RN_OK;
    }
    if (src->layout == NULL && dst->layout != NULL) {
        gpu_arena *a = dst->buffer;
        if (src->nbytes == 0)
            return RN_OK;
        cl_event ev = NULL;
        cl_int err = clEnqueueWriteBuffer(a->queue, a->mem, CL_FALSE, dst->offset, src->nbytes,
                                          src->data, 0, NULL, &ev);
        gpu_record_copy(a, ev);
        if (err != CL_SUCCESS)
            return rn_set_error(RN_DEVICE_ERROR, "GPU: uploading %zu bytes failed: %s", src->nbytes,
                                gpu_cl_error(err));
        count(&a->dev->bytes_uploaded, a->owner, true, src->nbytes);
        return RN_OK;
    }
    if (src->layout != NULL && dst->layout == NULL) {
        gpu_arena *a = src->buffer;
        if (dst->nbytes == 0)
            return RN_OK;
        if (dst->data == NULL && dst->buffer != NULL)
            return device_copy(a, src, dst, dst->nbytes);
        cl_event ev = NULL;
        cl_int err = clEnqueueReadBuffer(a->queue, a->mem, CL_FALSE, src->offset, dst->nbytes,
                                         dst->data, 0, NULL, &ev);
        gpu_record_copy(a, ev);
        if (err != CL_SUCCESS)
            return rn_set_error(RN_DEVICE_ERROR, "GPU: downloading %zu bytes failed: %s",
                                dst->nbytes, gpu_cl_error(err));
        count(&a->dev->bytes_downloaded, a->owner, false, dst->nbytes);
        return RN_OK;
    }
    return rn_set_error(RN_INTERNAL, "GPU: a conversion between two device tensors");
}

const rn_layout_ops gpu_layout_ops = {
    .abi_version = RN_KERNEL_ABI_VERSION,
    .device = "GPU",
    .equal = layout_equal,
    .convert = layout_convert,
};

/* ---- the common part of kernel states ---- */

rn_status gpu_fail(const gpu_node *g, const char *what, cl_int err)
{
    return rn_set_error(RN_DEVICE_ERROR, "GPU: node '%s': %s failed: %s",
                        g != NULL && g->name != NULL ? g->name : "?", what, gpu_cl_error(err));
}

static size_t elem_bytes(rn_element_type t)
{
    return plugin_tensor_nbytes(t, 1);
}

static size_t port_bytes(rn_element_type type, rn_partial_shape s)
{
    size_t n = 1;
    for (int d = 0; d < s.rank; d++)
        n *= (size_t)s.dims[d];
    return n * elem_bytes(type);
}

rn_status gpu_node_init(gpu_node *g, const rn_node *node, const char *const *kernels)
{
    gpu_device *d = gpu_current();
    if (d == NULL)
        return rn_set_error(RN_INTERNAL, "GPU: node '%s' prepared outside a GPU compile",
                            rn_node_name(node));
    g->dev = d;
    g->name = rn_node_name(node);
    g->n_in = rn_node_input_count(node);
    g->n_out = rn_node_output_count(node);
    if (g->n_in > GPU_MAX_IO || g->n_out > GPU_MAX_IO)
        return rn_set_error(RN_UNSUPPORTED, "GPU: node '%s' has over %d inputs or outputs", g->name,
                            GPU_MAX_IO);
    pthread_mutex_init(&g->lock, NULL);
    for (int i = 0; i < g->n_out; i++)
        g->out_layout[i] = (rn_layout){
            &gpu_layout_ops, "cl",
            port_bytes(rn_node_output_type(node, i), rn_node_output_shape(node, i)), NULL};
    for (int i = 0; i < g->n_in; i++) {
        g->in_layout[i] = (rn_layout){
            &gpu_layout_ops, "cl",
            port_bytes(rn_node_input_type(node, i), rn_node_input_shape(node, i)), NULL};
        const rn_kernel_tensor *c = rn_node_input_constant(node, i);
        g->is_constant[i] = c != NULL;
        if (c == NULL || c->nbytes == 0)
            continue;
        cl_int err;
        g->constant[i] = clCreateBuffer(d->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                        c->nbytes, c->data, &err);
        if (g->constant[i] == NULL)
            return gpu_fail(g, "uploading a constant input", err);
    }
    if (kernels == NULL)
        return RN_OK;
    cl_program prog;
    rn_status st = gpu_device_program(d, &prog);
    if (st != RN_OK)
        return st;
    for (int k = 0; kernels[k] != NULL && k < GPU_MAX_KERNELS; k++) {
        cl_int err;
        g->kernel[k] = clCreateKernel(prog, kernels[k], &err);
        if (g->kernel[k] == NULL)
            return gpu_fail(g, kernels[k], err);
        g->n_kernels = k + 1;
    }
    return RN_OK;
}

void gpu_node_release(gpu_node *g)
{
    if (g == NULL || g->dev == NULL)
        return;
    for (int i = 0; i < g->n_in; i++)
        if (g->constant[i] != NULL)
            clReleaseMemObject(g->constant[i]);
    for (int k = 0; k < g->n_kernels; k++)
        clReleaseKernel(g->kernel[k]);
    pthread_mutex_destroy(&g->lock);
}

rn_status gpu_state_new(size_t size, const rn_node *node, const char *const *kernels, void **out)
{
    gpu_node *g = calloc(1, size);
    if (g == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    rn_status st = gpu_node_init(g, node, kernels);
    if (st != RN_OK) {
        gpu_state_free(g);
        return st;
    }
    *out = g;
    return RN_OK;
}

void gpu_state_free(void *state)
{
    gpu_node_release(state);
    free(state);
}

const rn_layout *gpu_input_layout(const void *state, int index)
{
    const gpu_node *g = state;
    if (index < 0 || index >= g->n_in || g->is_constant[index])
        return NULL;
    return &g->in_layout[index];
}

const rn_layout *gpu_output_layout(const void *state, int index)
{
    const gpu_node *g = state;
    return index >= 0 && index < g->n_out ? &g->out_layout[index] : NULL;
}

gpu_mem gpu_input(const gpu_node *g, const rn_kernel_args *args, int i)
{
    if (i >= args->n_inputs || args->inputs[i].type == RN_UNDEFINED)
        return (gpu_mem){NULL, 0};
    if (g->constant[i] != NULL)
        return (gpu_mem){g->constant[i], 0};
    const rn_kernel_tensor *t = &args->inputs[i];
    const gpu_arena *a = t->buffer;
    return (gpu_mem){a != NULL ? a->mem : NULL, t->offset / 4};
}

gpu_mem gpu_output(const rn_kernel_args *args, int i)
{
    const rn_kernel_tensor *t = &args->outputs[i];
    const gpu_arena *a = t->buffer;
    return (gpu_mem){a != NULL ? a->mem : NULL, t->offset / 4};
}

gpu_mem gpu_scratch(const rn_kernel_args *args)
{
    const gpu_arena *a = args->scratch.buffer;
    return (gpu_mem){a != NULL ? a->mem : NULL, args->scratch.offset / 4};
}

gpu_arena *gpu_run_arena(const rn_kernel_args *args)
{
    gpu_arena *a = args->outputs[0].buffer;
    if (a != NULL && a->queue != NULL)
        return a;
    /* The output is a remote tensor the kernel writes in place (the plan
     * skipped its download): the run's arena is the request's, and the
     * plan passes the request as alloc_ctx. */
    return plugin_request_arena(args->alloc_ctx);
}

cl_command_queue gpu_queue(const rn_kernel_args *args)
{
    return gpu_run_arena(args)->queue;
}

rn_status gpu_launch(gpu_node *g, const rn_kernel_args *args, int k, const gpu_arg *a, int n,
                     size_t global)
{
    if (global == 0)
        return RN_OK;
    cl_int err = CL_SUCCESS;
    cl_event ev = NULL;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < n && err == CL_SUCCESS; i++)
        err = clSetKernelArg(g->kernel[k], (cl_uint)i, a[i].size, a[i].value);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(gpu_queue(args), g->kernel[k], 1, NULL, &global, NULL, 0, NULL,
                                     &ev);
    pthread_mutex_unlock(&g->lock);
    gpu_record_event(g, args, ev);
    if (err != CL_SUCCESS)
        return gpu_fail(g, "enqueueing a kernel", err);
    return RN_OK;
}

/* ---- supports and activations ---- */

bool gpu_static_f32(const rn_node *node, uint32_t any_type, const char **why)
{
    for (int i = 0; i < rn_node_input_count(node); i++) {
        rn_element_type t = rn_node_input_type(node, i);
        if (t == RN_UNDEFINED && rn_node_input_name(node, i)[0] == '\0')
            continue;
        if (t != RN_F32 && !(any_type >> i & 1)) {
            *why = "GPU: f32 tensors only";
            return false;
        }
        rn_partial_shape s = rn_node_input_shape(node, i);
        if (s.rank < 0) {
            *why = "GPU: static shapes only";
            return false;
        }
        for (int d = 0; d < s.rank; d++)
            if (s.dims[d] < 0) {
                *why = "GPU: static shapes only";
                return false;
            }
    }
    for (int i = 0; i < rn_node_output_count(node); i++) {
        if (rn_node_output_name(node, i)[0] == '\0')
            continue;
        rn_partial_shape s = rn_node_output_shape(node, i);
        if (rn_node_output_type(node, i) != RN_F32) {
            *why = "GPU: f32 tensors only";
            return false;
        }
        if (s.rank < 0) {
            *why = "GPU: static shapes only";
            return false;
        }
        for (int d = 0; d < s.rank; d++)
            if (s.dims[d] < 0) {
                *why = "GPU: static shapes only";
                return false;
            }
    }
    return true;
}

/* Op names and their act() codes: the unary ops, and the activations a
 * FusedConv or FusedGemm names. */
static const struct {
    const char *name;
    int act;
} activations[] = {
    {"Relu", GPU_ACT_RELU},
    {"LeakyRelu", GPU_ACT_LEAKY_RELU},
    {"Clip", GPU_ACT_CLIP},
    {"Sigmoid", GPU_ACT_SIGMOID},
    {"Tanh", GPU_ACT_TANH},
    {"Elu", GPU_ACT_ELU},
    {"HardSigmoid", GPU_ACT_HARD_SIGMOID},
    {"Gelu", GPU_ACT_GELU},
    {"Abs", GPU_ACT_ABS},
    {"Neg", GPU_ACT_NEG},
    {"Exp", GPU_ACT_EXP},
    {"Log", GPU_ACT_LOG},
    {"Sqrt", GPU_ACT_SQRT},
    {"Erf", GPU_ACT_ERF},
    {"Reciprocal", GPU_ACT_RECIPROCAL},
};

int gpu_activation(const char *name)
{
    for (size_t i = 0; i < sizeof activations / sizeof activations[0]; i++)
        if (strcmp(name, activations[i].name) == 0)
            return activations[i].act;
    return -1;
}

bool gpu_fused_activation(const rn_node *node, int *act, float *a0, float *a1, const char **why)
{
    const char *name = rn_node_attr_string(node, "activation", "");
    const float *p = NULL;
    int np = rn_node_attr_floats(node, "activation_params", &p);
    *a0 = np > 0 ? p[0] : 0.0f;
    *a1 = np > 1 ? p[1] : 0.0f;
    *act = name[0] == '\0' ? GPU_ACT_NONE : gpu_activation(name);
    if (*act < 0) {
        *why = "GPU: this fused activation is not implemented";
        return false;
    }
    return true;
}

rn_status gpu_bias_act(gpu_node *g, const rn_kernel_args *args, int k, gpu_mem y, gpu_mem bias,
                       gpu_mem residual, int channels, int inner, int n, int act, float a0,
                       float a1)
{
    int has_bias = bias.mem != NULL, has_res = residual.mem != NULL;
    if (!has_bias && !has_res && act == GPU_ACT_NONE)
        return RN_OK;
    cl_mem b = has_bias ? bias.mem : y.mem, r = has_res ? residual.mem : y.mem;
    int yoff = (int)y.off, boff = (int)bias.off, roff = (int)residual.off;
    gpu_arg a[] = {GPU_ARG(y.mem),    GPU_ARG(yoff),  GPU_ARG(b),    GPU_ARG(boff),
                   GPU_ARG(has_bias), GPU_ARG(r),     GPU_ARG(roff), GPU_ARG(has_res),
                   GPU_ARG(channels), GPU_ARG(inner), GPU_ARG(act),  GPU_ARG(a0),
                   GPU_ARG(a1)};
    return gpu_launch(g, args, k, a, (int)(sizeof a / sizeof a[0]), (size_t)n);
}
