/* The GPU device on OpenCL: what its files share.
 *
 * One OpenCL device (a GPU when the platforms offer one, else a CPU device
 * such as PoCL's) with one context. runnel's own OpenCL C kernels
 * (program.c) are built once per context, on the first compile; GEMMs go to
 * CLBlast. A compiled model's plan keeps its arenas in device memory
 * (gpu_allocator: one cl_mem and one in-order command queue per request
 * arena); every value a GPU kernel reads or writes is in the device layout
 * "cl" (plain row-major bytes in device memory), so the plan inserts the
 * uploads (model inputs → device) and downloads (device → results) as
 * layout conversions. Constant inputs (weights) are uploaded once, when a
 * kernel is prepared. Kernels, uploads and downloads enqueue their work
 * on the run's queue (non-blocking); the pipeline's execute stage flushes
 * the queue and its wait stage (which runs after a failure too) completes
 * when a marker's event fires. A compiled
 * model runs on one device (DEVICE_ID) or in a remote context (remote.c:
 * the user's cl_context and queue), whose cl_mem tensors its conversions
 * copy on the device. */
#ifndef RUNNEL_PLUGINS_GPU_GPU_H
#define RUNNEL_PLUGINS_GPU_GPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <CL/cl.h>

#include "plugins/api/kernel.h"
#include "plugins/api/plan.h"
#include "runnel/plugin.h"
#include "runnel/infer_request.h"

/* Where the device's program came from (GPU_PROGRAM_FROM_CACHE is YES for
 * the last two). */
typedef enum gpu_program_origin {
    GPU_PROGRAM_NOT_BUILT = 0,
    GPU_PROGRAM_FROM_SOURCE,
    GPU_PROGRAM_FROM_CACHE_DIR, /* a record in CACHE_DIR */
    GPU_PROGRAM_FROM_BLOB,      /* the record of an imported blob */
} gpu_program_origin;

/* The OpenCL device a GPU plugin runs on, and its context. */
typedef struct gpu_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_device_type type;
    /* DEVICE_TYPE: "discrete" (a GPU with memory of its own), "integrated"
     * (a GPU sharing the host's memory), "cpu" (an OpenCL device of CPU type,
     * such as PoCL's: the host's own cores) or "accelerator". AUTO ranks by it. */
    const char *device_type;
    char name[256];             /* FULL_DEVICE_NAME */
    char architecture[512];     /* DEVICE_ARCHITECTURE: vendor, device, driver */
    bool fp16;                  /* cl_khr_fp16 */
    int n_devices;              /* OpenCL devices the plugin can choose from */
    pthread_mutex_t build_lock; /* guards the program and the fields below */
    cl_program program;         /* runnel's kernels, built on first use */
    gpu_program_origin program_origin;
    char cache_dir[4096];      /* CACHE_DIR: program records; "" when off */
    char key_text[1024];       /* what the program binary depends on */
    uint64_t key;              /* its XXH64: the cache entry */
    size_t stored_binary_size; /* of the record last written to CACHE_DIR */
    atomic_uint_fast64_t bytes_uploaded, bytes_downloaded;
    /* A user's context (remote.c): the queue every arena shares (the
     * user's OCL_QUEUE), or NULL: each arena makes its own. */
    cl_command_queue queue;
} gpu_device;

/* Opens device `index` among the OpenCL devices (GPUs first, then CPU and
 * accelerator devices); the reason in the error when there is none. */
rn_status gpu_device_open(int index, gpu_device **out);
void gpu_device_close(gpu_device *dev);
/* A device over a user's OpenCL context (retained) and its device; `queue`
 * (retained, may be NULL) is the one every arena then runs on. */
rn_status gpu_device_wrap(cl_context context, cl_device_id device, cl_command_queue queue,
                          gpu_device **out);

/* Builds runnel's program for the device once (thread-safe): from the
 * program record in CACHE_DIR when there is a usable one, else from source
 * (then stored there); the build log is in the error (program_cache.c). */
rn_status gpu_device_program(gpu_device *dev, cl_program *out);
/* Builds the program from `record` (an imported blob's) if it is not built
 * yet and the record fits this device; otherwise nothing happens and the
 * program is built as gpu_device_program says. */
