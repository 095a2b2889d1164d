/* HETERO's vtables: properties, query_model (the union of the devices'),
 * compile (affinity → split → every part compiled by its device → the
 * request pipeline), the compiled model's properties and runtime model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "graph/ops.h"
#include "plugins/hetero/hetero.h"

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
}

uint64_t hetero_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- properties ---- */

static const char *const own_keys[] = {
    "MULTI_DEVICE_PRIORITIES",   "TARGET_FALLBACK",     "AFFINITY",
    "MODEL_DISTRIBUTION_POLICY", "HETERO_ISLAND_NODES", NULL,
};

bool hetero_is_own_key(const char *key)
{
    for (int i = 0; own_keys[i] != NULL; i++)
        if (strcmp(key, own_keys[i]) == 0)
            return true;
    return false;
}

rn_status hetero_config_set(hetero_config *cfg, const char *key, const char *value)
{
    if (strcmp(key, "MULTI_DEVICE_PRIORITIES") == 0 || strcmp(key, "TARGET_FALLBACK") == 0) {
        if (strlen(value) >= sizeof cfg->priorities)
            return rn_set_error(RN_INVALID_ARG, "property %s: the list is too long", key);
        snprintf(cfg->priorities, sizeof cfg->priorities, "%s", value);
        return RN_OK;
    }
    if (strcmp(key, "AFFINITY") == 0) {
        if (strlen(value) >= sizeof cfg->affinity)
            return rn_set_error(RN_INVALID_ARG, "property AFFINITY: the value is too long");
        snprintf(cfg->affinity, sizeof cfg->affinity, "%s", value);
        return RN_OK;
    }
    if (strcmp(key, "MODEL_DISTRIBUTION_POLICY") == 0) {
        if (value[0] != '\0' && strcmp(value, "PIPELINE_PARALLEL") != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "property MODEL_DISTRIBUTION_POLICY: bad value '%s' (accepted: "
                                "PIPELINE_PARALLEL, or empty for affinity by priority)",
                                value);
        snprintf(cfg->distribution, sizeof cfg->distribution, "%s", value);
        return RN_OK;
    }
    if (strcmp(key, "HETERO_ISLAND_NODES") == 0) {
        char *end;
        long v = strtol(value, &end, 10);
        if (*value == '\0' || *end != '\0' || v < 0 || v > 1000)
            return rn_set_error(
                RN_INVALID_ARG,
                "property HETERO_ISLAND_NODES: bad value '%s' (accepted: 0 to 1000)", value);
        cfg->island_nodes = (uint32_t)v;
        return RN_OK;
    }
    return rn_set_error(RN_INVALID_ARG, "HETERO: unknown property '%s'", key);
}

/* plugin_own_key_fn for HETERO's keys. */
static rn_status own_key(void *cfg, const char *key, const char *value, bool *taken)
{
    *taken = hetero_is_own_key(key);
    return *taken ? hetero_config_set(cfg, key, value) : RN_OK;
}

static rn_status hetero_create(hetero_plugin **out)
{
    hetero_plugin *p = plugin_meta_device_create(sizeof *p);
    if (p == NULL)
        return oom();
    p->cfg.island_nodes = 2;
    *out = p;
    return RN_OK;
}

static void hetero_destroy(hetero_plugin *p)
{
    plugin_meta_device_destroy(p);
}

static void hetero_attach_core(hetero_plugin *p, rn_core *core)
{
    p->meta.core = core;
}

static rn_status hetero_set_property(hetero_plugin *p, const rn_property *props, size_t n)
{
    return plugin_meta_set(&p->meta, &p->cfg, sizeof p->cfg, own_key, props, n);
}

static rn_status own_get(const void *config, const char *key, char *buf, size_t size)
{
    const hetero_config *cfg = config;
    char tmp[32];
    if (!hetero_is_own_key(key))
        return RN_NOT_FOUND;
    if (strcmp(key, "MULTI_DEVICE_PRIORITIES") == 0 || strcmp(key, "TARGET_FALLBACK") == 0)
        return plugin_property_string(key, cfg->priorities, buf, size);
    if (strcmp(key, "AFFINITY") == 0)
        return plugin_property_string(key, cfg->affinity, buf, size);
    if (strcmp(key, "MODEL_DISTRIBUTION_POLICY") == 0)
        return plugin_property_string(key, cfg->distribution, buf, size);
    snprintf(tmp, sizeof tmp, "%u", cfg->island_nodes);
    return plugin_property_string(key, tmp, buf, size);
}

