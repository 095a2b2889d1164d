/* The harness of REF's kernel tests (see node_case.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "plugins/ref/ref.h"
#include "tests/ref/node_case.h"

/* rn_element_type_size says 0 for strings: their buffers hold pointers. */
static size_t element_size(rn_element_type type)
{
    return type == RN_STRING ? sizeof(char *) : rn_element_type_size(type);
}

graph_tensor tensor_view(rn_element_type type, int rank, const int64_t *dims, const void *data)
{
    graph_tensor t = {.type = type, .rank = rank, .data = (void *)data};
    if (rank > 0)
        memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    t.nbytes = graph_tensor_count(&t) * element_size(type);
    return t;
}

/* ---- attributes ---- */

graph_attr attr_int(const char *name, int64_t v)
{
    return (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_INT, .i = v};
}

graph_attr attr_float(const char *name, float v)
{
    return (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_FLOAT, .f = v};
}

graph_attr attr_string(const char *name, const char *s)
{
    return (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_STRING, .s = strdup(s)};
}

/* malloc(0) may return NULL, which an attribute with a list reads as none. */
static void *copy_list(const void *v, size_t n, size_t size)
{
    void *copy = malloc(size * (n ? n : 1));
    cr_assert_not_null(copy, "out of memory copying an attribute of %zu values", n);
    if (n > 0)
        memcpy(copy, v, size * n);
    return copy;
}

graph_attr attr_ints(const char *name, int n, const int64_t *v)
{
    return (graph_attr){.name = strdup(name),
                        .type = GRAPH_ATTR_INTS,
                        .count = n,
                        .ints = copy_list(v, (size_t)n, sizeof *v)};
}

graph_attr attr_floats(const char *name, int n, const float *v)
{
    return (graph_attr){.name = strdup(name),
                        .type = GRAPH_ATTR_FLOATS,
                        .count = n,
                        .floats = copy_list(v, (size_t)n, sizeof *v)};
}

graph_attr attr_strings(const char *name, int n, const char *const *v)
{
    char **copy = calloc((size_t)n + 1, sizeof *copy);
    cr_assert_not_null(copy, "out of memory copying an attribute of %d strings", n);
    for (int i = 0; i < n; i++)
        copy[i] = strdup(v[i]);
    return (graph_attr){
        .name = strdup(name), .type = GRAPH_ATTR_STRINGS, .count = n, .strings = copy};
}

graph_attr attr_graph(const char *name, graph *sub)
{
    return (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_GRAPH, .g = sub};
}

graph_attr attr_type(const char *name, graph_kind kind, rn_element_type elem)
{
    return (graph_attr){.name = strdup(name),
                        .type = GRAPH_ATTR_TYPE_PROTO,
                        .tp = {.kind = kind, .elem = elem, .shape = {.rank = -1}}};
}

/* ---- one node ---- */

node_case nc_new(const char *op, int opset)
{
    return (node_case){.op = op, .opset = opset};
}

void nc_input(node_case *c, rn_element_type type, int rank, const int64_t *dims, const void *data,
              bool constant)
{
    cr_assert_lt(c->n_in, MAX_PORTS, "more than %d inputs", MAX_PORTS);
    c->in[c->n_in] = tensor_view(type, rank, dims, data);
    c->constant[c->n_in++] = constant;
}

void nc_f32(node_case *c, int rank, const int64_t *dims, const float *data)
{
    nc_input(c, RN_F32, rank, dims, data, false);
}

void nc_skip(node_case *c)
{
    cr_assert_lt(c->n_in, MAX_PORTS, "more than %d inputs", MAX_PORTS);
    c->in[c->n_in++] = (graph_tensor){.type = RN_UNDEFINED};
}

void nc_attr(node_case *c, graph_attr a)
{
    cr_assert_lt(c->n_attrs, MAX_ATTRS, "more than %d attributes", MAX_ATTRS);
    c->attrs[c->n_attrs++] = a;
}

void nc_int(node_case *c, const char *name, int64_t v)
{
    nc_attr(c, attr_int(name, v));
}

void nc_float(node_case *c, const char *name, float v)
{
    nc_attr(c, attr_float(name, v));
}

void nc_string(node_case *c, const char *name, const char *s)
{
    nc_attr(c, attr_string(name, s));
}

void nc_ints(node_case *c, const char *name, int n, const int64_t *v)
{
    nc_attr(c, attr_ints(name, n, v));
}

void nc_floats(node_case *c, const char *name, int n, const float *v)
{
    nc_attr(c, attr_floats(name, n, v));
}

void nc_strings(node_case *c, const char *name, int n, const char *const *v)
{
    nc_attr(c, attr_strings(name, n, v));
}

