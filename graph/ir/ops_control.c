/* Control-flow OpenVINO ops: If (opset8) with its then/else bodies and port
 * maps, as ONNX's If whose branches read the layer's inputs from the
 * enclosing graph; TensorIterator (opset1) and Loop (opset5), as ONNX's
 * Loop: sliced inputs are sliced in the body by the iteration number,
 * back edges become loop-carried values, and concatenated outputs come from
 * the Loop's scan outputs (stacked on a new axis 0, then moved to the
 * port map's axis). */
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
                        .owner = b->layer,
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

/* One entry of a TensorIterator's or Loop's port map. */
typedef struct loop_port {
    bool input;
    int ext;      /* external port id (-1: a special body port) */
    int internal; /* body layer id */
    bool sliced;  /* has an axis: sliced input / concatenated output */
    int64_t axis, start, end, stride, part_size;
    const char *purpose; /* Loop: current_iteration, execution_condition */
    int back_from;       /* input: the Result a back edge brings, else -1 */
    int64_t n_iter_dim;  /* sliced input: the external dim along axis */
} loop_port;

typedef struct loop_state {
    const ir_build *outer;
    int n_ports;
    loop_port *ports;
    int64_t trips;          /* iterations of the sliced inputs, -1 when none */
    graph_value *iter;      /* body: the iteration number (i64 scalar) */
    rn_element_type iter_t; /* current_iteration's precision */
    int n_params;
    int *param_ids;
    graph_value **param_values;
    int true_result; /* index of the body output that is a constant true, or -1 */
    graph_value **result_values;
} loop_state;

static rn_status port_int(const ir_build *b, const ir_xml *x, const char *name, int64_t dflt,
                          int64_t *out)
{
    const char *s = ir_xml_attr(x, name);
    if (s == NULL) {
        *out = dflt;
        return RN_OK;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || v < -(1LL << 40) || v > (1LL << 40))
        return ir_error(b, RN_PARSE_ERROR, "the port map entry at line %d: %s='%s'", x->line, name,
                        s);
    *out = v;
    return RN_OK;
}

/* The precision of body layer `id`'s <data element_type>, RN_UNDEFINED if unknown. */
static rn_element_type body_param_type(const ir_xml *body, int id)
{
    const ir_xml *layers = ir_xml_child(body, "layers");
    for (int i = 0; layers != NULL && i < layers->n_children; i++) {
        const ir_xml *l = layers->children[i];
        const char *lid = ir_xml_attr(l, "id");
        if (lid == NULL || atoi(lid) != id)
            continue;
        const ir_xml *d = ir_xml_child(l, "data");
        const char *et = d ? ir_xml_attr(d, "element_type") : NULL;
        return et ? ir_element_type(et) : RN_UNDEFINED;
    }
    return RN_UNDEFINED;
}

/* A scalar int64 expression of the body: a * iter + c. */
static rn_status affine_iter(ir_build *b, graph_value *iter, int64_t a, int64_t c,
                             graph_value **out)
{
    graph_value *k, *m, *ab[2];
    int64_t one = 1;
    IR_TRY(ir_const_i64(b, &a, 1, true, &k));
    ab[0] = iter;
    ab[1] = k;
    IR_TRY(ir_node1(b, "Mul", 14, 2, ab, &m, NULL));
    IR_TRY(ir_const_i64(b, &c, 1, true, &k));
    ab[0] = m;
    ab[1] = k;
    IR_TRY(ir_node1(b, "Add", 14, 2, ab, &m, NULL));
    IR_TRY(ir_const_i64(b, &one, 1, false, &k));
    ab[0] = m;
    ab[1] = k;
    return ir_node1(b, "Reshape", 14, 2, ab, out, NULL);
}

/* Normalised [first, past) of a sliced port along a dim of length n, and
 * the number of parts. */
