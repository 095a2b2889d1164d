/* AUTO's vtables: properties, the candidates, compile (startup fallback,
 * CUMULATIVE_THROUGHPUT), the compiled model's properties. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/auto/auto.h"

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "AUTO: out of memory");
}

/* ---- ranking devices ---- */

/* Rank of a device with no list, by what it is (its DEVICE_TYPE), as
 * OpenVINO's AUTO ranks dGPU above iGPU above CPU: a discrete device
 * (NVIDIA, a GPU with memory of its own) first, then an integrated GPU or
 * an accelerator, then the host devices CPU and REF, with an OpenCL device
 * of CPU type (PoCL's: the same cores through OpenCL, several times slower
 * than CPU) between them; devices that answer no DEVICE_TYPE come last.
 * Within a rank, the order the devices registered in (the installed
 * plugins file lists NVIDIA before GPU, which on NVIDIA's OpenCL driver is
 * discrete too). */
enum { RANK_DISCRETE, RANK_INTEGRATED, RANK_CPU, RANK_OPENCL_CPU, RANK_REF, RANK_OTHER, N_RANKS };

static int rank(const char *name, const char *type)
{
    if (strcasecmp(name, "CPU") == 0)
        return RANK_CPU;
    if (strcasecmp(name, "REF") == 0)
        return RANK_REF;
    if (type == NULL)
        return RANK_OTHER;
    if (strcmp(type, "discrete") == 0)
        return RANK_DISCRETE;
    if (strcmp(type, "integrated") == 0 || strcmp(type, "accelerator") == 0)
        return RANK_INTEGRATED;
    return strcmp(type, "cpu") == 0 ? RANK_OPENCL_CPU : RANK_OTHER;
}

void auto_rank_devices(int n, const char *const *names, const char *const *types, int *order)
{
    int k = 0;
    for (int r = 0; r < N_RANKS; r++)
        for (int i = 0; i < n; i++)
            if (rank(names[i], types[i]) == r)
                order[k++] = i;
}

/* Every device but the meta ones, best first (see rank), comma-separated. */
static void default_order(rn_core *core, char *names, size_t size)
{
    enum { MAX = 64 };
    const char *name[MAX], *type[MAX];
    char types[MAX][32];
    int n = 0, order[MAX];
    for (size_t i = 0; i < rn_core_device_count(core) && n < MAX; i++) {
        const rn_plugin_ops *ops;
        rn_plugin *plugin;
        const char *device = rn_core_device_name(core, i);
        if (rn_core_device_plugin(core, device, &ops, &plugin) != RN_OK ||
            plugin_device_is_meta(ops, plugin)) {
            rn_clear_error();
            continue;
        }
        name[n] = device;
        type[n] = ops->get_property != NULL && ops->get_property(plugin, "DEVICE_TYPE", types[n],
                                                                 sizeof types[n]) == RN_OK
                      ? types[n]
                      : NULL;
        if (type[n] == NULL)
            rn_clear_error();
        n++;
    }
    auto_rank_devices(n, name, type, order);
    size_t used = 0;
    names[0] = '\0';
    for (int k = 0; k < n; k++)
        if (used + strlen(name[order[k]]) + 2 <= size)
            used += (size_t)snprintf(names + used, size - used, "%s%s", used ? "," : "",
                                     name[order[k]]);
}

/* ---- properties ---- */

static rn_status yes_no(const char *key, const char *value, bool *out)
{
    if (strcmp(value, "YES") != 0 && strcmp(value, "NO") != 0)
        return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: YES, NO)", key,
                            value);
    *out = strcmp(value, "YES") == 0;
    return RN_OK;
}

static const char *const own_keys[] = {
    "MULTI_DEVICE_PRIORITIES",
    "ENABLE_STARTUP_FALLBACK",
    "ENABLE_RUNTIME_FALLBACK",
    "DEFAULT_DEVICE_PRIORITIES", /* RO: the candidates with no list, best first */
    NULL,
};

