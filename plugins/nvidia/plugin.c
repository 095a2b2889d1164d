/* The NVIDIA device: the generic plan-based device (plugins/api/device.h)
 * whose plan claims the whole model as one partition that runs as a
 * program on the device (exec.c). This file is its descriptor: create (the
 * CUDA driver, a device, cuDNN new enough — or the reason why not), the
 * kernels that answer query_model, the partition, its own properties
 * (properties.c) and step timing. Requests are the generic request
 * (plugins/api/plan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/device.h"
#include "plugins/api/kit_id.h"
#include "plugins/nvidia/exec.h"
#include "plugins/nvidia/nvidia.h"
#include "plugins/ref/ref.h"

/* The device's context: what the probe read, and the kernels that claim
 * what NVIDIA runs (query_model). */
typedef struct nvidia {
    nv_device_info info;
    rn_kernel *claim_kernels;
} nvidia;

/* What a compiled model holds: the partition's program (owned by the
 * plan) and how the plan asks for it. */
typedef struct nvidia_compiled {
    rn_partition_ops parts;
    nv_exec *exec;
} nvidia_compiled;

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

static nvidia_compiled *state_of(const plugin_compiled *c)
{
    return c->state;
}

static rn_status compile_partition(void *ctx, const rn_node *const *nodes, int n_nodes,
                                   const char *const *input_names, int n_inputs,
                                   const char *const *output_names, int n_outputs,
                                   const rn_kernel **kernel, void **state)
{
    plugin_compiled *c = ctx;
    const nvidia *d = c->device->context;
    const nv_own *own = c->own;
    nv_program *prog;
    rn_status st = nv_lower(nodes, n_nodes, input_names, n_inputs, output_names, n_outputs,
                            c->props.inference_precision == RN_F16, &prog);
    if (st != RN_OK)
        return st;
    nv_exec_options o = {.device = d->info.device_id,
                         .allow_tf32 = own->allow_tf32,
                         .cuda_graph = own->cuda_graph,
                         .max_slots = (int)own->max_slots};
    nv_exec *x;
    if ((st = nv_exec_create(prog, input_names, n_inputs, &o, &x)) != RN_OK)
        return st;
    state_of(c)->exec = x;
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

/* ---- the device ---- */

static void nvidia_close(void *context)
{
    nvidia *d = context;
    if (d == NULL)
        return;
    free(d->claim_kernels);
    free(d);
}

static rn_status nvidia_open(void **context)
{
    nv_device_info info;
    rn_status st = nv_device_probe(0, &info);
    if (st != RN_OK)
        return st; /* the message says why: no driver, no device, old cuDNN */
    nvidia *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    d->info = info;
    int n_ops = 0;
    while (nv_supported_ops[n_ops][0] != NULL)
        n_ops++;
    d->claim_kernels = calloc((size_t)n_ops + 1, sizeof *d->claim_kernels);
    if (d->claim_kernels == NULL) {
        nvidia_close(d);
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    }
    for (int i = 0; i < n_ops; i++)
        d->claim_kernels[i] = (rn_kernel){.domain = nv_supported_ops[i][0],
                                          .op_type = nv_supported_ops[i][1],
                                          .impl_type = "cudnn",
                                          .supports = nv_supports,
                                          .run = claimed_only};
    *context = d;
    return RN_OK;
}

/* What NVIDIA runs, as kernels that claim it (query_model, HETERO). */
static rn_status nvidia_register_kernels(void *context, plugin_kernel_registry *r)
{
    nvidia *d = context;
    rn_status st = RN_OK;
    for (int i = 0; d->claim_kernels[i].op_type != NULL && st == RN_OK; i++)
        st = plugin_kernel_registry_add(r, &d->claim_kernels[i]);
    return st;
}

static void nvidia_defaults(void *context, plugin_properties *props, void *own)
{
    (void)own;
    nv_precision_defaults(props, nv_has_tensor_cores(((nvidia *)context)->info.cc_major));
}

static rn_status nvidia_read(void *context, const char *id, const char *key, char *buf, size_t size)
{
    (void)id;
    return nv_device_property(&((nvidia *)context)->info, key, buf, size);
}

static rn_status arena_alloc(void *ctx, size_t size, size_t alignment, void **buffer)
{
    (void)ctx, (void)alignment; /* pinned memory is page aligned */
    return nv_host_alloc(size, buffer);
}

static void arena_free(void *ctx, void *buffer)
{
    (void)ctx;
    nv_host_free(buffer);
}

/* Request arenas in pinned memory: the program's results are downloaded
 * into them directly. */
static const rn_allocator nv_pinned_arenas = {
    .name = "cuda-pinned-host",
    .host = true,
    .alloc = arena_alloc,
    .free = arena_free,
};

/* One partition, one stream worker per request in flight (each waits for
 * its slot's event while the GPU works), requests in flight = the slots. */
static rn_status nvidia_plan(plugin_compiled *c, plugin_plan_options *o)
{
    nvidia_compiled *x = calloc(1, sizeof *x);
    if (x == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    c->state = x;
    x->parts = (rn_partition_ops){.abi_version = RN_KERNEL_ABI_VERSION,
                                  .claim = claim_all,
                                  .compile = compile_partition,
                                  .ctx = c};
    o->partitions = &x->parts;
    o->allocator = &nv_pinned_arenas;
    uint32_t max_slots = ((const nv_own *)c->own)->max_slots;
    uint32_t streams, threads;
    plugin_properties_streams(&c->props, 64, &streams, &threads, &c->optimal_requests);
    if (c->props.performance_hint == PLUGIN_HINT_THROUGHPUT && c->optimal_requests < 4)
        c->optimal_requests = 4;
    if (c->props.performance_hint != PLUGIN_HINT_THROUGHPUT && c->props.num_streams <= 0)
        c->optimal_requests = 1;
    if (c->optimal_requests > max_slots)
        c->optimal_requests = max_slots;
    o->n_streams = c->optimal_requests;
    o->threads_per_stream = 1;
    return RN_OK;
}

static void nvidia_unplace(plugin_compiled *c)
{
    free(c->state);
}

/* NVIDIA_STEP_TIMING turns the events between steps on or off. */
static void nvidia_timing(plugin_compiled *c)
{
    nvidia_compiled *x = state_of(c);
    if (x != NULL && x->exec != NULL)
        nv_exec_set_timing(x->exec, ((const nv_own *)c->own)->step_timing);
}

static rn_status nvidia_built(plugin_compiled *c, rn_status st)
{
    if (st == RN_OK && ((const nv_own *)c->own)->step_timing)
        nvidia_timing(c);
    return st;
}

static const char *const nvidia_compiled_keys[] = {"NVIDIA_STEP_TIME_US", "NVIDIA_STEP_PROFILE",
                                                   NULL};

static rn_status nvidia_compiled_read(plugin_compiled *c, const char *key, char *buf, size_t size)
{
    nvidia_compiled *x = state_of(c);
    if (strcmp(key, nvidia_compiled_keys[1]) == 0) {
        char tmp[1024] = "";
        if (x != NULL && x->exec != NULL)
            nv_exec_step_profile(x->exec, tmp, sizeof tmp);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (strcmp(key, nvidia_compiled_keys[0]) != 0)
        return RN_NOT_FOUND;
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.1f",
             x != NULL && x->exec != NULL ? (double)nv_exec_steps_ns(x->exec) / 1e3 : 0.0);
    return plugin_property_string(key, tmp, buf, size);
}

const plugin_device_iface nv_device_iface = {
    .info =
        {
            .name = "NVIDIA",
            .architecture = "nvidia", /* the probe's sm_XY (read) */
            .device_type = "discrete",
            .range_for_streams = "1 64",
            .caching_properties = "DEVICE_ARCHITECTURE INFERENCE_PRECISION_HINT NVIDIA_ALLOW_TF32",
        },
    .context_kind = {"NVIDIA", "HOST", "HOST_BUFFER", nv_host_alloc, nv_host_free},
    .own_keys = nv_property_keys,
    .n_own_keys = NV_N_PROPERTY_KEYS,
    .own_size = sizeof(nv_own),
    .ro_keys = nv_device_keys,
    .compiled_ro_keys = nvidia_compiled_keys,
    .infer_shapes = true,
    .open = nvidia_open,
    .close = nvidia_close,
    .register_kernels = nvidia_register_kernels,
    .register_folding = ref_register_kernels,
    .defaults = nvidia_defaults,
    .read = nvidia_read,
    .add_passes = nv_add_passes,
    .plan = nvidia_plan,
    .unplace = nvidia_unplace,
    .built = nvidia_built,
    .compiled_read = nvidia_compiled_read,
    .compiled_changed = nvidia_timing,
};

PLUGIN_DEVICE_DEFINE(nvidia_plugin_ops, "NVIDIA", nv_device_iface, NULL, NULL);

PLUGIN_DEVICE_ENTRY(nvidia_plugin_ops);
