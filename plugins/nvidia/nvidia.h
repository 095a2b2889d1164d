/* The NVIDIA device's internal API (plugins/nvidia/, docs/nvidia.md).
 *
 * The plugin claims the whole transformed model as one partition of the
 * generic plan and lowers it to a `nv_program`: a list of steps (a cuDNN
 * convolution with its bias, residual and activation fused, a cuBLAS GEMM, a
 * cuDNN pooling, one of runnel's own CUDA kernels, ...) over values placed
 * by a static memory plan in one device arena per request slot. Lowering
 * (nv_lower, program.c) and op support (nv_supports, support.c) are plain C
 * and need no GPU; compiling a program for the device (exec.c) uploads the
 * weights once, builds the cuDNN execution plans chosen by heuristics and
 * sizes their workspace; a run takes a slot (arena, stream, cuDNN and cuBLAS
 * handles, pinned staging), queues upload, the steps and download on the
 * slot's stream and waits for its event. */
#ifndef RUNNEL_PLUGINS_NVIDIA_NVIDIA_H
#define RUNNEL_PLUGINS_NVIDIA_NVIDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/api/device.h"
#include "plugins/api/kernel.h"
#include "plugins/api/properties.h"
#include "plugins/nvidia/kernels.h"
#include "runnel/plugin.h"

extern const rn_plugin_ops nvidia_plugin_ops;

/* ---- the device (device.c) ---- */

typedef struct nv_device_info {
    int device_id;
    char name[256];
    int cc_major, cc_minor;
    size_t total_memory;
    int sm_count;
    int runtime_version;  /* cudaRuntimeGetVersion: 13000 */
    int driver_version;   /* cudaDriverGetVersion */
    size_t cudnn_version; /* cudnnGetVersion: 91900 */
    int cublas_version;   /* cublasGetProperty: 130100 */
} nv_device_info;

/* The oldest cuDNN the device runs on (9.0: the backend graph API with
 * runtime fusion as used here). */
#define NV_CUDNN_MIN_VERSION 90000

/* Why CUDA cannot start, from cudaGetDeviceCount's error code (cudaError_t)
 * and the device count: NULL when it can. "no CUDA driver" for a missing or
 * stub driver (cudaErrorInsufficientDriver, cudaErrorStubLibrary,
 * cudaErrorNoDevice on a machine without the kernel module, ...), "no CUDA
 * device" when the driver runs but there is no device. */
const char *nv_start_problem(int cuda_error, int device_count);

/* RN_OK, or RN_DEVICE_ERROR "cuDNN 8.9 older than required 9.0" for a
 * cudnnGetVersion value below NV_CUDNN_MIN_VERSION. */
rn_status nv_check_cudnn_version(size_t version);

/* "13.0" from 13000 (CUDA's major*1000 + minor*10); "9.19.0" from
 * cuDNN's major*10000 + minor*100 + patch; "13.1.0" from cuBLAS's
 * major*10000 + minor*100 + patch. */
void nv_format_cuda_version(int version, char *buf, size_t size);
void nv_format_cudnn_version(size_t version, char *buf, size_t size);

/* DEVICE_ARCHITECTURE: "sm_90" for compute capability 9.0. */
void nv_format_architecture(int major, int minor, char *buf, size_t size);

/* Tensor cores (f16 by default, as OpenVINO's GPU plugin): Volta and later. */
bool nv_has_tensor_cores(int cc_major);
/* bf16 (cuDNN, cuBLAS and WMMA's bf16 tensor-core paths): Ampere (compute
 * capability 8.0) and later. */
bool nv_has_bf16(int cc_major);

/* Reads device `device_id` (the plugin's create: fails with the reason). */
rn_status nv_device_probe(int device_id, nv_device_info *out);

/* ---- the program (program.c, support.c) ---- */

