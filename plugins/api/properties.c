/* Shared plugin properties: validation, read-back, stream configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/api/properties.h"

const char *const plugin_rw_property_keys[] = {
    "DEVICE_ID",
    "ENABLE_PROFILING",
    "ENABLE_TRACE",
    "PERFORMANCE_HINT",
    "PERFORMANCE_HINT_NUM_REQUESTS",
    "NUM_STREAMS",
    "INFERENCE_NUM_THREADS",
    "INFERENCE_PRECISION_HINT",
    "EXECUTION_MODE_HINT",
    "MODEL_PRIORITY",
    "LOG_LEVEL",
    "DISABLE_TRANSFORMATIONS",
    "EXCLUSIVE_ASYNC_REQUESTS",
    NULL,
};

const char *const plugin_cpu_property_keys[] = {
    "CPU_DENORMALS_OPTIMIZATION",
    "CPU_BIND_THREAD",
    "ENABLE_CPU_PINNING",
    NULL,
};

static const char *const hint_names[] = {"", "LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"};
static const char *const mode_names[] = {"PERFORMANCE", "ACCURACY"};
static const char *const priority_names[] = {"LOW", "MEDIUM", "HIGH"};
static const char *const bind_names[] = {"NO", "YES", "NUMA"};
static const char *const log_names[] = {"LOG_NONE", "LOG_ERROR", "LOG_WARNING",
                                        "LOG_INFO", "LOG_DEBUG", "LOG_TRACE"};

void plugin_properties_default(plugin_properties *p)
{
    memset(p, 0, sizeof *p);
    p->inference_precision = RN_F32;
    p->model_priority = 1;
}

rn_status plugin_property_string(const char *key, const char *value, char *buf, size_t size)
{
    size_t n = strlen(value);
    if (n + 1 > size)
        return rn_set_error(RN_INVALID_ARG, "property %s: buffer of %zu bytes is too small", key,
                            size);
    memcpy(buf, value, n + 1);
    return RN_OK;
}

static rn_status parse_bool(const char *key, const char *value, bool *out)
{
    if (strcasecmp(value, "YES") == 0 || strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0)
        *out = true;
    else if (strcasecmp(value, "NO") == 0 || strcasecmp(value, "false") == 0 ||
             strcmp(value, "0") == 0)
        *out = false;
    else
        return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: YES, NO)", key,
                            value);
    return RN_OK;
}

/* Parses a whole decimal number in [lo, hi]. */
static rn_status parse_uint(const char *key, const char *value, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || v < lo || v > hi)
        return rn_set_error(RN_INVALID_ARG,
                            "property %s: bad value '%s' (accepted: a whole number from %ld to "
                            "%ld)",
                            key, value, lo, hi);
    *out = v;
    return RN_OK;
}

static rn_status parse_enum(const char *key, const char *value, const char *const *names, int n,
                            int first, int *out)
{
    for (int i = first; i < n; i++)
        if (strcasecmp(value, names[i]) == 0) {
            *out = i;
            return RN_OK;
        }
    char accepted[256] = "";
    size_t used = 0;
    for (int i = first; i < n && used < sizeof accepted; i++)
        used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s",
                                 i > first ? ", " : "", names[i]);
    return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: %s)", key, value,
                        accepted);
}

