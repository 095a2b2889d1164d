/* The kernel boundary: what a device plugin registers per op type, the
 * tensor descriptor kernels read and write, device layouts and allocators,
 * and partitions (subgraphs a device runs as one kernel).
 *
 * This header is self-contained: a plugin or an extension builds against
 * include/runnel/ only. Nodes are opaque here (rn_node) and read through the
 * rn_node_* accessors; inside runnel they are graph nodes.
 *
 * Versioning: RN_KERNEL_ABI_VERSION changes whenever a struct below changes
 * its layout; kernel lists are registered with the version they were built
 * against (rn_kernel_list) and the runtime refuses another. Op schemas
 * (rn_op_schema, rn_attr_spec) reach the runtime only in an rn_extension:
 * RN_EXTENSION_ABI_VERSION versions them. */
#ifndef RUNNEL_KERNEL_H
#define RUNNEL_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/status.h"
#include "runnel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1: descriptors with layouts and device buffers, flags, layout hooks,
 *    allocators and partitions.
 * 2: prepare_ctx sees the layouts its inputs' producers write;
 *    inplace_input (output 0 over any input); impl_name. */
#define RN_KERNEL_ABI_VERSION 2

/* A node of the model as the kernel sees it (opaque: rn_node_* below). */
typedef struct graph_node rn_node;

/* What a value holds: ONNX's tensor, sequence, optional and map types.
 * (The map kinds were added without changing any struct's layout, so the
 * ABI version stayed 2: a kernel meets them only on ops that make maps.) */
typedef enum rn_kernel_kind {
    RN_KERNEL_TENSOR = 0,
    RN_KERNEL_SEQUENCE = 1,          /* sequence(tensor(type)) */
    RN_KERNEL_OPTIONAL = 2,          /* optional(tensor(type)), without a value */
    RN_KERNEL_OPTIONAL_SEQUENCE = 3, /* optional(sequence(tensor(type))), without a value */
    RN_KERNEL_MAP = 4,               /* map(key type, tensor(type)) */
    RN_KERNEL_SEQUENCE_MAP = 5,      /* sequence(map(key type, tensor(type))) (ZipMap) */
} rn_kernel_kind;

typedef struct rn_kernel_tensor rn_kernel_tensor;
typedef struct rn_layout rn_layout;

/* A device's layouts: how to compare two and how to convert. */
typedef struct rn_layout_ops {
    uint32_t abi_version; /* RN_KERNEL_ABI_VERSION */
    const char *device;
    /* True when a and b (both of these ops) describe the same bytes. */
    bool (*equal)(const rn_layout *a, const rn_layout *b);
    /* Writes src into dst, the same tensor in another layout: one of the
     * two is in a layout of these ops, the other is plain (layout NULL) or
     * also of these ops. */
    rn_status (*convert)(const rn_kernel_tensor *src, rn_kernel_tensor *dst);
} rn_layout_ops;

/* A layout a device defines (oneDNN's nChw16c, a packed weight format): the
 * plan sizes buffers with nbytes and inserts conversions where a producer
 * and a consumer disagree. Plain dense row-major is the NULL layout. */
struct rn_layout {
    const rn_layout_ops *ops;
    const char *name; /* in the runtime model: "nChw16c" */
    size_t nbytes;    /* bytes of a tensor in this layout (padding included) */
    const void *desc; /* the device's descriptor */
};

/* A tensor, a sequence or an absent optional, as kernels see it.
 *
 * For tensors: element type, shape, strides (in elements; dense row-major
 * unless the producer says otherwise), layout (NULL: plain) and where the
 * bytes are: `data` for host memory, or `buffer` (the device allocator's
 * handle) plus `offset` for device memory (data NULL). STRING tensors hold
 * one char* per element in `data`.
 * - SEQUENCE: n_items tensors in `items`, each of element type `type`.
 * - OPTIONAL / OPTIONAL_SEQUENCE: an optional without a value (type set,
 *   nothing else); an optional with a value is passed as that value.
 * - MAP: n_items 2: items[0] the keys, a 1-D tensor of the key type (STRING
 *   or I64), items[1] the values, a 1-D tensor of element type `type` and
 *   as many elements; entry i maps keys[i] to values[i].
 * - SEQUENCE_MAP: n_items maps (each a MAP descriptor) of value type
 *   `type` and one key type.
 * As a constant of the model the descriptor owns `data`; as a kernel
 * argument it only describes memory the plan owns. */
