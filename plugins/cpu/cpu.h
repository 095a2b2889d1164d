/* CPU: the oneDNN device. Private to plugins/cpu.
 *
 * The CPU device compiles a model into the generic plan (plugins/api/plan.h)
 * with oneDNN kernels registered ahead of REF's: every op oneDNN has runs as
 * a oneDNN primitive created at compile time; every other op runs REF's
 * kernel on plain layouts, so CPU runs every model REF runs.
 *
 * Layouts are oneDNN memory descriptors (cpu_layout): a primitive created
 * with format "any" picks the blocked layout (nChw16c, ...) and, in bf16,
 * the element type its activations are kept in; the plan inserts a
 * conversion (a oneDNN reorder) only where a producer and a consumer
 * disagree, and converts constants (weights) once at compile time. Kernels
 * that can read any layout (activations, pooling, binary ops, concat) are
 * prepared for the layout their input's producer writes.
 *
 * Threading: each stream runs its primitives in order on its one worker.
 * With the THROUGHPUT hint there is a stream per core and each primitive is
 * single-threaded; with LATENCY one stream whose primitives use an OpenMP
 * team of every core (the worker sets its team size before each primitive:
 * never more busy threads than cores). Scratchpads are the user's: the plan
 * places them in the request's arena (rn_kernel.scratch_bytes). */
#ifndef RUNNEL_PLUGINS_CPU_CPU_H
#define RUNNEL_PLUGINS_CPU_CPU_H

#include "plugins/cpu/dnnl_version.h"
#include <pthread.h>

#include "plugins/api/kernel.h"
#include "plugins/cpu/bind.h"
#include "runnel/plugin.h"

/* The CPU plugin's vtable (built in: the Core registers it at start). */
extern const rn_plugin_ops cpu_plugin_ops;

/* What kernels are prepared for: set by the plugin around building a plan
 * (and specialising one) in the thread that does it. */
typedef struct cpu_config {
    bool bf16;               /* activations and weights of convolutions and GEMMs in bf16 */
    int threads;             /* OpenMP team size of each primitive (1: single-threaded) */
    bool denormals;          /* flush denormals to zero (FTZ/DAZ) in kernels' threads */
    plugin_bind_thread bind; /* CPU_BIND_THREAD (bind.c) */
    bool winograd;           /* f32 3x3 convolutions may run Winograd (conv.c) */
} cpu_config;

void cpu_config_set(const cpu_config *config);
const cpu_config *cpu_config_get(void);

/* ---- oneDNN: engine, per-thread stream, errors ---- */

/* The process's CPU engine (created once). RN_UNSUPPORTED when oneDNN
 * cannot make one. */
rn_status cpu_engine(dnnl_engine_t *out);
/* The calling thread's stream on the engine (created on first use, freed
 * when the thread exits). */
rn_status cpu_stream(dnnl_stream_t *out);
/* The ISA oneDNN dispatches to ("avx512_core_bf16"; ONEDNN_MAX_CPU_ISA caps
 * it, and runnel's own kernels follow it), whether it is AVX-512 (BW, VL,
 * DQ) and whether bf16 primitives run natively. */
const char *cpu_isa_name(void);
bool cpu_has_avx512(void);
bool cpu_has_bf16(void);
bool cpu_has_vnni(void);
/* The device's own read-only properties (info.c): CPU_ISA, and
 * FULL_DEVICE_NAME and OPTIMIZATION_CAPABILITIES for this machine. */
extern const char *const cpu_ro_keys[];
rn_status cpu_get_property(const char *key, char *buf, size_t size);
/* Sets an error naming the node and what failed with oneDNN's status. */
rn_status cpu_error(const rn_node *node, const char *what, dnnl_status_t s);
/* What cpu_enter changed on a thread that is not a stream worker (a sync
 * request run inline in the user's thread), for cpu_leave to put back. */
typedef struct cpu_thread_state {
    bool saved;
    unsigned csr;    /* MXCSR: FTZ and DAZ */
    int max_threads; /* OpenMP's nthreads-var */
} cpu_thread_state;

/* Makes the calling thread run primitives with `threads` OpenMP threads
 * and the config's denormal mode; cpu_leave after the primitive. A stream
 * worker keeps the settings; a user's thread gets its own back. */