static rn_status hetero_get_property(hetero_plugin *p, const char *key, char *buf, size_t size)
{
    if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        return plugin_property_string(key, "runnel heterogeneous execution", buf, size);
    if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        return plugin_property_string(key, "hetero", buf, size);
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return plugin_meta_supported(own_keys, buf, size);
    return plugin_meta_get(&p->meta.lock, &p->cfg, own_get, &p->meta.s.props, "HETERO", key, buf,
                           size);
}

/* ---- query_model: the union of the devices' answers ---- */

static rn_status hetero_query(hetero_plugin *p, const rn_graph *model, const rn_property *props,
                              size_t n, char ***names_out, bool **supported_out, size_t *count_out)
{
    plugin_meta_settings s = {0};
    hetero_config cfg;
    rn_status st = plugin_meta_snapshot(&p->meta, &p->cfg, &cfg, sizeof cfg, &s);
    if (st == RN_OK)
        st = plugin_meta_apply(&s, &cfg, sizeof cfg, own_key, props, n);
    plugin_devices devs;
    if (st == RN_OK)
        st = plugin_devices_resolve(p->meta.core, "HETERO", cfg.priorities, &devs);
    if (st == RN_OK)
        st = plugin_devices_query_union(&devs, model, s.forward, s.n_forward, names_out,
                                        supported_out, count_out);
    plugin_meta_release(&s);
    return st;
}

/* ---- the compiled model ---- */