struct rn_kernel_tensor {
    rn_element_type type;
    int rank;
    int64_t dims[RN_MAX_RANK];
    void *data;
    size_t nbytes;
    rn_kernel_kind kind;
    size_t n_items;
    struct rn_kernel_tensor *items;
    int64_t strides[RN_MAX_RANK];
    const rn_layout *layout;
    void *buffer;
    size_t offset;
};

typedef struct rn_kernel_args rn_kernel_args;
typedef struct rn_kernel_registry rn_kernel_registry;

/* What a kernel's prepare_ctx may use besides the node: the registry the
 * plan picks from, so that a control-flow kernel builds nested plans for its
 * bodies with the same kernels; and the layout each input's producer writes
 * (input_layouts[i], NULL: plain or unknown; n_input_layouts entries), so
 * that a kernel that can read any layout of its device (an activation, a
 * pooling) is prepared for the one it will get and no conversion is
 * needed. Nodes are prepared in topological order. */
typedef struct rn_kernel_ctx {
    const rn_kernel_registry *registry;
    const rn_layout *const *input_layouts;
    int n_input_layouts;
} rn_kernel_ctx;

/* Allocates output `index` of the running node with the given shape (ops
 * whose output shape depends on computed values: NonZero, Unique, ...). */
typedef rn_status (*rn_alloc_output_fn)(rn_kernel_args *args, int index, int rank,
                                        const int64_t *dims);

/* Hands output `index` a value the kernel built and owns (malloc'ed data, a
 * sequence with malloc'ed items, or an absent optional); the plan takes it
 * over and clears *value. Sequence and optional outputs are written so. */
typedef rn_status (*rn_move_output_fn)(rn_kernel_args *args, int index, rn_kernel_tensor *value);

struct rn_kernel_args {
    const rn_node *node;
    /* Input i: data NULL and type RN_UNDEFINED for an omitted optional
     * input. Read-only. */
    const rn_kernel_tensor *inputs;
    int n_inputs;
    /* Output i: type, shape, layout and memory are set by the plan, unless
     * the shape could not be known before the run (data NULL: the kernel
     * calls alloc_output). Omitted optional outputs have type RN_UNDEFINED. */
    rn_kernel_tensor *outputs;
    int n_outputs;
    void *state; /* from prepare, or NULL */
    rn_alloc_output_fn alloc_output;
    void *alloc_ctx; /* the plan's */
    rn_move_output_fn move_output;
    /* The values the node's subgraphs read from enclosing scopes (control
     * flow); NULL and 0 for other nodes. */
    const rn_kernel_tensor *implicit;
    int n_implicit;
    /* (may be NULL) Set when the run is cancelled: long kernels poll it. */
    const _Atomic(bool) *cancel;
    /* Scratch memory the kernel asked for (rn_kernel.scratch_bytes): a
     * 1-D u8 tensor in the plan's memory (host data, or a device buffer and
     * offset), private to this run of the node, not preserved between runs;
     * nbytes 0 and data NULL when none. */
    rn_kernel_tensor scratch;
};

/* Kernel flags. */
enum {
    /* Output 0 may be written over input 0 (same type and shape): the plan
     * runs it in place when input 0 is an intermediate nobody else reads. */
    RN_KERNEL_INPLACE = 1u << 0,
    /* Output 0 is input 0's bytes under another shape (Reshape, Squeeze,
     * Flatten, Identity): the plan makes it a view and skips the kernel when
     * it can, and runs it (a copy) when it cannot; input and output plain. */
    RN_KERNEL_VIEW = 1u << 1,
    /* With RN_KERNEL_VIEW: also a view where input 0 and output 0 are in
     * the device layouts the kernel's layout hooks name, which the kernel
     * vouches are the same bytes (the CPU's Reshape over plain bf16). */
    RN_KERNEL_VIEW_LAYOUTS = 1u << 2,
};

