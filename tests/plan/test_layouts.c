/* Layouts and conversions in the compiled plan (plugins/api/plan_spec.c).
 *
 * A test device: REF's kernels, and in front of them kernels that compute in
 * blocked layouts of their own, declared through input_layout and
 * output_layout: Add and Relu in "nChw4c" (channels padded to a multiple of
 * 4 and blocked by 4, N x ceil(C/4) x H x W x 4), Sigmoid in "nChw8c" (the
 * same with 8), both of one rn_layout_ops, and Mul in "nChw4c/other", the
 * 4-blocked layout of another device's ops (converting to or from it goes
 * through plain). Each kernel checks that it was handed its layout and
 * computes over the padded buffer; conversions fill padding with NaN, so a
 * padding element read as data shows in the outputs. Outputs are compared
 * with the same graph compiled on plain REF. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/plan/plan_harness.h"
#include "tests/ref/node_case.h"

/* ---- the blocked layouts ---- */

typedef struct blocked {
    int block;       /* channels per block */
    int64_t dims[4]; /* logical N, C, H, W */
} blocked;

typedef struct port_layout {
    rn_layout layout;
    blocked desc;
} port_layout;

static atomic_int conversions_run; /* convert calls, compile time and run time */

static bool blocked_equal(const rn_layout *a, const rn_layout *b)
{
    const blocked *x = a->desc, *y = b->desc;
    return x->block == y->block && memcmp(x->dims, y->dims, sizeof x->dims) == 0;
}

static rn_status blocked_convert(const rn_kernel_tensor *src, rn_kernel_tensor *dst);

static const rn_layout_ops test_ops = {
    .abi_version = RN_KERNEL_ABI_VERSION,
    .device = "TESTDEV",
    .equal = blocked_equal,
    .convert = blocked_convert,
};

static const rn_layout_ops other_ops = {
    .abi_version = RN_KERNEL_ABI_VERSION,
    .device = "OTHERDEV",
    .equal = blocked_equal,
    .convert = blocked_convert,
};

/* Element (n, c, h, w) of a tensor of logical dims d in layout l (NULL:
 * plain NCHW). */
static size_t element_at(const rn_layout *l, const int64_t *d, int64_t n, int64_t c, int64_t h,
                         int64_t w)
{
    if (l == NULL)
        return (size_t)(((n * d[1] + c) * d[2] + h) * d[3] + w);
    const blocked *b = l->desc;
    int64_t cb = (d[1] + b->block - 1) / b->block;
    return (size_t)((((n * cb + c / b->block) * d[2] + h) * d[3] + w) * b->block + c % b->block);
}

static size_t layout_bytes(const rn_layout *l, const int64_t *d)
{
    if (l == NULL)
        return (size_t)(d[0] * d[1] * d[2] * d[3]) * sizeof(float);
    const blocked *b = l->desc;
    int64_t cb = (d[1] + b->block - 1) / b->block;
    return (size_t)(d[0] * cb * b->block * d[2] * d[3]) * sizeof(float);
}

static bool ours(const rn_layout *l)
{
    return l == NULL || l->ops == &test_ops || l->ops == &other_ops;
}

static rn_status blocked_convert(const rn_kernel_tensor *src, rn_kernel_tensor *dst)
{
    atomic_fetch_add(&conversions_run, 1);
    if (src->type != RN_F32 || dst->type != RN_F32 || src->rank != 4 || dst->rank != 4 ||
        memcmp(src->dims, dst->dims, sizeof(int64_t) * 4) != 0)
        return rn_set_error(RN_INTERNAL, "convert: not the same f32 NCHW tensor on both sides");
    if (!ours(src->layout) || !ours(dst->layout) || (src->layout == NULL && dst->layout == NULL))
        return rn_set_error(RN_INTERNAL, "convert: asked for layouts it does not own");
    const int64_t *d = src->dims;
    if (src->data == NULL || dst->data == NULL || src->nbytes < layout_bytes(src->layout, d) ||
        dst->nbytes < layout_bytes(dst->layout, d))
        return rn_set_error(RN_INTERNAL, "convert: buffers of %zu and %zu bytes", src->nbytes,
                            dst->nbytes);
    const float *x = src->data;
    float *y = dst->data;
    if (dst->layout != NULL)
        for (size_t i = 0; i < layout_bytes(dst->layout, d) / sizeof(float); i++)
            y[i] = NAN; /* padding */
    for (int64_t n = 0; n < d[0]; n++)
        for (int64_t c = 0; c < d[1]; c++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++)
                    y[element_at(dst->layout, d, n, c, h, w)] =
                        x[element_at(src->layout, d, n, c, h, w)];
    return RN_OK;
}

