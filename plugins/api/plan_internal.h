/* Private to plugins/api: the compiled plan and the request that runs it,
 * shared by plan.c (the plan), plan_spec.c (lowering a graph of fixed input
 * shapes: kernels, layouts, partitions, memory plan, DAG), memory_plan.c
 * (buffer offsets), request_spec.c (a request and its memory per spec) and
 * request.c (its bindings and runs: what a run passes through).
 *
 * Vocabulary:
 * - a *spec* (plan_spec) is the plan for one set of input shapes: every
 *   node's kernel, prepared state and static descriptors, the conversions
 *   and partitions, the arena layout and the task DAG. A model whose input
 *   shapes are static has one; a model with dynamic inputs gets one per
 *   shape seen, cached (LRU) in the plan.
 * - an *exec node* is what a spec runs: a graph node with its kernel, a
 *   layout conversion, or a partition (a group of nodes a device runs as
 *   one kernel). Exec values are the graph's values plus the ones
 *   conversions create.
 * - a *task* is a DAG node: a maximal chain of exec nodes with no branch
 *   between them (run back to back, without a scheduler hop). */
#ifndef RUNNEL_PLUGINS_API_PLAN_INTERNAL_H
#define RUNNEL_PLUGINS_API_PLAN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "executors/pipeline.h"
#include "plugins/api/pages.h"
#include "plugins/api/plan.h"
#include "plugins/api/run.h"

/* The stage entries at the head of a request's profiling info. */
enum {
    STAGE_PREPROCESS,
    STAGE_UPLOAD,
    STAGE_EXECUTE,
    STAGE_DOWNLOAD,
    STAGE_POSTPROCESS,
    PLUGIN_STAGES
};

/* Where an exec value's bytes are during a run. */
typedef enum plan_storage {
    PLAN_NONE = 0, /* no value (omitted) */
    PLAN_CONST,    /* a constant of the spec (shared by every request) */
    PLAN_INPUT,    /* bound by the caller (set_input, a capture) */
    PLAN_ARENA,    /* static: an offset into the request's arena */
    PLAN_DYNAMIC,  /* allocated by the run (shape known only then, strings,
                      sequences, optionals) and freed after its last reader */
} plan_storage;

typedef struct plan_value {
    const graph_value *gv; /* NULL for a conversion's output */
    const char *name;
    plan_storage storage;
    /* The value whose bytes it shares: itself, or for a view / an in-place
     * output the value it aliases (same storage, same offset). */
    int root;
    size_t offset; /* PLAN_ARENA: into the arena */
    /* PLAN_ARENA roots of plain results in a plan whose arenas are device
     * memory: the bytes are in the request's host arena, at host_offset
     * (the generic request hands results to the caller from host memory;
     * the device converts its values into them). */
    bool host;
    size_t host_offset;
    /* Bytes from its root's start (a Concat input written in place into
     * the Concat's output; 0 for views and in-place outputs). */
    size_t alias_offset;
    size_t nbytes;
    /* The static descriptor (type, shape, strides, layout; memory filled
     * per request). For PLAN_CONST, data is set here. */
    graph_tensor desc;
    int producer;       /* exec node, -1 for inputs and constants */
    int n_readers;      /* exec node inputs reading it (implicit reads included) */
    int result;         /* index among the results, -1 */
    void *owned_data;   /* PLAN_CONST made by the plan (a converted weight) */
    int converted_from; /* with owned_data: the value it was converted from */
} plan_value;

typedef enum plan_node_kind {
    PLAN_NODE_KERNEL = 0,
    PLAN_NODE_CONVERT, /* a layout conversion inserted by the plan */
    PLAN_NODE_PARTITION,
} plan_node_kind;