typedef struct rn_kernel {
    const char *domain;    /* "" for the default ONNX domain */
    const char *op_type;   /* "Conv" */
    const char *impl_type; /* in the runtime model: "ref", "jit_avx512", ... */
    /* Pure predicate: whether this kernel runs `node` as it stands (types
     * and shapes inferred, attributes set). On false *why names the reason
     * (a static or thread-local string). */
    bool (*supports)(const rn_node *node, const char **why);
    /* (optional) Builds per-node state at compile time: parsed attributes,
     * repacked weights, a primitive. */
    rn_status (*prepare)(const rn_node *node, void **state);
    /* Computes the node's outputs. Errors name the node (rn_set_error). */
    rn_status (*run)(rn_kernel_args *args);
    /* (optional) Frees what prepare built. */
    void (*release)(void *state);
    /* (optional) prepare with the compile context, for kernels that build
     * nested plans (If, Loop, Scan); called instead of prepare when set. */
    rn_status (*prepare_ctx)(const rn_node *node, const rn_kernel_ctx *ctx, void **state);
    /* True when the kernel takes sequence and optional values. */
    bool values;
    unsigned flags; /* RN_KERNEL_* */
    /* (optional) The layout input / output `index` must be in (NULL:
     * plain), asked after prepare; the plan converts where producers and
     * consumers disagree and at the model's inputs and outputs. */
    const rn_layout *(*input_layout)(const void *state, int index);
    const rn_layout *(*output_layout)(const void *state, int index);
    /* (optional) Bytes of scratch memory each run needs (a oneDNN user
     * scratchpad, a workspace), asked after prepare; the plan places it in
     * the request's arena like a value that lives for the node's run only,
     * so a run allocates nothing. */
    size_t (*scratch_bytes)(const void *state);
    /* (optional) The input that output 0 may be written over (a
     * convolution that adds a residual into its output), -1 none; asked
     * after prepare. The plan runs it in place when that input's bytes have
     * the output's type, shape and layout and every other reader of them
     * runs before the node; otherwise the output has its own bytes.
     * RN_KERNEL_INPLACE is the same for input 0. */
    int (*inplace_input)(const void *state);
    /* (optional) The implementation prepare chose, for the runtime model
     * ("brgconv:avx512_core_bf16"); impl_type when NULL or unset. */
    const char *(*impl_name)(const void *state);
} rn_kernel;

/* A NULL-terminated list of kernels built against `abi_version`. */
typedef struct rn_kernel_list {
    uint32_t abi_version; /* RN_KERNEL_ABI_VERSION */
    const rn_kernel *const *kernels;
} rn_kernel_list;

/* Where a plan's arenas live. Host devices use host memory (the default);
 * a device with its own memory passes its allocator (clCreateBuffer,
 * cudaMalloc), and kernels then see buffer + offset instead of data. */
typedef struct rn_allocator {
    const char *name;
    bool host; /* buffers are host pointers (descriptors get data) */
    rn_status (*alloc)(void *ctx, size_t size, size_t alignment, void **buffer);
    void (*free)(void *ctx, void *buffer);
    void *ctx;
} rn_allocator;

/* Partitions: a device claims connected groups of nodes and runs each as
 * one kernel (a oneDNN primitive chain, an OpenCL command sequence, a CUDA
 * graph). */
typedef struct rn_partition_ops {
    uint32_t abi_version; /* RN_KERNEL_ABI_VERSION */
    /* group[i] = a group id >= 0 to claim nodes[i], -1 to leave it to the
     * kernel registry. nodes are in topological order. A group must be
     * convex (no path leaves it and comes back); the plan refuses it with a
     * message otherwise. */
    rn_status (*claim)(void *ctx, const rn_node *const *nodes, int n_nodes, int *group);
    /* Builds the kernel of a group: its nodes (topological), the values it
     * reads from outside (input_names, in the order its kernel's args.inputs
     * get them) and those it produces for outside (output_names). */
    rn_status (*compile)(void *ctx, const rn_node *const *nodes, int n_nodes,
                         const char *const *input_names, int n_inputs,
                         const char *const *output_names, int n_outputs, const rn_kernel **kernel,
                         void **state);
    void *ctx;
} rn_partition_ops;

/* ---- op schemas (extensions add ops with them) ---- */

