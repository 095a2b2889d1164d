/* The generic compiled plan and infer request every plugin reuses.
 *
 * plugin_plan_build clones a graph, infers shapes, picks a kernel for every
 * node from a registry (a node no kernel supports is RN_UNSUPPORTED naming
 * the node and op), runs the kernels' prepare, and lowers the graph to a task
 * DAG: a "preprocess" stage node, one node per kernel (edges from data
 * dependencies, so independent branches stay parallel), a "postprocess"
 * stage node and a "callback" stage node that runs on the callback executor.
 *
 * A plugin_request runs the plan two ways:
 * - sync (plugin_request_infer): every stage and kernel in the caller's
 *   thread, in topological order; no thread is created or used;
 * - async (plugin_request_start_async): the DAG on the plan's executor pool,
 *   bound to a stream; the callback stage calls the user's callback with the
 *   status, then releases waiters.
 * Per node it resolves output shapes from the concrete inputs (run-time shape
 * inference, so shapes that depend on input values are known), allocates the
 * outputs, runs the kernel, and frees each intermediate buffer when its last
 * reader is done.
 */
#ifndef RUNNEL_PLUGINS_API_PLAN_H
#define RUNNEL_PLUGINS_API_PLAN_H

#include <stdatomic.h>

#include "executors/executors.h"
#include "plugins/api/kernel.h"
#include "runnel/plugin.h"

typedef struct plugin_plan plugin_plan;
typedef struct plugin_request plugin_request;

/* Which executor a device stage runs on. */
typedef enum plugin_stage_executor {
    PLUGIN_STAGE_ON_STREAM = 0,  /* the request's stream workers */
    PLUGIN_STAGE_ON_DEVICE_WAIT, /* the pool's device-wait executor */
} plugin_stage_executor;

/* Where a device stage's time is reported in the profiling info. */
typedef enum plugin_stage_slot {
    PLUGIN_SLOT_UPLOAD = 1,   /* "transfer to device" */
    PLUGIN_SLOT_EXECUTE = 2,  /* "execution" */
    PLUGIN_SLOT_DOWNLOAD = 3, /* "transfer from device" */
} plugin_stage_slot;

/* A device stage of the request pipeline (upload, execute, wait, download),
 * a node of the same DAG as the kernels. `run` returns RN_OK when the stage
 * is done, PLUGIN_STAGE_PENDING when it handed work to the device and will
 * call plugin_request_complete_stage later (from any thread), or an error. */
#define PLUGIN_STAGE_PENDING 1
typedef struct plugin_stage {
    const char *name;
    plugin_stage_executor executor;
    plugin_stage_slot slot;
    bool after_kernels; /* false: between preprocess and the kernels */
    int (*run)(plugin_request *request, uint32_t stage, void *ctx);
} plugin_stage;

#define PLUGIN_MAX_STAGES 8

struct plugin_host_context;

typedef struct plugin_plan_options {
    bool profiling;              /* record per-node real time */
    bool trace;                  /* record every task of the pool (plugin_plan_write_trace) */
    uint32_t n_streams;          /* streams of the executor pool (0: 1) */
    uint32_t threads_per_stream; /* workers per stream (0: all CPUs / streams) */
    /* Device stages, in pipeline order (none for host devices). */
    int n_stages;
    plugin_stage stages[PLUGIN_MAX_STAGES];
    void *stage_ctx; /* passed to every stage's run */
    /* The context the model runs in (plugins/api/remote.h): remote tensors
     * bound to requests must belong to it. NULL: no remote tensors. */
    const struct plugin_host_context *context;
    /* The device's name: in log messages (plugins/api/log.h), and the name
     * its executor pool is shared by (executors/); and the LOG_LEVEL in
     * force. */
    const char *device;
    int log_level;
} plugin_plan_options;

/* Builds a plan for `model` (cloned; the caller keeps its graph) and
 * acquires its executor pool. The registry must outlive the plan. */
rn_status plugin_plan_build(const graph *model, const plugin_kernel_registry *registry,
                            const plugin_plan_options *options, plugin_plan **out);
void plugin_plan_free(plugin_plan *plan);

/* The plan's transformed graph (owned by the plan). */
const graph *plugin_plan_graph(const plugin_plan *plan);

/* The kernel chosen for node i of plugin_plan_graph(). */
const plugin_kernel *plugin_plan_kernel(const plugin_plan *plan, int node);

/* The options the plan was built with (streams resolved). */
const plugin_plan_options *plugin_plan_get_options(const plugin_plan *plan);

