/* REF elementwise kernels and their shape inference, one node at a time the
 * way the executor runs them: build a one-node graph, infer shapes, pick the
 * kernel from the REF registry, allocate outputs from the inferred shapes,
 * run. Every expected value is worked out by hand in the comment beside it. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "plugins/api/kernel.h"
#include "plugins/ref/ref.h"

#define MAX_PORTS 8
#define MAX_ATTRS 4

typedef struct ew_case {
    const char *op;
    int opset;
    int n_in, n_attrs;
    graph_tensor in[MAX_PORTS];
    graph_attr attrs[MAX_ATTRS];
    graph *g;
    graph_node *node;
    plugin_kernel_registry *reg;
    graph_tensor out;
} ew_case;

static ew_case ew_new(const char *op, int opset)
{
    return (ew_case){.op = op, .opset = opset};
}

static size_t elem_size(rn_element_type t)
{
    return t == RN_STRING ? sizeof(char *) : rn_element_type_size(t);
}

/* Adds a graph input of static shape; dims may be NULL for a scalar. */
static void ew_input(ew_case *c, rn_element_type type, int rank, const int64_t *dims,
                     const void *data)
{
    graph_tensor *t = &c->in[c->n_in++];
    *t = (graph_tensor){.type = type, .rank = rank, .data = (void *)data};
    if (rank > 0)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->nbytes = graph_tensor_count(t) * elem_size(type);
}

static void ew_skip(ew_case *c)
{
    c->in[c->n_in++] = (graph_tensor){.type = RN_UNDEFINED};
}

static void ew_int(ew_case *c, const char *name, int64_t v)
{
    c->attrs[c->n_attrs++] = (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_INT, .i = v};
}

static void ew_float(ew_case *c, const char *name, float v)
{
    c->attrs[c->n_attrs++] = (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_FLOAT, .f = v};
}

static void ew_string(ew_case *c, const char *name, const char *s)
{
    c->attrs[c->n_attrs++] =
        (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_STRING, .s = strdup(s)};
}

/* Builds the one-node graph and infers shapes. */
static rn_status ew_build(ew_case *c)
{
    rn_status st = graph_create("case", &c->g);
    if (st != RN_OK)
        return st;
    c->g->opset = c->opset;
    graph_value *ins[MAX_PORTS] = {NULL}, *out = NULL;
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
        if ((st = graph_add_input(c->g, ins[i])) != RN_OK)
            return st;
    }
    if ((st = graph_add_value(c->g, "out", &out)) != RN_OK ||
        (st = graph_add_output(c->g, out)) != RN_OK)
        return st;
    st = graph_add_node(c->g, "n", "", c->op, c->opset, c->n_in, ins, 1, &out, &c->node);
    for (int i = 0; i < c->n_attrs && st == RN_OK; i++)
        st = graph_node_add_attr(c->node, &c->attrs[i]);
    c->n_attrs = 0; /* the node owns them now (or released them on error) */
    if (st == RN_OK)
        st = graph_sort(c->g);
    if (st == RN_OK)
        st = graph_infer_shapes(c->g);
    return st;
}

/* Picks the REF kernel for the built node and runs it with an output of the
 * inferred shape (zero-filled, as the executor's). */
static rn_status ew_run(ew_case *c)
{
    rn_status st = plugin_kernel_registry_create(&c->reg);
    if (st == RN_OK)
        st = ref_register_kernels(c->reg);
    const plugin_kernel *k = NULL;
    if (st == RN_OK)
        st = plugin_kernel_registry_pick(c->reg, c->node, &k);
    if (st != RN_OK)
        return st;
    const graph_value *v = c->node->outputs[0];
    cr_assert(graph_shape_is_static(&v->shape), "the output shape is not static");
    c->out = (graph_tensor){.type = v->type, .rank = v->shape.rank};
    memcpy(c->out.dims, v->shape.dims, sizeof c->out.dims);
    c->out.nbytes = graph_tensor_count(&c->out) * elem_size(c->out.type);
    c->out.data = calloc(1, c->out.nbytes ? c->out.nbytes : 1);
    plugin_kernel_args args = {
        .node = c->node,
        .inputs = c->in,
        .n_inputs = c->n_in,
        .outputs = &c->out,
        .n_outputs = 1,
    };
    return k->run(&args);
}

