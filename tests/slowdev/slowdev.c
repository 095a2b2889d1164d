/* SLOWDEV: a test device on the plugin ABI that simulates an accelerator.
 *
 * A request's pipeline is preprocess → upload → kernels (REF's, on the
 * stream workers) → execute → wait → download → postprocess → callback.
 * Each device stage has a fixed cost set by a device property (in
 * microseconds) and occupies one engine at a time, as a real device would:
 * the copy-in engine (upload), the compute engine (execute), the fence
 * (wait, on the device-wait executor) and the copy-out engine (download).
 * The engines are plugins/api's (plugin_engine, plan.h): in-order queues on
 * threads of their own that complete the stages, as copies and kernels
 * queued on a CUDA stream or an OpenCL queue do, so no stream worker waits
 * for an engine. Concurrent requests overlap across engines; a request
 * never overlaps with itself. The device's own code is its descriptor, its
 * stages (what each hands its engine) and its properties.
 *
 * Properties: SLOWDEV_UPLOAD_US, SLOWDEV_EXECUTE_US, SLOWDEV_WAIT_US,
 * SLOWDEV_DOWNLOAD_US (default 200 each), plus the shared ones; for the
 * tests of HETERO and AUTO: SLOWDEV_UNSUPPORTED_OPS (op types, comma-
 * separated, that query_model answers unsupported and compile refuses, so
 * that a model splits), SLOWDEV_COMPILE_US (a compile that takes this long,
 * as an accelerator's kernel compiler does) and SLOWDEV_FAIL_REQUESTS (YES:
 * the execute stage fails every request, a device gone bad); read-only
 * SLOWDEV_BYTES_UPLOADED and SLOWDEV_BYTES_DOWNLOADED count what the copy
 * engines moved.
 *
 * Remote contexts hold "device memory" (host memory standing for it): an
 * input bound to a remote tensor of the model's context is already on the
 * device, so the upload stage moves only the host inputs, and skips the
 * copy engine when there are none; the same for outputs and download.
 *
 * Everything else (properties, compile, import, export, query_model, the
 * engines' threads and queues) is the generic plan-based device
 * (plugins/api/device.h, plan.h): SLOWDEV is a descriptor, its stages and
 * REF's kernels. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/device.h"
#include "plugins/api/kit_id.h"
#include "plugins/ref/ref.h"
#include "tests/slowdev/slowdev.h"

enum { ENGINE_UPLOAD, ENGINE_EXECUTE, ENGINE_WAIT, ENGINE_DOWNLOAD, N_ENGINES };

static const char *const engine_names[N_ENGINES] = {"SLOWDEV upload", "SLOWDEV execute",
                                                    "SLOWDEV wait", "SLOWDEV download"};

/* The device's context: its engines (plugins/api's, plan.h) and what the
 * copy engines moved. */
typedef struct slowdev {
    plugin_engine *engine[N_ENGINES];
    atomic_uint_fast64_t bytes_uploaded, bytes_downloaded;
} slowdev;

/* SLOWDEV's own properties: the engines' costs and the test knobs. */
typedef struct slowdev_own {
    uint32_t cost_us[N_ENGINES];
    uint32_t compile_us;
    bool fail_requests;
    char unsupported_ops[256]; /* "Op1,Op2" or "" */
} slowdev_own;

#define COST_KEY(key, engine) PLUGIN_OWN_UINT(key, slowdev_own, cost_us[engine], 0, 10000000, "200")

static const plugin_property_def slowdev_keys[] = {
    COST_KEY("SLOWDEV_UPLOAD_US", ENGINE_UPLOAD),
    COST_KEY("SLOWDEV_EXECUTE_US", ENGINE_EXECUTE),
    COST_KEY("SLOWDEV_WAIT_US", ENGINE_WAIT),
    COST_KEY("SLOWDEV_DOWNLOAD_US", ENGINE_DOWNLOAD),
    PLUGIN_OWN_UINT("SLOWDEV_COMPILE_US", slowdev_own, compile_us, 0, 60000000, "0"),
    PLUGIN_OWN_BOOL("SLOWDEV_FAIL_REQUESTS", slowdev_own, fail_requests, PLUGIN_PROPERTY_RW, "NO"),
    PLUGIN_OWN_STRING("SLOWDEV_UNSUPPORTED_OPS", slowdev_own, unsupported_ops, ""),
};