typedef enum nv_step_kind {
    NV_STEP_CONVERT,     /* element type conversion (f32 <-> f16 or bf16) */
    NV_STEP_CONV,        /* cuDNN convolution + bias (+ residual) (+ activation) */
    NV_STEP_GEMM,        /* cuBLAS: Gemm / MatMul (batched, broadcast), + bias (+ act) */
    NV_STEP_POOL,        /* cuDNN pooling: MaxPool, AveragePool, Global* */
    NV_STEP_LRN,         /* cuDNN cross-channel LRN (runnel's kernel in bf16) */
    NV_STEP_SOFTMAX,     /* cuDNN softmax over the last axis */
    NV_STEP_UNARY,       /* runnel kernel: elementwise activation */
    NV_STEP_BINARY,      /* runnel kernel: broadcast Add, Sub, Mul, Div, Pow, Sum of 2 */
    NV_STEP_CONCAT,      /* 2D copies (cudaMemcpy2DAsync) */
    NV_STEP_TRANSPOSE,   /* runnel kernel */
    NV_STEP_LAYERNORM,   /* runnel kernel, last axis (in[3]: a residual added first) */
    NV_STEP_GATHER,      /* runnel kernel */
    NV_STEP_REDUCE_MEAN, /* runnel kernel, last axis */
    NV_STEP_BATCHNORM,   /* runnel kernel: inference BatchNormalization (+ act) */
    NV_STEP_ATTENTION,   /* runnel kernel: fused scaled dot-product attention */
    /* the same as cuBLAS's Q K^T, runnel's masked softmax, cuBLAS's P V */
    NV_STEP_BLAS_ATTENTION,
} nv_step_kind;
#define NV_STEP_KINDS (NV_STEP_BLAS_ATTENTION + 1)

/* Activations fused into a step or run by NV_STEP_UNARY (the numbers are
 * the CUDA kernels', plugins/nvidia/kernels.h). */
typedef enum nv_act {
    NV_ACT_NONE = 0,
    NV_ACT_RELU,
    NV_ACT_SIGMOID,
    NV_ACT_TANH,
    NV_ACT_LEAKY_RELU, /* alpha */
    NV_ACT_CLIP,       /* alpha = min, beta = max */
    NV_ACT_GELU,       /* erf form */
    NV_ACT_GELU_TANH,
    NV_ACT_ERF,
    NV_ACT_SQRT,
    NV_ACT_EXP,
    NV_ACT_NEG,
    NV_ACT_ABS,
    NV_ACT_RECIPROCAL,
    NV_ACT_IDENTITY, /* a copy (Identity that is not a view) */
    NV_ACT_COUNT
} nv_act;

typedef enum nv_binary_op {
    NV_BIN_ADD = 0,
    NV_BIN_SUB,
    NV_BIN_MUL,
    NV_BIN_DIV,
    NV_BIN_POW,
    NV_BIN_MAX,
    NV_BIN_MIN,
    NV_BIN_COUNT
} nv_binary_op;

/* Where a value's bytes are. */
typedef enum nv_storage {
    NV_ARENA, /* the slot's arena at `offset` */
    NV_CONST, /* a constant: its own device copy (weights.c), shared by the model's programs */
} nv_storage;

typedef struct nv_value {
    char *name;
    rn_element_type type; /* on the device (the program's compute type for f32 values) */
    rn_element_type host_type;
    int rank;
    int64_t dims[RN_MAX_RANK];
    size_t count, nbytes;
    nv_storage storage;
    size_t offset;
    int root;              /* a view's (Reshape, Flatten, ...) value, else itself */
    int first, last;       /* steps that write it first and read it last */
    const void *host_data; /* NV_CONST: the constant (host type), the graph's */
    int input, output;     /* index among the partition's inputs / outputs, or -1 */
    /* A rank-4 value (dims N, C, H, W) stored channels-last (NHWC): f16 and
     * bf16 convolutions and what runs between them (choose_layouts); a
     * convolution's weights then are KRSC. */
    bool nhwc;
} nv_value;

#define NV_MAX_STEP_IN 8

