/* ModelProto -> graph: opsets, values (inputs, initializers, Constant nodes,
 * node outputs), declared types and shapes, nodes and results, then sort,
 * validation and shape inference. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx/onnx_internal.h"
#include "graph/onnx/onnx_reader.h"
#include "graph/ops.h"

/* The state of reading one GraphProto. */
typedef struct reader {
    const onnx_ctx *ctx; /* depth already that of this graph */
    Onnx__GraphProto *proto;
    graph *g;
    onnx_name_map values; /* name -> graph_value* of this graph */
    onnx_name_map inputs; /* names listed in proto->input (duplicate check) */
    char **node_names;    /* the unique name of each proto node */
} reader;

static bool is_default_domain(const char *domain)
{
    return domain == NULL || domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
}

/* The version of `domain` in an opset_import list, or 0 when none. */
static int opset_in(Onnx__OperatorSetIdProto *const *ops, size_t n, const char *domain)
{
    bool dflt = is_default_domain(domain);
    for (size_t i = 0; i < n; i++) {
        const Onnx__OperatorSetIdProto *o = ops[i];
        bool match = dflt ? is_default_domain(o->domain)
                          : (o->domain != NULL && strcmp(o->domain, domain) == 0);
        if (match)
            return o->has_version && o->version > 0 && o->version <= INT_MAX ? (int)o->version : 0;
    }
    return 0;
}

/* The opset version the model imports for `domain`, or 0 when none. Nodes
 * inlined from a model-local function may use a domain only the function
 * imports. */
static int imported_opset(const Onnx__ModelProto *m, const char *domain)
{
    int v = opset_in(m->opset_import, m->n_opset_import, domain);
    for (size_t i = 0; v == 0 && i < m->n_functions; i++)
        v = opset_in(m->functions[i]->opset_import, m->functions[i]->n_opset_import, domain);
    return v;
}

/* Refuses an opset_import entry newer than what runnel's schemas implement
 * for its domain (domains without built-in schemas are not judged here). */
static rn_status check_opsets(Onnx__OperatorSetIdProto *const *ops, size_t n, const char *where)
{
    for (size_t i = 0; i < n; i++) {
        const char *domain = ops[i]->domain != NULL ? ops[i]->domain : "";
        int newest = graph_op_newest_opset(domain);
        if (newest > 0 && ops[i]->has_version && ops[i]->version > newest)
            return rn_set_error(RN_UNSUPPORTED,
                                "%s imports opset %lld of domain '%s'; runnel implements up to "
                                "opset %d of it",
                                where, (long long)ops[i]->version,
                                is_default_domain(domain) ? "ai.onnx" : domain, newest);
    }
    return RN_OK;
}

/* ---- declared types ---- */

/* Reads a tensor TypeProto's element type and shape into t. */
static rn_status read_tensor_type(const Onnx__TypeProto__Tensor *tt, const char *vname,
                                  graph_type *t)
{
    if (tt == NULL)
        return RN_OK;
    char what[300];
    snprintf(what, sizeof what, "value '%s'", vname);
    if (tt->has_elem_type) {
        rn_status st = onnx_element_type(tt->elem_type, what, true, &t->elem);
        if (st != RN_OK)
            return st;
    }
    if (tt->shape == NULL)
        return RN_OK;
    if (tt->shape->n_dim > RN_MAX_RANK)
        return rn_set_error(RN_UNSUPPORTED, "value '%s': rank %zu exceeds the maximum of %d", vname,
                            tt->shape->n_dim, RN_MAX_RANK);
    t->shape.rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        t->shape.dims[i] = RN_DIM_DYNAMIC;
        /* paddle2onnx and some older exporters write -1 for a dim they do
         * not know: a dynamic dim, as ONNX Runtime reads it. */
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value != -1) {
            if (d->dim_value < 0)
                return rn_set_error(RN_PARSE_ERROR, "value '%s': dim %zu is negative (%lld)", vname,
                                    i, (long long)d->dim_value);
            t->shape.dims[i] = d->dim_value;
        }
    }
    return RN_OK;
}

