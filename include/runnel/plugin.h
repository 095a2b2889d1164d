/* The plugin ABI: what a device plugin implements so that the Core can
 * compile models for it and run infer requests.
 *
 * A plugin is a set of versioned vtables of function pointers over typed
 * handles (ggml's backend style): each handle type below is a struct the
 * plugin defines for itself (struct rn_plugin, struct rn_plugin_compiled,
 * ...), opaque to the Core. Each vtable starts with the ABI version it was
 * built against; the Core rejects a mismatch. Slots marked "(optional)" may
 * be NULL, and the Core then falls back or reports RN_NOT_IMPLEMENTED.
 *
 * Models cross this boundary as rn_graph (opaque; its nodes are the
 * rn_node of runnel/kernel.h) and tensors as rn_kernel_tensor descriptors.
 * This header, runnel/kernel.h and the public API are all a plugin needs. */
#ifndef RUNNEL_PLUGIN_H
#define RUNNEL_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/compiled_model.h"
#include "runnel/core.h"
#include "runnel/infer_request.h"
#include "runnel/kernel.h"
#include "runnel/remote.h"
#include "runnel/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: kernels gained prepare_ctx and value kinds (sequences, optionals).
 * 3: remote contexts and tensors, compile/import with a context, plugin
 *    versions, compiled-model set_property and request pipelines.
 * 4: typed handles, rn_kernel_tensor descriptors, versioned kernel lists,
 *    the request's callback called with its owner (one request object).
 * 5: attach_core, for devices that run models on other devices (HETERO,
 *    AUTO), which reach them with rn_core_device_plugin.
 * 6: get_device_property.
 * 7: the rn_graph accessors below: a plugin reads a model through them and
 *    the rn_node accessors, never through runnel's graph layout. */
#define RN_PLUGIN_ABI_VERSION 7

/* A model as it crosses the boundary (opaque outside runnel). */
typedef struct graph rn_graph;

/* ---- reading a model ----
 *
 * What a plugin sees of an rn_graph (compile_model, query_model, a device's
 * own lowering): its nodes in topological order, each read with the
 * rn_node_* accessors of runnel/kernel.h, the names of its inputs (the
 * parameters a user feeds, in declaration order) and of its outputs, and its
 * constants by name. Everything returned is borrowed from the graph and
 * lives as long as it does; an index out of range gives NULL (or "" for a
 * name). */
RN_API int rn_graph_node_count(const rn_graph *graph);
RN_API const rn_node *rn_graph_node(const rn_graph *graph, int i);
RN_API int rn_graph_input_count(const rn_graph *graph);
RN_API const char *rn_graph_input_name(const rn_graph *graph, int i);
RN_API int rn_graph_output_count(const rn_graph *graph);
RN_API const char *rn_graph_output_name(const rn_graph *graph, int i);
/* The constant (an initializer, or a value constant folding computed) named
 * `name`, or NULL when the graph has no constant of that name. */
RN_API const rn_kernel_tensor *rn_graph_constant(const rn_graph *graph, const char *name);

/* The handles a plugin defines. */
typedef struct rn_plugin rn_plugin;                   /* the plugin's state */
typedef struct rn_plugin_compiled rn_plugin_compiled; /* a compiled model */
typedef struct rn_plugin_request rn_plugin_request;   /* an infer request */
typedef struct rn_plugin_context rn_plugin_context;   /* a remote context */
typedef struct rn_plugin_tensor rn_plugin_tensor;     /* a remote tensor */

/* One infer request of a compiled model, on the device's side. */
typedef struct rn_request_ops {
    uint32_t abi_version;
    /* Binds input `index` to a host buffer described by t, read during
     * infer; the buffer stays the caller's and lives until the next bind. */
    rn_status (*set_input)(rn_plugin_request *request, size_t index, const rn_kernel_tensor *t);
    /* (optional) Binds output `index` to a caller's buffer of the right
     * size, to be written in place. */
    rn_status (*set_output)(rn_plugin_request *request, size_t index, const rn_kernel_tensor *t);
    /* Runs the request synchronously in the calling thread. */
    rn_status (*infer)(rn_plugin_request *request);
    /* Describes output `index` of the last infer: a host buffer owned by the
     * request (or the caller's bound one), valid until the next infer. */
    rn_status (*get_output)(rn_plugin_request *request, size_t index, rn_kernel_tensor *out);
    /* Per-node profiling of the last infer, owned by the request. */
    rn_status (*profiling)(rn_plugin_request *request, const rn_profiling_info **info,
                           size_t *count);
    /* (optional) Async: start a run, wait for it (after its callback
     * returned), wait at most timeout_ms (RN_RESULT_NOT_READY), cancel it,
     * set the completion callback (called with the request's owner, the
     * rn_infer_request given to create_request, on the callback executor),
     * and tell whether a run is in flight. */
    rn_status (*start_async)(rn_plugin_request *request);
    rn_status (*wait)(rn_plugin_request *request);
    rn_status (*wait_for)(rn_plugin_request *request, int64_t timeout_ms);
    rn_status (*cancel)(rn_plugin_request *request);
    rn_status (*set_callback)(rn_plugin_request *request, rn_infer_callback fn, void *user_data);
    bool (*busy)(const rn_plugin_request *request);
    /* (optional) Binds input or output `index` to a remote tensor (a handle
     * made by create_tensor of the context the model was compiled with; the
     * Core checks that before calling). The tensor lives until the next
     * bind. */
    rn_status (*set_remote_input)(rn_plugin_request *request, size_t index,
                                  rn_plugin_tensor *tensor);
    rn_status (*set_remote_output)(rn_plugin_request *request, size_t index,
                                   rn_plugin_tensor *tensor);
    /* Frees the request, waiting for a run in flight first. */
    void (*free)(rn_plugin_request *request);
} rn_request_ops;