typedef struct plan_node {
    plan_node_kind kind;
    const graph_node *node; /* the graph node (a partition's first); NULL for conversions */
    const plugin_kernel *kernel;
    void *state;
    int n_in, n_out;
    int *in, *out;  /* exec value ids, -1 omitted */
    int n_implicit; /* values its subgraphs read */
    int *implicit;
    bool has_subgraphs;
    /* Every input and output is static: the run calls the kernel with the
     * prebuilt arguments, no shape inference, no allocation. */
    bool fast;
    bool skip; /* a view made an alias: nothing to run */
    /* A Concat some of whose inputs were written in place by their
     * producers: the run copies only the others (placed: bit k per input;
     * all placed: skip). */
    bool concat_partial;
    uint64_t concat_placed;
    int io;                        /* start of its descriptors in the request's scratch */
    const char *name;              /* for profiling and the runtime model */
    const char *type;              /* op type, "Reorder" for conversions */
    const char *impl;              /* kernel impl_type, or the layout's name */
    char *owned_name;              /* conversions and partitions make theirs */
    char *fallback;                /* why the first kernel refused the node, or NULL */
    char *original_names;          /* the original nodes it stands for, joined by ',' */
    const graph_op_schema *schema; /* kernel nodes: for run-time shape inference */
    int scratch;                   /* exec value of its scratch memory, -1 none */
    const rn_layout *to;           /* conversions: the layout written (NULL plain) */
    const rn_layout *from;         /* conversions: the layout read */
    char *in_layouts;              /* runtime model: "nChw16c,plain" */
    char *out_layouts;
} plan_node;

typedef struct plan_spec plan_spec;
typedef struct plan_branches plan_branches;
typedef struct plan_branch_trace plan_branch_trace;
typedef struct plan_branch_state plan_branch_state;
struct plan_spec {
    const plugin_plan *plan;
    graph *g; /* owned: the graph with this spec's shapes */
    atomic_int refs;
    /* Inputs shapes it was built for (the key of the cache). */
    int n_inputs;
    graph_shape *input_shapes;
    /* Exec values: g's values first (same ids), then conversion outputs. */
    int n_values;
    plan_value *values;
    /* The converted constants' bytes (values' owned_data), in huge pages
     * where the kernel lends them (pages.h). */
    plugin_slab *constants;
    int n_nodes;
    plan_node *nodes; /* topological order */
    int io_total;     /* descriptors per request: inputs, outputs, implicit of every node */
    int n_results;
    int *results;       /* exec value of result o */
    size_t arena_bytes; /* one arena per request */
    size_t host_bytes;  /* device arenas: the host arena of the results */
    int n_dynamic;      /* values allocated by the run */
    int *dynamic;       /* their ids */
    int *consumers;     /* per value: reads in a run (+1 for a result), for dynamic ones */
    int n_conversions;  /* inserted at run time */
    int n_fast, n_views, n_inplace, n_concat_inputs_in_place;
    /* Tasks: task t runs exec nodes task_nodes[task_begin[t] .. task_begin[t+1]). */
    int n_tasks;
    int *task_begin;
    int *task_nodes;
    /* The tasks between the plan's stages; a nested plan's (a subgraph
     * body's) has no device stages and no pool: it runs inline. */
    executors_pipeline *pipeline;
    /* The same pipeline with the callback stage on the stream: runs without
     * a user callback complete on the worker that ran the last task, with
     * no hop to the callback executor (NULL for nested plans). */
    executors_pipeline *pipeline_direct;
    /* Branch parallelism (branch.c): the tasks' DAG, run by one task; NULL
     * when the options ask for none or there is one task. */
    plan_branches *branches;
    /* Per exec node: time of the last profiled run (-1 never). */
    _Atomic int64_t *last_us;
    plan_spec *lru_prev, *lru_next; /* in the plan's cache */
};

