/* Bytes -> graph: the decoder of the graph encoding (docs/export.md). It
 * trusts nothing: every count is checked against the bytes that remain before
 * anything is allocated, value references are checked, subgraph nesting is
 * limited, and an error names the field and its byte offset. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize_internal.h"

/* Turns an error a graph_* call reported into this decoder's error, keeping
 * its message and adding the offset. Anything but running out of memory is
 * a malformed input here. */
static rn_status dec_fail_from(serial_reader *r, size_t at, rn_status st)
{
    char msg[768];
    snprintf(msg, sizeof msg, "%s", rn_last_error());
    return serial_fail_at(r, at, st == RN_OUT_OF_MEMORY ? st : RN_PARSE_ERROR, "%s", msg);
}

static graph *dec_graph(serial_reader *r, graph *parent);

/* Reads a tensor into *t (owned); on error *t holds nothing. */
static void dec_tensor(serial_reader *r, graph_tensor *t)
{
    memset(t, 0, sizeof *t);
    size_t at = r->pos;
    uint32_t type = serial_get_u32(r, "tensor element type");
    uint32_t rank = serial_get_u32(r, "tensor rank");
    if (r->st != RN_OK)
        return;
    if (!rn_element_type_is_valid((rn_element_type)type)) {
        serial_fail_at(r, at, RN_PARSE_ERROR, "tensor element type %" PRIu32 " is unknown", type);
        return;
    }
    if (rank > RN_MAX_RANK) {
        serial_fail_at(r, at + 4, RN_PARSE_ERROR, "tensor rank %" PRIu32 " exceeds %d", rank,
                       RN_MAX_RANK);
        return;
    }
    size_t dat = r->pos, count = 0;
    for (uint32_t i = 0; i < rank; i++)
        t->dims[i] = (int64_t)serial_get_u64(r, "tensor dim");
    if (r->st != RN_OK)
        return;
    if (!serial_dims_count((int)rank, t->dims, &count)) {
        serial_fail_at(r, dat, RN_PARSE_ERROR, "tensor dims are negative or overflow");
        return;
    }
    if (type == RN_STRING) {
        if (count > serial_remaining(r) / SERIAL_MIN_STRING) {
            serial_fail(r, "%zu strings exceed the %zu bytes that remain", count,
                        serial_remaining(r));
            return;
        }
        char **strs = calloc(count ? count : 1, sizeof(char *));
        if (strs == NULL) {
            serial_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory for %zu strings", count);
            return;
        }
        for (size_t i = 0; i < count; i++) {
            if ((strs[i] = serial_get_str(r, "tensor string")) == NULL) {
                for (size_t k = 0; k < i; k++)
                    free(strs[k]);
                free(strs);
                return;
            }
        }
        t->data = strs;
        t->nbytes = count * sizeof(char *);
    } else {
        size_t nat = r->pos;
        uint64_t nbytes = serial_get_u64(r, "tensor byte count");
        size_t want;
        if (r->st != RN_OK)
            return;
        if (__builtin_mul_overflow(count, rn_element_type_size((rn_element_type)type), &want) ||
            nbytes != want) {
            serial_fail_at(r, nat, RN_PARSE_ERROR,
                           "tensor of %zu %s elements holds %" PRIu64 " bytes", count,
                           rn_element_type_name((rn_element_type)type), nbytes);
            return;
        }
        const uint8_t *p = serial_take(r, want, "tensor data");
        if (p == NULL)
            return;
        t->data = malloc(want ? want : 1);
        if (t->data == NULL) {
            serial_fail_at(r, nat, RN_OUT_OF_MEMORY, "out of memory for %zu bytes of tensor data",
                           want);
            return;
        }
        memcpy(t->data, p, want);
        t->nbytes = want;
    }
    t->type = (rn_element_type)type;
    t->rank = (int)rank;
}

