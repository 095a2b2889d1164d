/* The GPU device plugin: OpenCL through the ICD loader (plugins/gpu/gpu.h
 * says how its memory and kernels work).
 *
 * Compile: the default pass pipeline (constants folded with REF's kernels,
 * on the host) plus the convolution and GEMM fusions, then the generic plan
 * with the device allocator, so the plan inserts uploads and downloads as
 * layout conversions. The request pipeline adds two device stages after the
 * kernels: execute (flush the request's queue) and wait (a marker whose
 * event callback completes the stage, from the OpenCL runtime's thread).
 * Requests have a queue each, so request k+1 uploads while request k
 * computes.
 *
 * `create` fails with the reason when there is no OpenCL platform or
 * device; the Core reports the device as failed and the others run on. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/const_eval.h"
#include "plugins/api/export.h"
#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/query.h"
#include "plugins/api/remote.h"
#include "plugins/gpu/export.h"
#include "plugins/gpu/gpu.h"
#include "plugins/ref/ref.h"
#include "transforms/transforms.h"

#define GPU_NAME "GPU"
#define GPU_ARCH "opencl"

#define GPU_MAX_DEVICES 16

typedef struct rn_plugin {
    gpu_device *dev;                        /* device 0 (opened by create) */
    gpu_device *devs[GPU_MAX_DEVICES];      /* DEVICE_ID i, opened on first use */
    gpu_context *default_context;           /* device 0's */
    gpu_context *contexts[GPU_MAX_DEVICES]; /* DEVICE_ID i's, for compiles without a context */
    int n_devices;
    plugin_kernel_registry *kernels; /* the GPU's */
    plugin_kernel_registry *folding; /* REF's: constant folding on the host */
    pthread_mutex_t lock;            /* guards props, devs and contexts */
    plugin_properties props;
} gpu_plugin;

typedef struct rn_plugin_compiled {
    gpu_plugin *plugin;
    plugin_plan *plan;
    gpu_context *context;
    gpu_device *dev;
    gpu_memory memory;      /* the arenas' device and bytes moved */
    rn_allocator allocator; /* ctx: memory */
    pthread_mutex_t lock;   /* guards props */
    plugin_properties props;
    uint32_t optimal_requests;
    char network_name[256];
    bool program_from_cache; /* GPU_PROGRAM_FROM_CACHE */
} gpu_compiled;

static const char *const gpu_ro_device_keys[] = {
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
    "GPU_BYTES_UPLOADED",
    "GPU_BYTES_DOWNLOADED",
    NULL,
};

static const char *const gpu_ro_compiled_keys[] = {
    "SUPPORTED_PROPERTIES",
    "NETWORK_NAME",
    "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
    "EXECUTION_DEVICES",
    "GPU_BYTES_UPLOADED",
    "GPU_BYTES_DOWNLOADED",
    "GPU_PROGRAM_FROM_CACHE",
    NULL,
};

/* Read-write keys of the device besides the common ones: CACHE_DIR, where
 * runnel's program binaries are kept (the Core passes its own). */
static const char *const gpu_rw_device_keys[] = {"CACHE_DIR", NULL};

/* ---- the stages ---- */

static int stage_execute(plugin_request *r, uint32_t stage, void *ctx)
{
    (void)stage, (void)ctx;
    gpu_arena *a = plugin_request_arena(r);
    cl_int err = a != NULL ? clFlush(a->queue) : CL_SUCCESS;
    if (err != CL_SUCCESS)
        return rn_set_error(RN_DEVICE_ERROR, "GPU: clFlush failed: %s", gpu_cl_error(err));
    return RN_OK;
}

typedef struct wait_job {
    plugin_request *request;
    uint32_t stage;
    gpu_arena *arena;
    /* Set before the callback is registered, read first by the callback:
     * what the stage did before is visible to the thread that completes it
     * (the OpenCL runtime's, whose own synchronisation a sanitizer cannot
     * see). */
    atomic_int armed;
} wait_job;

