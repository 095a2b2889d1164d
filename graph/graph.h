/* The model IR: element types, partial shapes, values, nodes and graphs.
 *
 * A graph owns its values and nodes. Values are edges: each is produced by at
 * most one node output, or is a parameter (graph input), or is a constant
 * (initializer). Nodes are kept in topological order once graph_sort() ran
 * (the readers call it). Subgraphs of control-flow ops are graphs too, held in
 * GRAPH attributes, with `parent` pointing to the enclosing graph so that
 * names from the outer scope resolve.
 *
 * The graph knows no devices. Everything here is single-threaded: a graph is
 * built, transformed, then treated as immutable while compiled models use it.
 */
#ifndef RUNNEL_GRAPH_GRAPH_H
#define RUNNEL_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kit.h"
#include "runnel/status.h"
#include "runnel/kernel.h"
#include "runnel/tensor.h"

typedef struct graph graph;
typedef struct graph_node graph_node;
typedef struct graph_value graph_value;

/* A partial shape; rank -1 means unknown rank, a dim of RN_DIM_DYNAMIC means
 * a dim known only at run time. */
typedef rn_partial_shape graph_shape;

/* What a value holds: ONNX's tensor, sequence, optional and map types.
 * Tensors are the common case and the zero value, so every descriptor that
 * is zero-initialised is a tensor. Sequences hold tensors, or maps (kind
 * SEQUENCE_MAP); optionals hold a tensor or a sequence of tensors; a map
 * holds a keys tensor and a values tensor (runnel/kernel.h). The element
 * type of a map kind is its values' (the keys' type is in the run-time
 * value: a value's declared key type is checked when read, not kept).
 * Nested sequences and sparse tensors are not supported. */
typedef rn_kernel_kind graph_kind;
#define GRAPH_KIND_TENSOR            RN_KERNEL_TENSOR
#define GRAPH_KIND_SEQUENCE          RN_KERNEL_SEQUENCE
#define GRAPH_KIND_OPTIONAL          RN_KERNEL_OPTIONAL
#define GRAPH_KIND_OPTIONAL_SEQUENCE RN_KERNEL_OPTIONAL_SEQUENCE
#define GRAPH_KIND_MAP               RN_KERNEL_MAP
#define GRAPH_KIND_SEQUENCE_MAP      RN_KERNEL_SEQUENCE_MAP
#define GRAPH_KIND_COUNT             6

/* "tensor", "sequence", "optional tensor", "optional sequence", "map",
 * "sequence of maps". */
const char *graph_kind_name(graph_kind kind);
/* True for the two optional kinds. */
bool graph_kind_is_optional(graph_kind kind);
/* What an optional holds when it has a value (TENSOR or SEQUENCE); other
 * kinds are returned as they are. */
graph_kind graph_kind_element(graph_kind kind);
/* Whether a run-time value of kind `value` may stand for a value declared
 * `declared`: the same kind, or for an optional its element kind (a present
 * optional is its value) or itself (an absent one). */
bool graph_kind_accepts(graph_kind declared, graph_kind value);

/* A tensor descriptor: the public kernel descriptor (runnel/kernel.h). As a
 * constant (graph_value.constant, TENSOR attributes) it owns `data`
 * (malloc'ed, freed with the graph) and is dense row-major host memory; as a
 * kernel argument it only describes memory the plan owns. For STRING
 * tensors `data` is an array of `count` char* (each malloc'ed when owned).
 * SEQUENCE and OPTIONAL values are described as runnel/kernel.h says. */
typedef rn_kernel_tensor graph_tensor;

/* Number of elements (product of dims; 1 for rank 0). */
size_t graph_tensor_count(const graph_tensor *t);

/* Frees the data of an owned tensor (strings included) or of an owned
 * sequence (its items with their data), and clears it. */
void graph_tensor_release(graph_tensor *t);

/* Deep copy of a tensor, sequence or absent optional into *dst (owned). */
rn_status graph_tensor_copy(graph_tensor *dst, const graph_tensor *src);

/* Appends `item` (an owned tensor, taken over and cleared) to the owned
 * sequence *seq (a SEQUENCE_MAP stays one: its items are maps). */
rn_status graph_sequence_append(graph_tensor *seq, graph_tensor *item);

/* Checks a MAP descriptor: two 1-D items of one length, keys STRING or I64
 * (every string set), values of element type m->type. On failure writes
 * why (a sentence) and returns false. */
bool graph_map_check(const graph_tensor *m, char *why, size_t size);

/* A value's declared type as ONNX's TypeProto states it: its kind, the
 * element type of the tensors it holds, and (for tensors and optional
 * tensors) their shape; unknown parts are RN_UNDEFINED / rank -1. */
