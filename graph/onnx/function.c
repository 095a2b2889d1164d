/* Model-local functions (FunctionProto) inlined at read time.
 *
 * The dynamo exporter and onnxscript write parts of a model as functions of
 * the model and call them as ops of the function's domain. runnel has no
 * function values in its graph, so every call is replaced, before the graph
 * is read, by the function's body: the formal inputs and outputs become the
 * call's actual names, every other value and node of the body gets the
 * calling node's name as a prefix ("call/value"), and attributes that refer
 * to the caller's (ref_attr_name) take the caller's value, or the function's
 * default, or are left out. Calls inside bodies are expanded in turn; a
 * function that calls itself, directly or not, is refused.
 *
 * Debian's onnx.proto (1.12) predates FunctionProto.attribute_proto (field
 * 11, attribute defaults, IR 9); those defaults arrive as unknown fields and
 * are read from there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx/onnx_internal.h"

/* Calls nest this deep at most (a chain of functions calling functions). */
#define MAX_CALL_DEPTH 64

/* Fields of IR 9 and 10 that Debian's onnx.proto (1.12) lacks, so that
 * protobuf-c keeps them as unknown fields: FunctionProto.attribute_proto
 * (attribute defaults), FunctionProto.overload and NodeProto.overload (which
 * of several functions of one name a node calls). */
#define FUNCTION_ATTRIBUTE_PROTO_FIELD 11
#define FUNCTION_OVERLOAD_FIELD        13
#define NODE_OVERLOAD_FIELD            8

typedef struct inliner {
    const Onnx__ModelProto *model;
    onnx_inlined *out;
    size_t n_nodes, cap_nodes;
    Onnx__NodeProto **nodes; /* the expanded node list */
    const Onnx__FunctionProto *stack[MAX_CALL_DEPTH];
    int depth;
    unsigned long calls; /* for made-up call names */
} inliner;

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory while inlining functions");
}

/* Remembers a malloc'ed block to free with the inlined graph. */
static rn_status keep(onnx_inlined *x, void *p)
{
    if (p == NULL)
        return oom();
    if (x->n_blocks == x->cap_blocks) {
        size_t cap = x->cap_blocks ? 2 * x->cap_blocks : 64;
        void **grown = realloc(x->blocks, cap * sizeof *grown);
        if (grown == NULL) {
            free(p);
            return oom();
        }
        x->blocks = grown;
        x->cap_blocks = cap;
    }
    x->blocks[x->n_blocks++] = p;
    return RN_OK;
}

/* Remembers an unpacked attribute to free with the inlined graph. */
static rn_status keep_attr(onnx_inlined *x, Onnx__AttributeProto *a)
{
    if (a == NULL)
        return oom();
    if (x->n_attrs == x->cap_attrs) {
        size_t cap = x->cap_attrs ? 2 * x->cap_attrs : 64;
        Onnx__AttributeProto **grown = realloc(x->attrs, cap * sizeof *grown);
        if (grown == NULL) {
            onnx__attribute_proto__free_unpacked(a, NULL);
            return oom();
        }
        x->attrs = grown;
        x->cap_attrs = cap;
    }
    x->attrs[x->n_attrs++] = a;
    return RN_OK;
}

static char *format_name(onnx_inlined *x, const char *prefix, const char *name)
{
    char *s;
    if (asprintf(&s, "%s/%s", prefix, name) < 0)
        return NULL;
    return keep(x, s) == RN_OK ? s : NULL;
}

/* The payload of the first length-prefixed unknown field `tag` of m (NULL
 * when absent or malformed); protobuf-c keeps the length prefix in it. */
static const uint8_t *unknown_bytes(const ProtobufCMessage *m, uint32_t tag, size_t *len)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
        if (u->tag != tag || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
            continue;
        size_t pos = 0;
        uint64_t n;
        if (!onnx_read_varint(u->data, u->len, &pos, &n) || n > u->len - pos)
            return NULL;
        *len = (size_t)n;
        return u->data + pos;
    }
    return NULL;
}

/* Whether the overload strings (unknown fields) of a call and a function
 * agree; an absent one is "". */
static bool same_overload(const ProtobufCMessage *call, const Onnx__FunctionProto *f)
{
    size_t a = 0, b = 0;
    const uint8_t *x = call != NULL ? unknown_bytes(call, NODE_OVERLOAD_FIELD, &a) : NULL;
    const uint8_t *y = unknown_bytes(&f->base, FUNCTION_OVERLOAD_FIELD, &b);
    a = x != NULL ? a : 0;
    b = y != NULL ? b : 0;
    return a == b && (a == 0 || memcmp(x, y, a) == 0);
}

