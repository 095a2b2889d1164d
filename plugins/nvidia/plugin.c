/* The NVIDIA device's vtables: create (the CUDA driver, a device, cuDNN new
 * enough — or the reason why not), properties, query_model, compile
 * (NVIDIA's transforms, then the generic plan with the whole model claimed
 * as one partition that runs as a program on the device: exec.c), import
 * and export, and the compiled model's properties. Requests are the
 * generic request (plugins/api/plan.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/export.h"
#include "plugins/api/plan.h"
#include "plugins/api/query.h"
#include "plugins/api/remote.h"
#include "plugins/nvidia/exec.h"
#include "plugins/nvidia/nvidia.h"
#include "plugins/ref/ref.h"

typedef struct rn_plugin {
    nv_device_info info;
    pthread_mutex_t lock;
    nv_properties props;
    plugin_kernel_registry *ref;    /* REF's kernels: constant folding */
    plugin_kernel_registry *claims; /* what NVIDIA runs: query_model */
    rn_kernel *claim_kernels;
    plugin_host_context *default_context;
    char arch[16];
} nvidia;

typedef struct rn_plugin_compiled {
    nvidia *dev;
    pthread_mutex_t lock;
    nv_properties props;
    plugin_plan *plan;
    rn_plugin_context *context;
    uint32_t optimal_requests;
    nv_exec *exec; /* the partition's program (owned by the plan) */
    bool timing;
} nvidia_compiled;

static const plugin_host_context_kind nvidia_context_kind = {"NVIDIA", "HOST", "HOST_BUFFER"};

/* ---- the partition: the whole model as one program ---- */

static bool claimed(const rn_node *node, const char **why)
{
    (void)node, (void)why;
    return true;
}

static rn_status program_run(rn_kernel_args *args)
{
    return nv_exec_run(args->state, args);
}

static void program_release(void *state)
{
    nv_exec_free(state);
}

static const char *program_impl(const void *state)
{
    return nv_exec_impl(state);
}

static const rn_kernel nvidia_program_kernel = {
    .domain = "runnel",
    .op_type = "NvidiaProgram",
    .impl_type = "cudnn",
    .supports = claimed,
    .run = program_run,
    .release = program_release,
    .impl_name = program_impl,
};

static rn_status claim_all(void *ctx, const rn_node *const *nodes, int n_nodes, int *group)
{
    (void)ctx, (void)nodes;
    for (int i = 0; i < n_nodes; i++)
        group[i] = 0;
    return RN_OK;
}

static rn_status compile_partition(void *ctx, const rn_node *const *nodes, int n_nodes,
                                   const char *const *input_names, int n_inputs,
                                   const char *const *output_names, int n_outputs,
                                   const rn_kernel **kernel, void **state)
{
    nvidia_compiled *c = ctx;
    nv_program *prog;
    rn_status st = nv_lower(nodes, n_nodes, input_names, n_inputs, output_names, n_outputs,
                            c->props.base.inference_precision == RN_F16, &prog);
    if (st != RN_OK)
        return st;
    nv_exec_options o = {.device = c->dev->info.device_id,
                         .allow_tf32 = c->props.allow_tf32,
                         .cuda_graph = c->props.cuda_graph,
                         .max_slots = c->props.max_slots};
    nv_exec *x;
    if ((st = nv_exec_create(prog, input_names, n_inputs, &o, &x)) != RN_OK)
        return st;
    c->exec = x;
    *kernel = &nvidia_program_kernel;
    *state = x;
    return RN_OK;
}

/* Nodes are claimed whole, so a kernel of this registry never runs: it
 * answers query_model (and HETERO) with nv_supports. */
static rn_status claimed_only(rn_kernel_args *args)
{
    return rn_set_error(RN_INTERNAL, "NVIDIA: node '%s' runs inside the device program only",
                        rn_node_name(args->node));
}

/* ---- the plugin ---- */