void hetero_compiled_free(hetero_compiled *c)
{
    if (c == NULL)
        return;
    executors_pipeline_free(c->pipeline);
    executors_release(c->pool);
    hetero_split_release(&c->split);
    graph_free(c->io);
    free(c->device_of);
    free(c->transfers);
    free(c->part_names);
    free(c->runtime);
    for (size_t i = 0; i < c->n_runtime_strings; i++)
        free(c->runtime_strings[i]);
    free(c->runtime_strings);
    free(c->events);
    plugin_meta_release(&c->s);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Reads an unsigned property of a part's compiled model (0 when absent). */
static uint32_t part_uint(const hetero_part *part, const char *key)
{
    char buf[32];
    if (part->ops->get_property == NULL ||
        part->ops->get_property(part->compiled, key, buf, sizeof buf) != RN_OK) {
        rn_clear_error();
        return 0;
    }
    return (uint32_t)strtoul(buf, NULL, 10);
}

rn_status hetero_compiled_finish(hetero_compiled *c)
{
    rn_status st = RN_OK;
    for (int p = 0; p < c->split.n_parts && st == RN_OK; p++) {
        hetero_part *part = &c->split.parts[p];
        const plugin_device *dev = &c->devs.at[part->device];
        if (part->compiled == NULL) {
            st = dev->ops->compile_model(dev->plugin, part->g, NULL, c->s.forward, c->s.n_forward,
                                         &part->ops, &part->compiled);
            if (st != RN_OK) {
                part->compiled = NULL;
                return rn_wrap_error(st, "HETERO: part %d on %s: ", p, dev->name);
            }
            part->io = part->g;
        }
        if (part->ops->abi_version != RN_PLUGIN_ABI_VERSION)
            return rn_set_error(RN_INTERNAL, "HETERO: part %d on %s: compiled model ABI %u", p,
                                dev->name, part->ops->abi_version);
    }
    c->trace = c->s.props.enable_trace;
    /* The devices that run parts, in priority order; the requests that keep
     * every part busy. */
    size_t used = 0;
    c->execution_devices[0] = '\0';
    c->optimal_requests = 0;
    for (int d = 0; d < c->devs.n; d++) {
        bool runs = false;
        for (int p = 0; p < c->split.n_parts; p++)
            runs = runs || c->split.parts[p].device == d;
        if (runs && used < sizeof c->execution_devices)
            used +=
                (size_t)snprintf(c->execution_devices + used, sizeof c->execution_devices - used,
                                 "%s%s", used ? "," : "", c->devs.at[d].name);
    }
    for (int p = 0; p < c->split.n_parts; p++) {
        uint32_t k = part_uint(&c->split.parts[p], "OPTIMAL_NUMBER_OF_INFER_REQUESTS");
        c->optimal_requests += k > 0 ? k : 1;
    }
    return hetero_pipeline_build(c);
}

hetero_compiled *hetero_compiled_new(hetero_plugin *p)
{
    hetero_compiled *c = calloc(1, sizeof *c);
    if (c == NULL) {
        oom();
        return NULL;
    }
    c->plugin = p;
    pthread_mutex_init(&c->lock, NULL);
    c->t0_ns = hetero_now_ns();
    rn_status st = plugin_meta_snapshot(&p->meta, &p->cfg, &c->cfg, sizeof c->cfg, &c->s);
    if (st != RN_OK) {
        hetero_compiled_free(c);
        return NULL;
    }
    return c;
}

/* Applies compile-time properties to a new compiled model. */
rn_status hetero_compiled_apply(hetero_compiled *c, const rn_property *props, size_t n)
{
    return plugin_meta_apply(&c->s, &c->cfg, sizeof c->cfg, own_key, props, n);
}

extern const rn_compiled_model_ops hetero_compiled_ops;

static rn_status hetero_compile(hetero_plugin *p, const rn_graph *model, rn_plugin_context *context,
                                const rn_property *props, size_t n,
                                const rn_compiled_model_ops **ops, hetero_compiled **out)
{
    if (context != NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED,
                            "HETERO: a model split across devices runs in their default contexts");
    hetero_compiled *c = hetero_compiled_new(p);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = hetero_compiled_apply(c, props, n);
    if (st == RN_OK)
        st = plugin_devices_resolve(p->meta.core, "HETERO", c->cfg.priorities, &c->devs);
    if (st == RN_OK && (st = graph_clone(model, &c->io)) == RN_OK &&
        (st = graph_sort(c->io)) == RN_OK)
        st = graph_infer_shapes(c->io);
    if (st == RN_OK &&
        (c->device_of = calloc((size_t)c->io->n_nodes + 1, sizeof *c->device_of)) == NULL)
        st = oom();
    if (st == RN_OK)
        st = hetero_affinity(c->io, &c->devs, &c->cfg, c->s.forward, c->s.n_forward, c->device_of);
    if (st == RN_OK)
        st = hetero_split_build(c->io, c->device_of, &c->split);
    if (st == RN_OK)
        st = hetero_compiled_finish(c);
    if (st != RN_OK) {
        hetero_compiled_free(c);
        return st;
    }
    *ops = &hetero_compiled_ops;
    *out = c;
    return RN_OK;
}

static rn_status hetero_import_model(hetero_plugin *p, const void *data, size_t size,
                                     rn_plugin_context *context, const rn_property *props, size_t n,
                                     const rn_compiled_model_ops **ops, hetero_compiled **out,
                                     const rn_graph **io)
{
    if (context != NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED,
                            "HETERO: a model split across devices runs in their default contexts");
    hetero_compiled *c;
    rn_status st = hetero_import(p, data, size, props, n, &c);
    if (st != RN_OK)
        return st;
    *ops = &hetero_compiled_ops;
    *out = c;
    *io = c->io;
    return RN_OK;
}

/* ---- compiled-model properties ---- */

static rn_status compiled_get_property(hetero_compiled *c, const char *key, char *buf, size_t size)
{
    char tmp[32];
    if (strcmp(key, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", c->optimal_requests);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "EXECUTION_DEVICES") == 0)
        return plugin_property_string(key, c->execution_devices, buf, size);
    if (strcmp(key, "HETERO_PARTS") == 0) {
        snprintf(tmp, sizeof tmp, "%d", c->split.n_parts);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "HETERO_TRANSFERS") == 0) {
        snprintf(tmp, sizeof tmp, "%d", c->n_transfers);
        return plugin_property_string(key, tmp, buf, size);
    }
    return plugin_meta_get(&c->lock, &c->cfg, own_get, &c->s.props, "HETERO compiled model", key,
                           buf, size);
}

static void part_of(void *ctx, int i, const rn_compiled_model_ops **ops,
                    rn_plugin_compiled **compiled)
{
    const hetero_part *part = &((hetero_compiled *)ctx)->split.parts[i];
    *ops = part->ops;
    *compiled = part->compiled;
}

/* LIVE keys, on every part. */
static rn_status compiled_set_property(hetero_compiled *c, const rn_property *props, size_t n)
{
    return plugin_meta_set_compiled(&c->lock, &c->s.props, c->split.n_parts, part_of, c, props, n);
}

static rn_status compiled_pipeline(hetero_compiled *c, const rn_pipeline_stage **stages,
                                   size_t *count)
{
    *count = c->n_stages;
    *stages = c->stages;
    return RN_OK;
}

/* Keeps a malloc'ed string for the runtime model. */
static const char *keep(hetero_compiled *c, char *s)
{
    if (s == NULL)
        return "";
    char **p = realloc(c->runtime_strings, (c->n_runtime_strings + 1) * sizeof *p);
    if (p == NULL) {
        free(s);
        return "";
    }
    c->runtime_strings = p;
    p[c->n_runtime_strings++] = s;
    return s;
}

static char *format(const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *s = malloc(len);
    if (s != NULL)
        snprintf(s, len, fmt, a, b);
    return s;
}

/* Room for row n of c->runtime, which has *cap rows. */
static rn_status runtime_room(hetero_compiled *c, size_t n, size_t *cap)
{
    if (n < *cap)
        return RN_OK;
    size_t want = *cap != 0 ? *cap * 2 : 16;
    rn_runtime_node *r = realloc(c->runtime, want * sizeof *r);
    if (r == NULL)
        return oom();
    c->runtime = r;
    *cap = want;
    return RN_OK;
}

/* The runtime model: every part's nodes, in part order, each with its
 * device in impl_type ("SLOWDEV:ref"), then a "Transfer" row per tensor
 * that crosses devices. */
static rn_status compiled_runtime_model(hetero_compiled *c, const rn_runtime_node **nodes,
                                        size_t *count)
{
    pthread_mutex_lock(&c->lock);
    free(c->runtime);
    c->runtime = NULL;
    for (size_t i = 0; i < c->n_runtime_strings; i++)
        free(c->runtime_strings[i]);
    c->n_runtime_strings = 0;
    size_t n = 0, cap = 0;
    rn_status st = RN_OK;
    for (int p = 0; p < c->split.n_parts && st == RN_OK; p++) {
        hetero_part *part = &c->split.parts[p];
        const char *dev = c->devs.at[part->device].name;
        const rn_runtime_node *sub;
        size_t n_sub;
        if (part->ops->get_runtime_model == NULL) {
            st = rn_set_error(RN_NOT_IMPLEMENTED, "HETERO: %s reports no runtime model", dev);
            break;
        }
        if ((st = part->ops->get_runtime_model(part->compiled, &sub, &n_sub)) != RN_OK)
            break;
        for (size_t k = 0; k < n_sub; k++) {
            if ((st = runtime_room(c, n, &cap)) != RN_OK)
                break;
            rn_runtime_node row = sub[k];
            row.name = keep(c, strdup(sub[k].name));
            row.layer_type = keep(c, strdup(sub[k].layer_type));
            row.impl_type = keep(c, format("%s:%s", dev, sub[k].impl_type));
            row.original_names = keep(c, strdup(sub[k].original_names));
            row.input_layouts = keep(c, strdup(sub[k].input_layouts ? sub[k].input_layouts : ""));
            row.output_layouts =
                keep(c, strdup(sub[k].output_layouts ? sub[k].output_layouts : ""));
            row.fallback = sub[k].fallback != NULL ? keep(c, strdup(sub[k].fallback)) : NULL;
            row.execution_order = (int)n;
            c->runtime[n++] = row;
        }
    }
    for (int t = 0; t < c->n_transfers && st == RN_OK; t++) {
        if ((st = runtime_room(c, n, &cap)) != RN_OK)
            break;
        c->runtime[n] = (rn_runtime_node){.name = c->transfers[t].name,
                                          .layer_type = "Transfer",
                                          .execution_order = (int)n,
                                          .impl_type = "HETERO",
                                          .perf_counter_us = -1,
                                          .original_names = "",
                                          .input_layouts = "plain",
                                          .output_layouts = "plain"};
        n++;
    }
    c->n_runtime = n;
    pthread_mutex_unlock(&c->lock);
    if (st != RN_OK)
        return st;
    *nodes = c->runtime;
    *count = n;
    return RN_OK;
}

static rn_status compiled_export(hetero_compiled *c, void **data, size_t *size)
{
    return hetero_export(c, data, size);
}

static rn_status compiled_trace(hetero_compiled *c, const char *path)
{
    return hetero_write_trace(c, path);
}

static rn_status compiled_create_request(hetero_compiled *c, rn_infer_request *owner,
                                         rn_plugin_request **out)
{
    return hetero_request_create(c, owner, out);
}

const rn_compiled_model_ops hetero_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = compiled_create_request,
    .request_ops = &hetero_request_ops,
    .get_property = compiled_get_property,
    .export_model = compiled_export,
    .write_trace = compiled_trace,
    .get_runtime_model = compiled_runtime_model,
    .set_property = compiled_set_property,
    .get_pipeline = compiled_pipeline,
    .free = hetero_compiled_free,
};

const rn_plugin_ops hetero_plugin_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = "HETERO",
    .version = RN_VERSION_STRING,
    .create = hetero_create,
    .destroy = hetero_destroy,
    .set_property = hetero_set_property,
    .get_property = hetero_get_property,
    .query_model = hetero_query,
    .import_model = hetero_import_model,
    .compile_model = hetero_compile,
    .attach_core = hetero_attach_core,
};
