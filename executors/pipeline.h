/* The request pipeline as a task DAG.
 *
 * A request runs through named stages — preprocess, upload, execute, wait,
 * download, postprocess, callback — and the device's tasks (kernel chains)
 * between them. A pipeline is built once per compiled plan: the stages a
 * device has, in order, each on its executor (the request's stream, the
 * device-wait executor, the callback executor), and the tasks with their
 * dependencies, bracketed by the stages before and after them:
 *
 *   preprocess → [upload …] → tasks → [execute, wait, download …] → postprocess → callback
 *
 * Async runs start an instance of its DAG on the executor pool; a sync run
 * executes the same DAG inline in the caller's thread, in a topological
 * order fixed when the pipeline was built (ggml's graph_compute = async +
 * synchronize). */
#ifndef RUNNEL_EXECUTORS_PIPELINE_H
#define RUNNEL_EXECUTORS_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "executors/executors.h"
#include "runnel/compiled_model.h"
#include "runnel/status.h"
#include "sched/sched.h"

typedef enum executors_stage {
    EXECUTORS_STAGE_PREPROCESS = 0,
    EXECUTORS_STAGE_UPLOAD,
    EXECUTORS_STAGE_EXECUTE,
    EXECUTORS_STAGE_WAIT,
    EXECUTORS_STAGE_DOWNLOAD,
    EXECUTORS_STAGE_POSTPROCESS,
    EXECUTORS_STAGE_CALLBACK,
    EXECUTORS_STAGE_COUNT,
} executors_stage;

/* "preprocess", "upload", "execute", "wait", "download", "postprocess",
 * "callback". */
const char *executors_stage_name(executors_stage stage);

/* Where a stage runs. */
typedef enum executors_where {
    EXECUTORS_ON_STREAM = 0,  /* the request's stream workers */
    EXECUTORS_ON_DEVICE_WAIT, /* the pool's device-wait executor */
    EXECUTORS_ON_CALLBACK,    /* the pool's callback executor */
} executors_where;

typedef struct executors_pipeline executors_pipeline;
typedef struct executors_pipeline_builder executors_pipeline_builder;

/* A builder for a pipeline on `pool` (NULL: inline runs only). */
rn_status executors_pipeline_builder_create(executors_pool *pool, executors_pipeline_builder **out);
void executors_pipeline_builder_free(executors_pipeline_builder *b);

/* Adds stage `stage` (each at most once; preprocess, postprocess and
 * callback are required) running fn(ctx, arg) on `where`; upload stages go
 * before the tasks, the others after, in the order added. */
rn_status executors_pipeline_add_stage(executors_pipeline_builder *b, executors_stage stage,
                                       executors_where where, sched_task_fn fn, void *arg);

/* Adds a task (on the stream) and writes its index (0, 1, ...) to *out. */
rn_status executors_pipeline_add_task(executors_pipeline_builder *b, const char *name,
                                      sched_task_fn fn, void *arg, uint32_t *out);

/* Task `to` runs after task `from`. */
rn_status executors_pipeline_add_edge(executors_pipeline_builder *b, uint32_t from, uint32_t to);

/* Moves stage `stage` (already added) to another executor, for building a
 * variant of the same pipeline. */
rn_status executors_pipeline_move_stage(executors_pipeline_builder *b, executors_stage stage,
                                        executors_where where);

/* Builds the pipeline (the builder is left as it was). */
rn_status executors_pipeline_build(const executors_pipeline_builder *b, executors_pipeline **out);
void executors_pipeline_free(executors_pipeline *p);

/* The DAG to instantiate (sched_instance_create) and its node for a stage
 * (UINT32_MAX when the pipeline has no such stage). */
const sched_dag *executors_pipeline_dag(const executors_pipeline *p);
uint32_t executors_pipeline_stage_node(const executors_pipeline *p, executors_stage stage);
bool executors_pipeline_has_stage(const executors_pipeline *p, executors_stage stage);

/* The stages in order with their executors ("stream", "device-wait",
 * "callback"); the tasks appear as one stage named "infer". Writes at most
 * `cap` entries and returns how many there are. */
size_t executors_pipeline_describe(const executors_pipeline *p, rn_pipeline_stage *out, size_t cap);

/* Runs every node of the DAG in the calling thread, in topological order,
 * with ctx->user_arg = user_arg. Returns the first non-OK status a node
 * returned (SCHED_PENDING is the node's own business: inline runs of stages
 * that hand work to a device wait for it themselves). */
int executors_pipeline_run_inline(const executors_pipeline *p, void *user_arg);

/* Starts an instance of the pipeline's DAG on its pool, on any stream. */
int executors_pipeline_start(const executors_pipeline *p, sched_instance *inst);

#endif /* RUNNEL_EXECUTORS_PIPELINE_H */