/* plugin_own_key_fn for AUTO's keys. */
static rn_status own_key(void *config, const char *key, const char *value, bool *taken)
{
    auto_config *cfg = config;
    *taken = true;
    if (strcmp(key, "MULTI_DEVICE_PRIORITIES") == 0) {
        if (strlen(value) >= sizeof cfg->priorities)
            return rn_set_error(RN_INVALID_ARG, "property %s: the list is too long", key);
        snprintf(cfg->priorities, sizeof cfg->priorities, "%s", value);
        return RN_OK;
    }
    if (strcmp(key, "ENABLE_STARTUP_FALLBACK") == 0)
        return yes_no(key, value, &cfg->startup_fallback);
    if (strcmp(key, "ENABLE_RUNTIME_FALLBACK") == 0)
        return yes_no(key, value, &cfg->runtime_fallback);
    *taken = false;
    return RN_OK;
}

static rn_status own_get(const void *config, const char *key, char *buf, size_t size)
{
    const auto_config *cfg = config;
    if (strcmp(key, "MULTI_DEVICE_PRIORITIES") == 0)
        return plugin_property_string(key, cfg->priorities, buf, size);
    if (strcmp(key, "ENABLE_STARTUP_FALLBACK") == 0)
        return plugin_property_string(key, cfg->startup_fallback ? "YES" : "NO", buf, size);
    if (strcmp(key, "ENABLE_RUNTIME_FALLBACK") == 0)
        return plugin_property_string(key, cfg->runtime_fallback ? "YES" : "NO", buf, size);
    return RN_NOT_FOUND;
}

static rn_status auto_create(auto_plugin **out)
{
    auto_plugin *p = plugin_meta_device_create(sizeof *p);
    if (p == NULL)
        return oom();
    p->cfg.startup_fallback = true;
    p->cfg.runtime_fallback = true;
    *out = p;
    return RN_OK;
}

static void auto_destroy(auto_plugin *p)
{
    plugin_meta_device_destroy(p);
}

static void auto_attach_core(auto_plugin *p, rn_core *core)
{
    p->meta.core = core;
}

static rn_status auto_set_property(auto_plugin *p, const rn_property *props, size_t n)
{
    return plugin_meta_set(&p->meta, &p->cfg, sizeof p->cfg, own_key, props, n);
}

static rn_status auto_get_property(auto_plugin *p, const char *key, char *buf, size_t size)
{
    if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        return plugin_property_string(key, "runnel automatic device selection", buf, size);
    if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        return plugin_property_string(key, "auto", buf, size);
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return plugin_meta_supported(own_keys, buf, size);
    if (strcmp(key, "DEFAULT_DEVICE_PRIORITIES") == 0) {
        char names[512];
        default_order(p->meta.core, names, sizeof names);
        return plugin_property_string(key, names, buf, size);
    }
    return plugin_meta_get(&p->meta.lock, &p->cfg, own_get, &p->meta.s.props, "AUTO", key, buf,
                           size);
}

/* ---- the candidates ---- */

/* The devices to choose from: the list, or every device by rank. */
static rn_status candidates(rn_core *core, const char *list, plugin_devices *out)
{
    if (list[0] != '\0')
        return plugin_devices_resolve(core, "AUTO", list, out);
    char names[512];
    default_order(core, names, sizeof names);
    return plugin_devices_resolve(core, "AUTO", names, out);
}

/* Whether every node of the model is supported on dev (a device without
 * query_model is taken at its word when it compiles). */
static bool supports_model(const plugin_device *dev, const graph *model, const rn_property *p,
                           size_t n, char *why, size_t why_size)
{
    if (dev->ops->query_model == NULL)
        return true;
    char **names;
    bool *ok;
    size_t count;
    if (dev->ops->query_model(dev->plugin, model, p, n, &names, &ok, &count) != RN_OK) {
        snprintf(why, why_size, "%s", rn_last_error());
        return false;
    }
    bool all = true;
    for (size_t i = 0; i < count; i++) {
        if (!ok[i] && all)
            snprintf(why, why_size, "it does not support '%s'", names[i]);
        all = all && ok[i];
        free(names[i]);
    }
    free(names);
    free(ok);
    return all;
}

/* ---- compiling ---- */

/* The properties the devices get: the shared ones, with
 * CUMULATIVE_THROUGHPUT (AUTO's own mode) as THROUGHPUT on each. */