static void nvidia_destroy(nvidia *d)
{
    if (d == NULL)
        return;
    plugin_kernel_registry_free(d->claims);
    plugin_kernel_registry_free(d->ref);
    plugin_host_context_free(d->default_context);
    free(d->claim_kernels);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static rn_status nvidia_create(nvidia **out)
{
    nv_device_info info;
    rn_status st = nv_device_probe(0, &info);
    if (st != RN_OK)
        return st; /* the message says why: no driver, no device, old cuDNN */
    nvidia *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    pthread_mutex_init(&d->lock, NULL);
    d->info = info;
    nv_format_architecture(info.cc_major, info.cc_minor, d->arch, sizeof d->arch);
    nv_properties_default(&d->props, nv_has_tensor_cores(info.cc_major));
    int n_ops = 0;
    while (nv_supported_ops[n_ops][0] != NULL)
        n_ops++;
    d->claim_kernels = calloc((size_t)n_ops, sizeof *d->claim_kernels);
    if (d->claim_kernels == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    if (st == RN_OK)
        st = plugin_kernel_registry_create(&d->claims);
    for (int i = 0; i < n_ops && st == RN_OK; i++) {
        d->claim_kernels[i] = (rn_kernel){.domain = nv_supported_ops[i][0],
                                          .op_type = nv_supported_ops[i][1],
                                          .impl_type = "cudnn",
                                          .supports = nv_supports,
                                          .run = claimed_only};
        st = plugin_kernel_registry_add(d->claims, &d->claim_kernels[i]);
    }
    if (st == RN_OK)
        st = plugin_kernel_registry_create(&d->ref);
    if (st == RN_OK)
        st = ref_register_kernels(d->ref);
    if (st == RN_OK)
        st = plugin_host_context_create(&nvidia_context_kind, NULL, 0, &d->default_context);
    if (st != RN_OK) {
        nvidia_destroy(d);
        return st;
    }
    *out = d;
    return RN_OK;
}

static rn_status nvidia_set_property(nvidia *d, const rn_property *p, size_t n)
{
    pthread_mutex_lock(&d->lock);
    rn_status st = nv_properties_apply(&d->props, p, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static rn_status join_keys(const char *key, char *buf, size_t size)
{
    char all[2048] = "";
    size_t len = 0;
    const char *const *lists[] = {nv_device_keys, plugin_rw_property_keys};
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l][i] != NULL; i++)
            len += (size_t)snprintf(all + len, len < sizeof all ? sizeof all - len : 0, "%s%s",
                                    len ? " " : "", lists[l][i]);
    if (len >= sizeof all)
        return rn_set_error(RN_INTERNAL, "NVIDIA: SUPPORTED_PROPERTIES too long");
    return plugin_property_string(key, all, buf, size);
}

static rn_status nvidia_get_property(nvidia *d, const char *key, char *buf, size_t size)
{
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return join_keys(key, buf, size);
    rn_status st = nv_device_property(&d->info, key, buf, size);
    if (st != RN_NOT_FOUND)
        return st;
    pthread_mutex_lock(&d->lock);
    st = nv_properties_get(&d->props, key, buf, size);
    pthread_mutex_unlock(&d->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "NVIDIA: unknown property '%s'", key);
    return st;
}

static rn_status nvidia_create_context(nvidia *d, const rn_property *params, size_t n,
                                       const rn_remote_context_ops **ops,
                                       rn_plugin_context **context)
{
    (void)d;
    *ops = &plugin_host_context_ops;
    return plugin_host_context_create(&nvidia_context_kind, params, n,
                                      (plugin_host_context **)context);
}

static rn_status nvidia_default_context(nvidia *d, const rn_remote_context_ops **ops,
                                        rn_plugin_context **context)
{
    *ops = &plugin_host_context_ops;
    *context = d->default_context;
    return RN_OK;
}

static rn_status nvidia_query(nvidia *d, const rn_graph *model, const rn_property *p, size_t n,
                              char ***names, bool **supported, size_t *count)
{
    pthread_mutex_lock(&d->lock);
    nv_properties props = d->props;
    pthread_mutex_unlock(&d->lock);
    rn_status st = nv_properties_apply(&props, p, n);
    graph *g = NULL;
    if (st == RN_OK)
        st = nv_transform(model, d->ref, &props.base, &g);
    plugin_query_result q;
    if (st == RN_OK)
        st = plugin_query_model_transformed(model, g, d->claims, &q);
    graph_free(g);
    if (st != RN_OK)
        return st;
    *names = q.names;
    *supported = q.supported;
    *count = q.count;
    return RN_OK;
}

/* ---- compiled models ---- */

static void compiled_free(nvidia_compiled *c)
{
    if (c == NULL)
        return;
    plugin_plan_free(c->plan);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static rn_status compiled_create_request(nvidia_compiled *c, rn_infer_request *owner,
                                         rn_plugin_request **out)
{
    return plugin_request_create(c->plan, owner, out);
}

static rn_status compiled_get_property(nvidia_compiled *c, const char *key, char *buf, size_t size)
{
    char tmp[32];
    if (strcmp(key, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", c->optimal_requests);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (plugin_plan_get_property(c->plan, key, buf, size) == RN_OK)
        return RN_OK;
    if (strcmp(key, "EXECUTION_DEVICES") == 0)
        return plugin_property_string(key, "NVIDIA", buf, size);
    if (strcmp(key, "NVIDIA_STEP_TIMING") == 0)
        return plugin_property_string(key, c->timing ? "YES" : "NO", buf, size);
    if (strcmp(key, "NVIDIA_STEP_TIME_US") == 0) {
        snprintf(tmp, sizeof tmp, "%.1f", c->exec ? (double)nv_exec_steps_ns(c->exec) / 1e3 : 0.0);
        return plugin_property_string(key, tmp, buf, size);
    }
    pthread_mutex_lock(&c->lock);
    rn_status st = nv_properties_get(&c->props, key, buf, size);
    pthread_mutex_unlock(&c->lock);
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_NOT_FOUND, "NVIDIA compiled model: unknown property '%s'", key);
    return st;
}

/* NVIDIA_STEP_TIMING (YES / NO) turns the events between steps on; the
 * rest are the shared compiled-model keys. */
static rn_status compiled_set_property(nvidia_compiled *c, const rn_property *p, size_t n)
{
    if (n == 1 && strcmp(p[0].key, "NVIDIA_STEP_TIMING") == 0) {
        if (strcmp(p[0].value, "YES") != 0 && strcmp(p[0].value, "NO") != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "property NVIDIA_STEP_TIMING: bad value '%s' (accepted: YES, NO)",
                                p[0].value);
        pthread_mutex_lock(&c->lock);
        c->timing = strcmp(p[0].value, "YES") == 0;
        if (c->exec != NULL)
            nv_exec_set_timing(c->exec, c->timing);
        pthread_mutex_unlock(&c->lock);
        return RN_OK;
    }
    pthread_mutex_lock(&c->lock);
    rn_status st = plugin_properties_set_compiled(&c->props.base, p, n);
    if (st == RN_OK) {
        plugin_plan_set_profiling(c->plan, c->props.base.enable_profiling);
        plugin_plan_set_log_level(c->plan, c->props.base.log_level);
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

static rn_status compiled_pipeline(nvidia_compiled *c, const rn_pipeline_stage **stages,
                                   size_t *count)
{
    return plugin_plan_pipeline(c->plan, stages, count);
}

static rn_status compiled_runtime_model(nvidia_compiled *c, const rn_runtime_node **nodes,
                                        size_t *count)
{
    return plugin_plan_runtime_model(c->plan, nodes, count);
}

static rn_status compiled_export(nvidia_compiled *c, void **data, size_t *size)
{
    pthread_mutex_lock(&c->lock);
    plugin_properties props = c->props.base;
    pthread_mutex_unlock(&c->lock);
    return plugin_export(c->plan, "NVIDIA", c->dev->arch, &props, data, size);
}

static rn_status compiled_write_trace(nvidia_compiled *c, const char *path)
{
    return plugin_plan_write_trace(c->plan, path);
}

static const rn_compiled_model_ops nvidia_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = compiled_create_request,
    .request_ops = &plugin_generic_request_ops,
    .get_property = compiled_get_property,
    .export_model = compiled_export,
    .write_trace = compiled_write_trace,
    .get_runtime_model = compiled_runtime_model,
    .set_property = compiled_set_property,
    .get_pipeline = compiled_pipeline,
    .free = compiled_free,
};

static nvidia_compiled *compiled_new(nvidia *d, rn_plugin_context *context)
{
    nvidia_compiled *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
        return NULL;
    }
    c->dev = d;
    c->context = context != NULL ? context : d->default_context;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&d->lock);
    c->props = d->props;
    pthread_mutex_unlock(&d->lock);
    return c;
}

/* Transforms `model` and builds the plan: one partition, one stream worker
 * per request in flight (each waits for its slot's event while the GPU
 * works), requests in flight = the slots. */
static rn_status compiled_build(nvidia_compiled *c, const graph *model, bool transform)
{
    graph *g = NULL;
    rn_status st = RN_OK;
    if (transform)
        st = nv_transform(model, c->dev->ref, &c->props.base, &g);
    if (st != RN_OK)
        return st;
    rn_partition_ops parts = {.abi_version = RN_KERNEL_ABI_VERSION,
                              .claim = claim_all,
                              .compile = compile_partition,
                              .ctx = c};
    plugin_plan_options o = {.profiling = c->props.base.enable_profiling,
                             .trace = c->props.base.enable_trace,
                             .context = c->context,
                             .device = "NVIDIA",
                             .log_level = c->props.base.log_level,
                             .partitions = &parts};
    uint32_t streams, threads;
    plugin_properties_streams(&c->props.base, 64, &streams, &threads, &c->optimal_requests);
    if (c->props.base.performance_hint == PLUGIN_HINT_THROUGHPUT && c->optimal_requests < 4)
        c->optimal_requests = 4;
    if (c->props.base.performance_hint != PLUGIN_HINT_THROUGHPUT && c->props.base.num_streams <= 0)
        c->optimal_requests = 1;
    if (c->optimal_requests > (uint32_t)c->props.max_slots)
        c->optimal_requests = (uint32_t)c->props.max_slots;
    o.n_streams = c->optimal_requests;
    o.threads_per_stream = 1;
    st = plugin_plan_build(transform ? g : model, c->dev->claims, &o, &c->plan);
    graph_free(g);
    return st;
}

static rn_status nvidia_compile(nvidia *d, const rn_graph *model, rn_plugin_context *context,
                                const rn_property *p, size_t n, const rn_compiled_model_ops **ops,
                                nvidia_compiled **out)
{
    nvidia_compiled *c = compiled_new(d, context);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    rn_status st = nv_properties_apply(&c->props, p, n);
    if (st == RN_OK)
        st = compiled_build(c, model, true);
    if (st != RN_OK) {
        compiled_free(c);
        return st;
    }
    *ops = &nvidia_compiled_ops;
    *out = c;
    return RN_OK;
}

static rn_status nvidia_import(nvidia *d, const void *data, size_t size, rn_plugin_context *context,
                               const rn_property *p, size_t n, const rn_compiled_model_ops **ops,
                               nvidia_compiled **out, const rn_graph **io)
{
    nvidia_compiled *c = compiled_new(d, context);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    /* NVIDIA's own keys apply here; the shared ones go to the import. */
    rn_property shared[32];
    size_t n_shared = 0;
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (strncmp(p[i].key, "NVIDIA_", 7) == 0)
            st = nv_properties_apply(&c->props, &p[i], 1);
        else if (n_shared < 32)
            shared[n_shared++] = p[i];
        else
            st = rn_set_error(RN_INVALID_ARG, "NVIDIA: too many properties");
    }
    graph *g = NULL;
    if (st == RN_OK)
        st = plugin_import(data, size, "NVIDIA", d->arch, shared, n_shared, &c->props.base, &g);
    if (st == RN_OK)
        st = compiled_build(c, g, false);
    graph_free(g);
    if (st != RN_OK) {
        compiled_free(c);
        return st;
    }
    *ops = &nvidia_compiled_ops;
    *out = c;
    *io = plugin_plan_graph(c->plan);
    return RN_OK;
}

const rn_plugin_ops nvidia_plugin_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = "NVIDIA",
    .version = RN_VERSION_STRING,
    .create = nvidia_create,
    .destroy = nvidia_destroy,
    .set_property = nvidia_set_property,
    .get_property = nvidia_get_property,
    .query_model = nvidia_query,
    .import_model = nvidia_import,
    .create_context = nvidia_create_context,
    .get_default_context = nvidia_default_context,
    .compile_model = nvidia_compile,
};

const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version)
{
    (void)abi_version;
    return &nvidia_plugin_ops;
}