/* Reads one attribute into *a; on error *a holds nothing. */
static void dec_attr(serial_reader *r, graph *g, graph_attr *a)
{
    memset(a, 0, sizeof *a);
    a->name = serial_get_str(r, "attribute name");
    size_t at = r->pos;
    uint32_t type = serial_get_u32(r, "attribute type");
    if (r->st != RN_OK)
        goto fail;
    a->type = (graph_attr_type)type;
    switch (type) {
    case GRAPH_ATTR_UNDEFINED:
        break;
    case GRAPH_ATTR_FLOAT: {
        uint32_t bits = serial_get_u32(r, "float attribute");
        memcpy(&a->f, &bits, 4);
        break;
    }
    case GRAPH_ATTR_INT:
        a->i = (int64_t)serial_get_u64(r, "int attribute");
        break;
    case GRAPH_ATTR_STRING:
        if (serial_get_flag(r, "string attribute presence"))
            a->s = serial_get_str(r, "string attribute");
        break;
    case GRAPH_ATTR_TENSOR:
        if (serial_get_flag(r, "tensor attribute presence")) {
            if ((a->t = calloc(1, sizeof *a->t)) == NULL)
                serial_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory for a tensor attribute");
            else
                dec_tensor(r, a->t);
        }
        break;
    case GRAPH_ATTR_GRAPH:
        if (serial_get_flag(r, "graph attribute presence"))
            a->g = dec_graph(r, g);
        break;
    case GRAPH_ATTR_TYPE_PROTO: { /* u32 kind, u32 element type, i32 rank, i64 dims */
        size_t tat = r->pos;
        uint32_t kind = serial_get_u32(r, "type kind"),
                 elem = serial_get_u32(r, "type element type");
        int32_t rank = (int32_t)serial_get_u32(r, "type rank");
        if (r->st == RN_OK && (kind >= GRAPH_KIND_COUNT || !serial_type_ok((rn_element_type)elem) ||
                               rank < -1 || rank > RN_MAX_RANK))
            serial_fail_at(r, tat, RN_PARSE_ERROR, "attribute '%s': malformed type", a->name);
        a->tp = (graph_type){(graph_kind)kind, (rn_element_type)elem, {.rank = rank}};
        for (int i = 0; i < rank && r->st == RN_OK; i++)
            a->tp.shape.dims[i] = (int64_t)serial_get_u64(r, "type dim");
        break;
    }
    case GRAPH_ATTR_FLOATS:
    case GRAPH_ATTR_INTS:
    case GRAPH_ATTR_STRINGS:
    case GRAPH_ATTR_TENSORS:
    case GRAPH_ATTR_GRAPHS: {
        static const size_t min_entry[] = {
            [GRAPH_ATTR_FLOATS] = 4,
            [GRAPH_ATTR_INTS] = 8,
            [GRAPH_ATTR_STRINGS] = SERIAL_MIN_STRING,
            [GRAPH_ATTR_TENSORS] = SERIAL_MIN_TENSOR,
            [GRAPH_ATTR_GRAPHS] = SERIAL_MIN_GRAPH,
        };
        int n = serial_get_count(r, "attribute list length", min_entry[type]);
        if (r->st != RN_OK)
            break;
        size_t alloc = (size_t)n + 1;
        void *list = NULL;
        if (type == GRAPH_ATTR_FLOATS)
            list = a->floats = calloc(alloc, sizeof(float));
        else if (type == GRAPH_ATTR_INTS)
            list = a->ints = calloc(alloc, sizeof(int64_t));
        else if (type == GRAPH_ATTR_STRINGS)
            list = a->strings = calloc(alloc, sizeof(char *));
        else if (type == GRAPH_ATTR_TENSORS)
            list = a->tensors = calloc(alloc, sizeof(graph_tensor));
        else
            list = a->graphs = calloc(alloc, sizeof(graph *));
        if (list == NULL) {
            serial_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory for an attribute list");
            break;
        }
        /* count grows with the entries read, so a release after an error
         * frees exactly what was built. */
        for (int k = 0; k < n && r->st == RN_OK; k++) {
            if (type == GRAPH_ATTR_FLOATS) {
                uint32_t bits = serial_get_u32(r, "float list entry");
                memcpy(&a->floats[k], &bits, 4);
            } else if (type == GRAPH_ATTR_INTS) {
                a->ints[k] = (int64_t)serial_get_u64(r, "int list entry");
            } else if (type == GRAPH_ATTR_STRINGS) {
                a->strings[k] = serial_get_str(r, "string list entry");
            } else if (type == GRAPH_ATTR_TENSORS) {
                dec_tensor(r, &a->tensors[k]);
            } else {
                a->graphs[k] = dec_graph(r, g);
            }
            if (r->st == RN_OK)
                a->count = k + 1;
        }
        break;
    }
    default:
        serial_fail_at(r, at, RN_PARSE_ERROR, "attribute '%s' has unknown type %" PRIu32,
                       a->name ? a->name : "", type);
    }
    if (r->st == RN_OK)
        return;
fail:
    graph_attr_release(a);
}