/* The name of a TypeProto's kind, for errors. */
static const char *type_case_name(const Onnx__TypeProto *tp)
{
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        return "tensor";
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        return "sparse tensor";
    default:
        return "unknown";
    }
}

/* map(K, tensor(V)): the keys must be strings or int64 (what ONNX Runtime
 * runs: ZipMap, CastMap, DictVectorizer), the values a tensor type, whose
 * element type becomes t->elem. The key type is checked, not kept: the
 * run-time value carries it (graph/graph.h). */
static rn_status read_map_type(const Onnx__TypeProto__Map *mt, const char *vname, graph_type *t)
{
    if (mt == NULL)
        return RN_OK;
    if (!mt->has_key_type || (mt->key_type != RN_STRING && mt->key_type != RN_I64))
        return rn_set_error(RN_UNSUPPORTED,
                            "value '%s': maps with keys of element type %d (%s) are not "
                            "supported (only string and int64 keys)",
                            vname, (int)mt->key_type,
                            rn_element_type_name((rn_element_type)mt->key_type));
    const Onnx__TypeProto *vt = mt->value_type;
    if (vt == NULL || vt->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return RN_OK;
    if (vt->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return rn_set_error(RN_UNSUPPORTED,
                            "value '%s': maps of %s values are not supported (only of tensors)",
                            vname, type_case_name(vt));
    rn_status st = read_tensor_type(vt->tensor_type, vname, t);
    t->shape.rank = -1; /* a map has no shape */
    return st;
}

/* A sequence's element: a tensor type, a map type, or nothing said. */
static rn_status read_sequence_elem(const Onnx__TypeProto *elem, const char *vname, graph_type *t)
{
    if (elem == NULL || elem->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return RN_OK;
    if (elem->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE && t->kind == GRAPH_KIND_SEQUENCE) {
        t->kind = GRAPH_KIND_SEQUENCE_MAP;
        return read_map_type(elem->map_type, vname, t);
    }
    if (elem->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return rn_set_error(
            RN_UNSUPPORTED,
            "value '%s': %s of %s values are not supported (only of "
            "tensors%s)",
            vname, t->kind == GRAPH_KIND_SEQUENCE ? "sequences" : "optional sequences",
            type_case_name(elem), t->kind == GRAPH_KIND_SEQUENCE ? " and maps" : "");
    rn_status st = read_tensor_type(elem->tensor_type, vname, t);
    t->shape.rank = -1; /* items may differ in shape: the sequence has none */
    return st;
}

rn_status onnx_read_type(const Onnx__TypeProto *tp, const char *vname, graph_type *out, bool *known)
{
    graph_type t = {.kind = GRAPH_KIND_TENSOR, .elem = RN_UNDEFINED, .shape = {.rank = -1}};
    *known = false;
    rn_status st = RN_OK;
    if (tp == NULL || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
        *out = t;
        return RN_OK;
    }
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        st = read_tensor_type(tp->tensor_type, vname, &t);
        break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        t.kind = GRAPH_KIND_SEQUENCE;
        if (tp->sequence_type != NULL)
            st = read_sequence_elem(tp->sequence_type->elem_type, vname, &t);
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        t.kind = GRAPH_KIND_MAP;
        st = read_map_type(tp->map_type, vname, &t);
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: {
        t.kind = GRAPH_KIND_OPTIONAL;
        const Onnx__TypeProto *elem =
            tp->optional_type != NULL ? tp->optional_type->elem_type : NULL;
        if (elem == NULL || elem->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
            break;
        if (elem->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
            st = read_tensor_type(elem->tensor_type, vname, &t);
        } else if (elem->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
            t.kind = GRAPH_KIND_OPTIONAL_SEQUENCE;
            if (elem->sequence_type != NULL)
                st = read_sequence_elem(elem->sequence_type->elem_type, vname, &t);
        } else {
            st = rn_set_error(RN_UNSUPPORTED,
                              "value '%s': optionals of %s values are not supported (only of "
                              "tensors and sequences)",
                              vname, type_case_name(elem));
        }
        break;
    }
    default:
        st = rn_set_error(RN_UNSUPPORTED, "value '%s': %s types are not supported", vname,
                          type_case_name(tp));
        break;
    }
    if (st != RN_OK)
        return st;
    *out = t;
    *known = true;
    return RN_OK;
}

/* Merges a declaration into what is known of v: unknown parts are filled in;
 * a declaration that contradicts a known kind, type or static dim is an
 * error, except that with `warn_to` set (two declarations of a node's
 * output) a contradicting shape is a warning there and the shape is left to
 * shape inference. */
static rn_status declare(graph_value *v, const graph_type *t, bool known, const char *where,
                         graph *warn_to)
{
    if (known && t->kind != v->kind) {
        /* A value's kind starts as tensor; it is known once declared. */
        if (v->kind != GRAPH_KIND_TENSOR || v->constant != NULL || v->type != RN_UNDEFINED ||
            v->shape.rank >= 0)
            return rn_set_error(RN_TYPE_MISMATCH, "value '%s': %s declares a %s, but it is a %s",
                                v->name, where, graph_kind_name(t->kind), graph_kind_name(v->kind));
        v->kind = t->kind;
    }
    rn_element_type type = t->elem;
    const graph_shape *shape = &t->shape;
    if (type != RN_UNDEFINED) {
        if (v->type != RN_UNDEFINED && v->type != type)
            return rn_set_error(RN_TYPE_MISMATCH, "value '%s': %s declares %s, but it is %s",
                                v->name, where, rn_element_type_name(type),
                                rn_element_type_name(v->type));
        v->type = type;
    }
    if (shape->rank < 0)
        return RN_OK;
    if (v->shape.rank < 0) {
        v->shape = *shape;
        return RN_OK;
    }
    bool same = v->shape.rank == shape->rank;
    for (int i = 0; same && i < shape->rank; i++)
        same = shape->dims[i] < 0 || v->shape.dims[i] < 0 || shape->dims[i] == v->shape.dims[i];
    if (!same && warn_to != NULL) {
        char a[160], b[160];
        graph_add_warning(warn_to,
                          "value '%s': %s declares shape %s, but an earlier declaration says %s; "
                          "shape inference decides",
                          v->name, where, graph_shape_str(shape, a, sizeof a),
                          graph_shape_str(&v->shape, b, sizeof b));
        v->shape.rank = -1;
        return RN_OK;
    }
    if (!same) {
        char a[160], b[160];
        return rn_set_error(RN_SHAPE_MISMATCH, "value '%s': %s declares shape %s, but it is %s",
                            v->name, where, graph_shape_str(shape, a, sizeof a),
                            graph_shape_str(&v->shape, b, sizeof b));
    }
    for (int i = 0; i < shape->rank; i++)
        if (v->shape.dims[i] < 0)
            v->shape.dims[i] = shape->dims[i];
    return RN_OK;
}

/* ---- node names ---- */

/* A name not in `used`: `base` itself when `plain` is allowed and free, else
 * the first free "<base>_<k>". NULL when out of memory. */
static char *unique_name(const onnx_name_map *used, const char *base, bool plain)
{
    if (plain && !onnx_name_map_has(used, base))
        return strdup(base);
    for (unsigned long k = 1;; k++) {
        char *cand;
        if (asprintf(&cand, "%s_%lu", base, k) < 0)
            return NULL;
        if (!onnx_name_map_has(used, cand))
            return cand;
        free(cand);
    }
}

/* Gives every node a unique name: its own when it has one and is the first to
 * use it; otherwise "<op_type>_<index>" (for the empty names ONNX allows) or
 * "<name>_<k>" (for a repeated name). Real names are reserved first, so a
 * made-up name never takes a name a later node has. */
static rn_status assign_node_names(reader *r)
{
    size_t n = r->proto->n_node;
    onnx_name_map used = {0};
    rn_status st = RN_OK;
    r->node_names = calloc(n + 1, sizeof(char *));
    if (r->node_names == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory");
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        const char *name = r->proto->node[i]->name;
        if (name == NULL || name[0] == '\0' || onnx_name_map_has(&used, name))
            continue;
        if ((r->node_names[i] = strdup(name)) == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory");
        else
            st = onnx_name_map_put(&used, name, NULL);
    }
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (r->node_names[i] != NULL)
            continue;
        const Onnx__NodeProto *np = r->proto->node[i];
        char *name = NULL;
        if (np->name == NULL || np->name[0] == '\0') {
            const char *op = np->op_type != NULL && np->op_type[0] != '\0' ? np->op_type : "node";
            char *base;
            if (asprintf(&base, "%s_%zu", op, i) >= 0) {
                name = unique_name(&used, base, true);
                free(base);
            }
        } else {
            name = unique_name(&used, np->name, false);
        }
        if (name == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory");
        else if ((st = onnx_name_map_put(&used, name, NULL)) != RN_OK)
            free(name);
        else
            r->node_names[i] = name;
    }
    onnx_name_map_free(&used);
    return st;
}

/* ---- values ---- */

/* Adds a value named `name` to the graph and the index. */
static rn_status add_value(reader *r, const char *name, graph_value **out)
{
    /* On a failed put the value stays in the graph, which the caller frees. */
    rn_status st = graph_add_value(r->g, name, out);
    if (st == RN_OK)
        st = onnx_name_map_put(&r->values, name, *out);
    return st;
}

/* Moves *t into `holder` (clearing *t) and makes v that constant. */
static void set_constant(graph_value *v, graph_tensor *t, graph_tensor *holder)
{
    *holder = *t;
    memset(t, 0, sizeof *t);
    v->constant = holder;
    v->type = holder->type;
    v->shape.rank = holder->rank;
    memcpy(v->shape.dims, holder->dims, sizeof v->shape.dims);
}

/* Adds a constant value named `name` that takes *t over; on error *t's data
 * is released. */
static rn_status add_constant(reader *r, const char *name, graph_tensor *t)
{
    graph_tensor *holder = calloc(1, sizeof *holder);
    graph_value *v = NULL;
    rn_status st = holder == NULL ? rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory")
                                  : add_value(r, name, &v);
    if (st != RN_OK || v == NULL) {
        graph_tensor_release(t);
        free(holder);
        return st;
    }
    set_constant(v, t, holder);
    return RN_OK;
}

/* How an earlier definition of a value came about, for "defined twice". */
static const char *definer(const graph_value *v)
{
    if (v->is_parameter)
        return "a graph input";
    if (v->constant != NULL)
        return "an initializer or Constant node";
    return "another node's output";
}

static rn_status add_initializers(reader *r)
{
    Onnx__GraphProto *p = r->proto;
    if (p->n_sparse_initializer > 0)
        return rn_set_error(RN_UNSUPPORTED, "graph '%s': sparse initializers are not supported",
                            r->g->name);
    for (size_t i = 0; i < p->n_initializer; i++) {
        Onnx__TensorProto *tp = p->initializer[i];
        const char *name = tp->name != NULL ? tp->name : "";
        if (name[0] == '\0')
            return rn_set_error(RN_PARSE_ERROR, "graph '%s': initializer %zu has no name",
                                r->g->name, i);
        if (onnx_name_map_has(&r->values, name))
            return rn_set_error(RN_PARSE_ERROR, "graph '%s': initializer '%s' is defined twice",
                                r->g->name, name);
        graph_tensor t;
        rn_status st = onnx_tensor_take(tp, r->ctx->base_dir, &t);
        if (st != RN_OK)
            return rn_wrap_error(st, "initializer '%s': ", name);
        if ((st = add_constant(r, name, &t)) != RN_OK)
            return st;
    }
    return RN_OK;
}

/* Graph inputs: parameters, except those an initializer defines, which stay
 * constants (their declared type and shape must agree with the data). */
static rn_status add_inputs(reader *r)
{
    for (size_t i = 0; i < r->proto->n_input; i++) {
        const Onnx__ValueInfoProto *vi = r->proto->input[i];
        const char *name = vi->name != NULL ? vi->name : "";
        if (name[0] == '\0')
            return rn_set_error(RN_PARSE_ERROR, "graph '%s': input %zu has no name", r->g->name, i);
        if (onnx_name_map_has(&r->inputs, name))
            return rn_set_error(RN_PARSE_ERROR, "graph '%s': input '%s' is listed twice",
                                r->g->name, name);
        rn_status st = onnx_name_map_put(&r->inputs, name, NULL);
        graph_type type;
        bool known;
        if (st != RN_OK || (st = onnx_read_type(vi->type, name, &type, &known)) != RN_OK)
            return st;
        graph_value *v = onnx_name_map_get(&r->values, name);
        if (v != NULL) { /* an initializer: a constant with a default */
            if ((st = declare(v, &type, known, "the graph input", NULL)) != RN_OK)
                return st;
            continue;
        }
        if ((st = add_value(r, name, &v)) != RN_OK)
            return st;
        v->type = type.elem;
        v->kind = type.kind;
        v->shape = type.shape;
        if ((st = graph_add_input(r->g, v)) != RN_OK)
            return st;
    }
    return RN_OK;
}

/* Checks the count of a node's inputs or outputs against what int holds. */
static rn_status check_arity(const reader *r, size_t i, size_t n, const char *what)
{
    const Onnx__NodeProto *np = r->proto->node[i];
    if (n > (size_t)INT_MAX / 2)
        return rn_set_error(RN_PARSE_ERROR, "node '%s' (%s): %zu %s are too many", r->node_names[i],
                            np->op_type, n, what);
    return RN_OK;
}

/* Folds a Constant node into a constant value named after its output. */
static rn_status add_constant_node(reader *r, size_t i)
{
    const Onnx__NodeProto *np = r->proto->node[i];
    const char *name = r->node_names[i];
    if (np->n_input != 0)
        return rn_set_error(RN_PARSE_ERROR, "node '%s' (Constant): takes no inputs, has %zu", name,
                            np->n_input);
    if (np->n_output != 1 || np->output[0] == NULL || np->output[0][0] == '\0')
        return rn_set_error(RN_PARSE_ERROR, "node '%s' (Constant): needs one named output", name);
    const char *out = np->output[0];
    graph_value *v = onnx_name_map_get(&r->values, out);
    if (v != NULL)
        return rn_set_error(RN_PARSE_ERROR,
                            "node '%s' (Constant): output '%s' is defined twice (it is also %s)",
                            name, out, definer(v));
    graph_tensor t;
    rn_status st = onnx_constant_value(r->ctx, np, name, &t);
    if (st != RN_OK)
        return st;
    return add_constant(r, out, &t);
}

/* Creates the values of every node output (and folds Constant nodes), so
 * that nodes may then refer to values defined later in the file: graph_sort
 * puts them in order. */
static rn_status add_node_outputs(reader *r)
{
    for (size_t i = 0; i < r->proto->n_node; i++) {
        const Onnx__NodeProto *np = r->proto->node[i];
        const char *name = r->node_names[i];
        if (np->op_type == NULL || np->op_type[0] == '\0')
            return rn_set_error(RN_PARSE_ERROR, "node '%s': has no op_type", name);
        rn_status st;
        if ((st = check_arity(r, i, np->n_input, "inputs")) != RN_OK ||
            (st = check_arity(r, i, np->n_output, "outputs")) != RN_OK)
            return st;
        if (is_default_domain(np->domain) && strcmp(np->op_type, "Constant") == 0) {
            if ((st = add_constant_node(r, i)) != RN_OK)
                return st;
            continue;
        }
        for (size_t k = 0; k < np->n_output; k++) {
            const char *out = np->output[k];
            if (out == NULL || out[0] == '\0')
                continue; /* an omitted optional output */
            graph_value *v = onnx_name_map_get(&r->values, out);
            if (v != NULL)
                return rn_set_error(RN_PARSE_ERROR,
                                    "node '%s' (%s): output '%s' is defined twice (it is also %s)",
                                    name, np->op_type, out, definer(v));
            if ((st = add_value(r, out, &v)) != RN_OK)
                return st;
        }
    }
    return RN_OK;
}

/* The main graph, where warnings of every subgraph go. */
static graph *root_graph(graph *g)
{
    while (g->parent != NULL)
        g = g->parent;
    return g;
}

/* Applies value_info and the declared types of results to this graph's
 * values. value_info naming no value of the graph is ignored (exporters leave
 * stale entries). */
static rn_status apply_declarations(reader *r)
{
    Onnx__GraphProto *p = r->proto;
    for (size_t pass = 0; pass < 2; pass++) {
        size_t n = pass == 0 ? p->n_value_info : p->n_output;
        Onnx__ValueInfoProto **vis = pass == 0 ? p->value_info : p->output;
        const char *where = pass == 0 ? "value_info" : "the graph output";
        for (size_t i = 0; i < n; i++) {
            const char *name = vis[i]->name != NULL ? vis[i]->name : "";
            graph_value *v = onnx_name_map_get(&r->values, name);
            if (v == NULL)
                continue;
            graph_type type;
            bool known;
            bool node_output = v->constant == NULL && !v->is_parameter;
            rn_status st = onnx_read_type(vis[i]->type, name, &type, &known);
            if (st == RN_OK)
                st = declare(v, &type, known, where, node_output ? root_graph(r->g) : NULL);
            if (st != RN_OK)
                return st;
        }
    }
    return RN_OK;
}

/* The value a node input names: of this graph, else of an enclosing one. */
static graph_value *resolve(const reader *r, const char *name)
{
    graph_value *v = onnx_name_map_get(&r->values, name);
    if (v == NULL && r->g->parent != NULL)
        v = graph_find_value(r->g->parent, name, true);
    return v;
}

static rn_status add_node(reader *r, size_t i, graph_value **ins, graph_value **outs)
{
    Onnx__NodeProto *np = r->proto->node[i];
    const char *name = r->node_names[i];
    const char *domain = is_default_domain(np->domain) ? "" : np->domain;
    if (graph_op_find(domain, np->op_type) == NULL)
        return rn_set_error(RN_UNSUPPORTED,
                            "node '%s' (%s): op '%s' of domain '%s' is not supported", name,
                            np->op_type, np->op_type, domain[0] ? domain : "ai.onnx");
    int opset =
        is_default_domain(domain) ? r->ctx->default_opset : imported_opset(r->ctx->model, domain);
    if (opset == 0 && !is_default_domain(domain) && graph_op_newest_opset(domain) > 0) {
        /* ONNX Runtime's optimizer leaves com.microsoft out of opset_import
         * in the models it hands back, and ONNX Runtime reads such a node
         * at the newest version it has: so does runnel, saying so. */
        opset = graph_op_newest_opset(domain);
        graph_add_warning(root_graph(r->g),
                          "node '%s' (%s): the model imports no opset for domain '%s'; read as "
                          "opset %d, the newest runnel implements",
                          name, np->op_type, domain, opset);
    }
    if (opset == 0)
        return rn_set_error(RN_PARSE_ERROR,
                            "node '%s' (%s): the model imports no opset for domain '%s'", name,
                            np->op_type, domain[0] ? domain : "ai.onnx");
    for (size_t k = 0; k < np->n_input; k++) {
        const char *in = np->input[k];
        ins[k] = NULL;
        if (in == NULL || in[0] == '\0')
            continue; /* an omitted optional input */
        if ((ins[k] = resolve(r, in)) == NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "node '%s' (%s): input %zu '%s' is not defined (no graph input, "
                                "initializer or node output has that name)",
                                name, np->op_type, k, in);
    }
    for (size_t k = 0; k < np->n_output; k++) {
        const char *out = np->output[k];
        outs[k] = out != NULL && out[0] != '\0' ? onnx_name_map_get(&r->values, out) : NULL;
    }
    graph_node *node;
    rn_status st = graph_add_node(r->g, name, domain, np->op_type, opset, (int)np->n_input, ins,
                                  (int)np->n_output, outs, &node);
    if (st != RN_OK)
        return st;
    for (size_t a = 0; a < np->n_attribute; a++) {
        graph_attr attr;
        if ((st = onnx_read_attr(r->ctx, r->g, node, np->attribute[a], &attr)) != RN_OK)
            return st;
        if ((st = graph_node_add_attr(node, &attr)) != RN_OK)
            return st; /* graph_node_add_attr released attr */
    }
    return RN_OK;
}

static rn_status add_nodes(reader *r)
{
    size_t most = 1;
    for (size_t i = 0; i < r->proto->n_node; i++) {
        const Onnx__NodeProto *np = r->proto->node[i];
        most = np->n_input > most ? np->n_input : most;
        most = np->n_output > most ? np->n_output : most;
    }
    graph_value **tmp = malloc(2 * most * sizeof *tmp);
    if (tmp == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory");
    rn_status st = RN_OK;
    for (size_t i = 0; i < r->proto->n_node && st == RN_OK; i++) {
        const Onnx__NodeProto *np = r->proto->node[i];
        if (is_default_domain(np->domain) && strcmp(np->op_type, "Constant") == 0)
            continue; /* folded into a constant value */
        st = add_node(r, i, tmp, tmp + most);
    }
    free(tmp);
    return st;
}

/* Results may be values of this graph or, in a subgraph, of an enclosing one. */
static rn_status add_outputs(reader *r)
{
    for (size_t i = 0; i < r->proto->n_output; i++) {
        const char *name = r->proto->output[i]->name != NULL ? r->proto->output[i]->name : "";
        if (name[0] == '\0')
            return rn_set_error(RN_PARSE_ERROR, "graph '%s': output %zu has no name", r->g->name,
                                i);
        graph_value *v = resolve(r, name);
        if (v == NULL)
            return rn_set_error(RN_PARSE_ERROR,
                                "graph '%s': output '%s' is not defined (no graph input, "
                                "initializer or node output has that name)",
                                r->g->name, name);
        rn_status st = graph_add_output(r->g, v);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

rn_status onnx_read_graph(const onnx_ctx *ctx, Onnx__GraphProto *proto, graph *parent, graph **out)
{
    onnx_ctx sub = *ctx;
    if (parent != NULL && ++sub.depth > ONNX_MAX_DEPTH)
        return rn_set_error(RN_UNSUPPORTED, "subgraphs nest deeper than %d levels", ONNX_MAX_DEPTH);
    reader r = {.ctx = &sub, .proto = proto};
    onnx_inlined inlined;
    rn_status st = onnx_inline_functions(ctx->model, proto, &inlined);
    if (st != RN_OK)
        return st;
    if ((st = graph_create(proto->name, &r.g)) != RN_OK) {
        onnx_inlined_free(&inlined, proto);
        return st;
    }
    r.g->parent = parent;
    r.g->opset = ctx->default_opset;
    r.g->ir_version = ctx->ir_version;
    if ((st = assign_node_names(&r)) == RN_OK && (st = add_initializers(&r)) == RN_OK &&
        (st = add_inputs(&r)) == RN_OK && (st = add_node_outputs(&r)) == RN_OK &&
        (st = apply_declarations(&r)) == RN_OK && (st = add_nodes(&r)) == RN_OK &&
        (st = add_outputs(&r)) == RN_OK)
        st = graph_sort(r.g);
    /* A subgraph's own errors name it; the main graph's need no prefix. */
    if (st != RN_OK && parent != NULL && sub.depth <= ONNX_WRAP_DEPTH)
        st = rn_wrap_error(st, "subgraph '%s': ", r.g->name);
    for (size_t i = 0; r.node_names != NULL && i < proto->n_node; i++)
        free(r.node_names[i]);
    free(r.node_names);
    onnx_name_map_free(&r.values);
    onnx_name_map_free(&r.inputs);
    onnx_inlined_free(&inlined, proto);
    if (st != RN_OK) {
        graph_free(r.g);
        return st;
    }
    *out = r.g;
    return RN_OK;
}

/* ---- models ---- */

/* Reads an unpacked ModelProto (raw_data buffers of initializers move to the graph). */
static rn_status read_model(Onnx__ModelProto *m, const char *base_dir, graph **out)
{
    if (m->graph == NULL)
        return rn_set_error(RN_PARSE_ERROR, "the model has no graph");
    rn_status st = check_opsets(m->opset_import, m->n_opset_import, "the model");
    for (size_t i = 0; i < m->n_functions && st == RN_OK; i++) {
        char where[300];
        snprintf(where, sizeof where, "function '%s'",
                 m->functions[i]->name != NULL ? m->functions[i]->name : "");
        st = check_opsets(m->functions[i]->opset_import, m->functions[i]->n_opset_import, where);
    }
    if (st != RN_OK)
        return st;
    onnx_ctx ctx = {
        .base_dir = base_dir,
        .model = m,
        .ir_version = m->has_ir_version && m->ir_version > 0 && m->ir_version <= INT_MAX
                          ? (int)m->ir_version
                          : 0,
    };
    /* A model that uses only other domains need not import the default one
     * (its nodes are then refused one by one); IR 1 and 2 predate
     * opset_import and mean opset 1. */
    ctx.default_opset = imported_opset(m, "");
    if (ctx.default_opset == 0 && m->n_opset_import == 0 && ctx.ir_version < 3)
        ctx.default_opset = 1;
    graph *g;
    st = onnx_read_graph(&ctx, m->graph, NULL, &g);
    if (st != RN_OK)
        return st;
    if ((st = graph_validate(g)) == RN_OK)
        st = graph_infer_shapes(g);
    if (st != RN_OK) {
        graph_free(g);
        return st;
    }
    *out = g;
    return RN_OK;
}

static rn_status read_memory(const void *data, size_t size, const char *base_dir, graph **out)
{
    if (data == NULL && size > 0)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_memory: data is NULL");
    if (size == 0)
        return rn_set_error(RN_PARSE_ERROR, "the model is empty (0 bytes)");
    if (!onnx_wire_depth_ok(&onnx__model_proto__descriptor, data, size, ONNX_MAX_MESSAGE_DEPTH))
        return rn_set_error(RN_PARSE_ERROR, "messages nest deeper than %d levels",
                            ONNX_MAX_MESSAGE_DEPTH);
    onnx_unpack_allocator alloc;
    onnx_unpack_allocator_init(&alloc);
    Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc.base, size, data);
    if (m == NULL && alloc.failed)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory unpacking the model (%zu bytes)",
                            size);
    if (m == NULL)
        return rn_set_error(RN_PARSE_ERROR,
                            "not a valid ONNX ModelProto (%zu bytes): malformed or truncated",
                            size);
    rn_status st = read_model(m, base_dir, out);
    onnx__model_proto__free_unpacked(m, NULL);
    return st;
}

rn_status onnx_read_memory(const void *data, size_t size, const char *base_dir, graph **out)
{
    if (out == NULL)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_memory: out is NULL");
    rn_status st = read_memory(data, size, base_dir, out);
    if (st != RN_OK)
        return rn_wrap_error(st, "ONNX model in memory: ");
    return RN_OK;
}

rn_status onnx_read_file(const char *path, graph **out)
{
    if (path == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_file: path or out is NULL");
    onnx_file f;
    rn_status st = onnx_file_map(path, &f);
    if (st != RN_OK)
        return st;
    char *dir = onnx_dirname(path);
    if (dir == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    else
        st = read_memory(f.data, f.size, dir, out);
    free(dir);
    onnx_file_unmap(&f);
    if (st != RN_OK)
        return rn_wrap_error(st, "'%s': ", path);
    return RN_OK;
}