typedef struct rn_compiled_model_ops {
    uint32_t abi_version;
    /* Creates a request with its own buffers; `owner` is the public handle
     * that the request's callback receives. */
    rn_status (*create_request)(rn_plugin_compiled *compiled, rn_infer_request *owner,
                                rn_plugin_request **request);
    const rn_request_ops *request_ops;
    /* (optional) Reads a property into buf; RN_NOT_FOUND for unknown keys. */
    rn_status (*get_property)(rn_plugin_compiled *compiled, const char *key, char *buf,
                              size_t size);
    /* (optional) Exports the compiled model into a malloc'ed blob (*data,
     * *size) that import_model of the same device reads back. */
    rn_status (*export_model)(rn_plugin_compiled *compiled, void **data, size_t *size);
    /* (optional) Writes the Chrome trace-event JSON of the tasks run so far. */
    rn_status (*write_trace)(rn_plugin_compiled *compiled, const char *path);
    /* (optional) The runtime model, owned by the compiled model. */
    rn_status (*get_runtime_model)(rn_plugin_compiled *compiled, const rn_runtime_node **nodes,
                                   size_t *count);
    /* (optional) Changes properties after compiling. A key that is fixed at
     * compile time, an unknown key or a bad value is RN_INVALID_ARG naming
     * it, and nothing changes. */
    rn_status (*set_property)(rn_plugin_compiled *compiled, const rn_property *properties,
                              size_t n_properties);
    /* (optional) The request pipeline: its stages in order, each with the
     * executor it runs on; owned by the compiled model. */
    rn_status (*get_pipeline)(rn_plugin_compiled *compiled, const rn_pipeline_stage **stages,
                              size_t *count);
    void (*free)(rn_plugin_compiled *compiled);
} rn_compiled_model_ops;

/* A remote tensor: memory of a device's context (see runnel/remote.h). */
typedef struct rn_remote_tensor_ops {
    uint32_t abi_version;
    /* Reads a tensor parameter (SHARED_MEM_TYPE, MEM_HANDLE, ...). */
    rn_status (*get_property)(rn_plugin_tensor *tensor, const char *key, char *buf, size_t size);
    /* Copies `size` bytes (the whole tensor, dense row-major) from or to
     * host memory. */
    rn_status (*copy_from_host)(rn_plugin_tensor *tensor, const void *src, size_t size);
    rn_status (*copy_to_host)(rn_plugin_tensor *tensor, void *dst, size_t size);
    void (*free)(rn_plugin_tensor *tensor);
} rn_remote_tensor_ops;

/* A remote context: a device's memory space and queue. */
typedef struct rn_remote_context_ops {
    uint32_t abi_version;
    /* Reads a context parameter (CONTEXT_TYPE, DEVICE_ID, ...). */
    rn_status (*get_property)(rn_plugin_context *context, const char *key, char *buf, size_t size);
    /* Allocates a tensor in the context's memory, or with params naming
     * existing memory (MEM_HANDLE), shares it. An unknown parameter or a bad
     * value is RN_INVALID_ARG naming it. */
    rn_status (*create_tensor)(rn_plugin_context *context, rn_element_type type,
                               const int64_t *dims, size_t rank, const rn_property *params,
                               size_t n_params, const rn_remote_tensor_ops **ops,
                               rn_plugin_tensor **tensor);
    /* (optional) Host memory the device reaches fastest (pinned), and its
     * release; without them host tensors are plain host memory. */
    rn_status (*alloc_host)(rn_plugin_context *context, size_t size, void **data);
    void (*free_host)(rn_plugin_context *context, void *data);
    /* Frees a context made by create_context (never called on the default
     * context, which the plugin owns). */
    void (*free)(rn_plugin_context *context);
} rn_remote_context_ops;