static rn_status ew_build_run(ew_case *c)
{
    rn_status st = ew_build(c);
    return st == RN_OK ? ew_run(c) : st;
}

static void ew_free(ew_case *c)
{
    if (c->out.type == RN_STRING && c->out.data != NULL)
        for (size_t i = 0; i < graph_tensor_count(&c->out); i++)
            free(((char **)c->out.data)[i]);
    free(c->out.data);
    for (int i = 0; i < c->n_attrs; i++)
        graph_attr_release(&c->attrs[i]);
    plugin_kernel_registry_free(c->reg);
    graph_free(c->g);
}

static void expect_shape(const graph_tensor *t, rn_element_type type, int rank, const int64_t *dims)
{
    cr_assert_eq(t->type, type, "type %s, expected %s", rn_element_type_name(t->type),
                 rn_element_type_name(type));
    cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t->dims[d], dims[d], "dim %d is %lld, expected %lld", d, (long long)t->dims[d],
                     (long long)dims[d]);
}

/* Exact comparison, NaN equal to NaN. */
static void expect_f32(const graph_tensor *t, size_t n, const float *want)
{
    cr_assert_eq(graph_tensor_count(t), n, "%zu elements, expected %zu", graph_tensor_count(t), n);
    const float *got = t->data;
    for (size_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %zu: %.9g, want %.9g", i, got[i], want[i]);
}

static void expect_near_f32(const graph_tensor *t, size_t n, const float *want, float tol)
{
    cr_assert_eq(graph_tensor_count(t), n, "%zu elements, expected %zu", graph_tensor_count(t), n);
    const float *got = t->data;
    for (size_t i = 0; i < n; i++)
        cr_assert(fabsf(got[i] - want[i]) <= tol, "element %zu: %.9g, want %.9g", i, got[i],
                  want[i]);
}

#define EXPECT_INTS(T, t, n, ...)                                                                  \
    do {                                                                                           \
        const T want_[] = {__VA_ARGS__};                                                           \
        cr_assert_eq(graph_tensor_count(t), (size_t)(n));                                          \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                                \
            cr_assert_eq(((const T *)(t)->data)[i_], want_[i_], "element %zu: %lld, want %lld",    \
                         i_, (long long)((const T *)(t)->data)[i_], (long long)want_[i_]);         \
    } while (0)

static const float iota6[6] = {0, 1, 2, 3, 4, 5};

/* ---- broadcasting ---- */

Test(elementwise, add_broadcasts_trailing_dims)
{
    /* [2,3] + [3]: each row of 0..5 gets 10, 20, 30. */
    ew_case c = ew_new("Add", 14);
    ew_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){10, 20, 30});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out, 6, (float[]){10, 21, 32, 13, 24, 35});
    ew_free(&c);
}

Test(elementwise, sub_broadcasts_column_against_row)
{
    /* [2,1] - [1,3] = [2,3]: a[i] - b[j] with a = {10, 20}, b = {1, 2, 3}. */
    ew_case c = ew_new("Sub", 14);
    ew_input(&c, RN_F32, 2, (int64_t[]){2, 1}, (float[]){10, 20});
    ew_input(&c, RN_F32, 2, (int64_t[]){1, 3}, (float[]){1, 2, 3});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out, 6, (float[]){9, 8, 7, 19, 18, 17});
    ew_free(&c);
}

