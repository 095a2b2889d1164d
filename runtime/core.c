/* The Core: the device registry, model reading and compiling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph/onnx/onnx_reader.h"
#include "runtime/runtime.h"

/* Built-in plugins, registered when a core is created: CPU (oneDNN) first,
 * the default device, then REF. */
extern const rn_plugin_ops cpu_plugin_ops;
extern const rn_plugin_ops ref_plugin_ops;

static const rn_plugin_ops *const builtin_plugins[] = {
    &cpu_plugin_ops,
    &ref_plugin_ops,
};

rn_status rn_core_create(rn_core **out)
{
    if (out == NULL)
        return rn_set_error(RN_INVALID_ARG, "rn_core_create: out is NULL");
    rn_core *core = calloc(1, sizeof *core);
    if (core == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "core: out of memory");
    pthread_mutex_init(&core->lock, NULL);
    atomic_init(&core->refs, 1);
    /* A built-in device that cannot start is absent, with its reason
     * recorded; the others still work. */
    for (size_t i = 0; i < sizeof builtin_plugins / sizeof builtin_plugins[0]; i++)
        runtime_register_plugin(core, NULL, builtin_plugins[i], NULL);
    /* RUNNEL_PLUGINS names a plugins file to load at start (tools use it). */
    const char *file = getenv("RUNNEL_PLUGINS");
    if (file != NULL && file[0] != '\0')
        rn_core_load_plugins_file(core, file);
    rn_clear_error();
    *out = core;
    return RN_OK;
}

void rn_core_free(rn_core *core)
{
    if (core != NULL)
        runtime_core_release(core);
}

void runtime_core_release(rn_core *core)
{
    if (atomic_fetch_sub(&core->refs, 1) != 1)
        return;
    for (int i = 0; i < core->n_devices; i++) {
        core->devices[i].ops->destroy(core->devices[i].plugin);
        runtime_close_library(core->devices[i].library);
    }
    pthread_mutex_destroy(&core->lock);
    free(core);
}

size_t rn_core_device_count(const rn_core *core)
{
    return (size_t)core->n_devices;
}

const char *rn_core_device_name(const rn_core *core, size_t index)
{
    if (index >= (size_t)core->n_devices)
        return NULL;
    return core->devices[index].name;
}

const runtime_device *runtime_find_device(const rn_core *core, const char *device)
{
    for (int i = 0; i < core->n_devices; i++)
        if (strcasecmp(core->devices[i].name, device) == 0)
            return &core->devices[i];
    return NULL;
}

/* Core-level properties (device NULL or ""): CACHE_DIR. */
static rn_status core_set_property(rn_core *core, const rn_property *properties, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(properties[i].key, "CACHE_DIR") != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "unknown core property '%s' (supported: CACHE_DIR; device "
                                "properties need a device name)",
                                properties[i].key);
        if (strlen(properties[i].value) >= sizeof core->cache_dir)
            return rn_set_error(RN_INVALID_ARG, "property CACHE_DIR: the path is too long");
    }
    pthread_mutex_lock(&core->lock);
    for (size_t i = 0; i < n; i++)
        snprintf(core->cache_dir, sizeof core->cache_dir, "%s", properties[i].value);
    pthread_mutex_unlock(&core->lock);
    return RN_OK;
}

rn_status rn_core_set_property(rn_core *core, const char *device, const rn_property *properties,
                               size_t n_properties)
{
    if (core != NULL && (device == NULL || device[0] == '\0') &&
        (n_properties == 0 || properties != NULL)) {
        for (size_t i = 0; i < n_properties; i++)
            if (properties[i].key == NULL || properties[i].value == NULL)
                return rn_set_error(RN_INVALID_ARG, "property %zu: key and value must be set", i);
        return core_set_property(core, properties, n_properties);
    }
    if (core == NULL || device == NULL || (n_properties > 0 && properties == NULL))
        return rn_set_error(RN_INVALID_ARG,
                            "set_property: core, device and properties must be set");
    const runtime_device *dev = runtime_find_device(core, device);
    if (dev == NULL)
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available", device);
    if (dev->ops->set_property == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s has no settable properties", device);
    return dev->ops->set_property(dev->plugin, properties, n_properties);
}

rn_status rn_core_get_property(const rn_core *core, const char *device, const char *key, char *buf,
                               size_t size)
{
    if (core != NULL && key != NULL && buf != NULL && (device == NULL || device[0] == '\0')) {
        if (strcmp(key, "CACHE_DIR") != 0)
            return rn_set_error(RN_NOT_FOUND, "unknown core property '%s'", key);
        if (strlen(core->cache_dir) + 1 > size)
            return rn_set_error(RN_INVALID_ARG, "property CACHE_DIR: buffer too small");
        memcpy(buf, core->cache_dir, strlen(core->cache_dir) + 1);
        return RN_OK;
    }
    if (core == NULL || device == NULL || key == NULL || buf == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_property: core, device, key and buf must be set");
    const runtime_device *dev = runtime_find_device(core, device);
    if (dev == NULL)
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available", device);
    if (dev->ops->get_property == NULL)
        return rn_set_error(RN_NOT_FOUND, "device %s: unknown property '%s'", device, key);
    return dev->ops->get_property(dev->plugin, key, buf, size);
}

rn_status rn_core_get_version(const rn_core *core, const char *device, const char **version)
{
    if (core == NULL || device == NULL || version == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_version: core, device and version must be set");
    const runtime_device *dev = runtime_find_device(core, device);
    if (dev == NULL)
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available", device);
    *version = dev->ops->version;
    return RN_OK;
}

rn_status rn_core_read_model(rn_core *core, const char *path, rn_model **out)
{
    (void)core;
    if (path == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "rn_core_read_model: path and out must not be NULL");
    rn_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "model: out of memory");
    rn_status st = onnx_read_file(path, &m->g);
    if (st != RN_OK) {
        free(m);
        return st;
    }
    *out = m;
    return RN_OK;
}

struct rn_query_result {
    size_t count;
    char **names;
    bool *supported;
};

rn_status rn_core_query_model(rn_core *core, const rn_model *model, const char *device,
                              const rn_property *properties, size_t n_properties,
                              rn_query_result **out)
{
    if (core == NULL || model == NULL || device == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "query_model: core, model, device and out must be set");
    const runtime_device *dev = runtime_find_device(core, device);
    if (dev == NULL)
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available", device);
    if (dev->ops->query_model == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s cannot answer query_model", device);
    rn_query_result *q = calloc(1, sizeof *q);
    if (q == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
    rn_status st = dev->ops->query_model(dev->plugin, model->g, properties, n_properties, &q->names,
                                         &q->supported, &q->count);
    if (st != RN_OK) {
        free(q);
        return st;
    }
    *out = q;
    return RN_OK;
}

size_t rn_query_result_count(const rn_query_result *result)
{
    return result->count;
}

rn_status rn_query_result_entry(const rn_query_result *result, size_t index, const char **name,
                                int *supported)
{
    if (index >= result->count)
        return rn_set_error(RN_INVALID_ARG, "query result entry %zu is out of range (%zu)", index,
                            result->count);
    *name = result->names[index];
    *supported = result->supported[index];
    return RN_OK;
}

void rn_query_result_free(rn_query_result *result)
{
    if (result == NULL)
        return;
    for (size_t i = 0; i < result->count; i++)
        free(result->names[i]);
    free(result->names);
    free(result->supported);
    free(result);
}
