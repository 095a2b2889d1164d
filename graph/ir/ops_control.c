/* Control-flow OpenVINO ops: If (opset8) with its then/else bodies and port
 * maps, as ONNX's If whose branches read the layer's inputs from the
 * enclosing graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir/ir_internal.h"

/* The input port of the layer with XML id `id`, or NULL. */
static const ir_port *input_port(const ir_build *b, int id)
{
    for (int i = 0; i < b->layer->n_in; i++)
        if (b->layer->in[i].id == id)
            return &b->layer->in[i];
    return NULL;
}

static rn_status map_attr_int(const ir_build *b, const ir_xml *x, const char *name, int *out)
{
    const char *s = ir_xml_attr(x, name);
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (s == NULL || end == s || *end != '\0' || v < -1000000 || v > 1000000)
        return ir_error(b, RN_PARSE_ERROR, "the port map entry at line %d needs an integer %s",
                        x->line, name);
    *out = (int)v;
    return RN_OK;
}

/* One branch of an If: its port map binds layer inputs to the body's
 * Parameters; its outputs are the Results the map names for each of the
 * layer's output ports, in port order. */
static rn_status read_branch(ir_build *b, const char *which, graph **out)
{
    char map_name[32], body_name[32], prefix[600];
    snprintf(map_name, sizeof map_name, "%s_port_map", which);
    snprintf(body_name, sizeof body_name, "%s_body", which);
    const ir_xml *map = ir_xml_child(b->layer->xml, map_name);
    const ir_xml *body_xml = ir_xml_child(b->layer->xml, body_name);
    if (map == NULL || body_xml == NULL)
        return ir_error(b, RN_PARSE_ERROR, "has no <%s> or no <%s>", map_name, body_name);
    int n = map->n_children;
    int *param_ids = calloc((size_t)n + 1, sizeof *param_ids);
    graph_value **values = calloc((size_t)n + 1, sizeof *values);
    int *result_ids = calloc((size_t)b->layer->n_out + 1, sizeof *result_ids);
    rn_status st = param_ids && values && result_ids
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    int n_params = 0;
    for (int i = 0; st == RN_OK && i < b->layer->n_out; i++)
        result_ids[i] = -1;
    for (int i = 0; st == RN_OK && i < n; i++) {
        const ir_xml *e = map->children[i];
        int ext, internal;
        if ((st = map_attr_int(b, e, "external_port_id", &ext)) != RN_OK ||
            (st = map_attr_int(b, e, "internal_layer_id", &internal)) != RN_OK)
            break;
        if (strcmp(e->name, "input") == 0) {
            const ir_port *p = input_port(b, ext);
            if (p == NULL || p == &b->layer->in[0]) {
                st = ir_error(b, RN_PARSE_ERROR,
                              "<%s> binds input port %d, which is no data input of the layer",
                              map_name, ext);
                break;
            }
            param_ids[n_params] = internal;
            values[n_params++] = p->value;
        } else if (strcmp(e->name, "output") == 0) {
            int k = 0;
            while (k < b->layer->n_out && b->layer->out[k].id != ext)
                k++;
            if (k == b->layer->n_out) {
                st = ir_error(b, RN_PARSE_ERROR, "<%s> names output port %d, which the layer lacks",
                              map_name, ext);
                break;
            }
            result_ids[k] = internal;
        }
    }
    for (int i = 0; st == RN_OK && i < b->layer->n_out; i++)
        if (result_ids[i] < 0)
            st = ir_error(b, RN_PARSE_ERROR, "<%s> gives output port %d no Result", map_name,
                          b->layer->out[i].id);
    if (st == RN_OK) {
        snprintf(prefix, sizeof prefix, "%s/%s/", b->layer->name, which);
        ir_body body = {.xml = body_xml,
                        .prefix = prefix,
                        .n_params = n_params,
                        .param_ids = param_ids,
                        .param_values = values,
                        .n_results = b->layer->n_out,
                        .result_ids = result_ids};
        st = ir_read_body(b, &body, out);
    }
    free(param_ids);
    free(values);
    free(result_ids);
    return st;
}

/* If (opset8): ONNX's If, the condition its one input, the branches
 * graphs that read the layer's other inputs from the enclosing scope. */
static rn_status map_if(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, -1, b->layer->n_out));
    if (b->layer->n_out < 1)
        return ir_error(b, RN_PARSE_ERROR, "has no output ports");
    graph *then_g = NULL, *else_g = NULL;
    IR_TRY(read_branch(b, "then", &then_g));
    rn_status st = read_branch(b, "else", &else_g);
    if (st != RN_OK) {
        graph_free(then_g);
        return st;
    }
    graph_value *outs[64];
    if (b->layer->n_out > 64) {
        graph_free(then_g);
        graph_free(else_g);
        return ir_error(b, RN_UNSUPPORTED, "more than 64 outputs");
    }
    for (int i = 0; i < b->layer->n_out; i++)
        outs[i] = b->layer->out[i].value;
    graph_value *cond = b->layer->in[0].value;
    graph_node *n;
    st = ir_node(b, "If", 16, 1, &cond, b->layer->n_out, outs, &n);
    if (st != RN_OK) {
        graph_free(then_g);
        graph_free(else_g);
        return st;
    }
    st = ir_attr_graph(n, "then_branch", then_g);
    if (st != RN_OK) {
        graph_free(else_g);
        return st;
    }
    return ir_attr_graph(n, "else_branch", else_g);
}

const ir_op ir_ops_control[] = {
    {"If", map_if, NULL, 0},
    {NULL, NULL, NULL, 0},
};
