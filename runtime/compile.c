/* Compiling, importing and exporting models, and the model cache
 * (CACHE_DIR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize.h"
#include "runtime/runtime.h"

/* A compiled-model handle with ports from a graph's inputs and outputs. */
static rn_status new_compiled(rn_core *core, const runtime_device *dev, const graph *io,
                              rn_compiled_model **out)
{
    rn_compiled_model *cm = calloc(1, sizeof *cm);
    if (cm == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    cm->core = core;
    cm->device = dev;
    atomic_init(&cm->refs, 1);
    rn_status st = runtime_ports_from_graph(io->inputs, io->n_inputs, &cm->inputs);
    if (st == RN_OK) {
        cm->n_inputs = (size_t)io->n_inputs;
        st = runtime_ports_from_graph(io->outputs, io->n_outputs, &cm->outputs);
    }
    if (st != RN_OK) {
        runtime_ports_free(cm->inputs, cm->n_inputs);
        free(cm);
        return st;
    }
    cm->n_outputs = (size_t)io->n_outputs;
    *out = cm;
    return RN_OK;
}

/* Frees a handle whose device side was never (or no longer is) attached. */
static void discard_compiled(rn_compiled_model *cm)
{
    runtime_ports_free(cm->inputs, cm->n_inputs);
    runtime_ports_free(cm->outputs, cm->n_outputs);
    free(cm);
}

static rn_status check_abi(rn_compiled_model *cm, const char *device)
{
    if (cm->ops->abi_version == RN_PLUGIN_ABI_VERSION)
        return RN_OK;
    cm->ops->free(cm->compiled);
    return rn_set_error(RN_INTERNAL, "device %s: compiled model ABI %u, expected %u", device,
                        cm->ops->abi_version, RN_PLUGIN_ABI_VERSION);
}

static rn_status check_properties(const rn_property *properties, size_t n)
{
    if (n > 0 && properties == NULL)
        return rn_set_error(RN_INVALID_ARG, "properties is NULL");
    for (size_t i = 0; i < n; i++)
        if (properties[i].key == NULL || properties[i].value == NULL)
            return rn_set_error(RN_INVALID_ARG, "property %zu: key and value must be set", i);
    return RN_OK;
}

/* The plugin's handle of a context (NULL: the device's default). */
static void *context_handle(const rn_remote_context *context)
{
    return context != NULL ? context->handle : NULL;
}

/* Makes cm hold its context (none for the default). */
static void attach_context(rn_compiled_model *cm, rn_remote_context *context)
{
    if (context == NULL || context->is_default)
        return;
    atomic_fetch_add(&context->refs, 1);
    cm->context = context;
}

/* Imports a blob on `dev` into a new handle (ports from the stored graph). */
static rn_status import_on(rn_core *core, const runtime_device *dev, rn_remote_context *context,
                           const void *data, size_t size, const rn_property *properties, size_t n,
                           rn_compiled_model **out)
{
    if (dev->ops->import_model == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s cannot import models", dev->name);
    const rn_compiled_model_ops *ops;
    rn_plugin_compiled *compiled;
    const graph *io;
    rn_status st = dev->ops->import_model(dev->plugin, data, size, context_handle(context),
                                          properties, n, &ops, &compiled, &io);
    if (st != RN_OK)
        return st;
    rn_compiled_model *cm;
    if ((st = new_compiled(core, dev, io, &cm)) != RN_OK) {
        ops->free(compiled);
        return st;
    }
    cm->ops = ops;
    cm->compiled = compiled;
    if ((st = check_abi(cm, dev->name)) != RN_OK) {
        discard_compiled(cm);
        return st;
    }
    atomic_fetch_add(&core->refs, 1);
    attach_context(cm, context);
    *out = cm;
    return RN_OK;
}

/* The cache key of compiling `model` for `dev` with `properties`. */
static rn_status cache_key(const runtime_device *dev, const rn_model *model,
                           const rn_property *properties, size_t n, uint64_t *key)
{
    char arch[128] = "";
    if (dev->ops->get_property != NULL &&
        dev->ops->get_property(dev->plugin, "DEVICE_ARCHITECTURE", arch, sizeof arch) != RN_OK)
        arch[0] = '\0';
    const char **keys = calloc(n + 1, sizeof *keys);
    const char **values = calloc(n + 1, sizeof *values);
    rn_status st = RN_OK;
    if (keys == NULL || values == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    } else {
        for (size_t i = 0; i < n; i++) {
            keys[i] = properties[i].key;
            values[i] = properties[i].value;
        }
        st = graph_hash(model->g, n, keys, values, dev->name, arch, key);
    }
    free(keys);
    free(values);
    return st;
}

/* A device that keeps caches of its own lists CACHE_DIR among its
 * SUPPORTED_PROPERTIES (the GPU: its OpenCL program binaries); it is given
 * the Core's CACHE_DIR before each compile, as OpenVINO's Core does. */
static void forward_cache_dir(const runtime_device *dev, const char *dir)
{
    char keys[4096], *save = NULL;
    if (dev->ops->get_property != NULL && dev->ops->set_property != NULL &&
        dev->ops->get_property(dev->plugin, "SUPPORTED_PROPERTIES", keys, sizeof keys) == RN_OK)
        for (char *k = strtok_r(keys, " ", &save); k != NULL; k = strtok_r(NULL, " ", &save))
            if (strcmp(k, "CACHE_DIR") == 0) {
                rn_property p = {"CACHE_DIR", dir};
                dev->ops->set_property(dev->plugin, &p, 1);
            }
    rn_clear_error(); /* a device that cannot take it compiles all the same */
}

/* Compiles `model` on `dev` in `context` (NULL: the default), through the
 * cache when CACHE_DIR is set. */
static rn_status compile_on(rn_core *core, const rn_model *model, const runtime_device *dev,
                            rn_remote_context *context, const rn_property *properties,
                            size_t n_properties, rn_compiled_model **out)
{
    rn_status st;
    char cache_dir[sizeof core->cache_dir];
    pthread_mutex_lock(&core->lock);
    memcpy(cache_dir, core->cache_dir, sizeof cache_dir);
    pthread_mutex_unlock(&core->lock);
    if (cache_dir[0] != '\0')
        forward_cache_dir(dev, cache_dir);
    bool caching = cache_dir[0] != '\0' && dev->ops->import_model != NULL;
    uint64_t key = 0;
    if (caching && (st = cache_key(dev, model, properties, n_properties, &key)) != RN_OK)
        return st;
    if (caching) {
        void *bytes;
        size_t size;
        if (graph_cache_load(cache_dir, key, &bytes, &size) == RN_OK) {
            rn_compiled_model *cm;
            st = import_on(core, dev, context, bytes, size, properties, n_properties, &cm);
            free(bytes);
            if (st == RN_OK) {
                cm->loaded_from_cache = true;
                *out = cm;
                return RN_OK;
            }
            /* A stale or corrupt entry: compile and replace it below. */
        }
    }
    /* The model may have been reshaped since it was read. */
    if ((st = runtime_check_tensor_sizes(core, model->g, "compile")) != RN_OK)
        return st;
    rn_compiled_model *cm;
    if ((st = new_compiled(core, dev, model->g, &cm)) != RN_OK)
        return st;
    st = dev->ops->compile_model(dev->plugin, model->g, context_handle(context), properties,
                                 n_properties, &cm->ops, &cm->compiled);
    if (st == RN_OK)
        st = check_abi(cm, dev->name);
    if (st != RN_OK) {
        discard_compiled(cm);
        return rn_wrap_error(st, "compiling for %s: ", dev->name);
    }
    atomic_fetch_add(&core->refs, 1);
    attach_context(cm, context);
    if (caching && cm->ops->export_model != NULL) {
        /* A cache that cannot be written is not a compile error: the model
         * is compiled; the next compile simply misses again. */
        void *bytes;
        size_t size;
        if (cm->ops->export_model(cm->compiled, &bytes, &size) == RN_OK) {
            graph_cache_store(cache_dir, key, bytes, size);
            free(bytes);
        }
        rn_clear_error();
    }
    *out = cm;
    return RN_OK;
}

/* Checks the properties and finds the device called `device` ("NAME" or
 * "NAME:D1,D2", whose list *list points to). */
static rn_status find_target(const rn_core *core, const char *device, const rn_property *properties,
                             size_t n, const runtime_device **dev, const char **list)
{
    rn_status st = check_properties(properties, n);
    if (st != RN_OK)
        return st;
    return runtime_route_device(core, device, dev, list);
}

rn_status rn_core_compile_model(rn_core *core, const rn_model *model, const char *device,
                                const rn_property *properties, size_t n_properties,
                                rn_compiled_model **out)
{
    if (core == NULL || model == NULL || device == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "rn_core_compile_model: core, model, device and out must be set");
    const runtime_device *dev;
    const char *list;
    rn_status st = find_target(core, device, properties, n_properties, &dev, &list);
    if (st != RN_OK)
        return st;
    rn_property *all;
    size_t n_all;
    bool owned;
    if ((st = runtime_with_device_list(list, runtime_device_id(core, device), properties,
                                       n_properties, &all, &n_all, &owned)) != RN_OK)
        return st;
    st = compile_on(core, model, dev, NULL, all, n_all, out);
    if (owned)
        free(all);
    return st;
}

/* Checks that a context belongs to `core`. */
static rn_status check_context(const rn_core *core, const rn_remote_context *context,
                               const char *what)
{
    if (context->core != core)
        return rn_set_error(RN_INVALID_ARG, "%s: the context (device %s) was made by another core",
                            what, context->device->name);
    return RN_OK;
}

rn_status rn_core_compile_model_with_context(rn_core *core, const rn_model *model,
                                             rn_remote_context *context,
                                             const rn_property *properties, size_t n_properties,
                                             rn_compiled_model **out)
{
    if (core == NULL || model == NULL || context == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "compile_model_with_context: core, model, context and out must be "
                            "set");
    rn_status st = check_properties(properties, n_properties);
    if (st == RN_OK)
        st = check_context(core, context, "compile_model_with_context");
    if (st != RN_OK)
        return st;
    return compile_on(core, model, context->device, context, properties, n_properties, out);
}

rn_status rn_core_import_model_with_context(rn_core *core, const void *data, size_t size,
                                            rn_remote_context *context,
                                            const rn_property *properties, size_t n_properties,
                                            rn_compiled_model **out)
{
    if (core == NULL || context == NULL || out == NULL || (data == NULL && size > 0))
        return rn_set_error(RN_INVALID_ARG,
                            "import_model_with_context: core, data, context and out must be set");
    rn_status st = check_properties(properties, n_properties);
    if (st == RN_OK)
        st = check_context(core, context, "import_model_with_context");
    if (st != RN_OK)
        return st;
    return import_on(core, context->device, context, data, size, properties, n_properties, out);
}

rn_status rn_core_import_model(rn_core *core, const void *data, size_t size, const char *device,
                               const rn_property *properties, size_t n_properties,
                               rn_compiled_model **out)
{
    if (core == NULL || device == NULL || out == NULL || (data == NULL && size > 0))
        return rn_set_error(RN_INVALID_ARG, "import_model: core, data, device and out must be set");
    const runtime_device *dev;
    const char *list; /* an exported model names its devices itself */
    rn_status st = find_target(core, device, properties, n_properties, &dev, &list);
    if (st != RN_OK)
        return st;
    rn_property *all;
    size_t n_all;
    bool owned;
    if ((st = runtime_with_device_list(NULL, runtime_device_id(core, device), properties,
                                       n_properties, &all, &n_all, &owned)) != RN_OK)
        return st;
    st = import_on(core, dev, NULL, data, size, all, n_all, out);
    if (owned)
        free(all);
    return st;
}

rn_status rn_compiled_model_export(const rn_compiled_model *compiled, void **data, size_t *size)
{
    if (compiled == NULL || data == NULL || size == NULL)
        return rn_set_error(RN_INVALID_ARG, "export: compiled, data and size must be set");
    if (compiled->ops->export_model == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s cannot export models",
                            compiled->device->name);
    return compiled->ops->export_model(compiled->compiled, data, size);
}

rn_status rn_compiled_model_write_trace(const rn_compiled_model *compiled, const char *path)
{
    if (compiled == NULL || path == NULL)
        return rn_set_error(RN_INVALID_ARG, "write_trace: compiled and path must be set");
    if (compiled->ops->write_trace == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s records no trace",
                            compiled->device->name);
    return compiled->ops->write_trace(compiled->compiled, path);
}
