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
 * copy engine when there are none; the same for outputs and download. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/export.h"
#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/query.h"
#include "plugins/api/remote.h"
#include "plugins/ref/ref.h"
#include "tests/slowdev/slowdev.h"

enum { ENGINE_UPLOAD, ENGINE_EXECUTE, ENGINE_WAIT, ENGINE_DOWNLOAD, N_ENGINES };

static const char *const cost_keys[N_ENGINES] = {
    "SLOWDEV_UPLOAD_US",
    "SLOWDEV_EXECUTE_US",
    "SLOWDEV_WAIT_US",
    "SLOWDEV_DOWNLOAD_US",
};

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

/* The test knobs beside the costs (SLOWDEV_UNSUPPORTED_OPS,
 * SLOWDEV_COMPILE_US, SLOWDEV_FAIL_REQUESTS). */
typedef struct slowdev_knobs {
    char unsupported_ops[256]; /* ",Op1,Op2," or "" */
    uint32_t compile_us;
    bool fail_requests;
} slowdev_knobs;

typedef struct rn_plugin {
    plugin_kernel_registry *kernels;
    pthread_mutex_t lock; /* guards props, costs and knobs */
    plugin_properties props;
    uint32_t cost_us[N_ENGINES];
    slowdev_knobs knobs;
    pthread_mutex_t engine[N_ENGINES]; /* the wait engine's (on the device-wait executor) */
    /* The queued engines: upload, execute, download. */
    engine_queue queue[N_ENGINES];
    plugin_host_context *default_context;
    atomic_uint_fast64_t bytes_uploaded, bytes_downloaded;
} slowdev;

static const plugin_host_context_kind slowdev_context_kind = {"SLOWDEV", "SLOWDEV",
                                                              "SLOWDEV_BUFFER"};

typedef struct rn_plugin_compiled {
    slowdev *dev;
    plugin_plan *plan;
    const plugin_host_context *context;
    pthread_mutex_t lock; /* guards props (set_property after compiling) */
    plugin_properties props;
    uint32_t cost_us[N_ENGINES]; /* as compiled */
    slowdev_knobs knobs;
    uint32_t optimal_requests;
} slowdev_compiled;

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

static int engine_stage(slowdev_compiled *c, int engine)
{
    pthread_mutex_lock(&c->dev->engine[engine]);
    sleep_us(c->cost_us[engine]);
    pthread_mutex_unlock(&c->dev->engine[engine]);
    return RN_OK;
}

/* Queues stage `stage` of r on an engine: completed by its thread. */
static int enqueue(slowdev_compiled *c, int engine, plugin_request *r, uint32_t stage)
{
    device_job *job = malloc(sizeof *job);
    if (job == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "SLOWDEV: out of memory queueing a job");
    *job = (device_job){.request = r, .stage = stage, .us = c->cost_us[engine]};
    engine_queue *q = &c->dev->queue[engine];
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
static int copy_stage(slowdev_compiled *c, int engine, plugin_request *r, uint32_t stage,
                      size_t bytes, atomic_uint_fast64_t *counter)
{
    if (bytes == 0)
        return RN_OK;
    atomic_fetch_add(counter, bytes);
    return enqueue(c, engine, r, stage);
}

static int stage_upload(plugin_request *r, uint32_t stage, void *ctx)
{
    slowdev_compiled *c = ctx;
    return copy_stage(c, ENGINE_UPLOAD, r, stage, plugin_request_host_bytes(r, false),
                      &c->dev->bytes_uploaded);
}

static int stage_execute(plugin_request *r, uint32_t stage, void *ctx)
{
    slowdev_compiled *c = ctx;
    if (c->knobs.fail_requests)
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
    slowdev_compiled *c = ctx;
    return copy_stage(c, ENGINE_DOWNLOAD, r, stage, plugin_request_host_bytes(r, true),
                      &c->dev->bytes_downloaded);
}

/* ---- plugin ---- */

static rn_status slowdev_create(slowdev **out)
{
    slowdev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "SLOWDEV: out of memory");
    rn_status st = plugin_kernel_registry_create(&d->kernels);
    if (st == RN_OK)
        st = ref_register_kernels(d->kernels);
    if (st == RN_OK)
        st = plugin_host_context_create(&slowdev_context_kind, NULL, 0, &d->default_context);
    if (st != RN_OK) {
        plugin_kernel_registry_free(d->kernels);
        free(d);
        return st;
    }
    pthread_mutex_init(&d->lock, NULL);
    for (int e = 0; e < N_ENGINES; e++) {
        pthread_mutex_init(&d->engine[e], NULL);
        d->cost_us[e] = 200;
    }
    plugin_properties_default(&d->props);
    if (!start_engines(d)) {
        for (int e = 0; e < N_ENGINES; e++)
            pthread_mutex_destroy(&d->engine[e]);
        pthread_mutex_destroy(&d->lock);
        plugin_kernel_registry_free(d->kernels);
        plugin_host_context_free(d->default_context);
        free(d);
        return rn_set_error(RN_DEVICE_ERROR, "SLOWDEV: cannot start the engine threads");
    }
    *out = d;
    return RN_OK;
}