cpu_thread_state cpu_enter(int threads, bool denormals);
void cpu_leave(cpu_thread_state saved);
/* The calling thread's libgomp pool was released: its next team's threads
 * are new and get the denormal mode set (cpu_enter). */
void cpu_team_pool_released(void);

/* ---- team size (team.c) ---- */

/* The node's work estimated from its shapes, in multiply-adds (memory-bound
 * ops: elements touched, scaled to the same units). */
int64_t cpu_work(const rn_node *node);
/* `elements` touched by a memory-bound primitive, in cpu_work's units. */
int64_t cpu_work_elements(int64_t elements);
/* The one rule: a primitive of `work` (cpu_work's units) on a stream of
 * `threads` cores gets 1 thread when the work is too small to pay for the
 * team's fork and join, else threads. */
int cpu_team_size_work(int64_t work, int threads);
/* The OpenMP team a primitive of the node gets on a stream of `threads`
 * cores: cpu_team_size_work of the node's cpu_work. */
int cpu_team_size(const rn_node *node, int threads);
/* The team of a memory-bound primitive of its own (a layout conversion's
 * reorder, a convolution's split epilogue) over `md` on the stream's cores:
 * by the elements of md, as a node's memory-bound primitive. */
int cpu_team_size_md(const cpu_md *md);
/* Around creating a primitive descriptor or a primitive, which partition
 * their work for the calling thread's OpenMP maximum (and fix the team a
 * run forks): sets it to the node's team size on the stream's cores (1 on
 * single-core streams) and returns the previous one for cpu_team_end to
 * restore (the compiling thread is the user's). */
int cpu_team_begin(const rn_node *node);
/* The same for a team size already chosen (cpu_team_size_md). */
int cpu_team_begin_size(int team);
void cpu_team_end(int previous);
/* Branch parallelism (plugin_plan_options.branch_fork): runs fn(arg, k) on
 * `threads` threads, k = 0 the caller: an OpenMP parallel region of the
 * calling thread's team, whose primitives run single-threaded (oneDNN runs
 * a primitive called inside a parallel region on the calling thread). On
 * only with RN_CPU_BRANCHES=1 in the environment (team.c says why). */
void cpu_branch_fork(void (*fn)(void *arg, int thread), void *arg, int threads);
bool cpu_branches_enabled(void);

/* ---- layouts ---- */

typedef struct cpu_layout {
    rn_layout base; /* ops = &cpu_layout_ops, desc = &md */
    cpu_md md;
    /* How the plain tensor is read when converted into this layout (ndims
     * 0: md's dims, dense row-major): ConvTranspose's weights, whose plain
     * axes are in another order than the primitive's (cpu_layout_init_plain). */
    cpu_md plain;
    char name[64];
    /* The compiled model's stream (cpu_config at prepare): a conversion
     * into or out of this layout runs on a team of up to `threads` with
     * its denormals mode. A run's conversions read these, not the running
     * thread's cpu_config: a stream worker never had the compiling
     * thread's (its default is one thread). */
    int threads;
    bool denormals;
} cpu_layout;

extern const rn_layout_ops cpu_layout_ops;

/* The memory descriptor of a plain (dense row-major) tensor. */
rn_status cpu_plain_md(rn_element_type type, int rank, const int64_t *dims, cpu_md *md);
/* The descriptor of a tensor whose layout a primitive picks (format any). */
rn_status cpu_any_md(int rank, const int64_t *dims, dnnl_data_type_t dt, cpu_md *md);
/* oneDNN's element type for runnel's (dnnl_data_type_undef when none). */
dnnl_data_type_t cpu_dt(rn_element_type type);
/* Fills a layout from a descriptor: NULL (*out) when md is plain dense
 * row-major of `type` (no layout needed), else l (named by its format). */
void cpu_layout_init(cpu_layout *l, const cpu_md *md, rn_element_type type, const rn_layout **out);
/* Fills l as a layout always (even when md is plain) whose conversion
 * from a plain tensor reads it as `plain` (same dims as md, any strides). */
void cpu_layout_init_plain(cpu_layout *l, const cpu_md *md, const cpu_md *plain,
                           const rn_layout **out);
/* The plan's concat_dense: whether the parts, in CPU layouts, lie end to
 * end along axis in whole's layout (nChw8c along C with N = 1, every part's
 * C a multiple of the block). */
