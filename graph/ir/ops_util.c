/* What the op mappers share: reading a layer's <data> attributes, making up
 * values, constants and nodes named after the layer, and the int64 inputs
 * ONNX ops want. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir/ir_internal.h"
#include "graph/ops.h"

rn_status ir_error(const ir_build *b, rn_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rn_set_error(st, IR_LAYER_FMT "%s", IR_LAYER_ARGS(b->layer), msg);
}

const char *ir_data_str(const ir_build *b, const char *name, const char *dflt)
{
    const char *v = b->layer->data ? ir_xml_attr(b->layer->data, name) : NULL;
    return v ? v : dflt;
}

rn_status ir_data_int(const ir_build *b, const char *name, int64_t dflt, int64_t *out)
{
    const char *s = ir_data_str(b, name, NULL);
    if (s == NULL) {
        *out = dflt;
        return RN_OK;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ')
        end++;
    if (end == s || *end != '\0' || errno != 0)
        return ir_error(b, RN_PARSE_ERROR, "attribute %s='%s' is not an integer", name, s);
    *out = v;
    return RN_OK;
}

rn_status ir_data_float(const ir_build *b, const char *name, float dflt, float *out)
{
    const char *s = ir_data_str(b, name, NULL);
    if (s == NULL) {
        *out = dflt;
        return RN_OK;
    }
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (end == s || *end != '\0')
        return ir_error(b, RN_PARSE_ERROR, "attribute %s='%s' is not a number", name, s);
    *out = (float)v;
    return RN_OK;
}

rn_status ir_data_bool(const ir_build *b, const char *name, bool dflt, bool *out)
{
    const char *s = ir_data_str(b, name, NULL);
    if (s == NULL) {
        *out = dflt;
        return RN_OK;
    }
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else
        return ir_error(b, RN_PARSE_ERROR, "attribute %s='%s' is not a boolean", name, s);
    return RN_OK;
}

rn_status ir_data_ints(const ir_build *b, const char *name, int64_t *vals, int max, int *n)
{
    const char *s = ir_data_str(b, name, NULL);
    *n = -1;
    if (s == NULL)
        return RN_OK;
    int count = 0;
    const char *p = s;
    while (*p == ' ')
        p++;
    while (*p != '\0') {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno != 0)
            return ir_error(b, RN_PARSE_ERROR, "attribute %s='%s' is not a list of integers", name,
                            s);
        if (count == max)
            return ir_error(b, RN_UNSUPPORTED, "attribute %s='%s' has more than %d values", name, s,
                            max);
        vals[count++] = v;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ',') {
            p++;
            while (*p == ' ')
                p++;
            if (*p == '\0')
                return ir_error(b, RN_PARSE_ERROR, "attribute %s='%s' ends with a comma", name, s);
        } else if (*p != '\0') {
            return ir_error(b, RN_PARSE_ERROR, "attribute %s='%s' is not a list of integers", name,
                            s);
        }
    }
    *n = count;
    return RN_OK;
}

rn_status ir_tmp_value(ir_build *b, graph_value **out)
{
    char name[600];
    for (;;) {
        snprintf(name, sizeof name, "%s/ir_%d", b->layer->name, b->n_made++);
        if (graph_find_value(b->g, name, false) == NULL)
            return graph_add_value(b->g, name, out);
    }
}

/* Makes v a constant owning a new tensor of `elem` and the given shape,
 * whose bytes the caller fills; *data receives them. */