static void slowdev_destroy(slowdev *plugin)
{
    slowdev *d = plugin;
    if (d == NULL)
        return;
    stop_engines(d);
    for (int e = 0; e < N_ENGINES; e++)
        pthread_mutex_destroy(&d->engine[e]);
    pthread_mutex_destroy(&d->lock);
    plugin_kernel_registry_free(d->kernels);
    plugin_host_context_free(d->default_context);
    free(d);
}

static rn_status slowdev_create_context(slowdev *plugin, const rn_property *params, size_t n,
                                        const rn_remote_context_ops **ops,
                                        rn_plugin_context **context)
{
    (void)plugin;
    *ops = &plugin_host_context_ops;
    return plugin_host_context_create(&slowdev_context_kind, params, n,
                                      (plugin_host_context **)context);
}

static rn_status slowdev_default_context(slowdev *plugin, const rn_remote_context_ops **ops,
                                         rn_plugin_context **context)
{
    *ops = &plugin_host_context_ops;
    *context = ((slowdev *)plugin)->default_context;
    return RN_OK;
}

/* Parses a test knob into k; false when `key` is not one. */
static bool apply_knob(slowdev_knobs *k, const char *key, const char *value, rn_status *st)
{
    *st = RN_OK;
    if (strcmp(key, "SLOWDEV_UNSUPPORTED_OPS") == 0) {
        if (strlen(value) + 3 > sizeof k->unsupported_ops)
            *st = rn_set_error(RN_INVALID_ARG, "property %s: the list is too long", key);
        else if (value[0] == '\0')
            k->unsupported_ops[0] = '\0';
        else
            snprintf(k->unsupported_ops, sizeof k->unsupported_ops, ",%s,", value);
        return true;
    }
    if (strcmp(key, "SLOWDEV_FAIL_REQUESTS") == 0) {
        if (strcmp(value, "YES") != 0 && strcmp(value, "NO") != 0)
            *st = rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: YES, NO)",
                               key, value);
        else
            k->fail_requests = strcmp(value, "YES") == 0;
        return true;
    }
    if (strcmp(key, "SLOWDEV_COMPILE_US") != 0)
        return false;
    char *end;
    long v = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || v < 0 || v > 60000000)
        *st = rn_set_error(
            RN_INVALID_ARG,
            "property %s: bad value '%s' (accepted: microseconds from 0 to 60000000)", key, value);
    else
        k->compile_us = (uint32_t)v;
    return true;
}

/* Whether SLOWDEV_UNSUPPORTED_OPS refuses op `op_type`. */
static bool refused(const slowdev_knobs *k, const char *op_type)
{
    char needle[80];
    snprintf(needle, sizeof needle, ",%s,", op_type);
    return strstr(k->unsupported_ops, needle) != NULL;
}

