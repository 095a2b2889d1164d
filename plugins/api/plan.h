/* The compiled plan every plugin reuses, and the infer request that runs it.
 *
 * plugin_plan_build clones a graph, infers shapes and lowers it to a plan
 * (docs/architecture.md, "The compiled plan"): a kernel per node picked and
 * prepared at compile time (a node no kernel supports is RN_UNSUPPORTED
 * naming the node and op), partitions the device claims, layout conversions
 * where producers and consumers disagree, a static memory plan (offsets
 * into one arena per request, views and in-place outputs, constants shared)
 * and the request pipeline as a task DAG (executors/pipeline.h).
 *
 * A run does no lookup by name, no shape inference and no allocation for
 * the nodes whose shapes are static; nodes whose output shape depends on
 * values computed in the run (NonZero, Unique, ...) infer and allocate at
 * run time. A model with dynamic input dims is re-specialised for the
 * shapes of each run, and the specialised plans are cached (LRU).
 *
 * A request runs the same DAG two ways: async on the plan's executor pool,
 * bound to a stream, or sync (plugin_request_infer) inline in the caller's
 * thread. */
#ifndef RUNNEL_PLUGINS_API_PLAN_H
#define RUNNEL_PLUGINS_API_PLAN_H

#include <stdatomic.h>

#include "base/kit.h"
#include "executors/pipeline.h"
#include "plugins/api/kernel.h"
#include "runnel/plugin.h"

typedef struct plugin_plan plugin_plan;

typedef struct rn_plugin_request plugin_request;

/* A device stage of the request pipeline (upload, execute, wait, download:
 * executors/pipeline.h names them), a node of the same DAG as the kernels.
 * `run` returns RN_OK when the stage is done, PLUGIN_STAGE_PENDING when it
 * handed work to the device and will call plugin_request_complete_stage
 * later (from any thread), or an error. Upload runs before the kernels, the
 * others after them. Profiling reports upload as "transfer to device",
 * execute and wait as "execution", download as "transfer from device".
 *
 * A device whose kernels only queue work on the run's arena (an OpenCL
 * queue, a CUDA stream) fills `arm` instead of `run`: the generic stage
 * hands it the run's arena (plugin_request_arena) and an event of the run,
 * which the device signals (plugin_event_signal, from any thread: its
 * driver's completion callback) once everything queued so far completed;
 * the stage is then done. So a device supplies only the hook over its
 * queue, and the pending node, its completion, its profiling and its
 * ordering for the sanitizers are this layer's. */
#define PLUGIN_STAGE_PENDING 1

/* A run's device event (one per device stage of a request, in flight from
 * arm to plugin_event_signal). */
typedef struct plugin_event plugin_event;

typedef struct plugin_stage {
    executors_stage stage;
    executors_where where; /* EXECUTORS_ON_STREAM or EXECUTORS_ON_DEVICE_WAIT */
    int (*run)(plugin_request *request, uint32_t stage, void *ctx);
    /* Runs after a failure or a cancellation too (other stages are then
     * skipped): a wait that drains what the run left in flight on the
     * device (non-blocking copies from and into the caller's memory), so
     * that the run completes only once nothing touches that memory. */
    bool always;
    /* (optional, in place of run) Arms `event` to be signalled once the
     * work queued on `arena` so far has completed: PLUGIN_STAGE_PENDING
     * when armed, RN_OK when there is nothing to wait for (no arena yet),
     * or an error once nothing is left in flight (then it is not
     * signalled). Once armed the run may complete at any moment: the hook
     * touches nothing of it after. */
    int (*arm)(void *arena, plugin_event *event);
} plugin_stage;

/* Signals an armed event (once, from any thread) with the device work's
 * status: the stage completes and the run goes on. */
RN_KIT void plugin_event_signal(plugin_event *event, rn_status status);
/* The arena the event was armed on. */
RN_KIT void *plugin_event_arena(plugin_event *event);
/* The profiling entries of the event's run (plugin_request_profile_entries),
 * for a device that times its nodes itself before it signals. */
RN_KIT rn_profiling_info *plugin_event_profile_entries(plugin_event *event, size_t *count);

