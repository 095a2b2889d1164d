/* The properties every plugin shares, with OpenVINO's names: parsing with
 * validation (an unknown key or a bad value is RN_INVALID_ARG naming the key
 * and the accepted values), reading back as strings, and the stream
 * configuration that the performance hints choose. */
#ifndef RUNNEL_PLUGINS_API_PROPERTIES_H
#define RUNNEL_PLUGINS_API_PROPERTIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kit.h"
#include "runnel/core.h"
#include "runnel/tensor.h"

typedef enum plugin_hint {
    PLUGIN_HINT_NONE = 0,
    PLUGIN_HINT_LATENCY,
    PLUGIN_HINT_THROUGHPUT,
    PLUGIN_HINT_CUMULATIVE_THROUGHPUT,
} plugin_hint;

#define PLUGIN_STREAMS_AUTO (-1)

typedef enum plugin_bind_thread {
    PLUGIN_BIND_NO = 0,
    PLUGIN_BIND_YES, /* each thread of a stream on one core of the stream's */
    PLUGIN_BIND_NUMA /* a stream's threads on the NUMA node of its cores */
} plugin_bind_thread;

typedef struct plugin_properties {
    char device_id[32];
    bool enable_profiling;
    bool enable_trace;    /* ENABLE_TRACE: record every task for rn_compiled_model_write_trace */
    int performance_hint; /* plugin_hint */
    uint32_t hint_num_requests;     /* 0: unset */
    int32_t num_streams;            /* 0: unset; PLUGIN_STREAMS_AUTO */
    uint32_t inference_num_threads; /* 0: all CPUs */
    rn_element_type inference_precision;
    int execution_mode; /* 0 PERFORMANCE, 1 ACCURACY */
    /* OpenVINO's rule (plugin_properties_set): EXECUTION_MODE_HINT ACCURACY
     * runs at f32 unless INFERENCE_PRECISION_HINT was set (precision_set);
     * PERFORMANCE gives the device's default back (precision_performance,
     * kept while accuracy_f32). */
    bool precision_set, accuracy_f32;
    rn_element_type precision_performance;
    int model_priority; /* 0 LOW, 1 MEDIUM, 2 HIGH */
    int log_level;      /* 0 NO .. 5 TRACE */
    bool disable_transformations;
    bool exclusive_async_requests;
    /* What the device accepts as INFERENCE_PRECISION_HINT: bit
     * (1 << rn_element_type) per type; 0 means f32 only. */
    uint32_t precisions;
    /* Of those, what the hardware runs natively (0: all): a hint outside it
     * is accepted and resolves to f32, which the device then reports, as
     * OpenVINO's CPU plugin does with bf16 on a CPU without it. */
    uint32_t native_precisions;
    /* Host CPU devices (cpu_keys set): the keys of PLUGIN_DEVICES_HOST_CPU
     * in the table. CPU_DENORMALS_OPTIMIZATION (flush denormals to zero in
     * the kernels' threads). */
    bool cpu_keys;
    bool denormals_optimization;
    /* CPU_BIND_THREAD (ENABLE_CPU_PINNING: YES / NO): pin each stream's
     * worker to its cores (plugin_bind_thread). */
    int bind_thread;
} plugin_properties;

#define PLUGIN_PRECISION(type) (1u << (unsigned)(type))

/* ---- the property table ----
 *
 * Every property a plan-based device shares, one row each, in the order
 * SUPPORTED_PROPERTIES lists them:
 *
 *   X(KEY, type, access, where, default, devices)
 *
 * type    how a value is parsed and written back (plugin_property_type);
 * access  RO, RW (fixed once a model is compiled) or LIVE (RW, and settable
 *         on a compiled model too);
 * where   what holds the value: FIELD(member) of plugin_properties, INFO(member)
 *         of the device's plugin_device_info (NULL there: the default), or
 *         COMPUTED (the generic device works it out: plugins/api/device.c);
 * default the value a device starts with (a string the type parses; NULL:
 *         zero);
 * devices ALL, or HOST_CPU (devices whose properties set cpu_keys: CPU).
 *
 * Rows of scope DEVICE are a device's, COMPILED a compiled model's, BOTH
 * both. get, set, SUPPORTED_PROPERTIES and the defaults are generated from
 * it; a device's own keys are a plugin_property_def array of the same shape
 * (PLUGIN_OWN_* below). */