typedef struct rn_plugin_ops {
    uint32_t abi_version;
    const char *device_name;
    /* The plugin's version ("0.1.0"), read back with rn_core_get_version. */
    const char *version;
    /* Starts the backend; fails with the reason when it cannot (no driver,
     * no device). */
    rn_status (*create)(rn_plugin **plugin);
    void (*destroy)(rn_plugin *plugin);
    /* Sets device properties (defaults for later compiles); an unknown key
     * or a bad value is RN_INVALID_ARG naming it, and nothing changes. */
    rn_status (*set_property)(rn_plugin *plugin, const rn_property *properties,
                              size_t n_properties);
    /* Reads a device property (read-write or read-only) into buf. */
    rn_status (*get_property)(rn_plugin *plugin, const char *key, char *buf, size_t size);
    /* (optional) For each original layer name of the model, whether this
     * device runs it: *names (each malloc'ed) and *supported (malloc'ed)
     * become the caller's, who frees them with free(). */
    rn_status (*query_model)(rn_plugin *plugin, const rn_graph *model,
                             const rn_property *properties, size_t n_properties, char ***names,
                             bool **supported, size_t *count);
    /* (optional) Reads a blob written by export_model: a blob for another
     * device, architecture or format version, or a corrupt one, is an error
     * naming the check that failed. *io receives the compiled graph (owned by
     * the compiled model) so that the Core can describe its inputs and
     * outputs. `context` as for compile_model. */
    rn_status (*import_model)(rn_plugin *plugin, const void *data, size_t size,
                              rn_plugin_context *context, const rn_property *properties,
                              size_t n_properties, const rn_compiled_model_ops **ops,
                              rn_plugin_compiled **compiled, const rn_graph **io);
    /* (optional, with get_default_context) Creates a context from
     * device-specific parameters; an unknown parameter or a bad value is
     * RN_INVALID_ARG naming it. */
    rn_status (*create_context)(rn_plugin *plugin, const rn_property *params, size_t n_params,
                                const rn_remote_context_ops **ops, rn_plugin_context **context);
    /* (optional) The device's default context, owned by the plugin (the
     * same handle on every call): what compile_model uses without one. */
    rn_status (*get_default_context)(rn_plugin *plugin, const rn_remote_context_ops **ops,
                                     rn_plugin_context **context);
    /* (optional) Adds an extension's kernels for this device (the list
     * outlives the plugin; a list of another kernel ABI version is refused).
     * Add extensions before compiling models that use them. */
    rn_status (*add_extension)(rn_plugin *plugin, const rn_kernel_list *kernels);
    /* Compiles a model (the plugin clones what it keeps); compile-time
     * properties override the device's, which override the defaults; an
     * unknown key or a bad value is RN_INVALID_ARG naming it. `context` is a
     * context of this plugin (from create_context or get_default_context)
     * that the compiled model and its requests use, or NULL for the default;
     * the Core keeps it alive while the compiled model lives. */
    rn_status (*compile_model)(rn_plugin *plugin, const rn_graph *model, rn_plugin_context *context,
                               const rn_property *properties, size_t n_properties,
                               const rn_compiled_model_ops **ops, rn_plugin_compiled **compiled);
    /* (optional) For a device that runs models on other devices of the same
     * core (HETERO, AUTO): called once after create with the core that
     * registered the plugin, which reaches the other devices through
     * rn_core_device_plugin. The plugin takes no reference (the core outlives
     * it). Such a device also answers get_property("MULTI_DEVICE_PRIORITIES"),
     * which is how the Core knows that "NAME:D1,D2" passes it a device list
     * (as the property MULTI_DEVICE_PRIORITIES). */
    void (*attach_core)(rn_plugin *plugin, rn_core *core);
    /* (optional, ABI 6) Reads a property of one of the device's devices,
     * the one DEVICE_ID `device_id` names (rn_core_get_property on
     * "NAME.ID", OpenVINO's "GPU.1"): what describes that device
     * (FULL_DEVICE_NAME, ...) is its own, the rest as get_property. An id
     * with no device is RN_INVALID_ARG naming the available ones. Without
     * it the Core refuses "NAME.ID" for properties. */
    rn_status (*get_device_property)(rn_plugin *plugin, const char *device_id, const char *key,
                                     char *buf, size_t size);
} rn_plugin_ops;

/* The plugin of device `device` of `core` (not a "NAME:list" form) and its
 * vtable, for a device that compiles parts of models on other devices
 * (attach_core). The handles belong to the core and live as long as it;
 * RN_NOT_FOUND naming the device when the core has none of that name. */
RN_API rn_status rn_core_device_plugin(rn_core *core, const char *device, const rn_plugin_ops **ops,
                                       rn_plugin **plugin);

/* The one symbol a plugin shared object exports, defined by the plugin: it
 * returns the plugin's vtable (whose abi_version the Core checks), or NULL
 * when it cannot serve a runtime of that ABI version. This declaration
 * (RN_API) exports the definition from a plugin built with hidden
 * visibility. */
RN_API const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version);
typedef const rn_plugin_ops *(*rn_plugin_entry_fn)(uint32_t abi_version);
#define RN_PLUGIN_ENTRY_NAME "rn_plugin_entry"

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_PLUGIN_H */
