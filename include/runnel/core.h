/* The Core: the device registry, and the entry point for reading and
 * compiling models.
 *
 * A core knows the devices of the plugins registered in it (REF is built in).
 * It reads models, compiles them for a device with properties, and answers
 * which devices are available. A core may be used from several threads. */
#ifndef RUNNEL_CORE_H
#define RUNNEL_CORE_H

#include <stddef.h>

#include "runnel/api.h"
#include "runnel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rn_core rn_core;
typedef struct rn_model rn_model;
typedef struct rn_compiled_model rn_compiled_model;

/* A property: string key and string value, OpenVINO's names
 * ("ENABLE_PROFILING" = "YES"). */
typedef struct rn_property {
    const char *key;
    const char *value;
} rn_property;

/* Creates a core with the built-in devices registered, RUNNEL_PLUGINS's
 * plugins loaded, and the devices of the plugins file installed beside the
 * runtime registered: each of those is loaded when it is first used
 * (docs/plugins.md, "Device discovery"). */
RN_API rn_status rn_core_create(rn_core **out);

/* Releases the core. Compiled models made with it keep it (and their
 * devices) alive until they are freed too. NULL is a no-op. */
RN_API void rn_core_free(rn_core *core);

/* Number of available devices and the i-th device's name ("REF"). The name
 * is owned by the core. Both first load every installed device not yet
 * used, so that the list holds those that start (the others become failed
 * devices). */
RN_API size_t rn_core_device_count(const rn_core *core);
RN_API const char *rn_core_device_name(const rn_core *core, size_t index);

/* Sets properties of a device (they apply to later compiles for it), or,
 * with `device` NULL or "", of the core itself: CACHE_DIR (a folder where
 * compiled models are cached: a compile looks its blob up by a hash of the
 * model, the properties and the device, and stores it on a miss; "" turns
 * caching off) and MAX_TENSOR_BYTES (a model in which a value of static
 * shape needs more bytes is refused when read or compiled, before it is
 * allocated; default 4294967296, "0" for no limit). Unknown keys and bad
 * values are errors naming the key; nothing changes then. */
RN_API rn_status rn_core_set_property(rn_core *core, const char *device,
                                      const rn_property *properties, size_t n_properties);

/* Reads a property of a device (read-write or read-only, e.g.
 * SUPPORTED_PROPERTIES, FULL_DEVICE_NAME) into buf, NUL-terminated.
 * RN_NOT_FOUND for an unknown key or device; RN_INVALID_ARG when buf is too
 * small. */
RN_API rn_status rn_core_get_property(const rn_core *core, const char *device, const char *key,
                                      char *buf, size_t size);

/* Reads a blob written by rn_compiled_model_export back into a compiled
 * model for `device` (compile-time properties may override those stored). A
 * blob for another device, architecture or format version, or a corrupt
 * one, is an error naming the check that failed. */
RN_API rn_status rn_core_import_model(rn_core *core, const void *data, size_t size,
                                      const char *device, const rn_property *properties,
                                      size_t n_properties, rn_compiled_model **out);

/* Loads a device plugin from a shared object that exports rn_plugin_entry
 * (see runnel/plugin.h) and registers it as `name` (NULL: the plugin's own
 * name). A missing library, a missing entry point, an ABI mismatch, a
 * duplicate name or a failing start is an error with its reason; the device
 * is then absent, the others keep working, and the reason can be read back
 * with rn_core_failed_device. */
RN_API rn_status rn_core_load_plugin(rn_core *core, const char *name, const char *path);

/* Loads every plugin named in a plugins file: one "NAME PATH" (or
 * NAME=PATH) per line, '#' starts a comment. Every line is tried; the first
 * failure is returned. A core also loads the file named by the RUNNEL_PLUGINS
 * environment variable when it is created. */
RN_API rn_status rn_core_load_plugins_file(rn_core *core, const char *path);

/* Loads an extension (see runnel/extension.h) from a shared object: its op
 * schemas join the op table, and its kernels are added to every device of
 * this core it names (devices it names that are absent are skipped; a
 * device that takes no extensions is an error naming it). A missing
 * library or entry point, an ABI mismatch or an op defined twice is an
 * error naming it. */
RN_API rn_status rn_core_add_extension(rn_core *core, const char *path);

/* The version of the plugin behind `device` ("0.1.0"; owned by the core).
 * RN_NOT_FOUND for an unknown device. */
RN_API rn_status rn_core_get_version(const rn_core *core, const char *device, const char **version);

/* Devices that failed to register or start, with why. Strings are owned by
 * the core. Both first load every installed device not yet used, so that
 * the list is complete; a device that fails at its first use otherwise is
 * listed from then on. */
RN_API size_t rn_core_failed_device_count(const rn_core *core);
RN_API rn_status rn_core_failed_device(const rn_core *core, size_t index, const char **name,
                                       const char **reason);

/* The answer of rn_core_query_model. */
typedef struct rn_query_result rn_query_result;

/* Asks `device` which of the model's layers it runs, without compiling: one
 * entry per original layer name (node names, and parameters and constants,
 * which follow their consumers). *out is the caller's to free. */
RN_API rn_status rn_core_query_model(rn_core *core, const rn_model *model, const char *device,
                                     const rn_property *properties, size_t n_properties,
                                     rn_query_result **out);
RN_API size_t rn_query_result_count(const rn_query_result *result);
/* The index-th layer name (owned by the result) and whether it is supported. */
RN_API rn_status rn_query_result_entry(const rn_query_result *result, size_t index,
                                       const char **name, int *supported);
RN_API void rn_query_result_free(rn_query_result *result);

/* Reads a model file (ONNX). On success *out is a new model the caller frees
 * with rn_model_free. A missing, malformed or unsupported file is an error
 * whose message names the file and the problem. */
RN_API rn_status rn_core_read_model(rn_core *core, const char *path, rn_model **out);

/* Reads a model (ONNX) from `size` bytes at `data`, which are not kept
 * after the call. `base_dir` is the folder that external data locations are
 * relative to (as the model file's folder is for rn_core_read_model); NULL
 * refuses a model with external data. Otherwise as rn_core_read_model;
 * errors are prefixed "ONNX model in memory". */
RN_API rn_status rn_core_read_model_from_memory(rn_core *core, const void *data, size_t size,
                                                const char *base_dir, rn_model **out);

/* Compiles `model` for `device` with compile-time properties (which override
 * the device's). Unknown keys and bad values are errors naming the key. The
 * model is not modified and may be freed after compiling. */
RN_API rn_status rn_core_compile_model(rn_core *core, const rn_model *model, const char *device,
                                       const rn_property *properties, size_t n_properties,
                                       rn_compiled_model **out);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_CORE_H */