/* Resolves a value reference of graph g: -1 omitted (only where allowed),
 * a local id, or an outer reference. On a bad reference records an error. */
static graph_value *resolve_ref(serial_reader *r, graph *g, graph_value *const *outer, int n_outer,
                                int32_t ref, size_t at, bool allow_omitted, const char *user)
{
    if (ref == -1 && allow_omitted)
        return NULL;
    if (ref >= 0 && ref < g->n_values)
        return g->values[ref];
    if (ref >= 0 && ref - g->n_values < n_outer)
        return outer[ref - g->n_values];
    serial_fail_at(r, at, RN_PARSE_ERROR,
                   "%s refers to value %" PRId32 ", but graph '%s' has %d values and %d outer "
                   "references",
                   user, ref, g->name, g->n_values, n_outer);
    return NULL;
}

/* Reads a node's input or output references into a new array of count + 1
 * entries and returns the count. An output must be omitted (-1) or a value of
 * g that is neither an input nor a constant. */
static int dec_refs(serial_reader *r, graph *g, graph_value *const *outer, int n_outer,
                    bool outputs, const char *user, graph_value ***out)
{
    const char *port = outputs ? "output" : "input";
    char field[32], who[400];
    snprintf(field, sizeof field, "node %s count", port);
    int n = serial_get_count(r, field, 4);
    if (r->st == RN_OK && (*out = calloc((size_t)n + 1, sizeof **out)) == NULL)
        serial_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory");
    snprintf(field, sizeof field, "node %s", port);
    for (int k = 0; k < n && r->st == RN_OK; k++) {
        size_t at = r->pos;
        int32_t ref = (int32_t)serial_get_u32(r, field);
        snprintf(who, sizeof who, "%s, %s %d,", user, port, k);
        graph_value *v =
            r->st == RN_OK ? resolve_ref(r, g, outer, n_outer, ref, at, true, who) : NULL;
        if (v != NULL && outputs && (v->is_parameter || v->constant != NULL))
            serial_fail_at(r, at, RN_PARSE_ERROR, "%s '%s' is a graph input or constant", who,
                           v->name);
        (*out)[k] = v;
    }
    return n;
}

static void dec_node(serial_reader *r, graph *g, graph_value *const *outer, int n_outer)
{
    size_t at = r->pos;
    char *name = serial_get_str(r, "node name");
    char *domain = serial_get_str(r, "node domain");
    char *op_type = serial_get_str(r, "node op type");
    int32_t opset = (int32_t)serial_get_u32(r, "node opset");
    graph_value **ins = NULL, **outs = NULL;
    graph_node *n = NULL;
    char user[300];
    snprintf(user, sizeof user, "node '%s' (%s)", name ? name : "", op_type ? op_type : "");
    int n_in = dec_refs(r, g, outer, n_outer, false, user, &ins);
    int n_out = dec_refs(r, g, NULL, 0, true, user, &outs);
    if (r->st == RN_OK) {
        rn_status st = graph_add_node(g, name, domain, op_type, opset, n_in, ins, n_out, outs, &n);
        if (st != RN_OK)
            dec_fail_from(r, at, st);
    }
    free(name);
    free(domain);
    free(op_type);
    free(ins);
    free(outs);
    if (r->st != RN_OK)
        return; /* g owns the node once added and frees it with the graph */
    int n_attrs = serial_get_count(r, "attribute count", SERIAL_MIN_ATTR);
    for (int k = 0; k < n_attrs && r->st == RN_OK; k++) {
        size_t aat = r->pos;
        graph_attr a;
        dec_attr(r, g, &a);
        if (r->st != RN_OK)
            break;
        rn_status st = graph_node_add_attr(n, &a); /* releases a on error */
        if (st != RN_OK)
            dec_fail_from(r, aat, st);
    }
    /* graph_add_node seeded fused_names with the node's name; the stream has
     * the real list. */
    for (int k = 0; k < n->n_fused; k++)
        free(n->fused_names[k]);
    n->n_fused = 0;
    int n_fused = serial_get_count(r, "fused name count", SERIAL_MIN_STRING);
    for (int k = 0; k < n_fused && r->st == RN_OK; k++) {
        char *fused = serial_get_str(r, "fused name");
        if (fused == NULL)
            break;
        rn_status st = graph_node_add_fused_name(n, fused);
        free(fused);
        if (st != RN_OK)
            dec_fail_from(r, r->pos, st);
    }
}