static const char *const slowdev_ro_keys[] = {"SLOWDEV_BYTES_UPLOADED", "SLOWDEV_BYTES_DOWNLOADED",
                                              NULL};

static void sleep_us(uint32_t us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the stages ---- */

static slowdev *device_of(const plugin_compiled *c)
{
    return c->device->context;
}

static uint32_t cost_us(const plugin_compiled *c, int engine)
{
    return ((const slowdev_own *)c->own)->cost_us[engine];
}

/* The device work of a stage: its engine is busy for the stage's cost. */
static rn_status busy(plugin_request *r, void *us)
{
    (void)r;
    sleep_us((uint32_t)(uintptr_t)us);
    return RN_OK;
}

/* Queues stage `stage` of r on an engine: completed once it ran. */
static int enqueue(plugin_compiled *c, int engine, plugin_request *r, uint32_t stage)
{
    return plugin_engine_queue(device_of(c)->engine[engine], r, stage, busy,
                               (void *)(uintptr_t)cost_us(c, engine));
}

/* A copy engine moves the host-side bytes; with none to move it is not
 * used at all. */
static int copy_stage(plugin_compiled *c, int engine, plugin_request *r, uint32_t stage,
                      size_t bytes, atomic_uint_fast64_t *counter)
{
    if (bytes == 0)
        return RN_OK;
    atomic_fetch_add(counter, bytes);
    return enqueue(c, engine, r, stage);
}

static int stage_upload(plugin_request *r, uint32_t stage, void *ctx)
{
    plugin_compiled *c = ctx;
    return copy_stage(c, ENGINE_UPLOAD, r, stage, plugin_request_host_bytes(r, false),
                      &device_of(c)->bytes_uploaded);
}

static int stage_execute(plugin_request *r, uint32_t stage, void *ctx)
{
    plugin_compiled *c = ctx;
    if (((const slowdev_own *)c->own)->fail_requests)
        return rn_set_error(RN_DEVICE_ERROR,
                            "SLOWDEV: the device failed the request (SLOWDEV_FAIL_REQUESTS)");
    return enqueue(ctx, ENGINE_EXECUTE, r, stage);
}

/* The fence: a blocking stage on the device-wait executor, in its engine's
 * turn. */
static int stage_wait(plugin_request *r, uint32_t stage, void *ctx)
{
    (void)stage;
    return plugin_engine_call(device_of(ctx)->engine[ENGINE_WAIT], r, busy,
                              (void *)(uintptr_t)cost_us(ctx, ENGINE_WAIT));
}

static int stage_download(plugin_request *r, uint32_t stage, void *ctx)
{
    plugin_compiled *c = ctx;
    return copy_stage(c, ENGINE_DOWNLOAD, r, stage, plugin_request_host_bytes(r, true),
                      &device_of(c)->bytes_downloaded);
}

/* ---- the device ---- */

static void slowdev_close(void *context)
{
    slowdev *d = context;
    if (d == NULL)
        return;
    for (int e = 0; e < N_ENGINES; e++)
        plugin_engine_close(d->engine[e]);
    free(d);
}

static rn_status slowdev_open(void **context)
{
    slowdev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "SLOWDEV: out of memory");
    *context = d;
    for (int e = 0; e < N_ENGINES; e++) {
        rn_status st = plugin_engine_open(engine_names[e], &d->engine[e]);
        if (st != RN_OK) {
            slowdev_close(d);
            *context = NULL;
            return st;
        }
    }
    return RN_OK;
}

static rn_status slowdev_kernels(void *context, plugin_kernel_registry *r)
{
    (void)context;
    return ref_register_kernels(r);
}

