/* HETERO: one model split across several devices (plugins/hetero/).
 *
 * Compile: each listed device answers query_model for the model; a node
 * goes to the first device (in priority order) that supports it, unless the
 * user's AFFINITY names another (affinity.c). Constants and shape-only
 * nodes follow their consumers, and small islands surrounded by one other
 * device that supports them merge into it, which cuts fewer edges. The
 * nodes then group into parts, each a subgraph compiled by its device
 * (split.c), ordered so that the parts form a DAG.
 *
 * Run: a request is one task DAG (executors/pipeline.h): a node per part,
 * which runs the part's own request on its device (a pending node that the
 * device's completion releases), and a node per tensor that crosses a
 * device boundary, which hands the producer's output (downloaded by the
 * producer's pipeline) to the consumer as an input (uploaded by the
 * consumer's pipeline) (request.c). Parts of one request that do not depend
 * on each other run at once, and the parts of concurrent requests overlap
 * across the devices. */
#ifndef RUNNEL_PLUGINS_HETERO_HETERO_H
#define RUNNEL_PLUGINS_HETERO_HETERO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "executors/executors.h"
#include "executors/pipeline.h"
#include "graph/graph.h"
#include "plugins/api/devices.h"
#include "plugins/api/properties.h"
#include "runnel/plugin.h"

extern const rn_plugin_ops hetero_plugin_ops;

/* HETERO's own properties beside the shared ones. */
typedef struct hetero_config {
    char priorities[512];  /* MULTI_DEVICE_PRIORITIES (alias TARGET_FALLBACK) */
    char affinity[2048];   /* AFFINITY: "node=DEVICE;node=DEVICE" */
    char distribution[32]; /* MODEL_DISTRIBUTION_POLICY: "" or "PIPELINE_PARALLEL" */
    uint32_t island_nodes; /* HETERO_ISLAND_NODES: the largest island merged */
} hetero_config;

/* Whether `key` is one of HETERO's own (not passed to the devices). */
bool hetero_is_own_key(const char *key);

/* Applies one of HETERO's own keys to cfg; RN_INVALID_ARG naming a bad
 * value. */
rn_status hetero_config_set(hetero_config *cfg, const char *key, const char *value);

/* Affinity: for each node of `g` (sorted), the index of the device that
 * runs it. An unsupported node that no device takes is RN_UNSUPPORTED naming
 * the node, its op and each device's reason. `forward` are the properties
 * passed to the devices' query_model and compile_model. */
rn_status hetero_affinity(const graph *g, const plugin_devices *devs, const hetero_config *cfg,
                          const rn_property *forward, size_t n_forward, int *device_of);

/* Where a part's input comes from: a model input (part -1, index = the
 * model input) or output `index` of an earlier part. */
typedef struct hetero_source {
    int part;
    int index;
} hetero_source;

/* One part: a subgraph on one device. */
typedef struct hetero_part {
    int device;
    graph *g; /* the subgraph (owned); its inputs and outputs are the cut values */
    int n_inputs;
    hetero_source *inputs; /* per input of g */
    const rn_compiled_model_ops *ops;
    rn_plugin_compiled *compiled;
    const graph *io; /* g, or the graph an import describes the part with */
} hetero_part;

/* The split of a model into parts. */
typedef struct hetero_split {
    int n_parts;
    hetero_part *parts; /* in an order in which every part's sources come first */
    int n_outputs;
    hetero_source *outputs; /* per model output: the part output that holds it */
} hetero_split;

/* Groups the nodes of `g` (sorted) by device_of into parts that form a DAG
 * and builds each part's subgraph (constants copied into every part that
 * reads them). */
rn_status hetero_split_build(const graph *g, const int *device_of, hetero_split *out);
void hetero_split_release(hetero_split *s);

/* The subgraph of node `node` of g alone (its non-constant inputs become
 * parameters), to ask a device why it refuses the node. */
rn_status hetero_single_node(const graph *g, int node, graph **out);

/* One node of the request DAG that hands a tensor across devices. */
typedef struct hetero_transfer {
    int from_part, from_output;
    int to_part, to_input;
    char name[192]; /* "transfer <value>: SLOWDEV->REF" */
} hetero_transfer;

/* A trace event: one node of a request's DAG, on a device's lane. */
typedef struct hetero_event {
    const char *name;
    int lane; /* device index, or n_devices for the transfer lane */
    uint64_t request, run;
    uint64_t start_ns, end_ns;
} hetero_event;

typedef struct rn_plugin {
    plugin_meta_device meta; /* its lock guards meta.s and cfg */
    hetero_config cfg;
} hetero_plugin;

typedef struct rn_plugin_compiled {
    hetero_plugin *plugin;
    plugin_devices devs;
    hetero_split split;
    graph *io;      /* the model as given (its inputs and outputs) */
    int *device_of; /* per node of io */
    int n_transfers;
    hetero_transfer *transfers;
    char (*part_names)[96]; /* per part: "part0 on SLOWDEV" */
    executors_pool *pool;
    executors_pipeline *pipeline;
    size_t n_stages;
    rn_pipeline_stage stages[EXECUTORS_STAGE_COUNT + 1];
    uint32_t optimal_requests;
    char execution_devices[256];
    pthread_mutex_t lock;   /* guards s.props, the runtime model and the trace */
    plugin_meta_settings s; /* the shared keys, passed to every part's compile */
    hetero_config cfg;
    /* The runtime model, built on demand (names owned here). */
    rn_runtime_node *runtime;
    size_t n_runtime;
    char **runtime_strings;
    size_t n_runtime_strings;
    /* The trace (ENABLE_TRACE, fixed at compile time). */
    bool trace;
    uint64_t t0_ns;
    size_t n_events, cap_events;
    hetero_event *events;
    atomic_uint_fast64_t next_request;
} hetero_compiled;

/* Builds the request pipeline of c: a node per part and per transfer. */
rn_status hetero_pipeline_build(hetero_compiled *c);

extern const rn_request_ops hetero_request_ops;
rn_status hetero_request_create(hetero_compiled *c, rn_infer_request *owner,
                                rn_plugin_request **out);

/* Records a trace event (when tracing is on). */
void hetero_trace_event(hetero_compiled *c, const char *name, int lane, uint64_t request,
                        uint64_t run, uint64_t start_ns, uint64_t end_ns);
rn_status hetero_write_trace(hetero_compiled *c, const char *path);
uint64_t hetero_now_ns(void);

/* Export and import: the split with every part's own blob. */
rn_status hetero_export(hetero_compiled *c, void **data, size_t *size);
rn_status hetero_import(hetero_plugin *p, const void *data, size_t size,
                        const rn_property *properties, size_t n, hetero_compiled **out);

/* A new compiled model with the plugin's settings (NULL when out of
 * memory, with the error set). */
hetero_compiled *hetero_compiled_new(hetero_plugin *p);

/* Frees a compiled model (parts, pipeline, pool). */
void hetero_compiled_free(hetero_compiled *c);

/* Compiles every part not yet compiled on its device and builds the
 * pipeline; used by compile and by import (whose parts come imported). */
rn_status hetero_compiled_finish(hetero_compiled *c);

/* Applies compile-time properties to a new compiled model. */
rn_status hetero_compiled_apply(hetero_compiled *c, const rn_property *props, size_t n);

#endif /* RUNNEL_PLUGINS_HETERO_HETERO_H */