typedef struct nv_step {
    nv_step_kind kind;
    const char *node; /* the node's name, for messages (the plan's graph) */
    const char *op;
    int in[NV_MAX_STEP_IN];
    int n_in;
    int out;
    nv_act act;
    float alpha, beta;
    /* CONV: 2D (or 1D as 2D) */
    int64_t pads[4], strides[2], dilations[2], group;
    /* GEMM: y[b] = alpha * op(A[b]) op(B[b]) + beta * C */
    int64_t m, n, k, batch, a_batch_stride, b_batch_stride;
    bool trans_a, trans_b;
    float gemm_alpha, gemm_beta; /* beta 0: no C */
    /* GEMM: C (in[2]) is a bias row added with the activation after the
     * product, one pass (an activation folded into a biased Gemm). */
    bool bias_after;
    /* POOL: kind 0 max, 1 avg (count_include_pad in `flag`) */
    int pool_mode;
    int64_t kernel[2];
    bool flag;
    /* LRN size; SOFTMAX/LAYERNORM/REDUCE_MEAN rows x cols; GATHER
     * outer x axis_dim x inner with n_idx indices; CONCAT axis;
     * TRANSPOSE perm; BINARY op; CONVERT: nothing. */
    int64_t size, rows, cols, outer, axis_dim, inner, n_idx;
    int axis;
    int64_t perm[RN_MAX_RANK];
    nv_binary_op bin;
    float epsilon;
    /* ATTENTION: in = Q, K, V[, mask]; BLAS_ATTENTION: in = Q, K, V, mask
     * (-1: none), the scores [B, H, Sq, Sk] (a scratch value of the
     * device's type, live during the step only). The geometry and strides,
     * and whether the output is written [B, S, H, D] (the Transpose after it
     * a view). */
    nvk_attention_args att;
    bool att_out_bshd;
    void *device; /* what exec.c prepared (a cuDNN plan, descriptors) */
} nv_step;

typedef struct nv_program {
    nv_value *values;
    int n_values;
    nv_step *steps;
    int n_steps;
    /* The partition's inputs and outputs: value index per port, and where
     * their host-typed bytes sit in the arena (for the copies) and in the
     * pinned staging buffer. */
    int n_inputs, n_outputs;
    int *input_value, *output_value;
    size_t *input_stage, *output_stage; /* arena offsets of the host-typed copies */
    size_t *input_pinned, *output_pinned;
    size_t arena_bytes;   /* values + staging, before the workspace */
    size_t weights_bytes; /* constants on the device */
    size_t pinned_bytes;
    /* What f32 values are computed in on the device: RN_F32, RN_F16 or
     * RN_BF16 (INFERENCE_PRECISION_HINT); f32 accumulation in every one. */
    rn_element_type compute;
} nv_program;

/* Whether NVIDIA runs `node` (op, types, attributes, static shapes); on
 * false *why says what it lacks. Pure: used by nv_lower. */
bool nv_supports(const rn_node *node, const char **why);
/* The same with dynamic dims accepted (known ranks): the registry that
 * answers query_model, since a run's plan is specialised for its input
 * shapes before it is lowered. */
bool nv_supports_op(const rn_node *node, const char **why);

/* The ops nv_supports knows (domain, op_type), NULL-terminated pairs. */
extern const char *const nv_supported_ops[][2];

/* Lowers the partition (the plugin claims every node of the transformed
 * model: nodes in topological order, the names of the values it reads from
 * outside, constants included, and of those it produces) to a program with
 * its memory plan. `precision`: what f32 values are computed in (RN_F16 or
 * RN_BF16: converted at the inputs and outputs; any other type: f32). A
 * node NVIDIA does not run is RN_UNSUPPORTED naming it, its op and why. */
rn_status nv_lower(const rn_node *const *nodes, int n_nodes, const char *const *input_names,
                   int n_inputs, const char *const *output_names, int n_outputs,
                   rn_element_type precision, nv_program **out);
/* nv_lower with channels-last layouts chosen or not (nv_lower: chosen). */
rn_status nv_lower_layouts(const rn_node *const *nodes, int n_nodes, const char *const *input_names,
                           int n_inputs, const char *const *output_names, int n_outputs,
                           rn_element_type precision, bool channels_last, nv_program **out);
