/* The Core: the device registry, model reading and compiling. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph/ir/ir_reader.h"
#include "graph/onnx/onnx_reader.h"
#include "runtime/runtime.h"

/* Built-in plugins, registered when a core is created: CPU (oneDNN) first,
 * the default device, then REF, then HETERO and AUTO (which run models on the
 * others). */
extern const rn_plugin_ops cpu_plugin_ops;
extern const rn_plugin_ops ref_plugin_ops;
extern const rn_plugin_ops hetero_plugin_ops;
extern const rn_plugin_ops auto_plugin_ops;

static const rn_plugin_ops *const builtin_plugins[] = {
    &cpu_plugin_ops,
    &ref_plugin_ops,
    &hetero_plugin_ops,
    &auto_plugin_ops,
};

rn_status rn_core_create(rn_core **out)
{
    if (out == NULL)
        return rn_set_error(RN_INVALID_ARG, "rn_core_create: out is NULL");
    rn_core *core = calloc(1, sizeof *core);
    if (core == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "core: out of memory");
    pthread_mutex_init(&core->lock, NULL);
    pthread_mutex_init(&core->start_lock, NULL);
    atomic_init(&core->refs, 1);
    core->max_tensor_bytes = RUNTIME_DEFAULT_MAX_TENSOR_BYTES;
    /* A built-in device that cannot start is absent, with its reason
     * recorded; the others still work. Running out of memory says nothing
     * about the device: the core fails as a whole. */
    for (size_t i = 0; i < sizeof builtin_plugins / sizeof builtin_plugins[0]; i++)
        if (runtime_register_plugin(core, NULL, builtin_plugins[i], NULL) == RN_OUT_OF_MEMORY) {
            runtime_core_release(core);
            return RN_OUT_OF_MEMORY;
        }
    /* RUNNEL_PLUGINS names a plugins file to load at start (tools use it);
     * then the in-tree plugins, from the file installed beside the runtime
     * (RUNNEL_PLUGINS's entries win over theirs), registered only: each is
     * loaded when its device is first used (docs/plugins.md). */
    const char *file = getenv("RUNNEL_PLUGINS");
    if (file != NULL && file[0] != '\0')
        rn_core_load_plugins_file(core, file);
    runtime_load_installed_plugins(core);
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
        runtime_device *d = &core->devices[i];
        if (atomic_load_explicit(&d->state, memory_order_acquire) == RUNTIME_DEVICE_READY) {
            d->ops->destroy(d->plugin);
            runtime_close_library(d->library);
        }
        free(d->path);
    }
    pthread_mutex_destroy(&core->start_lock);
    pthread_mutex_destroy(&core->lock);
    free(core);
}

/* The index-th device that started (NULL past the last), once every
 * pending device has been tried: a listing says which devices can run. */
static const runtime_device *started_device(const rn_core *core, size_t index)
{
    runtime_start_all_devices(core);
    for (int i = 0; i < core->n_devices; i++)
        if (atomic_load_explicit(&core->devices[i].state, memory_order_acquire) ==
                RUNTIME_DEVICE_READY &&
            index-- == 0)
            return &core->devices[i];
    return NULL;
}

size_t rn_core_device_count(const rn_core *core)
{
    size_t n = 0;
    while (started_device(core, n) != NULL)
        n++;
    return n;
}

const char *rn_core_device_name(const rn_core *core, size_t index)
{
    const runtime_device *d = started_device(core, index);
    return d != NULL ? d->name : NULL;
}

rn_status rn_core_device_plugin(rn_core *core, const char *device, const rn_plugin_ops **ops,
                                rn_plugin **plugin)
{
    if (core == NULL || device == NULL || ops == NULL || plugin == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "device_plugin: core, device, ops and plugin must be set");
    const runtime_device *dev = runtime_find_device(core, device);
    if (dev == NULL)
        return runtime_not_available(core, device, device);
    *ops = dev->ops;
    *plugin = dev->plugin;
    return RN_OK;
}