void gpu_device_offer_program(gpu_device *dev, const void *record, size_t size);
/* Whether `record` is intact (magic, version, checksum): RN_PARSE_ERROR
 * naming what is wrong. An intact record of another device or driver is no
 * error (gpu_device_offer_program ignores it). */
rn_status gpu_program_record_check(const void *record, size_t size);
/* The record of the program's binary now, built first if need be
 * (malloc'ed). */
rn_status gpu_device_program_record(gpu_device *dev, uint8_t **record, size_t *size);
void gpu_device_set_cache_dir(gpu_device *dev, const char *dir);
void gpu_device_cache_dir(gpu_device *dev, char *buf, size_t size);
gpu_program_origin gpu_device_program_origin(gpu_device *dev);
/* Stores the program's binary as it is now in CACHE_DIR (code generated
 * since the build included) and releases the program. */
void gpu_device_program_release(gpu_device *dev);

/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char *gpu_cl_error(cl_int err);

/* The source of runnel's OpenCL kernels (program.c). */
extern const char gpu_program_source[];
/* The typed and reduction kernels (program_index.c), and every part of the
 * program in build order, NULL-terminated. */
extern const char gpu_program_source_index[];
extern const char *const gpu_program_sources[];

/* The device kernels are prepared for: set by the plugin in the thread that
 * builds a plan (kernel prepare has no other way to reach it). */
void gpu_set_current(gpu_device *dev);
gpu_device *gpu_current(void);

/* ---- device memory ---- */

/* What a compiled model's arenas share (the allocator's ctx): the device,
 * and what its uploads and downloads moved (the compiled model's
 * GPU_BYTES_UPLOADED and GPU_BYTES_DOWNLOADED). */
typedef struct gpu_trace gpu_trace;
typedef struct gpu_memory {
    gpu_device *dev;
    atomic_uint_fast64_t bytes_uploaded, bytes_downloaded;
    gpu_trace *trace; /* the device's events for the trace (trace.c), NULL when off */
} gpu_memory;

/* A command a node enqueued (profile.c): a kernel's event (first NULL), or
 * a CLBlast call from the marker `first` before it to its event `last`. */
typedef struct gpu_event {
    const char *node;
    cl_event first, last;
} gpu_event;

/* The events of a run's commands, for profiling. */
typedef struct gpu_event_log {
    pthread_mutex_t lock;
    gpu_event *items;
    int n, cap;
} gpu_event_log;

/* A request's arena: device memory and the in-order queue its work runs
 * on (the `buffer` kernels see in their descriptors); its queue profiles
 * (unless it is a user's OCL_QUEUE made without profiling), and the events
 * of the run's commands are kept until the run's wait stage completes. A
 * remote tensor is described the same way (owner and queue NULL), so that
 * the conversions of a model's inputs and results copy device to device
 * from and into it. */
typedef struct gpu_arena {
    gpu_device *dev;
    cl_mem mem;
    cl_command_queue queue;
    gpu_memory *owner;
    gpu_event_log events;
    /* With a trace (trace.c): the arena's row, and host − device clock. */
    uint32_t trace_id;
    bool traced;
    int64_t clock_offset_ns;
} gpu_arena;

/* The allocator of device arenas (ctx: a gpu_memory). */
extern const rn_allocator gpu_allocator_template;

/* The run's stages over its arena's queue (memory.c): the execute stage
 * flushes it (plugin_stage.run); the wait stage's hook (plugin_stage.arm)
 * enqueues a marker whose completion callback applies the commands' device
 * times to the run's profile and signals the event, which completes the
 * stage. The wait stage is `always`: a failed or cancelled run completes
 * only once the queue drained (its copies are non-blocking). */
int gpu_stage_flush(plugin_request *r, uint32_t stage, void *ctx);
int gpu_arena_arm(void *arena, plugin_event *event);

/* The device layout ("cl"): plain row-major bytes in device memory. Its
 * conversions are the uploads and downloads. */
extern const rn_layout_ops gpu_layout_ops;

/* ---- kernels ---- */

#define GPU_MAX_IO      32
#define GPU_MAX_KERNELS 4

