/* The one-node harness of REF's kernel tests: build a one-node graph, infer
 * shapes, pick the kernel from the REF registry, allocate outputs from the
 * inferred shapes, run it, compare. Shared by tests/ref/test_*_kernels.c. */
#ifndef RUNNEL_TESTS_REF_NODE_CASE_H
#define RUNNEL_TESTS_REF_NODE_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "plugins/api/kernel.h"

#define MAX_PORTS 9
#define MAX_ATTRS 8

/* A one-node graph under test. Inputs marked constant become initializers
 * (what shape inference may read at compile time); the others are graph
 * inputs with a static declared shape, whose data the kernel still gets. */
typedef struct node_case {
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
} node_case;

node_case nc_new(const char *op, int opset);
void nc_input(node_case *c, rn_element_type type, int rank, const int64_t *dims, const void *data,
              bool constant);
void nc_skip(node_case *c);
void nc_attr(node_case *c, graph_attr a);
void nc_int(node_case *c, const char *name, int64_t v);
void nc_float(node_case *c, const char *name, float v);
void nc_string(node_case *c, const char *name, const char *s);
void nc_ints(node_case *c, const char *name, int n, const int64_t *v);
rn_status nc_build_mask(node_case *c, int n_out, unsigned present);
rn_status nc_run(node_case *c);
rn_status nc_build_run(node_case *c, int n_out);
void nc_free(node_case *c);
void expect_shape(const graph_tensor *t, int rank, const int64_t *dims);
void expect_f32(const graph_tensor *t, size_t n, const float *want, double tol);

#endif /* RUNNEL_TESTS_REF_NODE_CASE_H */