bool cpu_concat_dense(const rn_layout *whole, const rn_layout *const *parts, int n, int axis);
/* The convolutions around Concats along C that are to write a layout
 * blocked along C (concat_layout.c): CPU_ATTR_CONCAT_BLOCK, the largest
 * block (16 or 8) that divides every part's C, on the Conv and FusedConv
 * nodes that write a part or read the Concat's output (through poolings,
 * batch normalizations, ReLUs), where oneDNN's convolutions would pick
 * channels-last and the spatial work that changes kernel is small against
 * the copies saved; conv.c takes the largest block its jit kernels write.
 * A pass of the CPU's pipeline; ctx, when not NULL, points to true where
 * the model computes in native bf16, where oneDNN 2.6's brgconv picks
 * channels-last (AVX-512 bf16, AMX): then it runs on 2.6 too. */
#define CPU_ATTR_CONCAT_BLOCK "runnel_cpu_concat_block"
rn_status cpu_mark_concat_convs(graph *g, void *ctx, int *changes);
/* Whether l is a CPU layout of plain (dense row-major) `type` elements of
 * those dims: a product's bf16 output in the MatMul's own shape. */
bool cpu_layout_plain_of(const rn_layout *l, rn_element_type type, int rank, const int64_t *dims);
/* The descriptor input layout `l` stands for: its md when it is a CPU
 * layout, else the plain md of (type, rank, dims). */
rn_status cpu_input_md(const rn_layout *l, rn_element_type type, int rank, const int64_t *dims,
                       cpu_md *md);

/* ---- primitives ---- */

/* A primitive with the descriptors of its arguments. */
#define CPU_MAX_ARGS 12
typedef struct cpu_prim {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    int threads;
    bool denormals;
    plugin_bind_thread bind; /* and the stream's cores: the config's threads */
    int stream_threads;
    size_t scratch; /* user scratchpad bytes */
    uint64_t id;    /* cpu_memory_id(): keys its arguments' memory objects */
    cpu_md scratch_md;
    char impl[64]; /* oneDNN's implementation ("brgconv:avx512_core_bf16") */
    int kind;      /* cpu_team_kind, for the census (team.h) */
} cpu_prim;

/* An attribute with a user scratchpad (and post-ops `po`, may be NULL). */
rn_status cpu_attr(const rn_node *node, dnnl_post_ops_t po, dnnl_primitive_attr_t *out);
/* oneDNN's name of pd's implementation ("jit:avx2"; "" when it gives none). */
const char *cpu_pd_impl(const_dnnl_primitive_desc_t pd);
/* Creates the primitive of `pd` (taken over, also on error) for the
 * current config. */
rn_status cpu_prim_init(cpu_prim *p, const rn_node *node, dnnl_primitive_desc_t pd);
/* The same on a team of `team` threads rather than the node's (a primitive
 * of the node that does less work than the node: cpu_team_size_md). */
rn_status cpu_prim_init_team(cpu_prim *p, const rn_node *node, dnnl_primitive_desc_t pd, int team);
void cpu_prim_release(cpu_prim *p);

/* A new id for cpu_memory's keys (never 0, never reused). */
uint64_t cpu_memory_id(void);
/* The calling thread's memory object for argument `arg` of the primitive
 * (or reorder) `id` over `data` with descriptor md (the same for every call
 * with that id and arg): made on the first call, reused after. *owned: the
 * caller destroys it after the run (no per-thread table). */
dnnl_status_t cpu_memory(uint64_t id, int arg, const cpu_md *md, void *data, dnnl_memory_t *out,
                         bool *owned);

/* cpu_arg: one argument of an execution (dnnl_version.h). */
/* Runs the primitive with the arguments and the scratchpad of args. */
rn_status cpu_execute(const cpu_prim *p, const rn_kernel_args *args, const cpu_arg *a, int n);

/* The host bytes of a kernel tensor. */
static inline void *cpu_data(const rn_kernel_tensor *t)
{
    return t->data;
}

/* ---- activations as post-ops (elementwise.c) ---- */

/* Whether oneDNN has post-ops for a fused node's "activation" attribute
 * (absent: none). */
bool cpu_activation_supported(const rn_node *node);
/* The post-ops of a fused node: a sum over the output (the residual) when
 * `sum`, then its activation ("activation", "activation_params"). */
rn_status cpu_fused_post_ops(const rn_node *node, bool sum, dnnl_post_ops_t *out);

/* ---- primitives with weights (weighted.c): convolutions, GEMMs ---- */