/* Whether a value of p is stored channels-last. */
bool nv_program_channels_last(const nv_program *p);
void nv_program_free(nv_program *p);

/* The model as NVIDIA compiles it (a clone): the generic device's
 * transform (plugin_device_transform) with constant folding on `ref`'s
 * kernels and NVIDIA's fusions (nv_add_passes), shapes inferred. */
rn_status nv_transform(const rn_graph *model, const plugin_kernel_registry *ref,
                       const plugin_properties *props, rn_graph **out);
/* plugin_device_iface.add_passes: NVIDIA's fusions. */
rn_status nv_add_passes(void *context, transforms_pipeline *tp, const plugin_properties *props);
/* The NVIDIA device's descriptor (plugin.c). */
extern const plugin_device_iface nv_device_iface;
/* nv_lower over a whole graph, read with the rn_graph accessors: every
 * node, the parameters and constants they read as inputs (each once, in
 * the order first read), its results as outputs. */
rn_status nv_lower_graph(const rn_graph *g, rn_element_type precision, nv_program **out);
/* plugin_device_iface.check_specialized: the graph of a model with dynamic
 * inputs as a run with every dynamic dim 1 specialises it
 * (plugin_specialize_at_one) lowers; else the lowering's error (the node,
 * its op, why), saying so. Needs no device. */
rn_status nv_check_lowering(const rn_graph *g, rn_element_type precision);

/* f32 values as the 16-bit type `type` (RN_F16 or RN_BF16), rounded to
 * nearest even (plugin_f32_to_f16 / plugin_f32_to_bf16, as the device's
 * conversions round): how weights are uploaded (weights.c). */
void nv_round_to(rn_element_type type, const float *x, uint16_t *y, size_t n);
/* The identity of constant `v` (an NV_CONST value of a program) in a
 * compiled model whose plan's graph is `base`: the data of base's constant
 * of that name (rn_graph_constant) when the bytes are the same, else NULL
 * (a constant folded for one shape). A specialised plan's graph is a clone
 * of base whose constants are copies, so the host pointer alone would not
 * say that two programs hold the same weight. */
const void *nv_weight_identity(const rn_graph *base, const nv_value *v);

/* Element strides of a value over its logical dims, for its layout
 * (NHWC values: {H*W*C, 1, W*C, C}). */
void nv_value_strides(const nv_value *v, int64_t *strides);

/* Merges the dims of a broadcast that one index can walk (contiguous or
 * broadcast in both operands) and drops dims of one: the new rank. */
int nv_collapse_broadcast(nvk_broadcast *b);
/* The same for a Transpose's output dims and permuted input strides; when
 * the innermost dim is read contiguously its runs become wider elements
 * (*esize 8 or 16 bytes). The new rank. */
int nv_collapse_transpose(int *esize, int rank, int64_t *dims, int64_t *strides);

/* One cuBLAS strided batched GEMM of an attention (cublasGemmStridedBatchedEx
 * in cuBLAS's column-major terms): `calls` calls, call c on the operands
 * moved c * step_* elements, each of `count` products C = alpha op(A)
 * op(B), matrix j of an operand stride_* elements after matrix 0. */
typedef struct nv_blas_gemm {
    bool swap;             /* cuBLAS's A is the right operand (C^T = Y^T X^T), B the left */
    bool trans_a, trans_b; /* CUBLAS_OP_T, else CUBLAS_OP_N */
    int m, n, k, lda, ldb, ldc;
    int count, calls;
    int64_t stride_a, stride_b, stride_c;
    int64_t step_a, step_b, step_c;
    float alpha;
} nv_blas_gemm;

/* The two products of a BLAS_ATTENTION step: [0] scores = scale Q K^T
 * (left Q, right K^T, C the scores [B, H, Sq, Sk] contiguous), [1] out =
 * P V (left the scores, right V, C the output with a->o_strides). False
 * when an operand has no unit stride over its rows or features (or a size
 * beyond cuBLAS's int): no GEMM reads it in place. Pure: needs no GPU. */