static rn_status make_const(ir_build *b, rn_element_type elem, int rank, const int64_t *dims,
                            graph_value **out, void **data)
{
    graph_value *v;
    rn_status st = ir_tmp_value(b, &v);
    if (st != RN_OK)
        return st;
    graph_tensor *t = calloc(1, sizeof *t);
    size_t count = 1;
    for (int i = 0; i < rank; i++)
        count *= (size_t)dims[i];
    size_t nbytes = count * rn_element_type_size(elem);
    void *bytes = malloc(nbytes ? nbytes : 1);
    if (t == NULL || bytes == NULL) {
        free(t);
        free(bytes);
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    }
    t->type = elem;
    t->rank = rank;
    t->data = bytes;
    t->nbytes = nbytes;
    v->constant = t;
    v->type = elem;
    v->shape.rank = rank;
    if (rank > 0) { /* a scalar has no dims (NULL) */
        memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
        memcpy(v->shape.dims, dims, (size_t)rank * sizeof *dims);
    }
    *data = bytes;
    *out = v;
    return RN_OK;
}

rn_status ir_const_i64(ir_build *b, const int64_t *vals, int n, bool scalar, graph_value **out)
{
    int64_t dims[1] = {n};
    void *data;
    rn_status st = make_const(b, RN_I64, scalar ? 0 : 1, dims, out, &data);
    if (st == RN_OK && n > 0)
        memcpy(data, vals, (size_t)n * sizeof *vals);
    return st;
}

rn_status ir_const_zeros(ir_build *b, rn_element_type elem, int rank, const int64_t *dims,
                         graph_value **out)
{
    if (rn_element_type_size(elem) == 0 || rank > RN_MAX_RANK)
        return ir_error(b, RN_UNSUPPORTED, "a %s constant is not supported here",
                        rn_element_type_name(elem));
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0 || dims[i] > ((int64_t)1 << 31))
            return ir_error(b, RN_PARSE_ERROR, "a constant of dim %lld", (long long)dims[i]);
    void *data;
    rn_status st = make_const(b, elem, rank, dims, out, &data);
    if (st == RN_OK)
        memset(data, 0, (*out)->constant->nbytes);
    return st;
}

/* IEEE half of v, rounded to nearest even (infinities, NaN and overflow
 * kept as such). */
static uint16_t half_of(double v)
{
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000) /* inf or NaN */
        return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);
    if (abs >= 0x477ff000) /* rounds past 65504 */
        return sign | 0x7c00;
    if (abs < 0x38800000) {              /* subnormal half, or zero */
        double m = fabs(v) * 16777216.0; /* in units of 2^-24 */
        return sign | (uint16_t)nearbyint(m);
    }
    uint32_t bits = abs - 0x38000000; /* rebias the exponent 127 -> 15 */
    uint32_t r = bits >> 13, rest = bits & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
        r++;
    return sign | (uint16_t)r;
}

