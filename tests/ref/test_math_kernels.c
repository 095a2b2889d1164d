/* REF math kernels (Einsum, Det), run one node at a time the way the
 * executor does: build a one-node graph, infer shapes, pick the kernel from
 * the REF registry, allocate outputs from the inferred shapes, run. Every
 * expected value is worked out by hand in the comment beside it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "plugins/api/kernel.h"
#include "plugins/ref/ref.h"

#define MAX_PORTS 9
#define MAX_ATTRS 8

/* A one-node graph under test. Inputs marked constant become initializers
 * (what shape inference may read at compile time); the others are graph
 * inputs with a static declared shape, whose data the kernel still gets. */
typedef struct node_case {
    const char *op;
    int opset;
    int n_in, n_out, n_attrs;
    graph_tensor in[MAX_PORTS];
    bool constant[MAX_PORTS];
    graph_attr attrs[MAX_ATTRS];
    graph *g;
    graph_node *node;
    plugin_kernel_registry *reg;
    graph_tensor out[MAX_PORTS];
} node_case;

static node_case nc_new(const char *op, int opset)
{
    return (node_case){.op = op, .opset = opset};
}

static void nc_input(node_case *c, rn_element_type type, int rank, const int64_t *dims,
                     const void *data, bool constant)
{
    graph_tensor *t = &c->in[c->n_in];
    *t = (graph_tensor){.type = type, .rank = rank, .data = (void *)data};
    if (rank > 0)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->nbytes = graph_tensor_count(t) * rn_element_type_size(type);
    c->constant[c->n_in++] = constant;
}

static void nc_attr(node_case *c, graph_attr a)
{
    cr_assert_lt(c->n_attrs, MAX_ATTRS);
    c->attrs[c->n_attrs++] = a;
}

static void nc_string(node_case *c, const char *name, const char *s)
{
    nc_attr(c, (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_STRING, .s = strdup(s)});
}

/* Builds the graph (outputs whose bit is clear in `present` are omitted)
 * and infers shapes. */
static rn_status nc_build_mask(node_case *c, int n_out, unsigned present)
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
static rn_status nc_run(node_case *c)
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

static rn_status nc_build_run(node_case *c, int n_out)
{
    rn_status st = nc_build_mask(c, n_out, ~0u);
    return st == RN_OK ? nc_run(c) : st;
}

static void nc_free(node_case *c)
{
    for (int i = 0; i < c->n_out; i++)
        free(c->out[i].data);
    for (int i = 0; i < c->n_attrs; i++)
        graph_attr_release(&c->attrs[i]); /* a no-op for the ones the node took */
    plugin_kernel_registry_free(c->reg);
    graph_free(c->g);
}

static void expect_shape(const graph_tensor *t, int rank, const int64_t *dims)
{
    cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t->dims[d], dims[d], "dim %d is %lld, expected %lld", d, (long long)t->dims[d],
                     (long long)dims[d]);
}

static void expect_f32(const graph_tensor *t, size_t n, const float *want, double tol)
{
    cr_assert_eq(t->type, RN_F32, "type %s", rn_element_type_name(t->type));
    cr_assert_eq(graph_tensor_count(t), n, "%zu elements, expected %zu", graph_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs((double)((const float *)t->data)[i] - want[i]) <= tol,
                  "element %zu: %.9g, want %.9g", i, ((const float *)t->data)[i], want[i]);
}

/* ---- Einsum ---- */

static node_case einsum_case(const char *eq)
{
    node_case c = nc_new("Einsum", 12);
    nc_string(&c, "equation", eq);
    return c;
}

Test(math, einsum_matmul)
{
    /* {{1, 2}, {3, 4}} x {{5}, {6}} = {{17}, {39}} */
    node_case c = einsum_case("ij,jk->ik");
    float a[] = {1, 2, 3, 4}, b[] = {5, 6};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 2}, a, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, b, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 1});
    expect_f32(&c.out[0], 2, (float[]){17, 39}, 0);
    nc_free(&c);
}

