/* The harness of REF's kernel tests, shared by tests/ref/test_*_kernels.c.
 * Most tests build a one-node graph, infer shapes, pick the kernel from the
 * REF registry, allocate outputs, run it and compare (node_case). Control
 * flow and sequences need graphs of several nodes and subgraphs, run the
 * way a compiled model runs them: through the generic plan (plan_case). */
#ifndef RUNNEL_TESTS_REF_NODE_CASE_H
#define RUNNEL_TESTS_REF_NODE_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "plugins/api/kernel.h"
#include "plugins/api/plan.h"

#define MAX_PORTS 9
#define MAX_ATTRS 16

/* ---- values and attributes ---- */

/* A tensor of static shape over `data`, which it borrows; dims may be NULL
 * for a scalar. RN_STRING data is an array of one char * per element. */
graph_tensor tensor_view(rn_element_type type, int rank, const int64_t *dims, const void *data);

/* Attributes. Each owns copies of its name and values (attr_graph takes
 * `sub` over); graph_node_add_attr and nc_attr take the attribute over. */
graph_attr attr_int(const char *name, int64_t v);
graph_attr attr_float(const char *name, float v);
graph_attr attr_string(const char *name, const char *s);
graph_attr attr_ints(const char *name, int n, const int64_t *v);
graph_attr attr_floats(const char *name, int n, const float *v);
graph_attr attr_strings(const char *name, int n, const char *const *v);
graph_attr attr_graph(const char *name, graph *sub);
/* A TypeProto attribute (Optional's "type"): `kind` of `elem`, any shape. */
graph_attr attr_type(const char *name, graph_kind kind, rn_element_type elem);

/* ---- one node ---- */

/* A one-node graph under test. Inputs marked constant become initializers
 * (what shape inference may read at compile time); the others are graph
 * inputs with a static declared shape, whose data the kernel still gets. */
typedef struct node_case {
    const char *domain; /* NULL: the default ONNX domain */
    const char *op;
    int opset;
    int n_in, n_out, n_attrs;
    graph_tensor in[MAX_PORTS];
    bool constant[MAX_PORTS];
    graph_attr attrs[MAX_ATTRS];
    graph *g;
    graph_node *node;
    plugin_kernel_registry *reg;
    graph_tensor out[MAX_PORTS];
    int alloc_calls; /* how often the kernel called alloc_output */
} node_case;

node_case nc_new(const char *op, int opset);
void nc_input(node_case *c, rn_element_type type, int rank, const int64_t *dims, const void *data,
              bool constant);
/* A non-constant f32 input. */
void nc_f32(node_case *c, int rank, const int64_t *dims, const float *data);
/* An omitted optional input. */
void nc_skip(node_case *c);
void nc_attr(node_case *c, graph_attr a);
void nc_int(node_case *c, const char *name, int64_t v);
void nc_float(node_case *c, const char *name, float v);
void nc_string(node_case *c, const char *name, const char *s);
void nc_ints(node_case *c, const char *name, int n, const int64_t *v);
void nc_floats(node_case *c, const char *name, int n, const float *v);
void nc_strings(node_case *c, const char *name, int n, const char *const *v);

/* Builds the graph (outputs whose bit is clear in `present` are omitted),
 * validates it and infers shapes (compile time). */
rn_status nc_build_mask(node_case *c, int n_out, unsigned present);
rn_status nc_build(node_case *c, int n_out);

/* Picks the REF kernel and runs it with outputs of the shapes inferred at
 * compile time, which must be static. */
rn_status nc_run(node_case *c);
rn_status nc_build_run(node_case *c, int n_out);

/* Picks the REF kernel, infers the outputs again with every input value
 * known (as the executor does per node), allocates those whose shape that
 * settles and runs; the kernel sizes the others through alloc_output. */
rn_status nc_run_dynamic(node_case *c);
rn_status nc_build_run_dynamic(node_case *c, int n_out);

void nc_free(node_case *c);

/* ---- graphs of several nodes, run through the generic plan ---- */

graph *pc_graph(const char *name, graph *parent, int opset);
graph_value *pc_value(graph *g, const char *name);
/* A graph input declared as `kind` of `type` and shape (rank -1: unknown). */
graph_value *pc_input(graph *g, const char *name, graph_kind kind, rn_element_type type, int rank,
                      const int64_t *dims);
/* An initializer holding a copy of `data`. */
graph_value *pc_constant(graph *g, const char *name, rn_element_type type, int rank,
                         const int64_t *dims, const void *data);
graph_node *pc_node(graph *g, const char *name, const char *op, int n_in, graph_value **in,
                    int n_out, graph_value **out);
void pc_attr(graph_node *n, graph_attr a);

/* A graph compiled with the generic plan over REF's registry (one stream)
 * and one request of it. */
typedef struct plan_case {
    plugin_kernel_registry *reg;
    plugin_plan *plan;
    plugin_request *req;
} plan_case;

/* Sorts `g` and compiles it; what it built is freed by pc_free even when
 * it fails. */
rn_status pc_compile(graph *g, uint32_t threads_per_stream, plan_case *r);
void pc_free(plan_case *r);
void pc_set_input(plan_case *r, size_t i, graph_tensor t);
/* Output i of the last run, owned by the request. */
graph_tensor pc_output(plan_case *r, size_t i);

/* ---- expectations ---- */

void expect_shape(const graph_tensor *t, int rank, const int64_t *dims);
void expect_typed_shape(const graph_tensor *t, rn_element_type type, int rank, const int64_t *dims);
/* f32 elements within `tol` of `want`; NaN matches NaN and an infinity
 * itself. */
void expect_f32(const graph_tensor *t, size_t n, const float *want, double tol);
/* f32 elements within tol * (1 + |want|), for values far from 1. */
void expect_f32_rel(const graph_tensor *t, size_t n, const float *want, double tol);
void expect_f64(const graph_tensor *t, size_t n, const double *want, double tol);
void expect_i64(const graph_tensor *t, size_t n, const int64_t *want);
void expect_i32(const graph_tensor *t, size_t n, const int32_t *want);
/* A plan's f32 tensor: its kind, shape and elements within 1e-6. */
void expect_f32_tensor(const graph_tensor *t, int rank, const int64_t *dims, const float *want);
void expect_f32_output(plan_case *r, size_t i, int rank, const int64_t *dims, const float *want);

#endif /* RUNNEL_TESTS_REF_NODE_CASE_H */
