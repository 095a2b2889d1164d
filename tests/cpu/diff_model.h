/* A small in-memory ONNX writer for generated test models (protobuf-c):
 * graphs with inputs whose dims may be symbolic, initializers, nodes with
 * attributes (subgraphs included, for If and Loop), packed into the bytes
 * rn_core_read_model_from_memory reads and tools/run opens from a file.
 *
 * Everything a model holds is allocated from the model and freed with it;
 * names passed in are copied. Capacities are fixed (a generated model is
 * small); going past one is a programmer error (assert). */
#ifndef RUNNEL_TESTS_CPU_DIFF_MODEL_H
#define RUNNEL_TESTS_CPU_DIFF_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct dm_model dm_model;
typedef struct dm_graph dm_graph;

/* A model importing default-domain opset `opset`, with an empty main graph. */
dm_model *dm_model_create(int opset);
void dm_model_free(dm_model *m);
dm_graph *dm_main(dm_model *m);
/* Changes the model's default-domain opset. */
void dm_set_opset(dm_model *m, int opset);
/* A new, empty graph for a GRAPH attribute (If's branches, Loop's body). */
dm_graph *dm_subgraph(dm_model *m, const char *name);

/* A name unique in the model: prefix followed by a number. Owned by m. */
const char *dm_fresh(dm_model *m, const char *prefix);

/* Declares input `name` of ONNX element type `elem` and rank `rank`. Dim d
 * is params[d] (a dim_param) where params and params[d] are non-NULL, else
 * dims[d]. rank -1: no shape. */
void dm_input(dm_graph *g, const char *name, int elem, int rank, const int64_t *dims,
              const char *const *params);
/* Declares output `name` of element type `elem`, shape unstated. */
void dm_output(dm_graph *g, const char *name, int elem);

/* An initializer of `count(dims)` elements of `elem_size` bytes each
 * (copied) under a fresh name, which is returned. */
const char *dm_init(dm_graph *g, int elem, size_t elem_size, int rank, const int64_t *dims,
                    const void *data);
const char *dm_init_i64(dm_graph *g, int rank, const int64_t *dims, const int64_t *data);
const char *dm_init_f32(dm_graph *g, int rank, const int64_t *dims, const float *data);
/* A scalar (rank 0) or 1-D ([n]) i64 initializer. */
const char *dm_scalar_i64(dm_graph *g, int64_t v);
const char *dm_vec_i64(dm_graph *g, int n, const int64_t *v);

/* Adds a node of `op` (default domain, or `domain` via dm_node_domain)
 * reading ins[0..n_in) ("" for an omitted input) with n_out fresh outputs,
 * whose names are written to outs (may be NULL when n_out is 1); returns the
 * first output's name. Attributes go to the node added last. */
const char *dm_node(dm_graph *g, const char *op, int n_in, const char *const *ins, int n_out,
                    const char **outs);
const char *dm_op1(dm_graph *g, const char *op, const char *a);
const char *dm_op2(dm_graph *g, const char *op, const char *a, const char *b);
void dm_attr_int(dm_graph *g, const char *name, int64_t v);
void dm_attr_float(dm_graph *g, const char *name, float v);
void dm_attr_string(dm_graph *g, const char *name, const char *s);
void dm_attr_ints(dm_graph *g, const char *name, int n, const int64_t *v);
void dm_attr_floats(dm_graph *g, const char *name, int n, const float *v);
void dm_attr_graph(dm_graph *g, const char *name, dm_graph *sub);

/* The model as ONNX bytes (malloc'ed; the caller frees them). */
uint8_t *dm_pack(dm_model *m, size_t *size);

#endif /* RUNNEL_TESTS_CPU_DIFF_MODEL_H */