Test(elementwise, mul_broadcasts_a_middle_dim_and_a_scalar)
{
    /* [2,3,2] * [3,1]: element (i,j,k) = (6i + 2j + k) * m[j], m = {1, 10, 100}. */
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i;
    ew_case c = ew_new("Mul", 14);
    ew_input(&c, RN_F32, 3, (int64_t[]){2, 3, 2}, x);
    ew_input(&c, RN_F32, 2, (int64_t[]){3, 1}, (float[]){1, 10, 100});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 3, (int64_t[]){2, 3, 2});
    expect_f32(&c.out, 12, (float[]){0, 1, 20, 30, 400, 500, 6, 7, 80, 90, 1000, 1100});
    ew_free(&c);

    /* scalar (rank 0) on the left: 2 - [1, 2, 3] */
    c = ew_new("Sub", 14);
    ew_input(&c, RN_F32, 0, NULL, (float[]){2});
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){1, 2, 3});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 1, (int64_t[]){3});
    expect_f32(&c.out, 3, (float[]){1, 0, -1});
    ew_free(&c);
}

Test(elementwise, opset6_broadcast_axis_aligns_the_second_input)
{
    /* Add-6 with broadcast=1, axis=0: b of shape [2] lines up with a's dim 0,
     * so row i of a gets b[i] (numpy would have refused [2,3] + [2]). */
    ew_case c = ew_new("Add", 6);
    ew_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){100, 200});
    ew_int(&c, "broadcast", 1);
    ew_int(&c, "axis", 0);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out, 6, (float[]){100, 101, 102, 203, 204, 205});
    ew_free(&c);
}

Test(elementwise, incompatible_shapes_are_a_shape_error)
{
    ew_case c = ew_new("Add", 14);
    ew_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6);
    ew_input(&c, RN_F32, 1, (int64_t[]){4}, iota6);
    cr_assert_eq(ew_build(&c), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "node 'n' (Add)") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "[2,3]") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

Test(elementwise, mixed_input_types_are_a_type_error_naming_both)
{
    ew_case c = ew_new("Add", 14);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, iota6);
    ew_input(&c, RN_I32, 1, (int64_t[]){3}, (int32_t[]){1, 2, 3});
    cr_assert_eq(ew_build(&c), RN_TYPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "'in0' has type f32") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "'in1' has type i32") != NULL, "%s", rn_last_error());
    ew_free(&c);

    c = ew_new("Sqrt", 13); /* Sqrt is for floating types only */
    ew_input(&c, RN_I64, 1, (int64_t[]){1}, (int64_t[]){4});
    cr_assert_eq(ew_build(&c), RN_TYPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "floating") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

Test(elementwise, kernel_refuses_an_unhandled_type_with_a_reason)
{
    /* Build the node without inference and give it string inputs: the REF Add
     * kernel must say UNSUPPORTED and name the input and type. */
    ew_case c = ew_new("Add", 14);
    cr_assert_eq(graph_create("case", &c.g), RN_OK);
    graph_value *v[3];
    cr_assert_eq(graph_add_value(c.g, "a", &v[0]), RN_OK);
    cr_assert_eq(graph_add_value(c.g, "b", &v[1]), RN_OK);
    cr_assert_eq(graph_add_value(c.g, "y", &v[2]), RN_OK);
    v[0]->type = v[1]->type = v[2]->type = RN_STRING;
    cr_assert_eq(graph_add_node(c.g, "n", "", "Add", 14, 2, v, 1, &v[2], &c.node), RN_OK);
    cr_assert_eq(plugin_kernel_registry_create(&c.reg), RN_OK);
    cr_assert_eq(ref_register_kernels(c.reg), RN_OK);
    const plugin_kernel *k = NULL;
    cr_assert_eq(plugin_kernel_registry_pick(c.reg, c.node, &k), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "input 0 type string") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

/* ---- integer arithmetic ---- */

Test(elementwise, integer_div_truncates_toward_zero)
{
    /* 7/2 = 3, -7/2 = -3, 7/-2 = -3, -7/-2 = 3 (C and ONNX, not floor). */
    ew_case c = ew_new("Div", 14);
    ew_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){7, -7, 7, -7});
    ew_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){2, 2, -2, -2});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out, 4, 3, -3, -3, 3);
    ew_free(&c);

    /* u8: 200/3 = 66, 255/255 = 1; by zero gives 0 instead of trapping. */
    c = ew_new("Div", 14);
    ew_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){200, 255, 9});
    ew_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){3, 255, 0});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out, 3, 66, 1, 0);
    ew_free(&c);

    /* INT32_MIN / -1 overflows: it wraps back to INT32_MIN. */
    c = ew_new("Div", 14);
    ew_input(&c, RN_I32, 1, (int64_t[]){1}, (int32_t[]){INT32_MIN});
    ew_input(&c, RN_I32, 1, (int64_t[]){1}, (int32_t[]){-1});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out, 1, INT32_MIN);
    ew_free(&c);
}