rn_status ir_const_scalar(ir_build *b, rn_element_type elem, double v, graph_value **out)
{
    void *data;
    rn_status st;
    switch (elem) {
    case RN_F16:
    case RN_F32:
    case RN_F64:
    case RN_I8:
    case RN_U8:
    case RN_I16:
    case RN_U16:
    case RN_I32:
    case RN_U32:
    case RN_I64:
    case RN_U64:
        break;
    default:
        return ir_error(b, RN_UNSUPPORTED, "a %s constant is not supported here",
                        rn_element_type_name(elem));
    }
    if ((st = make_const(b, elem, 0, NULL, out, &data)) != RN_OK)
        return st;
    if (elem != RN_F16 && elem != RN_F32 && elem != RN_F64) {
        /* Integers saturate (a Clamp bound of -inf is the type's least). */
        double lo = elem == RN_I8    ? -128.0
                    : elem == RN_I16 ? -32768.0
                    : elem == RN_I32 ? -2147483648.0
                    : elem == RN_I64 ? -9223372036854775808.0
                                     : 0.0;
        double hi = elem == RN_I8    ? 127.0
                    : elem == RN_U8  ? 255.0
                    : elem == RN_I16 ? 32767.0
                    : elem == RN_U16 ? 65535.0
                    : elem == RN_I32 ? 2147483647.0
                    : elem == RN_U32 ? 4294967295.0
                                     : 0.0;
        if (isnan(v))
            v = 0;
        if (v < lo)
            v = lo;
        if (elem == RN_I64 && v >= 9223372036854775807.0) {
            int64_t i = INT64_MAX;
            memcpy(data, &i, sizeof i);
            return RN_OK;
        }
        if (elem == RN_U64 && v >= 18446744073709551615.0) {
            uint64_t i = UINT64_MAX;
            memcpy(data, &i, sizeof i);
            return RN_OK;
        }
        if (elem != RN_I64 && elem != RN_U64 && v > hi)
            v = hi;
    }
    if (elem == RN_F16) {
        uint16_t h = half_of(v);
        memcpy(data, &h, sizeof h);
    } else if (elem == RN_F32) {
        float f = (float)v;
        memcpy(data, &f, sizeof f);
    } else if (elem == RN_F64) {
        memcpy(data, &v, sizeof v);
    } else if (elem == RN_I32) {
        int32_t i = (int32_t)v;
        memcpy(data, &i, sizeof i);
    } else if (elem == RN_I8) {
        *(int8_t *)data = (int8_t)v;
    } else if (elem == RN_U8) {
        *(uint8_t *)data = (uint8_t)v;
    } else if (elem == RN_I16) {
        int16_t i = (int16_t)v;
        memcpy(data, &i, sizeof i);
    } else if (elem == RN_U16) {
        uint16_t i = (uint16_t)v;
        memcpy(data, &i, sizeof i);
    } else if (elem == RN_U32) {
        uint32_t i = (uint32_t)v;
        memcpy(data, &i, sizeof i);
    } else if (elem == RN_U64) {
        uint64_t i = (uint64_t)v;
        memcpy(data, &i, sizeof i);
    } else {
        int64_t i = (int64_t)v;
        memcpy(data, &i, sizeof i);
    }
    return RN_OK;
}

rn_status ir_node(ir_build *b, const char *op, int opset, int n_in, graph_value *const *inputs,
                  int n_out, graph_value *const *outputs, graph_node **node)
{
    /* The node that writes the layer's outputs carries the layer's name;
     * the nodes a mapper adds before it get made-up names. */
    bool last =
        outputs != NULL && n_out > 0 && b->layer->n_out > 0 && outputs[0] == b->layer->out[0].value;
    char name[600];
    if (last && b->layer->n_out > 0)
        snprintf(name, sizeof name, "%s", b->layer->name);
    else
        snprintf(name, sizeof name, "%s/%s_%d", b->layer->name, op, b->n_made++);
    graph_node *n;
    rn_status st = graph_add_node(b->g, name, "", op, opset, n_in, inputs, n_out, outputs, &n);
    if (st != RN_OK)
        return ir_error(b, st, "%s", rn_last_error());
    /* fused_names: the layer, then the original names its rt_info keeps. */
    free(n->fused_names[0]);
    n->n_fused = 0;
    st = graph_node_add_fused_name(n, b->layer->name);
    for (int i = 0; st == RN_OK && i < b->layer->n_fused; i++)
        if (strcmp(b->layer->fused[i], b->layer->name) != 0)
            st = graph_node_add_fused_name(n, b->layer->fused[i]);
    if (st != RN_OK)
        return st;
    if (node != NULL)
        *node = n;
    return RN_OK;
}

rn_status ir_node1(ir_build *b, const char *op, int opset, int n_in, graph_value *const *inputs,
                   graph_value **out, graph_node **node)
{
    graph_value *v;
    rn_status st = ir_tmp_value(b, &v);
    if (st != RN_OK)
        return st;
    *out = v;
    return ir_node(b, op, opset, n_in, inputs, 1, &v, node);
}

static rn_status add_attr(graph_node *n, graph_attr *a, const char *name)
{
    a->name = strdup(name);
    if (a->name == NULL) {
        graph_attr_release(a);
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    }
    return graph_node_add_attr(n, a);
}

