/* The NVIDIA device: the generic plan-based device (plugins/api/device.h)
 * whose plan claims the whole model as one partition that runs as a
 * program on the device (exec.c). This file is its descriptor: create (the
 * CUDA driver, a device, cuDNN new enough — or the reason why not), the
 * kernels that answer query_model, the partition, its own properties
 * (properties.c) and step timing. Requests are the generic request
 * (plugins/api/plan.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/device.h"
#include "plugins/api/export.h"
#include "plugins/api/kit_id.h"
#include "plugins/api/log.h"
#include "plugins/nvidia/exec.h"
#include "plugins/nvidia/nvidia.h"
#include "plugins/ref/ref.h"

/* The device's context: what the probe read, and the kernels that claim
 * what NVIDIA runs (query_model). */
typedef struct nvidia {
    nv_device_info info;
    rn_kernel *claim_kernels;
} nvidia;

/* What a compiled model's programs share: the weights on the device, the
 * live programs (one per input shape its runs were specialised for, while
 * the plan's shape cache or a request holds it) and whether they time their
 * steps. Counted by the compiled model and by each program, since a program
 * goes when the plan lets go of its shape, which may be after the compiled
 * model's state. */
typedef struct nv_prog nv_prog;

typedef struct nv_model {
    atomic_int refs;
    pthread_mutex_t lock;
    nv_weights *weights;
    nv_prog *progs; /* live, newest first */
    int live;
    uint64_t built; /* programs compiled */
    bool timing;    /* NVIDIA_STEP_TIMING */
    /* NVIDIA_AUTOTUNE's choices by graph key: every program's, and an
     * imported blob's; exported with the model (NVIDIA_TUNED). */
    nv_tune_table tuned;
} nv_model;

/* A program's place among the model's (the owner of its nv_exec, which is
 * the partition kernel's state). */
struct nv_prog {
    nv_model *model;
    nv_exec *exec;
    nv_prog *prev, *next;
};

typedef struct nvidia_compiled {
    rn_partition_ops parts;
    nv_model *model;
} nvidia_compiled;