/* What every GPU kernel's state starts with: the device layouts of its
 * inputs and outputs, its constant inputs uploaded once, and its OpenCL
 * kernels (arguments are set and the kernel enqueued under `lock`: a
 * cl_kernel's arguments are shared by the requests that run it). */
typedef struct gpu_node {
    gpu_device *dev;
    const char *name;
    int n_in, n_out;
    rn_layout in_layout[GPU_MAX_IO], out_layout[GPU_MAX_IO];
    bool is_constant[GPU_MAX_IO]; /* a constant of the model (never converted) */
    cl_mem constant[GPU_MAX_IO];  /* its upload (NULL when it has no bytes) */
    pthread_mutex_t lock;
    int n_kernels;
    cl_kernel kernel[GPU_MAX_KERNELS];
} gpu_node;

/* Fills the common part: layouts, constant inputs uploaded (f32 and
 * integer constants alike), the OpenCL kernels named in `kernels`
 * (NULL-terminated, may be NULL). */
rn_status gpu_node_init(gpu_node *g, const rn_node *node, const char *const *kernels);
void gpu_node_release(gpu_node *g);
/* A zeroed state of `size` bytes that starts with a gpu_node, initialised
 * by gpu_node_init; nothing is left allocated on failure. */
rn_status gpu_state_new(size_t size, const rn_node *node, const char *const *kernels, void **out);
/* release for states that are a gpu_node followed by plain data. */
void gpu_state_free(void *state);

/* The layouts a gpu_node state reports (the kernels' layout hooks). */
const rn_layout *gpu_input_layout(const void *state, int index);
const rn_layout *gpu_output_layout(const void *state, int index);

/* Device memory of input i / output i / scratch: the cl_mem and the offset
 * in f32 elements (4-byte units). */
typedef struct gpu_mem {
    cl_mem mem;
    size_t off; /* in 4-byte elements */
} gpu_mem;
gpu_mem gpu_input(const gpu_node *g, const rn_kernel_args *args, int i);
gpu_mem gpu_output(const rn_kernel_args *args, int i);
gpu_mem gpu_scratch(const rn_kernel_args *args);
/* The run's arena: the one output 0 is in, or the request's when output 0
 * is a remote tensor written in place. */
gpu_arena *gpu_run_arena(const rn_kernel_args *args);
/* The queue of the run (its arena's). */
cl_command_queue gpu_queue(const rn_kernel_args *args);

/* Sets the arguments of kernel k (each a pointer and size pair, n of them)
 * and enqueues it over `global` work-items, under the node's lock. */
typedef struct gpu_arg {
    size_t size;
    const void *value;
} gpu_arg;
#define GPU_ARG(x) ((gpu_arg){sizeof(x), &(x)})
rn_status gpu_launch(gpu_node *g, const rn_kernel_args *args, int k, const gpu_arg *a, int n,
                     size_t global);

/* ---- profiling (profile.c) ---- */

/* Keeps the event (taken over) of an upload or download into arena `a`,
 * attributed to the conversion node the thread runs (plugin_running_node). */
void gpu_record_copy(gpu_arena *a, cl_event ev);
/* Keeps a kernel's event (taken over) in the run's arena. */
void gpu_record_event(const gpu_node *g, const rn_kernel_args *args, cl_event ev);
/* Around a call that enqueues commands of its own and returns one event
 * (CLBlast): a marker before it (NULL on failure), then both events kept
 * (taken over; either may be NULL). */
cl_event gpu_span_begin(const rn_kernel_args *args);
void gpu_span_end(const gpu_node *g, const rn_kernel_args *args, cl_event begin, cl_event end);
/* Once the run's commands are complete: each executed entry of `entries`
 * whose node left events gets their device time (microseconds, rounded
 * up); the events are released. */
void gpu_events_apply(gpu_arena *a, rn_profiling_info *entries, size_t count);
void gpu_events_release(gpu_arena *a);
/* An event's profiling timestamp `what` in ns, 0 when it has none. */
uint64_t gpu_event_stamp(cl_event ev, cl_profiling_info what);
/* When an entry's commands started and ended on the device (ns, 0 when
 * the timestamps are missing). */
void gpu_event_span(const gpu_event *e, uint64_t *start, uint64_t *end);

/* ---- the device's events in the trace (trace.c) ---- */