Test(math, einsum_repeated_index_walks_the_diagonal)
{
    /* x = 0..8 as 3x3: the diagonal is 0, 4, 8 ("ii->i") and the implicit
     * "ii" sums it (no label occurs once): 12. */
    float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    node_case c = einsum_case("ii->i");
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){0, 4, 8}, 0);
    nc_free(&c);
    c = einsum_case("ii");
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 0, NULL);
    expect_f32(&c.out[0], 1, (float[]){12}, 0);
    nc_free(&c);
}

Test(math, einsum_ellipsis_broadcasts)
{
    /* a [2, 1, 2] (batch 2 of one row), b [2, 1] (no batch dims, broadcast):
     * batch 0 row (1, 2) . (3, 4) = 11, batch 1 row (5, 6) . (3, 4) = 39. */
    node_case c = einsum_case("...ij, ...jk -> ...ik");
    float a[] = {1, 2, 5, 6}, b[] = {3, 4};
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 1, 2}, a, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, b, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){2, 1, 1});
    expect_f32(&c.out[0], 2, (float[]){11, 39}, 0);
    nc_free(&c);
}

Test(math, einsum_implicit_output_is_in_ascii_order)
{
    /* "ba" on [2, 3]: the output labels in ASCII order are a, b, so the
     * result is the transpose [3, 2]; "Ba" keeps B (0x42) before a. */
    float x[] = {0, 1, 2, 3, 4, 5};
    node_case c = einsum_case("ba");
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 2});
    expect_f32(&c.out[0], 6, (float[]){0, 3, 1, 4, 2, 5}, 0);
    nc_free(&c);
    c = einsum_case("Ba");
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, x, 0);
    nc_free(&c);
}

Test(math, einsum_integers)
{
    /* i32 inner product: 1*4 + 2*5 + 3*6 = 32. */
    node_case c = einsum_case("i,i");
    int32_t a[] = {1, 2, 3}, b[] = {4, 5, 6};
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, a, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, b, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_I32);
    cr_assert_eq(*(int32_t *)c.out[0].data, 32);
    nc_free(&c);
}

Test(math, einsum_rejects_a_rank_that_does_not_match_its_term)
{
    node_case c = einsum_case("ij->i");
    float x[3] = {0};
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    rn_status st = nc_build_run(&c, 1);
    cr_assert_eq(st, RN_SHAPE_MISMATCH, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (Einsum)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- Det ---- */

Test(math, det_batch_with_pivoting_and_singular)
{
    /* det {{1, 2}, {3, 4}} = -2; {{0, 1}, {1, 0}} needs a row swap: -1;
     * {{1, 2}, {2, 4}} is singular: 0. */
    node_case c = nc_new("Det", 11);
    float x[] = {1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4};
    nc_input(&c, RN_F32, 3, (int64_t[]){3, 2, 2}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){3});
    expect_f32(&c.out[0], 3, (float[]){-2, -1, 0}, 1e-6);
    nc_free(&c);
}

Test(math, det_3x3)
{
    /* {{2, 0, 1}, {1, 3, 2}, {1, 1, 1}}: 2(3 - 2) - 0 + 1(1 - 3) = 0;
     * {{2, 0, 1}, {1, 3, 2}, {1, 1, 2}}: 2(6 - 2) + 1(1 - 3) = 6. */
    node_case c = nc_new("Det", 11);
    double x[] = {2, 0, 1, 1, 3, 2, 1, 1, 1, 2, 0, 1, 1, 3, 2, 1, 1, 2};
    nc_input(&c, RN_F64, 3, (int64_t[]){2, 3, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    const double *y = c.out[0].data;
    cr_assert(fabs(y[0]) < 1e-12 && fabs(y[1] - 6) < 1e-12, "%g %g", y[0], y[1]);
    nc_free(&c);
}