rn_status plugin_properties_set(plugin_properties *p, const char *key, const char *value)
{
    if (key == NULL || value == NULL)
        return rn_set_error(RN_INVALID_ARG, "property: key and value must be set");
    long v;
    int e;
    rn_status st;
    if (strcmp(key, "DEVICE_ID") == 0) {
        if (strlen(value) >= sizeof p->device_id)
            return rn_set_error(RN_INVALID_ARG, "property DEVICE_ID: '%s' is too long", value);
        snprintf(p->device_id, sizeof p->device_id, "%s", value);
    } else if (strcmp(key, "ENABLE_PROFILING") == 0) {
        return parse_bool(key, value, &p->enable_profiling);
    } else if (strcmp(key, "ENABLE_TRACE") == 0) {
        return parse_bool(key, value, &p->enable_trace);
    } else if (strcmp(key, "PERFORMANCE_HINT") == 0) {
        if (value[0] == '\0') {
            p->performance_hint = PLUGIN_HINT_NONE;
            return RN_OK;
        }
        if ((st = parse_enum(key, value, hint_names, 4, 1, &e)) != RN_OK)
            return st;
        p->performance_hint = (plugin_hint)e;
    } else if (strcmp(key, "PERFORMANCE_HINT_NUM_REQUESTS") == 0) {
        if ((st = parse_uint(key, value, 0, 1 << 20, &v)) != RN_OK)
            return st;
        p->hint_num_requests = (uint32_t)v;
    } else if (strcmp(key, "NUM_STREAMS") == 0) {
        if (strcasecmp(value, "AUTO") == 0) {
            p->num_streams = PLUGIN_STREAMS_AUTO;
            return RN_OK;
        }
        if (parse_uint(key, value, 1, 1024, &v) != RN_OK)
            return rn_set_error(RN_INVALID_ARG,
                                "property NUM_STREAMS: bad value '%s' (accepted: AUTO or a whole "
                                "number from 1 to 1024)",
                                value);
        p->num_streams = (int32_t)v;
    } else if (strcmp(key, "INFERENCE_NUM_THREADS") == 0) {
        if ((st = parse_uint(key, value, 0, 4096, &v)) != RN_OK)
            return st;
        p->inference_num_threads = (uint32_t)v;
    } else if (strcmp(key, "INFERENCE_PRECISION_HINT") == 0) {
        uint32_t accepted = p->precisions ? p->precisions : PLUGIN_PRECISION(RN_F32);
        static const rn_element_type types[] = {RN_F32, RN_BF16, RN_F16};
        char names[64] = "";
        size_t used = 0;
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            if (!(accepted & PLUGIN_PRECISION(types[i])))
                continue;
            if (strcasecmp(value, rn_element_type_name(types[i])) == 0) {
                bool native = p->native_precisions == 0 ||
                              (p->native_precisions & PLUGIN_PRECISION(types[i]));
                p->inference_precision = native ? types[i] : RN_F32;
                return RN_OK;
            }
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                     rn_element_type_name(types[i]));
        }
        return rn_set_error(RN_INVALID_ARG,
                            "property INFERENCE_PRECISION_HINT: bad value '%s' (accepted on "
                            "this device: %s)",
                            value, names);
    } else if (p->cpu_keys && strcmp(key, "CPU_DENORMALS_OPTIMIZATION") == 0) {
        return parse_bool(key, value, &p->denormals_optimization);
    } else if (p->cpu_keys && strcmp(key, "CPU_BIND_THREAD") == 0) {
        if ((st = parse_enum(key, value, bind_names, 3, 0, &e)) != RN_OK)
            return st;
        p->bind_thread = (plugin_bind_thread)e;
    } else if (p->cpu_keys && strcmp(key, "ENABLE_CPU_PINNING") == 0) {
        bool on;
        if ((st = parse_bool(key, value, &on)) != RN_OK)
            return st;
        p->bind_thread = on ? PLUGIN_BIND_YES : PLUGIN_BIND_NO;
    } else if (strcmp(key, "EXECUTION_MODE_HINT") == 0) {
        if ((st = parse_enum(key, value, mode_names, 2, 0, &e)) != RN_OK)
            return st;
        p->execution_mode = e;
    } else if (strcmp(key, "MODEL_PRIORITY") == 0) {
        if ((st = parse_enum(key, value, priority_names, 3, 0, &e)) != RN_OK)
            return st;
        p->model_priority = e;
    } else if (strcmp(key, "LOG_LEVEL") == 0) {
        if ((st = parse_enum(key, value, log_names, 6, 0, &e)) != RN_OK)
            return st;
        p->log_level = e;
    } else if (strcmp(key, "DISABLE_TRANSFORMATIONS") == 0) {
        return parse_bool(key, value, &p->disable_transformations);
    } else if (strcmp(key, "EXCLUSIVE_ASYNC_REQUESTS") == 0) {
        return parse_bool(key, value, &p->exclusive_async_requests);
    } else {
        char accepted[512] = "";
        size_t used = 0;
        for (int i = 0; plugin_rw_property_keys[i] != NULL && used < sizeof accepted; i++)
            used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s", i ? ", " : "",
                                     plugin_rw_property_keys[i]);
        return rn_set_error(RN_INVALID_ARG, "unknown property '%s' (supported: %s)", key, accepted);
    }
    return RN_OK;
}

rn_status plugin_properties_apply(plugin_properties *p, const rn_property *props, size_t n)
{
    plugin_properties tmp = *p;
    for (size_t i = 0; i < n; i++) {
        rn_status st = plugin_properties_set(&tmp, props[i].key, props[i].value);
        if (st != RN_OK)
            return st;
    }
    *p = tmp;
    return RN_OK;
}

