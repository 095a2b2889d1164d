/* runtime/'s private structures, shared by its files. */
#ifndef RUNNEL_RUNTIME_RUNTIME_H
#define RUNNEL_RUNTIME_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>

#include "graph/graph.h"
#include "runnel/plugin.h"
#include "runnel/runnel.h"

struct rn_tensor {
    rn_element_type type;
    size_t rank;
    int64_t dims[RN_MAX_RANK];
    void *data;
    size_t bytes;
    bool owned;
};

/* A device registered in a core: its plugin and the plugin's context. */
typedef struct runtime_device {
    const rn_plugin_ops *ops;
    void *plugin;
} runtime_device;

struct rn_core {
    int n_devices;
    runtime_device devices[16];
};

struct rn_model {
    graph *g;
};

struct rn_compiled_model {
    rn_core *core;
    const runtime_device *device;
    const rn_compiled_model_ops *ops;
    void *compiled;
    /* Ports copied from the model (names owned here). */
    size_t n_inputs, n_outputs;
    rn_port *inputs, *outputs;
};

struct rn_infer_request {
    rn_compiled_model *compiled;
    void *request;
    rn_tensor **inputs; /* bound tensors (owned when own_input) */
    bool *own_input;
    rn_tensor **outputs;  /* views of the last results, or the caller's */
    bool *own_output;     /* the view object is the request's */
    bool *user_output;    /* bound by the caller */
    pthread_mutex_t lock; /* guards callback and callback_data */
    rn_infer_callback callback;
    void *callback_data;
};

/* A graph_tensor describing a tensor's buffer (borrowed). */
void runtime_tensor_view(const rn_tensor *tensor, graph_tensor *out);
/* Points a request-owned tensor at a new borrowed buffer. */
void runtime_tensor_rebind(rn_tensor *tensor, const graph_tensor *view);
/* Copies ports of a graph's inputs or outputs (names duplicated). */
rn_status runtime_ports_from_graph(graph_value *const *values, int n, rn_port **out);
void runtime_ports_free(rn_port *ports, size_t n);

#endif /* RUNNEL_RUNTIME_RUNTIME_H */