/* Splits properties into SLOWDEV's cost keys and knobs and the shared ones. */
static rn_status apply(plugin_properties *props, uint32_t *costs, slowdev_knobs *knobs,
                       const rn_property *p, size_t n)
{
    plugin_properties tmp = *props;
    uint32_t c[N_ENGINES];
    memcpy(c, costs, sizeof c);
    slowdev_knobs k = *knobs;
    for (size_t i = 0; i < n; i++) {
        rn_status knob_st;
        if (apply_knob(&k, p[i].key, p[i].value, &knob_st)) {
            if (knob_st != RN_OK)
                return knob_st;
            continue;
        }
        int e = -1;
        for (int k = 0; k < N_ENGINES; k++)
            if (strcmp(p[i].key, cost_keys[k]) == 0)
                e = k;
        if (e < 0) {
            rn_status st = plugin_properties_set(&tmp, p[i].key, p[i].value);
            if (st != RN_OK)
                return st;
            continue;
        }
        char *end;
        long v = strtol(p[i].value, &end, 10);
        if (*p[i].value == '\0' || *end != '\0' || v < 0 || v > 10000000)
            return rn_set_error(RN_INVALID_ARG,
                                "property %s: bad value '%s' (accepted: microseconds from 0 to "
                                "10000000)",
                                p[i].key, p[i].value);
        c[e] = (uint32_t)v;
    }
    *props = tmp;
    memcpy(costs, c, sizeof c);
    *knobs = k;
    return RN_OK;
}