bool nv_attention_blas_plan(const nvk_attention_args *a, nv_blas_gemm out[2]);

/* Steps of a kind, for tests and the runtime model. */
int nv_program_count(const nv_program *p, nv_step_kind kind);
const char *nv_step_kind_name(nv_step_kind kind);

/* ---- cuDNN descriptors that need no device (cudnn_graph.c) ---- */

typedef struct nv_conv_graph nv_conv_graph;

/* Builds the backend descriptors of a fused convolution step (tensors, the
 * convolution, the pointwise bias / residual / activation and their
 * operations); `fused` false builds the convolution alone. Needs no
 * device. */
rn_status nv_conv_graph_create(const nv_program *p, const nv_step *s, bool fused,
                               nv_conv_graph **out);
/* Operations of the graph (1 to 4), for tests. */
int nv_conv_graph_ops(const nv_conv_graph *g);
/* What cuDNN's heuristics see of the graph, NV_CONV_KEY values: the data
 * type, X, W and Y dims and layouts, pads, strides, dilations, and the fused
 * bias, residual and activation (mode and clip). Two graphs of equal keys
 * get the same candidates in the same order, so a tuned choice holds for
 * both. Needs no device. */
#define NV_CONV_KEY 28
const int64_t *nv_conv_graph_key(const nv_conv_graph *g);
typedef struct nv_tuner nv_tuner;
/* Builds the operation graph on `handle` (a cudnnHandle_t), asks the
 * heuristics (mode A, then the fallback list where mode A gives none) for
 * engine configurations and keeps the first whose execution plan finalises
 * (skipping TF32 engines unless allow_tf32, and runtime-compiled ones for a
 * channels-last graph): *workspace its bytes. With a tuner
 * (NVIDIA_AUTOTUNE) it finalises up to NV_TUNE_MAX_CANDIDATES that pass the
 * same filters, times each on the tuner's scratch and keeps the fastest
 * (the first where timing fails or the tuner's budget is spent). Needs the
 * device. */
rn_status nv_conv_graph_plan(nv_conv_graph *g, void *handle, bool allow_tf32, nv_tuner *tuner,
                             size_t *workspace);
/* The chosen engine, for the runtime model and NVIDIA_CONV_ENGINES
 * ("engine 3", "engine 12 (tuned: 0.41 of the first's time, 8 timed)"). */
const char *nv_conv_graph_engine(const nv_conv_graph *g);
/* Device bytes of the graph's operands (X, W, Y, and the bias and residual
 * when fused), each rounded up to 256: what timing a candidate needs
 * beside its workspace. Needs no device. */
size_t nv_conv_graph_operand_bytes(const nv_conv_graph *g);

/* ---- NVIDIA_AUTOTUNE (autotune.c) ---- */

/* Bounds of tuning, documented in docs/nvidia.md: candidates finalised and
 * timed per convolution graph, timed runs of each after one warm-up (the
 * minimum counts), a candidate whose warm-up is over NV_TUNE_SLOW times the
 * best so far is not run again, the wall time one program may spend tuning
 * (finalising candidates and timing them, checked before each candidate
 * after a graph's first: one candidate may overrun it; later graphs then
 * take the heuristic's first), and the workspace a candidate may ask beyond the
 * first's (every request slot holds the largest). */
#define NV_TUNE_MAX_CANDIDATES      8
#define NV_TUNE_RUNS                5
#define NV_TUNE_SLOW                4.0f
#define NV_TUNE_BUDGET_MS           10000.0
#define NV_TUNE_MAX_EXTRA_WORKSPACE ((size_t)64 << 20)

/* A tuned graph's choice: its key, the rank of the kept candidate among
 * those finalised, the first's and the kept one's time (ms; the first's
 * <= 0 when it failed). */
typedef struct nv_tune_record {
    int64_t key[NV_CONV_KEY];
    int rank;
    float first_ms, best_ms;
} nv_tune_record;

