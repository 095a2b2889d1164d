/* What the files of graph/ir share: the XML element tree (xml.c), the parsed
 * layers and their ports (model.c) and the op mappers (ops_*.c) that turn one
 * layer into graph nodes. */
#ifndef RUNNEL_GRAPH_IR_INTERNAL_H
#define RUNNEL_GRAPH_IR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/* ---- the XML element tree (xml.c) ---- */

/* One element: its name, its attributes as name/value pairs, its child
 * elements and its text (character data, concatenated; "" when none). */
typedef struct ir_xml {
    char *name;
    int n_attrs;
    char **attrs; /* attrs[2i] name, attrs[2i+1] value */
    int n_children, cap_children;
    struct ir_xml **children;
    char *text;
    size_t text_len;
    int line; /* where the element starts, for errors */
} ir_xml;

/* Parses `size` bytes of XML with Expat into a tree rooted at the document
 * element. Malformed XML is RN_PARSE_ERROR naming the line, the column and
 * Expat's description. */
rn_status ir_xml_parse(const char *data, size_t size, ir_xml **out);
void ir_xml_free(ir_xml *x);
/* The value of attribute `name`, or NULL. */
const char *ir_xml_attr(const ir_xml *x, const char *name);
/* The first child element named `name`, or NULL. */
const ir_xml *ir_xml_child(const ir_xml *x, const char *name);

/* ---- layers (model.c) ---- */

/* One port of a layer: its id in the XML, its precision and dims as
 * declared, and the graph value on it (for an input port: the value its edge
 * brings; for an output port: the value it produces). */
typedef struct ir_port {
    int id;
    rn_element_type elem; /* RN_UNDEFINED when the port states no precision */
    graph_shape shape;
    graph_value *value;
    bool used; /* output ports: some edge reads it */
    const ir_xml *xml;
} ir_port;

typedef struct ir_layer {
    int id;
    const char *name;
    const char *type;    /* "Convolution" */
    const char *version; /* "opset1" */
    const ir_xml *xml;
    const ir_xml *data; /* the <data> element, or NULL */
    int n_in, n_out;
    ir_port *in, *out;
    int n_fused;
    char **fused; /* rt_info fused_names (owned) */
} ir_layer;

typedef struct ir_build ir_build;
typedef struct ir_reader ir_reader; /* model.c */

/* A mapper turns b->layer into nodes whose last outputs are the layer's
 * output values (layer->out[i].value, already in the graph). Errors name the
 * layer. A mapper checks the layer's version ("opset8") where the op's
 * meaning changed between opsets. */
typedef rn_status (*ir_map_fn)(ir_build *b);

/* One OpenVINO op the reader maps: its type, its mapper, and for the mappers
 * shared by many ops (unary, binary) the ONNX op and opset it becomes. */
typedef struct ir_op {
    const char *type;
    ir_map_fn map;
    const char *onnx;
    int opset;
} ir_op;

/* The state of turning one layer into nodes: the graph, the layer, its op,
 * and a counter for the names of the values and nodes a mapper makes up. */
struct ir_build {
    graph *g;
    const ir_layer *layer;
    const ir_op *op;
    int n_made;
    const ir_reader *reader; /* for bodies: the weights, the nesting depth */
};

/* How deep bodies (If's branches, Loop and TensorIterator bodies) nest. */
#define IR_MAX_DEPTH 8

/* One body of a control-flow layer: the element holding its <layers> and
 * <edges>, how its Parameters meet the outside (param_ids[k], the internal
 * layer id, reads param_values[k], a value of an enclosing graph; NULL makes
 * it the body graph's next input) and which Results become the body graph's
 * outputs, in order. Value names get `prefix`. */
typedef struct ir_body {
    const ir_xml *xml;
    const char *prefix;
    const ir_layer *owner; /* the layer that holds the body */
    int n_params;
    const int *param_ids;
    graph_value **param_values;
    int n_results;
    const int *result_ids;
    /* result_ids[k] < 0: the body output is result_values[k] instead, a
     * value prepare made (optional). */
    graph_value **result_values;
    /* (optional) Runs on the new body graph before its layers are read:
     * may add the graph's first inputs and nodes, and bind param_values. */
    rn_status (*prepare)(ir_build *body, void *ctx);
    void *ctx;
} ir_body;

/* Reads a body into a new graph whose parent is outer->g (owned by the
 * caller on success). Errors name the outer layer and the body. */
rn_status ir_read_body(ir_build *outer, ir_body *body, graph **out);

/* The entry of an op type ("Convolution"), or NULL when runnel has none. */
const ir_op *ir_op_find(const char *type);

/* The families of the table, each ending with a zeroed entry. */
extern const ir_op ir_ops_elementwise[]; /* ops_elementwise.c */
extern const ir_op ir_ops_nn[];          /* ops_nn.c */
extern const ir_op ir_ops_movement[];    /* ops_movement.c */
extern const ir_op ir_ops_rnn[];         /* ops_rnn.c */
extern const ir_op ir_ops_control[];     /* ops_control.c */