rn_status ir_attr_int(graph_node *n, const char *name, int64_t v)
{
    graph_attr a = {.type = GRAPH_ATTR_INT, .i = v};
    return add_attr(n, &a, name);
}

rn_status ir_attr_float(graph_node *n, const char *name, float v)
{
    graph_attr a = {.type = GRAPH_ATTR_FLOAT, .f = v};
    return add_attr(n, &a, name);
}

rn_status ir_attr_str(graph_node *n, const char *name, const char *v)
{
    graph_attr a = {.type = GRAPH_ATTR_STRING, .s = strdup(v)};
    if (a.s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    return add_attr(n, &a, name);
}

rn_status ir_attr_ints(graph_node *n, const char *name, const int64_t *v, int count)
{
    graph_attr a = {.type = GRAPH_ATTR_INTS,
                    .count = count,
                    .ints = malloc(sizeof(int64_t) * (size_t)(count ? count : 1))};
    if (a.ints == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    if (count > 0)
        memcpy(a.ints, v, sizeof(int64_t) * (size_t)count);
    return add_attr(n, &a, name);
}

rn_status ir_attr_strs(graph_node *n, const char *name, const char *const *v, int count)
{
    graph_attr a = {.type = GRAPH_ATTR_STRINGS,
                    .strings = calloc((size_t)(count ? count : 1), sizeof(char *))};
    if (a.strings == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    for (a.count = 0; a.count < count; a.count++)
        if ((a.strings[a.count] = strdup(v[a.count])) == NULL) {
            graph_attr_release(&a);
            return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
        }
    return add_attr(n, &a, name);
}

rn_status ir_attr_floats(graph_node *n, const char *name, const float *v, int count)
{
    graph_attr a = {.type = GRAPH_ATTR_FLOATS,
                    .count = count,
                    .floats = malloc(sizeof(float) * (size_t)(count ? count : 1))};
    if (a.floats == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "ir: out of memory");
    if (count > 0)
        memcpy(a.floats, v, sizeof(float) * (size_t)count);
    return add_attr(n, &a, name);
}

rn_status ir_attr_graph(graph_node *n, const char *name, graph *g)
{
    graph_attr a = {.type = GRAPH_ATTR_GRAPH, .g = g};
    return add_attr(n, &a, name);
}

static bool is_integer(rn_element_type t)
{
    return t == RN_I8 || t == RN_I16 || t == RN_I32 || t == RN_I64 || t == RN_U8 || t == RN_U16 ||
           t == RN_U32 || t == RN_U64;
}

rn_status ir_as_i64(ir_build *b, int i, graph_value **out)
{
    const ir_port *p = &b->layer->in[i];
    if (p->elem == RN_I64) {
        *out = p->value;
        return RN_OK;
    }
    if (!is_integer(p->elem))
        return ir_error(b, RN_UNSUPPORTED,
                        "input port %d: precision %s where an integer tensor "
                        "is expected",
                        p->id, rn_element_type_name(p->elem));
    graph_node *n;
    rn_status st = ir_node1(b, "Cast", 13, 1, &p->value, out, &n);
    return st == RN_OK ? ir_attr_int(n, "to", RN_I64) : st;
}

rn_status ir_const_ints(ir_build *b, int i, const char *what, int64_t *vals, int max, int *n)
{
    const graph_tensor *t = b->layer->in[i].value->constant;
    if (t == NULL)
        return ir_error(b, RN_UNSUPPORTED, "%s (input port %d) must be a constant", what,
                        b->layer->in[i].id);
    size_t count = graph_tensor_count(t);
    if (!is_integer(t->type))
        return ir_error(b, RN_PARSE_ERROR, "%s (input port %d) must hold integers, not %s", what,
                        b->layer->in[i].id, rn_element_type_name(t->type));
    if (count > (size_t)max)
        return ir_error(b, RN_UNSUPPORTED, "%s (input port %d) holds %zu values (at most %d)", what,
                        b->layer->in[i].id, count, max);
    graph_port port = {0};
    port.type = t->type;
    port.shape.rank = t->rank;
    memcpy(port.shape.dims, t->dims, sizeof t->dims);
    port.data = t->data;
    for (size_t k = 0; k < count; k++)
        vals[k] = graph_port_int(&port, k);
    *n = (int)count;
    return RN_OK;
}

/* The constant behind value v: its own, or that of a constant a float Cast
 * converts (ovc's compressed f16 weights reach their layer through a
 * Convert to f32, which the values of the f16 constant already are). */
static const graph_tensor *float_constant(const graph_value *v)
{
    if (v->constant != NULL)
        return v->constant;
    const graph_node *n = v->producer;
    if (n == NULL || strcmp(n->op_type, "Cast") != 0 || n->n_inputs != 1 || n->inputs[0] == NULL)
        return NULL;
    rn_element_type to = v->type;
    if (to != RN_F32 && to != RN_F64 && to != RN_F16 && to != RN_BF16)
        return NULL;
    return n->inputs[0]->constant;
}

rn_status ir_const_doubles(ir_build *b, int i, const char *what, double *vals, int max, int *n)
{
    const graph_tensor *t = float_constant(b->layer->in[i].value);
    if (t == NULL)
        return ir_error(b, RN_UNSUPPORTED, "%s (input port %d) must be a constant", what,
                        b->layer->in[i].id);
    size_t count = graph_tensor_count(t);
    if (count > (size_t)max)
        return ir_error(b, RN_UNSUPPORTED, "%s (input port %d) holds %zu values (at most %d)", what,
                        b->layer->in[i].id, count, max);
    graph_port port = {0};
    port.type = t->type;
    port.shape.rank = t->rank;
    memcpy(port.shape.dims, t->dims, sizeof t->dims);
    port.data = t->data;
    for (size_t k = 0; k < count; k++)
        vals[k] = graph_port_double(&port, k);
    *n = (int)count;
    return RN_OK;
}

rn_status ir_check_ports(const ir_build *b, int lo, int hi, int n_out)
{
    const ir_layer *l = b->layer;
    if (l->n_in < lo || (hi >= 0 && l->n_in > hi)) {
        if (lo == hi)
            return ir_error(b, RN_PARSE_ERROR, "has %d input ports, expected %d", l->n_in, lo);
        return ir_error(b, RN_PARSE_ERROR, "has %d input ports, expected %d to %d", l->n_in, lo,
                        hi);
    }
    if (l->n_out != n_out)
        return ir_error(b, RN_PARSE_ERROR, "has %d output ports, expected %d", l->n_out, n_out);
    return RN_OK;
}

int ir_layer_opset(const ir_build *b)
{
    const char *v = b->layer->version;
    return strncmp(v, "opset", 5) == 0 ? atoi(v + 5) : 0;
}

rn_status ir_swap_last(ir_build *b, graph_value *v, int rank, graph_value **out)
{
    if (rank < 2) {
        *out = v;
        return RN_OK;
    }
    int64_t perm[RN_MAX_RANK];
    for (int i = 0; i < rank; i++)
        perm[i] = i;
    perm[rank - 1] = rank - 2;
    perm[rank - 2] = rank - 1;
    graph_node *n;
    IR_TRY(ir_node1(b, "Transpose", 13, 1, &v, out, &n));
    return ir_attr_ints(n, "perm", perm, rank);
}

const ir_op *ir_op_find(const char *type)
{
    const ir_op *families[] = {ir_ops_elementwise, ir_ops_nn, ir_ops_movement, ir_ops_rnn,
                               ir_ops_control};
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const ir_op *op = families[f]; op->type != NULL; op++)
            if (strcmp(op->type, type) == 0)
                return op;
    return NULL;
}
