/* The GPU device plugin: OpenCL through the ICD loader (plugins/gpu/gpu.h
 * says how its memory and kernels work).
 *
 * Compile: the default pass pipeline (constants folded with REF's kernels,
 * on the host) plus the convolution and GEMM fusions, then the generic plan
 * with the device allocator, so the plan inserts uploads and downloads as
 * layout conversions. The request pipeline adds two device stages after the
 * kernels, over the request's queue (memory.c): execute (flush it) and wait
 * (a device event of plugins/api, signalled by a marker's callback from the
 * OpenCL runtime's thread).
 * Requests have a queue each, so request k+1 uploads while request k
 * computes.
 *
 * `create` fails with the reason when there is no OpenCL platform or
 * device; the Core reports the device as failed and the others run on.
 *
 * The rest (properties, query_model, compile, import, export, the runtime
 * model) is the generic plan-based device (plugins/api/device.h): this file
 * is the GPU's descriptor, its devices (DEVICE_ID) and what a compiled
 * model holds on one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/device.h"
#include "plugins/api/kit_id.h"
#include "plugins/gpu/export.h"
#include "plugins/gpu/gpu.h"
#include "plugins/ref/ref.h"

#define GPU_NAME "GPU"
#define GPU_ARCH "opencl"

#define GPU_MAX_DEVICES 16

/* The device's context: its OpenCL devices and their default contexts. */
typedef struct gpu_devices {
    gpu_device *dev;                        /* device 0 (opened by create) */
    gpu_device *devs[GPU_MAX_DEVICES];      /* DEVICE_ID i, opened on first use */
    gpu_context *default_context;           /* device 0's */
    gpu_context *contexts[GPU_MAX_DEVICES]; /* DEVICE_ID i's, for compiles without a context */
    int n_devices;
    pthread_mutex_t lock; /* guards devs and contexts */
} gpu_devices;

/* What a compiled model holds on its device (plugin_compiled.state). */
typedef struct gpu_placement {
    gpu_context *context;
    gpu_device *dev;
    gpu_memory memory;       /* the arenas' device and bytes moved */
    rn_allocator allocator;  /* ctx: memory */
    bool program_from_cache; /* GPU_PROGRAM_FROM_CACHE */
} gpu_placement;

static const char *const gpu_ro_device_keys[] = {"GPU_BYTES_UPLOADED", "GPU_BYTES_DOWNLOADED",
                                                 NULL};

static const char *const gpu_ro_compiled_keys[] = {
    "GPU_BYTES_UPLOADED",
    "GPU_BYTES_DOWNLOADED",
    "GPU_PROGRAM_FROM_CACHE",
    NULL,
};

/* Read-write keys of the device besides the table's: CACHE_DIR, where
 * runnel's program binaries are kept (the Core passes its own). */
static const char *const gpu_rw_device_keys[] = {"CACHE_DIR", NULL};

/* ---- devices ---- */

