/* The pass manager and the graph passes a plugin runs at compile time.
 *
 * A pipeline is an ordered list of named passes. Each pass rewrites a graph in
 * place and counts what it changed; a pass registered with TRANSFORMS_REPEAT
 * runs again until it changes nothing (a fixed point). Passes are enabled or
 * disabled by name, one at a time or with a configuration string, so a plugin
 * (or a user property) can switch a pass off without rebuilding the list.
 *
 * Every node a pass creates or merges carries, in fused_names, the union of
 * the original names it stands for, so query_model and the runtime model can
 * always name the original layers. Nodes that disappear without a successor
 * (an Identity reading a parameter, a node folded into a constant) leave no
 * node behind: a name that no node of the transformed graph carries was
 * optimized away.
 *
 * Passes use only graph/ (no device): constant folding evaluates nodes through
 * a callback the plugin supplies. Everything here is single-threaded.
 */
#ifndef RUNNEL_TRANSFORMS_TRANSFORMS_H
#define RUNNEL_TRANSFORMS_TRANSFORMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kit.h"
#include "graph/graph.h"

/* ---- passes ---- */

/* A pass. Contract: `g` is topologically sorted on entry (graph_sort) and is
 * sorted again on return; *changes is the number of rewrites it made (0: the
 * graph is unchanged). `ctx` is what was registered with the pass. A pass
 * leaves the graph structurally valid, and values it creates carry their
 * element type and shape where inference can tell them. On an error (out of
 * memory, a preprocessing description that does not fit the model) the graph
 * may be partly rewritten: callers run passes on a clone (compile clones the
 * model) and drop it on error. A pass never fails because it meets an op it
 * does not know: it leaves such nodes alone. */
typedef rn_status (*transforms_pass_fn)(graph *g, void *ctx, int *changes);

/* Removes every Identity node (default domain). Readers of its output read its
 * input instead. When the output is a graph result, the producer of the input
 * is rewired to write the result directly (so the result keeps its name); an
 * Identity between a parameter or constant and a result stays. The removed
 * node's fused names move to the producer of its input. ctx: unused. */
rn_status transforms_remove_identity(graph *g, void *ctx, int *changes);

/* Relu(Relu(x)) -> Relu(x) where the first Relu has no other reader (the
 * template plugin's ReluReluFusion). The second Relu stays, reads x and
 * carries both nodes' fused names; the first is removed. ctx: unused. */
rn_status transforms_fuse_relu_relu(graph *g, void *ctx, int *changes);

/* Div(a, b) -> Mul(a, Pow(b, -1)) for floating-point a and b (the template
 * plugin's DecomposeDivide; integer division is left alone, as are the
 * opset < 7 forms with legacy broadcast attributes). The Mul keeps the Div's
 * name and output; the Pow is named "<div>/reciprocal"; both carry the Div's
 * fused names. Off in the default pipeline (see docs/transforms.md).
 * ctx: unused. */
rn_status transforms_decompose_divide(graph *g, void *ctx, int *changes);

/* Evaluates one node whose inputs are all known, for constant folding.
 * inputs[i] describes input i (type RN_UNDEFINED and data NULL for an omitted
 * optional input); outputs[i] arrives zeroed and, on RN_OK, each present
 * output (node->outputs[i] != NULL) must be an owned tensor (malloc'ed data,
 * released with graph_tensor_release) of its computed type and shape. On an
 * error the evaluator leaves nothing allocated. RN_UNSUPPORTED or
 * RN_NOT_IMPLEMENTED mean "cannot evaluate this node" and the node is simply
 * not folded; any other error stops the pass. */
typedef rn_status (*transforms_const_eval_fn)(const graph_node *node, const graph_tensor *inputs,
                                              graph_tensor *outputs, void *ctx);

/* Default bound on one folded tensor: 64 MiB. */
#define TRANSFORMS_FOLD_MAX_BYTES_DEFAULT ((size_t)64 << 20)

typedef struct transforms_fold_options {
    transforms_const_eval_fn eval; /* NULL: fold only Shape and Size */
    void *eval_ctx;                /* passed to eval */
    /* A node whose output would be larger than this (in bytes) is not folded,
     * which bounds the memory compilation takes. 0: the default. */
    size_t max_tensor_bytes;
} transforms_fold_options;