/* An engine: an in-order queue of device work served by a thread of its
 * own, for a device whose work is a blocking call (a synchronous driver
 * API, a copy engine, SLOWDEV's simulated engines). A stage hands its work
 * to the engine and returns pending; the engine runs the work items one at
 * a time in the order queued, and completes each stage with its work's
 * status (plugin_request_complete_stage), as a CUDA stream or an OpenCL
 * queue would. So no stream worker waits for the device, concurrent
 * requests overlap across a device's engines, and the thread, the queue
 * and the completion are this layer's. */
typedef struct plugin_engine plugin_engine;

/* Device work run on an engine's thread: its status completes the stage. */
typedef rn_status (*plugin_engine_work)(plugin_request *request, void *arg);

/* Starts an engine (its thread); `name` names it in errors. */
RN_KIT rn_status plugin_engine_open(const char *name, plugin_engine **out);
/* Runs what is queued, then stops the thread and frees the engine (NULL:
 * nothing). */
RN_KIT void plugin_engine_close(plugin_engine *engine);
/* Queues `work(request, arg)` for device stage `stage` of `request` (a
 * stage's `run` hands it its own arguments): PLUGIN_STAGE_PENDING, or an
 * error (nothing queued). */
RN_KIT int plugin_engine_queue(plugin_engine *engine, plugin_request *request, uint32_t stage,
                               plugin_engine_work work, void *arg);
/* Runs `work(request, arg)` on the engine in its turn and returns its
 * status once it ran: a stage that blocks (one on EXECUTORS_ON_DEVICE_WAIT)
 * and that the engine serialises with the work queued before it. */
RN_KIT rn_status plugin_engine_call(plugin_engine *engine, plugin_request *request,
                                    plugin_engine_work work, void *arg);

#define PLUGIN_MAX_STAGES 8

struct rn_plugin_context;

/* The name of the executor pools plans run on (executors_acquire): one for
 * every device, so that plans of any device with the same streams and
 * threads share their workers (and their callback and device-wait
 * executors). */
#define PLUGIN_HOST_WORKERS "host"

