/* Private to plugins/api: the plan and request structures shared by plan.c
 * (compile side) and request.c (run side). */
#ifndef RUNNEL_PLUGINS_API_PLAN_INTERNAL_H
#define RUNNEL_PLUGINS_API_PLAN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "plugins/api/plan.h"

struct plugin_plan {
    graph *g;
    plugin_plan_options options;
    const plugin_kernel_registry *registry;
    const plugin_kernel **kernels; /* per node */
    void **states;                 /* per node, from prepare */
    int *consumers;                /* per value: readers (+1 for results) */
    /* Per node: the values its subgraphs read from this graph (ids, in the
     * order of graph_node_outer_inputs), and whether it has subgraphs. */
    int **implicit;
    int *n_implicit;
    bool *has_subgraphs;
    int *io_offset; /* per node: start of its scratch (inputs, outputs, implicit) */
    int io_total;
    /* A nested plan (a subgraph's, built by plugin_plan_build_nested) runs
     * synchronously only: no executor pool, no DAG. Its captures are the
     * values of g standing for outer_values[i] of the enclosing graph, bound
     * before each run. */
    bool nested;
    int n_captures;
    int *capture_ids;
    graph_value **outer_values;
    /* Profiling: on/off (options.profiling, changed by set_profiling),
     * PLUGIN_STAGES stage entries, then one per node. */
    atomic_bool profiling;
    atomic_int log_level; /* options.log_level, changed by set_log_level */
    rn_profiling_info *profile_template;
    _Atomic int64_t *last_us;     /* per node: time of the last profiled run, -1 never */
    pthread_mutex_t runtime_lock; /* guards runtime_nodes */
    rn_runtime_node *runtime_nodes;
    char **original_names; /* per node: fused names joined by ',' */
    executors_pool *pool;
    /* The request pipeline (plugin_plan_pipeline). */
    size_t n_pipeline;
    rn_pipeline_stage pipeline[PLUGIN_MAX_STAGES + 4];
    /* The DAG: 0 preprocess, 1..n kernels, n+1 postprocess, n+2 callback,
     * then the device stages at n+3+k. */
    sched_dag *dag;
};

/* What a request holds for one value of the graph: a tensor, a sequence or
 * an absent optional (graph_tensor.kind). */
typedef struct value_slot {
    graph_tensor t;
    bool owned;     /* t (data, strings, items) is ours to free */
    bool bound;     /* a parameter or capture bound by set_input / set_capture */
    bool has_value; /* t holds the value (set, computed, or a constant) */
} value_slot;

enum { REQUEST_IDLE = 0, REQUEST_RUNNING = 1 };

/* The stage entries at the head of a request's profiling info. */
enum {
    STAGE_PREPROCESS,
    STAGE_UPLOAD,
    STAGE_EXECUTE,
    STAGE_DOWNLOAD,
    STAGE_POSTPROCESS,
    PLUGIN_STAGES
};

struct plugin_request {
    const plugin_plan *plan;
    value_slot *slots;      /* per value */
    atomic_int *remaining;  /* per value: readers left in this run */
    graph_tensor *user_out; /* per result: the caller's buffer, data NULL if none */
    bool *remote_in;        /* per input: bound to a remote tensor */
    bool *remote_out;       /* per result: user_out is a remote tensor */
    bool profiling;         /* this run records times (the plan's flag at its start) */
    int log_level;          /* the plan's LOG_LEVEL at the start of this run */
    uint64_t run_start_ns;  /* for LOG_DEBUG */
    rn_profiling_info *profile;
    graph_tensor *io;  /* per node scratch: inputs then outputs (plan->io_offset) */
    graph_port *ports; /* same layout */

    /* Async state. */
    atomic_int state;   /* REQUEST_IDLE / REQUEST_RUNNING */
    atomic_int status;  /* first error of the run (RN_OK while none) */
    atomic_bool cancel; /* skip kernels not yet started */
    char error[1024];   /* message of the first error, written by its recorder */
    /* Nested requests (of nested plans): the cancel flag of the enclosing
     * run, polled between nodes; NULL at the top level. */
    const atomic_bool *outer_cancel;
    sched_instance *instances[2];
    int current; /* index of the instance of the run in flight */
    pthread_mutex_t lock;
    pthread_cond_t done;
    uint64_t started, completed; /* run counters, under lock */
    rn_status last_status;       /* status of the last completed run */
    char last_error[1024];
    uint64_t stage_start[PLUGIN_STAGES];            /* profiling: when each stage began */
    uint64_t device_stage_start[PLUGIN_MAX_STAGES]; /* profiling */
    bool sync_stage_pending;                        /* sync run: a device stage is pending */
    rn_status sync_stage_status;
    rn_request_callback callback;
    void *callback_data;
};

/* DAG task functions (request.c), wired into the plan's DAG by plan.c. */
int plugin_task_preprocess(const sched_task_ctx *ctx, void *arg);
int plugin_task_kernel(const sched_task_ctx *ctx, void *arg);
int plugin_task_postprocess(const sched_task_ctx *ctx, void *arg);
int plugin_task_callback(const sched_task_ctx *ctx, void *arg);
int plugin_task_stage(const sched_task_ctx *ctx, void *arg);

#endif /* RUNNEL_PLUGINS_API_PLAN_INTERNAL_H */