rn_status runtime_route_device(const rn_core *core, const char *device, const runtime_device **dev,
                               const char **list)
{
    const char *colon = strchr(device, ':');
    if (colon == NULL) {
        const char *id = runtime_device_id(core, device);
        char name[RUNTIME_NAME_MAX];
        snprintf(name, sizeof name, "%.*s",
                 id != NULL ? (int)(id - 1 - device) : (int)strlen(device), device);
        if ((*dev = runtime_find_device(core, name)) == NULL)
            return runtime_not_available(core, device, name);
        *list = NULL;
        return RN_OK;
    }
    char name[RUNTIME_NAME_MAX];
    size_t len = (size_t)(colon - device);
    if (len == 0 || len >= sizeof name)
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available", device);
    memcpy(name, device, len);
    name[len] = '\0';
    const runtime_device *d = runtime_find_device(core, name);
    if (d == NULL)
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available (in '%s')", name, device);
    char probe[8];
    rn_status st =
        d->ops->get_property != NULL
            ? d->ops->get_property(d->plugin, "MULTI_DEVICE_PRIORITIES", probe, sizeof probe)
            : RN_NOT_FOUND;
    if (st == RN_NOT_FOUND)
        return rn_set_error(RN_INVALID_ARG,
                            "device '%s': %s takes no device list (only devices such as HETERO "
                            "and AUTO do)",
                            device, d->name);
    rn_clear_error();
    if (colon[1] == '\0')
        return rn_set_error(RN_INVALID_ARG, "device '%s': the device list after ':' is empty",
                            device);
    *dev = d;
    *list = colon + 1;
    return RN_OK;
}

const char *runtime_device_id(const rn_core *core, const char *device)
{
    const char *dot = strchr(device, '.');
    if (dot == NULL || dot == device || dot[1] == '\0' || runtime_find_device(core, device) != NULL)
        return NULL;
    char name[RUNTIME_NAME_MAX];
    if ((size_t)(dot - device) >= sizeof name)
        return NULL;
    snprintf(name, sizeof name, "%.*s", (int)(dot - device), device);
    return runtime_find_device(core, name) != NULL ? dot + 1 : NULL;
}

rn_status runtime_with_device_list(const char *list, const char *id, const rn_property *properties,
                                   size_t n, rn_property **out, size_t *n_out, bool *owned)
{
    if (list == NULL && id == NULL) {
        *out = (rn_property *)properties;
        *n_out = n;
        *owned = false;
        return RN_OK;
    }
    rn_property *p = malloc((n + 2) * sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "core: out of memory");
    size_t k = 0;
    if (list != NULL)
        p[k++] = (rn_property){"MULTI_DEVICE_PRIORITIES", list};
    if (id != NULL)
        p[k++] = (rn_property){"DEVICE_ID", id};
    for (size_t i = 0; i < n; i++)
        p[k++] = properties[i];
    *out = p;
    *n_out = k;
    *owned = true;
    return RN_OK;
}

/* Properties are set per device name, not per device of a device ("GPU",
 * not "GPU.1"): DEVICE_ID picks one for compiles. They are read per device
 * ("GPU.1") where the plugin has get_device_property. */
static rn_status no_device_id(const rn_core *core, const char *device)
{
    const char *id = runtime_device_id(core, device);
    if (id == NULL)
        return RN_OK;
    return rn_set_error(RN_INVALID_ARG,
                        "device '%s': properties are set and read on '%.*s' (DEVICE_ID %s is for "
                        "compiling)",
                        device, (int)(id - 1 - device), device, id);
}