/* Turns per-node profiling on or off (ENABLE_PROFILING set on a compiled
 * model): each request follows from its next run. */
void plugin_plan_set_profiling(plugin_plan *plan, bool on);
bool plugin_plan_profiling(const plugin_plan *plan);

/* Answers the compiled-model properties the plan decides: NUM_STREAMS and
 * INFERENCE_NUM_THREADS (streams x threads per stream). RN_NOT_FOUND, with
 * no message set, for any other key. */
rn_status plugin_plan_get_property(const plugin_plan *plan, const char *key, char *buf,
                                   size_t size);

/* Changes the LOG_LEVEL of the plan's requests (set on a compiled model). */
void plugin_plan_set_log_level(plugin_plan *plan, int level);

/* The request pipeline: preprocess, the device stages before the kernels,
 * "infer" (the kernels), the device stages after them, postprocess and
 * callback, each with its executor ("stream", "device-wait", "callback").
 * Owned by the plan. */
rn_status plugin_plan_pipeline(const plugin_plan *plan, const rn_pipeline_stage **stages,
                               size_t *count);

/* Writes the Chrome trace-event JSON of every task the plan's executor pool
 * ran (all requests, stages and kernels, per stream); needs options.trace. */
rn_status plugin_plan_write_trace(const plugin_plan *plan, const char *path);

/* The runtime model of the plan (owned by the plan, rebuilt by each call). */
rn_status plugin_plan_runtime_model(plugin_plan *plan, const rn_runtime_node **nodes,
                                    size_t *count);

rn_status plugin_request_create(const plugin_plan *plan, plugin_request **out);
/* Frees the request; a run in flight is waited for first. */
void plugin_request_free(plugin_request *request);
rn_status plugin_request_set_input(plugin_request *request, size_t index, const graph_tensor *t);
rn_status plugin_request_set_output(plugin_request *request, size_t index, const graph_tensor *t);
/* Binds input or output `index` to a remote tensor of the plan's context
 * (options.context), in place: no copy either way. */
rn_status plugin_request_set_remote_input(plugin_request *request, size_t index,
                                          const void *tensor);
rn_status plugin_request_set_remote_output(plugin_request *request, size_t index,
                                           const void *tensor);
/* Bytes of the inputs (outputs true: of the results) of the current run
 * that live in host memory rather than in remote tensors: what a device
 * stage has to upload (download). */
size_t plugin_request_host_bytes(const plugin_request *request, bool outputs);
rn_status plugin_request_infer(plugin_request *request);
rn_status plugin_request_get_output(plugin_request *request, size_t index, graph_tensor *out);
/* Stage entries ("input preprocessing", "transfer to device", "execution",
 * "transfer from device", "output postprocessing"), then one entry per node.
 * RN_INVALID_ARG when the plan was built without profiling. */
rn_status plugin_request_profiling(plugin_request *request, const rn_profiling_info **info,
                                   size_t *count);

/* Starts an async run (RN_REQUEST_BUSY while one is in flight). Inputs are
 * read during the run: the caller must not change them until it completes. */
rn_status plugin_request_start_async(plugin_request *request);
/* Waits for the current run: returns its status after its callback has
 * returned (RN_OK at once when none was started). */
rn_status plugin_request_wait(plugin_request *request);
/* As wait, for at most timeout_ms: RN_RESULT_NOT_READY when it runs on. */
rn_status plugin_request_wait_for(plugin_request *request, int64_t timeout_ms);
/* Skips the kernels of the current run that have not started; the run
 * completes with RN_CANCELLED. A no-op when the request is idle. */
rn_status plugin_request_cancel(plugin_request *request);
/* Completes device stage `stage` (its index in options.stages) of the run in
 * flight, which returned PLUGIN_STAGE_PENDING; `status` is its result. */
void plugin_request_complete_stage(plugin_request *request, uint32_t stage, rn_status status);

/* Sets (or clears, with fn NULL) the completion callback. */
rn_status plugin_request_set_callback(plugin_request *request, rn_request_callback fn,
                                      void *user_data);
/* True from start_async until the callback is called. */
bool plugin_request_busy(const plugin_request *request);

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

/* rn_request_ops over plugin_request, for plugins whose requests are the
 * generic request. */
extern const rn_request_ops plugin_generic_request_ops;

/* Bytes a dense tensor of `count` elements of `type` needs (STRING: one
 * char* per element). */
size_t plugin_tensor_nbytes(rn_element_type type, size_t count);

#endif /* RUNNEL_PLUGINS_API_PLAN_H */