Test(elementwise, integer_add_and_neg_wrap)
{
    /* i8: 127 + 1 = -128, -128 + -1 = 127. */
    ew_case c = ew_new("Add", 14);
    ew_input(&c, RN_I8, 1, (int64_t[]){2}, (int8_t[]){127, -128});
    ew_input(&c, RN_I8, 1, (int64_t[]){2}, (int8_t[]){1, -1});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int8_t, &c.out, 2, -128, 127);
    ew_free(&c);

    /* -INT64_MIN and |INT64_MIN| are INT64_MIN again. */
    c = ew_new("Neg", 13);
    ew_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){INT64_MIN, 5});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out, 2, INT64_MIN, -5);
    ew_free(&c);
    c = ew_new("Abs", 13);
    ew_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){INT64_MIN, -5});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out, 2, INT64_MIN, 5);
    ew_free(&c);
}

Test(elementwise, mod_sign_follows_divisor_or_dividend)
{
    /* fmod=0 (Python %): -7%3 = 2, 7%-3 = -2, -7%-3 = -1, 7%3 = 1. */
    ew_case c = ew_new("Mod", 13);
    ew_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){-7, 7, -7, 7});
    ew_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){3, -3, -3, 3});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out, 4, 2, -2, -1, 1);
    ew_free(&c);

    /* fmod=1 (C's %): -7%3 = -1, 7%-3 = 1, -7%-3 = -1, 7%3 = 1. */
    c = ew_new("Mod", 13);
    ew_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){-7, 7, -7, 7});
    ew_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){3, -3, -3, 3});
    ew_int(&c, "fmod", 1);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out, 4, -1, 1, -1, 1);
    ew_free(&c);

    /* floats with fmod=1: fmod(-7.5, 2) = -1.5, fmod(7.5, -2) = 1.5. */
    c = ew_new("Mod", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-7.5f, 7.5f});
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){2, -2});
    ew_int(&c, "fmod", 1);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 2, (float[]){-1.5f, 1.5f});
    ew_free(&c);

    /* floats without fmod=1 are refused by the spec */
    c = ew_new("Mod", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-7.5f, 7.5f});
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){2, -2});
    cr_assert_eq(ew_build(&c), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "fmod") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

Test(elementwise, pow_with_mixed_types_keeps_the_base_type)
{
    /* i64 ** i64 is exact: 3^4 = 81, (-2)^3 = -8, 2^-1 = 0 (no integer
     * reciprocal), 1^-5 = 1. */
    ew_case c = ew_new("Pow", 15);
    ew_input(&c, RN_I64, 1, (int64_t[]){4}, (int64_t[]){3, -2, 2, 1});
    ew_input(&c, RN_I64, 1, (int64_t[]){4}, (int64_t[]){4, 3, -1, -5});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out, 4, 81, -8, 0, 1);
    ew_free(&c);

    /* i32 ** f32: 2^0.5 = 1.41 truncates to 1, 4^0.5 = 2, 10^2 = 100. */
    c = ew_new("Pow", 15);
    ew_input(&c, RN_I32, 1, (int64_t[]){3}, (int32_t[]){2, 4, 10});
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){0.5f, 0.5f, 2});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_I32, 1, (int64_t[]){3});
    EXPECT_INTS(int32_t, &c.out, 3, 1, 2, 100);
    ew_free(&c);

    /* f32 ** u64 scalar exponent, broadcast: x^3. */
    c = ew_new("Pow", 15);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){2, -1, 0.5f});
    ew_input(&c, RN_U64, 0, NULL, (uint64_t[]){3});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 1, (int64_t[]){3});
    expect_f32(&c.out, 3, (float[]){8, -1, 0.125f});
    ew_free(&c);
}