/* Replaces nodes whose inputs are all constants by constant values holding
 * their outputs (the output values keep their names). Shape and Size of a
 * value of static shape fold without an evaluator; every other op folds only
 * through opts->eval. Never folded: nodes with subgraphs, random and dropout
 * ops, outputs over the size bound. Folding runs in topological order, so
 * chains of constant nodes fold in one run. ctx: a transforms_fold_options
 * (borrowed), or NULL for Shape/Size only. */
rn_status transforms_fold_constants(graph *g, void *ctx, int *changes);

/* Removes nodes whose outputs reach no result and values nothing uses
 * (graph_prune); *changes counts removed nodes and values. ctx: unused. */
RN_KIT rn_status transforms_eliminate_dead_nodes(graph *g, void *ctx, int *changes);

/* ---- preprocessing ---- */

/* Pre-processing declared on one model input: what the user will feed and
 * how it becomes what the model expects. Steps, in this order, each only when
 * asked for: Cast to the model's element type, Sub mean, Div scale (both per
 * channel, in the model's element type, which must then be floating point),
 * Transpose from the user's layout to the model's. */
typedef struct transforms_input_preprocess {
    const char *name;     /* the parameter (graph input) it applies to */
    rn_element_type type; /* element type the user feeds; RN_UNDEFINED: the model's */
    /* Layout the user feeds, one letter per dim ("NHWC"); NULL: the model's. */
    const char *layout;
    /* The model's layout; NULL: derived from `layout` as N, C, then the other
     * letters in their order ("NHWC" -> "NCHW"). Same letters as `layout`. */
    const char *model_layout;
    /* Per-channel mean (subtracted) and scale (divided by): 0 values: none;
     * 1: every channel; C: one per channel. The channel axis is 'C' of
     * `layout` (or of the model's layout, or axis 1 without layouts). */
    int n_mean;
    const float *mean;
    int n_scale;
    const float *scale;
} transforms_input_preprocess;

/* Post-processing declared on one model output: the element type the user
 * receives (a Cast after the result; the result keeps its name). */
typedef struct transforms_output_postprocess {
    const char *name;     /* the result (graph output) it applies to */
    rn_element_type type; /* element type the user receives */
} transforms_output_postprocess;

/* Everything declared on a model. Borrowed by the pass: it must outlive the
 * pipeline runs that use it. */
typedef struct transforms_preprocess {
    int n_inputs;
    const transforms_input_preprocess *inputs;
    int n_outputs;
    const transforms_output_postprocess *outputs;
} transforms_preprocess;

/* Inserts the declared pre- and post-processing as graph nodes, so that a
 * plugin sees one graph: the parameter keeps its name but takes the element
 * type and shape the user feeds (Cast / Sub / Div / Transpose nodes named
 * "<input>/convert_element_type", "/mean", "/scale", "/convert_layout"
 * follow it), and a result takes the element type the user receives (a Cast
 * named "<output>/convert_element_type" writes it). The whole description is
 * checked before the graph is touched: an unknown input or output, a layout
 * that does not match the rank or the model's layout, a mean or scale count
 * that is not 1 or the channel count, a zero scale, or mean/scale on a
 * non-floating model input is RN_INVALID_ARG naming it. Not idempotent: run
 * it once per graph. ctx: a transforms_preprocess (borrowed); NULL: nothing. */
rn_status transforms_add_preprocessing(graph *g, void *ctx, int *changes);

/* Common subexpression elimination (transforms/merge_duplicates.c; off the
 * default pipeline: the CPU device adds it before its fusions). A node of
 * the default domain that reads the same inputs as an earlier node of the
 * same op type, opset and attributes is dropped and its readers read the
 * earlier node's outputs, which carries both nodes' fused names. Inputs are
 * the same when they are one value, or constants of one element type and
 * shape with equal bytes. Left alone: random ops and Dropout, nodes with
 * subgraphs or without inputs, and nodes that write a result. One run in
 * topological order reaches the fixed point (chains of duplicates go
 * together). ctx: unused. */
RN_KIT rn_status transforms_merge_duplicates(graph *g, void *ctx, int *changes);

