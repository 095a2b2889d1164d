/* The rn_node accessors of runnel/kernel.h and the rn_graph accessors of
 * runnel/plugin.h: how a plugin or an extension built against the installed
 * headers reads the node it is asked about and the model it compiles. */
#include <string.h>

#include "graph/graph.h"
#include "runnel/plugin.h"

int rn_graph_node_count(const rn_graph *graph)
{
    return graph->n_nodes;
}

const rn_node *rn_graph_node(const rn_graph *graph, int i)
{
    return i >= 0 && i < graph->n_nodes ? graph->nodes[i] : NULL;
}

int rn_graph_input_count(const rn_graph *graph)
{
    return graph->n_inputs;
}

const char *rn_graph_input_name(const rn_graph *graph, int i)
{
    return i >= 0 && i < graph->n_inputs ? graph->inputs[i]->name : "";
}

int rn_graph_output_count(const rn_graph *graph)
{
    return graph->n_outputs;
}

const char *rn_graph_output_name(const rn_graph *graph, int i)
{
    return i >= 0 && i < graph->n_outputs ? graph->outputs[i]->name : "";
}

const rn_kernel_tensor *rn_graph_constant(const rn_graph *graph, const char *name)
{
    const graph_value *v = graph_find_value(graph, name, false);
    return v != NULL ? v->constant : NULL;
}

const char *rn_node_name(const rn_node *node)
{
    return node->name;
}

const char *rn_node_op_type(const rn_node *node)
{
    return node->op_type;
}

const char *rn_node_domain(const rn_node *node)
{
    return node->domain;
}

int rn_node_opset(const rn_node *node)
{
    return node->opset;
}

int rn_node_input_count(const rn_node *node)
{
    return node->n_inputs;
}

int rn_node_output_count(const rn_node *node)
{
    return node->n_outputs;
}

static const graph_value *input_at(const rn_node *node, int i)
{
    return i >= 0 && i < node->n_inputs ? node->inputs[i] : NULL;
}

static const graph_value *output_at(const rn_node *node, int i)
{
    return i >= 0 && i < node->n_outputs ? node->outputs[i] : NULL;
}

const char *rn_node_input_name(const rn_node *node, int i)
{
    const graph_value *v = input_at(node, i);
    return v != NULL ? v->name : "";
}

const char *rn_node_output_name(const rn_node *node, int i)
{
    const graph_value *v = output_at(node, i);
    return v != NULL ? v->name : "";
}

rn_element_type rn_node_input_type(const rn_node *node, int i)
{
    const graph_value *v = input_at(node, i);
    return v != NULL ? v->type : RN_UNDEFINED;
}

rn_element_type rn_node_output_type(const rn_node *node, int i)
{
    const graph_value *v = output_at(node, i);
    return v != NULL ? v->type : RN_UNDEFINED;
}

static rn_partial_shape shape_of(const graph_value *v)
{
    if (v != NULL)
        return v->shape;
    rn_partial_shape unknown = {.rank = -1};
    return unknown;
}

rn_partial_shape rn_node_input_shape(const rn_node *node, int i)
{
    return shape_of(input_at(node, i));
}

rn_partial_shape rn_node_output_shape(const rn_node *node, int i)
{
    return shape_of(output_at(node, i));
}

const rn_kernel_tensor *rn_node_input_constant(const rn_node *node, int i)
{
    const graph_value *v = input_at(node, i);
    return v != NULL ? v->constant : NULL;
}

bool rn_node_has_attr(const rn_node *node, const char *name)
{
    return graph_node_attr(node, name) != NULL;
}

int64_t rn_node_attr_int(const rn_node *node, const char *name, int64_t dflt)
{
    return graph_node_attr_int(node, name, dflt);
}

float rn_node_attr_float(const rn_node *node, const char *name, float dflt)
{
    return graph_node_attr_float(node, name, dflt);
}

const char *rn_node_attr_string(const rn_node *node, const char *name, const char *dflt)
{
    return graph_node_attr_string(node, name, dflt);
}

int rn_node_attr_ints(const rn_node *node, const char *name, const int64_t **values)
{
    return graph_node_attr_ints(node, name, values);
}

int rn_node_attr_floats(const rn_node *node, const char *name, const float **values)
{
    return graph_node_attr_floats(node, name, values);
}