#define PLUGIN_PROPERTY_MAP(X)                                                                     \
    X(SUPPORTED_PROPERTIES, TEXT, RO, BOTH, COMPUTED, NULL, ALL)                                   \
    X(AVAILABLE_DEVICES, TEXT, RO, DEVICE, INFO(available_devices), "0", ALL)                      \
    X(FULL_DEVICE_NAME, TEXT, RO, DEVICE, INFO(full_name), NULL, ALL)                              \
    X(DEVICE_ARCHITECTURE, TEXT, RO, DEVICE, INFO(architecture), NULL, ALL)                        \
    X(DEVICE_TYPE, TEXT, RO, DEVICE, INFO(device_type), "integrated", ALL)                         \
    X(OPTIMIZATION_CAPABILITIES, TEXT, RO, DEVICE, INFO(capabilities), "FP32", ALL)                \
    X(RANGE_FOR_ASYNC_INFER_REQUESTS, TEXT, RO, DEVICE, INFO(range_for_async_requests), "1 64 1",  \
      ALL)                                                                                         \
    X(RANGE_FOR_STREAMS, TEXT, RO, DEVICE, INFO(range_for_streams), "1 1024", ALL)                 \
    X(EXECUTION_DEVICES, TEXT, RO, BOTH, INFO(name), NULL, ALL)                                    \
    X(CACHING_PROPERTIES, TEXT, RO, DEVICE, INFO(caching_properties),                              \
      "DEVICE_ARCHITECTURE INFERENCE_PRECISION_HINT EXECUTION_MODE_HINT", ALL)                     \
    X(NETWORK_NAME, TEXT, RO, COMPILED, COMPUTED, NULL, ALL)                                       \
    X(OPTIMAL_NUMBER_OF_INFER_REQUESTS, UINT, RO, COMPILED, COMPUTED, NULL, ALL)                   \
    X(DEVICE_ID, STRING, RW, BOTH, FIELD(device_id), "", ALL)                                      \
    X(ENABLE_PROFILING, BOOL, LIVE, BOTH, FIELD(enable_profiling), "NO", ALL)                      \
    X(ENABLE_TRACE, BOOL, RW, BOTH, FIELD(enable_trace), "NO", ALL)                                \
    X(PERFORMANCE_HINT, ENUM(hint), RW, BOTH, FIELD(performance_hint), "", ALL)                    \
    X(PERFORMANCE_HINT_NUM_REQUESTS, UINT_RANGE(0, 1 << 20), RW, BOTH, FIELD(hint_num_requests),   \
      "0", ALL)                                                                                    \
    X(NUM_STREAMS, STREAMS, RW, BOTH, FIELD(num_streams), NULL, ALL)                               \
    X(INFERENCE_NUM_THREADS, UINT_RANGE(0, 4096), RW, BOTH, FIELD(inference_num_threads), "0",     \
      ALL)                                                                                         \
    X(INFERENCE_PRECISION_HINT, PRECISION, RW, BOTH, FIELD(inference_precision), "f32", ALL)       \
    X(EXECUTION_MODE_HINT, ENUM(mode), RW, BOTH, FIELD(execution_mode), "PERFORMANCE", ALL)        \
    X(MODEL_PRIORITY, ENUM(priority), RW, BOTH, FIELD(model_priority), "MEDIUM", ALL)              \
    X(LOG_LEVEL, ENUM(log), LIVE, BOTH, FIELD(log_level), "LOG_NONE", ALL)                         \
    X(DISABLE_TRANSFORMATIONS, BOOL, RW, BOTH, FIELD(disable_transformations), "NO", ALL)          \
    X(EXCLUSIVE_ASYNC_REQUESTS, BOOL, RW, BOTH, FIELD(exclusive_async_requests), "NO", ALL)        \
    X(CPU_DENORMALS_OPTIMIZATION, BOOL, RW, BOTH, FIELD(denormals_optimization), "NO", HOST_CPU)   \
    X(CPU_BIND_THREAD, ENUM(bind), RW, BOTH, FIELD(bind_thread), "NO", HOST_CPU)                   \
    X(ENABLE_CPU_PINNING, PINNING, RW, BOTH, FIELD(bind_thread), NULL, HOST_CPU)