/* Fusions for devices that run a convolution or a GEMM with its epilogue
 * as one primitive (transforms/fuse_conv.c; off the default pipeline: a
 * device adds them). Each fuses only where the intermediate value has no
 * other reader; the fused node keeps the last node's output and carries
 * every original name. ctx: unused.
 *   fold_batchnorm: Conv -> BatchNormalization (inference, constant f32
 *     statistics) becomes the Conv with folded weights and bias.
 *   fuse_conv_add: Conv -> Add/Sum(., r) (r of the output's static shape)
 *     becomes runnel's FusedConv(X, W, B, r): y = Conv + r.
 *   fuse_activation: Conv/FusedConv/Gemm -> Relu, LeakyRelu, Elu, Clip
 *     (constant bounds), Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu, Mish
 *     becomes FusedConv/FusedGemm with attributes activation (the op's name;
 *     GeluTanh for Gelu's tanh form) and activation_params (LeakyRelu and
 *     Elu alpha; Clip min, max; HardSigmoid alpha, beta).
 *   gemm_transpose_b: Gemm with a constant f32 B and transB 0 gets B
 *     transposed into a new constant and transB 1. */
RN_KIT rn_status transforms_fold_batchnorm(graph *g, void *ctx, int *changes);
RN_KIT rn_status transforms_fuse_conv_add(graph *g, void *ctx, int *changes);
RN_KIT rn_status transforms_fuse_activation(graph *g, void *ctx, int *changes);
rn_status transforms_gemm_transpose_b(graph *g, void *ctx, int *changes);
/*   fold_scale_shift: Conv (constant weights) or BatchNormalization
 *     (inference) -> Mul or Add by an f32 constant of one value per channel
 *     (or one value): folded into the weights and bias, or the scale and
 *     bias. fuse_activation also turns BatchNormalization -> Relu into
 *     runnel's FusedBatchNormalization (activation "Relu"). */
RN_KIT rn_status transforms_fold_scale_shift(graph *g, void *ctx, int *changes);
/*   fuse_matmul_bias: MatMul (constant f32 [K, N] weights) -> Add of a
 *     constant of N values over the last axis becomes runnel's
 *     FusedMatMul(A, B, bias), to which fuse_activation adds the
 *     activation. */
rn_status transforms_fuse_matmul_bias(graph *g, void *ctx, int *changes);
/*   fuse_matmul_add: FusedMatMul without an activation or a residual ->
 *     Add/Sum(., r) (r of the output's static shape: an encoder's residual)
 *     becomes FusedMatMul(A, B, bias, r): y = A @ B + bias + r, then the
 *     activation fuse_activation may add. */
rn_status transforms_fuse_matmul_add(graph *g, void *ctx, int *changes);

/* A pointwise Conv (1x1, stride 1, no padding, constant weights) whose
 * only reader is an AveragePool without padding, dilation or ceil_mode
 * that shrinks the image -> the AveragePool, then the Conv on the pooled
 * image (both linear: the same result, up to rounding, for a fraction of
 * the Conv's work; DenseNet's transitions). The AveragePool's output is
 * the Conv's afterwards (transforms/pool_before_conv.c; off the default
 * pipeline). ctx: unused. */
rn_status transforms_pool_before_conv(graph *g, void *ctx, int *changes);

/* An AveragePool that keeps the image size (stride 1, padding excluded
 * from the divisor or none; no dilation or ceil_mode) whose only reader is
 * a pointwise Conv (as above) with fewer output than input channels -> the
 * Conv, then the AveragePool on the Conv's output channels (the same
 * result, up to rounding; the Conv's work is the same, the pool's shrinks
 * by the channels: Inception-v2's pool projections). The Conv's output
 * value is the pool's afterwards (transforms/pool_before_conv.c; off the
 * default pipeline; before fuse_activation, which would keep the Conv's
 * activation out of reach). ctx: unused. */
rn_status transforms_pool_after_conv(graph *g, void *ctx, int *changes);

/* Reshape -> Transpose -> Reshape that shuffles the channels of a
 * [N, C, H, W] tensor in g groups (ShuffleNet) -> runnel ShuffleChannels
 * (axis 1, group g), which keeps the last Reshape's name and output
 * (transforms/shuffle_channels.c; off the default pipeline). ctx: unused. */