/* ---- the blocked kernels ---- */

typedef struct blocked_state {
    int n_in;
    port_layout in[2];
    port_layout out;
} blocked_state;

/* f32, rank 4, static, every input of the output's shape. */
static bool blocked_supports(const rn_node *node, const char **why)
{
    rn_partial_shape out = rn_node_output_shape(node, 0);
    bool ok = rn_node_output_type(node, 0) == RN_F32 && out.rank == 4;
    for (int d = 0; ok && d < 4; d++)
        ok = out.dims[d] > 0;
    for (int k = 0; ok && k < rn_node_input_count(node); k++) {
        rn_partial_shape in = rn_node_input_shape(node, k);
        ok = rn_node_input_type(node, k) == RN_F32 && in.rank == 4 &&
             memcmp(in.dims, out.dims, sizeof(int64_t) * 4) == 0;
    }
    if (!ok)
        *why = "the test's blocked kernels take static f32 NCHW tensors of one shape";
    return ok;
}

static void port_init(port_layout *p, const rn_layout_ops *ops, const char *name, int block,
                      const int64_t *dims)
{
    p->desc.block = block;
    memcpy(p->desc.dims, dims, sizeof p->desc.dims);
    p->layout = (rn_layout){.ops = ops, .name = name, .desc = &p->desc};
    p->layout.nbytes = layout_bytes(&p->layout, dims);
}

static rn_status prepare_layout(const rn_node *node, const rn_layout_ops *ops, const char *name,
                                int block, void **state)
{
    blocked_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "blocked kernel: out of memory");
    rn_partial_shape shape = rn_node_output_shape(node, 0);
    s->n_in = rn_node_input_count(node);
    for (int k = 0; k < s->n_in; k++)
        port_init(&s->in[k], ops, name, block, shape.dims);
    port_init(&s->out, ops, name, block, shape.dims);
    *state = s;
    return RN_OK;
}

static rn_status prepare_4c(const rn_node *node, void **state)
{
    return prepare_layout(node, &test_ops, "nChw4c", 4, state);
}

static rn_status prepare_8c(const rn_node *node, void **state)
{
    return prepare_layout(node, &test_ops, "nChw8c", 8, state);
}

static rn_status prepare_other(const rn_node *node, void **state)
{
    return prepare_layout(node, &other_ops, "nChw4c/other", 4, state);
}

static const rn_layout *input_layout(const void *state, int index)
{
    return &((const blocked_state *)state)->in[index].layout;
}

static const rn_layout *output_layout(const void *state, int index)
{
    (void)index;
    return &((const blocked_state *)state)->out.layout;
}

/* The descriptor the plan passed is in layout `want`, with its bytes. */
static rn_status check_port(const rn_kernel_args *args, const rn_kernel_tensor *t,
                            const rn_layout *want, const char *what)
{
    if (t->layout == NULL || t->layout->ops != want->ops || !want->ops->equal(t->layout, want) ||
        t->data == NULL || t->nbytes != want->nbytes)
        return rn_set_error(RN_INTERNAL, "node '%s': %s is in layout %s (%zu bytes), not %s",
                            rn_node_name(args->node), what,
                            t->layout != NULL ? t->layout->name : "plain", t->nbytes, want->name);
    return RN_OK;
}

typedef float (*binary_fn)(float, float);

static float add_f(float a, float b)
{
    return a + b;
}

