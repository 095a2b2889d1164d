/* Helpers of the REF kernels of ONNX Runtime's contrib ops (domain
 * com.microsoft, kernels/contrib_*.c). They run in f32, the type ONNX
 * Runtime's CPU provider implements them for. */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_CONTRIB_H
#define RUNNEL_PLUGINS_REF_KERNELS_CONTRIB_H

#include <stdbool.h>

#include "plugins/api/kernel.h"

/* Compile time: whether every present input in the `f32_mask` bitmask and
 * every present output is f32 and inputs [0, n_required) are present. Sets
 * *why on false. */
bool ref_contrib_supports_f32(const graph_node *node, int n_required, uint32_t f32_mask,
                              const char **why);

/* Input i when it was given (not omitted, holds data), else NULL. */
const graph_tensor *ref_contrib_input(const plugin_kernel_args *args, int i);

/* Output i (allocated if the plan left it to the kernel), or NULL when omitted. */
rn_status ref_contrib_output(plugin_kernel_args *args, int i, graph_tensor **out);

/* An error naming the node: "node 'x' (Op): <what>". */
rn_status ref_contrib_error(const graph_node *node, rn_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* RUNNEL_PLUGINS_REF_KERNELS_CONTRIB_H */