rn_status plugin_properties_get(const plugin_properties *p, const char *key, char *buf, size_t size)
{
    char tmp[64];
    const char *value = NULL;
    if (strcmp(key, "DEVICE_ID") == 0)
        value = p->device_id;
    else if (strcmp(key, "ENABLE_PROFILING") == 0)
        value = p->enable_profiling ? "YES" : "NO";
    else if (strcmp(key, "ENABLE_TRACE") == 0)
        value = p->enable_trace ? "YES" : "NO";
    else if (strcmp(key, "PERFORMANCE_HINT") == 0)
        value = hint_names[p->performance_hint];
    else if (strcmp(key, "PERFORMANCE_HINT_NUM_REQUESTS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", p->hint_num_requests);
        value = tmp;
    } else if (strcmp(key, "NUM_STREAMS") == 0) {
        if (p->num_streams == PLUGIN_STREAMS_AUTO)
            value = "AUTO";
        else {
            snprintf(tmp, sizeof tmp, "%d", p->num_streams ? p->num_streams : 1);
            value = tmp;
        }
    } else if (strcmp(key, "INFERENCE_NUM_THREADS") == 0) {
        snprintf(tmp, sizeof tmp, "%u", p->inference_num_threads);
        value = tmp;
    } else if (strcmp(key, "INFERENCE_PRECISION_HINT") == 0)
        value = rn_element_type_name(p->inference_precision);
    else if (strcmp(key, "EXECUTION_MODE_HINT") == 0)
        value = mode_names[p->execution_mode];
    else if (strcmp(key, "MODEL_PRIORITY") == 0)
        value = priority_names[p->model_priority];
    else if (strcmp(key, "LOG_LEVEL") == 0)
        value = log_names[p->log_level];
    else if (strcmp(key, "DISABLE_TRANSFORMATIONS") == 0)
        value = p->disable_transformations ? "YES" : "NO";
    else if (strcmp(key, "EXCLUSIVE_ASYNC_REQUESTS") == 0)
        value = p->exclusive_async_requests ? "YES" : "NO";
    else if (p->cpu_keys && strcmp(key, "CPU_DENORMALS_OPTIMIZATION") == 0)
        value = p->denormals_optimization ? "YES" : "NO";
    else if (p->cpu_keys && strcmp(key, "CPU_BIND_THREAD") == 0)
        value = bind_names[p->bind_thread];
    else if (p->cpu_keys && strcmp(key, "ENABLE_CPU_PINNING") == 0)
        value = p->bind_thread != PLUGIN_BIND_NO ? "YES" : "NO";
    if (value == NULL)
        return rn_set_error(RN_NOT_FOUND, "unknown property '%s'", key);
    return plugin_property_string(key, value, buf, size);
}

void plugin_properties_streams(const plugin_properties *p, uint32_t cpus, uint32_t *n_streams,
                               uint32_t *threads_per_stream, uint32_t *optimal_requests)
{
    if (p->exclusive_async_requests) {
        /* OpenVINO's meaning: the requests of every compiled model that
         * asks for it run one at a time, on one shared single-threaded
         * executor (pools are shared by configuration, executors/). */
        *n_streams = 1;
        *threads_per_stream = 1;
        *optimal_requests = 1;
        return;
    }
    uint32_t threads = p->inference_num_threads ? p->inference_num_threads : cpus;
    if (threads == 0)
        threads = 1;
    uint32_t streams;
    if (p->num_streams > 0) {
        streams = (uint32_t)p->num_streams;
    } else if (p->num_streams == PLUGIN_STREAMS_AUTO ||
               p->performance_hint == PLUGIN_HINT_THROUGHPUT ||
               p->performance_hint == PLUGIN_HINT_CUMULATIVE_THROUGHPUT) {
        /* Throughput: one stream per core (at least one thread each), no more
         * streams than the requests the application says it will keep. */
        streams = threads;
        if (p->hint_num_requests > 0 && p->hint_num_requests < streams)
            streams = p->hint_num_requests;
    } else {
        streams = 1; /* LATENCY or no hint: one stream on every core */
    }
    if (streams == 0)
        streams = 1;
    uint32_t per = threads / streams;
    *n_streams = streams;
    *threads_per_stream = per ? per : 1;
    /* Two requests per stream keep it busy while the other is being refilled. */
    *optimal_requests =
        streams == 1 && p->performance_hint == PLUGIN_HINT_LATENCY ? 1 : 2 * streams;
}

rn_status plugin_properties_set_compiled(plugin_properties *p, const rn_property *props, size_t n)
{
    plugin_properties tmp = *p;
    for (size_t i = 0; i < n; i++) {
        const char *key = props[i].key;
        rn_status st;
        if (strcmp(key, "ENABLE_PROFILING") == 0 || strcmp(key, "LOG_LEVEL") == 0) {
            st = plugin_properties_set(&tmp, key, props[i].value);
        } else {
            bool rw = false;
            for (const char *const *k = plugin_rw_property_keys; *k != NULL; k++)
                rw |= strcmp(*k, key) == 0;
            st = rw ? rn_set_error(RN_INVALID_ARG,
                                   "property %s is fixed when the model is compiled (compile "
                                   "again to change it; ENABLE_PROFILING and LOG_LEVEL can change)",
                                   key)
                    : rn_set_error(RN_INVALID_ARG,
                                   "compiled model: unknown property '%s' (settable: "
                                   "ENABLE_PROFILING, LOG_LEVEL)",
                                   key);
        }
        if (st != RN_OK)
            return st;
    }
    *p = tmp;
    return RN_OK;
}