static float mul_f(float a, float b)
{
    return a * b;
}

static float relu_f(float a, float b)
{
    (void)b;
    return a > 0.0f ? a : 0.0f;
}

static float sigmoid_f(float a, float b)
{
    (void)b;
    return 1.0f / (1.0f + expf(-a));
}

/* Runs fn over every element of the padded buffers. */
static rn_status run_elementwise(rn_kernel_args *args, binary_fn fn)
{
    const blocked_state *s = args->state;
    rn_status st = check_port(args, &args->outputs[0], &s->out.layout, "its output");
    for (int k = 0; k < args->n_inputs && st == RN_OK; k++)
        st = check_port(args, &args->inputs[k], &s->in[k].layout, "an input");
    if (st != RN_OK)
        return st;
    const float *a = args->inputs[0].data;
    const float *b = args->n_inputs > 1 ? args->inputs[1].data : a;
    float *y = args->outputs[0].data;
    for (size_t i = 0; i < s->out.layout.nbytes / sizeof(float); i++)
        y[i] = fn(a[i], b[i]);
    return RN_OK;
}

static rn_status add_run(rn_kernel_args *args)
{
    return run_elementwise(args, add_f);
}

static rn_status mul_run(rn_kernel_args *args)
{
    return run_elementwise(args, mul_f);
}

static rn_status relu_run(rn_kernel_args *args)
{
    return run_elementwise(args, relu_f);
}

static rn_status sigmoid_run(rn_kernel_args *args)
{
    return run_elementwise(args, sigmoid_f);
}

#define BLOCKED_KERNEL(var, op, prep, fn)                                                          \
    static const rn_kernel var = {                                                                 \
        .op_type = op,                                                                             \
        .impl_type = "test_blocked",                                                               \
        .supports = blocked_supports,                                                              \
        .prepare = prep,                                                                           \
        .run = fn,                                                                                 \
        .release = free,                                                                           \
        .input_layout = input_layout,                                                              \
        .output_layout = output_layout,                                                            \
    }

BLOCKED_KERNEL(add_4c, "Add", prepare_4c, add_run);
BLOCKED_KERNEL(relu_4c, "Relu", prepare_4c, relu_run);
BLOCKED_KERNEL(sigmoid_8c, "Sigmoid", prepare_8c, sigmoid_run);
BLOCKED_KERNEL(mul_other, "Mul", prepare_other, mul_run);

static const rn_kernel *const blocked_kernels[] = {&add_4c, &relu_4c, &sigmoid_8c, &mul_other,
                                                   NULL};

/* ---- graphs ---- */

static const int64_t dims[4] = {2, 6, 3, 3}; /* 6 channels: padded to 8 */
#define COUNT (2 * 6 * 3 * 3)

/* input -> add1 (+ weight) -> relu1 -> soft (REF Softmax) -> add2 (+ input)
 * -> relu2; results relu2 and relu1. */
static graph *mixed_graph(void)
{
    static float weight[COUNT];
    ph_fill(weight, COUNT, 1.0f);
    graph *g = pc_graph("mixed", NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, 4, dims);
    graph_value *w = pc_constant(g, "weight", RN_F32, 4, dims, weight);
    graph_value *r1 = ph_node(g, "relu1", "Relu", 1, ph_node(g, "add1", "Add", 2, x, w), NULL);
    graph_value *in[1] = {r1};
    graph_value *s = pc_value(g, "soft");
    pc_attr(pc_node(g, "soft", "Softmax", 1, in, 1, &s), attr_int("axis", 1));
    graph_value *r2 = ph_node(g, "relu2", "Relu", 1, ph_node(g, "add2", "Add", 2, s, x), NULL);
    cr_assert_eq(graph_add_output(g, r2), RN_OK);
    cr_assert_eq(graph_add_output(g, r1), RN_OK);
    return g;
}

static graph_tensor input_tensor(float *data)
{
    ph_fill(data, COUNT, 0.0f);
    return tensor_view(RN_F32, 4, dims, data);
}