static void device_properties(const auto_compiled *c, rn_property *out, size_t *n)
{
    for (size_t i = 0; i < c->s.n_forward; i++) {
        out[i] = c->s.forward[i];
        if (strcmp(out[i].key, "PERFORMANCE_HINT") == 0 &&
            strcmp(out[i].value, "CUMULATIVE_THROUGHPUT") == 0)
            out[i].value = "THROUGHPUT";
    }
    *n = c->s.n_forward;
}

rn_status auto_target_compile(auto_compiled *c, int t)
{
    auto_target *target = &c->targets[t];
    pthread_mutex_lock(&c->compile_lock);
    int state = atomic_load(&target->state);
    if (state == TARGET_READY || state == TARGET_FAILED) {
        pthread_mutex_unlock(&c->compile_lock);
        return state == TARGET_READY ? RN_OK : rn_set_error(RN_DEVICE_ERROR, "%s", target->error);
    }
    atomic_store(&target->state, TARGET_COMPILING);
    const plugin_device *dev = &c->devs.at[t];
    rn_property props[PLUGIN_MAX_FORWARD];
    size_t n;
    device_properties(c, props, &n);
    rn_status st = dev->ops->compile_model(dev->plugin, c->model, NULL, props, n, &target->ops,
                                           &target->compiled);
    if (st == RN_OK && target->ops->abi_version != RN_PLUGIN_ABI_VERSION) {
        target->ops->free(target->compiled);
        st = rn_set_error(RN_INTERNAL, "compiled model ABI %u", target->ops->abi_version);
    }
    if (st != RN_OK) {
        char why[400], name[PLUGIN_DEVICE_NAME_MAX];
        snprintf(why, sizeof why, "%s", rn_last_error());
        snprintf(name, sizeof name, "%s", dev->name);
        snprintf(target->error, sizeof target->error, "AUTO: compiling on %.40s: %s", name, why);
        target->compiled = NULL;
    } else {
        char buf[32];
        target->optimal = 1;
        if (target->ops->get_property != NULL &&
            target->ops->get_property(target->compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", buf,
                                      sizeof buf) == RN_OK)
            target->optimal = (uint32_t)strtoul(buf, NULL, 10);
        if (target->optimal == 0)
            target->optimal = 1;
        rn_clear_error();
    }
    atomic_store(&target->state, st == RN_OK ? TARGET_READY : TARGET_FAILED);
    pthread_mutex_unlock(&c->compile_lock);
    return st == RN_OK ? RN_OK : rn_set_error(st, "%s", target->error);
}

static void *compile_in_background(void *arg)
{
    auto_compiled *c = arg;
    auto_target_compile(c, c->chosen);
    return NULL;
}