static bool same_domain(const char *a, const char *b)
{
    if (a == NULL || strcmp(a, "ai.onnx") == 0)
        a = "";
    if (b == NULL || strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

const Onnx__FunctionProto *onnx_find_function(const Onnx__ModelProto *m,
                                              const Onnx__NodeProto *call)
{
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (f->name != NULL && call->op_type != NULL && strcmp(f->name, call->op_type) == 0 &&
            same_domain(f->domain, call->domain) && same_overload(&call->base, f))
            return f;
    }
    return NULL;
}

/* A deep copy of `a` named `name` (NULL: a's own), made by packing and
 * unpacking it: the reader takes tensors over from attributes, and a body
 * may be inlined many times. */
static rn_status copy_attr(inliner *in, const Onnx__AttributeProto *a, const char *name,
                           Onnx__AttributeProto **out)
{
    Onnx__AttributeProto tmp = *a;
    if (name != NULL)
        tmp.name = (char *)name;
    tmp.ref_attr_name = NULL;
    size_t n = onnx__attribute_proto__get_packed_size(&tmp);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf == NULL)
        return oom();
    onnx__attribute_proto__pack(&tmp, buf);
    Onnx__AttributeProto *c = onnx__attribute_proto__unpack(NULL, n, buf);
    free(buf);
    rn_status st = keep_attr(in->out, c);
    if (st == RN_OK)
        *out = c;
    return st;
}

/* The default of attribute `name` that function f declares
 * (FunctionProto.attribute_proto, an unknown field to Debian's schema), as a
 * new copy named `as`; *out NULL when f declares none. */
