/* The host device plugin: compiles a model into the generic plan with a
 * host device's kernels and runs it with the generic request. REF is one
 * (its kernels alone); CPU is another (oneDNN's kernels ahead of REF's, its
 * fusions, bf16): plugins/ref/host.h says what a host device supplies. This
 * file, ref.h, registry.c and kernels/ are everything a device plugin
 * needs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/const_eval.h"
#include "plugins/api/export.h"
#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/query.h"
#include "plugins/api/remote.h"
#include "plugins/ref/host.h"
#include "plugins/ref/ref.h"
#include "transforms/transforms.h"

typedef struct rn_plugin {
    const host_device *dev;
    plugin_kernel_registry *kernels;
    pthread_mutex_t lock; /* guards props */
    plugin_properties props;
    plugin_host_context *default_context;
} ref_plugin;

typedef struct rn_plugin_compiled {
    ref_plugin *plugin;
    plugin_plan *plan;
    const plugin_host_context *context;
    pthread_mutex_t lock; /* guards props (set_property after compiling) */
    plugin_properties props;
    plugin_plan_options options; /* as the streams chose them, before the device's hook */
    char network_name[256];
    uint32_t optimal_requests;
} ref_compiled;

static const char *const ref_ro_device_keys[] = {
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
    NULL,
};

rn_status host_create(const host_device *dev, ref_plugin **out)
{
    ref_plugin *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", dev->name);
    p->dev = dev;
    rn_status st = plugin_kernel_registry_create(&p->kernels);
    if (st == RN_OK)
        st = dev->register_kernels(p->kernels);
    if (st == RN_OK)
        st = plugin_host_context_create(&dev->context_kind, NULL, 0, &p->default_context);
    if (st != RN_OK) {
        plugin_kernel_registry_free(p->kernels);
        free(p);
        return st;
    }
    pthread_mutex_init(&p->lock, NULL);
    plugin_properties_default(&p->props);
    if (dev->defaults != NULL)
        dev->defaults(&p->props);
    *out = p;
    return RN_OK;
}

static rn_status ref_create(ref_plugin **out)
{
    return host_create(&ref_device, out);
}