/* Tuned choices by graph key: a program's (its tuner's), a compiled
 * model's (every program's, and what an imported blob held). */
typedef struct nv_tune_table {
    nv_tune_record *records;
    int n, cap;
} nv_tune_table;

/* A program's tuning: scratch on the device for one graph's operands and
 * workspace (grown as needed), two CUDA events, the budget, the choices
 * made (a graph of a key tuned before takes the same rank untimed: ResNet-50
 * has 53 convolutions of 24 keys) and what was done (for
 * NVIDIA_CONV_ENGINES). */
struct nv_tuner {
    void *scratch; /* device */
    size_t scratch_bytes;
    void *start, *stop; /* cudaEvent_t */
    double budget_ms, spent_ms;
    int graphs;          /* graphs planned with the tuner */
    int tuned;           /* graphs with two or more candidates timed */
    int changed;         /* graphs whose engine is not the heuristic's first (timed or reused) */
    int failed;          /* graphs whose timings all failed: the first kept */
    int over_budget;     /* graphs that took the first because the budget was spent */
    int timed;           /* candidates timed */
    int reused;          /* graphs that took the choice of an earlier graph of their key */
    nv_tune_table table; /* the choices made, and those it was seeded with */
    double first_ms, best_ms; /* sums over the tuned graphs: the first's, the kept one's */
};

/* A tuner with `budget_ms` of tuning time (NV_TUNE_BUDGET_MS): the events
 * made, no scratch yet. Needs the device. */
rn_status nv_tuner_create(double budget_ms, nv_tuner **out);
/* At least `bytes` of device scratch in *scratch (the tuner's, valid until
 * the next call or the free). */
rn_status nv_tuner_reserve(nv_tuner *t, size_t bytes, void **scratch);
void nv_tuner_free(nv_tuner *t);
/* The choice made for a graph of `key` (NV_CONV_KEY values), or NULL. */
const nv_tune_record *nv_tune_find(const nv_tune_table *t, const int64_t *key);
/* Records a graph's choice unless its key has one (nothing when memory runs
 * out: the next graph of the key is timed again). */
void nv_tune_remember(nv_tune_table *t, const int64_t *key, int rank, float first_ms,
                      float best_ms);
/* Remembers every choice of `from` (nv_tune_remember). */
void nv_tune_merge(nv_tune_table *t, const nv_tune_table *from);
void nv_tune_table_release(nv_tune_table *t);
/* The choices as text for a compiled blob (NVIDIA_TUNED): "nvtune1
 * cudnn=91900 tf32=0" and " K0,...,K27:RANK:FIRST_MS:BEST_MS" per record,
 * in *text (malloc'ed). */
rn_status nv_tune_format(const nv_tune_table *t, size_t cudnn_version, bool allow_tf32,
                         char **text);
/* Reads nv_tune_format's text into *t (empty first). Text of another cuDNN
 * version or TF32 setting (whose candidates may differ), or malformed, adds
 * nothing: those graphs are tuned again. False when it added nothing. */
bool nv_tune_parse(const char *text, size_t cudnn_version, bool allow_tf32, nv_tune_table *t);

/* Pure, needing no device: */
/* How many candidates to finalise for the next graph: NV_TUNE_MAX_CANDIDATES,
 * or 1 (the heuristic's first, as untuned) once spent_ms reaches budget_ms. */
int nv_tune_cap(double spent_ms, double budget_ms);
/* The fastest of n timings in ms (one that failed is <= 0 or not finite),
 * ties to the earlier (the heuristic's order); -1 when every one failed. */
int nv_tune_pick(const float *ms, int n);
/* The minimum of n run times (ms), or -1 when one failed (<= 0 or not
 * finite) or n is 0. */
float nv_tune_min(const float *runs, int n);
/* The engine's label: "engine 12" ("(fallback)" from the fallback list);
 * after timing n candidates (ms[0] the heuristic's first, `best` the kept
 * one: nv_tune_pick, -1 when every timing failed) "engine 12 (tuned: 0.41
 * of the first's time, 8 timed)", "(tuned: the first, 8 timed)" or
 * "(tuning failed: the heuristic's first)". */