typedef struct plugin_plan_options {
    bool profiling;              /* record per-node real time */
    bool trace;                  /* record every task of the pool (plugin_plan_write_trace) */
    uint32_t n_streams;          /* streams of the executor pool (0: 1) */
    uint32_t threads_per_stream; /* workers per stream (0: all CPUs / streams) */
    /* Threads a stream computes with, where the device runs more than its
     * workers (the CPU device's OpenMP team); reported in
     * INFERENCE_NUM_THREADS as streams × this (0: threads_per_stream). */
    uint32_t compute_threads_per_stream;
    /* Device stages, in pipeline order (none for host devices). */
    int n_stages;
    plugin_stage stages[PLUGIN_MAX_STAGES];
    void *stage_ctx; /* passed to every stage's run */
    /* The context the model runs in (plugins/api/remote.h): remote tensors
     * bound to requests must belong to it. NULL: no remote tensors. */
    const struct rn_plugin_context *context;
    /* (optional) Describes a remote tensor bound to a request as the plan
     * sees it: host memory (data), or device memory (data NULL, buffer and
     * offset as the allocator's, and its layout); an error naming the
     * problem when the tensor cannot be bound here. An input in device
     * memory whose layout equals the one its upload writes skips the upload
     * for the run (its readers read the tensor) unless a node writes over
     * the upload's output in place; otherwise the device's conversion gets
     * it as its plain side (as a result's download does). NULL: the context
     * is a host context (plugin_host_tensor_view). */
    rn_status (*remote_view)(const struct rn_plugin_context *context,
                             const rn_plugin_tensor *tensor, graph_tensor *out);
    /* The device's name: in log messages (plugins/api/log.h), and the name
     * its executor pool is shared by (executors/); and the LOG_LEVEL in
     * force. */
    const char *device;
    int log_level;
    /* (optional) Where arenas live; NULL: host memory. */
    const rn_allocator *allocator;
    /* (optional) Partitions the device claims and runs as one kernel. */
    const rn_partition_ops *partitions;
    /* Specialised plans kept for run-time input shapes (0: 8). */
    int shape_cache;
    /* (optional) Runs on a clone of the model whose inputs have the
     * concrete shapes of a run, before it is lowered: the device folds what
     * those shapes decide (Shape, Size and the shape arithmetic they feed),
     * so that the specialised plan is static. */
    rn_status (*specialize)(void *ctx, graph *g);
    void *specialize_ctx;
    /* (optional) Whether a tensor in the device's layout `whole` (a
     * Concat's output) is the bytes of its n inputs, in the device's layouts
     * parts[k], laid end to end in order along `axis` (oneDNN's nChw8c along
     * C when N is 1 and every part's C is a multiple of 8): then the plan
     * lets the producers write into their slices, as it does for plain
     * tensors. NULL: Concats in a device's layout copy. */
    bool (*concat_dense)(const rn_layout *whole, const rn_layout *const *parts, int n, int axis);
    /* (optional) Branch parallelism (plugins/api/branch.c): with
     * branch_threads > 1 a request's chains of nodes run as one task that,
     * when two or more are ready, calls branch_fork(fn, arg, branch_threads)
     * to run fn(arg, thread) on that many threads of the stream's cores
     * (thread 0 the caller), each running chains side by side. branch_work
     * estimates a node's cost (NULL: 1 per node), to take the costliest
     * ready chain first and to run a chain alone when it outweighs the
     * others. 0 or NULL: one chain at a time. */
    int branch_threads;
    void (*branch_fork)(void (*fn)(void *arg, int thread), void *arg, int threads);
    int64_t (*branch_work)(const rn_node *node);
    /* (optional, with branch_threads > 1 and branch_fork NULL) Branches of
     * a device whose kernels each run on one thread (REF): a fork hands
     * ready chains to branch_threads - 1 more workers of the request's
     * stream (one-off scheduler tasks that a fork which no longer needs
     * them revokes), and the chains' costs are their measured run times
     * (ns, a moving average; in a fork the thread's CPU time, which a
     * shared core does not inflate; a chain not yet run costs 0, so the
     * first run forks nothing). A fork pays when the ready chains, side by side,
     * finish sooner than one after the other by more than what a fork
     * costs: this estimate (a worker's wake-up and the data's move to its
     * core), or more where forks were measured to cost more (a busy
     * machine: branch.c). 0: the device forks its own threads
     * (branch_fork). */
    int64_t branch_fork_ns;
} plugin_plan_options;

/* Builds a plan for `model` (cloned; the caller keeps its graph) and
 * acquires its executor pool. The registry must outlive the plan. */
RN_KIT rn_status plugin_plan_build(const graph *model, const plugin_kernel_registry *registry,
                                   const plugin_plan_options *options, plugin_plan **out);
/* The same with the caller's graph taken over (freed on failure): no copy
 * of its weights. */
rn_status plugin_plan_build_owned(graph *g, const plugin_kernel_registry *registry,
                                  const plugin_plan_options *options, plugin_plan **out);
RN_KIT void plugin_plan_free(plugin_plan *plan);

/* The plan's transformed graph (owned by the plan). */
RN_KIT const graph *plugin_plan_graph(const plugin_plan *plan);

/* A clone of `model` whose inputs have `shapes` (one per input) and whose
 * other values have the shapes inference is to find again: the graph a
 * plan specialised for those shapes starts from. */
rn_status plugin_graph_with_shapes(const graph *model, const graph_shape *shapes, graph **out);
/* Whether a tensor input of g has a dynamic dim or an unknown rank. */
bool plugin_graph_has_dynamic_inputs(const graph *g);

/* The constants the base plan converted into kernels' layouts at compile
 * time: fn(ctx, plain, converted) for each (descriptors with their data,
 * the converted one's layout set), in conversion order; stops at and
 * returns the first error. Device exports use it to store the converted
 * bytes (docs/export.md). */
typedef rn_status (*plugin_converted_fn)(void *ctx, const graph_tensor *plain,
                                         const graph_tensor *converted);
rn_status plugin_plan_converted_constants(const plugin_plan *plan, plugin_converted_fn fn,
                                          void *ctx);

/* Counters of the base plan: exec nodes, nodes run without inference,
 * views, in-place outputs, layout conversions, arena bytes per request;
 * and of the shape cache: specialised plans built and reused. */