static rn_status function_default(inliner *in, const Onnx__FunctionProto *f, const char *name,
                                  const char *as, Onnx__AttributeProto **out)
{
    *out = NULL;
    for (unsigned i = 0; i < f->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &f->base.unknown_fields[i];
        if (u->tag != FUNCTION_ATTRIBUTE_PROTO_FIELD ||
            u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
            continue;
        /* protobuf-c keeps the length prefix in the field's data */
        size_t pos = 0;
        uint64_t len;
        if (!onnx_read_varint(u->data, u->len, &pos, &len) || len > u->len - pos)
            return rn_set_error(RN_PARSE_ERROR, "function '%s': a malformed attribute default",
                                f->name);
        Onnx__AttributeProto *a = onnx__attribute_proto__unpack(NULL, (size_t)len, u->data + pos);
        if (a == NULL)
            return rn_set_error(RN_PARSE_ERROR, "function '%s': a malformed attribute default",
                                f->name);
        rn_status st = RN_OK;
        if (a->name != NULL && strcmp(a->name, name) == 0)
            st = copy_attr(in, a, as, out);
        onnx__attribute_proto__free_unpacked(a, NULL);
        if (st != RN_OK || *out != NULL)
            return st;
    }
    return RN_OK;
}

static rn_status append(inliner *in, Onnx__NodeProto *n)
{
    if (in->n_nodes == in->cap_nodes) {
        size_t cap = in->cap_nodes ? 2 * in->cap_nodes : 64;
        Onnx__NodeProto **grown = realloc(in->nodes, cap * sizeof *grown);
        if (grown == NULL)
            return oom();
        in->nodes = grown;
        in->cap_nodes = cap;
    }
    in->nodes[in->n_nodes++] = n;
    return RN_OK;
}

/* The name a body value takes at this call: the actual name for a formal
 * input or output (an omitted actual is ""), else "<call>/<name>". */
static const char *rename_value(inliner *in, const Onnx__FunctionProto *f,
                                const Onnx__NodeProto *call, const char *call_name,
                                const char *name)
{
    if (name == NULL || name[0] == '\0')
        return "";
    for (size_t i = 0; i < f->n_input; i++)
        if (strcmp(f->input[i], name) == 0)
            return i < call->n_input && call->input[i] != NULL ? call->input[i] : "";
    for (size_t i = 0; i < f->n_output; i++)
        if (strcmp(f->output[i], name) == 0)
            return i < call->n_output && call->output[i] != NULL ? call->output[i] : "";
    return format_name(in->out, call_name, name);
}

static rn_status expand(inliner *in, Onnx__NodeProto *node);

/* The attributes of a body node at this call: its own (copied), those that
 * refer to the caller's by ref_attr_name resolved. */
static rn_status body_attrs(inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *call,
                            const Onnx__NodeProto *bn, Onnx__NodeProto *copy)
{
    copy->n_attribute = 0;
    copy->attribute = malloc((bn->n_attribute + 1) * sizeof *copy->attribute);
    rn_status st = keep(in->out, copy->attribute);
    for (size_t a = 0; a < bn->n_attribute && st == RN_OK; a++) {
        const Onnx__AttributeProto *ap = bn->attribute[a];
        Onnx__AttributeProto *c = NULL;
        if (ap->ref_attr_name != NULL && ap->ref_attr_name[0] != '\0') {
            for (size_t k = 0; k < call->n_attribute && c == NULL && st == RN_OK; k++)
                if (call->attribute[k]->name != NULL &&
                    strcmp(call->attribute[k]->name, ap->ref_attr_name) == 0)
                    st = copy_attr(in, call->attribute[k], ap->name, &c);
            if (c == NULL && st == RN_OK)
                st = function_default(in, f, ap->ref_attr_name, ap->name, &c);
            if (c == NULL)
                continue; /* not given and no default: the op's own default */
        } else {
            if (ap->g != NULL || ap->n_graphs > 0)
                return rn_set_error(RN_UNSUPPORTED,
                                    "function '%s': node '%s' (%s): attribute '%s' is a subgraph; "
                                    "control flow inside model-local functions is not supported",
                                    f->name, bn->name != NULL ? bn->name : "", bn->op_type,
                                    ap->name);
            st = copy_attr(in, ap, NULL, &c);
        }
        if (st == RN_OK)
            copy->attribute[copy->n_attribute++] = c;
    }
    return st;
}

/* Replaces `call` by the body of function f. */
static rn_status inline_call(inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *call)
{
    for (int d = 0; d < in->depth; d++)
        if (in->stack[d] == f)
            return rn_set_error(RN_UNSUPPORTED,
                                "function '%s' (domain '%s') calls itself (node '%s'); recursive "
                                "functions cannot be inlined",
                                f->name, f->domain != NULL ? f->domain : "", call->name);
    if (in->depth == MAX_CALL_DEPTH)
        return rn_set_error(RN_UNSUPPORTED, "function calls nest deeper than %d levels",
                            MAX_CALL_DEPTH);
    if (call->n_input > f->n_input || call->n_output > f->n_output)
        return rn_set_error(RN_PARSE_ERROR,
                            "node '%s' calls function '%s' with %zu inputs and %zu outputs; it "
                            "has %zu and %zu",
                            call->name, f->name, call->n_input, call->n_output, f->n_input,
                            f->n_output);
    const char *call_name = call->name;
    char made_up[160];
    if (call_name == NULL || call_name[0] == '\0') {
        snprintf(made_up, sizeof made_up, "%s_%lu", f->name, in->calls);
        call_name = made_up;
    }
    in->calls++;
    in->stack[in->depth++] = f;
    rn_status st = RN_OK;
    for (size_t i = 0; i < f->n_node && st == RN_OK; i++) {
        const Onnx__NodeProto *bn = f->node[i];
        Onnx__NodeProto *copy = malloc(sizeof *copy);
        if ((st = keep(in->out, copy)) != RN_OK)
            break;
        *copy = *bn;
        const char *bname = bn->name != NULL && bn->name[0] != '\0' ? bn->name : bn->op_type;
        copy->name = format_name(in->out, call_name, bname != NULL ? bname : "node");
        copy->input = malloc((bn->n_input + 1) * sizeof(char *));
        copy->output = malloc((bn->n_output + 1) * sizeof(char *));
        if (copy->name == NULL || (st = keep(in->out, copy->input)) != RN_OK ||
            (st = keep(in->out, copy->output)) != RN_OK) {
            st = st != RN_OK ? st : oom();
            break;
        }
        for (size_t k = 0; k < bn->n_input && st == RN_OK; k++)
            if ((copy->input[k] = (char *)rename_value(in, f, call, call_name, bn->input[k])) ==
                NULL)
                st = oom();
        for (size_t k = 0; k < bn->n_output && st == RN_OK; k++)
            if ((copy->output[k] = (char *)rename_value(in, f, call, call_name, bn->output[k])) ==
                NULL)
                st = oom();
        if (st == RN_OK)
            st = body_attrs(in, f, call, bn, copy);
        if (st == RN_OK)
            st = expand(in, copy);
    }
    in->depth--;
    if (st != RN_OK && in->depth < ONNX_WRAP_DEPTH)
        st = rn_wrap_error(st, "inlining function '%s' at node '%s': ", f->name, call_name);
    return st;
}

static rn_status expand(inliner *in, Onnx__NodeProto *node)
{
    const Onnx__FunctionProto *f = onnx_find_function(in->model, node);
    return f != NULL ? inline_call(in, f, node) : append(in, node);
}

rn_status onnx_inline_functions(const Onnx__ModelProto *m, Onnx__GraphProto *g, onnx_inlined *out)
{
    memset(out, 0, sizeof *out);
    bool any = false;
    for (size_t i = 0; i < g->n_node && !any; i++)
        any = onnx_find_function(m, g->node[i]) != NULL;
    if (!any)
        return RN_OK;
    inliner in = {.model = m, .out = out};
    rn_status st = RN_OK;
    for (size_t i = 0; i < g->n_node && st == RN_OK; i++)
        st = expand(&in, g->node[i]);
    if (st != RN_OK) {
        free(in.nodes);
        onnx_inlined_free(out, g);
        return st;
    }
    out->graph = g;
    out->orig_nodes = g->node;
    out->orig_n_nodes = g->n_node;
    g->node = in.nodes;
    g->n_node = in.n_nodes;
    return RN_OK;
}

void onnx_inlined_free(onnx_inlined *x, Onnx__GraphProto *g)
{
    if (x->graph == g && g != NULL) {
        free(g->node);
        g->node = x->orig_nodes;
        g->n_node = x->orig_n_nodes;
    }
    for (size_t i = 0; i < x->n_attrs; i++)
        onnx__attribute_proto__free_unpacked(x->attrs[i], NULL);
    for (size_t i = 0; i < x->n_blocks; i++)
        free(x->blocks[i]);
    free(x->attrs);
    free(x->blocks);
    memset(x, 0, sizeof *x);
}