static void model_release(nv_model *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    nv_weights_release(m->weights);
    nv_tune_table_release(&m->tuned);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* ---- the partition: the whole model as one program ---- */

static bool claimed(const rn_node *node, const char **why)
{
    (void)node, (void)why;
    return true;
}

static void program_release(void *state)
{
    nv_prog *p = nv_exec_owner(state);
    nv_model *m = p->model;
    pthread_mutex_lock(&m->lock);
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        m->progs = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    m->live--;
    pthread_mutex_unlock(&m->lock);
    nv_exec_free(p->exec);
    free(p);
    model_release(m);
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
    .run = nv_exec_run, /* exec.c: a request's run goes straight to the program */
    .release = program_release,
    .impl_name = program_impl,
};

/* The base plan of a model with dynamic input dims: never run, since every
 * run takes the plan specialised for its input shapes, whose program is
 * compiled then (check_specialized refused at compile what none could
 * run). */
static rn_status dynamic_run(rn_kernel_args *args)
{
    (void)args;
    return rn_set_error(RN_INTERNAL,
                        "NVIDIA: the program of the model's dynamic shapes ran; a run takes the "
                        "program specialised for its input shapes");
}

static const rn_kernel nvidia_dynamic_kernel = {
    .domain = "runnel",
    .op_type = "NvidiaProgram",
    .impl_type = "cudnn:dynamic shapes",
    .supports = claimed,
    .run = dynamic_run,
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

/* Whether a partition input that is not a constant has a dynamic dim (the
 * base plan of a model with dynamic inputs). */
static bool dynamic_inputs(const rn_node *const *nodes, int n_nodes, const char *const *input_names,
                           int n_inputs)
{
    for (int i = 0; i < n_inputs; i++)
        for (int k = 0; k < n_nodes; k++)
            for (int j = 0; j < rn_node_input_count(nodes[k]); j++) {
                if (strcmp(rn_node_input_name(nodes[k], j), input_names[i]) != 0 ||
                    rn_node_input_constant(nodes[k], j) != NULL)
                    continue;
                rn_partial_shape s = rn_node_input_shape(nodes[k], j);
                for (int d = 0; d < s.rank; d++)
                    if (s.dims[d] < 0)
                        return true;
            }
    return false;
}

/* A constant's identity in the compiled model (nv_weight_identity): the
 * base plan is built on the plan's graph, whose constants are their own. */
static const void *weight_key(void *ctx, const nv_value *v)
{
    const plugin_compiled *c = ctx;
    return c->plan == NULL ? v->host_data : nv_weight_identity(plugin_plan_graph(c->plan), v);
}

static rn_status compile_partition(void *ctx, const rn_node *const *nodes, int n_nodes,
                                   const char *const *input_names, int n_inputs,
                                   const char *const *output_names, int n_outputs,
                                   const rn_kernel **kernel, void **state)
{
    plugin_compiled *c = ctx;
    const nvidia *d = c->device->context;
    const nv_own *own = c->own;
    nv_model *m = state_of(c)->model;
    if (dynamic_inputs(nodes, n_nodes, input_names, n_inputs)) {
        *kernel = &nvidia_dynamic_kernel;
        *state = NULL;
        return RN_OK;
    }
    nv_program *prog;
    rn_status st = nv_lower(nodes, n_nodes, input_names, n_inputs, output_names, n_outputs,
                            c->props.inference_precision, &prog);
    if (st != RN_OK)
        return st;
    nv_prog *p = calloc(1, sizeof *p);
    if (p == NULL) {
        nv_program_free(prog);
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    }
    /* The choices of the model's other programs and of an imported blob,
     * a copy: programs of other shapes compile concurrently. */
    nv_tune_table seen = {0};
    if (own->autotune) {
        pthread_mutex_lock(&m->lock);
        nv_tune_merge(&seen, &m->tuned);
        pthread_mutex_unlock(&m->lock);
    }
    nv_exec_options o = {.device = d->info.device_id,
                         .allow_tf32 = own->allow_tf32,
                         .autotune = own->autotune,
                         .tuned = &seen,
                         .cuda_graph = own->cuda_graph,
                         .async_stages = own->async_stages,
                         .max_slots = (int)own->max_slots,
                         .weights = m->weights,
                         .weight_key = weight_key,
                         .weight_ctx = c,
                         .owner = p};
    bool channels_last = nv_program_channels_last(prog);
    st = nv_exec_create(prog, input_names, n_inputs, &o, &p->exec);
    if (st != RN_OK && st != RN_OUT_OF_MEMORY && channels_last) {
        /* cuDNN found no engine for a channels-last convolution here:
         * the whole program in NCHW, as before layouts were chosen. */
        plugin_log(c->props.log_level, PLUGIN_LOG_WARNING, "NVIDIA",
                   "channels-last program refused (%s); compiling it NCHW", rn_last_error());
        if ((st = nv_lower_layouts(nodes, n_nodes, input_names, n_inputs, output_names, n_outputs,
                                   c->props.inference_precision, false, &prog)) == RN_OK)
            st = nv_exec_create(prog, input_names, n_inputs, &o, &p->exec);
    }
    nv_tune_table_release(&seen);
    if (st != RN_OK) {
        free(p);
        return st;
    }
    atomic_fetch_add(&m->refs, 1);
    p->model = m;
    pthread_mutex_lock(&m->lock);
    nv_exec_set_timing(p->exec, m->timing);
    nv_tune_merge(&m->tuned, nv_exec_tuned(p->exec));
    p->next = m->progs;
    if (m->progs != NULL)
        m->progs->prev = p;
    m->progs = p;
    m->live++;
    m->built++;
    pthread_mutex_unlock(&m->lock);
    *kernel = &nvidia_program_kernel;
    *state = p->exec;
    return RN_OK;
}

/* The model as a run whose dynamic input dims are all 1 would specialise
 * it lowers (no device needed): an op NVIDIA does not run fails the compile
 * naming the node. */
static rn_status nvidia_check_specialized(plugin_compiled *c, const rn_graph *g)
{
    return nv_check_lowering(g, c->props.inference_precision);
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
                                          .supports = nv_supports_op,
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
    nv_precision_defaults(props, ((nvidia *)context)->info.cc_major);
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

static rn_status run_arena_alloc(void *ctx, size_t size, size_t alignment, void **buffer)
{
    (void)ctx, (void)alignment; /* 256 bytes past a page */
    return nv_exec_arena_alloc(size, buffer);
}

static void run_arena_free(void *ctx, void *buffer)
{
    (void)ctx;
    nv_exec_arena_free(buffer);
}

/* The same with NVIDIA_ASYNC_STAGES: each arena carries its run's record
 * (exec.h). */
static const rn_allocator nv_run_arenas = {
    .name = "cuda-pinned-host",
    .host = true,
    .alloc = run_arena_alloc,
    .free = run_arena_free,
};

/* The compiled model's state and its model, made by the plan, or before it
 * by an import that seeds the model's tuned choices (nvidia_import_placed);
 * unplace frees them. */
static rn_status make_state(plugin_compiled *c)
{
    if (c->state == NULL && (c->state = calloc(1, sizeof(nvidia_compiled))) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    nvidia_compiled *x = state_of(c);
    if (x->model != NULL)
        return RN_OK;
    nv_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    rn_status st =
        nv_weights_create(((const nvidia *)c->device->context)->info.device_id, &m->weights);
    if (st != RN_OK) {
        free(m);
        return st;
    }
    atomic_init(&m->refs, 1);
    pthread_mutex_init(&m->lock, NULL);
    x->model = m;
    return RN_OK;
}

/* One partition, one stream worker per request in flight (each waits for
 * its slot's event while the GPU works, unless NVIDIA_ASYNC_STAGES makes
 * the wait a pending stage), requests in flight = the slots. */
static rn_status nvidia_plan(plugin_compiled *c, plugin_plan_options *o)
{
    rn_status st = make_state(c);
    if (st != RN_OK)
        return st;
    nvidia_compiled *x = state_of(c);
    x->parts = (rn_partition_ops){.abi_version = RN_KERNEL_ABI_VERSION,
                                  .claim = claim_all,
                                  .compile = compile_partition,
                                  .ctx = c};
    o->partitions = &x->parts;
    const nv_own *own = c->own;
    o->allocator = own->async_stages ? &nv_run_arenas : &nv_pinned_arenas;
    nv_exec_plan_stages(o, own->async_stages);
    uint32_t max_slots = own->max_slots;
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
    nvidia_compiled *x = state_of(c);
    if (x != NULL)
        model_release(x->model);
    free(x);
}

/* NVIDIA_STEP_TIMING turns the events between steps on or off, in every
 * program of the model and those compiled later. */
static void nvidia_timing(plugin_compiled *c)
{
    nvidia_compiled *x = state_of(c);
    if (x == NULL || x->model == NULL)
        return;
    nv_model *m = x->model;
    pthread_mutex_lock(&m->lock);
    m->timing = ((const nv_own *)c->own)->step_timing;
    for (nv_prog *p = m->progs; p != NULL; p = p->next)
        nv_exec_set_timing(p->exec, m->timing);
    pthread_mutex_unlock(&m->lock);
}

static rn_status nvidia_built(plugin_compiled *c, rn_status st)
{
    if (st == RN_OK && ((const nv_own *)c->own)->step_timing)
        nvidia_timing(c);
    return st;
}

static const char *const nvidia_compiled_keys[] = {"NVIDIA_STEP_TIME_US", "NVIDIA_STEP_PROFILE",
                                                   "NVIDIA_PROGRAMS", "NVIDIA_CONV_ENGINES", NULL};

/* NVIDIA_PROGRAMS: the programs compiled for the model's input shapes and
 * live now, the plan's shape cache (specialised plans built and reused),
 * and the weights on the device with how often a program uploaded or
 * shared one. */
static void programs_line(plugin_compiled *c, nv_model *m, char *buf, size_t size)
{
    plugin_plan_stats ps = {0};
    if (c->plan != NULL)
        plugin_plan_get_stats(c->plan, &ps);
    nv_weights_stats ws;
    nv_weights_get_stats(m->weights, &ws);
    pthread_mutex_lock(&m->lock);
    snprintf(buf, size,
             "programs=%llu live=%d shape_builds=%llu shape_hits=%llu shape_cached=%d "
             "weights=%d bytes=%zu uploads=%llu reuses=%llu",
             (unsigned long long)m->built, m->live, (unsigned long long)ps.shape_builds,
             (unsigned long long)ps.shape_hits, ps.shape_cached, ws.copies, ws.bytes,
             (unsigned long long)ws.uploads, (unsigned long long)ws.reuses);
    pthread_mutex_unlock(&m->lock);
}

static rn_status nvidia_compiled_read(plugin_compiled *c, const char *key, char *buf, size_t size)
{
    nvidia_compiled *x = state_of(c);
    char tmp[1024] = "";
    int k = 0;
    while (nvidia_compiled_keys[k] != NULL && strcmp(key, nvidia_compiled_keys[k]) != 0)
        k++;
    if (nvidia_compiled_keys[k] == NULL)
        return RN_NOT_FOUND;
    if (k == 2 && x != NULL) {
        programs_line(c, x->model, tmp, sizeof tmp);
        return plugin_property_string(key, tmp, buf, size);
    }
    if (k == 3) {
        /* The newest program's (each input shape has its own): what
         * NVIDIA_AUTOTUNE did and each convolution's engine. */
        char engines[8192] = "";
        if (x != NULL) {
            pthread_mutex_lock(&x->model->lock);
            if (x->model->progs != NULL)
                nv_exec_conv_engines(x->model->progs->exec, engines, sizeof engines);
            pthread_mutex_unlock(&x->model->lock);
        }
        return plugin_property_string(key, engines, buf, size);
    }
    /* The step times of the newest program that ran timed (each input shape
     * has its own). */
    uint64_t ns = 0;
    if (x != NULL) {
        pthread_mutex_lock(&x->model->lock);
        for (nv_prog *p = x->model->progs; p != NULL && ns == 0; p = p->next)
            if ((ns = nv_exec_steps_ns(p->exec)) != 0 && k == 1)
                nv_exec_step_profile(p->exec, tmp, sizeof tmp);
        pthread_mutex_unlock(&x->model->lock);
    }
    if (k == 0)
        snprintf(tmp, sizeof tmp, "%.1f", (double)ns / 1e3);
    return plugin_property_string(key, tmp, buf, size);
}

/* ---- export and import: NVIDIA_AUTOTUNE's choices travel with the blob ---- */

#define TUNED_KEY "NVIDIA_TUNED"

/* The blob holds the transformed graph (plugin_export), not cuDNN's plans:
 * an import builds them again. The model's tuned choices go in its header
 * (TUNED_KEY) so that an import with NVIDIA_AUTOTUNE takes them untimed. */
static rn_status nvidia_export(plugin_compiled *c, const plugin_properties *props, void **data,
                               size_t *size)
{
    const plugin_device *dev = c->device;
    const nvidia *d = dev->context;
    nvidia_compiled *x = state_of(c);
    char *text = NULL;
    rn_status st = RN_OK;
    if (x != NULL && x->model != NULL) {
        pthread_mutex_lock(&x->model->lock);
        if (x->model->tuned.n > 0)
            st = nv_tune_format(&x->model->tuned, d->info.cudnn_version,
                                ((const nv_own *)c->own)->allow_tf32, &text);
        pthread_mutex_unlock(&x->model->lock);
    }
    if (st == RN_OK)
        st = text != NULL ? plugin_export_extra(c->plan, dev->iface->info.name, dev->architecture,
                                                props, TUNED_KEY, text, data, size)
                          : plugin_export(c->plan, dev->iface->info.name, dev->architecture, props,
                                          data, size);
    free(text);
    return st;
}

/* *pending: the blob's TUNED_KEY text (NULL: none). */
static rn_status nvidia_import(plugin_compiled *c, const void *data, size_t size,
                               const rn_property *overrides, size_t n_overrides, graph **g,
                               void **pending)
{
    char *text = NULL;
    rn_status st =
        plugin_import_extra(data, size, c->device->iface->info.name, c->device->architecture,
                            overrides, n_overrides, &c->props, g, TUNED_KEY, &text);
    if (st == RN_OK)
        *pending = text;
    return st;
}

/* The blob's choices seed the model's (ignored when they were made with
 * another cuDNN or TF32 setting: nv_tune_parse). This runs before the plan:
 * the state is made here (the plan then finds it); if it cannot be, the
 * plan fails saying why. */
static void nvidia_import_placed(plugin_compiled *c, void *pending)
{
    if (pending == NULL || make_state(c) != RN_OK)
        return;
    nvidia_compiled *x = state_of(c);
    const nvidia *d = c->device->context;
    pthread_mutex_lock(&x->model->lock);
    nv_tune_parse(pending, d->info.cudnn_version, ((const nv_own *)c->own)->allow_tf32,
                  &x->model->tuned);
    pthread_mutex_unlock(&x->model->lock);
}

static void nvidia_import_done(void *pending)
{
    free(pending);
}

const plugin_device_iface nv_device_iface = {
    .info =
        {
            .name = "NVIDIA",
            .architecture = "nvidia", /* the probe's sm_XY (read) */
            .device_type = "discrete",
            .range_for_streams = "1 64",
            .caching_properties = "DEVICE_ARCHITECTURE INFERENCE_PRECISION_HINT NVIDIA_ALLOW_TF32 "
                                  "NVIDIA_AUTOTUNE",
        },
    .context_kind = {"NVIDIA", "HOST", "HOST_BUFFER", nv_host_alloc, nv_host_free},
    .own_keys = nv_property_keys,
    .n_own_keys = NV_N_PROPERTY_KEYS,
    .own_size = sizeof(nv_own),
    .ro_keys = nv_device_keys,
    .compiled_ro_keys = nvidia_compiled_keys,
    .infer_shapes = true,
    .specializes = true,
    .open = nvidia_open,
    .close = nvidia_close,
    .register_kernels = nvidia_register_kernels,
    .register_folding = ref_register_kernels,
    .defaults = nvidia_defaults,
    .read = nvidia_read,
    .add_passes = nv_add_passes,
    .plan = nvidia_plan,
    .unplace = nvidia_unplace,
    .check_specialized = nvidia_check_specialized,
    .built = nvidia_built,
    .compiled_read = nvidia_compiled_read,
    .compiled_changed = nvidia_timing,
    .export_blob = nvidia_export,
    .import_blob = nvidia_import,
    .import_placed = nvidia_import_placed,
    .import_done = nvidia_import_done,
};

PLUGIN_DEVICE_DEFINE(nvidia_plugin_ops, "NVIDIA", nv_device_iface, NULL, NULL);

PLUGIN_DEVICE_ENTRY(nvidia_plugin_ops);