/* The Reorder row converting value `value` from `from` to `to`. */
static bool has_reorder(plugin_plan *plan, const char *value, const char *from, const char *to)
{
    size_t n;
    const rn_runtime_node *rows = ph_rows(plan, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].layer_type, "Reorder") == 0 && strstr(rows[i].name, value) != NULL &&
            strcmp(rows[i].input_layouts, from) == 0 && strcmp(rows[i].output_layouts, to) == 0)
            return true;
    return false;
}

typedef struct reorder_want {
    const char *value, *from, *to;
} reorder_want;

/* The plan converts exactly n times: the Reorder rows want[0..n), counted
 * by the stats, PLAN_CONVERSIONS and the runtime model. */
static void expect_reorders(plugin_plan *plan, const reorder_want *want, int n)
{
    plugin_plan_stats stats;
    plugin_plan_get_stats(plan, &stats);
    cr_expect_eq(stats.conversions, n, "stats: %d conversions, expected %d", stats.conversions, n);
    cr_expect_eq(ph_property(plan, "PLAN_CONVERSIONS"), n, "PLAN_CONVERSIONS");
    cr_expect_eq(ph_count_rows(plan, "Reorder"), n, "%d Reorder rows, expected %d",
                 ph_count_rows(plan, "Reorder"), n);
    for (int i = 0; i < n; i++)
        cr_expect(has_reorder(plan, want[i].value, want[i].from, want[i].to),
                  "no Reorder of '%s' from %s to %s", want[i].value, want[i].from, want[i].to);
}

static void expect_row(plugin_plan *plan, const char *name, const char *impl, const char *in,
                       const char *out)
{
    const rn_runtime_node *row = ph_row(plan, name);
    cr_expect_str_eq(row->impl_type, impl, "row '%s'", name);
    cr_expect_str_eq(row->input_layouts, in, "row '%s' input_layouts", name);
    cr_expect_str_eq(row->output_layouts, out, "row '%s' output_layouts", name);
}

/* ---- tests ---- */

Test(layouts, conversions_only_where_producer_and_consumer_disagree)
{
    plugin_kernel_registry *reg = ph_registry(blocked_kernels);
    graph *g = mixed_graph();
    plugin_plan *plan = ph_build(g, reg, NULL);
    /* input to add1 and add2 (one conversion for both), relu1 to Softmax
     * and to its result (one), soft to add2, relu2 to its result. */
    static const reorder_want want[] = {{"input", "plain", "nChw4c"},
                                        {"relu1", "nChw4c", "plain"},
                                        {"soft", "plain", "nChw4c"},
                                        {"relu2", "nChw4c", "plain"}};
    expect_reorders(plan, want, 4);
    expect_row(plan, "add1", "test_blocked", "nChw4c,nChw4c", "nChw4c");
    expect_row(plan, "relu1", "test_blocked", "nChw4c", "nChw4c");
    expect_row(plan, "soft", "ref", "plain", "plain");
    expect_row(plan, "add2", "test_blocked", "nChw4c,nChw4c", "nChw4c");
    expect_row(plan, "relu2", "test_blocked", "nChw4c", "nChw4c");
    plugin_plan_free(plan);
    graph_free(g);
    plugin_kernel_registry_free(reg);
}

Test(layouts, blocked_constant_is_converted_once_at_compile_time)
{
    plugin_kernel_registry *reg = ph_registry(blocked_kernels);
    graph *g = mixed_graph();
    atomic_store(&conversions_run, 0);
    plugin_plan *plan = ph_build(g, reg, NULL);
    cr_assert_eq(atomic_load(&conversions_run), 1, "compiling converted %d times, expected once",
                 atomic_load(&conversions_run));
    size_t n;
    const rn_runtime_node *rows = ph_rows(plan, &n);
    for (size_t i = 0; i < n; i++)
        cr_expect(strstr(rows[i].name, "weight") == NULL, "run-time row '%s' (%s) for the constant",
                  rows[i].name, rows[i].layer_type);
    /* Every run converts exactly what the Reorder rows say. */
    float x[COUNT];
    graph_tensor in = input_tensor(x);
    ph_outputs out;
    atomic_store(&conversions_run, 0);
    ph_run(plan, &in, 1, false, 3, &out);
    cr_expect_eq(atomic_load(&conversions_run), 3 * 4, "3 runs converted %d times, expected 12",
                 atomic_load(&conversions_run));
    ph_outputs_free(&out);
    plugin_plan_free(plan);
    graph_free(g);
    plugin_kernel_registry_free(reg);
}