/* The value of input `i`: an initializer or a graph input. */
static rn_status add_input_value(node_case *c, int i, graph_value **out)
{
    char name[16];
    snprintf(name, sizeof name, "in%d", i);
    graph_value *v;
    rn_status st = graph_add_value(c->g, name, &v);
    if (st != RN_OK)
        return st;
    v->type = c->in[i].type;
    v->shape.rank = c->in[i].rank;
    memcpy(v->shape.dims, c->in[i].dims, sizeof v->shape.dims);
    if (c->constant[i]) {
        v->constant = calloc(1, sizeof *v->constant);
        st = v->constant ? graph_tensor_copy(v->constant, &c->in[i]) : RN_OUT_OF_MEMORY;
    } else {
        st = graph_add_input(c->g, v);
    }
    *out = v;
    return st;
}

rn_status nc_build_mask(node_case *c, int n_out, unsigned present)
{
    c->n_out = n_out;
    rn_status st = graph_create("case", &c->g);
    if (st != RN_OK)
        return st;
    c->g->opset = c->opset;
    graph_value *ins[MAX_PORTS] = {NULL}, *outs[MAX_PORTS] = {NULL};
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].type != RN_UNDEFINED && (st = add_input_value(c, i, &ins[i])) != RN_OK)
            return st;
    for (int i = 0; i < n_out; i++) {
        if (!(present & (1u << i)))
            continue;
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        if ((st = graph_add_value(c->g, name, &outs[i])) != RN_OK ||
            (st = graph_add_output(c->g, outs[i])) != RN_OK)
            return st;
    }
    st = graph_add_node(c->g, "n", c->domain ? c->domain : "", c->op, c->opset, c->n_in, ins, n_out,
                        outs, &c->node);
    for (int i = 0; i < c->n_attrs && st == RN_OK; i++)
        st = graph_node_add_attr(c->node, &c->attrs[i]);
    if (st == RN_OK)
        st = graph_sort(c->g);
    if (st == RN_OK)
        st = graph_validate(c->g);
    if (st == RN_OK)
        st = graph_infer_shapes(c->g);
    return st;
}

rn_status nc_build(node_case *c, int n_out)
{
    return nc_build_mask(c, n_out, ~0u);
}

static rn_status ref_registry(plugin_kernel_registry **reg)
{
    rn_status st = plugin_kernel_registry_create(reg);
    return st == RN_OK ? ref_register_kernels(*reg) : st;
}

static rn_status pick_kernel(node_case *c, const plugin_kernel **k)
{
    rn_status st = ref_registry(&c->reg);
    return st == RN_OK ? plugin_kernel_registry_pick(c->reg, c->node, k) : st;
}

/* Gives `t` zero-filled data of the shape, as the executor's buffers. */
static rn_status alloc_data(graph_tensor *t, int rank, const int64_t *dims)
{
    free(t->data);
    t->rank = rank;
    if (rank > 0)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->nbytes = graph_tensor_count(t) * element_size(t->type);
    t->data = calloc(1, t->nbytes ? t->nbytes : 1);
    return t->data ? RN_OK
                   : rn_set_error(RN_OUT_OF_MEMORY, "test output of %zu bytes: out of memory",
                                  t->nbytes);
}

/* The executor's alloc_output, counting the calls. */
static rn_status nc_alloc_output(plugin_kernel_args *args, int index, int rank, const int64_t *dims)
{
    node_case *c = args->alloc_ctx;
    cr_assert(index >= 0 && index < args->n_outputs && rank >= 0 && rank <= RN_MAX_RANK,
              "alloc_output(%d, rank %d) of a node with %d outputs", index, rank, args->n_outputs);
    c->alloc_calls++;
    return alloc_data(&args->outputs[index], rank, dims);
}

static rn_status run_kernel(node_case *c, const plugin_kernel *k)
{
    plugin_kernel_args args = {
        .node = c->node,
        .inputs = c->in,
        .n_inputs = c->n_in,
        .outputs = c->out,
        .n_outputs = c->n_out,
        .alloc_output = nc_alloc_output,
        .alloc_ctx = c,
    };
    return k->run(&args);
}

rn_status nc_run(node_case *c)
{
    const plugin_kernel *k = NULL;
    rn_status st = pick_kernel(c, &k);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < c->n_out; i++) {
        const graph_value *v = c->node->outputs[i];
        graph_tensor *t = &c->out[i];
        *t = (graph_tensor){.type = v ? v->type : RN_UNDEFINED};
        if (v == NULL)
            continue;
        cr_assert(graph_shape_is_static(&v->shape), "output %d shape is not static", i);
        cr_assert_eq(alloc_data(t, v->shape.rank, v->shape.dims), RN_OK, "%s", rn_last_error());
    }
    return run_kernel(c, k);
}

