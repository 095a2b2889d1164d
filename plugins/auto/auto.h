/* AUTO: the runtime choosing devices for the user (plugins/auto/).
 *
 * Compile: the candidates are the listed devices ("AUTO:D1,D2" or
 * MULTI_DEVICE_PRIORITIES) or every device of the core ranked by what it is
 * (DEVICE_TYPE: discrete, then integrated or accelerator, then CPU, an
 * OpenCL device of CPU type, REF, then the others; read back as
 * DEFAULT_DEVICE_PRIORITIES), less those whose query_model refuses a node
 * of the model. With LATENCY (or THROUGHPUT) the first candidate runs
 * the requests; while it compiles, a host device (CPU, else REF) that
 * compiles fast runs them (startup fallback, ENABLE_STARTUP_FALLBACK), and
 * new runs switch to the chosen device once it is ready. With
 * CUMULATIVE_THROUGHPUT every candidate compiles and each run goes to the
 * device with the most of its optimal number of runs free.
 * A run that fails on a device is retried on the next candidate
 * (ENABLE_RUNTIME_FALLBACK). */
#ifndef RUNNEL_PLUGINS_AUTO_AUTO_H
#define RUNNEL_PLUGINS_AUTO_AUTO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "graph/graph.h"
#include "plugins/api/devices.h"
#include "runnel/plugin.h"

extern const rn_plugin_ops auto_plugin_ops;

typedef struct auto_config {
    char priorities[512];  /* MULTI_DEVICE_PRIORITIES; "" for every device */
    bool startup_fallback; /* ENABLE_STARTUP_FALLBACK */
    bool runtime_fallback; /* ENABLE_RUNTIME_FALLBACK */
} auto_config;

enum { TARGET_IDLE, TARGET_COMPILING, TARGET_READY, TARGET_FAILED };

/* A candidate device and its compiled model (once ready). */
typedef struct auto_target {
    atomic_int state;
    const rn_compiled_model_ops *ops;
    rn_plugin_compiled *compiled;
    char error[512];
    uint32_t optimal;    /* its OPTIMAL_NUMBER_OF_INFER_REQUESTS */
    atomic_uint running; /* runs in flight on it (CUMULATIVE_THROUGHPUT) */
} auto_target;

typedef struct rn_plugin {
    plugin_meta_device meta; /* its lock guards meta.s and cfg */
    auto_config cfg;
} auto_plugin;

typedef struct rn_plugin_compiled {
    auto_plugin *plugin;
    pthread_mutex_t lock; /* guards s.props after compiling */
    plugin_meta_settings s;
    auto_config cfg;
    bool cumulative;     /* PERFORMANCE_HINT=CUMULATIVE_THROUGHPUT */
    plugin_devices devs; /* the candidates */
    auto_target targets[PLUGIN_MAX_DEVICES];
    int chosen;                   /* the device that runs requests once ready */
    int startup;                  /* the device that runs them until then, or -1 */
    graph *model;                 /* the model, for compiles after compile_model returned */
    pthread_mutex_t compile_lock; /* one compile at a time on a target */
    pthread_t compiler;           /* compiles `chosen` in the background */
    bool compiler_started;
} auto_compiled;

/* Compiles target t now unless it is ready or failed (thread-safe). */
rn_status auto_target_compile(auto_compiled *c, int t);

/* The target new runs go to (LATENCY, THROUGHPUT). */
int auto_current_target(auto_compiled *c);

/* The next candidate after t (wrapping around), not in `tried` (a bit per
 * target), that is ready or compiles now; -1 when there is none. */
int auto_next_target(auto_compiled *c, int t, uint32_t tried);

extern const rn_request_ops auto_request_ops;
rn_status auto_request_create(auto_compiled *c, rn_infer_request *owner, rn_plugin_request **out);

/* AUTO's order of devices with no list (DEFAULT_DEVICE_PRIORITIES), from
 * what each is: devices i < n named names[i] with DEVICE_TYPE types[i]
 * (NULL: it answers none), in the order they registered. Writes their
 * indices best first into order[n] (plugin.c, "ranking devices"). */
void auto_rank_devices(int n, const char *const *names, const char *const *types, int *order);

#endif /* RUNNEL_PLUGINS_AUTO_AUTO_H */
