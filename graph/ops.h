/* Op schemas: for every op the runtime knows, its input and output counts,
 * its attributes and a shape-inference function.
 *
 * Shape inference runs twice: at compile time over the graph, where an input
 * value is known only when it is constant (so some output dims stay
 * RN_DIM_DYNAMIC), and at run time with every input known, which is where
 * shapes that depend on input values (Reshape's shape, Range's limits, ...)
 * are resolved.
 *
 * The table is split into families (graph/ops/<family>.c), each an array
 * ending with a zeroed entry; graph/ops/table.c lists the families. Adding an
 * op is one entry in its family plus its infer function.
 */
#ifndef RUNNEL_GRAPH_OPS_H
#define RUNNEL_GRAPH_OPS_H

#include "graph/graph.h"

/* Schemas, ports and infer functions are public (runnel/kernel.h), so that
 * extensions build against installed headers; inside runnel they keep the
 * graph_ names. */
typedef rn_infer_port graph_port;
typedef rn_infer_fn graph_infer_fn;
typedef rn_attr_spec graph_attr_spec;
typedef rn_op_schema graph_op_schema;
#define GRAPH_MAX_ATTR_SPECS RN_MAX_ATTR_SPECS

/* An optional or required attribute of type t (INT, FLOATS, ...), and an
 * optional attribute with its default, as ONNX's operator spec gives it
 * (tests/graph:test_attr_defaults compares them with the onnx wheel's):
 * kernels read it with graph_node_attr_*_or_default and restate nothing. */
/* clang-format off */
#define GRAPH_OPTIONAL(name, t)       {name, GRAPH_ATTR_##t, false, false, {0}}
#define GRAPH_REQUIRED(name, t)       {name, GRAPH_ATTR_##t, true, false, {0}}
#define GRAPH_DEFAULT_FLOAT(name, v)  {name, GRAPH_ATTR_FLOAT, false, true, {.f = (v)}}
#define GRAPH_DEFAULT_INT(name, v)    {name, GRAPH_ATTR_INT, false, true, {.i = (v)}}
#define GRAPH_DEFAULT_STRING(name, v) {name, GRAPH_ATTR_STRING, false, true, {.s = (v)}}
/* clang-format on */

/* The schema for (domain, op_type), or NULL when the runtime does not know
 * the op. domain "ai.onnx" is the default domain "". */
const graph_op_schema *graph_op_find(const char *domain, const char *op_type);

/* Adds an op schema at run time (extensions). The schema must live as long
 * as the process (extension libraries are never unloaded). Registering the
 * same schema twice is a no-op; another schema for a known op is an error. */
rn_status graph_op_register(const graph_op_schema *schema);

/* The registered extension schema for (domain, op_type), or NULL
 * (graph_op_find falls back to it). */
const graph_op_schema *graph_op_find_extension(const char *domain, const char *op_type);

/* The newest opset version of `domain` the schemas implement, or 0 for a
 * domain runnel has no built-in schemas for (its ops are then judged one by
 * one: extensions register their own). A model importing a newer version is
 * refused when it is read. */
int graph_op_newest_opset(const char *domain);

/* Number of schemas and the i-th one (for listings). */
int graph_op_count(void);
const graph_op_schema *graph_op_at(int i);

/* Fills the ports of a node from the graph's values (types, shapes and
 * constant data), in `in` and `out` arrays of node->n_inputs / n_outputs. */
void graph_node_ports(const graph_node *node, graph_port *in, graph_port *out);

/* Runs the node's infer function; on success writes out[] back into the
 * node's output values (only dims/types that are known; a declared output
 * shape that contradicts the inferred one is an error). */
rn_status graph_infer_node(graph_node *node);

/* Infers every node in topological order (the graph must be sorted).
 * Subgraphs are inferred when their op's infer function asks for it. */
rn_status graph_infer_shapes(graph *g);

/* Families of the table (defined in graph/ops/<family>.c). */
extern const graph_op_schema graph_ops_nn[];          /* conv, pool, norm, gemm, softmax ... */
extern const graph_op_schema graph_ops_elementwise[]; /* unary, binary, compare, logic, cast ... */
extern const graph_op_schema graph_ops_movement[];    /* reshape, transpose, concat, slice ... */
extern const graph_op_schema graph_ops_reduce[];      /* Reduce*, ArgMax, ... */
extern const graph_op_schema graph_ops_indexing[];    /* Scatter*, TopK, OneHot, CumSum, ... */
extern const graph_op_schema graph_ops_image[];    /* Resize, ConvTranspose, *Normalization ... */
extern const graph_op_schema graph_ops_quant[];    /* QuantizeLinear, QLinearConv, ... */
extern const graph_op_schema graph_ops_signal[];   /* DFT, STFT, windows, MelWeightMatrix */
extern const graph_op_schema graph_ops_rnn[];      /* RNN, GRU, LSTM */
extern const graph_op_schema graph_ops_random[];   /* RandomNormal, Bernoulli, ... */
extern const graph_op_schema graph_ops_math[];     /* Einsum, Det, ... */
extern const graph_op_schema graph_ops_control[];  /* If, Loop, Scan */
extern const graph_op_schema graph_ops_sequence[]; /* Sequence*, Optional*, SequenceMap, ... */
extern const graph_op_schema graph_ops_string[];   /* StringNormalizer, StringSplit, ... */
extern const graph_op_schema graph_ops_contrib[];  /* com.microsoft: Attention, FastGelu, ... */
extern const graph_op_schema graph_ops_ml[];       /* ai.onnx.ml: LinearClassifier, Trees, ... */

/* ---- helpers every infer function may use (graph/ops/infer_util.c) ---- */

/* Numpy-style broadcast of two shapes into *out; error names the node. */
rn_status graph_broadcast_shapes(const graph_node *node, const graph_shape *a, const graph_shape *b,
                                 graph_shape *out);

/* Reads element i of an integer-typed input value (i32/i64/u8.. as int64). */
int64_t graph_port_int(const graph_port *p, size_t i);
/* Reads element i of a numeric input value as double. */
double graph_port_double(const graph_port *p, size_t i);

/* Normalises a possibly negative axis against rank; error when out of range. */
rn_status graph_normalize_axis(const graph_node *node, int64_t axis, int rank, int *out);

/* Sets out to an unknown shape of unknown rank and `type`. */
void graph_port_unknown(graph_port *out, rn_element_type type);

/* Infers the outputs of `body`, a subgraph of `node`, without changing it:
 * a copy of the body gets the kinds, types and shapes of `inputs` (one per
 * body input; where a port is not present, or leaves a part unknown, the
 * body's declaration stands) and is inferred; out[0..n_out) receive the
 * kinds, types and shapes of its results (graph/ops/control.c). Errors are
 * prefixed with the node and the body's name. */
rn_status graph_infer_body(const graph_node *node, const graph *body, const graph_port *inputs,
                           int n_in, graph_port *out, int n_out);

#endif /* RUNNEL_GRAPH_OPS_H */