rn_status nc_build_run(node_case *c, int n_out)
{
    rn_status st = nc_build(c, n_out);
    return st == RN_OK ? nc_run(c) : st;
}

rn_status nc_run_dynamic(node_case *c)
{
    const plugin_kernel *k = NULL;
    rn_status st = pick_kernel(c, &k);
    if (st != RN_OK)
        return st;
    graph_port pin[MAX_PORTS], pout[MAX_PORTS];
    for (int i = 0; i < c->n_in; i++) {
        const graph_tensor *t = &c->in[i];
        pin[i] = (graph_port){.present = t->type != RN_UNDEFINED,
                              .type = t->type,
                              .shape = {.rank = t->rank},
                              .data = t->data};
        memcpy(pin[i].shape.dims, t->dims, sizeof t->dims);
    }
    for (int i = 0; i < c->n_out; i++)
        pout[i] = (graph_port){.present = c->node->outputs[i] != NULL, .shape = {.rank = -1}};
    const graph_op_schema *s = graph_op_find(c->domain ? c->domain : "", c->op);
    cr_assert_not_null(s, "no schema for %s", c->op);
    if ((st = s->infer(c->node, pin, c->n_in, pout, c->n_out)) != RN_OK)
        return st;
    for (int i = 0; i < c->n_out; i++) {
        const graph_value *v = c->node->outputs[i];
        graph_tensor *t = &c->out[i];
        rn_element_type type = pout[i].type;
        if (type == RN_UNDEFINED && v != NULL)
            type = v->type; /* what compile-time inference said, where run time says nothing */
        *t = (graph_tensor){.type = type};
        if (v != NULL && graph_shape_is_static(&pout[i].shape))
            cr_assert_eq(alloc_data(t, pout[i].shape.rank, pout[i].shape.dims), RN_OK, "%s",
                         rn_last_error());
    }
    return run_kernel(c, k);
}

rn_status nc_build_run_dynamic(node_case *c, int n_out)
{
    rn_status st = nc_build(c, n_out);
    return st == RN_OK ? nc_run_dynamic(c) : st;
}

void nc_free(node_case *c)
{
    for (int i = 0; i < c->n_out; i++) {
        graph_tensor *t = &c->out[i];
        if (t->type == RN_STRING && t->data != NULL)
            for (size_t k = 0; k < graph_tensor_count(t); k++)
                free(((char **)t->data)[k]);
        free(t->data);
    }
    for (int i = 0; i < c->n_attrs; i++)
        graph_attr_release(&c->attrs[i]); /* a no-op for the ones the node took */
    plugin_kernel_registry_free(c->reg);
    graph_free(c->g);
}

/* ---- graphs of several nodes ---- */

graph *pc_graph(const char *name, graph *parent, int opset)
{
    graph *g;
    cr_assert_eq(graph_create(name, &g), RN_OK, "%s", rn_last_error());
    g->parent = parent;
    g->opset = opset;
    return g;
}

graph_value *pc_value(graph *g, const char *name)
{
    graph_value *v;
    cr_assert_eq(graph_add_value(g, name, &v), RN_OK, "%s", rn_last_error());
    return v;
}

graph_value *pc_input(graph *g, const char *name, graph_kind kind, rn_element_type type, int rank,
                      const int64_t *dims)
{
    graph_value *v = pc_value(g, name);
    v->kind = kind;
    v->type = type;
    v->shape.rank = rank;
    if (rank > 0)
        memcpy(v->shape.dims, dims, sizeof(int64_t) * (size_t)rank);
    cr_assert_eq(graph_add_input(g, v), RN_OK, "%s", rn_last_error());
    return v;
}

graph_value *pc_constant(graph *g, const char *name, rn_element_type type, int rank,
                         const int64_t *dims, const void *data)
{
    graph_value *v = pc_value(g, name);
    graph_tensor view = tensor_view(type, rank, dims, data);
    v->constant = calloc(1, sizeof *v->constant);
    cr_assert_not_null(v->constant);
    cr_assert_eq(graph_tensor_copy(v->constant, &view), RN_OK, "%s", rn_last_error());
    v->type = type;
    v->shape.rank = rank;
    memcpy(v->shape.dims, view.dims, sizeof v->shape.dims);
    return v;
}