/* Attribute types; the numbers are onnx.AttributeProto.AttributeType's. */
typedef enum rn_attr_type {
    RN_ATTR_UNDEFINED = 0,
    RN_ATTR_FLOAT = 1,
    RN_ATTR_INT = 2,
    RN_ATTR_STRING = 3,
    RN_ATTR_TENSOR = 4,
    RN_ATTR_GRAPH = 5,
    RN_ATTR_FLOATS = 6,
    RN_ATTR_INTS = 7,
    RN_ATTR_STRINGS = 8,
    RN_ATTR_TENSORS = 9,
    RN_ATTR_GRAPHS = 10,
    RN_ATTR_TYPE_PROTO = 13,
} rn_attr_type;

/* An attribute's default: the member of its type (FLOAT f, INT i, STRING
 * s), from ONNX's operator spec (the op's newest version). */
typedef union rn_attr_default {
    float f;
    int64_t i;
    const char *s;
} rn_attr_default;

/* An attribute an op accepts. An optional FLOAT, INT or STRING attribute
 * whose absence means a value carries it (has_default): kernels read it
 * with rn_node_attr_*_or_default and restate nothing. */
typedef struct rn_attr_spec {
    const char *name;
    rn_attr_type type;
    bool required;
    bool has_default;
    rn_attr_default dflt;
} rn_attr_spec;

/* What shape inference sees of one input or output. */
typedef struct rn_infer_port {
    bool present;         /* false: an omitted optional input/output */
    rn_element_type type; /* RN_UNDEFINED while unknown */
    rn_partial_shape shape;
    /* Inputs only: the value when known (a constant at compile time, every
     * input at run time), dense row-major of `type`; NULL otherwise. */
    const void *data;
    rn_kernel_kind kind; /* what the value holds */
} rn_infer_port;

/* Fills out[0..n_out) (type and shape) from the inputs and the attributes;
 * unknown parts stay RN_UNDEFINED / RN_DIM_DYNAMIC / rank -1; an
 * inconsistency is an error naming the node. */
typedef rn_status (*rn_infer_fn)(const rn_node *node, const rn_infer_port *in, int n_in,
                                 rn_infer_port *out, int n_out);

#define RN_MAX_ATTR_SPECS 16

typedef struct rn_op_schema {
    const char *domain; /* "" for the default ONNX domain */
    const char *op_type;
    int min_inputs, max_inputs; /* max -1: variadic */
    int min_outputs, max_outputs;
    /* Bitmask of inputs whose values shape inference reads (Reshape: 1<<1). */
    uint32_t value_inputs;
    rn_infer_fn infer;
    /* Attributes the op accepts; ends with a {NULL} entry or the array. */
    rn_attr_spec attrs[RN_MAX_ATTR_SPECS];
} rn_op_schema;

/* ---- reading a node (what supports and prepare see) ---- */

RN_API const char *rn_node_name(const rn_node *node);
RN_API const char *rn_node_op_type(const rn_node *node);
RN_API const char *rn_node_domain(const rn_node *node);
RN_API int rn_node_opset(const rn_node *node);
RN_API int rn_node_input_count(const rn_node *node);
RN_API int rn_node_output_count(const rn_node *node);
/* The name of input/output i ("" when omitted). */
RN_API const char *rn_node_input_name(const rn_node *node, int i);
RN_API const char *rn_node_output_name(const rn_node *node, int i);
/* Element type and (partial) shape of input/output i, as inferred at
 * compile time; RN_UNDEFINED and rank -1 when omitted or unknown. */
RN_API rn_element_type rn_node_input_type(const rn_node *node, int i);
RN_API rn_element_type rn_node_output_type(const rn_node *node, int i);
RN_API rn_partial_shape rn_node_input_shape(const rn_node *node, int i);
RN_API rn_partial_shape rn_node_output_shape(const rn_node *node, int i);
/* The value of input i when it is a constant of the model, else NULL. */
RN_API const rn_kernel_tensor *rn_node_input_constant(const rn_node *node, int i);
/* Attributes; the default when absent or of another type. */
RN_API bool rn_node_has_attr(const rn_node *node, const char *name);
RN_API int64_t rn_node_attr_int(const rn_node *node, const char *name, int64_t dflt);
RN_API float rn_node_attr_float(const rn_node *node, const char *name, float dflt);
RN_API const char *rn_node_attr_string(const rn_node *node, const char *name, const char *dflt);
/* Number of values and *values, or -1 (and NULL) when absent. */
RN_API int rn_node_attr_ints(const rn_node *node, const char *name, const int64_t **values);
RN_API int rn_node_attr_floats(const rn_node *node, const char *name, const float **values);
/* The attribute, or when absent (or of another type) its default from the
 * op's schema (rn_attr_spec.dflt), so that no kernel restates ONNX's
 * defaults. `name` must have a default in the schema of the node's op:
 * anything else is the caller's bug, answered with NAN, 0 or NULL. */
