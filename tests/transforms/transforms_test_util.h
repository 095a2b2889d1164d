/* Helpers for the transforms tests: building small graphs, the REF constant
 * evaluator, and running a graph on REF to compare before and after. Every
 * helper asserts (Criterion) on failure, so tests read as the graph they
 * build. */
#ifndef RUNNEL_TESTS_TRANSFORMS_UTIL_H
#define RUNNEL_TESTS_TRANSFORMS_UTIL_H

#include <stdbool.h>

#include "graph/graph.h"
#include "plugins/api/kernel.h"
#include "transforms/transforms.h"

/* An empty graph importing default-domain opset 13. */
graph *tt_graph(void);

/* A parameter of static shape. */
graph_value *tt_input(graph *g, const char *name, rn_element_type type, int rank,
                      const int64_t *dims);

/* A constant of f32 / i64 values (copied). */
graph_value *tt_const_f32(graph *g, const char *name, int rank, const int64_t *dims,
                          const float *data);
graph_value *tt_const_i64(graph *g, const char *name, int rank, const int64_t *dims,
                          const int64_t *data);

/* A constant of any numeric type (data copied: count * element size bytes). */
graph_value *tt_const(graph *g, const char *name, rn_element_type type, int rank,
                      const int64_t *dims, const void *data);

/* A default-domain node named `name` whose one output is a new value also
 * named `name`; inputs may hold NULL (omitted). Returns the output value. */
graph_value *tt_op(graph *g, const char *name, const char *op, int n_in, graph_value *const *ins);
graph_value *tt_unary(graph *g, const char *name, const char *op, graph_value *x);
graph_value *tt_binary(graph *g, const char *name, const char *op, graph_value *a, graph_value *b);

/* Adds an INT / INTS / TENSOR attribute to the node named `node`. */
void tt_attr_int(graph *g, const char *node, const char *name, int64_t v);
void tt_attr_ints(graph *g, const char *node, const char *name, int n, const int64_t *v);
void tt_attr_tensor_f32(graph *g, const char *node, const char *name, float v);

void tt_output(graph *g, graph_value *v);

/* Sorts the graph and infers shapes (asserting success). */
void tt_finish(graph *g);

graph_node *tt_find_node(const graph *g, const char *name);
int tt_count_op(const graph *g, const char *op);
bool tt_has_fused(const graph_node *n, const char *name);

/* Asserts graph_validate accepts g. */
void tt_assert_valid(const graph *g);

/* REF's kernel registry, created on first use. */
plugin_kernel_registry *tt_registry(void);

/* The REF constant evaluator (transforms_const_eval_fn); ctx is a
 * plugin_kernel_registry. Per node: run-time shape inference from the given
 * inputs, output allocation, kernel pick and run. */
rn_status tt_ref_eval(const graph_node *node, const graph_tensor *inputs, graph_tensor *outputs,
                      void *ctx);

/* Runs g on REF's kernels node by node (a clone of g, sorted and inferred)
 * with n_in inputs; writes owned copies of every result into
 * outputs[0..g->n_outputs). */
void tt_run(const graph *g, const graph_tensor *inputs, int n_in, graph_tensor *outputs);

/* Asserts two f32 tensors have the same shape and values within tol
 * (relative to max(1, |b|)). */
void tt_assert_close_f32(const graph_tensor *a, const graph_tensor *b, float tol);

/* A dense f32 tensor over caller data. */
graph_tensor tt_tensor_f32(int rank, const int64_t *dims, float *data);

#endif /* RUNNEL_TESTS_TRANSFORMS_UTIL_H */