static void dec_value(serial_reader *r, graph *g)
{
    size_t at = r->pos;
    char *name = serial_get_str(r, "value name");
    size_t tat = r->pos;
    uint32_t type = serial_get_u32(r, "value element type");
    int32_t rank = (int32_t)serial_get_u32(r, "value rank");
    graph_value *v = NULL;
    if (r->st != RN_OK)
        goto done;
    if (!serial_type_ok((rn_element_type)type)) {
        serial_fail_at(r, tat, RN_PARSE_ERROR, "value '%s' has unknown element type %" PRIu32, name,
                       type);
        goto done;
    }
    if (rank < -1 || rank > RN_MAX_RANK) {
        serial_fail_at(r, tat + 4, RN_PARSE_ERROR, "value '%s' has rank %" PRId32, name, rank);
        goto done;
    }
    rn_status st = graph_add_value(g, name, &v);
    if (st != RN_OK) {
        dec_fail_from(r, at, st);
        goto done;
    }
    v->type = (rn_element_type)type;
    v->shape.rank = rank;
    for (int i = 0; i < rank && r->st == RN_OK; i++) {
        size_t dat = r->pos;
        v->shape.dims[i] = (int64_t)serial_get_u64(r, "value dim");
        if (r->st == RN_OK && v->shape.dims[i] < RN_DIM_DYNAMIC)
            serial_fail_at(r, dat, RN_PARSE_ERROR, "value '%s': dim %d is %" PRId64, name, i,
                           v->shape.dims[i]);
    }
    size_t fat = r->pos;
    uint8_t flags = serial_get_u8(r, "value flags");
    if (r->st != RN_OK)
        goto done;
    if (flags & ~31u || ((flags >> 2) & 7u) >= GRAPH_KIND_COUNT) {
        serial_fail_at(r, fat, RN_PARSE_ERROR, "value '%s' has unknown flags 0x%x", name, flags);
        goto done;
    }
    v->is_parameter = flags & 1;
    v->kind = (graph_kind)((flags >> 2) & 7u); /* bits 2-4: the value's kind (graph_kind) */
    if (flags & 2) {
        graph_tensor *t = calloc(1, sizeof *t);
        if (t == NULL) {
            serial_fail(r, "out of memory");
            goto done;
        }
        dec_tensor(r, t);
        if (r->st != RN_OK) {
            free(t);
            goto done;
        }
        v->constant = t; /* freed with the graph from here on */
    }
done:
    free(name);
}

/* Reads a graph whose enclosing graph is `parent` (NULL at the top). Returns
 * NULL after recording an error. */