/* The state of a convolution or a product: its primitive, the descriptors
 * of source, weights, bias and destination as the primitive chose them, and
 * their layouts. `sum` is the input added into the output (a residual), -1
 * none. */
typedef struct cpu_weighted {
    cpu_prim p;
    cpu_md src, wei, bias, dst;
    bool has_bias, matmul;
    /* A MatMul by constant [K, N] weights computed as a 1x1 convolution
     * over x viewed as [1, K, M, 1] channels-last (gemm.c): src and dst are
     * the convolution's descriptors, the plan's tensors stay plain. */
    bool conv1x1;
    int sum;
    cpu_layout src_l, wei_l, dst_l;
    const rn_layout *src_layout, *wei_layout, *dst_layout;
    /* The post-ops as a primitive of their own after p (conv.c,
     * split_epilogue): with a sum, p writes the scratch at tmp_at and epi
     * (a binary add with the activation as post-ops) adds it to the
     * residual in the output; without, epi (an eltwise) runs in place on
     * the output. epi_pd: its descriptor until cpu_weighted_prepare makes
     * epi. scratch: the bytes of scratch the node needs then. */
    dnnl_primitive_desc_t epi_pd;
    cpu_prim epi;
    size_t tmp_at, scratch;
} cpu_weighted;

/* Describes the primitive for element type dt into *pd (NULL when oneDNN
 * has no implementation). */
typedef rn_status (*cpu_weighted_desc_fn)(const rn_node *node, cpu_weighted *w, dnnl_data_type_t dt,
                                          dnnl_primitive_desc_t *pd);

/* What a convolution-like node (Conv, ConvTranspose) needs for oneDNN: an
 * f32 input of rank 3 to 5, constant weights (input 1) and bias (input 2,
 * when given). */
bool cpu_conv_like_supports(const rn_node *node, const char **why);
/* Prepares w (has_bias, matmul and sum set): the primitive in bf16 when
 * the config asks for it and the bf16 policy (transforms_keep_f32) did not
 * keep the node f32, else (or when oneDNN has none) in f32. */
rn_status cpu_weighted_prepare(const rn_node *node, cpu_weighted *w, cpu_weighted_desc_fn desc);
/* The element type a product computing in dt writes: f32 where the bf16
 * policy marked the node's output f32 (the graph's tail, a recurrence's
 * input), else dt. */
dnnl_data_type_t cpu_dst_type(const rn_node *node, dnnl_data_type_t dt);
/* Creates the primitive descriptor of an op descriptor with the node's
 * post-ops (fused ops: its activation, after the sum when sum); *pd NULL
 * when unimplemented. */
rn_status cpu_weighted_pd(const rn_node *node, const cpu_op *op, bool fused, bool sum,
                          dnnl_primitive_desc_t *pd);

/* The rn_kernel slots of a cpu_weighted state. */
void cpu_weighted_release(void *state);
const rn_layout *cpu_weighted_input_layout(const void *state, int i);
const rn_layout *cpu_weighted_output_layout(const void *state, int i);
size_t cpu_weighted_scratch(const void *state);
int cpu_weighted_inplace(const void *state);
const char *cpu_weighted_impl(const void *state);
rn_status cpu_weighted_run(rn_kernel_args *args);

#define CPU_WEIGHTED_KERNEL(name, dom, op, sup, prep)                                              \
    const rn_kernel name = {                                                                       \
        .domain = dom,                                                                             \
        .op_type = op,                                                                             \
        .impl_type = "onednn",                                                                     \
        .supports = sup,                                                                           \
        .prepare_ctx = prep,                                                                       \
        .run = cpu_weighted_run,                                                                   \
        .release = cpu_weighted_release,                                                           \
        .input_layout = cpu_weighted_input_layout,                                                 \
        .output_layout = cpu_weighted_output_layout,                                               \
        .scratch_bytes = cpu_weighted_scratch,                                                     \
        .inplace_input = cpu_weighted_inplace,                                                     \
        .impl_name = cpu_weighted_impl,                                                            \
    }

/* ---- one-input primitives (unary.c): Resize, Reduce* ---- */

/* A primitive of one source and one destination; the source is in the
 * layout the input's producer writes (else plain f32). */
typedef struct cpu_unary {
    cpu_prim p;
    cpu_md src, dst;
    cpu_layout src_l, dst_l;
    const rn_layout *src_layout, *dst_layout;
} cpu_unary;

