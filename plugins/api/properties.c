/* Shared plugin properties: validation, read-back, stream configuration. */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/api/properties.h"

static const char *const hint_names[] = {"", "LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"};
static const char *const mode_names[] = {"PERFORMANCE", "ACCURACY"};
static const char *const priority_names[] = {"LOW", "MEDIUM", "HIGH"};
static const char *const bind_names[] = {"NO", "YES", "NUMA"};
static const char *const log_names[] = {"LOG_NONE", "LOG_ERROR", "LOG_WARNING",
                                        "LOG_INFO", "LOG_DEBUG", "LOG_TRACE"};

/* The table's columns, as plugin_property_def's fields. */
#define TYPE_TEXT               PLUGIN_PROPERTY_TEXT, 0, 0, NULL, 0
#define TYPE_BOOL               PLUGIN_PROPERTY_BOOL, 0, 0, NULL, 0
#define TYPE_UINT               PLUGIN_PROPERTY_UINT, 0, 0, NULL, 0
#define TYPE_STRING             PLUGIN_PROPERTY_STRING, 0, 0, NULL, 0
#define TYPE_STREAMS            PLUGIN_PROPERTY_STREAMS, 0, 0, NULL, 0
#define TYPE_PRECISION          PLUGIN_PROPERTY_PRECISION, 0, 0, NULL, 0
#define TYPE_PINNING            PLUGIN_PROPERTY_PINNING, 0, 0, NULL, 0
#define TYPE_UINT_RANGE(lo, hi) PLUGIN_PROPERTY_UINT, lo, hi, NULL, 0
#define TYPE_ENUM(set)                                                                             \
    PLUGIN_PROPERTY_ENUM, 0, 0, set##_names, sizeof set##_names / sizeof *set##_names
#define WHERE_FIELD(m)                                                                             \
    PLUGIN_WHERE_FIELD, offsetof(plugin_properties, m), sizeof(((plugin_properties *)0)->m)
#define WHERE_INFO(m)  PLUGIN_WHERE_INFO, offsetof(plugin_device_info, m), 0
#define WHERE_COMPUTED PLUGIN_WHERE_COMPUTED, 0, 0
#define ROW(key, type, access, scope, where, dflt, devices)                                        \
    [PLUGIN_KEY_##key] = {                                                                         \
        #key,                                                                                      \
        ROW_TYPE_(TYPE_##type, PLUGIN_PROPERTY_##access, PLUGIN_SCOPE_##scope, WHERE_##where),     \
        dflt, PLUGIN_DEVICES_##devices},
/* Reorders the columns into the struct's field order. */
#define ROW_TYPE_(...) ROW_ORDER_(__VA_ARGS__)
#define ROW_ORDER_(type, lo, hi, names, n_names, access, scope, where, offset, size)               \
    type, access, scope, where, offset, size, lo, hi, names, n_names

const plugin_property_def plugin_property_table[PLUGIN_N_KEYS] = {PLUGIN_PROPERTY_MAP(ROW)};

#define RW_KEY_(key, type, access, scope, where, dflt, devices) RW_KEY_##access##_##devices(#key)
#define RW_KEY_RO_ALL(k)
#define RW_KEY_RO_HOST_CPU(k)
#define RW_KEY_RW_ALL(k)   k,
#define RW_KEY_LIVE_ALL(k) k,
#define RW_KEY_RW_HOST_CPU(k)
#define CPU_KEY_(key, type, access, scope, where, dflt, devices) CPU_KEY_##devices(#key)
#define CPU_KEY_ALL(k)
#define CPU_KEY_HOST_CPU(k) k,

const char *const plugin_rw_property_keys[] = {PLUGIN_PROPERTY_MAP(RW_KEY_) NULL};
const char *const plugin_cpu_property_keys[] = {PLUGIN_PROPERTY_MAP(CPU_KEY_) NULL};

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

/* One of `names` (an empty name is accepted, never listed). */
static rn_status parse_enum(const char *key, const char *value, const char *const *names, int n,
                            int *out)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(value, names[i]) == 0) {
            *out = i;
            return RN_OK;
        }
    char accepted[256] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof accepted; i++)
        if (names[i][0] != '\0')
            used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s",
                                     used ? ", " : "", names[i]);
    return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: %s)", key, value,
                        accepted);
}

