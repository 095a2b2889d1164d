/* Running a node's subgraphs from its kernel (If, Loop, Scan, SequenceMap).
 *
 * At prepare time (plugin_kernel.prepare_ctx) a kernel builds one
 * plugin_subgraph per body: a nested plan with the plugin's kernels, whose
 * captures (the values the body reads from enclosing scopes) are matched to
 * the node's implicit inputs. Per run it opens a plugin_subgraph_run (a
 * request of its own: plans are shared by concurrent requests, runs are
 * not), invokes the body as often as it needs, and closes it. Bodies run
 * synchronously in the kernel's thread, and stop with RN_CANCELLED between
 * nodes once the enclosing run is cancelled. */
#ifndef RUNNEL_PLUGINS_API_SUBGRAPH_H
#define RUNNEL_PLUGINS_API_SUBGRAPH_H

#include "plugins/api/kernel.h"

typedef struct plugin_subgraph plugin_subgraph;
typedef struct plugin_subgraph_run plugin_subgraph_run;

/* Builds the nested plan of `body`, a subgraph of `node` (one of its graph
 * attributes, named `what` in errors). `inputs` (n_inputs ports, may be
 * NULL) seed the kinds, types and shapes the body's inputs leave
 * undeclared. */
rn_status plugin_subgraph_create(const graph_node *node, const graph *body, const char *what,
                                 const plugin_kernel_ctx *ctx, const graph_port *inputs,
                                 int n_inputs, plugin_subgraph **out);
void plugin_subgraph_free(plugin_subgraph *s);

/* The body as the nested plan runs it (inputs, results, their kinds and
 * types); owned by s. */
const graph *plugin_subgraph_graph(const plugin_subgraph *s);

/* Opens a run of s for the kernel run `args` (its implicit inputs are bound
 * to the body's captures, its cancel flag is polled). */
rn_status plugin_subgraph_begin(const plugin_subgraph *s, const plugin_kernel_args *args,
                                plugin_subgraph_run **out);

/* Runs the body once with inputs[0..n_inputs of the body) (borrowed, read
 * during the call). outputs[k] (one per result) receive views of the
 * results, valid until the next invoke or the end of the run: copy what is
 * kept (graph_tensor_copy). Errors are the body's own (naming its node);
 * the kernel says which body and which iteration. */
rn_status plugin_subgraph_invoke(plugin_subgraph_run *run, const graph_tensor *inputs,
                                 graph_tensor *outputs);

/* Closes the run and frees its buffers. NULL is a no-op. */
void plugin_subgraph_end(plugin_subgraph_run *run);

#endif /* RUNNEL_PLUGINS_API_SUBGRAPH_H */