/* MAX_TENSOR_BYTES's value: a decimal byte count, 0 for no limit. */
static bool parse_bytes(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* Core-level properties (device NULL or ""): CACHE_DIR, MAX_TENSOR_BYTES. */
static rn_status core_set_property(rn_core *core, const rn_property *properties, size_t n)
{
    uint64_t bytes;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(properties[i].key, "MAX_TENSOR_BYTES") == 0) {
            if (!parse_bytes(properties[i].value, &bytes))
                return rn_set_error(RN_INVALID_ARG,
                                    "property MAX_TENSOR_BYTES: '%s' is not a byte count",
                                    properties[i].value);
            continue;
        }
        if (strcmp(properties[i].key, "CACHE_DIR") != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "unknown core property '%s' (supported: CACHE_DIR, "
                                "MAX_TENSOR_BYTES; device properties need a device name)",
                                properties[i].key);
        if (strlen(properties[i].value) >= sizeof core->cache_dir)
            return rn_set_error(RN_INVALID_ARG, "property CACHE_DIR: the path is too long");
    }
    pthread_mutex_lock(&core->lock);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(properties[i].key, "MAX_TENSOR_BYTES") == 0 &&
            parse_bytes(properties[i].value, &bytes))
            core->max_tensor_bytes = bytes;
        else
            snprintf(core->cache_dir, sizeof core->cache_dir, "%s", properties[i].value);
    }
    pthread_mutex_unlock(&core->lock);
    return RN_OK;
}

