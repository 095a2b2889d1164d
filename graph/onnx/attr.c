/* AttributeProto -> graph_attr, and the tensor a Constant node stands for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx/onnx_internal.h"

/* ONNX strings are bytes; graph strings are C strings cut at the first NUL. */
static char *copy_bytes(const ProtobufCBinaryData *b)
{
    size_t n = b->data != NULL ? strnlen((const char *)b->data, b->len) : 0;
    char *s = malloc(n + 1);
    if (s == NULL)
        return NULL;
    if (n)
        memcpy(s, b->data, n);
    s[n] = '\0';
    return s;
}

/* The attribute's type: the declared one, or for writers older than IR 2
 * (which had no `type` field) the one field that is set. */
static Onnx__AttributeProto__AttributeType attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return a->type;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t != NULL)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->g != NULL)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_strings)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (a->n_tensors)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    if (a->n_graphs)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    if (a->sparse_tensor != NULL)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    if (a->tp != NULL)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

#define ATTR_ERR(st, fmt, ...)                                                                     \
    rn_set_error(st, "node '%s' (%s): attribute '%s': " fmt, node->name, node->op_type, name,      \
                 __VA_ARGS__)

rn_status onnx_read_attr(const onnx_ctx *ctx, graph *g, const graph_node *node,
                         Onnx__AttributeProto *proto, graph_attr *out)
{
    const char *name = proto->name != NULL ? proto->name : "";
    if (name[0] == '\0')
        return rn_set_error(RN_PARSE_ERROR, "node '%s' (%s): an attribute has no name", node->name,
                            node->op_type);
    if (proto->ref_attr_name != NULL && proto->ref_attr_name[0] != '\0')
        return ATTR_ERR(RN_UNSUPPORTED,
                        "refers to function attribute '%s', and model functions "
                        "are not supported",
                        proto->ref_attr_name);
    graph_attr a = {0};
    rn_status st = RN_OK;
    Onnx__AttributeProto__AttributeType type = attr_type(proto);
    size_t n = 0;
    a.name = strdup(name);
    if (a.name == NULL)
        goto oom;
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a.type = GRAPH_ATTR_FLOAT;
        a.f = proto->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a.type = GRAPH_ATTR_INT;
        a.i = proto->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a.type = GRAPH_ATTR_STRING;
        if ((a.s = copy_bytes(&proto->s)) == NULL)
            goto oom;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        a.type = GRAPH_ATTR_TENSOR;
        if (proto->t == NULL) {
            st = ATTR_ERR(RN_PARSE_ERROR, "%s", "declared a tensor but holds none");
            goto fail;
        }
        if ((a.t = calloc(1, sizeof *a.t)) == NULL)
            goto oom;
        if ((st = onnx_tensor_take(proto->t, ctx->base_dir, a.t)) != RN_OK) {
            free(a.t);
            a.t = NULL;
            goto wrap;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        a.type = GRAPH_ATTR_GRAPH;
        if (proto->g == NULL) {
            st = ATTR_ERR(RN_PARSE_ERROR, "%s", "declared a graph but holds none");
            goto fail;
        }
        if ((st = onnx_read_graph(ctx, proto->g, g, &a.g)) != RN_OK)
            goto wrap;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a.type = GRAPH_ATTR_FLOATS;
        n = proto->n_floats;
        /* Lists are never NULL, even when empty: present and empty differ. */
        if ((a.floats = malloc(n * sizeof(float) + 1)) == NULL)
            goto oom;
        if (n)
            memcpy(a.floats, proto->floats, n * sizeof(float));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a.type = GRAPH_ATTR_INTS;
        n = proto->n_ints;
        if ((a.ints = malloc(n * sizeof(int64_t) + 1)) == NULL)
            goto oom;
        if (n)
            memcpy(a.ints, proto->ints, n * sizeof(int64_t));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        a.type = GRAPH_ATTR_STRINGS;
        n = proto->n_strings;
        if ((a.strings = calloc(n + 1, sizeof(char *))) == NULL)
            goto oom;
        for (size_t i = 0; i < n; i++) {
            if ((a.strings[i] = copy_bytes(&proto->strings[i])) == NULL)
                goto oom;
            a.count = (int)i + 1; /* so that a release frees what is copied */
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
        a.type = GRAPH_ATTR_TENSORS;
        n = proto->n_tensors;
        if ((a.tensors = calloc(n + 1, sizeof(graph_tensor))) == NULL)
            goto oom;
        for (size_t i = 0; i < n; i++) {
            if ((st = onnx_tensor_take(proto->tensors[i], ctx->base_dir, &a.tensors[i])) != RN_OK)
                goto wrap;
            a.count = (int)i + 1;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        a.type = GRAPH_ATTR_GRAPHS;
        n = proto->n_graphs;
        if ((a.graphs = calloc(n + 1, sizeof(graph *))) == NULL)
            goto oom;
        for (size_t i = 0; i < n; i++) {
            if ((st = onnx_read_graph(ctx, proto->graphs[i], g, &a.graphs[i])) != RN_OK)
                goto wrap;
            a.count = (int)i + 1;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
        st = ATTR_ERR(RN_UNSUPPORTED, "%s", "sparse tensors are not supported");
        goto fail;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: {
        a.type = GRAPH_ATTR_TYPE_PROTO;
        bool known;
        if (proto->tp == NULL) {
            st = ATTR_ERR(RN_PARSE_ERROR, "%s", "declared a type but holds none");
            goto fail;
        }
        if ((st = onnx_read_type(proto->tp, name, &a.tp, &known)) != RN_OK)
            goto wrap;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        st = ATTR_ERR(RN_UNSUPPORTED, "%s", "lists of types are not supported");
        goto fail;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        st = ATTR_ERR(RN_PARSE_ERROR, "%s", "has no value");
        goto fail;
    default:
        st = ATTR_ERR(RN_PARSE_ERROR, "unknown attribute type %d", (int)type);
        goto fail;
    }
    if (n > (size_t)INT32_MAX) {
        st = ATTR_ERR(RN_UNSUPPORTED, "%zu values are too many", n);
        goto fail;
    }
    a.count = (int)n;
    *out = a;
    return RN_OK;
oom:
    st = ATTR_ERR(RN_OUT_OF_MEMORY, "%s", "out of memory");
    goto fail;
wrap:
    if (ctx->depth < ONNX_WRAP_DEPTH)
        st = rn_wrap_error(st, "node '%s' (%s): attribute '%s': ", node->name, node->op_type, name);
fail:
    graph_attr_release(&a);
    return st;
}

/* ---- Constant nodes ---- */

/* Builds a rank-0 (n < 0) or rank-1 tensor of `type` from n values at src. */
static rn_status small_tensor(rn_element_type type, const void *src, long n, graph_tensor *out)
{
    size_t count = n < 0 ? 1 : (size_t)n;
    size_t size = rn_element_type_size(type);
    graph_tensor t = {.type = type, .rank = n < 0 ? 0 : 1, .nbytes = count * size};
    t.dims[0] = n < 0 ? 0 : n;
    t.data = malloc(count * size + 1);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    if (count)
        memcpy(t.data, src, count * size);
    *out = t;
    return RN_OK;
}

/* Builds a STRING tensor, rank 0 (n < 0) or rank 1. */
static rn_status string_tensor(const ProtobufCBinaryData *src, long n, graph_tensor *out)
{
    size_t count = n < 0 ? 1 : (size_t)n;
    graph_tensor t = {.type = RN_STRING, .rank = n < 0 ? 0 : 1, .nbytes = count * sizeof(char *)};
    t.dims[0] = n < 0 ? 0 : n;
    char **s = calloc(count + 1, sizeof(char *));
    t.data = s;
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < count; i++) {
        if ((s[i] = copy_bytes(&src[i])) == NULL) {
            graph_tensor_release(&t);
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
        }
    }
    *out = t;
    return RN_OK;
}

rn_status onnx_constant_value(const onnx_ctx *ctx, const Onnx__NodeProto *node, const char *name,
                              graph_tensor *out)
{
    if (node->n_attribute != 1)
        return rn_set_error(RN_PARSE_ERROR,
                            "node '%s' (Constant): needs exactly one value attribute, has %zu",
                            name, node->n_attribute);
    Onnx__AttributeProto *a = node->attribute[0];
    const char *an = a->name != NULL ? a->name : "";
    Onnx__AttributeProto__AttributeType type = attr_type(a);
    /* (attribute name, the type it must have) */
    static const struct {
        const char *name;
        Onnx__AttributeProto__AttributeType type;
    } forms[] = {
        {"value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR},
        {"value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT},
        {"value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS},
        {"value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT},
        {"value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS},
        {"value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING},
        {"value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS},
        {"sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR},
    };
    size_t form = 0, n_forms = sizeof forms / sizeof forms[0];
    while (form < n_forms && strcmp(forms[form].name, an) != 0)
        form++;
    if (form == n_forms)
        return rn_set_error(RN_PARSE_ERROR, "node '%s' (Constant): unknown attribute '%s'", name,
                            an);
    if (type != forms[form].type)
        return rn_set_error(RN_PARSE_ERROR,
                            "node '%s' (Constant): attribute '%s' has the wrong type (%d)", name,
                            an, (int)type);
    rn_status st;
    switch (form) {
    case 0:
        if (a->t == NULL)
            return rn_set_error(RN_PARSE_ERROR, "node '%s' (Constant): 'value' holds no tensor",
                                name);
        st = onnx_tensor_take(a->t, ctx->base_dir, out);
        break;
    case 1:
        st = small_tensor(RN_F32, &a->f, -1, out);
        break;
    case 2:
        st = small_tensor(RN_F32, a->floats, (long)a->n_floats, out);
        break;
    case 3:
        st = small_tensor(RN_I64, &a->i, -1, out);
        break;
    case 4:
        st = small_tensor(RN_I64, a->ints, (long)a->n_ints, out);
        break;
    case 5:
        st = string_tensor(&a->s, -1, out);
        break;
    case 6:
        st = string_tensor(a->strings, (long)a->n_strings, out);
        break;
    default:
        return rn_set_error(RN_UNSUPPORTED,
                            "node '%s' (Constant): sparse_value is not supported (sparse tensors)",
                            name);
    }
    if (st != RN_OK)
        return rn_wrap_error(st, "node '%s' (Constant): attribute '%s': ", name, an);
    return RN_OK;
}
