/* The generic compiled plan and sync request every plugin reuses.
 *
 * plugin_plan_build clones a graph, infers shapes, picks a kernel for every
 * node from a registry (a node no kernel supports is RN_UNSUPPORTED naming
 * the node and op) and runs the kernels' prepare. A plugin_request runs the
 * plan in the caller's thread: per node it resolves the output shapes from
 * the concrete inputs (run-time shape inference, so shapes that depend on
 * input values are known), allocates outputs, runs the kernel and frees
 * intermediate buffers after their last reader (liveness).
 */
#ifndef RUNNEL_PLUGINS_API_PLAN_H
#define RUNNEL_PLUGINS_API_PLAN_H

#include "plugins/api/kernel.h"
#include "runnel/plugin.h"

typedef struct plugin_plan_options {
    bool profiling; /* record per-node real time */
} plugin_plan_options;

typedef struct plugin_plan plugin_plan;
typedef struct plugin_request plugin_request;

/* Builds a plan for `model` (cloned; the caller keeps its graph). The
 * registry must outlive the plan. */
rn_status plugin_plan_build(const graph *model, const plugin_kernel_registry *registry,
                            const plugin_plan_options *options, plugin_plan **out);
void plugin_plan_free(plugin_plan *plan);

/* The plan's transformed graph (owned by the plan). */
const graph *plugin_plan_graph(const plugin_plan *plan);

/* The kernel chosen for node i of plugin_plan_graph(). */
const plugin_kernel *plugin_plan_kernel(const plugin_plan *plan, int node);

rn_status plugin_request_create(const plugin_plan *plan, plugin_request **out);
void plugin_request_free(plugin_request *request);
rn_status plugin_request_set_input(plugin_request *request, size_t index, const graph_tensor *t);
rn_status plugin_request_set_output(plugin_request *request, size_t index, const graph_tensor *t);
rn_status plugin_request_infer(plugin_request *request);
rn_status plugin_request_get_output(plugin_request *request, size_t index, graph_tensor *out);
rn_status plugin_request_profiling(plugin_request *request, const rn_profiling_info **info,
                                   size_t *count);

/* rn_request_ops over plugin_request, for plugins whose requests are the
 * generic sync request. */
extern const rn_request_ops plugin_generic_request_ops;

/* Bytes a dense tensor of `count` elements of `type` needs (STRING: one
 * char* per element). */
size_t plugin_tensor_nbytes(rn_element_type type, size_t count);

#endif /* RUNNEL_PLUGINS_API_PLAN_H */