typedef struct graph_type {
    graph_kind kind;
    rn_element_type elem;
    graph_shape shape;
} graph_type;

/* Number of elements of a static shape; -1 if any dim is dynamic or the rank
 * is unknown. */
int64_t graph_shape_count(const graph_shape *s);
bool graph_shape_is_static(const graph_shape *s);
/* Writes "[1,3,?,224]" (or "[...]" for unknown rank) into buf. Returns buf. */
const char *graph_shape_str(const graph_shape *s, char *buf, size_t size);

typedef rn_attr_type graph_attr_type; /* numbers follow onnx.AttributeProto.AttributeType */
#define GRAPH_ATTR_UNDEFINED  RN_ATTR_UNDEFINED
#define GRAPH_ATTR_FLOAT      RN_ATTR_FLOAT
#define GRAPH_ATTR_INT        RN_ATTR_INT
#define GRAPH_ATTR_STRING     RN_ATTR_STRING
#define GRAPH_ATTR_TENSOR     RN_ATTR_TENSOR
#define GRAPH_ATTR_GRAPH      RN_ATTR_GRAPH
#define GRAPH_ATTR_FLOATS     RN_ATTR_FLOATS
#define GRAPH_ATTR_INTS       RN_ATTR_INTS
#define GRAPH_ATTR_STRINGS    RN_ATTR_STRINGS
#define GRAPH_ATTR_TENSORS    RN_ATTR_TENSORS
#define GRAPH_ATTR_GRAPHS     RN_ATTR_GRAPHS
#define GRAPH_ATTR_TYPE_PROTO RN_ATTR_TYPE_PROTO

/* One node attribute; owned by its node. Only the members of `type` are set:
 * scalars in f / i / s / t / g / tp, lists in count + floats / ints / strings /
 * tensors / graphs. STRING values are NUL-terminated copies (ONNX strings
 * with embedded NULs are cut at the first NUL). TYPE_PROTO values (the
 * `type` of Optional) are in tp. */
typedef struct graph_attr {
    char *name;
    graph_attr_type type;
    float f;
    int64_t i;
    char *s;
    graph_tensor *t;
    graph *g;
    int count;
    float *floats;
    int64_t *ints;
    char **strings;
    graph_tensor *tensors;
    graph **graphs;
    graph_type tp;
} graph_attr;

/* Frees what an attribute owns (not the struct itself). */
void graph_attr_release(graph_attr *a);

struct graph_value {
    char *name;
    int id;                 /* index in graph.values */
    rn_element_type type;   /* RN_UNDEFINED while unknown (of the tensors it holds) */
    graph_kind kind;        /* tensor unless declared or inferred otherwise */
    graph_shape shape;      /* declared or inferred (rank -1 for sequences) */
    graph_node *producer;   /* NULL for parameters and constants */
    int producer_output;    /* output index on producer */
    graph_tensor *constant; /* non-NULL: the value is this constant (owned) */
    bool is_parameter;      /* a graph input fed by the user */
};

struct graph_node {
    char *name;    /* unique within its graph ("" in ONNX gets a made-up name) */
    char *op_type; /* "Conv" */
    char *domain;  /* "" for the default ONNX domain */
    int opset;     /* opset version imported for `domain` */
    int id;        /* index in graph.nodes, refreshed by graph_sort */
    int n_inputs;
    graph_value **inputs; /* NULL entry: an omitted optional input */
    int n_outputs;
    graph_value **outputs; /* NULL entry: an omitted optional output */
    int n_attrs;
    graph_attr *attrs;
    int n_fused;
    char **fused_names; /* names of the original nodes this node stands for */
};

struct graph {
    char *name;
    int n_values, cap_values;
    graph_value **values;
    int n_nodes, cap_nodes;
    graph_node **nodes; /* topological order after graph_sort */
    int n_inputs;
    graph_value **inputs; /* parameters, in declaration order */
    int n_outputs;
    graph_value **outputs; /* results, in declaration order */
    int opset;             /* default-domain opset version */
    int ir_version;
    graph *parent; /* enclosing graph for subgraphs, else NULL */
    /* What reading the model let pass but a user should know (a declared
     * shape that shape inference overrode), one malloc'ed sentence each. Not
     * copied by graph_clone nor serialized: they belong to the read. */
    int n_warnings;
    char **warnings;
    /* Private: open-addressing hash of value names (slot = id + 1, 0 empty). */
    int index_cap;
    int *index;
};

/* Appends a warning (printf-style) to g->warnings. Out of memory drops it:
 * a warning is never worth failing a read for. */