static rn_status parse_precision(const char *key, const char *value, const plugin_properties *p,
                                 rn_element_type *out)
{
    uint32_t accepted = p != NULL && p->precisions ? p->precisions : PLUGIN_PRECISION(RN_F32);
    static const rn_element_type types[] = {RN_F32, RN_BF16, RN_F16};
    char names[64] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (!(accepted & PLUGIN_PRECISION(types[i])))
            continue;
        if (strcasecmp(value, rn_element_type_name(types[i])) == 0) {
            bool native = p == NULL || p->native_precisions == 0 ||
                          (p->native_precisions & PLUGIN_PRECISION(types[i]));
            *out = native ? types[i] : RN_F32;
            return RN_OK;
        }
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                 rn_element_type_name(types[i]));
    }
    return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted on this device: %s)",
                        key, value, names);
}

rn_status plugin_property_parse(const plugin_property_def *def, void *base, const char *value,
                                const plugin_properties *props)
{
    char *at = (char *)base + def->offset;
    const char *key = def->key;
    long v;
    int e;
    bool on;
    rn_status st;
    switch (def->type) {
    case PLUGIN_PROPERTY_BOOL:
        return parse_bool(key, value, (bool *)at);
    case PLUGIN_PROPERTY_UINT:
        if ((st = parse_uint(key, value, def->lo, def->hi, &v)) == RN_OK)
            *(uint32_t *)at = (uint32_t)v;
        return st;
    case PLUGIN_PROPERTY_ENUM:
        if ((st = parse_enum(key, value, def->names, def->n_names, &e)) == RN_OK)
            *(int *)at = e;
        return st;
    case PLUGIN_PROPERTY_STRING:
        if (strlen(value) >= def->size)
            return rn_set_error(RN_INVALID_ARG, "property %s: '%s' is too long (at most %zu bytes)",
                                key, value, def->size - 1);
        memcpy(at, value, strlen(value) + 1);
        return RN_OK;
    case PLUGIN_PROPERTY_STREAMS:
        if (strcasecmp(value, "AUTO") == 0) {
            *(int32_t *)at = PLUGIN_STREAMS_AUTO;
            return RN_OK;
        }
        if (parse_uint(key, value, 1, 1024, &v) != RN_OK)
            return rn_set_error(RN_INVALID_ARG,
                                "property %s: bad value '%s' (accepted: AUTO or a whole number "
                                "from 1 to 1024)",
                                key, value);
        *(int32_t *)at = (int32_t)v;
        return RN_OK;
    case PLUGIN_PROPERTY_PRECISION:
        return parse_precision(key, value, props, (rn_element_type *)at);
    case PLUGIN_PROPERTY_PINNING:
        if ((st = parse_bool(key, value, &on)) == RN_OK)
            *(int *)at = on ? PLUGIN_BIND_YES : PLUGIN_BIND_NO;
        return st;
    case PLUGIN_PROPERTY_TEXT:
        break;
    }
    return rn_set_error(RN_INVALID_ARG, "property %s is read-only", key);
}