rn_status transforms_fuse_shuffle_channels(graph *g, void *ctx, int *changes);

/* bf16's exceptions (transforms/precision.c; off the default pipeline: a
 * device running bf16 adds it): marks the products (Conv, Gemm, MatMul and
 * their fused forms, ConvTranspose, attention) whose output reaches a model
 * output, or a recurrence's input (LSTM, GRU, RNN, Loop, Scan), through no
 * other product with TRANSFORMS_ATTR_F32_OUTPUT = 1 (compute in bf16, write
 * f32), and the products inside Loop and Scan bodies with
 * TRANSFORMS_ATTR_F32 = 1 (f32 throughout). ctx: unused. */
#define TRANSFORMS_ATTR_F32_OUTPUT "runnel_f32_output"
#define TRANSFORMS_ATTR_F32        "runnel_f32"
rn_status transforms_keep_f32(graph *g, void *ctx, int *changes);

/* Transformer patterns as exporters decompose them, back into one node
 * (transforms/fuse_transformer.c; off the default pipeline). ctx: unused.
 *   fuse_gelu: x * 0.5 * (1 + Erf(x / sqrt 2)) (either order, Div by sqrt 2
 *     or Mul by its inverse) -> Gelu (opset 20).
 *   fuse_layernorm: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div
 *     over the last axis (then Mul gamma, Add beta) -> LayerNormalization
 *     (axis -1, epsilon eps). */
RN_KIT rn_status transforms_fuse_gelu(graph *g, void *ctx, int *changes);
RN_KIT rn_status transforms_fuse_layernorm(graph *g, void *ctx, int *changes);

/* MatMul(Q, Kt) -> [Mul/Div by a constant] -> [Add mask] -> Softmax (last
 * axis) -> MatMul(., V), Q and Kt optionally scaled by constants too ->
 * runnel ScaledDotProductAttention(Q, Kt, V[, mask]) with attribute scale
 * (transforms/fuse_attention.c; off the default pipeline). Only where no
 * intermediate has another reader and the shapes fit. The exporters' head
 * Transposes of Q, K and V (from [B, S, H, D]) join it as qkv_layout
 * "BSHD" when the pattern alone reads them. ctx: NULL, or a pointer to a
 * transforms_attention_options. */
typedef struct transforms_attention_options {
    /* The exporters' head merge (a Transpose [0, 2, 1, 3] of the rank-4
     * output, its only reader) joins the node too, as out_layout "BSHD":
     * for devices whose attention kernel writes [B, S, H, Dv] directly. */
    bool absorb_output;
} transforms_attention_options;
RN_KIT rn_status transforms_fuse_attention(graph *g, void *ctx, int *changes);

/* QDQ (DequantizeLinear -> Conv / Gemm -> QuantizeLinear, with the
 * residual Add and Relu of ONNX Runtime's quantize_static) -> runnel
 * QLinearFusedConv / QLinearFusedGemm; DequantizeLinear -> MaxPool ->
 * QuantizeLinear of the same parameters -> MaxPool on the quantized tensor
 * (transforms/fuse_qdq.c; off the default pipeline: a device with int8
 * primitives adds it before constant_folding). ctx: unused. */
rn_status transforms_fuse_qdq(graph *g, void *ctx, int *changes);

/* ONNX's QLinearConv / QLinearMatMul (QuantFormat.QOperator) -> runnel
 * QLinearFusedConv / QLinearFusedMatMul, the weights' zero point folded
 * into i8 weights, where the fused op computes the ONNX op's result
 * (transforms/fuse_qop.c says when; off the default pipeline: a device
 * with int8 primitives adds it). ctx: unused. */
rn_status transforms_fuse_qop(graph *g, void *ctx, int *changes);

/* ---- the pipeline ---- */

typedef struct transforms_pipeline transforms_pipeline;

#define TRANSFORMS_MAX_PASSES 32
#define TRANSFORMS_NAME_MAX   48 /* pass names: [a-z0-9_], shorter than this */
/* A REPEAT pass that still changes something after this many runs stops
 * there (the report says it reached no fixed point). */
#define TRANSFORMS_MAX_REPEAT 64