Test(elementwise, bitshift_by_the_width_or_more_is_zero)
{
    /* u8: 1 << 7 = 128, 1 << 8 = 0 (not C's undefined), 3 << 7 = 128
     * (the high bit falls off). */
    ew_case c = ew_new("BitShift", 11);
    ew_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){1, 1, 3});
    ew_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){7, 8, 7});
    ew_string(&c, "direction", "LEFT");
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out, 3, 128, 0, 128);
    ew_free(&c);

    /* u32 right: 0xF0 >> 4 = 0xF, x >> 40 = 0. */
    c = ew_new("BitShift", 11);
    ew_input(&c, RN_U32, 1, (int64_t[]){2}, (uint32_t[]){0xF0, 0xFFFFFFFFu});
    ew_input(&c, RN_U32, 1, (int64_t[]){2}, (uint32_t[]){4, 40});
    ew_string(&c, "direction", "RIGHT");
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint32_t, &c.out, 2, 0xF, 0);
    ew_free(&c);
}

/* ---- Cast ---- */

static uint16_t cast_one_to_16(rn_element_type from, const void *x, rn_element_type to)
{
    ew_case c = ew_new("Cast", 13);
    ew_input(&c, from, 1, (int64_t[]){1}, x);
    ew_int(&c, "to", to);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    uint16_t h = ((const uint16_t *)c.out.data)[0];
    ew_free(&c);
    return h;
}

Test(cast, f32_to_f16_rounds_half_to_even_and_overflows_to_inf)
{
    /* 1 + 2^-11 lies halfway between 1 (0x3C00) and 1 + 2^-10 (0x3C01): the
     * even one, 0x3C00. 1 + 3*2^-11 lies between 0x3C01 and 0x3C02: 0x3C02.
     * 65504 is the largest half (0x7BFF); 65520 is halfway to 65536, which is
     * past it, so inf (0x7C00). 2^-24 is the smallest subnormal (0x0001). */
    float in[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65520.0f, 0x1p-24f, -2.0f};
    uint16_t want[] = {0x3C00, 0x3C02, 0x7BFF, 0x7C00, 0x0001, 0xC000};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        uint16_t h = cast_one_to_16(RN_F32, &in[i], RN_F16);
        cr_assert_eq(h, want[i], "%.9g: 0x%04x, want 0x%04x", in[i], h, want[i]);
    }
}

Test(cast, f64_to_f16_rounds_once)
{
    /* 1 + 2^-11 + 2^-40 is just above the halfway point, so 0x3C01. Going
     * through f32 first would land exactly on 1 + 2^-11 and round to 0x3C00. */
    double d = 1.0 + 0x1p-11 + 0x1p-40;
    uint16_t h = cast_one_to_16(RN_F64, &d, RN_F16);
    cr_assert_eq(h, 0x3C01, "0x%04x", h);
    /* the same for bf16: 1 + 2^-8 + 2^-40 is above the tie of 0x3F80/0x3F81 */
    d = 1.0 + 0x1p-8 + 0x1p-40;
    h = cast_one_to_16(RN_F64, &d, RN_BF16);
    cr_assert_eq(h, 0x3F81, "0x%04x", h);
}

