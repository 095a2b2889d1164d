/* The kernel interface a device plugin registers per op type, and the
 * registry that picks a kernel for a node.
 *
 * A kernel (rn_kernel, public in runnel/kernel.h) is a vtable filled with
 * designated initializers (ggml style):
 * `supports` is a pure per-node predicate (op, element types, shapes,
 * attributes); `prepare` (optional) builds per-node state at compile time
 * (repacked weights, chosen algorithm); `run` computes outputs from inputs.
 */
#ifndef RUNNEL_PLUGINS_API_KERNEL_H
#define RUNNEL_PLUGINS_API_KERNEL_H

#include <stdatomic.h>

#include "base/kit.h"
#include "runnel/kernel.h"

#include "graph/graph.h"
#include "graph/ops.h"

/* The kernel interface is public (runnel/kernel.h); inside runnel its types
 * keep the plugin_ names. */
typedef rn_kernel_args plugin_kernel_args;
typedef rn_kernel_registry plugin_kernel_registry;
typedef rn_kernel_ctx plugin_kernel_ctx;
typedef rn_alloc_output_fn plugin_alloc_output_fn;
typedef rn_move_output_fn plugin_move_output_fn;
typedef rn_kernel plugin_kernel;

/* A registry of kernels, searched by (domain, op_type); several kernels may
 * serve one op, tried in registration order until one supports the node. */

RN_KIT rn_status plugin_kernel_registry_create(plugin_kernel_registry **out);
RN_KIT void plugin_kernel_registry_free(plugin_kernel_registry *r);
/* Registers a kernel (not copied: it must outlive the registry). */
RN_KIT rn_status plugin_kernel_registry_add(plugin_kernel_registry *r, const plugin_kernel *k);
/* Registers every kernel of a NULL-terminated list. */
RN_KIT rn_status plugin_kernel_registry_add_list(plugin_kernel_registry *r,
                                                 const plugin_kernel *const *list);
/* Registers a versioned list (from outside runnel: extensions, plugins);
 * another ABI version is RN_INVALID_ARG naming both. */
rn_status plugin_kernel_registry_add_versioned(plugin_kernel_registry *r,
                                               const rn_kernel_list *list);

/* The first kernel for node's op whose supports() accepts it (for a node
 * with sequence or optional inputs or outputs, among the kernels that take
 * such values). On failure returns RN_UNSUPPORTED with a message naming the
 * node, the op and why (no kernel for the op at all, or the reasons
 * supports() gave). */
rn_status plugin_kernel_registry_pick(const plugin_kernel_registry *r, const graph_node *node,
                                      const plugin_kernel **out);

/* The next kernel after `after` (registered later) for node's op whose
 * supports() accepts it: the fallback when `after` cannot prepare or run
 * the node (a oneDNN primitive that cannot be created for these shapes).
 * NULL in *out when there is none; never sets the error message. */
void plugin_kernel_registry_next(const plugin_kernel_registry *r, const graph_node *node,
                                 const plugin_kernel *after, const plugin_kernel **out);

/* Whether a kernel's failure with status `st` lets the next kernel try the
 * node: a library that refused or failed (UNSUPPORTED, NOT_IMPLEMENTED,
 * DEVICE_ERROR). Not for failures the input explains (shape, type,
 * argument errors), real allocation failures, cancellation, which any
 * kernel would meet, nor runnel's own defects (INTERNAL: a kernel run
 * without the scratch it asked for), which must stay visible. */
bool plugin_kernel_may_fall_back(rn_status st);

/* ---- helpers for kernel authors ---- */

/* Row-major strides (in elements) of a shape into strides[rank]. */
RN_KIT void plugin_strides(int rank, const int64_t *dims, int64_t *strides);

/* Whether a node's port shape (rn_node_input_shape, rn_node_output_shape)
 * is fully known: a rank and no dynamic dim. */
RN_KIT bool plugin_shape_is_static(rn_partial_shape s);

/* Converts between f16/bf16 and f32 (round to nearest even). */
float plugin_f16_to_f32(uint16_t h);
RN_KIT uint16_t plugin_f32_to_f16(float f);
float plugin_bf16_to_f32(uint16_t h);
RN_KIT uint16_t plugin_f32_to_bf16(float f);

#endif /* RUNNEL_PLUGINS_API_KERNEL_H */
