/* Helpers for the transforms tests (see transforms_test_util.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "plugins/api/const_eval.h"
#include "plugins/ref/ref.h"
#include "tests/transforms/transforms_test_util.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

graph *tt_graph(void)
{
    graph *g;
    OK(graph_create("test", &g));
    g->opset = 13;
    g->ir_version = 8;
    return g;
}

static void set_shape(graph_value *v, int rank, const int64_t *dims)
{
    v->shape.rank = rank;
    for (int d = 0; d < rank; d++)
        v->shape.dims[d] = dims[d];
}

graph_value *tt_input(graph *g, const char *name, rn_element_type type, int rank,
                      const int64_t *dims)
{
    graph_value *v;
    OK(graph_add_value(g, name, &v));
    v->type = type;
    set_shape(v, rank, dims);
    OK(graph_add_input(g, v));
    return v;
}

static graph_value *add_const(graph *g, const char *name, rn_element_type type, int rank,
                              const int64_t *dims, const void *data)
{
    graph_value *v;
    OK(graph_add_value(g, name, &v));
    graph_tensor src = {.type = type, .rank = rank, .data = (void *)data};
    for (int d = 0; d < rank; d++)
        src.dims[d] = dims[d];
    src.nbytes = graph_tensor_count(&src) * rn_element_type_size(type);
    v->constant = calloc(1, sizeof *v->constant);
    cr_assert_not_null(v->constant);
    OK(graph_tensor_copy(v->constant, &src));
    v->type = type;
    set_shape(v, rank, dims);
    return v;
}

graph_value *tt_const_f32(graph *g, const char *name, int rank, const int64_t *dims,
                          const float *data)
{
    return add_const(g, name, RN_F32, rank, dims, data);
}

graph_value *tt_const(graph *g, const char *name, rn_element_type type, int rank,
                      const int64_t *dims, const void *data)
{
    return add_const(g, name, type, rank, dims, data);
}

graph_value *tt_const_i64(graph *g, const char *name, int rank, const int64_t *dims,
                          const int64_t *data)
{
    return add_const(g, name, RN_I64, rank, dims, data);
}

graph_value *tt_op(graph *g, const char *name, const char *op, int n_in, graph_value *const *ins)
{
    graph_value *out;
    OK(graph_add_value(g, name, &out));
    OK(graph_add_node(g, name, "", op, g->opset, n_in, ins, 1, &out, NULL));
    return out;
}

graph_value *tt_unary(graph *g, const char *name, const char *op, graph_value *x)
{
    return tt_op(g, name, op, 1, &x);
}

graph_value *tt_binary(graph *g, const char *name, const char *op, graph_value *a, graph_value *b)
{
    graph_value *ins[2] = {a, b};
    return tt_op(g, name, op, 2, ins);
}

static graph_node *must_find(const graph *g, const char *node)
{
    graph_node *n = tt_find_node(g, node);
    cr_assert_not_null(n, "no node '%s'", node);
    return n;
}

void tt_attr_int(graph *g, const char *node, const char *name, int64_t v)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_INT, .i = v};
    OK(graph_node_add_attr(must_find(g, node), &a));
}

void tt_attr_ints(graph *g, const char *node, const char *name, int n, const int64_t *v)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_INTS, .count = n};
    a.ints = malloc(sizeof(int64_t) * (size_t)n + 1);
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
    OK(graph_node_add_attr(must_find(g, node), &a));
}

void tt_attr_tensor_f32(graph *g, const char *node, const char *name, float v)
{
    graph_attr a = {.name = strdup(name), .type = GRAPH_ATTR_TENSOR};
    a.t = calloc(1, sizeof *a.t);
    *a.t = (graph_tensor){.type = RN_F32, .rank = 1, .dims = {1}, .nbytes = sizeof(float)};
    a.t->data = malloc(sizeof(float));
    memcpy(a.t->data, &v, sizeof v);
    OK(graph_node_add_attr(must_find(g, node), &a));
}

void tt_output(graph *g, graph_value *v)
{
    OK(graph_add_output(g, v));
}

void tt_finish(graph *g)
{
    OK(graph_sort(g));
    OK(graph_infer_shapes(g));
}

graph_node *tt_find_node(const graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->name, name) == 0)
            return g->nodes[i];
    return NULL;
}

int tt_count_op(const graph *g, const char *op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += strcmp(g->nodes[i]->op_type, op) == 0;
    return n;
}

bool tt_has_fused(const graph_node *n, const char *name)
{
    for (int i = 0; i < n->n_fused; i++)
        if (strcmp(n->fused_names[i], name) == 0)
            return true;
    return false;
}

void tt_assert_valid(const graph *g)
{
    OK(graph_validate(g));
}

plugin_kernel_registry *tt_registry(void)
{
    static plugin_kernel_registry *reg;
    if (reg == NULL) {
        OK(plugin_kernel_registry_create(&reg));
        OK(ref_register_kernels(reg));
    }
    return reg;
}

/* ---- the REF constant evaluator ---- */

