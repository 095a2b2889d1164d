/* The properties every plugin shares, with OpenVINO's names: parsing with
 * validation (an unknown key or a bad value is RN_INVALID_ARG naming the key
 * and the accepted values), reading back as strings, and the stream
 * configuration that the performance hints choose. */
#ifndef RUNNEL_PLUGINS_API_PROPERTIES_H
#define RUNNEL_PLUGINS_API_PROPERTIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    bool enable_trace; /* ENABLE_TRACE: record every task for rn_compiled_model_write_trace */
    plugin_hint performance_hint;
    uint32_t hint_num_requests;     /* 0: unset */
    int32_t num_streams;            /* 0: unset; PLUGIN_STREAMS_AUTO */
    uint32_t inference_num_threads; /* 0: all CPUs */
    rn_element_type inference_precision;
    int execution_mode; /* 0 PERFORMANCE, 1 ACCURACY */
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
    /* Host CPU devices (cpu_keys set): CPU_DENORMALS_OPTIMIZATION (flush
     * denormals to zero in the kernels' threads). */
    bool cpu_keys;
    bool denormals_optimization;
    /* CPU_BIND_THREAD (ENABLE_CPU_PINNING: YES / NO): pin each stream's
     * worker to its cores. */
    plugin_bind_thread bind_thread;
} plugin_properties;

#define PLUGIN_PRECISION(type) (1u << (unsigned)(type))

/* The defaults: profiling off, no hint, one stream, f32, MEDIUM priority. */
void plugin_properties_default(plugin_properties *p);

/* Parses and stores one read-write property. */
rn_status plugin_properties_set(plugin_properties *p, const char *key, const char *value);

/* Applies a list of properties; the first bad one is the error, and `p` is
 * left unchanged. */
rn_status plugin_properties_apply(plugin_properties *p, const rn_property *props, size_t n);

/* Applies properties set on a compiled model: ENABLE_PROFILING and
 * LOG_LEVEL; any other read-write key is RN_INVALID_ARG saying it is fixed
 * at compile time, an unknown key one naming it. `p` is left unchanged on
 * error. */
rn_status plugin_properties_set_compiled(plugin_properties *p, const rn_property *props, size_t n);

/* Writes a read-write property's value as a string into buf. RN_NOT_FOUND
 * for keys that are not read-write properties. */
rn_status plugin_properties_get(const plugin_properties *p, const char *key, char *buf,
                                size_t size);

/* The read-write keys, NULL-terminated; and those of host CPU devices. */
extern const char *const plugin_rw_property_keys[];
extern const char *const plugin_cpu_property_keys[];

/* The stream configuration for `cpus` cores: LATENCY → one stream on all
 * cores; THROUGHPUT → several streams of few threads (bounded by
 * PERFORMANCE_HINT_NUM_REQUESTS); NUM_STREAMS, when set, wins over the hint;
 * INFERENCE_NUM_THREADS caps the threads; EXCLUSIVE_ASYNC_REQUESTS wins over
 * all of them with one stream of one thread, shared by every compiled model
 * that asks for it. Also the number of requests that keeps every stream
 * busy. */
void plugin_properties_streams(const plugin_properties *p, uint32_t cpus, uint32_t *n_streams,
                               uint32_t *threads_per_stream, uint32_t *optimal_requests);

/* Copies `value` into buf (NUL-terminated) or fails with RN_INVALID_ARG. */
rn_status plugin_property_string(const char *key, const char *value, char *buf, size_t size);

#endif /* RUNNEL_PLUGINS_API_PROPERTIES_H */