graph_node *pc_node(graph *g, const char *name, const char *op, int n_in, graph_value **in,
                    int n_out, graph_value **out)
{
    graph_node *n;
    cr_assert_eq(graph_add_node(g, name, "", op, g->opset, n_in, in, n_out, out, &n), RN_OK, "%s",
                 rn_last_error());
    return n;
}

void pc_attr(graph_node *n, graph_attr a)
{
    cr_assert_eq(graph_node_add_attr(n, &a), RN_OK, "%s", rn_last_error());
}

rn_status pc_compile(graph *g, uint32_t threads_per_stream, plan_case *r)
{
    memset(r, 0, sizeof *r);
    cr_assert_eq(graph_sort(g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(ref_registry(&r->reg), RN_OK, "%s", rn_last_error());
    plugin_plan_options o = {.n_streams = 1, .threads_per_stream = threads_per_stream};
    rn_status st = plugin_plan_build(g, r->reg, &o, &r->plan);
    if (st == RN_OK)
        st = plugin_request_create(r->plan, NULL, &r->req);
    return st;
}

void pc_free(plan_case *r)
{
    plugin_request_free(r->req);
    plugin_plan_free(r->plan);
    plugin_kernel_registry_free(r->reg);
}

void pc_set_input(plan_case *r, size_t i, graph_tensor t)
{
    cr_assert_eq(plugin_request_set_input(r->req, i, &t), RN_OK, "%s", rn_last_error());
}

graph_tensor pc_output(plan_case *r, size_t i)
{
    graph_tensor t;
    cr_assert_eq(plugin_request_get_output(r->req, i, &t), RN_OK, "%s", rn_last_error());
    return t;
}

/* ---- expectations ---- */

void expect_shape(const graph_tensor *t, int rank, const int64_t *dims)
{
    cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t->dims[d], dims[d], "dim %d is %lld, expected %lld", d, (long long)t->dims[d],
                     (long long)dims[d]);
}

void expect_typed_shape(const graph_tensor *t, rn_element_type type, int rank, const int64_t *dims)
{
    cr_assert_eq(t->type, type, "type %s, expected %s", rn_element_type_name(t->type),
                 rn_element_type_name(type));
    expect_shape(t, rank, dims);
}

static void expect_count(const graph_tensor *t, rn_element_type type, size_t n)
{
    cr_assert_eq(t->type, type, "type %s, expected %s", rn_element_type_name(t->type),
                 rn_element_type_name(type));
    cr_assert_eq(graph_tensor_count(t), n, "%zu elements, expected %zu", graph_tensor_count(t), n);
}

/* Elements within abs + rel * |want|; NaN matches NaN and equal values
 * (infinities too) match. */
static void expect_f32_within(const graph_tensor *t, size_t n, const float *want, double abs,
                              double rel)
{
    expect_count(t, RN_F32, n);
    const float *got = t->data;
    for (size_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])) ||
                      fabs((double)got[i] - want[i]) <= abs + rel * fabs((double)want[i]),
                  "element %zu: %.9g, want %.9g", i, got[i], want[i]);
}

void expect_f32(const graph_tensor *t, size_t n, const float *want, double tol)
{
    expect_f32_within(t, n, want, tol, 0);
}

void expect_f32_rel(const graph_tensor *t, size_t n, const float *want, double tol)
{
    expect_f32_within(t, n, want, tol, tol);
}

void expect_f64(const graph_tensor *t, size_t n, const double *want, double tol)
{
    expect_count(t, RN_F64, n);
    const double *got = t->data;
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol, "element %zu: %.17g, want %.17g", i, got[i],
                  want[i]);
}

void expect_i64(const graph_tensor *t, size_t n, const int64_t *want)
{
    expect_count(t, RN_I64, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(((const int64_t *)t->data)[i], want[i], "element %zu: %lld, want %lld", i,
                     (long long)((const int64_t *)t->data)[i], (long long)want[i]);
}

void expect_i32(const graph_tensor *t, size_t n, const int32_t *want)
{
    expect_count(t, RN_I32, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(((const int32_t *)t->data)[i], want[i], "element %zu: %d, want %d", i,
                     ((const int32_t *)t->data)[i], want[i]);
}

void expect_f32_tensor(const graph_tensor *t, int rank, const int64_t *dims, const float *want)
{
    cr_assert_eq(t->kind, GRAPH_KIND_TENSOR, "kind %d, expected a tensor", t->kind);
    expect_typed_shape(t, RN_F32, rank, dims);
    expect_f32(t, graph_tensor_count(t), want, 1e-6);
}

void expect_f32_output(plan_case *r, size_t i, int rank, const int64_t *dims, const float *want)
{
    graph_tensor t = pc_output(r, i);
    expect_f32_tensor(&t, rank, dims, want);
}