Test(cast, f32_to_bf16_rounds_half_to_even)
{
    /* 1 + 2^-8 is halfway between 0x3F80 and 0x3F81: 0x3F80; 1 + 3*2^-8 is
     * halfway between 0x3F81 and 0x3F82: 0x3F82. NaN stays NaN. */
    float in[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, NAN};
    uint16_t h = cast_one_to_16(RN_F32, &in[0], RN_BF16);
    cr_assert_eq(h, 0x3F80, "0x%04x", h);
    h = cast_one_to_16(RN_F32, &in[1], RN_BF16);
    cr_assert_eq(h, 0x3F82, "0x%04x", h);
    h = cast_one_to_16(RN_F32, &in[2], RN_BF16);
    cr_assert((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0, "0x%04x is not NaN", h);
}

Test(cast, float_to_int_truncates_and_int_to_int_wraps)
{
    /* 2.7 -> 2, -2.7 -> -2, NaN -> 0 (defined here, undefined in C). */
    ew_case c = ew_new("Cast", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){2.7f, -2.7f, NAN});
    ew_int(&c, "to", RN_I32);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out, 3, 2, -2, 0);
    ew_free(&c);

    /* -1.0 -> u8 is 255, as numpy gives (truncate, then wrap). */
    c = ew_new("Cast", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-1.0f, 255.9f});
    ew_int(&c, "to", RN_U8);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out, 2, 255, 255);
    ew_free(&c);

    /* i64 -> i8: 300 = 256 + 44 -> 44; -129 = -256 + 127 -> 127. */
    c = ew_new("Cast", 13);
    ew_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){300, -129});
    ew_int(&c, "to", RN_I8);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int8_t, &c.out, 2, 44, 127);
    ew_free(&c);

    /* to bool: only zero (either sign) is false; NaN is true. */
    c = ew_new("Cast", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){4}, (float[]){0.0f, -0.0f, NAN, 0.5f});
    ew_int(&c, "to", RN_BOOL);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_BOOL, 1, (int64_t[]){4});
    EXPECT_INTS(uint8_t, &c.out, 4, 0, 0, 1, 1);
    ew_free(&c);
}

Test(cast, numbers_to_strings_and_back)
{
    /* numpy's str() of float32: shortest round-trip digits, ".0" on whole
     * numbers, scientific below 1e-4 and from 1e16. */
    ew_case c = ew_new("Cast", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){6},
             (float[]){0.1f, 1.0f, 1e-5f, 1e16f, -123456.0f, INFINITY});
    ew_int(&c, "to", RN_STRING);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    const char *want[] = {"0.1", "1.0", "1e-05", "1e+16", "-123456.0", "inf"};
    for (int i = 0; i < 6; i++)
        cr_assert_str_eq(((char **)c.out.data)[i], want[i]);
    ew_free(&c);

    const char *s[] = {"-1.5", "INF", "NaN", " 2"};
    c = ew_new("Cast", 13);
    ew_input(&c, RN_STRING, 1, (int64_t[]){4}, s);
    ew_int(&c, "to", RN_F32);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 4, (float[]){-1.5f, INFINITY, NAN, 2.0f});
    ew_free(&c);

    const char *bad[] = {"12abc"};
    c = ew_new("Cast", 13);
    ew_input(&c, RN_STRING, 1, (int64_t[]){1}, bad);
    ew_int(&c, "to", RN_F32);
    cr_assert_eq(ew_build_run(&c), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'12abc' is not a number") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

Test(cast, unknown_target_type_is_refused)
{
    ew_case c = ew_new("Cast", 19);
    ew_input(&c, RN_F32, 1, (int64_t[]){1}, iota6);
    ew_int(&c, "to", 21); /* UINT4: runnel has no packed 4-bit types */
    cr_assert_eq(ew_build(&c), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "'to' is 21") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

/* ---- Clip ---- */

Test(clip, omitted_bounds_do_not_clip)
{
    /* min omitted, max 2: only the top is cut; NaN stays NaN. */
    ew_case c = ew_new("Clip", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){4}, (float[]){-5, 1, 7, NAN});
    ew_skip(&c);
    ew_input(&c, RN_F32, 0, NULL, (float[]){2});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 4, (float[]){-5, 1, 2, NAN});
    ew_free(&c);

    /* no bounds at all: a copy */
    c = ew_new("Clip", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){-FLT_MAX, 0, FLT_MAX});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 3, (float[]){-FLT_MAX, 0, FLT_MAX});
    ew_free(&c);

    /* i8 with only min = -3 */
    c = ew_new("Clip", 13);
    ew_input(&c, RN_I8, 1, (int64_t[]){3}, (int8_t[]){-128, -3, 127});
    ew_input(&c, RN_I8, 0, NULL, (int8_t[]){-3});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int8_t, &c.out, 3, -3, -3, 127);
    ew_free(&c);
}