typedef struct plugin_plan_stats {
    int nodes, fast_nodes, views, inplace, conversions, tasks;
    size_t arena_bytes;
    uint64_t shape_builds, shape_hits;
    int shape_cached;
} plugin_plan_stats;
RN_KIT void plugin_plan_get_stats(plugin_plan *plan, plugin_plan_stats *out);

/* The options the plan was built with (streams resolved). */
const plugin_plan_options *plugin_plan_get_options(const plugin_plan *plan);

/* Turns per-node profiling on or off (ENABLE_PROFILING set on a compiled
 * model): each request follows from its next run. */
void plugin_plan_set_profiling(plugin_plan *plan, bool on);
bool plugin_plan_profiling(const plugin_plan *plan);

/* Answers the compiled-model properties the plan decides: NUM_STREAMS,
 * INFERENCE_NUM_THREADS (streams x threads per stream) and the plan's
 * counters (PLAN_ARENA_BYTES, PLAN_FAST_NODES, PLAN_CONVERSIONS,
 * SHAPE_CACHE_BUILDS, SHAPE_CACHE_HITS). RN_NOT_FOUND, with no message set,
 * for any other key. */
rn_status plugin_plan_get_property(const plugin_plan *plan, const char *key, char *buf,
                                   size_t size);

/* Changes the LOG_LEVEL of the plan's requests (set on a compiled model). */
void plugin_plan_set_log_level(plugin_plan *plan, int level);

/* The read-only keys plugin_plan_get_property answers, NULL-terminated. */
extern const char *const plugin_plan_property_keys[];

/* The request pipeline: preprocess, the device stages before the kernels,
 * "infer" (the kernels), the device stages after them, postprocess and
 * callback, each with its executor ("stream", "device-wait", "callback").
 * Owned by the plan. */
rn_status plugin_plan_pipeline(const plugin_plan *plan, const rn_pipeline_stage **stages,
                               size_t *count);

/* Writes the Chrome trace-event JSON of every task the plan's executor pool
 * ran (all requests, stages and kernels, per stream); needs options.trace. */
rn_status plugin_plan_write_trace(const plugin_plan *plan, const char *path);
/* The CLOCK_MONOTONIC instant in ns the trace's "ts" count from (0 without
 * options.trace): a device appending events of its own clock to the trace
 * converts them with it. */
RN_KIT uint64_t plugin_plan_trace_origin_ns(const plugin_plan *plan);

/* The runtime model of the plan (owned by the plan, rebuilt by each call). */
rn_status plugin_plan_runtime_model(plugin_plan *plan, const rn_runtime_node **nodes,
                                    size_t *count);

/* `owner` (may be NULL) is what the callback receives. */
RN_KIT rn_status plugin_request_create(const plugin_plan *plan, rn_infer_request *owner,
                                       plugin_request **out);
/* Frees the request; a run in flight is waited for first. */
void plugin_request_free(plugin_request *request);
rn_status plugin_request_set_input(plugin_request *request, size_t index, const graph_tensor *t);
rn_status plugin_request_set_output(plugin_request *request, size_t index, const graph_tensor *t);
/* Binds input or output `index` to a remote tensor of the plan's context
 * (options.context), in place: no copy either way. */
rn_status plugin_request_set_remote_input(plugin_request *request, size_t index,
                                          rn_plugin_tensor *tensor);
rn_status plugin_request_set_remote_output(plugin_request *request, size_t index,
                                           rn_plugin_tensor *tensor);
/* Bytes of the inputs (outputs true: of the results) of the current run
 * that live in host memory rather than in remote tensors: what a device
 * stage has to upload (download). */
RN_KIT size_t plugin_request_host_bytes(const plugin_request *request, bool outputs);
/* The arena of the current run as the plan's allocator made it (its
 * `buffer`): where a device stage finds the request's device memory and
 * the queue it belongs to. NULL before the first run. */
RN_KIT void *plugin_request_arena(const plugin_request *request);
rn_status plugin_request_infer(plugin_request *request);
rn_status plugin_request_get_output(plugin_request *request, size_t index, graph_tensor *out);
/* Stage entries ("input preprocessing", "transfer to device", "execution",
 * "transfer from device", "output postprocessing"), then one entry per node.
 * RN_INVALID_ARG when the plan was built without profiling. */