void graph_add_warning(graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Creates an empty graph. `name` may be NULL. */
rn_status graph_create(const char *name, graph **out);

/* Frees the graph with its values, nodes, constants and subgraphs. NULL is a no-op. */
RN_KIT void graph_free(graph *g);

/* Adds a value named `name` (copied; must be unique in g). */
rn_status graph_add_value(graph *g, const char *name, graph_value **out);

/* The value named `name` in g, or NULL. With `outer` set, also searches the
 * enclosing graphs (for subgraph references to outer-scope names). */
graph_value *graph_find_value(const graph *g, const char *name, bool outer);

/* Marks v as a graph input (parameter) / appends it to the results. */
rn_status graph_add_input(graph *g, graph_value *v);
rn_status graph_add_output(graph *g, graph_value *v);

/* Adds a node. `inputs` entries may be NULL (omitted optional inputs);
 * `outputs` entries may be NULL (omitted optional outputs) and must not
 * already have a producer. The node's name is the sole entry of its
 * fused_names. Names are copied. */
rn_status graph_add_node(graph *g, const char *name, const char *domain, const char *op_type,
                         int opset, int n_inputs, graph_value *const *inputs, int n_outputs,
                         graph_value *const *outputs, graph_node **out);

/* Appends an attribute to a node, taking ownership of what *attr holds (the
 * struct is copied, so the caller must not release it). Duplicate names are
 * an error. */
rn_status graph_node_add_attr(graph_node *n, graph_attr *attr);

/* Appends a name to the node's fused_names. */
rn_status graph_node_add_fused_name(graph_node *n, const char *name);

/* Attribute look-ups. The typed getters return the default when the
 * attribute is absent; a present attribute of another type also yields the
 * default (graph_validate reports such mismatches against the schema). */
const graph_attr *graph_node_attr(const graph_node *n, const char *name);
int64_t graph_node_attr_int(const graph_node *n, const char *name, int64_t dflt);
float graph_node_attr_float(const graph_node *n, const char *name, float dflt);
const char *graph_node_attr_string(const graph_node *n, const char *name, const char *dflt);
/* Number of ints and *vals, or -1 (and *vals = NULL) when absent. */
int graph_node_attr_ints(const graph_node *n, const char *name, const int64_t **vals);
/* The attribute, or its default from the op's schema (graph/ops/attr_default.c,
 * rn_node_attr_*_or_default); asking for an attribute without one is a bug
 * inside runnel (an assert; NAN, 0 or NULL without asserts). */
float graph_node_attr_float_or_default(const graph_node *n, const char *name);
int64_t graph_node_attr_int_or_default(const graph_node *n, const char *name);
const char *graph_node_attr_string_or_default(const graph_node *n, const char *name);
/* Whether the node's op schema gives attribute `name` a default. */
bool graph_node_attr_has_default(const graph_node *n, const char *name);
int graph_node_attr_floats(const graph_node *n, const char *name, const float **vals);

/* Sorts nodes topologically (stable with respect to the file's order) and
 * refreshes node ids. A cycle is RN_PARSE_ERROR naming a node on it. */
rn_status graph_sort(graph *g);

/* Checks structural invariants: every node input is produced, a parameter, a
 * constant or an outer-scope value; every result is defined; names are
 * unique; every node has a schema (graph/ops.h) with a legal input/output
 * count and its required attributes. The error names the node and value. */
rn_status graph_validate(const graph *g);

/* Deep copy (constants and subgraphs included). */
rn_status graph_clone(const graph *g, graph **out);

/* Removes nodes whose outputs reach no result, and values no one uses. */
void graph_prune(graph *g);

/* The values that `sub` (a subgraph) and the subgraphs nested in it read
 * from enclosing scopes: node inputs and results that belong neither to sub
 * nor to a graph nested in it. Distinct, in first-use order (nodes in their
 * order, depth first). *out is malloc'ed (NULL when *n is 0); the caller
 * frees it. */
rn_status graph_outer_inputs(const graph *sub, graph_value ***out, int *n);

/* The union of graph_outer_inputs over every subgraph of `node` (its GRAPH
 * and GRAPHS attributes), in attribute order: the values a control-flow node
 * reads implicitly. Same ownership as graph_outer_inputs. */
rn_status graph_node_outer_inputs(const graph_node *node, graph_value ***out, int *n);

/* Makes `sub` self-contained: every value it (or a graph nested in it) reads
 * from an enclosing scope is replaced by a value of `sub` of the same name,
 * type and kind that no node produces (a "capture", to be bound from
 * outside when sub runs), and sub's parent is cleared. *out receives the
 * original outer values in the order of the captures, which are sub's values
 * captures[i] (malloc'ed arrays, NULL when *n is 0; the caller frees them). */
rn_status graph_capture_outer(graph *sub, graph_value ***outer, graph_value ***captures, int *n);

#endif /* RUNNEL_GRAPH_GRAPH_H */