enum {
    TRANSFORMS_REPEAT = 1u << 0,   /* run again until it changes nothing */
    TRANSFORMS_DISABLED = 1u << 1, /* registered, but off until enabled */
};

/* Creates an empty pipeline. */
rn_status transforms_pipeline_create(transforms_pipeline **out);

/* Frees the pipeline. NULL is a no-op. */
void transforms_pipeline_free(transforms_pipeline *p);

/* Appends a pass. `name` is copied and must be unique in p; `ctx` is borrowed
 * and handed to every run of fn. A bad or duplicate name, or a full pipeline,
 * is RN_INVALID_ARG. */
RN_KIT rn_status transforms_pipeline_add(transforms_pipeline *p, const char *name,
                                         transforms_pass_fn fn, void *ctx, unsigned flags);

/* As transforms_pipeline_add, but the pass goes just before the pass
 * named `before` (RN_NOT_FOUND naming it when there is none). */
rn_status transforms_pipeline_insert_before(transforms_pipeline *p, const char *before,
                                            const char *name, transforms_pass_fn fn, void *ctx,
                                            unsigned flags);

/* Enables or disables the pass named `name`; an unknown name is RN_NOT_FOUND
 * naming it (and the passes the pipeline has). */
rn_status transforms_pipeline_set_enabled(transforms_pipeline *p, const char *name, bool enabled);

/* Whether the pass named `name` is enabled (RN_NOT_FOUND if there is none). */
rn_status transforms_pipeline_is_enabled(const transforms_pipeline *p, const char *name,
                                         bool *enabled);

/* Applies a pass configuration: comma-separated entries, each a pass name
 * prefixed with '+' (enable; the default) or '-' (disable), or '*' for every
 * pass, applied left to right: "-decompose_divide", "-*,+add_preprocessing".
 * Spaces around entries are ignored. The whole string is checked first: an
 * unknown name or an empty entry is an error naming it, and then nothing
 * changes. */
rn_status transforms_pipeline_configure(transforms_pipeline *p, const char *config);

/* Number of passes and the name of pass i (borrowed from p). */
int transforms_pipeline_count(const transforms_pipeline *p);
const char *transforms_pipeline_name(const transforms_pipeline *p, int i);

typedef struct transforms_pass_report {
    char name[TRANSFORMS_NAME_MAX];
    bool enabled;
    int runs;         /* how many times it ran (0 when disabled) */
    int changes;      /* rewrites summed over its runs */
    bool fixed_point; /* its last run changed nothing */
    uint64_t time_us; /* wall time over its runs */
} transforms_pass_report;

typedef struct transforms_report {
    int n_passes;
    transforms_pass_report passes[TRANSFORMS_MAX_PASSES];
} transforms_report;

/* Sorts g, then runs the enabled passes in order (a REPEAT pass until it
 * changes nothing or TRANSFORMS_MAX_REPEAT runs). `report` may be NULL; when
 * given it is written whether or not the run succeeds (up to the pass that
 * failed). An error names the pass ("pass 'constant_folding': node ...");
 * the graph may then be partly transformed and should be dropped. */
rn_status transforms_pipeline_run(const transforms_pipeline *p, graph *g,
                                  transforms_report *report);

/* What the default pipeline is built from. */
typedef struct transforms_options {
    const transforms_preprocess *preprocess; /* borrowed; NULL: no preprocessing */
    transforms_const_eval_fn const_eval;     /* NULL: fold only Shape and Size */
    void *const_eval_ctx;
    size_t fold_max_tensor_bytes; /* 0: TRANSFORMS_FOLD_MAX_BYTES_DEFAULT */
} transforms_options;

/* The standard pipeline, in this order:
 *   add_preprocessing      transforms_add_preprocessing (options->preprocess)
 *   remove_identity        REPEAT
 *   fuse_relu_relu         REPEAT
 *   decompose_divide       disabled by default
 *   constant_folding       (options->const_eval, fold_max_tensor_bytes)
 *   eliminate_dead_nodes
 * The options are copied (the preprocess description itself is borrowed).
 * `options` may be NULL. */
rn_status transforms_default_pipeline(const transforms_options *options, transforms_pipeline **out);

#endif /* RUNNEL_TRANSFORMS_TRANSFORMS_H */