rn_status tt_ref_eval(const graph_node *node, const graph_tensor *inputs, graph_tensor *outputs,
                      void *ctx)
{
    return plugin_const_eval(node, inputs, outputs, ctx);
}

/* ---- running a graph on REF ---- */

/* A plain interpreter over REF's kernels: every node in topological order
 * through tt_ref_eval (run-time shape inference, kernel pick, run). */
void tt_run(const graph *g, const graph_tensor *inputs, int n_in, graph_tensor *outputs)
{
    graph *c;
    OK(graph_clone(g, &c));
    OK(graph_sort(c));
    OK(graph_infer_shapes(c));
    cr_assert_eq(n_in, c->n_inputs, "%d inputs for %d parameters", n_in, c->n_inputs);
    graph_tensor *vals = calloc((size_t)c->n_values + 1, sizeof *vals);
    bool *owned = calloc((size_t)c->n_values + 1, sizeof *owned);
    cr_assert(vals != NULL && owned != NULL);
    for (int i = 0; i < n_in; i++)
        vals[c->inputs[i]->id] = inputs[i];
    for (int v = 0; v < c->n_values; v++)
        if (c->values[v]->constant != NULL && !c->values[v]->is_parameter)
            vals[v] = *c->values[v]->constant;
    for (int i = 0; i < c->n_nodes; i++) {
        const graph_node *n = c->nodes[i];
        graph_tensor ins[16] = {{0}}, outs[16] = {{0}};
        cr_assert(n->n_inputs <= 16 && n->n_outputs <= 16);
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != NULL)
                ins[k] = vals[n->inputs[k]->id];
        OK(tt_ref_eval(n, ins, outs, tt_registry()));
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] == NULL)
                continue;
            vals[n->outputs[k]->id] = outs[k];
            owned[n->outputs[k]->id] = true;
        }
    }
    for (int o = 0; o < c->n_outputs; o++)
        OK(graph_tensor_copy(&outputs[o], &vals[c->outputs[o]->id]));
    for (int v = 0; v < c->n_values; v++)
        if (owned[v])
            graph_tensor_release(&vals[v]);
    free(vals);
    free(owned);
    graph_free(c);
}

void tt_assert_close_f32(const graph_tensor *a, const graph_tensor *b, float tol)
{
    cr_assert_eq(a->type, RN_F32, "type %s", rn_element_type_name(a->type));
    cr_assert_eq(b->type, RN_F32, "type %s", rn_element_type_name(b->type));
    cr_assert_eq(a->rank, b->rank, "rank %d vs %d", a->rank, b->rank);
    for (int d = 0; d < a->rank; d++)
        cr_assert_eq(a->dims[d], b->dims[d], "dim %d: %lld vs %lld", d, (long long)a->dims[d],
                     (long long)b->dims[d]);
    const float *x = a->data, *y = b->data;
    for (size_t i = 0; i < graph_tensor_count(a); i++) {
        float scale = fabsf(y[i]) > 1.0f ? fabsf(y[i]) : 1.0f;
        cr_assert(fabsf(x[i] - y[i]) <= tol * scale, "element %zu: %.9g vs %.9g", i, x[i], y[i]);
    }
}

graph_tensor tt_tensor_f32(int rank, const int64_t *dims, float *data)
{
    graph_tensor t = {.type = RN_F32, .rank = rank, .data = data};
    for (int d = 0; d < rank; d++)
        t.dims[d] = dims[d];
    t.nbytes = graph_tensor_count(&t) * sizeof(float);
    return t;
}
