/* An IR document -> graph: the <net>'s layers and their ports, the edges
 * between ports, Const layers read from the .bin, Parameter and Result
 * layers, and every other layer handed to its op mapper (ops.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/ir/ir_internal.h"
#include "graph/ir/ir_reader.h"
#include "graph/ops.h"

/* The state of reading one document, or one body of a control-flow layer
 * (then_body, else_body, body): the element holding <layers> and <edges>,
 * the weights, and for a body how its Parameters and Results meet the
 * layer outside. */
typedef struct ir_reader {
    const char *what; /* the model's name, for errors */
    const ir_xml *net;
    const unsigned char *bin;
    size_t bin_size;
    int n_layers;
    ir_layer *layers; /* sorted by id */
    graph *g;
    ir_body *body; /* NULL for the document's own net */
    int depth;     /* bodies nest: 0 for the net */
} reader;

rn_element_type ir_element_type(const char *name)
{
    static const struct {
        const char *name;
        rn_element_type type;
    } table[] = {
        {"f32", RN_F32},         {"FP32", RN_F32},      {"f16", RN_F16},
        {"FP16", RN_F16},        {"bf16", RN_BF16},     {"BF16", RN_BF16},
        {"f64", RN_F64},         {"FP64", RN_F64},      {"i8", RN_I8},
        {"I8", RN_I8},           {"i16", RN_I16},       {"I16", RN_I16},
        {"i32", RN_I32},         {"I32", RN_I32},       {"i64", RN_I64},
        {"I64", RN_I64},         {"u8", RN_U8},         {"U8", RN_U8},
        {"u16", RN_U16},         {"U16", RN_U16},       {"u32", RN_U32},
        {"U32", RN_U32},         {"u64", RN_U64},       {"U64", RN_U64},
        {"boolean", RN_BOOL},    {"BOOL", RN_BOOL},     {"f8e4m3", RN_F8E4M3FN},
        {"F8E4M3", RN_F8E4M3FN}, {"f8e5m2", RN_F8E5M2}, {"F8E5M2", RN_F8E5M2},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].type;
    return RN_UNDEFINED;
}

static void free_layers(reader *r)
{
    for (int i = 0; i < r->n_layers; i++) {
        ir_layer *l = &r->layers[i];
        free(l->in);
        free(l->out);
        for (int k = 0; k < l->n_fused; k++)
            free(l->fused[k]);
        free(l->fused);
    }
    free(r->layers);
}

/* Parses a whole decimal integer (an id, a dim, an offset). */
static bool parse_i64(const char *s, int64_t *out)
{
    if (s == NULL)
        return false;
    while (*s == ' ')
        s++;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ')
        end++;
    if (end == s || *end != '\0' || errno != 0)
        return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int *out)
{
    int64_t v;
    if (!parse_i64(s, &v) || v < INT_MIN || v > INT_MAX)
        return false;
    *out = (int)v;
    return true;
}

/* A dim as IR writes it: a number, -1 or "?" for a dynamic dim, or a range
 * "1..10" (also dynamic here). */
static bool parse_dim(const char *s, int64_t *out)
{
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    if (strchr(s, '?') != NULL || strstr(s, "..") != NULL) {
        *out = RN_DIM_DYNAMIC;
        return true;
    }
    char buf[64];
    size_t n = strcspn(s, " \n\t\r");
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    int64_t v;
    if (!parse_i64(buf, &v) || v < -1)
        return false;
    *out = v < 0 ? RN_DIM_DYNAMIC : v;
    return true;
}

