/* Shared by the plan tests (tests/plan/test_layouts.c, test_partitions.c):
 * registries of test kernels in front of REF's, plans built with
 * plugin_plan_build over graphs built in memory (tests/ref/node_case.h),
 * runs, the comparison with the same graph on plain REF, and the runtime
 * model. Every helper asserts what it needs (a failure names the call). */
#ifndef RUNNEL_TESTS_PLAN_PLAN_HARNESS_H
#define RUNNEL_TESTS_PLAN_PLAN_HARNESS_H

#include <stdbool.h>

#include "graph/graph.h"
#include "plugins/api/kernel.h"
#include "plugins/api/plan.h"

#define PH_MAX_OUTPUTS 8

/* A registry holding `first` (a NULL-terminated list, may be NULL) before
 * REF's kernels, so that the test kernels win where they support a node. */
plugin_kernel_registry *ph_registry(const plugin_kernel *const *first);

/* Builds a plan of `g` (sorted first) over `reg`, one stream of two
 * threads, with the device's partitions (may be NULL). */
rn_status ph_try_build(graph *g, const plugin_kernel_registry *reg,
                       const rn_partition_ops *partitions, plugin_plan **out);
plugin_plan *ph_build(graph *g, const plugin_kernel_registry *reg,
                      const rn_partition_ops *partitions);

/* The results of one run, copied out of the request (owned). */
typedef struct ph_outputs {
    int n;
    graph_tensor t[PH_MAX_OUTPUTS];
} ph_outputs;

/* Runs a new request of `plan` on inputs[0..n_inputs) (sync, or
 * start_async + wait), `runs` times in a row, and copies the results of
 * the last run. */
void ph_run(plugin_plan *plan, const graph_tensor *inputs, int n_inputs, bool async, int runs,
            ph_outputs *out);
void ph_outputs_free(ph_outputs *o);

/* Expects `plan` (of graph `g`) to give, sync and async, the outputs of the
 * same graph compiled on plain REF: same types and shapes, f32 elements
 * within rel_tol * (1 + |REF's|) (0: bit for bit), others equal. */
void ph_expect_like_ref(graph *g, plugin_plan *plan, const graph_tensor *inputs, int n_inputs,
                        double rel_tol);

/* ph_expect_like_ref on a graph of one f32 input of the given shape, filled
 * with ph_fill(phase); then frees plan, g and reg. */
void ph_expect_like_ref_and_free(graph *g, plugin_plan *plan, plugin_kernel_registry *reg, int rank,
                                 const int64_t *dims, float phase, double rel_tol);

/* ---- the runtime model ---- */

/* The rows of the plan's runtime model (owned by the plan). */
const rn_runtime_node *ph_rows(plugin_plan *plan, size_t *n);

/* Rows of the plan's runtime model whose layer_type is `type`. */
int ph_count_rows(plugin_plan *plan, const char *type);
/* The row whose name is `name` (asserted to exist). */
const rn_runtime_node *ph_row(plugin_plan *plan, const char *name);
/* A property of the plan as a number (asserted to exist). */
long long ph_property(const plugin_plan *plan, const char *key);

/* Adds node `name` of `op` reading a (and b when n_in is 2) to g; returns
 * its output value, also called `name`. */
graph_value *ph_node(graph *g, const char *name, const char *op, int n_in, graph_value *a,
                     graph_value *b);

/* x[i] = sin(0.37 i + phase) * 3: inputs with both signs, no pattern a
 * layout mix-up could keep. */
void ph_fill(float *x, size_t n, float phase);

#endif /* RUNNEL_TESTS_PLAN_PLAN_HARNESS_H */