rn_status plugin_request_profiling(plugin_request *request, const rn_profiling_info **info,
                                   size_t *count);
/* The same entries of the run in progress, writable, for a device stage of
 * that run (a device that times its nodes itself overwrites their
 * real_time_us); NULL when the run is not profiled. */
RN_KIT rn_profiling_info *plugin_request_profile_entries(plugin_request *request, size_t *count);
/* The request a kernel's run is for (args as the plan hands them to the
 * kernel): a device whose kernel queues work that a later device stage of
 * the same run waits for finds that run's arena with it
 * (plugin_request_arena), which its stage and `arm` hooks are given. */
RN_KIT plugin_request *plugin_kernel_request(const rn_kernel_args *args);
/* The name of the node (kernel or layout conversion) the calling thread is
 * running for a request, NULL outside one: a conversion's device commands
 * can be attributed to its node. */
RN_KIT const char *plugin_running_node(void);

/* Starts an async run (RN_REQUEST_BUSY while one is in flight). Inputs are
 * read during the run: the caller must not change them until it completes. */
rn_status plugin_request_start_async(plugin_request *request);
/* Waiting for a run, its callback and whether it is busy: the run object's
 * (plugin_run_op_wait, _wait_for, _set_callback, _busy in run.h). */
/* Skips the kernels of the current run that have not started; the run
 * completes with RN_CANCELLED. A no-op when the request is idle. */
rn_status plugin_request_cancel(plugin_request *request);
/* Completes device stage `stage` (its index in options.stages) of the run in
 * flight, which returned PLUGIN_STAGE_PENDING; `status` is its result. */
RN_KIT void plugin_request_complete_stage(plugin_request *request, uint32_t stage,
                                          rn_status status);

/* ---- nested plans: the subgraphs of control-flow kernels ----
 *
 * A control-flow kernel (If, Loop, Scan, SequenceMap) runs its bodies with
 * the same machinery as the top level: at prepare time it builds a nested
 * plan per body with the registry of its plugin_kernel_ctx, and per run it
 * creates a plugin_request of that plan, binds the body's inputs and the
 * values the body reads from enclosing scopes (its captures), and runs it
 * synchronously in its own thread once per iteration (plugins/api/subgraph.h
 * wraps this for kernels). */

/* Builds a nested plan for `body` (a subgraph; cloned and made
 * self-contained): every value it reads from an enclosing scope becomes a
 * capture. `inputs` (n_inputs ports, may be NULL) fill in the kinds, types
 * and shapes the body's inputs leave undeclared, so that its kernels can be
 * picked. A nested plan has no executor pool: its requests run with
 * plugin_request_infer only. */
rn_status plugin_plan_build_nested(const graph *body, const plugin_kernel_registry *registry,
                                   const graph_port *inputs, int n_inputs, plugin_plan **out);

/* The captures of a nested plan (0 for a top-level plan): capture i stands
 * for plugin_plan_capture_source(plan, i), a value of the graph that encloses
 * the body (so one of the implicit inputs of the node that owns it). */
int plugin_plan_capture_count(const plugin_plan *plan);
const graph_value *plugin_plan_capture_source(const plugin_plan *plan, int i);

/* Binds capture i of a nested plan's request to a value (borrowed, read
 * during infer; a tensor, sequence or absent optional). */
rn_status plugin_request_set_capture(plugin_request *request, int i, const graph_tensor *t);

/* Makes a nested request stop with RN_CANCELLED between nodes once *cancel
 * is set (the enclosing run's flag; NULL: none). */
void plugin_request_set_cancel_source(plugin_request *request, const atomic_bool *cancel);

/* rn_request_ops of the generic request (its functions are the ops). */
RN_KIT extern const rn_request_ops plugin_generic_request_ops;

/* Bytes a dense tensor of `count` elements of `type` needs (STRING: one
 * char* per element). */
RN_KIT size_t plugin_tensor_nbytes(rn_element_type type, size_t count);

#endif /* RUNNEL_PLUGINS_API_PLAN_H */