static void slice_range(const loop_port *p, int64_t n, int64_t *first, int64_t *count)
{
    int64_t s = p->start < 0 ? p->start + n + 1 : p->start;
    int64_t e = p->end < 0 ? p->end + n + 1 : p->end;
    int64_t step = p->stride < 0 ? -p->stride : p->stride;
    if (step == 0)
        step = 1;
    if (p->stride >= 0) {
        *first = s;
        *count = e > s ? (e - s) / step : 0;
    } else {
        /* Backwards: start is the end of the first part. */
        *first = s;
        *count = s > e ? (s - e) / step : 0;
    }
}

/* The body's first inputs (iteration number, condition), the slices of the
 * sliced inputs, the iteration number's Parameter and a constant true for a
 * TensorIterator's (or a condition-less Loop's) condition output. */
static rn_status loop_prepare(ir_build *b, void *ctx)
{
    loop_state *ls = ctx;
    graph_value *iter, *cond;
    IR_TRY(ir_tmp_value(b, &iter));
    iter->type = RN_I64;
    iter->shape.rank = 0;
    IR_TRY(graph_add_input(b->g, iter));
    IR_TRY(ir_tmp_value(b, &cond));
    cond->type = RN_BOOL;
    cond->shape.rank = 0;
    IR_TRY(graph_add_input(b->g, cond));
    ls->iter = iter;
    for (int k = 0; k < ls->n_params; k++) {
        const loop_port *p = NULL;
        for (int i = 0; i < ls->n_ports; i++)
            if (ls->ports[i].input && ls->ports[i].internal == ls->param_ids[k])
                p = &ls->ports[i];
        if (p == NULL)
            continue;
        if (p->purpose != NULL && strcmp(p->purpose, "current_iteration") == 0) {
            if (ls->iter_t == RN_I64) {
                ls->param_values[k] = iter;
            } else {
                graph_node *c;
                IR_TRY(ir_node1(b, "Cast", 13, 1, &iter, &ls->param_values[k], &c));
                IR_TRY(ir_attr_int(c, "to", ls->iter_t));
            }
            continue;
        }
        if (!p->sliced)
            continue;
        int64_t first, count;
        slice_range(p, p->n_iter_dim, &first, &count);
        int64_t step = p->stride < 0 ? -p->stride : (p->stride ? p->stride : 1);
        graph_value *lo, *hi, *axes, *ins[4];
        /* forward: [first + i*step, + part); backward: [first - (i+1)*step, + part) */
        if (p->stride >= 0)
            IR_TRY(affine_iter(b, iter, step, first, &lo));
        else
            IR_TRY(affine_iter(b, iter, -step, first - step, &lo));
        if (p->stride >= 0)
            IR_TRY(affine_iter(b, iter, step, first + p->part_size, &hi));
        else
            IR_TRY(affine_iter(b, iter, -step, first - step + p->part_size, &hi));
        IR_TRY(ir_const_i64(b, &p->axis, 1, false, &axes));
        const ir_port *ext = input_port(ls->outer, p->ext);
        ins[0] = ext->value;
        ins[1] = lo;
        ins[2] = hi;
        ins[3] = axes;
        IR_TRY(ir_node1(b, "Slice", 13, 4, ins, &ls->param_values[k], NULL));
    }
    if (ls->true_result >= 0) {
        graph_value *t, *c;
        IR_TRY(ir_const_scalar(b, RN_I64, 1, &t));
        graph_node *n;
        IR_TRY(ir_node1(b, "Cast", 13, 1, &t, &c, &n));
        IR_TRY(ir_attr_int(n, "to", RN_BOOL));
        ls->result_values[ls->true_result] = c;
    }
    return RN_OK;
}