/* Describes the op's primitive over u->src into *pd (cpu_weighted_pd with
 * no post-ops); *pd NULL when oneDNN has no implementation. */
typedef rn_status (*cpu_unary_desc_fn)(const rn_node *node, const cpu_unary *u,
                                       dnnl_primitive_desc_t *pd);

rn_status cpu_unary_prepare(const rn_node *node, const rn_kernel_ctx *ctx, cpu_unary_desc_fn desc,
                            void **state);
void cpu_unary_release(void *state);
const rn_layout *cpu_unary_input_layout(const void *state, int i);
const rn_layout *cpu_unary_output_layout(const void *state, int i);
size_t cpu_unary_scratch(const void *state);
const char *cpu_unary_impl(const void *state);
rn_status cpu_unary_run(rn_kernel_args *args);

#define CPU_UNARY_KERNEL(name, op, sup, prep)                                                      \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "onednn",                                                                     \
        .supports = sup,                                                                           \
        .prepare_ctx = prep,                                                                       \
        .run = cpu_unary_run,                                                                      \
        .release = cpu_unary_release,                                                              \
        .input_layout = cpu_unary_input_layout,                                                    \
        .output_layout = cpu_unary_output_layout,                                                  \
        .scratch_bytes = cpu_unary_scratch,                                                        \
        .impl_name = cpu_unary_impl,                                                               \
    }

/* ---- int8 (quant.c) ---- */

/* Whether the node is a MaxPool / GlobalMaxPool of a static u8 or i8
 * tensor (oneDNN pools int8 as it is). */
bool cpu_int8_max_pool(const rn_node *node);
/* The element type a pooling-like kernel reads and writes in plain
 * layouts: input 0's when it is u8 or i8, else f32. */
rn_element_type cpu_io_type(const rn_node *node);

/* ---- kernels ---- */

extern const rn_kernel *const cpu_kernels[];

/* Registers the CPU kernels, then REF's (the fallback) into r. */
rn_status cpu_register_kernels(rn_kernel_registry *r);

/* Whether every input and output of the node has a static shape. */
bool cpu_static_node(const rn_node *node, const char **why);

/* A convolution's geometry as oneDNN takes it, read once for the f32/bf16
 * and the int8 kernels: strides, dilations (oneDNN counts from 0), pads
 * (auto_pad resolved against the output shape), and the weights' dims
 * (grouped weights as [g, M/g, C/g, k...]). x and w are the node's input
 * indexes of the data and the weights. */
typedef struct cpu_conv_geometry {
    int rank, weights_rank;
    dnnl_dims_t strides, dilations, pads_begin, pads_end;
    int64_t weights_dims[RN_MAX_RANK + 1];
} cpu_conv_geometry;

rn_status cpu_conv_geometry_read(const rn_node *node, int x, int w, cpu_conv_geometry *g);

/* A first convolution (fewer than 16 input channels: an image's) whose
 * output every reader takes as the source of a Winograd convolution
 * (cpu_mark_winograd_inputs) is marked CPU_ATTR_WINOGRAD_INPUT: conv.c
 * describes it over a plain source and a destination blocked by 16, the
 * layouts the model's input and the Winograd kernel have, so that neither
 * is converted (VGG's first convolution: a 1.6 ms conversion of its output
 * at one thread, and its input's). A pass of the CPU's pipeline in f32
 * under EXECUTION_MODE_HINT PERFORMANCE; ctx unused. */
#define CPU_ATTR_WINOGRAD_INPUT "runnel_cpu_winograd_input"
rn_status cpu_mark_winograd_inputs(graph *g, void *ctx, int *changes);
/* Whether the convolution node (static, f32) would run oneDNN's Winograd
 * kernel here, and one that pays on a team of any size (conv.c: the 4x3
 * kernel; the passes run before the team sizes are known). */
bool cpu_conv_takes_winograd(const rn_node *node);

/* Whether f32 3x3 convolutions may run oneDNN's Winograd kernels (conv.c):
 * `performance` is EXECUTION_MODE_HINT PERFORMANCE (ACCURACY keeps the
 * direct ones); RN_CPU_WINOGRAD=0 in the environment at compile time keeps
 * them too (an A/B switch). */
bool cpu_winograd_enabled(bool performance);

#endif /* RUNNEL_PLUGINS_CPU_CPU_H */