rn_status gpu_trace_new(gpu_trace **out);
void gpu_trace_free(gpu_trace *t);
/* A new arena of a traced model: its row, and its queue's clock offset. */
void gpu_trace_attach(gpu_trace *t, gpu_arena *a);
/* Copies the timestamps of the run's commands (the arena's events, before
 * they are released) into the trace. */
void gpu_trace_record(gpu_trace *t, gpu_arena *a);
/* Appends the recorded events to the plan's trace-event JSON at `path`, as
 * process `pid`, with timestamps counted from origin_ns. */
rn_status gpu_trace_append(gpu_trace *t, const char *path, uint64_t origin_ns, int pid);

/* An error naming the node and the OpenCL call that failed. */
rn_status gpu_fail(const gpu_node *g, const char *what, cl_int err);

/* supports helpers: every input and output f32 (or absent) with a static
 * shape; inputs listed in `any_type` (bit i) may have any type. */
bool gpu_static_f32(const rn_node *node, uint32_t any_type, const char **why);
/* The same for f32, i64, i32 and bool tensors (index.c). */
bool gpu_static_typed(const rn_node *node, uint32_t any_type, const char **why);

/* Up to 8 dims or strides, a kernel argument by value (program.c's idx8). */
typedef struct gpu_idx8 {
    cl_int v[8];
} gpu_idx8;

/* Activations fused or elementwise (program.c's act()). */
enum {
    GPU_ACT_NONE = 0,
    GPU_ACT_RELU,
    GPU_ACT_LEAKY_RELU,
    GPU_ACT_CLIP,
    GPU_ACT_SIGMOID,
    GPU_ACT_TANH,
    GPU_ACT_ELU,
    GPU_ACT_HARD_SIGMOID,
    GPU_ACT_GELU,
    GPU_ACT_ABS,
    GPU_ACT_NEG,
    GPU_ACT_EXP,
    GPU_ACT_LOG,
    GPU_ACT_SQRT,
    GPU_ACT_ERF,
    GPU_ACT_IDENTITY,
    GPU_ACT_RECIPROCAL,
};
/* The act() code of a unary op or activation name, -1 if none. */
int gpu_activation(const char *name);
/* The activation of a FusedConv/FusedGemm node (its `activation`
 * attribute); false with a reason when the device lacks it. */
bool gpu_fused_activation(const rn_node *node, int *act, float *a0, float *a1, const char **why);
/* Enqueues y = act(y + bias[c] + residual) over n elements of C channels of
 * `inner` elements each (bias and residual optional: mem NULL). */
rn_status gpu_bias_act(gpu_node *g, const rn_kernel_args *args, int k, gpu_mem y, gpu_mem bias,
                       gpu_mem residual, int channels, int inner, int n, int act, float a0,
                       float a1);

/* ---- remote contexts (remote.c) ---- */

/* A GPU context: one device's OpenCL context (the plugin's, or a user's
 * OCL_CONTEXT and OCL_QUEUE) and the remote tensors made in it. */
typedef struct gpu_context gpu_context;
/* Parameters: CONTEXT_TYPE (OCL), OCL_CONTEXT, OCL_QUEUE, DEVICE_ID or
 * OCL_CONTEXT_DEVICE_ID. `devices` opens the plugin's device i (a context
 * without OCL_CONTEXT is one of the plugin's devices). */
rn_status gpu_context_create(const rn_property *params, size_t n,
                             rn_status (*devices)(void *ctx, int index, gpu_device **dev),
                             void *devices_ctx, gpu_context **out);
/* A context over the plugin's device `index` (a default context). */
rn_status gpu_context_default(gpu_device *dev, int index, gpu_context **out);
void gpu_context_free(gpu_context *context);
gpu_device *gpu_context_device(const gpu_context *context);
extern const rn_remote_context_ops gpu_context_ops;
/* plugin_plan_options.remote_view: a remote tensor as device memory, when
 * it lives in the OpenCL context of `context`. */
rn_status gpu_remote_view(const struct rn_plugin_context *context, const rn_plugin_tensor *tensor,
                          rn_kernel_tensor *out);

/* Kernel families (NULL-terminated). */
extern const rn_kernel *const gpu_kernels[];

#endif /* RUNNEL_PLUGINS_GPU_GPU_H */