struct plugin_plan {
    plugin_plan_options options;
    const plugin_kernel_registry *registry;
    graph *g; /* the transformed graph, owned by the base spec */
    plan_spec *base;
    bool dynamic_inputs; /* some input dim is dynamic: specs per shape */
    /* The shape cache: specs built for run-time shapes, most recent first. */
    pthread_mutex_t cache_lock;
    plan_spec *cache_head;
    int cache_size, cache_capacity;
    atomic_uint_fast64_t cache_builds, cache_hits;
    /* Nested plans (a subgraph's) run inline only: no pool, no DAG. */
    bool nested;
    int n_captures;
    int *capture_ids;
    graph_value **outer_values;
    atomic_bool profiling;
    atomic_int log_level;
    pthread_mutex_t runtime_lock; /* guards runtime_nodes */
    rn_runtime_node *runtime_nodes;
    executors_pool *pool;
    size_t n_pipeline;
    rn_pipeline_stage pipeline[PLUGIN_MAX_STAGES + 4];
    /* Branch parallelism with tracing on: the chains' events (branch.c). */
    plan_branch_trace *branch_trace;
};

/* Builds the spec of `g` (taken over, freed on failure): kernels, layouts,
 * partitions, memory plan and, for a top-level plan, the DAG. */
rn_status plan_spec_build(const plugin_plan *plan, graph *g, plan_spec **out);
void plan_spec_release(plan_spec *spec);

/* The memory plan: offsets of the spec's arena values (memory_plan.c). */
rn_status plan_memory(plan_spec *spec);

/* Whether a spec was built for exactly these input shapes. */
bool plan_spec_matches(const plan_spec *spec, const graph_shape *shapes);

/* The spec for the given input shapes: the base, a cached one, or a new one
 * (built in the calling thread and cached). The caller holds a reference. */
rn_status plugin_plan_spec_for(plugin_plan *plan, const graph_shape *shapes, plan_spec **out);

/* What a request holds for one exec value. */
typedef struct value_slot {
    graph_tensor t;
    bool owned;     /* t's data (strings, items) is the request's to free */
    bool has_value; /* t holds the value */
} value_slot;

/* A request's state for one spec: its arena, slots, prebuilt kernel
 * arguments and DAG instances. */
typedef struct request_spec {
    plan_spec *spec; /* referenced */
    void *arena_buffer;
    unsigned char *arena;      /* host address of the arena (NULL on device memory) */
    unsigned char *host_arena; /* device arenas: the results' host bytes */
    value_slot *slots;         /* per exec value */
    atomic_int *remaining;     /* per exec value: dynamic readers left in this run */
    graph_tensor *io;          /* per node: inputs, outputs, implicit */
    graph_port *ports;
    plugin_kernel_args *args; /* per node, prebuilt */
    /* Descriptors to refresh before each run (they point at a bound input
     * or at a result, whose memory the caller may change between runs). */
    int n_refresh;
    int *refresh_io, *refresh_value;
    /* Device plans: the uploads of model inputs (conversion nodes zc_node[k])
     * that a run skips when the input is bound to device memory already in
     * the layout the upload writes (a remote tensor): the consumers then
     * read the caller's buffer (skip_node, per exec node, for the run). The
     * conversion's output must have no alias (nothing written in place over
     * it). */
    int n_zc;
    int *zc_node;
    /* Device plans: the downloads of results (conversion nodes zo_node[k])
     * that a run skips when the result is bound to device memory in the
     * layout the download reads (a remote tensor): the producer then writes
     * the caller's buffer. The conversion's input must have no alias, no
     * other reader, and not be a result itself. */
    int n_zo;
    int *zo_node;
    bool *skip_node;
    plugin_run_instances instances;        /* of pipeline */
    plugin_run_instances direct_instances; /* of pipeline_direct */
    plan_branch_state *branch;             /* the branch runner's (spec->branches) */
    uint64_t last_used;
} request_spec;

#define REQUEST_SPECS 4

/* A device stage's event (plan.h): the request and stage it completes, and
 * the arena it was armed on. `armed` is stored (release) before the
 * device's arm hook runs and loaded (acquire) first by whatever the signal
 * side calls, so that the run's writes before the stage happen before the
 * completing thread's reads (a driver's callback thread, whose own
 * synchronisation a sanitizer cannot see). */
