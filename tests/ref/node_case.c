/* The one-node harness of REF's kernel tests (see node_case.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "plugins/ref/ref.h"
#include "tests/ref/node_case.h"

node_case nc_new(const char *op, int opset)
{
    return (node_case){.op = op, .opset = opset};
}

void nc_input(node_case *c, rn_element_type type, int rank, const int64_t *dims, const void *data,
              bool constant)
{
    graph_tensor *t = &c->in[c->n_in];
    *t = (graph_tensor){.type = type, .rank = rank, .data = (void *)data};
    if (rank > 0)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->nbytes = graph_tensor_count(t) * rn_element_type_size(type);
    c->constant[c->n_in++] = constant;
}

/* An omitted optional input. */
void nc_skip(node_case *c)
{
    c->in[c->n_in++] = (graph_tensor){.type = RN_UNDEFINED};
}

void nc_attr(node_case *c, graph_attr a)
{
    cr_assert_lt(c->n_attrs, MAX_ATTRS);
    c->attrs[c->n_attrs++] = a;
}

void nc_int(node_case *c, const char *name, int64_t v)
{
    nc_attr(c, (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_INT, .i = v});
}

void nc_float(node_case *c, const char *name, float v)
{
    nc_attr(c, (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_FLOAT, .f = v});
}

void nc_string(node_case *c, const char *name, const char *s)
{
    nc_attr(c, (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_STRING, .s = strdup(s)});
}

void nc_ints(node_case *c, const char *name, int n, const int64_t *v)
{
    int64_t *copy = malloc(sizeof *copy * (size_t)(n ? n : 1));
    memcpy(copy, v, sizeof *copy * (size_t)n);
    nc_attr(c,
            (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_INTS, .count = n, .ints = copy});
}

/* Builds the graph (outputs whose bit is clear in `present` are omitted)
 * and infers shapes. */
rn_status nc_build_mask(node_case *c, int n_out, unsigned present)
{
    c->n_out = n_out;
    rn_status st = graph_create("case", &c->g);
    if (st != RN_OK)
        return st;
    c->g->opset = c->opset;
    graph_value *ins[MAX_PORTS] = {NULL}, *outs[MAX_PORTS] = {NULL};
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i].type == RN_UNDEFINED)
            continue;
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if ((st = graph_add_value(c->g, name, &ins[i])) != RN_OK)
            return st;
        ins[i]->type = c->in[i].type;
        ins[i]->shape.rank = c->in[i].rank;
        memcpy(ins[i]->shape.dims, c->in[i].dims, sizeof ins[i]->shape.dims);
        if (c->constant[i]) {
            ins[i]->constant = calloc(1, sizeof *ins[i]->constant);
            if ((st = graph_tensor_copy(ins[i]->constant, &c->in[i])) != RN_OK)
                return st;
        } else if ((st = graph_add_input(c->g, ins[i])) != RN_OK) {
            return st;
        }
    }
    for (int i = 0; i < n_out; i++) {
        if (!(present & (1u << i)))
            continue;
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        if ((st = graph_add_value(c->g, name, &outs[i])) != RN_OK ||
            (st = graph_add_output(c->g, outs[i])) != RN_OK)
            return st;
    }
    st = graph_add_node(c->g, "n", "", c->op, c->opset, c->n_in, ins, n_out, outs, &c->node);
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

/* Picks the REF kernel and runs it with outputs of the inferred shapes. */
rn_status nc_run(node_case *c)
{
    rn_status st = plugin_kernel_registry_create(&c->reg);
    if (st == RN_OK)
        st = ref_register_kernels(c->reg);
    const plugin_kernel *k = NULL;
    if (st == RN_OK)
        st = plugin_kernel_registry_pick(c->reg, c->node, &k);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < c->n_out; i++) {
        const graph_value *v = c->node->outputs[i];
        graph_tensor *t = &c->out[i];
        if (v == NULL) {
            *t = (graph_tensor){.type = RN_UNDEFINED};
            continue;
        }
        cr_assert(graph_shape_is_static(&v->shape), "output %d shape is not static", i);
        *t = (graph_tensor){.type = v->type, .rank = v->shape.rank};
        memcpy(t->dims, v->shape.dims, sizeof t->dims);
        t->nbytes = graph_tensor_count(t) * rn_element_type_size(t->type);
        t->data = calloc(1, t->nbytes ? t->nbytes : 1);
    }
    plugin_kernel_args args = {
        .node = c->node,
        .inputs = c->in,
        .n_inputs = c->n_in,
        .outputs = c->out,
        .n_outputs = c->n_out,
    };
    return k->run(&args);
}

rn_status nc_build_run(node_case *c, int n_out)
{
    rn_status st = nc_build_mask(c, n_out, ~0u);
    return st == RN_OK ? nc_run(c) : st;
}

void nc_free(node_case *c)
{
    for (int i = 0; i < c->n_out; i++)
        free(c->out[i].data);
    for (int i = 0; i < c->n_attrs; i++)
        graph_attr_release(&c->attrs[i]); /* a no-op for the ones the node took */
    plugin_kernel_registry_free(c->reg);
    graph_free(c->g);
}

void expect_shape(const graph_tensor *t, int rank, const int64_t *dims)
{
    cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t->dims[d], dims[d], "dim %d is %lld, expected %lld", d, (long long)t->dims[d],
                     (long long)dims[d]);
}

void expect_f32(const graph_tensor *t, size_t n, const float *want, double tol)
{
    cr_assert_eq(t->type, RN_F32, "type %s", rn_element_type_name(t->type));
    cr_assert_eq(graph_tensor_count(t), n, "%zu elements, expected %zu", graph_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs((double)((const float *)t->data)[i] - want[i]) <= tol,
                  "element %zu: %.9g, want %.9g", i, ((const float *)t->data)[i], want[i]);
}