static void CL_CALLBACK wait_done(cl_event ev, cl_int status, void *arg)
{
    wait_job *job = arg;
    (void)atomic_load_explicit(&job->armed, memory_order_acquire);
    plugin_request *r = job->request;
    uint32_t stage = job->stage;
    /* The run's commands are complete: its nodes' device times. */
    size_t count = 0;
    rn_profiling_info *entries = plugin_request_profile_entries(r, &count);
    if (job->arena->owner != NULL)
        gpu_trace_record(job->arena->owner->trace, job->arena);
    gpu_events_apply(job->arena, entries, count);
    free(job);
    clReleaseEvent(ev);
    plugin_request_complete_stage(r, stage, status == CL_COMPLETE ? RN_OK : RN_DEVICE_ERROR);
}

/* Completes when everything the run queued has run: a marker's event. It
 * runs after a failed or cancelled run too (plugin_stage.always): the
 * uploads and downloads are non-blocking, and the run must not complete
 * while one still reads or writes the caller's memory. Once the callback
 * is registered the run may complete (and the request be freed) at any
 * moment: nothing of it is touched after. */
static int stage_wait(plugin_request *r, uint32_t stage, void *ctx)
{
    (void)ctx;
    gpu_arena *a = plugin_request_arena(r);
    if (a == NULL)
        return RN_OK;
    cl_command_queue queue = a->queue;
    wait_job *job = malloc(sizeof *job);
    if (job == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    job->request = r;
    job->stage = stage;
    job->arena = a;
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(queue, 0, NULL, &ev);
    if (err == CL_SUCCESS)
        err = clFlush(queue);
    if (err == CL_SUCCESS) {
        atomic_store_explicit(&job->armed, 1, memory_order_release);
        err = clSetEventCallback(ev, CL_COMPLETE, wait_done, job);
        if (err == CL_SUCCESS)
            return PLUGIN_STAGE_PENDING;
    }
    if (ev != NULL)
        clReleaseEvent(ev);
    free(job);
    /* Nothing of the run may still use the caller's memory once it
     * completes (the copies are non-blocking). */
    clFinish(queue);
    return rn_set_error(RN_DEVICE_ERROR, "GPU: waiting for the queue failed: %s",
                        gpu_cl_error(err));
}

/* ---- plugin ---- */

static rn_status gpu_create(gpu_plugin **out)
{
    gpu_plugin *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    rn_status st = gpu_device_open(0, &p->dev);
    if (st == RN_OK) {
        p->devs[0] = p->dev;
        p->n_devices = p->dev->n_devices < GPU_MAX_DEVICES ? p->dev->n_devices : GPU_MAX_DEVICES;
        st = gpu_context_default(p->dev, 0, &p->default_context);
    }
    if (st == RN_OK)
        st = plugin_kernel_registry_create(&p->kernels);
    if (st == RN_OK)
        st = plugin_kernel_registry_add_list(p->kernels, gpu_kernels);
    if (st == RN_OK)
        st = plugin_kernel_registry_create(&p->folding);
    if (st == RN_OK)
        st = ref_register_kernels(p->folding);
    if (st != RN_OK) {
        plugin_kernel_registry_free(p->kernels);
        plugin_kernel_registry_free(p->folding);
        gpu_context_free(p->default_context);
        gpu_device_close(p->dev);
        free(p);
        return st;
    }
    pthread_mutex_init(&p->lock, NULL);
    plugin_properties_default(&p->props);
    *out = p;
    return RN_OK;
}

static void gpu_destroy(gpu_plugin *p)
{
    if (p == NULL)
        return;
    plugin_kernel_registry_free(p->kernels);
    plugin_kernel_registry_free(p->folding);
    gpu_context_free(p->default_context);
    for (int i = 0; i < GPU_MAX_DEVICES; i++) {
        gpu_context_free(p->contexts[i]);
        gpu_device_close(p->devs[i]);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* "0 1 ..": the DEVICE_IDs. */
static void available_devices(const gpu_plugin *p, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n_devices && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", i ? " " : "", i);
}

/* The index DEVICE_ID names ("" is 0); an error naming the available ones. */
static rn_status device_index(const gpu_plugin *p, const char *id, int *out)
{
    char *end;
    long v = id[0] == '\0' ? 0 : strtol(id, &end, 10);
    if (id[0] == '\0' || (id[0] >= '0' && id[0] <= '9' && *end == '\0' && v < p->n_devices)) {
        *out = (int)v;
        return RN_OK;
    }
    char list[128];
    available_devices(p, list, sizeof list);
    return rn_set_error(RN_INVALID_ARG, "GPU: DEVICE_ID '%s' does not exist (available: %s)", id,
                        list);
}

/* The plugin's device `index`, opened on first use. */
static rn_status open_device(void *ctx, int index, gpu_device **out)
{
    gpu_plugin *p = ctx;
    char id[16];
    snprintf(id, sizeof id, "%d", index);
    rn_status st = device_index(p, id, &index);
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&p->lock);
    if (p->devs[index] == NULL)
        st = gpu_device_open(index, &p->devs[index]);
    *out = p->devs[index];
    pthread_mutex_unlock(&p->lock);
    return st;
}

/* The context a compile without one runs in: device `index`'s. */
static rn_status device_context(gpu_plugin *p, int index, gpu_context **out)
{
    if (index == 0) {
        *out = p->default_context;
        return RN_OK;
    }
    gpu_device *dev;
    rn_status st = open_device(p, index, &dev);
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&p->lock);
    if (p->contexts[index] == NULL)
        st = gpu_context_default(dev, index, &p->contexts[index]);
    *out = p->contexts[index];
    pthread_mutex_unlock(&p->lock);
    return st;
}

static rn_status gpu_create_context(gpu_plugin *p, const rn_property *params, size_t n,
                                    const rn_remote_context_ops **ops, rn_plugin_context **context)
{
    gpu_context *c;
    rn_status st = gpu_context_create(params, n, open_device, p, &c);
    if (st != RN_OK)
        return st;
    *ops = &gpu_context_ops;
    *context = (rn_plugin_context *)c;
    return RN_OK;
}

static rn_status gpu_default_context(gpu_plugin *p, const rn_remote_context_ops **ops,
                                     rn_plugin_context **context)
{
    *ops = &gpu_context_ops;
    *context = (rn_plugin_context *)p->default_context;
    return RN_OK;
}

static rn_status gpu_set_property(gpu_plugin *p, const rn_property *props, size_t n)
{
    int index;
    for (size_t i = 0; i < n; i++)
        if (props[i].key != NULL && props[i].value != NULL &&
            strcmp(props[i].key, "DEVICE_ID") == 0 &&
            device_index(p, props[i].value, &index) != RN_OK)
            return RN_INVALID_ARG;
    /* CACHE_DIR is the device's; the others are the common ones. */
    rn_property *rest = calloc(n + 1, sizeof *rest);
    if (rest == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    const char *cache_dir = NULL;
    size_t n_rest = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(props[i].key, "CACHE_DIR") == 0)
            cache_dir = props[i].value;
        else
            rest[n_rest++] = props[i];
    rn_status st = RN_OK;
    if (cache_dir != NULL && strlen(cache_dir) >= sizeof p->dev->cache_dir)
        st = rn_set_error(RN_INVALID_ARG, "GPU: property CACHE_DIR: the path is too long");
    pthread_mutex_lock(&p->lock);
    if (st == RN_OK)
        st = plugin_properties_apply(&p->props, rest, n_rest);
    pthread_mutex_unlock(&p->lock);
    free(rest);
    if (st == RN_OK && cache_dir != NULL)
        gpu_device_set_cache_dir(p->dev, cache_dir);
    return st;
}

/* Joins NULL-terminated lists (c may be NULL) with spaces into buf. */
static rn_status join_keys(const char *key, const char *const *a, const char *const *b,
                           const char *const *c, char *buf, size_t size)
{
    char list[2048] = "";
    size_t used = 0;
    const char *const *lists[] = {a, b, c};
    for (int k = 0; k < 3; k++)
        for (const char *const *l = lists[k]; l != NULL && *l != NULL && used < sizeof list; l++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? " " : "", *l);
    return plugin_property_string(key, list, buf, size);
}

/* A device property, as device `d` (one of the plugin's) answers it. */
static rn_status get_property_of(gpu_plugin *p, gpu_device *d, const char *key, char *buf,
                                 size_t size)
{
    char tmp[64];
    const char *value = NULL;
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return join_keys(key, gpu_ro_device_keys, plugin_rw_property_keys, gpu_rw_device_keys, buf,
                         size);
    if (strcmp(key, "CACHE_DIR") == 0) {
        char dir[sizeof d->cache_dir];
        gpu_device_cache_dir(d, dir, sizeof dir);
        return plugin_property_string(key, dir, buf, size);
    }
    if (strcmp(key, "GPU_BYTES_UPLOADED") == 0 || strcmp(key, "GPU_BYTES_DOWNLOADED") == 0) {
        bool up = strcmp(key, "GPU_BYTES_UPLOADED") == 0;
        snprintf(tmp, sizeof tmp, "%" PRIuFAST64,
                 (uint_fast64_t)atomic_load(up ? &d->bytes_uploaded : &d->bytes_downloaded));
        return plugin_property_string(key, tmp, buf, size);
    }
    char list[128];
    if (strcmp(key, "AVAILABLE_DEVICES") == 0) {
        available_devices(p, list, sizeof list);
        value = list;
    } else if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        value = d->name;
    else if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        value = d->architecture;
    else if (strcmp(key, "DEVICE_TYPE") == 0)
        value = d->device_type;
    else if (strcmp(key, "OPTIMIZATION_CAPABILITIES") == 0)
        value = "FP32 EXPORT_IMPORT";
    else if (strcmp(key, "RANGE_FOR_ASYNC_INFER_REQUESTS") == 0)
        value = "1 64 1";
    else if (strcmp(key, "RANGE_FOR_STREAMS") == 0)
        value = "1 64";
    else if (strcmp(key, "EXECUTION_DEVICES") == 0)
        value = GPU_NAME;
    else if (strcmp(key, "CACHING_PROPERTIES") == 0)
        value = "DEVICE_ARCHITECTURE INFERENCE_PRECISION_HINT EXECUTION_MODE_HINT";
    if (value != NULL)
        return plugin_property_string(key, value, buf, size);
    pthread_mutex_lock(&p->lock);
    rn_status st = plugin_properties_get(&p->props, key, buf, size);
    pthread_mutex_unlock(&p->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "GPU: unknown property '%s'", key);
    return st;
}

static rn_status gpu_get_property(gpu_plugin *p, const char *key, char *buf, size_t size)
{
    return get_property_of(p, p->dev, key, buf, size);
}

/* "GPU.N": device N's name, architecture, type and bytes moved (opened on
 * first use); CACHE_DIR and the common properties are the plugin's. */
static rn_status gpu_get_device_property(gpu_plugin *p, const char *id, const char *key, char *buf,
                                         size_t size)
{
    int index;
    gpu_device *d;
    rn_status st = device_index(p, id, &index);
    if (st == RN_OK)
        st = open_device(p, index, &d);
    if (st != RN_OK)
        return st;
    if (strcmp(key, "CACHE_DIR") == 0)
        d = p->dev;
    return get_property_of(p, d, key, buf, size);
}

/* ---- compiled models ---- */

static rn_status gpu_compiled_get_property(gpu_compiled *c, const char *key, char *buf, size_t size)
{
    char tmp[64];
    if (plugin_plan_get_property(c->plan, key, buf, size) == RN_OK)
        return RN_OK;
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return join_keys(key, gpu_ro_compiled_keys, plugin_plan_property_keys,
                         plugin_rw_property_keys, buf, size);
    if (strcmp(key, "NETWORK_NAME") == 0)
        return plugin_property_string(key, c->network_name, buf, size);
    if (strcmp(key, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", c->optimal_requests);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "EXECUTION_DEVICES") == 0)
        return plugin_property_string(key, GPU_NAME, buf, size);
    if (strcmp(key, "GPU_BYTES_UPLOADED") == 0 || strcmp(key, "GPU_BYTES_DOWNLOADED") == 0) {
        bool up = strcmp(key, "GPU_BYTES_UPLOADED") == 0;
        snprintf(tmp, sizeof tmp, "%" PRIuFAST64,
                 (uint_fast64_t)atomic_load(up ? &c->memory.bytes_uploaded
                                               : &c->memory.bytes_downloaded));
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "GPU_PROGRAM_FROM_CACHE") == 0)
        return plugin_property_string(key, c->program_from_cache ? "YES" : "NO", buf, size);
    pthread_mutex_lock(&c->lock);
    rn_status st = plugin_properties_get(&c->props, key, buf, size);
    pthread_mutex_unlock(&c->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "GPU compiled model: unknown property '%s'", key);
    return st;
}

static rn_status gpu_compiled_set_property(gpu_compiled *c, const rn_property *props, size_t n)
{
    pthread_mutex_lock(&c->lock);
    rn_status st = plugin_properties_set_compiled(&c->props, props, n);
    if (st == RN_OK) {
        plugin_plan_set_profiling(c->plan, c->props.enable_profiling);
        plugin_plan_set_log_level(c->plan, c->props.log_level);
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

static rn_status gpu_create_request(gpu_compiled *c, rn_infer_request *owner,
                                    rn_plugin_request **out)
{
    return plugin_request_create(c->plan, owner, out);
}

static rn_status gpu_pipeline(gpu_compiled *c, const rn_pipeline_stage **stages, size_t *count)
{
    return plugin_plan_pipeline(c->plan, stages, count);
}

static rn_status gpu_runtime_model(gpu_compiled *c, const rn_runtime_node **nodes, size_t *count)
{
    return plugin_plan_runtime_model(c->plan, nodes, count);
}

static rn_status gpu_export(gpu_compiled *c, void **data, size_t *size)
{
    pthread_mutex_lock(&c->lock);
    plugin_properties props = c->props;
    pthread_mutex_unlock(&c->lock);
    return gpu_export_blob(c->plugin->dev, c->plan, GPU_NAME, GPU_ARCH, &props, data, size);
}

/* The plan's trace, then the device's commands (trace.c) as one more
 * process after the plan's streams and executors. */
static rn_status gpu_write_trace(gpu_compiled *c, const char *path)
{
    rn_status st = plugin_plan_write_trace(c->plan, path);
    if (st == RN_OK && c->memory.trace != NULL)
        st = gpu_trace_append(c->memory.trace, path, plugin_plan_trace_origin_ns(c->plan), 1000);
    return st;
}

static void gpu_compiled_free(gpu_compiled *c)
{
    if (c == NULL)
        return;
    plugin_plan_free(c->plan);
    gpu_trace_free(c->memory.trace);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static const rn_compiled_model_ops gpu_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = gpu_create_request,
    .request_ops = &plugin_generic_request_ops,
    .get_property = gpu_compiled_get_property,
    .export_model = gpu_export,
    .write_trace = gpu_write_trace,
    .get_runtime_model = gpu_runtime_model,
    .set_property = gpu_compiled_set_property,
    .get_pipeline = gpu_pipeline,
    .free = gpu_compiled_free,
};

/* The passes: the default pipeline (constant folding on the host with
 * REF's kernels), then the fusions the GPU's kernels run (BatchNorm folded
 * into Conv, a residual Add and an activation into FusedConv/FusedGemm, a
 * decomposed Gelu and LayerNormalization into one node each). */
static rn_status gpu_transform(gpu_plugin *p, const plugin_properties *props, const graph *model,
                               graph **out)
{
    graph *g;
    rn_status st = graph_clone(model, &g);
    if (st != RN_OK)
        return st;
    transforms_options o = {.const_eval = plugin_const_eval,
                            .const_eval_ctx = p->folding,
                            .fold_max_tensor_bytes = (size_t)1 << 30};
    transforms_pipeline *tp = NULL;
    st = transforms_default_pipeline(&o, &tp);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fold_batchnorm", transforms_fold_batchnorm, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fuse_gelu", transforms_fuse_gelu, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fuse_layernorm", transforms_fuse_layernorm, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fuse_activation", transforms_fuse_activation, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "eliminate_dead_nodes_after_fusion",
                                     transforms_eliminate_dead_nodes, NULL, 0);
    if (st == RN_OK && props->disable_transformations)
        st = transforms_pipeline_configure(tp, "-*,+add_preprocessing");
    if (st == RN_OK)
        st = transforms_pipeline_run(tp, g, NULL);
    transforms_pipeline_free(tp);
    if (st != RN_OK) {
        graph_free(g);
        return st;
    }
    *out = g;
    return RN_OK;
}

static rn_status gpu_query(gpu_plugin *p, const rn_graph *model, const rn_property *properties,
                           size_t n_properties, char ***names, bool **supported, size_t *count)
{
    plugin_properties props;
    pthread_mutex_lock(&p->lock);
    props = p->props;
    pthread_mutex_unlock(&p->lock);
    rn_status st = plugin_properties_apply(&props, properties, n_properties);
    if (st != RN_OK)
        return st;
    graph *g;
    if ((st = gpu_transform(p, &props, model, &g)) != RN_OK)
        return st;
    plugin_query_result q;
    st = plugin_query_model_transformed(model, g, p->kernels, &q);
    graph_free(g);
    if (st != RN_OK)
        return st;
    *names = q.names;
    *supported = q.supported;
    *count = q.count;
    return RN_OK;
}

/* A plan specialised for run-time input shapes: fold the shape arithmetic
 * they decide on the host; kernels prepared in this thread use the device. */
static rn_status gpu_specialize(void *ctx, graph *g)
{
    gpu_compiled *c = ctx;
    gpu_set_current(c->dev);
    transforms_fold_options fold = {.eval = plugin_const_eval,
                                    .eval_ctx = c->plugin->folding,
                                    .max_tensor_bytes = (size_t)1 << 30};
    int changes = 0;
    rn_status st = transforms_fold_constants(g, &fold, &changes);
    if (st == RN_OK && changes > 0)
        st = transforms_eliminate_dead_nodes(g, NULL, &changes);
    return st;
}

static rn_status gpu_build(gpu_plugin *p, gpu_compiled *c, const graph *g)
{
    plugin_plan_options o = {.profiling = c->props.enable_profiling,
                             .trace = c->props.enable_trace,
                             .stage_ctx = c,
                             .context = (const rn_plugin_context *)c->context,
                             .remote_view = gpu_remote_view,
                             .device = GPU_NAME,
                             .log_level = c->props.log_level,
                             .allocator = &c->allocator,
                             .specialize = c->props.disable_transformations ? NULL : gpu_specialize,
                             .specialize_ctx = c,
                             .n_stages = 2};
    plugin_properties_streams(&c->props, executors_cpu_count(), &o.n_streams, &o.threads_per_stream,
                              &c->optimal_requests);
    o.stages[0] =
        (plugin_stage){EXECUTORS_STAGE_EXECUTE, EXECUTORS_ON_STREAM, stage_execute, false};
    o.stages[1] = (plugin_stage){EXECUTORS_STAGE_WAIT, EXECUTORS_ON_DEVICE_WAIT, stage_wait, true};
    /* A device keeps a few requests in flight: uploads of one while
     * another computes. */
    if (!c->props.exclusive_async_requests && c->optimal_requests < 4)
        c->optimal_requests = 4;
    snprintf(c->network_name, sizeof c->network_name, "%s", g->name);
    if (c->dev != p->dev) { /* another DEVICE_ID or a user's context: the plugin's CACHE_DIR */
        char dir[sizeof p->dev->cache_dir];
        gpu_device_cache_dir(p->dev, dir, sizeof dir);
        gpu_device_set_cache_dir(c->dev, dir);
    }
    rn_status st = c->props.enable_trace ? gpu_trace_new(&c->memory.trace) : RN_OK;
    if (st != RN_OK)
        return st;
    gpu_set_current(c->dev);
    st = plugin_plan_build(g, p->kernels, &o, &c->plan);
    gpu_set_current(NULL);
    gpu_program_origin origin = gpu_device_program_origin(c->dev);
    c->program_from_cache = origin == GPU_PROGRAM_FROM_CACHE_DIR || origin == GPU_PROGRAM_FROM_BLOB;
    return st;
}

static gpu_compiled *gpu_compiled_new(gpu_plugin *p)
{
    gpu_compiled *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
        return NULL;
    }
    c->plugin = p;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&p->lock);
    c->props = p->props;
    pthread_mutex_unlock(&p->lock);
    return c;
}

/* The context and device the model runs in: `context`, else the context
 * of the device DEVICE_ID names. */
static rn_status gpu_compiled_place(gpu_compiled *c, rn_plugin_context *context)
{
    int index = 0;
    rn_status st = RN_OK;
    if (context != NULL)
        c->context = (gpu_context *)context;
    else if ((st = device_index(c->plugin, c->props.device_id, &index)) == RN_OK)
        st = device_context(c->plugin, index, &c->context);
    if (st != RN_OK)
        return st;
    c->dev = gpu_context_device(c->context);
    c->memory.dev = c->dev;
    c->allocator = gpu_allocator_template;
    c->allocator.ctx = &c->memory;
    return RN_OK;
}

static rn_status gpu_compile(gpu_plugin *p, const rn_graph *model, rn_plugin_context *context,
                             const rn_property *properties, size_t n_properties,
                             const rn_compiled_model_ops **ops, gpu_compiled **compiled)
{
    gpu_compiled *c = gpu_compiled_new(p);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = plugin_properties_apply(&c->props, properties, n_properties);
    if (st == RN_OK)
        st = gpu_compiled_place(c, context);
    graph *g = NULL;
    if (st == RN_OK)
        st = gpu_transform(p, &c->props, model, &g);
    if (st == RN_OK)
        st = gpu_build(p, c, g);
    graph_free(g);
    if (st != RN_OK) {
        gpu_compiled_free(c);
        return st;
    }
    *ops = &gpu_compiled_ops;
    *compiled = c;
    return RN_OK;
}

static rn_status gpu_import(gpu_plugin *p, const void *data, size_t size,
                            rn_plugin_context *context, const rn_property *properties,
                            size_t n_properties, const rn_compiled_model_ops **ops,
                            gpu_compiled **compiled, const rn_graph **io)
{
    gpu_compiled *c = gpu_compiled_new(p);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    graph *g;
    uint8_t *record;
    size_t record_size;
    rn_status st = gpu_import_blob(data, size, GPU_NAME, GPU_ARCH, properties, n_properties,
                                   &c->props, &g, &record, &record_size);
    if (st == RN_OK && (st = gpu_compiled_place(c, context)) != RN_OK)
        graph_free(g);
    /* An intact record of another driver is ignored by the device. */
    if (st == RN_OK && record != NULL)
        gpu_device_offer_program(c->dev, record, record_size);
    free(record);
    if (st == RN_OK) {
        st = gpu_build(p, c, g); /* the stored graph is already transformed */
        graph_free(g);
    }
    if (st != RN_OK) {
        gpu_compiled_free(c);
        return st;
    }
    *ops = &gpu_compiled_ops;
    *compiled = c;
    *io = plugin_plan_graph(c->plan);
    return RN_OK;
}

const rn_plugin_ops gpu_plugin_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = GPU_NAME,
    .version = RN_VERSION_STRING,
    .create = gpu_create,
    .destroy = gpu_destroy,
    .set_property = gpu_set_property,
    .get_property = gpu_get_property,
    .query_model = gpu_query,
    .import_model = gpu_import,
    .create_context = gpu_create_context,
    .get_default_context = gpu_default_context,
    .compile_model = gpu_compile,
    .get_device_property = gpu_get_device_property,
};

const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version)
{
    (void)abi_version;
    return &gpu_plugin_ops;
}