rn_status runtime_check_tensor_sizes(rn_core *core, const graph *g, const char *what)
{
    pthread_mutex_lock(&core->lock);
    uint64_t limit = core->max_tensor_bytes;
    pthread_mutex_unlock(&core->lock);
    for (int i = 0; limit != 0 && i < g->n_values; i++) {
        const graph_value *v = g->values[i];
        if (v->kind != GRAPH_KIND_TENSOR || v->shape.rank < 0 || v->type == RN_UNDEFINED)
            continue;
        uint64_t bytes = v->type == RN_STRING ? sizeof(char *) : rn_element_type_size(v->type);
        bool dynamic = false, overflow = false;
        for (int d = 0; d < v->shape.rank; d++) {
            if (v->shape.dims[d] < 0)
                dynamic = true;
            else if (__builtin_mul_overflow(bytes, (uint64_t)v->shape.dims[d], &bytes))
                overflow = true;
        }
        if (dynamic || (!overflow && bytes <= limit))
            continue;
        char shape[256];
        graph_shape_str(&v->shape, shape, sizeof shape);
        if (overflow)
            return rn_set_error(RN_INVALID_ARG,
                                "%s: value '%s' of shape %s needs more than 2^64 bytes", what,
                                v->name, shape);
        return rn_set_error(RN_INVALID_ARG,
                            "%s: value '%s' of shape %s needs %" PRIu64
                            " bytes, more than MAX_TENSOR_BYTES (%" PRIu64 ")",
                            what, v->name, shape, bytes, limit);
    }
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
    const runtime_device *dev;
    const char *list;
    rn_status st = runtime_route_device(core, device, &dev, &list);
    if (st == RN_OK)
        st = no_device_id(core, device);
    if (st != RN_OK)
        return st;
    if (dev->ops->set_property == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s has no settable properties", device);
    rn_property *all;
    size_t n_all;
    bool owned;
    if ((st = runtime_with_device_list(list, NULL, properties, n_properties, &all, &n_all,
                                       &owned)) != RN_OK)
        return st;
    st = dev->ops->set_property(dev->plugin, all, n_all);
    if (owned)
        free(all);
    return st;
}

rn_status rn_core_get_property(const rn_core *core, const char *device, const char *key, char *buf,
                               size_t size)
{
    if (core != NULL && key != NULL && buf != NULL && (device == NULL || device[0] == '\0')) {
        if (strcmp(key, "MAX_TENSOR_BYTES") == 0) {
            char value[32];
            pthread_mutex_lock((pthread_mutex_t *)&core->lock);
            snprintf(value, sizeof value, "%" PRIu64, core->max_tensor_bytes);
            pthread_mutex_unlock((pthread_mutex_t *)&core->lock);
            if (strlen(value) + 1 > size)
                return rn_set_error(RN_INVALID_ARG, "property MAX_TENSOR_BYTES: buffer too small");
            memcpy(buf, value, strlen(value) + 1);
            return RN_OK;
        }
        if (strcmp(key, "CACHE_DIR") != 0)
            return rn_set_error(RN_NOT_FOUND, "unknown core property '%s'", key);
        if (strlen(core->cache_dir) + 1 > size)
            return rn_set_error(RN_INVALID_ARG, "property CACHE_DIR: buffer too small");
        memcpy(buf, core->cache_dir, strlen(core->cache_dir) + 1);
        return RN_OK;
    }
    if (core == NULL || device == NULL || key == NULL || buf == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_property: core, device, key and buf must be set");
    const runtime_device *dev;
    const char *list;
    rn_status st = runtime_route_device(core, device, &dev, &list);
    const char *id = st == RN_OK && list == NULL ? runtime_device_id(core, device) : NULL;
    if (id != NULL && dev->ops->get_device_property != NULL) /* "GPU.1": that device's */
        return dev->ops->get_device_property(dev->plugin, id, key, buf, size);
    if (st == RN_OK)
        st = no_device_id(core, device);
    if (st != RN_OK)
        return st;
    if (list != NULL && strcmp(key, "MULTI_DEVICE_PRIORITIES") == 0) {
        if (strlen(list) + 1 > size)
            return rn_set_error(RN_INVALID_ARG, "property %s: buffer too small", key);
        memcpy(buf, list, strlen(list) + 1);
        return RN_OK;
    }
    if (dev->ops->get_property == NULL)
        return rn_set_error(RN_NOT_FOUND, "device %s: unknown property '%s'", device, key);
    return dev->ops->get_property(dev->plugin, key, buf, size);
}

rn_status rn_core_get_version(const rn_core *core, const char *device, const char **version)
{
    if (core == NULL || device == NULL || version == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_version: core, device and version must be set");
    const runtime_device *dev;
    const char *list;
    rn_status st = runtime_route_device(core, device, &dev, &list);
    if (st != RN_OK)
        return st;
    *version = dev->ops->version;
    return RN_OK;
}

/* Whether the file at `path` is XML (an OpenVINO IR .xml) rather than an
 * ONNX protobuf: the reader is picked by content, not by extension. A file
 * that cannot be opened goes to the ONNX reader, which names the error. */
static bool is_ir_file(const char *path)
{
    unsigned char head[64];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return ir_looks_like_xml(head, n);
}

rn_status rn_core_read_model(rn_core *core, const char *path, rn_model **out)
{
    if (core == NULL || path == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "rn_core_read_model: core, path and out must not be NULL");
    rn_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "model: out of memory");
    rn_status st = is_ir_file(path) ? ir_read_file(path, &m->g) : onnx_read_file(path, &m->g);
    if (st == RN_OK && (st = runtime_check_tensor_sizes(core, m->g, path)) != RN_OK)
        graph_free(m->g);
    if (st != RN_OK) {
        free(m);
        return st;
    }
    *out = m;
    return RN_OK;
}

rn_status rn_core_read_model_from_memory(rn_core *core, const void *data, size_t size,
                                         const char *base_dir, rn_model **out)
{
    (void)core;
    if (out == NULL)
        return rn_set_error(RN_INVALID_ARG, "rn_core_read_model_from_memory: out must not be NULL");
    rn_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "model: out of memory");
    rn_status st = onnx_read_memory(data, size, base_dir, &m->g);
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
    const runtime_device *dev;
    const char *list;
    rn_status st = runtime_route_device(core, device, &dev, &list);
    if (st != RN_OK)
        return st;
    if (dev->ops->query_model == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s cannot answer query_model", device);
    rn_property *all;
    size_t n_all;
    bool owned;
    if ((st = runtime_with_device_list(list, runtime_device_id(core, device), properties,
                                       n_properties, &all, &n_all, &owned)) != RN_OK)
        return st;
    rn_query_result *q = calloc(1, sizeof *q);
    if (q == NULL) {
        if (owned)
            free(all);
        return rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
    }
    st = dev->ops->query_model(dev->plugin, model->g, all, n_all, &q->names, &q->supported,
                               &q->count);
    if (owned)
        free(all);
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