RN_API float rn_node_attr_float_or_default(const rn_node *node, const char *name);
RN_API int64_t rn_node_attr_int_or_default(const rn_node *node, const char *name);
RN_API const char *rn_node_attr_string_or_default(const rn_node *node, const char *name);
/* The spec of attribute `name` of op (domain, op_type), or NULL: for a
 * default read outside the op's own node (a fused activation's parameter,
 * rn_op_attr_spec("", "LeakyRelu", "alpha")->dflt.f). */
RN_API const rn_attr_spec *rn_op_attr_spec(const char *domain, const char *op_type,
                                           const char *name);
/* The parameters of the activation op `op` (an ONNX op: "LeakyRelu",
 * "HardSigmoid") as a fused node's activation_params holds them, into
 * out[0..max): params[0..n) as given, then the defaults of op's FLOAT
 * attributes in its schema's order (LeakyRelu: alpha; HardSigmoid: alpha,
 * beta) for those not given. Returns how many it wrote: fewer than the op
 * has where one has no default (Clip's bounds). */
RN_API int rn_activation_params(const char *op, const float *params, int n, float *out, int max);

/* ---- sliding windows (Conv, ConvTranspose, the pools) ---- */

typedef enum rn_auto_pad {
    RN_AUTO_PAD_NOTSET, /* explicit pads (default 0) */
    RN_AUTO_PAD_VALID,  /* no padding; pads are ignored */
    RN_AUTO_PAD_SAME_UPPER,
    RN_AUTO_PAD_SAME_LOWER,
} rn_auto_pad;

/* A node's window attributes over n spatial dims, parsed once
 * (rn_node_window): every device reads this, never the attributes. */
typedef struct rn_window {
    int n; /* spatial dims */
    rn_auto_pad auto_pad;
    bool ceil_mode;                /* ceil_mode 1 (pools); Conv-like ops ignore it */
    bool kernel_known;             /* kernel[] holds every size (else some are unknown) */
    bool pads_given;               /* the pads attribute was written (not absent or empty) */
    int64_t kernel[RN_MAX_RANK];   /* window size, undilated (kernel_shape or the weight's dims) */
    int64_t stride[RN_MAX_RANK];   /* >= 1; default 1 */
    int64_t dilation[RN_MAX_RANK]; /* >= 1; default 1 */
    int64_t pads[2 * RN_MAX_RANK]; /* begins [0, n), then ends [n, 2n); >= 0; default 0 */
} rn_window;

/* Reads auto_pad, ceil_mode, strides, dilations, pads and kernel_shape of a
 * node with n spatial dims (0 to RN_MAX_RANK - 2). w_kernel (the weight's
 * spatial dims, RN_DIM_DYNAMIC where unknown; NULL for pools) stands in for
 * an absent kernel_shape and must agree with a present one; with
 * kernel_required (pools) kernel_shape must be given. An error names the
 * node and the attribute (a bad auto_pad, a pads of another length). */
RN_API rn_status rn_node_window(const rn_node *node, int n, const int64_t *w_kernel,
                                bool kernel_required, rn_window *w);

/* The padding of spatial dim i (< w->n, kernel known) before and after an
 * input of size `in` that gives `out` windows: the explicit pads, none for
 * VALID, and for SAME_* what ONNX derives (the total (out - 1) * stride +
 * dilated kernel - in, never negative, split in half with the odd unit at
 * the end for SAME_UPPER, at the start for SAME_LOWER). */
RN_API void rn_window_pads(const rn_window *w, int i, int64_t in, int64_t out, int64_t *begin,
                           int64_t *end);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_KERNEL_H */