rn_status plugin_property_format(const plugin_property_def *def, const void *base, char *buf,
                                 size_t size)
{
    const char *at = (const char *)base + def->offset;
    char tmp[64] = "";
    const char *value = tmp;
    switch (def->type) {
    case PLUGIN_PROPERTY_BOOL:
        value = *(const bool *)at ? "YES" : "NO";
        break;
    case PLUGIN_PROPERTY_UINT:
        snprintf(tmp, sizeof tmp, "%u", *(const uint32_t *)at);
        break;
    case PLUGIN_PROPERTY_ENUM:
        value = def->names[*(const int *)at];
        break;
    case PLUGIN_PROPERTY_STRING:
        value = at;
        break;
    case PLUGIN_PROPERTY_STREAMS: {
        int32_t n = *(const int32_t *)at;
        if (n == PLUGIN_STREAMS_AUTO)
            value = "AUTO";
        else
            snprintf(tmp, sizeof tmp, "%d", n ? n : 1);
        break;
    }
    case PLUGIN_PROPERTY_PRECISION:
        value = rn_element_type_name(*(const rn_element_type *)at);
        break;
    case PLUGIN_PROPERTY_PINNING:
        value = *(const int *)at != PLUGIN_BIND_NO ? "YES" : "NO";
        break;
    case PLUGIN_PROPERTY_TEXT:
        value = *(const char *const *)at;
        break;
    }
    return plugin_property_string(def->key, value, buf, size);
}

const plugin_property_def *plugin_property_find(const plugin_property_def *defs, size_t n,
                                                const char *key)
{
    for (size_t i = 0; defs != NULL && i < n; i++)
        if (strcmp(defs[i].key, key) == 0)
            return &defs[i];
    return NULL;
}

void plugin_property_defaults(const plugin_property_def *defs, size_t n, void *base, size_t size)
{
    if (size > 0) /* a device without own values has no struct for them */
        memset(base, 0, size);
    for (size_t i = 0; i < n; i++)
        if (defs[i].where == PLUGIN_WHERE_FIELD && defs[i].default_value != NULL) {
            rn_status st = plugin_property_parse(&defs[i], base, defs[i].default_value, NULL);
            assert(st == RN_OK); /* the tables' defaults parse */
            (void)st;
        }
}

void plugin_properties_default(plugin_properties *p)
{
    plugin_property_defaults(plugin_property_table, PLUGIN_N_KEYS, p, sizeof *p);
}

/* The row of a read-write key `p` has; NULL otherwise. */
static const plugin_property_def *rw_row(const plugin_properties *p, const char *key)
{
    const plugin_property_def *d = plugin_property_find(plugin_property_table, PLUGIN_N_KEYS, key);
    if (d == NULL || d->access == PLUGIN_PROPERTY_RO ||
        (d->devices == PLUGIN_DEVICES_HOST_CPU && !p->cpu_keys))
        return NULL;
    return d;
}

/* After `d` was set: an explicit INFERENCE_PRECISION_HINT is kept from then
 * on; EXECUTION_MODE_HINT ACCURACY makes the precision the model's own, f32,
 * where the device's default is lower (CPU's bf16, GPU's f16), and
 * PERFORMANCE gives that default back, as OpenVINO's plugins do. */
static void precision_follows_mode(plugin_properties *p, const plugin_property_def *d)
{
    if (d->offset == offsetof(plugin_properties, inference_precision)) {
        p->precision_set = true;
        p->accuracy_f32 = false;
    } else if (d->offset == offsetof(plugin_properties, execution_mode) && !p->precision_set) {
        if (p->execution_mode == 1 && !p->accuracy_f32 && p->inference_precision != RN_F32) {
            p->precision_performance = p->inference_precision;
            p->inference_precision = RN_F32;
            p->accuracy_f32 = true;
        } else if (p->execution_mode == 0 && p->accuracy_f32) {
            p->inference_precision = p->precision_performance;
            p->accuracy_f32 = false;
        }
    }
}