static void gpu_close(void *context)
{
    gpu_devices *p = context;
    if (p == NULL)
        return;
    gpu_context_free(p->default_context);
    for (int i = 0; i < GPU_MAX_DEVICES; i++) {
        gpu_context_free(p->contexts[i]);
        gpu_device_close(p->devs[i]);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static rn_status gpu_open(void **context)
{
    gpu_devices *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    pthread_mutex_init(&p->lock, NULL);
    rn_status st = gpu_device_open(0, &p->dev);
    if (st == RN_OK) {
        p->devs[0] = p->dev;
        p->n_devices = p->dev->n_devices < GPU_MAX_DEVICES ? p->dev->n_devices : GPU_MAX_DEVICES;
        st = gpu_context_default(p->dev, 0, &p->default_context);
    }
    if (st != RN_OK) {
        gpu_close(p);
        return st;
    }
    *context = p;
    return RN_OK;
}

static rn_status gpu_register_kernels(void *context, plugin_kernel_registry *r)
{
    (void)context;
    return plugin_kernel_registry_add_list(r, gpu_kernels);
}

/* "0 1 ..": the DEVICE_IDs. */
static void available_devices(const gpu_devices *p, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n_devices && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", i ? " " : "", i);
}

/* The index DEVICE_ID names ("" is 0); an error naming the available ones. */
static rn_status device_index(const gpu_devices *p, const char *id, int *out)
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

static rn_status gpu_check_device_id(void *context, const char *id)
{
    int index;
    return device_index(context, id, &index);
}

/* The plugin's device `index`, opened on first use. */
static rn_status open_device(void *ctx, int index, gpu_device **out)
{
    gpu_devices *p = ctx;
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
static rn_status device_context(gpu_devices *p, int index, gpu_context **out)
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

static rn_status gpu_create_context(void *context, const rn_property *params, size_t n,
                                    const rn_remote_context_ops **ops, rn_plugin_context **out)
{
    gpu_context *c;
    rn_status st = gpu_context_create(params, n, open_device, context, &c);
    if (st != RN_OK)
        return st;
    *ops = &gpu_context_ops;
    *out = (rn_plugin_context *)c;
    return RN_OK;
}

static rn_status gpu_default_context(void *context, const rn_remote_context_ops **ops,
                                     rn_plugin_context **out)
{
    *ops = &gpu_context_ops;
    *out = (rn_plugin_context *)((gpu_devices *)context)->default_context;
    return RN_OK;
}

/* CACHE_DIR: device 0's program cache (the others get it at compile). */
static rn_status gpu_set_property(void *context, const char *key, const char *value)
{
    gpu_devices *p = context;
    if (strlen(value) >= sizeof p->dev->cache_dir)
        return rn_set_error(RN_INVALID_ARG, "GPU: property %s: the path is too long", key);
    gpu_device_set_cache_dir(p->dev, value);
    return RN_OK;
}

static rn_status bytes_moved(const char *key, const atomic_uint_fast64_t *up,
                             const atomic_uint_fast64_t *down, char *buf, size_t size)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRIuFAST64,
             (uint_fast64_t)atomic_load(strcmp(key, "GPU_BYTES_UPLOADED") == 0 ? up : down));
    return plugin_property_string(key, tmp, buf, size);
}

/* Device `id`'s (NULL: 0) name, architecture, type and bytes moved (opened
 * on first use); CACHE_DIR is device 0's. */
static rn_status gpu_read(void *context, const char *id, const char *key, char *buf, size_t size)
{
    gpu_devices *p = context;
    gpu_device *d = p->dev;
    int index;
    rn_status st = RN_OK;
    if (id != NULL && (st = device_index(p, id, &index)) == RN_OK)
        st = open_device(p, index, &d);
    if (st != RN_OK)
        return st;
    char text[sizeof d->cache_dir];
    const char *value = NULL;
    if (strcmp(key, "CACHE_DIR") == 0) {
        gpu_device_cache_dir(p->dev, text, sizeof text);
        value = text;
    } else if (strncmp(key, "GPU_BYTES_", 10) == 0)
        return bytes_moved(key, &d->bytes_uploaded, &d->bytes_downloaded, buf, size);
    else if (strcmp(key, "AVAILABLE_DEVICES") == 0) {
        available_devices(p, text, sizeof text);
        value = text;
    } else if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        value = d->name;
    else if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        value = d->architecture;
    else if (strcmp(key, "DEVICE_TYPE") == 0)
        value = d->device_type;
    return value != NULL ? plugin_property_string(key, value, buf, size) : RN_NOT_FOUND;
}

/* The passes after the default pipeline (constant folding on the host with
 * REF's kernels): the fusions the GPU's kernels run (BatchNorm folded into
 * Conv, a residual Add and an activation into FusedConv/FusedGemm, a
 * decomposed Gelu and LayerNormalization into one node each). */
static rn_status gpu_add_passes(void *context, transforms_pipeline *tp,
                                const plugin_properties *props)
{
    (void)context, (void)props;
    rn_status st =
        transforms_pipeline_add(tp, "fold_batchnorm", transforms_fold_batchnorm, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fuse_gelu", transforms_fuse_gelu, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fuse_layernorm", transforms_fuse_layernorm, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "fuse_activation", transforms_fuse_activation, NULL, 0);
    if (st == RN_OK)
        st = transforms_pipeline_add(tp, "eliminate_dead_nodes_after_fusion",
                                     transforms_eliminate_dead_nodes, NULL, 0);
    return st;
}

/* ---- compiled models ---- */

static gpu_placement *placement(const plugin_compiled *c)
{
    return c->state;
}

/* The context and device the model runs in: `requested`, else the context
 * of the device DEVICE_ID names. */
static rn_status gpu_place(plugin_compiled *c, rn_plugin_context *requested)
{
    gpu_devices *p = c->device->context;
    gpu_placement *g = calloc(1, sizeof *g);
    if (g == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    c->state = g;
    int index = 0;
    rn_status st = RN_OK;
    if (requested != NULL)
        g->context = (gpu_context *)requested;
    else if ((st = device_index(p, c->props.device_id, &index)) == RN_OK)
        st = device_context(p, index, &g->context);
    if (st != RN_OK)
        return st;
    c->context = (const rn_plugin_context *)g->context;
    g->dev = gpu_context_device(g->context);
    g->memory.dev = g->dev;
    g->allocator = gpu_allocator_template;
    g->allocator.ctx = &g->memory;
    return RN_OK;
}

static void gpu_unplace(plugin_compiled *c)
{
    gpu_placement *g = placement(c);
    if (g != NULL)
        gpu_trace_free(g->memory.trace);
    free(g);
}

/* Two device stages after the kernels (memory.c): execute (flush the
 * request's queue) and wait (the generic device event, armed with a
 * marker on the queue); arenas in device memory; a few requests in
 * flight (uploads of one while another computes). Both run on the stream:
 * arming the marker does not block (it returns pending and the OpenCL
 * runtime's thread completes the stage), so the device-wait executor would
 * only add a hop to its thread and a wake-up per async request. */
static rn_status gpu_plan(plugin_compiled *c, plugin_plan_options *o)
{
    gpu_devices *p = c->device->context;
    gpu_placement *g = placement(c);
    o->remote_view = gpu_remote_view;
    o->allocator = &g->allocator;
    o->n_stages = 2;
    o->stages[0] = (plugin_stage){
        .stage = EXECUTORS_STAGE_EXECUTE, .where = EXECUTORS_ON_STREAM, .run = gpu_stage_flush};
    o->stages[1] = (plugin_stage){.stage = EXECUTORS_STAGE_WAIT,
                                  .where = EXECUTORS_ON_STREAM,
                                  .always = true,
                                  .arm = gpu_arena_arm};
    if (!c->props.exclusive_async_requests && c->optimal_requests < 4)
        c->optimal_requests = 4;
    if (g->dev != p->dev) { /* another DEVICE_ID or a user's context: the plugin's CACHE_DIR */
        char dir[sizeof p->dev->cache_dir];
        gpu_device_cache_dir(p->dev, dir, sizeof dir);
        gpu_device_set_cache_dir(g->dev, dir);
    }
    return c->props.enable_trace ? gpu_trace_new(&g->memory.trace) : RN_OK;
}

/* Kernels prepared in this thread use the model's device. */
static void gpu_enter(plugin_compiled *c, plugin_plan_options *o)
{
    (void)o;
    gpu_set_current(placement(c)->dev);
}

static rn_status gpu_built(plugin_compiled *c, rn_status st)
{
    gpu_placement *g = placement(c);
    gpu_set_current(NULL);
    gpu_program_origin origin = gpu_device_program_origin(g->dev);
    g->program_from_cache = origin == GPU_PROGRAM_FROM_CACHE_DIR || origin == GPU_PROGRAM_FROM_BLOB;
    return st;
}

static rn_status gpu_compiled_read(plugin_compiled *c, const char *key, char *buf, size_t size)
{
    gpu_placement *g = placement(c);
    if (strcmp(key, "GPU_PROGRAM_FROM_CACHE") == 0)
        return plugin_property_string(key, g->program_from_cache ? "YES" : "NO", buf, size);
    if (strncmp(key, "GPU_BYTES_", 10) == 0)
        return bytes_moved(key, &g->memory.bytes_uploaded, &g->memory.bytes_downloaded, buf, size);
    return RN_NOT_FOUND;
}

static rn_status gpu_export(plugin_compiled *c, const plugin_properties *props, void **data,
                            size_t *size)
{
    gpu_devices *p = c->device->context;
    return gpu_export_blob(p->dev, c->plan, GPU_NAME, GPU_ARCH, props, data, size);
}

/* A blob's program record, offered to the device once the model is placed. */
typedef struct program_record {
    uint8_t *data;
    size_t size;
} program_record;

static rn_status gpu_import(plugin_compiled *c, const void *data, size_t size,
                            const rn_property *overrides, size_t n_overrides, graph **g,
                            void **pending)
{
    program_record *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    rn_status st = gpu_import_blob(data, size, GPU_NAME, GPU_ARCH, overrides, n_overrides,
                                   &c->props, g, &r->data, &r->size);
    if (st != RN_OK) {
        free(r);
        return st;
    }
    *pending = r;
    return RN_OK;
}

/* An intact record of another driver is ignored by the device. */
static void gpu_import_placed(plugin_compiled *c, void *pending)
{
    program_record *r = pending;
    if (r != NULL && r->data != NULL)
        gpu_device_offer_program(placement(c)->dev, r->data, r->size);
}

static void gpu_import_done(void *pending)
{
    program_record *r = pending;
    free(r->data);
    free(r);
}

/* The device's commands (trace.c) as one more process after the plan's
 * streams and executors. */
static rn_status gpu_write_trace(plugin_compiled *c, const char *path)
{
    gpu_placement *g = placement(c);
    if (g->memory.trace == NULL)
        return RN_OK;
    return gpu_trace_append(g->memory.trace, path, plugin_plan_trace_origin_ns(c->plan), 1000);
}

static const plugin_device_iface gpu_descriptor = {
    .info =
        {
            .name = GPU_NAME,
            .architecture = GPU_ARCH,
            .capabilities = "FP32 EXPORT_IMPORT",
            .range_for_streams = "1 64",
        },
    .ro_keys = gpu_ro_device_keys,
    .compiled_ro_keys = gpu_ro_compiled_keys,
    .extra_rw_keys = gpu_rw_device_keys,
    .specializes = true,
    .open = gpu_open,
    .close = gpu_close,
    .register_kernels = gpu_register_kernels,
    .register_folding = ref_register_kernels,
    .check_device_id = gpu_check_device_id,
    .read = gpu_read,
    .set_property = gpu_set_property,
    .create_context = gpu_create_context,
    .default_context = gpu_default_context,
    .add_passes = gpu_add_passes,
    .place = gpu_place,
    .unplace = gpu_unplace,
    .plan = gpu_plan,
    .enter = gpu_enter,
    .built = gpu_built,
    .compiled_read = gpu_compiled_read,
    .export_blob = gpu_export,
    .import_blob = gpu_import,
    .import_placed = gpu_import_placed,
    .import_done = gpu_import_done,
    .write_trace = gpu_write_trace,
};

PLUGIN_DEVICE_DEFINE(gpu_plugin_ops, GPU_NAME, gpu_descriptor, NULL,
                     plugin_device_get_device_property);

PLUGIN_DEVICE_ENTRY(gpu_plugin_ops);
