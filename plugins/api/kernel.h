/* The kernel interface a device plugin registers per op type, and the
 * registry that picks a kernel for a node.
 *
 * A kernel is a vtable filled with designated initializers (ggml style):
 * `supports` is a pure per-node predicate (op, element types, shapes,
 * attributes); `prepare` (optional) builds per-node state at compile time
 * (repacked weights, chosen algorithm); `run` computes outputs from inputs.
 */
#ifndef RUNNEL_PLUGINS_API_KERNEL_H
#define RUNNEL_PLUGINS_API_KERNEL_H

#include <stdatomic.h>

#include "graph/graph.h"
#include "graph/ops.h"

typedef struct plugin_kernel_args plugin_kernel_args;
typedef struct plugin_kernel_registry plugin_kernel_registry;

/* What a kernel's prepare_ctx may use besides the node: the registry the
 * plan picks its kernels from, so that a control-flow kernel can build
 * nested plans for its subgraphs with the same kernels. */
typedef struct plugin_kernel_ctx {
    const plugin_kernel_registry *registry;
} plugin_kernel_ctx;

/* Allocates (or re-shapes) output `index` of the running node with the given
 * shape, writing the buffer into args->outputs[index]. Kernels of ops whose
 * output shape depends on the computed values (NonZero, Unique, ...) call it
 * from `run`; for every other op the executor has already allocated outputs. */
typedef rn_status (*plugin_alloc_output_fn)(plugin_kernel_args *args, int index, int rank,
                                            const int64_t *dims);

/* Hands output `index` a value the kernel built and owns: a tensor whose
 * data (and strings) are malloc'ed, a sequence with malloc'ed items, or an
 * absent optional. The executor takes it over (whatever the output held
 * before is released) and clears *value; on error *value is left to the
 * kernel. Sequence and optional outputs are written this way only. */
typedef rn_status (*plugin_move_output_fn)(plugin_kernel_args *args, int index,
                                           graph_tensor *value);

struct plugin_kernel_args {
    const graph_node *node;
    /* Input i: data NULL and type RN_UNDEFINED when the optional input is
     * omitted. Buffers are read-only. */
    const graph_tensor *inputs;
    int n_inputs;
    /* Output i: type and shape come from run-time shape inference; data is
     * allocated unless inference could not tell the shape (then data is NULL
     * and the kernel must call alloc_output). Omitted optional outputs have
     * data NULL and type RN_UNDEFINED and must not be written. */
    graph_tensor *outputs;
    int n_outputs;
    void *state; /* from prepare(), or NULL */
    plugin_alloc_output_fn alloc_output;
    void *alloc_ctx; /* owned by the executor */
    plugin_move_output_fn move_output;
    /* The values the node's subgraphs read from enclosing scopes, in the
     * order of graph_node_outer_inputs(node) (control-flow kernels bind
     * them to their bodies); NULL and 0 for nodes without subgraphs. */
    const graph_tensor *implicit;
    int n_implicit;
    /* (may be NULL) Set when the run is cancelled: kernels that run long
     * (loops) poll it between steps and stop with RN_CANCELLED. */
    const atomic_bool *cancel;
};

typedef struct plugin_kernel {
    const char *domain;    /* "" for the default ONNX domain */
    const char *op_type;   /* "Conv" */
    const char *impl_type; /* what the runtime model reports: "ref", "jit_avx2", ... */
    /* Pure predicate: whether this kernel runs `node` as it stands (input and
     * output types and shapes already inferred, attributes set). On false it
     * sets *why to a static or thread-local string naming the attribute or
     * type it lacks ("input 0 type f16", "mode 'reflect'"). */
    bool (*supports)(const graph_node *node, const char **why);
    /* (optional) Builds per-node state at compile time. */
    rn_status (*prepare)(const graph_node *node, void **state);
    /* Computes the node's outputs. Errors name the node (rn_set_error). */
    rn_status (*run)(plugin_kernel_args *args);
    /* (optional) Frees what prepare built. */
    void (*release)(void *state);
    /* (optional) As prepare, with the compile context: for kernels that
     * build nested plans (If, Loop, Scan, SequenceMap). When set, it is
     * called instead of prepare. */
    rn_status (*prepare_ctx)(const graph_node *node, const plugin_kernel_ctx *ctx, void **state);
    /* True when the kernel takes sequence and optional values (graph_kind);
     * the registry offers a node that reads or writes such a value only to
     * kernels that set it, so that no tensor kernel ever sees one. */
    bool values;
} plugin_kernel;

/* A registry of kernels, searched by (domain, op_type); several kernels may
 * serve one op, tried in registration order until one supports the node. */

rn_status plugin_kernel_registry_create(plugin_kernel_registry **out);
void plugin_kernel_registry_free(plugin_kernel_registry *r);
/* Registers a kernel (not copied: it must outlive the registry). */
rn_status plugin_kernel_registry_add(plugin_kernel_registry *r, const plugin_kernel *k);
/* Registers every kernel of a NULL-terminated list. */
rn_status plugin_kernel_registry_add_list(plugin_kernel_registry *r,
                                          const plugin_kernel *const *list);

/* The first kernel for node's op whose supports() accepts it (for a node
 * with sequence or optional inputs or outputs, among the kernels that take
 * such values). On failure returns RN_UNSUPPORTED with a message naming the
 * node, the op and why (no kernel for the op at all, or the reasons
 * supports() gave). */
rn_status plugin_kernel_registry_pick(const plugin_kernel_registry *r, const graph_node *node,
                                      const plugin_kernel **out);

/* ---- helpers for kernel authors ---- */

/* Row-major strides (in elements) of a shape into strides[rank]. */
void plugin_strides(int rank, const int64_t *dims, int64_t *strides);

/* Converts between f16/bf16 and f32 (round to nearest even). */
float plugin_f16_to_f32(uint16_t h);
uint16_t plugin_f32_to_f16(float f);
float plugin_bf16_to_f32(uint16_t h);
uint16_t plugin_f32_to_bf16(float f);

#endif /* RUNNEL_PLUGINS_API_KERNEL_H */