rn_status plugin_properties_set(plugin_properties *p, const char *key, const char *value)
{
    if (key == NULL || value == NULL)
        return rn_set_error(RN_INVALID_ARG, "property: key and value must be set");
    const plugin_property_def *d = rw_row(p, key);
    if (d != NULL) {
        rn_status st = plugin_property_parse(d, p, value, p);
        if (st == RN_OK && d->where == PLUGIN_WHERE_FIELD)
            precision_follows_mode(p, d);
        return st;
    }
    char accepted[512] = "";
    size_t used = 0;
    for (int i = 0; plugin_rw_property_keys[i] != NULL && used < sizeof accepted; i++)
        used += (size_t)snprintf(accepted + used, sizeof accepted - used, "%s%s", i ? ", " : "",
                                 plugin_rw_property_keys[i]);
    return rn_set_error(RN_INVALID_ARG, "unknown property '%s' (supported: %s)", key, accepted);
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

rn_status plugin_properties_apply_own(const plugin_property_def *rows, size_t n_rows,
                                      size_t own_size, plugin_properties *shared, void *own,
                                      const rn_property *props, size_t n)
{
    plugin_properties tmp = *shared;
    unsigned char *tmp_own = own_size > 0 ? malloc(own_size) : NULL;
    if (own_size > 0 && tmp_own == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "properties: out of memory");
    if (own_size > 0)
        memcpy(tmp_own, own, own_size);
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (props[i].key == NULL || props[i].value == NULL) {
            st = rn_set_error(RN_INVALID_ARG, "property %zu has no key or value", i);
            break;
        }
        const plugin_property_def *d = plugin_property_find(rows, n_rows, props[i].key);
        st = d != NULL ? plugin_property_parse(d, tmp_own, props[i].value, &tmp)
                       : plugin_properties_set(&tmp, props[i].key, props[i].value);
    }
    if (st == RN_OK) {
        *shared = tmp;
        if (own_size > 0)
            memcpy(own, tmp_own, own_size);
    }
    free(tmp_own);
    return st;
}

rn_status plugin_properties_get_own(const plugin_property_def *rows, size_t n_rows,
                                    const plugin_properties *shared, const void *own,
                                    const char *key, char *buf, size_t size)
{
    const plugin_property_def *d = plugin_property_find(rows, n_rows, key);
    if (d != NULL)
        return plugin_property_format(d, own, buf, size);
    return plugin_properties_get(shared, key, buf, size);
}

rn_status plugin_properties_get(const plugin_properties *p, const char *key, char *buf, size_t size)
{
    const plugin_property_def *d = rw_row(p, key);
    if (d == NULL)
        return rn_set_error(RN_NOT_FOUND, "unknown property '%s'", key);
    return plugin_property_format(d, p, buf, size);
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
    /* One request per stream, as OpenVINO's CPU plugin: a second one per
     * stream (this rule until stop 42) raised no FPS on the CPU device
     * (THROUGHPUT, 10 models, both precisions, level within ±4 %) and
     * doubled every request's latency, the time it waits behind the other
     * (BERT-base bf16: 94.7 ms against OpenVINO's 54.6 at the same FPS).
     * Devices whose requests overlap an upload, a kernel and a download
     * (GPU, NVIDIA) ask for more themselves. */
    *optimal_requests = streams;
}

rn_status plugin_properties_set_compiled(plugin_properties *p, const rn_property *props, size_t n)
{
    plugin_properties tmp = *p;
    for (size_t i = 0; i < n; i++) {
        const char *key = props[i].key;
        const plugin_property_def *d = key != NULL ? rw_row(&tmp, key) : NULL;
        rn_status st;
        if (d != NULL && d->access == PLUGIN_PROPERTY_LIVE)
            st = plugin_property_parse(d, &tmp, props[i].value, &tmp);
        else if (d != NULL)
            st = rn_set_error(RN_INVALID_ARG,
                              "property %s is fixed when the model is compiled (compile again to "
                              "change it; ENABLE_PROFILING and LOG_LEVEL can change)",
                              key);
        else
            st = rn_set_error(RN_INVALID_ARG,
                              "compiled model: unknown property '%s' (settable: "
                              "ENABLE_PROFILING, LOG_LEVEL)",
                              key != NULL ? key : "(null)");
        if (st != RN_OK)
            return st;
    }
    *p = tmp;
    return RN_OK;
}