/* The element type of an OpenVINO element_type ("f32") or port precision
 * ("FP32") name; RN_UNDEFINED when unknown. */
rn_element_type ir_element_type(const char *name);

/* ---- what mappers use (ops_util.c) ---- */

#define IR_LAYER_FMT     "layer '%s' (%s, id %d): "
#define IR_LAYER_ARGS(l) (l)->name, (l)->type, (l)->id

/* rn_set_error with the layer named first. */
rn_status ir_error(const ir_build *b, rn_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The <data> attribute `name` of the layer, or `dflt` when absent. */
const char *ir_data_str(const ir_build *b, const char *name, const char *dflt);
/* Parses an integer / float / bool ("true", "false", "1", "0") attribute;
 * malformed is RN_PARSE_ERROR naming the layer and attribute. */
rn_status ir_data_int(const ir_build *b, const char *name, int64_t dflt, int64_t *out);
rn_status ir_data_float(const ir_build *b, const char *name, float dflt, float *out);
rn_status ir_data_bool(const ir_build *b, const char *name, bool dflt, bool *out);
/* Parses a comma-separated list of integers ("2, 2"; "" is empty) into
 * vals[0..*n), at most `max`. Absent: *n = -1. */
rn_status ir_data_ints(const ir_build *b, const char *name, int64_t *vals, int max, int *n);

/* A new value of b's graph with a made-up name derived from the layer's. */
rn_status ir_tmp_value(ir_build *b, graph_value **out);
/* A new constant value holding `n` int64s: rank 1 of n, or rank 0 when
 * `scalar` (n must be 1). */
rn_status ir_const_i64(ir_build *b, const int64_t *vals, int n, bool scalar, graph_value **out);
/* A new constant scalar of element type `elem` (f32, f64, i32, i64)
 * with value v. */
rn_status ir_const_scalar(ir_build *b, rn_element_type elem, double v, graph_value **out);

/* A new constant of element type `elem` and shape dims[0..rank), all zero. */
rn_status ir_const_zeros(ir_build *b, rn_element_type elem, int rank, const int64_t *dims,
                         graph_value **out);

/* Adds a node of ONNX op `op` (default domain, opset `opset`). With outputs
 * NULL the node gets n_out new values (returned in made[] when not NULL). The
 * node is named after the layer (made-up suffixes for all but the layer's
 * last node), and its fused names are the layer's name and rt_info fused
 * names. */
rn_status ir_node(ir_build *b, const char *op, int opset, int n_in, graph_value *const *inputs,
                  int n_out, graph_value *const *outputs, graph_node **node);
/* ir_node with one input list and one new output value in *out. */
rn_status ir_node1(ir_build *b, const char *op, int opset, int n_in, graph_value *const *inputs,
                   graph_value **out, graph_node **node);

/* Attribute helpers (the node takes ownership). */
rn_status ir_attr_int(graph_node *n, const char *name, int64_t v);
rn_status ir_attr_float(graph_node *n, const char *name, float v);
rn_status ir_attr_str(graph_node *n, const char *name, const char *v);
rn_status ir_attr_ints(graph_node *n, const char *name, const int64_t *v, int count);
rn_status ir_attr_strs(graph_node *n, const char *name, const char *const *v, int count);
rn_status ir_attr_floats(graph_node *n, const char *name, const float *v, int count);
/* A GRAPH attribute: the node takes g over, also on failure. */
rn_status ir_attr_graph(graph_node *n, const char *name, graph *g);

/* Input i's value cast to int64 (a Cast node when it is another integer
 * type), as ONNX's shape, axes and index inputs want. */
rn_status ir_as_i64(ir_build *b, int i, graph_value **out);
/* The int64 values of input i when it is a constant of integer type: *n of
 * them into vals (at most max). Not a constant is RN_UNSUPPORTED naming
 * `what`. */
rn_status ir_const_ints(ir_build *b, int i, const char *what, int64_t *vals, int max, int *n);

/* The values of input i, a constant of any numeric type, as doubles (as
 * ir_const_ints). */
rn_status ir_const_doubles(ir_build *b, int i, const char *what, double *vals, int max, int *n);

/* Checks that the layer has between lo and hi inputs and exactly n_out
 * outputs (hi -1: any number). */
rn_status ir_check_ports(const ir_build *b, int lo, int hi, int n_out);

/* The opset number of the layer's version ("opset8" -> 8; 0 when it is not
 * an opset). */
int ir_layer_opset(const ir_build *b);

/* A Transpose of value v (rank `rank`) swapping its last two dims. */
rn_status ir_swap_last(ir_build *b, graph_value *v, int rank, graph_value **out);

#define IR_TRY(expr)                                                                               \
    do {                                                                                           \
        rn_status ir_try_ = (expr);                                                                \
        if (ir_try_ != RN_OK)                                                                      \
            return ir_try_;                                                                        \
    } while (0)

#endif /* RUNNEL_GRAPH_IR_INTERNAL_H */