struct plugin_event {
    plugin_request *request;
    uint32_t stage;
    void *arena;
    atomic_int armed;
};

struct rn_plugin_request {
    plugin_run run; /* first: state, error, cancel, callback, waiting (run.h) */
    const plugin_plan *plan;
    request_spec *specs[REQUEST_SPECS];
    request_spec *rs; /* the spec of the current (or last) run */
    uint64_t use_clock;
    /* Bindings, per graph input / result. */
    graph_tensor *inputs;
    bool *input_bound;
    graph_tensor *user_out; /* data NULL if none */
    bool *remote_in, *remote_out;
    graph_shape *shapes; /* scratch: the bound input shapes */
    bool outputs_valid;  /* the last run completed */
    bool ran;            /* a run was started */
    bool profiling;
    int log_level;
    uint64_t run_start_ns;
    rn_profiling_info *profile; /* stage entries, then per exec node (of rs) */
    size_t profile_cap;
    uint64_t stage_start[PLUGIN_STAGES];
    uint64_t device_stage_start[PLUGIN_MAX_STAGES];
    plugin_event events[PLUGIN_MAX_STAGES]; /* of the stages that arm one */
};

PLUGIN_RUN_FIRST(struct rn_plugin_request, run);

/* DAG task functions (request.c). */
int plugin_task_preprocess(const sched_task_ctx *ctx, void *arg);
int plugin_task_kernels(const sched_task_ctx *ctx, void *arg);
int plugin_task_postprocess(const sched_task_ctx *ctx, void *arg);
int plugin_task_callback(const sched_task_ctx *ctx, void *arg);
int plugin_task_stage(const sched_task_ctx *ctx, void *arg);

/* The kernel callbacks of prebuilt arguments (request.c). */
rn_status plugin_alloc_output(plugin_kernel_args *args, int index, int rank, const int64_t *dims);
rn_status plugin_move_output(plugin_kernel_args *args, int index, graph_tensor *value);

/* Runs exec node i of the request's current spec (request.c). */
rn_status plugin_run_node(plugin_request *r, int i);
/* Runs task t's nodes in order, none after an error (recorded as the
 * request's) or a cancel (request.c). */
void plugin_run_task(plugin_request *r, int t);

/* Branch parallelism (branch.c): the tasks' DAG of a spec whose options ask
 * for it (task_of: each exec node's task), its runner (the one kernels task
 * of such a spec), and the chains' trace events. */
rn_status plan_branches_build(plan_spec *s, const int *task_of);
void plan_branches_free(plan_branches *b);
int plugin_task_branches(const sched_task_ctx *ctx, void *arg);
/* A request's runner state for a spec with branches (its arrays, its fork
 * threads' tickets); freeing it waits for revoked fork threads' tasks. */
rn_status plan_branch_state_new(const plan_branches *b, plan_branch_state **out);
void plan_branch_state_free(plan_branch_state *st);
rn_status plan_branch_trace_new(plan_branch_trace **out);
void plan_branch_trace_free(plan_branch_trace *t);
rn_status plan_branch_trace_append(plan_branch_trace *t, const char *path, uint64_t origin_ns);

/* The request's state for `spec` (the caller's reference passes to it),
 * made on first use, made current (request_spec.c). */
rn_status plugin_request_use_spec(plugin_request *r, plan_spec *spec);
/* Resets the request's profiling entries (the stages, then the exec nodes)
 * to those of its current spec, none run (request.c). */
void plugin_request_profile_init(plugin_request *r);

/* Dense row-major strides of a descriptor's shape. */
void plan_dense_strides(graph_tensor *t);

uint64_t plugin_now_ns(void);

#endif /* RUNNEL_PLUGINS_API_PLAN_INTERNAL_H */