Test(clip, min_above_max_gives_max_and_attributes_work_before_opset_11)
{
    /* min 5 > max 1: every element becomes 1. */
    ew_case c = ew_new("Clip", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){0, 3, 9});
    ew_input(&c, RN_F32, 0, NULL, (float[]){5});
    ew_input(&c, RN_F32, 0, NULL, (float[]){1});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 3, (float[]){1, 1, 1});
    ew_free(&c);

    /* Clip-6 reads min/max attributes; absent max means no upper bound. */
    c = ew_new("Clip", 6);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){-2, 0.5f, 1e30f});
    ew_float(&c, "min", -1.0f);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 3, (float[]){-1, 0.5f, 1e30f});
    ew_free(&c);
}

Test(clip, non_scalar_bound_is_refused)
{
    ew_case c = ew_new("Clip", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){0, 3, 9});
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){1, 2});
    cr_assert_eq(ew_build(&c), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "must be a scalar") != NULL, "%s", rn_last_error());
    ew_free(&c);
}

/* ---- variadic, comparisons, Where ---- */

Test(variadic, max_and_min_propagate_nan)
{
    /* max(1, NaN) and max(NaN, 2) are NaN (numpy.maximum), max(3, 1) = 3. */
    ew_case c = ew_new("Max", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){1, NAN, 3});
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){NAN, 2, 1});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 3, (float[]){NAN, NAN, 3});
    ew_free(&c);

    c = ew_new("Min", 13);
    ew_input(&c, RN_F16, 1, (int64_t[]){2}, (uint16_t[]){0x7E00 /* NaN */, 0x4000 /* 2 */});
    ew_input(&c, RN_F16, 1, (int64_t[]){2}, (uint16_t[]){0x3C00 /* 1 */, 0x3C00});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    uint16_t *h = c.out.data;
    cr_assert((h[0] & 0x7C00) == 0x7C00 && (h[0] & 0x3FF) != 0, "0x%04x is not NaN", h[0]);
    cr_assert_eq(h[1], 0x3C00);
    ew_free(&c);
}

Test(variadic, sum_and_mean_broadcast_three_inputs)
{
    /* [2,3] + [3] + scalar: iota6 + {10,20,30} + 100. Mean divides by 3. */
    ew_case c = ew_new("Sum", 13);
    ew_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){10, 20, 30});
    ew_input(&c, RN_F32, 0, NULL, (float[]){100});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out, 6, (float[]){110, 121, 132, 113, 124, 135});
    ew_free(&c);

    c = ew_new("Mean", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){3, 6});
    ew_input(&c, RN_F32, 2, (int64_t[]){2, 1}, (float[]){0, 3});
    ew_input(&c, RN_F32, 1, (int64_t[]){1}, (float[]){0});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_F32, 2, (int64_t[]){2, 2});
    expect_f32(&c.out, 4, (float[]){1, 2, 2, 3});
    ew_free(&c);

    /* one input: a copy, for an integer type too */
    c = ew_new("Max", 13);
    ew_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){-4, 9});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out, 2, -4, 9);
    ew_free(&c);
}

Test(compare, outputs_bool_and_nan_compares_false)
{
    /* Less([1, NaN, 3], 2) = [1, 0, 0]; Equal(NaN, NaN) = 0. */
    ew_case c = ew_new("Less", 13);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){1, NAN, 3});
    ew_input(&c, RN_F32, 0, NULL, (float[]){2});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_BOOL, 1, (int64_t[]){3});
    EXPECT_INTS(uint8_t, &c.out, 3, 1, 0, 0);
    ew_free(&c);

    c = ew_new("Equal", 13);
    ew_input(&c, RN_F64, 1, (int64_t[]){2}, (double[]){NAN, 1});
    ew_input(&c, RN_F64, 1, (int64_t[]){2}, (double[]){NAN, 1});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out, 2, 0, 1);
    ew_free(&c);

    c = ew_new("And", 7); /* logic needs bool inputs */
    ew_input(&c, RN_F32, 1, (int64_t[]){1}, iota6);
    ew_input(&c, RN_F32, 1, (int64_t[]){1}, iota6);
    cr_assert_eq(ew_build(&c), RN_TYPE_MISMATCH);
    ew_free(&c);
}