static void auto_compiled_free(auto_compiled *c)
{
    if (c == NULL)
        return;
    if (c->compiler_started)
        pthread_join(c->compiler, NULL);
    for (int t = 0; t < c->devs.n; t++)
        if (c->targets[t].compiled != NULL)
            c->targets[t].ops->free(c->targets[t].compiled);
    graph_free(c->model);
    plugin_meta_release(&c->s);
    pthread_mutex_destroy(&c->compile_lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Drops the candidates that do not support the model; RN_UNSUPPORTED with
 * every device's reason when none is left. */
static rn_status filter_candidates(auto_compiled *c)
{
    rn_property props[PLUGIN_MAX_FORWARD];
    size_t n;
    device_properties(c, props, &n);
    plugin_devices kept = {0};
    char reasons[1024] = "";
    size_t used = 0;
    for (int d = 0; d < c->devs.n; d++) {
        char why[256] = "";
        if (supports_model(&c->devs.at[d], c->model, props, n, why, sizeof why))
            kept.at[kept.n++] = c->devs.at[d];
        else if (used < sizeof reasons)
            used += (size_t)snprintf(reasons + used, sizeof reasons - used, "%s%s: %s",
                                     used ? "; " : "", c->devs.at[d].name, why);
    }
    rn_clear_error();
    if (kept.n == 0)
        return rn_set_error(RN_UNSUPPORTED, "AUTO: no device runs the model (%s)", reasons);
    c->devs = kept;
    return RN_OK;
}

/* Index of the host device that compiles fast (CPU, else REF) other than
 * the chosen one, or -1. */
static int startup_device(const auto_compiled *c)
{
    const char *const hosts[] = {"CPU", "REF"};
    for (int h = 0; h < 2; h++)
        for (int d = 0; d < c->devs.n; d++)
            if (d != c->chosen && strcasecmp(c->devs.at[d].name, hosts[h]) == 0)
                return d;
    return -1;
}

/* CUMULATIVE_THROUGHPUT: every candidate, at least one of which compiles. */
static rn_status compile_all(auto_compiled *c)
{
    char reasons[1024] = "";
    size_t used = 0;
    int ready = 0;
    for (int t = 0; t < c->devs.n; t++) {
        if (auto_target_compile(c, t) == RN_OK)
            ready++;
        else if (used < sizeof reasons)
            used += (size_t)snprintf(reasons + used, sizeof reasons - used, "%s%s",
                                     used ? "; " : "", c->targets[t].error);
    }
    rn_clear_error();
    return ready > 0
               ? RN_OK
               : rn_set_error(RN_DEVICE_ERROR, "AUTO: no device compiled the model (%s)", reasons);
}

/* LATENCY / THROUGHPUT: the first candidate, with a startup device while it
 * compiles; a candidate that fails to compile gives way to the next. */
static rn_status compile_chosen(auto_compiled *c)
{
    c->chosen = 0;
    c->startup = c->cfg.startup_fallback ? startup_device(c) : -1;
    if (c->startup >= 0 && auto_target_compile(c, c->startup) == RN_OK &&
        pthread_create(&c->compiler, NULL, compile_in_background, c) == 0) {
        c->compiler_started = true;
        return RN_OK;
    }
    c->startup = -1;
    rn_status st = RN_OK;
    for (c->chosen = 0; c->chosen < c->devs.n; c->chosen++)
        if ((st = auto_target_compile(c, c->chosen)) == RN_OK)
            return RN_OK;
    c->chosen = 0;
    return st;
}

extern const rn_compiled_model_ops auto_compiled_ops;

static rn_status auto_compile(auto_plugin *p, const rn_graph *model, rn_plugin_context *context,
                              const rn_property *props, size_t n, const rn_compiled_model_ops **ops,
                              auto_compiled **out)
{
    if (context != NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED,
                            "AUTO: compile with a context on the context's own device");
    auto_compiled *c = calloc(1, sizeof *c);
    if (c == NULL)
        return oom();
    c->plugin = p;
    c->startup = -1;
    pthread_mutex_init(&c->compile_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    rn_status st = plugin_meta_snapshot(&p->meta, &p->cfg, &c->cfg, sizeof c->cfg, &c->s);
    if (st == RN_OK)
        st = plugin_meta_apply(&c->s, &c->cfg, sizeof c->cfg, own_key, props, n);
    c->cumulative = c->s.props.performance_hint == PLUGIN_HINT_CUMULATIVE_THROUGHPUT;
    if (st == RN_OK)
        st = candidates(p->meta.core, c->cfg.priorities, &c->devs);
    if (st == RN_OK)
        st = graph_clone(model, &c->model);
    if (st == RN_OK)
        st = filter_candidates(c);
    if (st == RN_OK)
        st = c->cumulative ? compile_all(c) : compile_chosen(c);
    if (st != RN_OK) {
        auto_compiled_free(c);
        return st;
    }
    *ops = &auto_compiled_ops;
    *out = c;
    return RN_OK;
}

static rn_status auto_query(auto_plugin *p, const rn_graph *model, const rn_property *props,
                            size_t n, char ***names, bool **supported, size_t *count)
{
    plugin_meta_settings s = {0};
    auto_config cfg;
    rn_status st = plugin_meta_snapshot(&p->meta, &p->cfg, &cfg, sizeof cfg, &s);
    if (st == RN_OK)
        st = plugin_meta_apply(&s, &cfg, sizeof cfg, own_key, props, n);
    plugin_devices devs;
    if (st == RN_OK)
        st = candidates(p->meta.core, cfg.priorities, &devs);
    if (st == RN_OK)
        st = plugin_devices_query_union(&devs, model, NULL, 0, names, supported, count);
    plugin_meta_release(&s);
    return st;
}

/* ---- the compiled model ---- */

/* The devices that run requests now (comma-separated). */
static void execution_devices(auto_compiled *c, char *buf, size_t size)
{
    if (!c->cumulative) {
        snprintf(buf, size, "%s", c->devs.at[auto_current_target(c)].name);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < c->devs.n && used < size; t++)
        if (atomic_load(&c->targets[t].state) == TARGET_READY)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "",
                                     c->devs.at[t].name);
}

static rn_status compiled_get_property(auto_compiled *c, const char *key, char *buf, size_t size)
{
    char tmp[256];
    if (strcmp(key, "EXECUTION_DEVICES") == 0) {
        execution_devices(c, tmp, sizeof tmp);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0) {
        uint32_t n = 0;
        for (int t = 0; t < c->devs.n; t++)
            if (atomic_load(&c->targets[t].state) == TARGET_READY &&
                (c->cumulative || t == auto_current_target(c)))
                n += c->targets[t].optimal;
        snprintf(tmp, sizeof tmp, "%u", n);
        return plugin_property_string(key, tmp, buf, size);
    }
    /* NUM_STREAMS and the like are the device's that runs requests now. */
    auto_target *t = &c->targets[auto_current_target(c)];
    if (!c->cumulative && t->ops->get_property != NULL &&
        t->ops->get_property(t->compiled, key, buf, size) == RN_OK &&
        strcmp(key, "PERFORMANCE_HINT") != 0)
        return RN_OK;
    rn_clear_error();
    return plugin_meta_get(&c->lock, &c->cfg, own_get, &c->s.props, "AUTO compiled model", key, buf,
                           size);
}

/* A candidate's compiled model, once it is ready. */
static void ready_target(void *ctx, int i, const rn_compiled_model_ops **ops,
                         rn_plugin_compiled **compiled)
{
    auto_target *t = &((auto_compiled *)ctx)->targets[i];
    if (atomic_load(&t->state) == TARGET_READY) {
        *ops = t->ops;
        *compiled = t->compiled;
    }
}

/* LIVE keys, on every candidate compiled so far. */
static rn_status compiled_set_property(auto_compiled *c, const rn_property *props, size_t n)
{
    return plugin_meta_set_compiled(&c->lock, &c->s.props, c->devs.n, ready_target, c, props, n);
}

static rn_status compiled_runtime_model(auto_compiled *c, const rn_runtime_node **nodes,
                                        size_t *count)
{
    auto_target *t = &c->targets[auto_current_target(c)];
    if (t->ops->get_runtime_model == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "AUTO: %s reports no runtime model",
                            c->devs.at[auto_current_target(c)].name);
    return t->ops->get_runtime_model(t->compiled, nodes, count);
}

static rn_status compiled_pipeline(auto_compiled *c, const rn_pipeline_stage **stages,
                                   size_t *count)
{
    auto_target *t = &c->targets[auto_current_target(c)];
    if (t->ops->get_pipeline == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "AUTO: %s reports no pipeline",
                            c->devs.at[auto_current_target(c)].name);
    return t->ops->get_pipeline(t->compiled, stages, count);
}

static rn_status compiled_trace(auto_compiled *c, const char *path)
{
    auto_target *t = &c->targets[auto_current_target(c)];
    if (t->ops->write_trace == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "AUTO: %s records no trace",
                            c->devs.at[auto_current_target(c)].name);
    return t->ops->write_trace(t->compiled, path);
}

static rn_status compiled_create_request(auto_compiled *c, rn_infer_request *owner,
                                         rn_plugin_request **out)
{
    return auto_request_create(c, owner, out);
}

const rn_compiled_model_ops auto_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = compiled_create_request,
    .request_ops = &auto_request_ops,
    .get_property = compiled_get_property,
    .write_trace = compiled_trace,
    .get_runtime_model = compiled_runtime_model,
    .set_property = compiled_set_property,
    .get_pipeline = compiled_pipeline,
    .free = auto_compiled_free,
};

const rn_plugin_ops auto_plugin_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = "AUTO",
    .version = RN_VERSION_STRING,
    .create = auto_create,
    .destroy = auto_destroy,
    .set_property = auto_set_property,
    .get_property = auto_get_property,
    .query_model = auto_query,
    .compile_model = auto_compile,
    .attach_core = auto_attach_core,
};
