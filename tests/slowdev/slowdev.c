/* SLOWDEV: a test device on the plugin ABI that simulates an accelerator.
 *
 * A request's pipeline is preprocess → upload → kernels (REF's, on the
 * stream workers) → execute → wait → download → postprocess → callback.
 * Each device stage has a fixed cost set by a device property (in
 * microseconds) and occupies one simulated engine at a time, as a real device
 * would: the copy-in engine (upload), the compute engine (execute), the
 * fence (wait, on the device-wait executor) and the copy-out engine
 * (download). Upload, execute and download are handed to their engine's
 * thread, which works through its queue and completes each stage later (a
 * pending DAG node), as copies and kernels queued on a CUDA stream or an
 * OpenCL queue do: no stream worker waits for an engine. Concurrent requests
 * overlap across engines; a request never overlaps with itself.
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
 * Everything else (properties, compile, import, export, query_model) is the
 * generic plan-based device (plugins/api/device.h): SLOWDEV is a descriptor,
 * its engines and its stages. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
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

/* A job for an engine's thread: complete `stage` of `request` after `us`. */
typedef struct device_job {
    plugin_request *request;
    uint32_t stage;
    uint32_t us;
    struct device_job *next;
} device_job;

/* An engine that works through a queue on a thread of its own. */
typedef struct engine_queue {
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    device_job *head, *tail;
    bool stopping;
} engine_queue;

/* The device's context: its engines and what the copy engines moved. */
typedef struct slowdev {
    pthread_mutex_t engine[N_ENGINES]; /* the wait engine's (on the device-wait executor) */
    /* The queued engines: upload, execute, download. */
    engine_queue queue[N_ENGINES];
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

static void *engine_thread(void *arg)
{
    engine_queue *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (q->head == NULL && !q->stopping)
            pthread_cond_wait(&q->cond, &q->lock);
        if (q->head == NULL)
            break;
        device_job *job = q->head;
        q->head = job->next;
        if (q->head == NULL)
            q->tail = NULL;
        pthread_mutex_unlock(&q->lock);
        sleep_us(job->us); /* the engine is busy */
        plugin_request_complete_stage(job->request, job->stage, RN_OK);
        free(job);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static bool queued_engine(int e)
{
    return e != ENGINE_WAIT;
}

static void stop_engines(slowdev *d)
{
    for (int e = 0; e < N_ENGINES; e++) {
        engine_queue *q = &d->queue[e];
        if (!q->started)
            continue;
        pthread_mutex_lock(&q->lock);
        q->stopping = true;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->thread, NULL);
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->cond);
        q->started = false;
    }
}

static bool start_engines(slowdev *d)
{
    for (int e = 0; e < N_ENGINES; e++) {
        if (!queued_engine(e))
            continue;
        engine_queue *q = &d->queue[e];
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        if (pthread_create(&q->thread, NULL, engine_thread, q) != 0) {
            pthread_mutex_destroy(&q->lock);
            pthread_cond_destroy(&q->cond);
            stop_engines(d);
            return false;
        }
        q->started = true;
    }
    return true;
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

static int engine_stage(plugin_compiled *c, int engine)
{
    pthread_mutex_lock(&device_of(c)->engine[engine]);
    sleep_us(cost_us(c, engine));
    pthread_mutex_unlock(&device_of(c)->engine[engine]);
    return RN_OK;
}

/* Queues stage `stage` of r on an engine: completed by its thread. */
static int enqueue(plugin_compiled *c, int engine, plugin_request *r, uint32_t stage)
{
    device_job *job = malloc(sizeof *job);
    if (job == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "SLOWDEV: out of memory queueing a job");
    *job = (device_job){.request = r, .stage = stage, .us = cost_us(c, engine)};
    engine_queue *q = &device_of(c)->queue[engine];
    pthread_mutex_lock(&q->lock);
    if (q->tail != NULL)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return PLUGIN_STAGE_PENDING;
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

static int stage_wait(plugin_request *r, uint32_t stage, void *ctx)
{
    (void)r, (void)stage;
    return engine_stage(ctx, ENGINE_WAIT);
}

static int stage_download(plugin_request *r, uint32_t stage, void *ctx)
{
    plugin_compiled *c = ctx;
    return copy_stage(c, ENGINE_DOWNLOAD, r, stage, plugin_request_host_bytes(r, true),
                      &device_of(c)->bytes_downloaded);
}

/* ---- the device ---- */

static rn_status slowdev_open(void **context)
{
    slowdev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "SLOWDEV: out of memory");
    for (int e = 0; e < N_ENGINES; e++)
        pthread_mutex_init(&d->engine[e], NULL);
    if (!start_engines(d)) {
        for (int e = 0; e < N_ENGINES; e++)
            pthread_mutex_destroy(&d->engine[e]);
        free(d);
        return rn_set_error(RN_DEVICE_ERROR, "SLOWDEV: cannot start the engine threads");
    }
    *context = d;
    return RN_OK;
}

static void slowdev_close(void *context)
{
    slowdev *d = context;
    if (d == NULL)
        return;
    stop_engines(d);
    for (int e = 0; e < N_ENGINES; e++)
        pthread_mutex_destroy(&d->engine[e]);
    free(d);
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

static const plugin_device_iface slowdev_device = {
    .info =
        {
            .name = "SLOWDEV",
            .full_name = "runnel simulated accelerator (tests)",
            .architecture = "slowdev",
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