static rn_status slowdev_set_property(slowdev *plugin, const rn_property *p, size_t n)
{
    slowdev *d = plugin;
    pthread_mutex_lock(&d->lock);
    rn_status st = apply(&d->props, d->cost_us, &d->knobs, p, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static rn_status slowdev_get_property(slowdev *plugin, const char *key, char *buf, size_t size)
{
    slowdev *d = plugin;
    char tmp[32];
    for (int e = 0; e < N_ENGINES; e++)
        if (strcmp(key, cost_keys[e]) == 0) {
            pthread_mutex_lock(&d->lock);
            snprintf(tmp, sizeof tmp, "%u", d->cost_us[e]);
            pthread_mutex_unlock(&d->lock);
            return plugin_property_string(key, tmp, buf, size);
        }
    if (strcmp(key, "SLOWDEV_BYTES_UPLOADED") == 0 ||
        strcmp(key, "SLOWDEV_BYTES_DOWNLOADED") == 0) {
        bool up = strcmp(key, "SLOWDEV_BYTES_UPLOADED") == 0;
        snprintf(tmp, sizeof tmp, "%" PRIuFAST64,
                 (uint_fast64_t)atomic_load(up ? &d->bytes_uploaded : &d->bytes_downloaded));
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "SLOWDEV_COMPILE_US") == 0) {
        pthread_mutex_lock(&d->lock);
        snprintf(tmp, sizeof tmp, "%u", d->knobs.compile_us);
        pthread_mutex_unlock(&d->lock);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        return plugin_property_string(key, "runnel simulated accelerator (tests)", buf, size);
    if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        return plugin_property_string(key, "slowdev", buf, size);
    pthread_mutex_lock(&d->lock);
    rn_status st = plugin_properties_get(&d->props, key, buf, size);
    pthread_mutex_unlock(&d->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "SLOWDEV: unknown property '%s'", key);
    return st;
}

static rn_status slowdev_create_request(slowdev_compiled *compiled, rn_infer_request *owner,
                                        rn_plugin_request **out)
{
    return plugin_request_create(compiled->plan, owner, out);
}

static rn_status slowdev_compiled_property(slowdev_compiled *compiled, const char *key, char *buf,
                                           size_t size)
{
    slowdev_compiled *c = compiled;
    char tmp[32];
    if (strcmp(key, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", c->optimal_requests);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (plugin_plan_get_property(c->plan, key, buf, size) == RN_OK)
        return RN_OK;
    if (strcmp(key, "EXECUTION_DEVICES") == 0)
        return plugin_property_string(key, "SLOWDEV", buf, size);
    pthread_mutex_lock(&c->lock);
    rn_status st = plugin_properties_get(&c->props, key, buf, size);
    pthread_mutex_unlock(&c->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "SLOWDEV compiled model: unknown property '%s'", key);
    return st;
}

static rn_status slowdev_compiled_set_property(slowdev_compiled *compiled, const rn_property *p,
                                               size_t n)
{
    slowdev_compiled *c = compiled;
    pthread_mutex_lock(&c->lock);
    rn_status st = plugin_properties_set_compiled(&c->props, p, n);
    if (st == RN_OK) {
        plugin_plan_set_profiling(c->plan, c->props.enable_profiling);
        plugin_plan_set_log_level(c->plan, c->props.log_level);
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

static rn_status slowdev_pipeline(slowdev_compiled *compiled, const rn_pipeline_stage **stages,
                                  size_t *count)
{
    return plugin_plan_pipeline(((slowdev_compiled *)compiled)->plan, stages, count);
}

static rn_status slowdev_runtime_model(slowdev_compiled *compiled, const rn_runtime_node **nodes,
                                       size_t *count)
{
    return plugin_plan_runtime_model(((slowdev_compiled *)compiled)->plan, nodes, count);
}

static rn_status slowdev_export(slowdev_compiled *compiled, void **data, size_t *size)
{
    slowdev_compiled *c = compiled;
    pthread_mutex_lock(&c->lock);
    plugin_properties props = c->props;
    pthread_mutex_unlock(&c->lock);
    return plugin_export(c->plan, "SLOWDEV", "slowdev", &props, data, size);
}

static rn_status slowdev_write_trace(slowdev_compiled *compiled, const char *path)
{
    return plugin_plan_write_trace(((slowdev_compiled *)compiled)->plan, path);
}

static void slowdev_compiled_free(slowdev_compiled *compiled)
{
    slowdev_compiled *c = compiled;
    if (c == NULL)
        return;
    plugin_plan_free(c->plan);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static const rn_compiled_model_ops slowdev_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = slowdev_create_request,
    .request_ops = &plugin_generic_request_ops,
    .get_property = slowdev_compiled_property,
    .get_runtime_model = slowdev_runtime_model,
    .export_model = slowdev_export,
    .write_trace = slowdev_write_trace,
    .set_property = slowdev_compiled_set_property,
    .get_pipeline = slowdev_pipeline,
    .free = slowdev_compiled_free,
};

static rn_status slowdev_query(slowdev *plugin, const rn_graph *model, const rn_property *p,
                               size_t n, char ***names, bool **supported, size_t *count)
{
    slowdev_knobs knobs;
    pthread_mutex_lock(&plugin->lock);
    knobs = plugin->knobs;
    pthread_mutex_unlock(&plugin->lock);
    plugin_properties props;
    plugin_properties_default(&props);
    uint32_t costs[N_ENGINES] = {0};
    rn_status st = apply(&props, costs, &knobs, p, n);
    if (st != RN_OK)
        return st;
    plugin_query_result q;
    if ((st = plugin_query_model(model, plugin->kernels, &q)) != RN_OK)
        return st;
    /* The ops SLOWDEV_UNSUPPORTED_OPS refuses. */
    for (int i = 0; i < model->n_nodes; i++)
        for (int f = 0; refused(&knobs, model->nodes[i]->op_type) && f < model->nodes[i]->n_fused;
             f++)
            for (size_t e = 0; e < q.count; e++)
                if (strcmp(q.names[e], model->nodes[i]->fused_names[f]) == 0)
                    q.supported[e] = false;
    *names = q.names;
    *supported = q.supported;
    *count = q.count;
    return RN_OK;
}

/* Builds the plan of `g` with the compiled model's properties and costs. */
static rn_status slowdev_build(slowdev_compiled *c, const graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (refused(&c->knobs, g->nodes[i]->op_type))
            return rn_set_error(RN_UNSUPPORTED,
                                "SLOWDEV: node '%s' (op %s) is refused by SLOWDEV_UNSUPPORTED_OPS",
                                g->nodes[i]->name, g->nodes[i]->op_type);
    plugin_plan_options o = {.profiling = c->props.enable_profiling,
                             .trace = c->props.enable_trace,
                             .stage_ctx = c,
                             .context = c->context,
                             .device = "SLOWDEV",
                             .log_level = c->props.log_level,
                             .n_stages = 4};
    plugin_properties_streams(&c->props, executors_cpu_count(), &o.n_streams, &o.threads_per_stream,
                              &c->optimal_requests);
    o.stages[0] = (plugin_stage){EXECUTORS_STAGE_UPLOAD, EXECUTORS_ON_STREAM, stage_upload, false};
    o.stages[1] =
        (plugin_stage){EXECUTORS_STAGE_EXECUTE, EXECUTORS_ON_STREAM, stage_execute, false};
    o.stages[2] = (plugin_stage){EXECUTORS_STAGE_WAIT, EXECUTORS_ON_DEVICE_WAIT, stage_wait, false};
    o.stages[3] =
        (plugin_stage){EXECUTORS_STAGE_DOWNLOAD, EXECUTORS_ON_STREAM, stage_download, false};
    /* A device keeps four requests in flight, one per engine (unless its
     * requests are to run one at a time). */
    if (!c->props.exclusive_async_requests && c->optimal_requests < 4)
        c->optimal_requests = 4;
    return plugin_plan_build(g, c->dev->kernels, &o, &c->plan);
}

/* A compiled model in `context` (NULL: the default) with the device's
 * properties and costs; NULL when out of memory. */
static slowdev_compiled *slowdev_compiled_new(slowdev *d, rn_plugin_context *context)
{
    slowdev_compiled *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "SLOWDEV: out of memory");
        return NULL;
    }
    c->dev = d;
    c->context = context != NULL ? context : d->default_context;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&d->lock);
    c->props = d->props;
    memcpy(c->cost_us, d->cost_us, sizeof c->cost_us);
    c->knobs = d->knobs;
    pthread_mutex_unlock(&d->lock);
    return c;
}

static rn_status slowdev_compile(slowdev *plugin, const rn_graph *model, rn_plugin_context *context,
                                 const rn_property *p, size_t n, const rn_compiled_model_ops **ops,
                                 slowdev_compiled **compiled)
{
    slowdev_compiled *c = slowdev_compiled_new(plugin, context);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = apply(&c->props, c->cost_us, &c->knobs, p, n);
    if (st == RN_OK)
        st = slowdev_build(c, model);
    if (st == RN_OK) /* the kernel compiler of an accelerator (an import skips it) */
        sleep_us(c->knobs.compile_us);
    if (st != RN_OK) {
        slowdev_compiled_free(c);
        return st;
    }
    *ops = &slowdev_compiled_ops;
    *compiled = c;
    return RN_OK;
}

static rn_status slowdev_import(slowdev *plugin, const void *data, size_t size,
                                rn_plugin_context *context, const rn_property *p, size_t n,
                                const rn_compiled_model_ops **ops, slowdev_compiled **compiled,
                                const rn_graph **io)
{
    slowdev_compiled *c = slowdev_compiled_new(plugin, context);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    /* Cost keys are SLOWDEV's own: apply them, pass the rest to the import. */
    rn_property shared[32];
    size_t n_shared = 0;
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (strncmp(p[i].key, "SLOWDEV_", 8) == 0)
            st = apply(&c->props, c->cost_us, &c->knobs, &p[i], 1);
        else if (n_shared < 32)
            shared[n_shared++] = p[i];
        else
            st = rn_set_error(RN_INVALID_ARG, "SLOWDEV: too many properties");
    }
    graph *g = NULL;
    if (st == RN_OK)
        st = plugin_import(data, size, "SLOWDEV", "slowdev", shared, n_shared, &c->props, &g);
    if (st == RN_OK)
        st = slowdev_build(c, g);
    graph_free(g);
    if (st != RN_OK) {
        slowdev_compiled_free(c);
        return st;
    }
    *ops = &slowdev_compiled_ops;
    *compiled = c;
    *io = plugin_plan_graph(c->plan);
    return RN_OK;
}

const rn_plugin_ops slowdev_plugin_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = "SLOWDEV",
    .version = RN_VERSION_STRING,
    .create = slowdev_create,
    .destroy = slowdev_destroy,
    .set_property = slowdev_set_property,
    .get_property = slowdev_get_property,
    .query_model = slowdev_query,
    .import_model = slowdev_import,
    .create_context = slowdev_create_context,
    .get_default_context = slowdev_default_context,
    .compile_model = slowdev_compile,
};

const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version)
{
    (void)abi_version;
    return &slowdev_plugin_ops;
}