Test(layouts, mixed_graph_matches_ref)
{
    plugin_kernel_registry *reg = ph_registry(blocked_kernels);
    graph *g = mixed_graph();
    plugin_plan *plan = ph_build(g, reg, NULL);
    ph_expect_like_ref_and_free(g, plan, reg, 4, dims, 0.0f, 0);
}

/* input -> add (input + input) -> relu_a -> relu_b -> add_out (+ relu_a);
 * results add_out and relu_a: blocked from end to end. */
Test(layouts, blocked_chain_converts_only_at_its_ends)
{
    plugin_kernel_registry *reg = ph_registry(blocked_kernels);
    graph *g = pc_graph("chain", NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, 4, dims);
    graph_value *ra = ph_node(g, "relu_a", "Relu", 1, ph_node(g, "add", "Add", 2, x, x), NULL);
    graph_value *y = ph_node(g, "add_out", "Add", 2, ph_node(g, "relu_b", "Relu", 1, ra, NULL), ra);
    cr_assert_eq(graph_add_output(g, y), RN_OK);
    cr_assert_eq(graph_add_output(g, ra), RN_OK);
    plugin_plan *plan = ph_build(g, reg, NULL);
    static const reorder_want want[] = {{"input", "plain", "nChw4c"},
                                        {"relu_a", "nChw4c", "plain"},
                                        {"add_out", "nChw4c", "plain"}};
    expect_reorders(plan, want, 3);
    expect_row(plan, "add", "test_blocked", "nChw4c,nChw4c", "nChw4c");
    expect_row(plan, "relu_b", "test_blocked", "nChw4c", "nChw4c");
    expect_row(plan, "add_out", "test_blocked", "nChw4c,nChw4c", "nChw4c");
    ph_expect_like_ref_and_free(g, plan, reg, 4, dims, 0.0f, 0);
}

/* input -> sum (Add, nChw4c) -> sig (Sigmoid, nChw8c) -> prod (Mul, the
 * other device's nChw4c) -> out (Relu, nChw4c): between two layouts of one
 * device a direct conversion, between devices two, through plain. */
Test(layouts, conversions_between_blocks_and_devices)
{
    static const int64_t d5[4] = {1, 5, 2, 3};
    plugin_kernel_registry *reg = ph_registry(blocked_kernels);
    graph *g = pc_graph("devices", NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, 4, d5);
    graph_value *sig = ph_node(g, "sig", "Sigmoid", 1, ph_node(g, "sum", "Add", 2, x, x), NULL);
    graph_value *y = ph_node(g, "out", "Relu", 1, ph_node(g, "prod", "Mul", 2, sig, sig), NULL);
    cr_assert_eq(graph_add_output(g, y), RN_OK);
    plugin_plan *plan = ph_build(g, reg, NULL);
    static const reorder_want want[] = {
        {"input", "plain", "nChw4c"},      {"sum", "nChw4c", "nChw8c"},
        {"sig", "nChw8c", "plain"},        {"sig", "plain", "nChw4c/other"},
        {"prod", "nChw4c/other", "plain"}, {"prod", "plain", "nChw4c"},
        {"out", "nChw4c", "plain"}};
    expect_reorders(plan, want, 7);
    expect_row(plan, "sig", "test_blocked", "nChw8c", "nChw8c");
    expect_row(plan, "prod", "test_blocked", "nChw4c/other,nChw4c/other", "nChw4c/other");
    /* The test's Sigmoid need not round as REF's does. */
    ph_expect_like_ref_and_free(g, plan, reg, 4, d5, 0.5f, 1e-6);
}