/* A shape attribute: "1,3,224,224", "?,3,-1" or "" (a scalar). */
static rn_status parse_shape_attr(const ir_layer *l, const char *s, graph_shape *out)
{
    out->rank = 0;
    const char *p = s;
    while (*p == ' ')
        p++;
    while (*p != '\0') {
        char item[64];
        size_t n = strcspn(p, ",");
        if (out->rank == RN_MAX_RANK)
            return rn_set_error(RN_UNSUPPORTED, IR_LAYER_FMT "shape '%s' has more than %d dims",
                                IR_LAYER_ARGS(l), s, RN_MAX_RANK);
        if (n >= sizeof item || n == 0)
            return rn_set_error(RN_PARSE_ERROR, IR_LAYER_FMT "malformed shape '%s'",
                                IR_LAYER_ARGS(l), s);
        memcpy(item, p, n);
        item[n] = '\0';
        if (!parse_dim(item, &out->dims[out->rank++]))
            return rn_set_error(RN_PARSE_ERROR, IR_LAYER_FMT "malformed shape '%s'",
                                IR_LAYER_ARGS(l), s);
        p += n;
        if (*p == ',')
            p++;
    }
    return RN_OK;
}

static rn_status parse_port(const ir_layer *l, const ir_xml *x, ir_port *p)
{
    p->xml = x;
    p->shape.rank = 0;
    if (!parse_int(ir_xml_attr(x, "id"), &p->id))
        return rn_set_error(RN_PARSE_ERROR, IR_LAYER_FMT "a port at line %d has no integer id",
                            IR_LAYER_ARGS(l), x->line);
    const char *prec = ir_xml_attr(x, "precision");
    p->elem = RN_UNDEFINED;
    if (prec != NULL && (p->elem = ir_element_type(prec)) == RN_UNDEFINED)
        return rn_set_error(RN_UNSUPPORTED,
                            IR_LAYER_FMT "port %d: unknown or unsupported "
                                         "precision '%s'",
                            IR_LAYER_ARGS(l), p->id, prec);
    for (int i = 0; i < x->n_children; i++) {
        const ir_xml *d = x->children[i];
        if (strcmp(d->name, "dim") != 0)
            continue;
        if (p->shape.rank == RN_MAX_RANK)
            return rn_set_error(RN_UNSUPPORTED, IR_LAYER_FMT "port %d has more than %d dims",
                                IR_LAYER_ARGS(l), p->id, RN_MAX_RANK);
        if (!parse_dim(d->text, &p->shape.dims[p->shape.rank++]))
            return rn_set_error(RN_PARSE_ERROR, IR_LAYER_FMT "port %d: malformed dim '%s'",
                                IR_LAYER_ARGS(l), p->id, d->text);
    }
    return RN_OK;
}

