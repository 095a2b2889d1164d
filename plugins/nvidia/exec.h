/* A program on the device (exec.c): weights, prepared steps, request
 * slots; the partition kernel's state. Needs a device. */
#ifndef RUNNEL_PLUGINS_NVIDIA_EXEC_H
#define RUNNEL_PLUGINS_NVIDIA_EXEC_H

#include "plugins/api/plan.h"
#include "plugins/nvidia/nvidia.h"

typedef struct nv_exec nv_exec;

/* The device copies of a compiled model's constants, shared by its programs
 * (one per input shape its runs specialise for): one copy per constant
 * identity and device type, counted per program that uses it and freed
 * with the last; the table goes with its last reference (weights.c). */
typedef struct nv_weights nv_weights;

rn_status nv_weights_create(int device, nv_weights **out);
nv_weights *nv_weights_retain(nv_weights *w);
void nv_weights_release(nv_weights *w);
/* The device copy of constant `c` (an NV_CONST root: its host data as
 * c->type), uploaded on first use. `key`: the constant's identity in the
 * compiled model (the same key, type and size are one copy); NULL: a copy
 * of the caller's own. Each get is matched by a put of *dev. */
rn_status nv_weights_get(nv_weights *w, const void *key, const nv_value *c, void **dev);
void nv_weights_put(nv_weights *w, void *dev);

typedef struct nv_weights_stats {
    int copies;               /* on the device now */
    size_t bytes;             /* their size */
    uint64_t uploads, reuses; /* gets that uploaded, gets that shared a copy */
} nv_weights_stats;
void nv_weights_get_stats(nv_weights *w, nv_weights_stats *out);

typedef struct nv_exec_options {
    int device;
    bool allow_tf32;
    /* NVIDIA_AUTOTUNE: each convolution's engine chosen by timing cuDNN's
     * candidates at compile (nv_conv_graph_plan with a tuner), within
     * NV_TUNE_BUDGET_MS per program. */
    bool autotune;
    /* (optional) Choices made before (the compiled model's other programs,
     * an imported blob): graphs of their keys take them untimed. */
    const nv_tune_table *tuned;
    bool cuda_graph; /* capture each slot's steps into a CUDA graph after a warm-up run */
    /* NVIDIA_ASYNC_STAGES: a run queues its upload, steps and download on
     * its slot's stream and returns; the plan's device stages
     * (nv_exec_plan_stages) wait for it and copy its outputs out. The
     * plan's arenas must then be nv_exec_arena_alloc's. */
    bool async_stages;
    int max_slots; /* request slots made on demand (arena, stream, handles) */
    /* (optional) The compiled model's weights, shared with its other
     * programs (retained by the program); NULL: the program's own. */
    nv_weights *weights;
    /* (optional) A constant's identity in the compiled model, for sharing
     * its device copy (NULL: not shared). NULL: none is shared. */
    const void *(*weight_key)(void *ctx, const nv_value *c);
    void *weight_ctx;
    /* (optional) What the program belongs to (the plugin's record of it
     * among its model's programs), handed back by nv_exec_owner. */
    void *owner;
} nv_exec_options;

/* Takes `prog` over (freed on failure too). input_names are the
 * partition's, in the order the kernel's args.inputs come. */
rn_status nv_exec_create(nv_program *prog, const char *const *input_names, int n_inputs,
                         const nv_exec_options *o, nv_exec **out);
/* The partition kernel's run: runs the program args->state (an nv_exec)
 * for one request — the upload, the steps and the download. */
rn_status nv_exec_run(rn_kernel_args *args);
/* NVIDIA_ASYNC_STAGES (the plan's device stages): off, none (the
 * program's node waits for its slot's event, the worker asleep); on, two
 * after the program's node, both `always` (run after a failure or a
 * cancellation too, so that the slot is drained and given back on every
 * path):
 *   wait      (EXECUTORS_STAGE_WAIT, on the stream) a pending node whose
 *             `arm` adds a callback on the run's slot stream after its
 *             download; the driver's thread signals the event from it;
 *   download  (EXECUTORS_STAGE_DOWNLOAD, on the stream) the copy-out of
 *             the pinned staging into outputs the DMA did not write, the
 *             step timings, and the slot given back.
 * So no stream worker waits for the GPU, and other requests' stages run
 * meanwhile. The upload is queued by the program's node, which is where the
 * run's inputs are bound. */
void nv_exec_plan_stages(plugin_plan_options *o, bool async_stages);
/* The two stages' hooks (plugins/api/plan.h, plugin_stage). */
int nv_exec_stage_arm(void *arena, plugin_event *event);
int nv_exec_stage_finish(plugin_request *request, uint32_t stage, void *ctx);
/* A request arena for NVIDIA_ASYNC_STAGES: pinned host memory with the
 * run's record in a header of NV_RUN_ARENA_HEADER bytes before it (zeroed:
 * nothing in flight; marked as such a header, so that a program in a plan
 * with other arenas runs synchronously), which the program's node and the
 * stages find from the arena. */
#define NV_RUN_ARENA_HEADER 256
rn_status nv_exec_arena_alloc(size_t size, void **arena);
void nv_exec_arena_free(void *arena);
/* nv_exec_options.owner of the program. */
void *nv_exec_owner(const nv_exec *x);
/* NVIDIA_STEP_TIMING: CUDA events between the steps of each run, and the
 * sum of the steps' times of the last such run (ns): each layer alone, the
 * limit the benchmark compares with. */
void nv_exec_set_timing(nv_exec *x, bool on);
uint64_t nv_exec_steps_ns(const nv_exec *x);
/* The last timed run's time per step kind, costliest first:
 * "cublas_gemm 72x 5.120 ms; cuda_attention 12x 0.800 ms; ...". */
void nv_exec_step_profile(nv_exec *x, char *buf, size_t size);
/* NVIDIA_CONV_ENGINES: what tuning did (or "heuristic" untuned) and each
 * convolution step's engine, "node: engine 12 (tuned: ...)", in step order,
 * cut at `size`. */
void nv_exec_conv_engines(const nv_exec *x, char *buf, size_t size);
/* NVIDIA_AUTOTUNE's choices of the program (those it was given included;
 * empty untuned), the program's. */
const nv_tune_table *nv_exec_tuned(const nv_exec *x);
const char *nv_exec_impl(const nv_exec *x);
const nv_program *nv_exec_program(const nv_exec *x);
void nv_exec_free(nv_exec *x);
/* Pinned host memory (cudaHostAlloc, portable): NVIDIA's host tensors and
 * request arenas, which the DMA engine copies without staging. */
rn_status nv_host_alloc(size_t size, void **data);
void nv_host_free(void *data);

#endif /* RUNNEL_PLUGINS_NVIDIA_EXEC_H */