void nv_tune_label(char *buf, size_t size, long long engine, bool fallback, const float *ms, int n,
                   int best);
/* The label of a graph that took record r's choice (`same`: the candidate
 * of r's rank was there; else the first was kept): "engine 12 (tuned as
 * an earlier graph of its shapes: 0.41 of the first's time)". */
void nv_tune_label_again(char *buf, size_t size, long long engine, bool fallback,
                         const nv_tune_record *r, bool same);
/* An execution plan of the chosen engine on another handle (a request
 * slot's): no heuristics, the same kernels. */
rn_status nv_conv_plan_create(const nv_conv_graph *g, void *handle, void **plan);
void nv_conv_plan_free(void *plan);
/* Runs `plan` (NULL: the compile-time one) on `handle` (whose stream is
 * set). x, w, y, bias, residual device pointers (bias / residual NULL when
 * absent). */
rn_status nv_conv_graph_execute(nv_conv_graph *g, void *handle, void *plan, void *x, void *w,
                                void *y, void *bias, void *residual, void *workspace);
void nv_conv_graph_free(nv_conv_graph *g);

/* ---- device properties (properties.c) ---- */

/* NVIDIA's own properties (rows of nv_property_keys). */
typedef struct nv_own {
    bool allow_tf32;    /* NVIDIA_ALLOW_TF32: f32 GEMMs/convs may use TF32 */
    bool cuda_graph;    /* NVIDIA_CUDA_GRAPH: a CUDA graph per slot after a warm-up run */
    uint32_t max_slots; /* NVIDIA_MAX_SLOTS: request slots (arenas) per compiled model */
    bool step_timing;   /* NVIDIA_STEP_TIMING: events between steps (LIVE) */
    bool autotune;      /* NVIDIA_AUTOTUNE: time cuDNN's candidate engines at compile */
    /* NVIDIA_ASYNC_STAGES: the wait and the copy-out as device stages of
     * the DAG (exec.h, nv_exec_plan_stages) rather than a blocking sync
     * inside the program's node. */
    bool async_stages;
} nv_own;

#define NV_N_PROPERTY_KEYS 6
extern const plugin_property_def nv_property_keys[NV_N_PROPERTY_KEYS];

/* The shared and own values together, as a device holds them. */
typedef struct nv_properties {
    plugin_properties base;
    nv_own own;
} nv_properties;

/* The defaults of a device of compute capability `cc_major`.x: f16 where
 * it has tensor cores, else f32. */
void nv_properties_default(nv_properties *p, int cc_major);
/* The shared values' precisions: f32 and f16 accepted, bf16 too from
 * compute capability 8.0 (INFERENCE_PRECISION_HINT=bf16 elsewhere is
 * RN_INVALID_ARG naming the values accepted); f16 by default with tensor
 * cores, else f32. */
void nv_precision_defaults(plugin_properties *p, int cc_major);
/* Applies properties (NVIDIA's and the shared ones): the first bad one is
 * RN_INVALID_ARG naming it, and `p` is unchanged. */
rn_status nv_properties_apply(nv_properties *p, const rn_property *props, size_t n);
/* Reads one of NVIDIA's keys or a shared read-write one; RN_NOT_FOUND for
 * others. */
rn_status nv_properties_get(const nv_properties *p, const char *key, char *buf, size_t size);

/* Read-only device properties (FULL_DEVICE_NAME, DEVICE_ARCHITECTURE
 * "sm_90", NVIDIA_CUDA_VERSION "13.0", NVIDIA_CUDNN_VERSION "9.19.0", ...)
 * from what the probe read; RN_NOT_FOUND (no message) for other keys. */
rn_status nv_device_property(const nv_device_info *d, const char *key, char *buf, size_t size);
/* Its own read-only keys (the shared ones it answers are the table's). */
extern const char *const nv_device_keys[];

#endif /* RUNNEL_PLUGINS_NVIDIA_NVIDIA_H */