static rn_status read_loop_ports(ir_build *b, loop_state *ls)
{
    const ir_xml *map = ir_xml_child(b->layer->xml, "port_map");
    const ir_xml *back = ir_xml_child(b->layer->xml, "back_edges");
    if (map == NULL)
        return ir_error(b, RN_PARSE_ERROR, "has no <port_map>");
    ls->ports = calloc((size_t)map->n_children + 1, sizeof *ls->ports);
    if (ls->ports == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    for (int i = 0; i < map->n_children; i++) {
        const ir_xml *e = map->children[i];
        bool input = strcmp(e->name, "input") == 0;
        if (!input && strcmp(e->name, "output") != 0)
            continue;
        loop_port *p = &ls->ports[ls->n_ports++];
        int64_t v;
        p->input = input;
        IR_TRY(port_int(b, e, "external_port_id", -1, &v));
        p->ext = (int)v;
        IR_TRY(port_int(b, e, "internal_layer_id", -1, &v));
        p->internal = (int)v;
        p->sliced = ir_xml_attr(e, "axis") != NULL;
        IR_TRY(port_int(b, e, "axis", 0, &p->axis));
        IR_TRY(port_int(b, e, "start", 0, &p->start));
        IR_TRY(port_int(b, e, "end", -1, &p->end));
        IR_TRY(port_int(b, e, "stride", 1, &p->stride));
        IR_TRY(port_int(b, e, "part_size", 1, &p->part_size));
        p->purpose = ir_xml_attr(e, "purpose");
        p->back_from = -1;
        if (p->internal < 0)
            return ir_error(b, RN_PARSE_ERROR, "a port map entry at line %d has no internal layer",
                            e->line);
        const char *special = input ? "current_iteration" : "execution_condition";
        if (p->purpose != NULL && strcmp(p->purpose, special) != 0)
            return ir_error(b, RN_PARSE_ERROR,
                            "the port map entry at line %d: purpose '%s' (an %s may be %s)",
                            e->line, p->purpose, input ? "input" : "output", special);
        if (input && p->purpose == NULL && input_port(b, p->ext) == NULL)
            return ir_error(b, RN_PARSE_ERROR,
                            "the port map names input port %d, which the layer "
                            "lacks",
                            p->ext);
    }
    for (int i = 0; back != NULL && i < back->n_children; i++) {
        const ir_xml *e = back->children[i];
        int64_t from, to;
        IR_TRY(port_int(b, e, "from-layer", -1, &from));
        IR_TRY(port_int(b, e, "to-layer", -1, &to));
        for (int k = 0; k < ls->n_ports; k++)
            if (ls->ports[k].input && ls->ports[k].internal == to)
                ls->ports[k].back_from = (int)from;
    }
    /* The number of iterations the sliced inputs give (static dims only). */
    ls->trips = -1;
    for (int k = 0; k < ls->n_ports; k++) {
        loop_port *p = &ls->ports[k];
        if (!p->input || !p->sliced || p->purpose != NULL)
            continue;
        if (p->back_from >= 0)
            return ir_error(b, RN_UNSUPPORTED, "a sliced input with a back edge");
        const graph_shape *s = &input_port(b, p->ext)->shape;
        int64_t axis = p->axis < 0 ? p->axis + s->rank : p->axis;
        if (axis < 0 || axis >= s->rank || s->dims[axis] == RN_DIM_DYNAMIC ||
            s->dims[axis] > ((int64_t)1 << 40))
            return ir_error(b, RN_UNSUPPORTED,
                            "sliced input port %d needs a static dim along axis %lld", p->ext,
                            (long long)p->axis);
        p->axis = axis;
        p->n_iter_dim = s->dims[axis];
        int64_t first, count;
        slice_range(p, s->dims[axis], &first, &count);
        if (ls->trips < 0 || count < ls->trips)
            ls->trips = count;
    }
    return RN_OK;
}

/* Shape(v) with dims axis and axis + 1 merged into one -1. */
static rn_status merged_shape(ir_build *b, graph_value *v, int64_t axis, graph_value **out)
{
    graph_value *shape, *parts[3], *ins[4];
    int n = 0;
    int64_t zero = 0, lo = axis, hi = axis + 2, end = INT64_MAX, minus = -1, first = 0;
    IR_TRY(ir_node1(b, "Shape", 15, 1, &v, &shape, NULL));
    if (axis > 0) {
        ins[0] = shape;
        IR_TRY(ir_const_i64(b, &zero, 1, false, &ins[1]));
        IR_TRY(ir_const_i64(b, &lo, 1, false, &ins[2]));
        IR_TRY(ir_const_i64(b, &first, 1, false, &ins[3]));
        IR_TRY(ir_node1(b, "Slice", 13, 4, ins, &parts[n++], NULL));
    }
    IR_TRY(ir_const_i64(b, &minus, 1, false, &parts[n++]));
    ins[0] = shape;
    IR_TRY(ir_const_i64(b, &hi, 1, false, &ins[1]));
    IR_TRY(ir_const_i64(b, &end, 1, false, &ins[2]));
    IR_TRY(ir_const_i64(b, &first, 1, false, &ins[3]));
    IR_TRY(ir_node1(b, "Slice", 13, 4, ins, &parts[n++], NULL));
    graph_node *c;
    IR_TRY(ir_node1(b, "Concat", 13, n, parts, out, &c));
    return ir_attr_int(c, "axis", 0);
}

/* TensorIterator (opset1) and Loop (opset5) -> ONNX Loop. */
static rn_status map_loop(ir_build *b)
{
    bool is_loop = strcmp(b->layer->type, "Loop") == 0;
    IR_TRY(ir_check_ports(b, is_loop ? 2 : 0, -1, b->layer->n_out));
    const ir_xml *body_xml = ir_xml_child(b->layer->xml, "body");
    if (body_xml == NULL)
        return ir_error(b, RN_PARSE_ERROR, "has no <body>");
    if (b->layer->n_out > 60)
        return ir_error(b, RN_UNSUPPORTED, "more than 60 outputs");
    loop_state ls = {.outer = b, .true_result = -1, .iter_t = RN_I64};
    rn_status st = read_loop_ports(b, &ls);
    int np = ls.n_ports;
    ls.param_ids = calloc((size_t)np + 1, sizeof *ls.param_ids);
    ls.param_values = calloc((size_t)np + 1, sizeof *ls.param_values);
    int *result_ids = calloc((size_t)np + b->layer->n_out + 2, sizeof *result_ids);
    ls.result_values = calloc((size_t)np + b->layer->n_out + 2, sizeof *ls.result_values);
    graph_value **loop_in = calloc((size_t)np + 3, sizeof *loop_in);
    graph_value **loop_out = calloc((size_t)np + b->layer->n_out + 2, sizeof *loop_out);
    int *scan_port = calloc((size_t)b->layer->n_out + 1, sizeof *scan_port);
    if (st == RN_OK && (!ls.param_ids || !ls.param_values || !result_ids || !ls.result_values ||
                        !loop_in || !loop_out || !scan_port))
        st = rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    graph *body = NULL;
    int n_res = 0, n_carried = 0, n_scan = 0, n_in = 2;
    /* Body outputs: the condition, the carried values, then the scans. */
    int cond_from = -1;
    for (int k = 0; st == RN_OK && k < np; k++)
        if (!ls.ports[k].input && ls.ports[k].purpose != NULL &&
            strcmp(ls.ports[k].purpose, "execution_condition") == 0)
            cond_from = ls.ports[k].internal;
    if (st == RN_OK) {
        if (cond_from >= 0) {
            result_ids[n_res++] = cond_from;
        } else {
            ls.true_result = n_res;
            result_ids[n_res++] = -1;
        }
    }
    /* Parameters: the iteration number and the sliced ones are bound by
     * loop_prepare, the invariant ones to the outer value, the carried
     * ones are the body's inputs (in port map order). */
    for (int k = 0; st == RN_OK && k < np; k++) {
        loop_port *p = &ls.ports[k];
        if (!p->input)
            continue;
        ls.param_ids[ls.n_params] = p->internal;
        if (p->purpose != NULL && strcmp(p->purpose, "current_iteration") == 0) {
            ls.iter_t = body_param_type(body_xml, p->internal);
            if (ls.iter_t != RN_I64 && ls.iter_t != RN_I32)
                st = ir_error(b, RN_UNSUPPORTED, "current_iteration of precision %s",
                              rn_element_type_name(ls.iter_t));
        } else if (p->back_from >= 0) {
            loop_in[n_in++] = input_port(b, p->ext)->value;
            result_ids[n_res++] = p->back_from;
            n_carried++;
        } else if (!p->sliced) {
            ls.param_values[ls.n_params] = input_port(b, p->ext)->value;
        }
        ls.n_params++;
    }
    /* Outputs: a carried Result's last value is the Loop's; any other
     * Result (concatenated, or its last value) is a scan output. */
    for (int i = 0; st == RN_OK && i < b->layer->n_out; i++) {
        const loop_port *p = NULL;
        for (int k = 0; k < np; k++)
            if (!ls.ports[k].input && ls.ports[k].ext == b->layer->out[i].id)
                p = &ls.ports[k];
        if (p == NULL) {
            st = ir_error(b, RN_PARSE_ERROR, "the port map gives output port %d no Result",
                          b->layer->out[i].id);
            break;
        }
        scan_port[i] = -1;
        int carried = -1;
        for (int k = 0, c = 0; !p->sliced && k < np; k++)
            if (ls.ports[k].input && ls.ports[k].back_from >= 0 && !(ls.ports[k].purpose != NULL)) {
                if (ls.ports[k].back_from == p->internal)
                    carried = c;
                c++;
            }
        if (carried >= 0) {
            loop_out[carried] = b->layer->out[i].value;
            continue;
        }
        scan_port[i] = n_scan++;
        result_ids[n_res++] = p->internal;
    }
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/body/", b->layer->name);
    if (st == RN_OK) {
        ir_body spec = {.xml = body_xml,
                        .prefix = prefix,
                        .owner = b->layer,
                        .n_params = ls.n_params,
                        .param_ids = ls.param_ids,
                        .param_values = ls.param_values,
                        .n_results = n_res,
                        .result_ids = result_ids,
                        .result_values = ls.result_values,
                        .prepare = loop_prepare,
                        .ctx = &ls};
        st = ir_read_body(b, &spec, &body);
    }
    /* The Loop: trip count and condition, then the carried values. */
    if (st == RN_OK) {
        if (is_loop) {
            graph_value *m = b->layer->in[0].value;
            const graph_tensor *t = m->constant;
            bool infinite = t != NULL && graph_tensor_count(t) == 1 &&
                            ((t->type == RN_I64 && *(const int64_t *)t->data < 0) ||
                             (t->type == RN_I32 && *(const int32_t *)t->data < 0));
            loop_in[0] = NULL;
            if (!infinite)
                st = ir_as_i64(b, 0, &loop_in[0]);
            loop_in[1] = b->layer->in[1].value;
            if (st == RN_OK && ls.trips >= 0) {
                graph_value *tr, *mm[2];
                st = ir_const_i64(b, &ls.trips, 1, true, &tr);
                mm[0] = loop_in[0];
                mm[1] = tr;
                if (st == RN_OK && loop_in[0] != NULL)
                    st = ir_node1(b, "Min", 13, 2, mm, &loop_in[0], NULL);
                else if (st == RN_OK)
                    loop_in[0] = tr;
            }
        } else {
            if (ls.trips < 0)
                st = ir_error(b, RN_UNSUPPORTED, "no sliced input gives the number of iterations");
            else
                st = ir_const_i64(b, &ls.trips, 1, true, &loop_in[0]);
            graph_value *one;
            graph_node *c;
            if (st == RN_OK)
                st = ir_const_scalar(b, RN_I64, 1, &one);
            if (st == RN_OK)
                st = ir_node1(b, "Cast", 13, 1, &one, &loop_in[1], &c);
            if (st == RN_OK)
                st = ir_attr_int(c, "to", RN_BOOL);
        }
    }
    for (int k = 0; st == RN_OK && k < n_carried; k++)
        if (loop_out[k] == NULL)
            st = ir_tmp_value(b, &loop_out[k]);
    for (int k = 0; st == RN_OK && k < n_scan; k++)
        st = ir_tmp_value(b, &loop_out[n_carried + k]);
    graph_node *n = NULL;
    if (st == RN_OK)
        st = ir_node(b, "Loop", 16, n_in, loop_in, n_carried + n_scan, loop_out, &n);
    if (st == RN_OK) {
        st = ir_attr_graph(n, "body", body);
        body = NULL;
    }
    /* Scan outputs [trips, per-iteration shape...] -> the port's layout. */
    for (int i = 0; st == RN_OK && i < b->layer->n_out; i++) {
        if (scan_port[i] < 0)
            continue;
        const loop_port *p = NULL;
        for (int k = 0; k < np; k++)
            if (!ls.ports[k].input && ls.ports[k].ext == b->layer->out[i].id)
                p = &ls.ports[k];
        graph_value *v = loop_out[n_carried + scan_port[i]], *y = b->layer->out[i].value;
        const graph_shape *os = &b->layer->out[i].shape;
        if (!p->sliced) { /* the last iteration's value */
            graph_value *idx, *gi[2] = {v};
            int64_t last = -1;
            graph_node *g;
            st = ir_const_i64(b, &last, 1, true, &idx);
            gi[1] = idx;
            if (st == RN_OK)
                st = ir_node(b, "Gather", 13, 2, gi, 1, &y, &g);
            if (st == RN_OK)
                st = ir_attr_int(g, "axis", 0);
            continue;
        }
        if (os->rank < 1 || p->axis < 0 || p->axis >= os->rank) {
            st = ir_error(b, RN_UNSUPPORTED, "concatenated output port %d: axis %lld",
                          b->layer->out[i].id, (long long)p->axis);
            break;
        }
        if (p->stride < 0) { /* parts come last first */
            int64_t s0 = -1, e0 = INT64_MIN, a0 = 0, st0 = -1;
            graph_value *ins[5] = {v};
            st = ir_const_i64(b, &s0, 1, false, &ins[1]);
            if (st == RN_OK)
                st = ir_const_i64(b, &e0, 1, false, &ins[2]);
            if (st == RN_OK)
                st = ir_const_i64(b, &a0, 1, false, &ins[3]);
            if (st == RN_OK)
                st = ir_const_i64(b, &st0, 1, false, &ins[4]);
            if (st == RN_OK)
                st = ir_node1(b, "Slice", 13, 5, ins, &v, NULL);
        }
        if (st == RN_OK && p->axis > 0) { /* [N, s0..] -> [s0..s(a-1), N, sa..] */
            int64_t perm[RN_MAX_RANK + 1];
            int r = os->rank + 1, k = 0;
            for (int d = 1; d <= p->axis; d++)
                perm[k++] = d;
            perm[k++] = 0;
            for (int d = (int)p->axis + 1; d < r; d++)
                perm[k++] = d;
            graph_node *t;
            graph_value *src = v;
            st = ir_node1(b, "Transpose", 13, 1, &src, &v, &t);
            if (st == RN_OK)
                st = ir_attr_ints(t, "perm", perm, r);
        }
        /* Merge the parts' count with the axis: the shape of v with its dims
         * axis and axis + 1 replaced by -1, worked out at run time. */
        graph_value *shape = NULL, *rs[2] = {v};
        if (st == RN_OK)
            st = merged_shape(b, v, p->axis, &shape);
        rs[1] = shape;
        if (st == RN_OK)
            st = ir_node(b, "Reshape", 14, 2, rs, 1, &y, NULL);
    }
    graph_free(body);
    free(ls.ports);
    free(ls.param_ids);
    free(ls.param_values);
    free(result_ids);
    free(ls.result_values);
    free(loop_in);
    free(loop_out);
    free(scan_port);
    return st;
}

const ir_op ir_ops_control[] = {
    {"If", map_if, NULL, 0},
    {"TensorIterator", map_loop, NULL, 0},
    {"Loop", map_loop, NULL, 0},
    {NULL, NULL, NULL, 0},
};
