/* The plugin ABI: what a device plugin implements so that the Core can
 * compile models for it and run infer requests.
 *
 * A plugin is a set of versioned vtables of function pointers plus opaque
 * contexts (ggml's backend style). Each vtable starts with the ABI version
 * it was built against; the Core rejects a mismatch. Slots marked
 * "(optional)" may be NULL, and the Core then falls back or reports
 * RN_NOT_IMPLEMENTED.
 *
 * Models cross this boundary as runnel graphs (graph/graph.h) and tensors as
 * graph_tensor descriptors: plugins are built with the graph library. */
#ifndef RUNNEL_PLUGIN_H
#define RUNNEL_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runnel/compiled_model.h"
#include "runnel/core.h"
#include "runnel/infer_request.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: kernels gained prepare_ctx and value kinds (sequences, optionals). */
#define RN_PLUGIN_ABI_VERSION 2

struct graph;
struct graph_tensor;
struct plugin_kernel;

/* Called when an async run completes, with its status (RN_OK, RN_CANCELLED
 * or the error), on the callback executor's thread. */
typedef void (*rn_request_callback)(void *user_data, rn_status status);

/* One infer request of a compiled model, on the device's side. */
typedef struct rn_request_ops {
    uint32_t abi_version;
    /* Binds input `index` to a host buffer described by t, read during
     * infer; the buffer stays the caller's and lives until the next bind. */
    rn_status (*set_input)(void *request, size_t index, const struct graph_tensor *t);
    /* (optional) Binds output `index` to a caller's buffer of the right
     * size, to be written in place. */
    rn_status (*set_output)(void *request, size_t index, const struct graph_tensor *t);
    /* Runs the request synchronously in the calling thread. */
    rn_status (*infer)(void *request);
    /* Describes output `index` of the last infer: a host buffer owned by the
     * request (or the caller's bound one), valid until the next infer. */
    rn_status (*get_output)(void *request, size_t index, struct graph_tensor *out);
    /* Per-node profiling of the last infer, owned by the request. */
    rn_status (*profiling)(void *request, const rn_profiling_info **info, size_t *count);
    /* (optional) Async: start a run, wait for it (after its callback
     * returned), wait at most timeout_ms (RN_RESULT_NOT_READY), cancel it,
     * set the completion callback, and tell whether a run is in flight. */
    rn_status (*start_async)(void *request);
    rn_status (*wait)(void *request);
    rn_status (*wait_for)(void *request, int64_t timeout_ms);
    rn_status (*cancel)(void *request);
    rn_status (*set_callback)(void *request, rn_request_callback fn, void *user_data);
    bool (*busy)(const void *request);
    /* Frees the request, waiting for a run in flight first. */
    void (*free)(void *request);
} rn_request_ops;

typedef struct rn_compiled_model_ops {
    uint32_t abi_version;
    /* Creates a request with its own buffers. */
    rn_status (*create_request)(void *compiled, void **request);
    const rn_request_ops *request_ops;
    /* (optional) Reads a property into buf; RN_NOT_FOUND for unknown keys. */
    rn_status (*get_property)(void *compiled, const char *key, char *buf, size_t size);
    /* (optional) Exports the compiled model into a malloc'ed blob (*data,
     * *size) that import_model of the same device reads back. */
    rn_status (*export_model)(void *compiled, void **data, size_t *size);
    /* (optional) Writes the Chrome trace-event JSON of the tasks run so far. */
    rn_status (*write_trace)(void *compiled, const char *path);
    /* (optional) The runtime model, owned by the compiled model. */
    rn_status (*get_runtime_model)(void *compiled, const rn_runtime_node **nodes, size_t *count);
    void (*free)(void *compiled);
} rn_compiled_model_ops;

typedef struct rn_plugin_ops {
    uint32_t abi_version;
    const char *device_name;
    /* Starts the backend; fails with the reason when it cannot (no driver,
     * no device). */
    rn_status (*create)(void **plugin);
    void (*destroy)(void *plugin);
    /* Sets device properties (defaults for later compiles); an unknown key
     * or a bad value is RN_INVALID_ARG naming it, and nothing changes. */
    rn_status (*set_property)(void *plugin, const rn_property *properties, size_t n_properties);
    /* Reads a device property (read-write or read-only) into buf. */
    rn_status (*get_property)(void *plugin, const char *key, char *buf, size_t size);
    /* (optional) For each original layer name of the model, whether this
     * device runs it: *names (each malloc'ed) and *supported (malloc'ed)
     * become the caller's, who frees them with free(). */
    rn_status (*query_model)(void *plugin, const struct graph *model, const rn_property *properties,
                             size_t n_properties, char ***names, bool **supported, size_t *count);
    /* (optional) Reads a blob written by export_model: a blob for another
     * device, architecture or format version, or a corrupt one, is an error
     * naming the check that failed. *io receives the compiled graph (owned by
     * the compiled model) so that the Core can describe its inputs and
     * outputs. */
    rn_status (*import_model)(void *plugin, const void *data, size_t size,
                              const rn_property *properties, size_t n_properties,
                              const rn_compiled_model_ops **ops, void **compiled,
                              const struct graph **io);
    /* (optional) Adds an extension's kernels for this device (a
     * NULL-terminated list, which outlives the plugin). Add extensions
     * before compiling models that use them. */
    rn_status (*add_extension)(void *plugin, const struct plugin_kernel *const *kernels);
    /* Compiles a model (the plugin clones what it keeps); compile-time
     * properties override the device's, which override the defaults; an
     * unknown key or a bad value is RN_INVALID_ARG naming it. */
    rn_status (*compile_model)(void *plugin, const struct graph *model,
                               const rn_property *properties, size_t n_properties,
                               const rn_compiled_model_ops **ops, void **compiled);
} rn_plugin_ops;

/* The one symbol a plugin shared object exports:
 *   const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version);
 * It returns the plugin's vtable (whose abi_version the Core checks), or
 * NULL when it cannot serve a runtime of that ABI version. */
typedef const rn_plugin_ops *(*rn_plugin_entry_fn)(uint32_t abi_version);
#define RN_PLUGIN_ENTRY_NAME "rn_plugin_entry"

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_PLUGIN_H */