void host_destroy(ref_plugin *p)
{
    if (p == NULL)
        return;
    plugin_kernel_registry_free(p->kernels);
    plugin_host_context_free(p->default_context);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

rn_status host_create_context(ref_plugin *p, const rn_property *params, size_t n,
                              const rn_remote_context_ops **ops, rn_plugin_context **context)
{
    *ops = &plugin_host_context_ops;
    return plugin_host_context_create(&p->dev->context_kind, params, n, context);
}

rn_status host_default_context(ref_plugin *p, const rn_remote_context_ops **ops,
                               rn_plugin_context **context)
{
    *ops = &plugin_host_context_ops;
    *context = p->default_context;
    return RN_OK;
}

rn_status host_add_extension(ref_plugin *p, const rn_kernel_list *kernels)
{
    pthread_mutex_lock(&p->lock);
    rn_status st = plugin_kernel_registry_add_versioned(p->kernels, kernels);
    pthread_mutex_unlock(&p->lock);
    return st;
}

/* A host device is one device: DEVICE_ID (what "REF.1" becomes in the
 * Core) may only name it, as its contexts already require. */
static rn_status host_device_id_check(const ref_plugin *p, const rn_property *props, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (props[i].key != NULL && props[i].value != NULL &&
            strcmp(props[i].key, "DEVICE_ID") == 0 && props[i].value[0] != '\0' &&
            strcmp(props[i].value, "0") != 0)
            return rn_set_error(RN_INVALID_ARG, "%s: DEVICE_ID '%s' does not exist (available: 0)",
                                p->dev->name, props[i].value);
    return RN_OK;
}

/* The host device's checks, then the common properties. */
static rn_status host_apply(const ref_plugin *p, plugin_properties *to, const rn_property *props,
                            size_t n)
{
    rn_status st = host_device_id_check(p, props, n);
    return st != RN_OK ? st : plugin_properties_apply(to, props, n);
}

rn_status host_set_property(ref_plugin *p, const rn_property *props, size_t n)
{
    pthread_mutex_lock(&p->lock);
    rn_status st = host_apply(p, &p->props, props, n);
    pthread_mutex_unlock(&p->lock);
    return st;
}

/* Joins NULL-terminated lists (c may be NULL) with spaces into buf. */
static rn_status join_keys(const char *key, const char *const *a, const char *const *b,
                           const char *const *c, const char *const *d, char *buf, size_t size)
{
    char list[2048] = "";
    size_t used = 0;
    const char *const *lists[] = {a, b, c, d};
    for (int k = 0; k < 4; k++)
        for (const char *const *l = lists[k]; l != NULL && *l != NULL && used < sizeof list; l++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? " " : "", *l);
    return plugin_property_string(key, list, buf, size);
}

/* What a compiled model answers besides the plan's keys and the RW ones. */
static const char *const ref_ro_compiled_keys[] = {
    "SUPPORTED_PROPERTIES", "NETWORK_NAME", "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
    "EXECUTION_DEVICES",    NULL,
};

rn_status host_get_property(ref_plugin *p, const char *key, char *buf, size_t size)
{
    const host_device *dev = p->dev;
    const char *value = NULL;
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return join_keys(key, ref_ro_device_keys, dev->ro_keys, plugin_rw_property_keys,
                         p->props.cpu_keys ? plugin_cpu_property_keys : NULL, buf, size);
    if (dev->get_property != NULL) {
        rn_status st = dev->get_property(key, buf, size);
        if (st != RN_NOT_FOUND)
            return st;
        rn_clear_error();
    }
    if (strcmp(key, "AVAILABLE_DEVICES") == 0)
        value = "0";
    else if (strcmp(key, "FULL_DEVICE_NAME") == 0)
        value = dev->full_name;
    else if (strcmp(key, "DEVICE_ARCHITECTURE") == 0)
        value = dev->architecture;
    else if (strcmp(key, "DEVICE_TYPE") == 0)
        value = "integrated";
    else if (strcmp(key, "OPTIMIZATION_CAPABILITIES") == 0)
        value = dev->capabilities;
    else if (strcmp(key, "RANGE_FOR_ASYNC_INFER_REQUESTS") == 0)
        value = "1 64 1";
    else if (strcmp(key, "RANGE_FOR_STREAMS") == 0)
        value = "1 1024";
    else if (strcmp(key, "EXECUTION_DEVICES") == 0)
        value = dev->name;
    else if (strcmp(key, "CACHING_PROPERTIES") == 0)
        value = "DEVICE_ARCHITECTURE INFERENCE_PRECISION_HINT EXECUTION_MODE_HINT";
    if (value != NULL)
        return plugin_property_string(key, value, buf, size);
    pthread_mutex_lock(&p->lock);
    rn_status st = plugin_properties_get(&p->props, key, buf, size);
    pthread_mutex_unlock(&p->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "%s: unknown property '%s'", dev->name, key);
    return st;
}

static rn_status ref_compiled_get_property(ref_compiled *c, const char *key, char *buf, size_t size)
{
    char tmp[64];
    if (plugin_plan_get_property(c->plan, key, buf, size) == RN_OK)
        return RN_OK;
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return join_keys(key, ref_ro_compiled_keys, plugin_plan_property_keys,
                         plugin_rw_property_keys, NULL, buf, size);
    if (strcmp(key, "NETWORK_NAME") == 0)
        return plugin_property_string(key, c->network_name, buf, size);
    if (strcmp(key, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", c->optimal_requests);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, "EXECUTION_DEVICES") == 0)
        return plugin_property_string(key, c->plugin->dev->name, buf, size);
    pthread_mutex_lock(&c->lock);
    rn_status st = plugin_properties_get(&c->props, key, buf, size);
    pthread_mutex_unlock(&c->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "compiled model: unknown property '%s'", key);
    return st;
}

static rn_status ref_compiled_set_property(ref_compiled *c, const rn_property *props, size_t n)
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

static rn_status ref_pipeline(ref_compiled *c, const rn_pipeline_stage **stages, size_t *count)
{
    return plugin_plan_pipeline(c->plan, stages, count);
}

static rn_status ref_create_request(ref_compiled *c, rn_infer_request *owner,
                                    rn_plugin_request **out)
{
    return plugin_request_create(c->plan, owner, out);
}

static rn_status ref_runtime_model(ref_compiled *c, const rn_runtime_node **nodes, size_t *count)
{
    return plugin_plan_runtime_model(c->plan, nodes, count);
}

static rn_status ref_export(ref_compiled *c, void **data, size_t *size)
{
    pthread_mutex_lock(&c->lock);
    plugin_properties props = c->props;
    pthread_mutex_unlock(&c->lock);
    const host_device *dev = c->plugin->dev;
    if (dev->export_blob != NULL)
        return dev->export_blob(dev, c->plan, &props, data, size);
    return plugin_export(c->plan, dev->name, dev->architecture, &props, data, size);
}

static rn_status ref_write_trace(ref_compiled *c, const char *path)
{
    return plugin_plan_write_trace(c->plan, path);
}

static void ref_compiled_free(ref_compiled *c)
{
    if (c == NULL)
        return;
    plugin_plan_free(c->plan);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static const rn_compiled_model_ops ref_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = ref_create_request,
    .request_ops = &plugin_generic_request_ops,
    .get_property = ref_compiled_get_property,
    .export_model = ref_export,
    .write_trace = ref_write_trace,
    .get_runtime_model = ref_runtime_model,
    .set_property = ref_compiled_set_property,
    .get_pipeline = ref_pipeline,
    .free = ref_compiled_free,
};

/* The compile-time pipeline (transforms/) on a clone of `model`: every
 * pass, then the device's own (its fusions), unless DISABLE_TRANSFORMATIONS,
 * which keeps only preprocessing (it changes what the user feeds, so it is
 * not an optimisation). Constant folding evaluates with REF's kernels. */
static rn_status ref_transform(ref_plugin *p, const plugin_properties *props,
                               const struct graph *model, graph **out)
{
    graph *g;
    rn_status st = graph_clone(model, &g);
    if (st != RN_OK)
        return st;
    /* Weights are held in memory anyway: fold tensors up to 1 GiB, which
     * covers the fully connected layers of VGG and AlexNet. */
    transforms_options o = {.const_eval = plugin_const_eval,
                            .const_eval_ctx = p->kernels,
                            .fold_max_tensor_bytes = (size_t)1 << 30};
    transforms_pipeline *tp = NULL;
    st = transforms_default_pipeline(&o, &tp);
    if (st == RN_OK && p->dev->add_passes != NULL)
        st = p->dev->add_passes(tp, &o, props);
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

rn_status host_query(ref_plugin *p, const rn_graph *model, const rn_property *properties,
                     size_t n_properties, char ***names, bool **supported, size_t *count)
{
    plugin_properties props;
    pthread_mutex_lock(&p->lock);
    props = p->props;
    pthread_mutex_unlock(&p->lock);
    rn_status st = host_apply(p, &props, properties, n_properties);
    if (st != RN_OK)
        return st;
    graph *g;
    if ((st = ref_transform(p, &props, model, &g)) != RN_OK)
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

/* Runs the device's hook that sets up building a plan (or a specialised
 * one) in this thread, and returns the options it adjusted. */
static void enter_build(const ref_compiled *c, plugin_plan_options *options)
{
    if (c->plugin->dev->configure != NULL)
        c->plugin->dev->configure(&c->props, options);
}

/* A plan specialised for concrete input shapes: fold what they decide
 * (Shape, Size and the shape arithmetic they feed) with REF's kernels, then
 * drop what no result needs. */
static rn_status ref_specialize(void *ctx, graph *g)
{
    ref_compiled *c = ctx;
    ref_plugin *p = c->plugin;
    plugin_plan_options options = c->options;
    enter_build(c, &options);
    transforms_fold_options fold = {
        .eval = plugin_const_eval, .eval_ctx = p->kernels, .max_tensor_bytes = (size_t)1 << 30};
    int changes = 0;
    rn_status st = transforms_fold_constants(g, &fold, &changes);
    if (st == RN_OK && changes > 0)
        st = transforms_eliminate_dead_nodes(g, NULL, &changes);
    return st;
}

/* Builds the plan of a transformed graph (taken over: the plan keeps it)
 * with the compiled model's properties. */
static rn_status ref_build(ref_plugin *p, ref_compiled *c, graph *g)
{
    plugin_plan_options options = {.profiling = c->props.enable_profiling,
                                   .trace = c->props.enable_trace,
                                   .context = c->context,
                                   .device = p->dev->name,
                                   .log_level = c->props.log_level,
                                   .specialize =
                                       c->props.disable_transformations ? NULL : ref_specialize,
                                   .specialize_ctx = c};
    plugin_properties_streams(&c->props, executors_cpu_count(), &options.n_streams,
                              &options.threads_per_stream, &c->optimal_requests);
    c->options = options;
    enter_build(c, &options);
    snprintf(c->network_name, sizeof c->network_name, "%s", g->name);
    return plugin_plan_build_owned(g, p->kernels, &options, &c->plan);
}

/* A compiled model in `context` (NULL: the default) with the device's
 * properties; NULL when out of memory. */
static ref_compiled *ref_compiled_new(ref_plugin *p, rn_plugin_context *context)
{
    ref_compiled *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", p->dev->name);
        return NULL;
    }
    c->plugin = p;
    c->context = context != NULL ? context : p->default_context;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&p->lock);
    c->props = p->props;
    pthread_mutex_unlock(&p->lock);
    return c;
}

rn_status host_compile(ref_plugin *p, const rn_graph *model, rn_plugin_context *context,
                       const rn_property *properties, size_t n_properties,
                       const rn_compiled_model_ops **ops, ref_compiled **compiled)
{
    ref_compiled *c = ref_compiled_new(p, context);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = host_apply(p, &c->props, properties, n_properties);
    graph *g = NULL;
    if (st == RN_OK)
        st = ref_transform(p, &c->props, model, &g);
    if (st == RN_OK)
        st = ref_build(p, c, g); /* takes g over */
    else
        graph_free(g);
    if (st != RN_OK) {
        ref_compiled_free(c);
        return st;
    }
    *ops = &ref_compiled_ops;
    *compiled = c;
    return RN_OK;
}

rn_status host_import(ref_plugin *p, const void *data, size_t size, rn_plugin_context *context,
                      const rn_property *properties, size_t n_properties,
                      const rn_compiled_model_ops **ops, ref_compiled **compiled,
                      const rn_graph **io)
{
    ref_compiled *c = ref_compiled_new(p, context);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    graph *g;
    void *pending = NULL;
    rn_status st = host_device_id_check(p, properties, n_properties);
    if (st == RN_OK && p->dev->import_blob != NULL)
        st = p->dev->import_blob(p->dev, data, size, properties, n_properties, &c->props, &g,
                                 &pending);
    else if (st == RN_OK)
        st = plugin_import(data, size, p->dev->name, p->dev->architecture, properties, n_properties,
                           &c->props, &g);
    if (st == RN_OK) {
        st = ref_build(p, c, g); /* the stored graph, already transformed, taken over */
        if (p->dev->import_done != NULL)
            p->dev->import_done(pending);
    }
    if (st != RN_OK) {
        ref_compiled_free(c);
        return st;
    }
    *ops = &ref_compiled_ops;
    *compiled = c;
    *io = plugin_plan_graph(c->plan);
    return RN_OK;
}

const host_device ref_device = {
    .name = "REF",
    .full_name = "runnel reference device (portable C kernels)",
    .architecture = "ref",
    .capabilities = "FP32 FP16 BF16 INT8 EXPORT_IMPORT",
    .context_kind = {"REF", "HOST", "HOST_BUFFER"},
    .register_kernels = ref_register_kernels,
};

const rn_plugin_ops ref_plugin_ops = HOST_PLUGIN_OPS("REF", ref_create);
