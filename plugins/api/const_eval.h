/* A constant evaluator over a kernel registry: runs one node whose inputs
 * are all known, with run-time shape inference, the registry's kernel and
 * owned output buffers. Its signature is transforms/'s evaluator hook
 * (transforms_const_eval_fn), so a plugin hands it to constant folding with
 * its registry as `ctx`. */
#ifndef RUNNEL_PLUGINS_API_CONST_EVAL_H
#define RUNNEL_PLUGINS_API_CONST_EVAL_H

#include "plugins/api/kernel.h"

/* Computes node's outputs into `outputs` (n_outputs entries, each left
 * owning malloc'ed data on success, released on failure). `ctx` is the
 * const plugin_kernel_registry * to pick kernels from. */
rn_status plugin_const_eval(const graph_node *node, const graph_tensor *inputs,
                            graph_tensor *outputs, void *ctx);

#endif /* RUNNEL_PLUGINS_API_CONST_EVAL_H */