static graph *dec_graph(serial_reader *r, graph *parent)
{
    size_t at = r->pos;
    if (parent != NULL && r->depth >= GRAPH_SERIAL_MAX_DEPTH) {
        serial_fail(r, "subgraphs nest deeper than %d", GRAPH_SERIAL_MAX_DEPTH);
        return NULL;
    }
    r->depth += parent != NULL;
    graph *g = NULL;
    graph_value **outer = NULL;
    char *name = serial_get_str(r, "graph name");
    if (name == NULL)
        goto done;
    rn_status st = graph_create(name, &g);
    free(name);
    if (st != RN_OK) {
        dec_fail_from(r, at, st);
        goto done;
    }
    g->parent = parent;
    g->opset = (int32_t)serial_get_u32(r, "graph opset");
    g->ir_version = (int32_t)serial_get_u32(r, "graph IR version");
    int n_values = serial_get_count(r, "value count", SERIAL_MIN_VALUE);
    for (int i = 0; i < n_values && r->st == RN_OK; i++)
        dec_value(r, g);
    int n_outer = serial_get_count(r, "outer reference count", SERIAL_MIN_STRING);
    if (r->st == RN_OK && (outer = calloc((size_t)n_outer + 1, sizeof *outer)) == NULL)
        serial_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n_outer && r->st == RN_OK; i++) {
        size_t oat = r->pos;
        char *oname = serial_get_str(r, "outer reference");
        if (oname == NULL)
            break;
        outer[i] = parent != NULL ? graph_find_value(parent, oname, true) : NULL;
        if (outer[i] == NULL)
            serial_fail_at(r, oat, RN_PARSE_ERROR,
                           "graph '%s' reads '%s' from an enclosing graph, which defines no such "
                           "value",
                           g->name, oname);
        free(oname);
    }
    int n_nodes = serial_get_count(r, "node count", SERIAL_MIN_NODE);
    for (int i = 0; i < n_nodes && r->st == RN_OK; i++)
        dec_node(r, g, outer, n_outer);
    int n_inputs = serial_get_count(r, "graph input count", 4);
    for (int i = 0; i < n_inputs && r->st == RN_OK; i++) {
        size_t iat = r->pos;
        int32_t id = (int32_t)serial_get_u32(r, "graph input");
        char user[300];
        snprintf(user, sizeof user, "graph '%s': input %d", g->name, i);
        graph_value *v = r->st == RN_OK ? resolve_ref(r, g, NULL, 0, id, iat, false, user) : NULL;
        if (v == NULL)
            break;
        bool was_parameter = v->is_parameter; /* keep the encoded flag as it was */
        if ((st = graph_add_input(g, v)) != RN_OK)
            dec_fail_from(r, iat, st);
        v->is_parameter = was_parameter;
    }
    int n_outputs = serial_get_count(r, "graph output count", 4);
    for (int i = 0; i < n_outputs && r->st == RN_OK; i++) {
        size_t oat = r->pos;
        int32_t ref = (int32_t)serial_get_u32(r, "graph output");
        if (r->st != RN_OK)
            break;
        char user[300];
        snprintf(user, sizeof user, "graph '%s': output %d", g->name, i);
        graph_value *v = resolve_ref(r, g, outer, n_outer, ref, oat, false, user);
        if (v != NULL && (st = graph_add_output(g, v)) != RN_OK)
            dec_fail_from(r, oat, st);
    }
    if (r->st == RN_OK && (st = graph_sort(g)) != RN_OK)
        dec_fail_from(r, at, st);
done:
    free(outer);
    r->depth -= parent != NULL;
    if (r->st != RN_OK) {
        graph_free(g);
        return NULL;
    }
    return g;
}

graph *serial_decode_payload(serial_reader *r)
{
    const uint8_t *tag = serial_take(r, 4, "encoding tag");
    if (tag != NULL && memcmp(tag, GRAPH_SERIAL_TAG, 4) != 0)
        serial_fail_at(r, 0, RN_PARSE_ERROR, "not a serialized runnel graph (bad tag)");
    uint32_t version = serial_get_u32(r, "encoding version");
    if (r->st == RN_OK && version != GRAPH_SERIAL_VERSION)
        serial_fail_at(r, r->pos - 4, RN_UNSUPPORTED,
                       "graph encoding version %" PRIu32 ", this build reads %u", version,
                       GRAPH_SERIAL_VERSION);
    graph *g = r->st == RN_OK ? dec_graph(r, NULL) : NULL;
    if (g != NULL && serial_remaining(r) != 0)
        serial_fail(r, "%zu bytes follow the graph", serial_remaining(r));
    if (r->st == RN_OK) {
        rn_status st = graph_validate(g);
        if (st != RN_OK)
            r->st = rn_wrap_error(st, "%s: ", r->what);
    }
    if (r->st != RN_OK) {
        graph_free(g);
        return NULL;
    }
    return g;
}

rn_status graph_deserialize(const void *data, size_t size, graph **out)
{
    if (data == NULL && size > 0)
        return rn_set_error(RN_INVALID_ARG, "serialized graph: NULL data");
    static const uint8_t empty[1];
    serial_reader r = {.data = size > 0 ? data : empty, .size = size, .what = "serialized graph"};
    graph *g = serial_decode_payload(&r);
    if (g == NULL)
        return r.st;
    *out = g;
    return RN_OK;
}