/* How a value is parsed and written back. */
typedef enum plugin_property_type {
    PLUGIN_PROPERTY_TEXT,      /* read-only text */
    PLUGIN_PROPERTY_BOOL,      /* bool: YES / NO (also true / false, 1 / 0) */
    PLUGIN_PROPERTY_UINT,      /* uint32_t in [lo, hi] */
    PLUGIN_PROPERTY_ENUM,      /* int: the index of one of `names` */
    PLUGIN_PROPERTY_STRING,    /* char[size] */
    PLUGIN_PROPERTY_STREAMS,   /* int32_t: AUTO or 1 to 1024 (0, unset, reads 1) */
    PLUGIN_PROPERTY_PRECISION, /* rn_element_type among the device's precisions */
    PLUGIN_PROPERTY_PINNING,   /* ENABLE_CPU_PINNING: YES / NO over CPU_BIND_THREAD's int */
} plugin_property_type;

typedef enum plugin_property_access {
    PLUGIN_PROPERTY_RO,
    PLUGIN_PROPERTY_RW,   /* fixed once a model is compiled */
    PLUGIN_PROPERTY_LIVE, /* RW, and settable on a compiled model */
} plugin_property_access;

typedef enum plugin_property_scope {
    PLUGIN_SCOPE_DEVICE = 1,
    PLUGIN_SCOPE_COMPILED = 2,
    PLUGIN_SCOPE_BOTH = 3,
} plugin_property_scope;

/* Which devices have a row: every plan-based device, or the host CPU
 * devices (plugin_properties.cpu_keys). */
typedef enum plugin_property_devices {
    PLUGIN_DEVICES_ALL,
    PLUGIN_DEVICES_HOST_CPU,
} plugin_property_devices;

/* Where a row's value lives. */
typedef enum plugin_property_where {
    PLUGIN_WHERE_FIELD,    /* at `offset` in the values (plugin_properties, or a device's own) */
    PLUGIN_WHERE_INFO,     /* at `offset` in plugin_device_info (a const char *) */
    PLUGIN_WHERE_COMPUTED, /* worked out by the generic device */
} plugin_property_where;

/* One row of a property table. */
typedef struct plugin_property_def {
    const char *key;
    plugin_property_type type;
    plugin_property_access access;
    plugin_property_scope scope;
    plugin_property_where where;
    size_t offset;            /* of the value (FIELD) or the text (INFO) */
    size_t size;              /* STRING: the array's size */
    long lo, hi;              /* UINT */
    const char *const *names; /* ENUM: the values, by index ("" accepted, never listed) */
    int n_names;
    const char *default_value; /* parsed into a device's values at start (NULL: zero) */
    plugin_property_devices devices;
} plugin_property_def;

/* What a device says about itself, for the table's INFO rows: a NULL text
 * is the row's default. */
typedef struct plugin_device_info {
    const char *name;      /* "REF": the device's name, EXECUTION_DEVICES, in messages and blobs */
    const char *full_name; /* FULL_DEVICE_NAME */
    const char *architecture;             /* DEVICE_ARCHITECTURE, and the blob's architecture */
    const char *capabilities;             /* OPTIMIZATION_CAPABILITIES */
    const char *device_type;              /* DEVICE_TYPE */
    const char *available_devices;        /* AVAILABLE_DEVICES */
    const char *range_for_async_requests; /* RANGE_FOR_ASYNC_INFER_REQUESTS */
    const char *range_for_streams;        /* RANGE_FOR_STREAMS */
    const char *caching_properties;       /* CACHING_PROPERTIES */
} plugin_device_info;

/* The ids of the table's rows (PLUGIN_KEY_NUM_STREAMS, ...), and the table. */
#define PLUGIN_KEY_ENUM_(key, ...) PLUGIN_KEY_##key,
typedef enum plugin_key { PLUGIN_PROPERTY_MAP(PLUGIN_KEY_ENUM_) PLUGIN_N_KEYS } plugin_key;
#undef PLUGIN_KEY_ENUM_
extern const plugin_property_def plugin_property_table[PLUGIN_N_KEYS];

/* A device's own keys, for its table (a plugin_property_def array): `type`
 * is the struct of its own values, `member` the field. */
#define PLUGIN_OWN_BOOL(key, type, member, access, dflt)                                           \
    {                                                                                              \
        key, PLUGIN_PROPERTY_BOOL, access, PLUGIN_SCOPE_BOTH, PLUGIN_WHERE_FIELD,                  \
            offsetof(type, member), 0, 0, 0, NULL, 0, dflt, PLUGIN_DEVICES_ALL                     \
    }
#define PLUGIN_OWN_UINT(key, type, member, lo, hi, dflt)                                           \
    {                                                                                              \
        key, PLUGIN_PROPERTY_UINT, PLUGIN_PROPERTY_RW, PLUGIN_SCOPE_BOTH, PLUGIN_WHERE_FIELD,      \
            offsetof(type, member), 0, lo, hi, NULL, 0, dflt, PLUGIN_DEVICES_ALL                   \
    }