static rn_status parse_ports(const ir_layer *l, const ir_xml *list, ir_port **out, int *n)
{
    *n = 0;
    *out = NULL;
    if (list == NULL)
        return RN_OK;
    *out = calloc((size_t)list->n_children + 1, sizeof **out);
    if (*out == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    for (int i = 0; i < list->n_children; i++) {
        if (strcmp(list->children[i]->name, "port") != 0)
            continue;
        rn_status st = parse_port(l, list->children[i], &(*out)[*n]);
        if (st != RN_OK)
            return st;
        (*n)++;
    }
    return RN_OK;
}

/* The rt_info fused names ("a,b,c") of a layer, if it keeps any. */
static rn_status parse_fused_names(ir_layer *l)
{
    const ir_xml *rt = ir_xml_child(l->xml, "rt_info");
    if (rt == NULL)
        return RN_OK;
    for (int i = 0; i < rt->n_children; i++) {
        const ir_xml *a = rt->children[i];
        const char *name = ir_xml_attr(a, "name");
        const char *value = ir_xml_attr(a, "value");
        if (strcmp(a->name, "attribute") != 0 || name == NULL || value == NULL ||
            strncmp(name, "fused_names", 11) != 0)
            continue;
        for (const char *p = value; *p != '\0';) {
            size_t n = strcspn(p, ",");
            if (n > 0) {
                char **f = realloc(l->fused, (size_t)(l->n_fused + 1) * sizeof *f);
                if (f == NULL)
                    return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
                l->fused = f;
                if ((f[l->n_fused] = strndup(p, n)) == NULL)
                    return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
                l->n_fused++;
            }
            p += n;
            if (*p == ',')
                p++;
        }
    }
    return RN_OK;
}

static int layer_cmp(const void *a, const void *b)
{
    int x = ((const ir_layer *)a)->id, y = ((const ir_layer *)b)->id;
    return (x > y) - (x < y);
}

static ir_layer *find_layer(const reader *r, int id)
{
    ir_layer key = {.id = id};
    return bsearch(&key, r->layers, (size_t)r->n_layers, sizeof key, layer_cmp);
}

static ir_port *find_port(ir_port *ports, int n, int id)
{
    for (int i = 0; i < n; i++)
        if (ports[i].id == id)
            return &ports[i];
    return NULL;
}

static rn_status read_layers(reader *r)
{
    const ir_xml *list = ir_xml_child(r->net, "layers");
    if (list == NULL)
        return rn_set_error(RN_PARSE_ERROR, "<net> has no <layers>");
    r->layers = calloc((size_t)list->n_children + 1, sizeof *r->layers);
    if (r->layers == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    for (int i = 0; i < list->n_children; i++) {
        const ir_xml *x = list->children[i];
        if (strcmp(x->name, "layer") != 0)
            continue;
        ir_layer *l = &r->layers[r->n_layers++];
        l->xml = x;
        l->name = ir_xml_attr(x, "name");
        l->type = ir_xml_attr(x, "type");
        l->version = ir_xml_attr(x, "version");
        if (l->version == NULL)
            l->version = "opset1";
        if (!parse_int(ir_xml_attr(x, "id"), &l->id) || l->name == NULL || l->type == NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "the layer at line %d needs an integer id, a name and a type",
                                x->line);
        l->data = ir_xml_child(x, "data");
        rn_status st = parse_ports(l, ir_xml_child(x, "input"), &l->in, &l->n_in);
        if (st == RN_OK)
            st = parse_ports(l, ir_xml_child(x, "output"), &l->out, &l->n_out);
        if (st == RN_OK)
            st = parse_fused_names(l);
        if (st != RN_OK)
            return st;
        for (int a = 0; a < l->n_in + l->n_out; a++)
            for (int b = a + 1; b < l->n_in + l->n_out; b++) {
                int ia = a < l->n_in ? l->in[a].id : l->out[a - l->n_in].id;
                int ib = b < l->n_in ? l->in[b].id : l->out[b - l->n_in].id;
                if (ia == ib)
                    return rn_set_error(RN_PARSE_ERROR, IR_LAYER_FMT "two ports have id %d",
                                        IR_LAYER_ARGS(l), ia);
            }
    }
    qsort(r->layers, (size_t)r->n_layers, sizeof *r->layers, layer_cmp);
    for (int i = 1; i < r->n_layers; i++)
        if (r->layers[i].id == r->layers[i - 1].id)
            return rn_set_error(RN_PARSE_ERROR, "two layers have id %d ('%s' and '%s')",
                                r->layers[i].id, r->layers[i - 1].name, r->layers[i].name);
    return RN_OK;
}

/* The name of an output port's value: the port's first tensor name, else
 * the layer's name (single output) or "layer:port", made unique. */
static rn_status add_port_value(reader *r, const ir_layer *l, ir_port *p)
{
    char name[600];
    const char *names = ir_xml_attr(p->xml, "names");
    size_t n = names ? strcspn(names, ",") : 0;
    /* A body's names start with the body's prefix: they must not meet the
     * names of the enclosing graphs, which a body's nodes may also read. */
    int pre = r->body ? snprintf(name, 300, "%s", r->body->prefix) : 0;
    if (pre < 0 || pre >= 300)
        pre = 0;
    if (n > 0 && n < sizeof name - (size_t)pre) {
        memcpy(name + pre, names, n);
        name[pre + n] = '\0';
    } else if (l->n_out == 1) {
        snprintf(name + pre, sizeof name - (size_t)pre, "%s", l->name);
    } else {
        snprintf(name + pre, sizeof name - (size_t)pre, "%s:%d", l->name, p->id);
    }
    bool outer = r->body != NULL;
    if (graph_find_value(r->g, name, outer) != NULL) {
        size_t len = strlen(name);
        for (int k = 1; graph_find_value(r->g, name, outer) != NULL; k++)
            snprintf(name + len, sizeof name - len, "#%d", k);
    }
    rn_status st = graph_add_value(r->g, name, &p->value);
    if (st != RN_OK)
        return st;
    p->value->type = p->elem;
    p->value->shape = p->shape;
    return RN_OK;
}

static rn_status read_edges(reader *r)
{
    const ir_xml *list = ir_xml_child(r->net, "edges");
    for (int i = 0; list != NULL && i < list->n_children; i++) {
        const ir_xml *e = list->children[i];
        if (strcmp(e->name, "edge") != 0)
            continue;
        int fl, fp, tl, tp;
        if (!parse_int(ir_xml_attr(e, "from-layer"), &fl) ||
            !parse_int(ir_xml_attr(e, "from-port"), &fp) ||
            !parse_int(ir_xml_attr(e, "to-layer"), &tl) ||
            !parse_int(ir_xml_attr(e, "to-port"), &tp))
            return rn_set_error(RN_PARSE_ERROR,
                                "the edge at line %d needs integer from-layer, from-port, "
                                "to-layer and to-port",
                                e->line);
        ir_layer *from = find_layer(r, fl), *to = find_layer(r, tl);
        if (from == NULL || to == NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "the edge at line %d connects layer %d, "
                                "which does not exist",
                                e->line, from ? tl : fl);
        ir_port *src = find_port(from->out, from->n_out, fp);
        ir_port *dst = find_port(to->in, to->n_in, tp);
        if (src == NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "the edge at line %d starts at output port %d "
                                "of layer '%s' (id %d), which has no such output port",
                                e->line, fp, from->name, fl);
        if (dst == NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "the edge at line %d ends at input port %d "
                                "of layer '%s' (id %d), which has no such input port",
                                e->line, tp, to->name, tl);
        if (dst->value != NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "input port %d of layer '%s' (id %d) has "
                                "two incoming edges (the second at line %d)",
                                tp, to->name, tl, e->line);
        if (src->elem != RN_UNDEFINED && dst->elem != RN_UNDEFINED && src->elem != dst->elem)
            return rn_set_error(RN_PARSE_ERROR,
                                "the edge at line %d joins output port %d "
                                "of layer '%s' (%s) to input port %d of layer '%s' (%s): the "
                                "precisions differ",
                                e->line, fp, from->name, rn_element_type_name(src->elem), tp,
                                to->name, rn_element_type_name(dst->elem));
        dst->value = src->value;
        dst->elem = src->elem != RN_UNDEFINED ? src->elem : dst->elem;
        src->used = true;
    }
    for (int i = 0; i < r->n_layers; i++)
        for (int k = 0; k < r->layers[i].n_in; k++)
            if (r->layers[i].in[k].value == NULL)
                return rn_set_error(RN_PARSE_ERROR,
                                    "input port %d of layer '%s' (id %d) "
                                    "has no incoming edge",
                                    r->layers[i].in[k].id, r->layers[i].name, r->layers[i].id);
    return RN_OK;
}

static bool same_shape(const graph_shape *a, const graph_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* A Const layer: its bytes [offset, offset + size) of the .bin. */
static rn_status read_const(reader *r, ir_layer *l)
{
    ir_build b = {.g = r->g, .layer = l, .reader = r};
    rn_status st = ir_check_ports(&b, 0, 0, 1);
    if (st != RN_OK)
        return st;
    const char *et = ir_data_str(&b, "element_type", NULL);
    const char *shape_s = ir_data_str(&b, "shape", NULL);
    int64_t offset, size;
    if (et == NULL || shape_s == NULL || !parse_i64(ir_data_str(&b, "offset", NULL), &offset) ||
        !parse_i64(ir_data_str(&b, "size", NULL), &size))
        return ir_error(&b, RN_PARSE_ERROR,
                        "<data> needs element_type, shape and integer offset and size");
    rn_element_type elem = ir_element_type(et);
    if (elem == RN_UNDEFINED)
        return ir_error(&b, RN_UNSUPPORTED, "unknown or unsupported element_type '%s'", et);
    graph_tensor t = {.type = elem};
    graph_shape shape;
    if ((st = parse_shape_attr(l, shape_s, &shape)) != RN_OK)
        return st;
    if (!graph_shape_is_static(&shape))
        return ir_error(&b, RN_PARSE_ERROR, "a constant's shape '%s' has a dynamic dim", shape_s);
    ir_port *p = &l->out[0];
    if (p->elem != RN_UNDEFINED && p->elem != elem)
        return ir_error(&b, RN_PARSE_ERROR, "element_type %s differs from its port's precision %s",
                        et, rn_element_type_name(p->elem));
    if (!same_shape(&shape, &p->shape)) {
        char a[128], c[128];
        return ir_error(&b, RN_PARSE_ERROR, "shape %s differs from its port's dims %s",
                        graph_shape_str(&shape, a, sizeof a),
                        graph_shape_str(&p->shape, c, sizeof c));
    }
    size_t count = (size_t)graph_shape_count(&shape);
    size_t esize = rn_element_type_size(elem);
    /* OpenVINO writes an empty constant with a few bytes (size 1). */
    bool empty_ok = count == 0 && size >= 0 && (uint64_t)size <= esize;
    if (esize == 0 || (count != 0 && (size_t)-1 / count < esize) || size < 0 ||
        ((uint64_t)size != (uint64_t)(count * esize) && !empty_ok))
        return ir_error(&b, RN_PARSE_ERROR, "size %lld does not match %zu elements of %s",
                        (long long)size, count, et);
    if (r->bin == NULL && size > 0)
        return ir_error(&b, RN_IO_ERROR,
                        "reads %lld bytes of weights, but there is no .bin "
                        "beside the model",
                        (long long)size);
    if (offset < 0)
        return ir_error(&b, RN_PARSE_ERROR, "offset %lld lies outside the %zu-byte .bin",
                        (long long)offset, r->bin_size);
    /* size >= 0 here: both fit in 63 bits, so their sum fits in 64. */
    if ((uint64_t)offset > r->bin_size || (uint64_t)size > r->bin_size - (uint64_t)offset)
        return ir_error(&b, RN_PARSE_ERROR, "bytes [%llu, %llu) lie outside the %zu-byte .bin",
                        (unsigned long long)offset,
                        (unsigned long long)offset + (unsigned long long)size, r->bin_size);
    t.rank = shape.rank;
    memcpy(t.dims, shape.dims, sizeof t.dims);
    t.nbytes = count * esize;
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    graph_tensor *holder = calloc(1, sizeof *holder);
    if (t.data == NULL || holder == NULL) {
        free(t.data);
        free(holder);
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    }
    if (t.nbytes > 0)
        memcpy(t.data, r->bin + offset, t.nbytes);
    *holder = t;
    p->value->constant = holder;
    p->value->type = elem;
    p->value->shape = shape;
    return RN_OK;
}

/* Where Parameter layer `id` of a body stands in the body's parameter list,
 * or -1. */
static int body_param(const reader *r, int id)
{
    for (int i = 0; r->body != NULL && i < r->body->n_params; i++)
        if (r->body->param_ids[i] == id)
            return i;
    return -1;
}

static rn_status read_parameter(reader *r, ir_layer *l)
{
    ir_build b = {.g = r->g, .layer = l, .reader = r};
    rn_status st = ir_check_ports(&b, 0, 0, 1);
    if (st != RN_OK)
        return st;
    ir_port *p = &l->out[0];
    const char *et = ir_data_str(&b, "element_type", NULL);
    if (et != NULL) {
        rn_element_type elem = ir_element_type(et);
        if (elem == RN_UNDEFINED)
            return ir_error(&b, RN_UNSUPPORTED, "unknown or unsupported element_type '%s'", et);
        if (p->elem != RN_UNDEFINED && p->elem != elem)
            return ir_error(&b, RN_PARSE_ERROR,
                            "element_type %s differs from its port's precision %s", et,
                            rn_element_type_name(p->elem));
        p->value->type = elem;
    }
    if (p->value->type == RN_UNDEFINED)
        return ir_error(&b, RN_PARSE_ERROR, "states no element_type");
    /* A body's inputs are added in the order of its parameter list. */
    return r->body != NULL ? RN_OK : graph_add_input(r->g, p->value);
}

/* A body's Parameter bound to a value of the enclosing graph reads that
 * value; the others become new values (and, later, the body's inputs). */
static rn_status add_layer_values(reader *r, ir_layer *l)
{
    int k = strcmp(l->type, "Parameter") == 0 ? body_param(r, l->id) : -1;
    if (r->body != NULL && strcmp(l->type, "Parameter") == 0 && k < 0)
        return rn_set_error(RN_PARSE_ERROR,
                            IR_LAYER_FMT "a Parameter of a body that no port map names",
                            IR_LAYER_ARGS(l));
    if (k >= 0 && r->body->param_values[k] != NULL) {
        if (l->n_out != 1)
            return rn_set_error(RN_PARSE_ERROR, IR_LAYER_FMT "has %d output ports, expected 1",
                                IR_LAYER_ARGS(l), l->n_out);
        l->out[0].value = r->body->param_values[k];
        return RN_OK;
    }
    for (int i = 0; i < l->n_out; i++) {
        rn_status st = add_port_value(r, l, &l->out[i]);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

/* A body's inputs (its unbound Parameters, in the order of the parameter
 * list) and outputs (the values its Results read, in the order of the
 * result list; one that the body does not compute goes through an
 * Identity, so that every output is a node's). */
static rn_status body_io(reader *r)
{
    ir_body *body = r->body;
    for (int k = 0; k < body->n_params; k++) {
        if (body->param_values[k] != NULL)
            continue;
        ir_layer *l = find_layer(r, body->param_ids[k]);
        if (l == NULL || strcmp(l->type, "Parameter") != 0)
            return rn_set_error(RN_PARSE_ERROR,
                                "a port map names layer %d of a body, which is no Parameter",
                                body->param_ids[k]);
        IR_TRY(graph_add_input(r->g, l->out[0].value));
    }
    for (int k = 0; k < body->n_results; k++) {
        ir_layer *l = body->owner != NULL ? (ir_layer *)body->owner : NULL;
        graph_value *v;
        if (body->result_ids[k] < 0 && body->result_values != NULL &&
            body->result_values[k] != NULL) {
            v = body->result_values[k];
        } else {
            l = find_layer(r, body->result_ids[k]);
            if (l == NULL || strcmp(l->type, "Result") != 0 || l->n_in != 1)
                return rn_set_error(RN_PARSE_ERROR,
                                    "a port map names layer %d of a body, which is no Result",
                                    body->result_ids[k]);
            v = l->in[0].value;
        }
        bool own = v->producer != NULL && v->id < r->g->n_values && r->g->values[v->id] == v;
        if (!own) {
            ir_build b = {.g = r->g, .layer = l, .reader = r};
            graph_value *copy;
            IR_TRY(ir_node1(&b, "Identity", 16, 1, &v, &copy, NULL));
            copy->type = v->type;
            copy->shape = v->shape;
            v = copy;
        }
        IR_TRY(graph_add_output(r->g, v));
    }
    return RN_OK;
}

/* Turns every layer into values and nodes, in the file's order. */
static rn_status build(reader *r)
{
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && i < r->n_layers; i++)
        st = add_layer_values(r, &r->layers[i]);
    if (st == RN_OK)
        st = read_edges(r);
    for (int i = 0; st == RN_OK && i < r->n_layers; i++) {
        ir_layer *l = &r->layers[i];
        ir_build b = {.g = r->g, .layer = l, .reader = r};
        if (strcmp(l->type, "Const") == 0) {
            st = read_const(r, l);
        } else if (strcmp(l->type, "Parameter") == 0) {
            int k = body_param(r, l->id);
            if (k < 0 || r->body->param_values[k] == NULL)
                st = read_parameter(r, l);
        } else if (strcmp(l->type, "Result") == 0) {
            st = ir_check_ports(&b, 1, 1, 0);
            if (st == RN_OK && r->body == NULL)
                st = graph_add_output(r->g, l->in[0].value);
        } else {
            b.op = ir_op_find(l->type);
            if (b.op == NULL)
                return ir_error(&b, RN_UNSUPPORTED,
                                "op %s (%s) is not supported by runnel's IR reader (docs/ir.md "
                                "lists the ops it maps)",
                                l->type, l->version);
            st = b.op->map(&b);
        }
    }
    if (st == RN_OK && r->body != NULL)
        st = body_io(r);
    return st;
}

rn_status ir_read_body(ir_build *outer, ir_body *body, graph **out)
{
    const reader *o = outer->reader;
    if (o->depth >= IR_MAX_DEPTH)
        return ir_error(outer, RN_UNSUPPORTED, "bodies nest deeper than %d levels", IR_MAX_DEPTH);
    reader r = {.what = o->what,
                .net = body->xml,
                .bin = o->bin,
                .bin_size = o->bin_size,
                .body = body,
                .depth = o->depth + 1};
    rn_status st = read_layers(&r);
    if (st == RN_OK)
        st = graph_create(body->prefix, &r.g);
    if (st == RN_OK) {
        r.g->parent = outer->g;
        r.g->opset = 18;
        if (body->prepare != NULL) {
            ir_build bb = {.g = r.g, .layer = outer->layer, .reader = &r};
            st = body->prepare(&bb, body->ctx);
        }
        if (st == RN_OK)
            st = build(&r);
    }
    if (st == RN_OK)
        st = graph_sort(r.g);
    free_layers(&r);
    if (st != RN_OK) {
        graph_free(r.g);
        return rn_wrap_error(st, IR_LAYER_FMT "%s: ", IR_LAYER_ARGS(outer->layer), body->xml->name);
    }
    *out = r.g;
    return RN_OK;
}

static rn_status read_net(reader *r)
{
    const ir_xml *net = r->net;
    if (strcmp(net->name, "net") != 0)
        return rn_set_error(RN_PARSE_ERROR, "the document element is <%s>, not <net>", net->name);
    int version;
    if (!parse_int(ir_xml_attr(net, "version"), &version))
        return rn_set_error(RN_PARSE_ERROR, "<net> has no integer version");
    if (version != 10 && version != 11)
        return rn_set_error(RN_UNSUPPORTED,
                            "IR version %d is not supported (runnel reads versions 10 and 11)",
                            version);
    rn_status st = read_layers(r);
    if (st == RN_OK)
        st = graph_create(ir_xml_attr(net, "name"), &r->g);
    if (st != RN_OK)
        return st;
    r->g->opset = 18;
    st = build(r);
    if (st == RN_OK)
        st = graph_sort(r->g);
    if (st == RN_OK)
        st = graph_validate(r->g);
    if (st == RN_OK)
        st = graph_infer_shapes(r->g);
    return st;
}

bool ir_looks_like_xml(const void *data, size_t size)
{
    const unsigned char *p = data;
    size_t i = 0;
    if (size >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
        i = 3;
    while (i < size && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i < size && p[i] == '<';
}

rn_status ir_read_memory(const char *xml, size_t xml_size, const void *bin, size_t bin_size,
                         const char *name, graph **out)
{
    if (xml == NULL || out == NULL || (bin == NULL && bin_size > 0))
        return rn_set_error(RN_INVALID_ARG, "ir_read_memory: xml and out must be set");
    reader r = {.what = name ? name : "IR", .bin = bin, .bin_size = bin_size};
    ir_xml *doc;
    rn_status st = ir_xml_parse(xml, xml_size, &doc);
    if (st == RN_OK) {
        r.net = doc;
        st = read_net(&r);
        free_layers(&r);
        ir_xml_free(doc);
    }
    if (st != RN_OK) {
        graph_free(r.g);
        return rn_wrap_error(st, "%s: ", r.what);
    }
    *out = r.g;
    return RN_OK;
}

/* Reads a whole file; a missing file is RN_IO_ERROR naming it. */
static rn_status slurp(const char *path, char **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    rn_status st = RN_OK;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = rn_set_error(RN_IO_ERROR, "cannot read '%s': %s", path, strerror(errno));
    } else if ((*data = malloc((size_t)len + 1)) == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "'%s': out of memory for %ld bytes", path, len);
    } else if (len > 0 && fread(*data, 1, (size_t)len, f) != (size_t)len) {
        st = rn_set_error(RN_IO_ERROR, "cannot read '%s'", path);
    }
    fclose(f);
    if (st != RN_OK) {
        free(*data);
        *data = NULL;
        return st;
    }
    *size = (size_t)len;
    return RN_OK;
}

/* Maps the .bin read-only: constants are copied straight from the page
 * cache, without reading the whole file into a buffer first. A missing .bin
 * is no error (*data stays NULL: a model without Const layers needs none);
 * an empty one maps to a non-NULL, zero-size buffer. */
static rn_status map_weights(const char *path, void **data, size_t *size)
{
    static const char empty[1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT
                   ? RN_OK
                   : rn_set_error(RN_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    struct stat info;
    rn_status st = RN_OK;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        st = rn_set_error(RN_IO_ERROR, "cannot read '%s': not a regular file", path);
    } else if (info.st_size == 0) {
        *data = (void *)empty;
    } else {
        void *p = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            st = rn_set_error(RN_IO_ERROR, "cannot map '%s': %s", path, strerror(errno));
        else {
            *data = p;
            *size = (size_t)info.st_size;
        }
    }
    close(fd);
    return st;
}

rn_status ir_read_file(const char *xml_path, graph **out)
{
    if (xml_path == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "ir_read_file: path and out must be set");
    /* The weights: the same path with .bin for the extension. */
    size_t len = strlen(xml_path);
    const char *slash = strrchr(xml_path, '/');
    const char *dot = strrchr(xml_path, '.');
    size_t stem = dot != NULL && (slash == NULL || dot > slash) ? (size_t)(dot - xml_path) : len;
    char *bin_path = malloc(stem + 5);
    if (bin_path == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    memcpy(bin_path, xml_path, stem);
    memcpy(bin_path + stem, ".bin", 5);
    char *xml = NULL;
    void *bin = NULL;
    size_t xml_size, bin_size = 0;
    rn_status st = slurp(xml_path, &xml, &xml_size);
    if (st == RN_OK)
        st = map_weights(bin_path, &bin, &bin_size);
    if (st == RN_OK)
        st = ir_read_memory(xml, xml_size, bin, bin_size, xml_path, out);
    free(xml);
    if (bin != NULL && bin_size > 0)
        munmap(bin, bin_size);
    free(bin_path);
    return st;
}