Test(compare, isinf_detects_the_requested_sign)
{
    /* detect_negative=0: only +inf is reported. */
    ew_case c = ew_new("IsInf", 10);
    ew_input(&c, RN_F32, 1, (int64_t[]){4}, (float[]){INFINITY, -INFINITY, NAN, 1});
    ew_int(&c, "detect_negative", 0);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out, 4, 1, 0, 0, 0);
    ew_free(&c);
}

Test(where, broadcasts_condition_and_both_branches)
{
    /* cond [2,1] = {1, 0}, x [1,3] = {1,2,3}, y scalar 9: row 0 takes x,
     * row 1 takes y. */
    ew_case c = ew_new("Where", 16);
    ew_input(&c, RN_BOOL, 2, (int64_t[]){2, 1}, (uint8_t[]){1, 0});
    ew_input(&c, RN_I64, 2, (int64_t[]){1, 3}, (int64_t[]){1, 2, 3});
    ew_input(&c, RN_I64, 0, NULL, (int64_t[]){9});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out, RN_I64, 2, (int64_t[]){2, 3});
    EXPECT_INTS(int64_t, &c.out, 6, 1, 2, 3, 9, 9, 9);
    ew_free(&c);
}

/* ---- unary ---- */

Test(unary, round_is_half_to_even)
{
    /* 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, 2.6 -> 3. */
    ew_case c = ew_new("Round", 11);
    ew_input(&c, RN_F32, 1, (int64_t[]){5}, (float[]){0.5f, 1.5f, 2.5f, -1.5f, 2.6f});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out, 5, (float[]){0, 2, 2, -2, 3});
    ew_free(&c);
}

Test(unary, f16_computes_through_f32_and_rounds_once)
{
    /* Sqrt(4) = 2 (0x4000); Neg(1) = -1 (0xBC00); Add 1 + 2^-11 ties to 1. */
    ew_case c = ew_new("Sqrt", 13);
    ew_input(&c, RN_F16, 1, (int64_t[]){1}, (uint16_t[]){0x4400 /* 4 */});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint16_t, &c.out, 1, 0x4000);
    ew_free(&c);

    c = ew_new("Add", 14);
    ew_input(&c, RN_F16, 1, (int64_t[]){1}, (uint16_t[]){0x3C00});
    ew_input(&c, RN_F16, 1, (int64_t[]){1}, (uint16_t[]){0x1000 /* 2^-11 */});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint16_t, &c.out, 1, 0x3C00);
    ew_free(&c);
}

Test(unary, activations_use_their_attribute_defaults)
{
    /* LeakyRelu default alpha 0.01: -100 -> -1. Elu alpha 2: x = ln(0.5)
     * gives 2 * (0.5 - 1) = -1. HardSigmoid defaults 0.2x + 0.5 clamped:
     * -5 -> 0, 0 -> 0.5, 5 -> 1. Gelu(1) = Phi(1) = 0.8413447. */
    ew_case c = ew_new("LeakyRelu", 16);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-100, 3});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_near_f32(&c.out, 2, (float[]){-1, 3}, 1e-6f);
    ew_free(&c);

    c = ew_new("Elu", 6);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){logf(0.5f), 4});
    ew_float(&c, "alpha", 2.0f);
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_near_f32(&c.out, 2, (float[]){-1, 4}, 1e-6f);
    ew_free(&c);

    c = ew_new("HardSigmoid", 6);
    ew_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){-5, 0, 5});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_near_f32(&c.out, 3, (float[]){0, 0.5f, 1}, 1e-7f);
    ew_free(&c);

    c = ew_new("Gelu", 20);
    ew_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){1, 0});
    cr_assert_eq(ew_build_run(&c), RN_OK, "%s", rn_last_error());
    expect_near_f32(&c.out, 2, (float[]){0.8413447f, 0}, 1e-6f);
    ew_free(&c);
}