#define PLUGIN_OWN_STRING(key, type, member, dflt)                                                 \
    {                                                                                              \
        key, PLUGIN_PROPERTY_STRING, PLUGIN_PROPERTY_RW, PLUGIN_SCOPE_BOTH, PLUGIN_WHERE_FIELD,    \
            offsetof(type, member), sizeof(((type *)0)->member), 0, 0, NULL, 0, dflt,              \
            PLUGIN_DEVICES_ALL                                                                     \
    }

/* The row of `key` among n rows (NULL: none). */
const plugin_property_def *plugin_property_find(const plugin_property_def *defs, size_t n,
                                                const char *key);
/* Parses `value` into the values at `base` as row `def` says (an error
 * naming the key and the accepted values); `props` is the device's shared
 * values (the precisions a PRECISION row accepts). */
rn_status plugin_property_parse(const plugin_property_def *def, void *base, const char *value,
                                const plugin_properties *props);
/* Writes the value at `base` of row `def` into buf. */
rn_status plugin_property_format(const plugin_property_def *def, const void *base, char *buf,
                                 size_t size);
/* Parses every row's default into `base` (zeroed first, `size` bytes). */
RN_KIT void plugin_property_defaults(const plugin_property_def *defs, size_t n, void *base,
                                     size_t size);

/* Applies properties to the shared values and a device's own ones (the n_rows
 * rows `rows` over `own_size` bytes at `own`): the first bad one is the
 * error, naming the key, and neither is changed. */
RN_KIT rn_status plugin_properties_apply_own(const plugin_property_def *rows, size_t n_rows,
                                             size_t own_size, plugin_properties *shared, void *own,
                                             const rn_property *props, size_t n);
/* Reads a shared read-write key or one of the own rows; RN_NOT_FOUND for
 * others. */
RN_KIT rn_status plugin_properties_get_own(const plugin_property_def *rows, size_t n_rows,
                                           const plugin_properties *shared, const void *own,
                                           const char *key, char *buf, size_t size);

/* The defaults: profiling off, no hint, one stream, f32, MEDIUM priority. */
RN_KIT void plugin_properties_default(plugin_properties *p);

/* Parses and stores one read-write property. */
rn_status plugin_properties_set(plugin_properties *p, const char *key, const char *value);

/* Applies a list of properties; the first bad one is the error, and `p` is
 * left unchanged. */
rn_status plugin_properties_apply(plugin_properties *p, const rn_property *props, size_t n);

/* Applies properties set on a compiled model: the LIVE ones (ENABLE_PROFILING
 * and LOG_LEVEL); any other read-write key is RN_INVALID_ARG saying it is
 * fixed at compile time, an unknown key one naming it. `p` is left
 * unchanged on error. */
rn_status plugin_properties_set_compiled(plugin_properties *p, const rn_property *props, size_t n);

/* Writes a read-write property's value as a string into buf. RN_NOT_FOUND
 * for keys that are not read-write properties. */
rn_status plugin_properties_get(const plugin_properties *p, const char *key, char *buf,
                                size_t size);

/* The read-write keys of every device, NULL-terminated (the table's RW and
 * LIVE rows of ALL); and those of host CPU devices. */
extern const char *const plugin_rw_property_keys[];
extern const char *const plugin_cpu_property_keys[];

/* The stream configuration for `cpus` cores: LATENCY → one stream on all
 * cores; THROUGHPUT → several streams of few threads (bounded by
 * PERFORMANCE_HINT_NUM_REQUESTS); NUM_STREAMS, when set, wins over the hint;
 * INFERENCE_NUM_THREADS caps the threads; EXCLUSIVE_ASYNC_REQUESTS wins over
 * all of them with one stream of one thread, shared by every compiled model
 * that asks for it. Also the number of requests that keeps every stream
 * busy. */
RN_KIT void plugin_properties_streams(const plugin_properties *p, uint32_t cpus,
                                      uint32_t *n_streams, uint32_t *threads_per_stream,
                                      uint32_t *optimal_requests);

/* Copies `value` into buf (NUL-terminated) or fails with RN_INVALID_ARG. */
RN_KIT rn_status plugin_property_string(const char *key, const char *value, char *buf, size_t size);

#endif /* RUNNEL_PLUGINS_API_PROPERTIES_H */