/* SLOWDEV_BYTES_UPLOADED and SLOWDEV_BYTES_DOWNLOADED. */
static rn_status slowdev_read(void *context, const char *id, const char *key, char *buf,
                              size_t size)
{
    slowdev *d = context;
    (void)id;
    int up = strcmp(key, slowdev_ro_keys[0]) == 0;
    if (!up && strcmp(key, slowdev_ro_keys[1]) != 0)
        return RN_NOT_FOUND;
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRIuFAST64,
             (uint_fast64_t)atomic_load(up ? &d->bytes_uploaded : &d->bytes_downloaded));
    return plugin_property_string(key, tmp, buf, size);
}

/* Whether SLOWDEV_UNSUPPORTED_OPS names op `op_type`. */
static const char *slowdev_refuses(const void *own, const char *op_type)
{
    const slowdev_own *o = own;
    char list[sizeof o->unsupported_ops + 2], needle[80];
    snprintf(list, sizeof list, ",%s,", o->unsupported_ops);
    snprintf(needle, sizeof needle, ",%s,", op_type);
    return o->unsupported_ops[0] != '\0' && strstr(list, needle) != NULL ? "SLOWDEV_UNSUPPORTED_OPS"
                                                                         : NULL;
}

/* The device stages after the kernels; a device keeps four requests in
 * flight, one per engine (unless its requests are to run one at a time). */
static rn_status slowdev_plan(plugin_compiled *c, plugin_plan_options *o)
{
    o->n_stages = 4;
    o->stages[0] = (plugin_stage){
        .stage = EXECUTORS_STAGE_UPLOAD, .where = EXECUTORS_ON_STREAM, .run = stage_upload};
    o->stages[1] = (plugin_stage){
        .stage = EXECUTORS_STAGE_EXECUTE, .where = EXECUTORS_ON_STREAM, .run = stage_execute};
    o->stages[2] = (plugin_stage){
        .stage = EXECUTORS_STAGE_WAIT, .where = EXECUTORS_ON_DEVICE_WAIT, .run = stage_wait};
    o->stages[3] = (plugin_stage){
        .stage = EXECUTORS_STAGE_DOWNLOAD, .where = EXECUTORS_ON_STREAM, .run = stage_download};
    if (!c->props.exclusive_async_requests && c->optimal_requests < 4)
        c->optimal_requests = 4;
    return RN_OK;
}

/* The kernel compiler of an accelerator takes SLOWDEV_COMPILE_US (an
 * import skips it). */
static rn_status slowdev_built(plugin_compiled *c, rn_status st)
{
    if (st == RN_OK && !c->imported)
        sleep_us(((const slowdev_own *)c->own)->compile_us);
    return st;
}

/* DEVICE_TYPE: the property's default ("integrated"), or, built with
 * SLOWDEV_DISCRETE (libslowdev_discrete.so), "discrete": a stand-in for a
 * discrete GPU, NVIDIA's kind, where AUTO ranks devices. */
#ifdef SLOWDEV_DISCRETE
#define SLOWDEV_DEVICE_TYPE "discrete"
#else
#define SLOWDEV_DEVICE_TYPE NULL
#endif

static const plugin_device_iface slowdev_device = {
    .info =
        {
            .name = "SLOWDEV",
            .full_name = "runnel simulated accelerator (tests)",
            .architecture = "slowdev",
            .device_type = SLOWDEV_DEVICE_TYPE,
        },
    .context_kind = {"SLOWDEV", "SLOWDEV", "SLOWDEV_BUFFER"},
    .own_keys = slowdev_keys,
    .n_own_keys = sizeof slowdev_keys / sizeof slowdev_keys[0],
    .own_size = sizeof(slowdev_own),
    .ro_keys = slowdev_ro_keys,
    .untransformed = true,
    .open = slowdev_open,
    .close = slowdev_close,
    .register_kernels = slowdev_kernels,
    .read = slowdev_read,
    .refuses = slowdev_refuses,
    .plan = slowdev_plan,
    .built = slowdev_built,
};

/* Its kernels run on the host (REF's): it takes extensions' kernels. */
PLUGIN_DEVICE_DEFINE(slowdev_plugin_ops, "SLOWDEV", slowdev_device, plugin_device_add_extension,
                     NULL);

PLUGIN_DEVICE_ENTRY(slowdev_plugin_ops);
