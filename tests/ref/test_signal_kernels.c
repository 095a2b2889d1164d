/* REF signal kernels (DFT, STFT, the Hann, Hamming and Blackman windows,
 * MelWeightMatrix), run one node at a time the way the executor does: build a
 * one-node graph, infer shapes, pick the kernel from the REF registry,
 * allocate outputs from the inferred shapes, run. Every expected value is
 * worked out by hand in the comment beside it. */
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

/* An omitted optional input. */
static void nc_skip(node_case *c)
{
    c->in[c->n_in++] = (graph_tensor){.type = RN_UNDEFINED};
}

static void nc_attr(node_case *c, graph_attr a)
{
    cr_assert_lt(c->n_attrs, MAX_ATTRS);
    c->attrs[c->n_attrs++] = a;
}

static void nc_int(node_case *c, const char *name, int64_t v)
{
    nc_attr(c, (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_INT, .i = v});
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

/* ---- DFT ---- */

Test(signal, dft_of_a_real_signal)
{
    /* x = 1 2 3 4: X0 = 10, X1 = 1 - 3 + i(-2 + 4) = -2 + 2i, X2 = 1 - 2 + 3
     * - 4 = -2, X3 = -2 - 2i. Opset 20, axis input 1 (the signal axis of
     * [1, 4, 1]). */
    node_case c = nc_new("DFT", 20);
    float x[] = {1, 2, 3, 4};
    int64_t axis = 1;
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, x, false);
    nc_skip(&c);
    nc_input(&c, RN_I64, 0, NULL, &axis, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 4, 2});
    expect_f32(&c.out[0], 8, (float[]){10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
    nc_free(&c);
}

Test(signal, dft_onesided_keeps_half_the_bins)
{
    /* The same signal, onesided: bins 0 .. 4 / 2. Opset 20's default axis -2. */
    node_case c = nc_new("DFT", 20);
    float x[] = {1, 2, 3, 4};
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, x, false);
    nc_int(&c, "onesided", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 3, 2});
    expect_f32(&c.out[0], 6, (float[]){10, 0, -2, 2, -2, 0}, 1e-5);
    nc_free(&c);
}

Test(signal, dft_length_zero_pads_opset17_axis_attribute)
{
    /* x = 1 1 padded to 4 points: X_k = 1 + e^(-i pi k / 2) = 2, 1 - i, 0,
     * 1 + i. Opset 17 takes the axis as an attribute. */
    node_case c = nc_new("DFT", 17);
    float x[] = {1, 1};
    int64_t len = 4;
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 2, 1}, x, false);
    nc_input(&c, RN_I64, 0, NULL, &len, true);
    nc_int(&c, "axis", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 4, 2});
    expect_f32(&c.out[0], 8, (float[]){2, 0, 1, -1, 0, 0, 1, 1}, 1e-6);
    nc_free(&c);
}

Test(signal, dft_inverse_undoes_the_forward_transform)
{
    /* The inverse of 10, -2+2i, -2, -2-2i is 1 2 3 4 (real). */
    node_case c = nc_new("DFT", 20);
    float x[] = {10, 0, -2, 2, -2, 0, -2, -2};
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 2}, x, false);
    nc_int(&c, "inverse", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 8, (float[]){1, 0, 2, 0, 3, 0, 4, 0}, 1e-6);
    nc_free(&c);
}

Test(signal, dft_inverse_onesided_is_irfft)
{
    /* The onesided bins 10, -2+2i, -2 of 1 2 3 4 give back the real signal of
     * length 2 * (3 - 1) = 4, shaped [1, 4, 1]. */
    node_case c = nc_new("DFT", 20);
    float x[] = {10, 0, -2, 2, -2, 0};
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 3, 2}, x, false);
    nc_int(&c, "inverse", 1);
    nc_int(&c, "onesided", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 4, 1});
    expect_f32(&c.out[0], 4, (float[]){1, 2, 3, 4}, 1e-6);
    nc_free(&c);
}

Test(signal, dft_rejects_the_last_axis)
{
    node_case c = nc_new("DFT", 17);
    float x[] = {1, 2};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, x, false);
    nc_int(&c, "axis", 1);
    rn_status st = nc_build_run(&c, 1);
    cr_assert_eq(st, RN_INVALID_ARG, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (DFT)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- STFT ---- */

Test(signal, stft_frames_and_windows)
{
    /* 1..8, frames of 4 every 4 samples, onesided: frame 1 2 3 4 gives 10,
     * -2+2i, -2 and 5 6 7 8 gives 26, -2+2i, -2. With the window 0 1 1 0 the
     * first frame is 0 2 3 0: X0 = 5, X1 = 2(-i) + 3(-1) = -3 - 2i,
     * X2 = -2 + 3 = 1; the second 0 6 7 0: 13, -7 - 6i, 1. */
    float x[] = {1, 2, 3, 4, 5, 6, 7, 8}, win[] = {0, 1, 1, 0};
    int64_t step = 4, len = 4;
    for (int windowed = 0; windowed < 2; windowed++) {
        node_case c = nc_new("STFT", 17);
        nc_input(&c, RN_F32, 3, (int64_t[]){1, 8, 1}, x, false);
        nc_input(&c, RN_I64, 0, NULL, &step, true);
        if (windowed)
            nc_input(&c, RN_F32, 1, (int64_t[]){4}, win, true);
        else
            nc_skip(&c);
        nc_input(&c, RN_I64, 0, NULL, &len, true);
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        expect_shape(&c.out[0], 4, (int64_t[]){1, 2, 3, 2});
        if (windowed)
            expect_f32(&c.out[0], 12, (float[]){5, 0, -3, -2, 1, 0, 13, 0, -7, -6, 1, 0}, 1e-5);
        else
            expect_f32(&c.out[0], 12, (float[]){10, 0, -2, 2, -2, 0, 26, 0, -2, 2, -2, 0}, 1e-5);
        nc_free(&c);
    }
}

/* ---- windows ---- */

static void run_window(const char *op, int64_t size, int periodic, int64_t dtype, int n,
                       const double *want)
{
    node_case c = nc_new(op, 17);
    int32_t s = (int32_t)size;
    nc_input(&c, RN_I32, 0, NULL, &s, true);
    nc_int(&c, "periodic", periodic);
    if (dtype)
        nc_int(&c, "output_datatype", dtype);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){n});
    for (int i = 0; i < n; i++) {
        double got = dtype == RN_F64 ? ((double *)c.out[0].data)[i] : ((float *)c.out[0].data)[i];
        cr_assert(fabs(got - want[i]) < 1e-6, "%s[%d] = %.9g, want %.9g", op, i, got, want[i]);
    }
    nc_free(&c);
}

Test(signal, windows_periodic_and_symmetric)
{
    /* Periodic N = 4: cos(2 pi n / 4) = 1, 0, -1, 0. Hann 0.5 - 0.5 cos:
     * 0, .5, 1, .5; Hamming 25/46 - 21/46 cos: 4/46, 25/46, 1, 25/46;
     * Blackman .42 - .5 cos + .08 cos(2x): 0, .34, 1, .34. Symmetric size 5
     * uses N = 4 too: Hann 0, .5, 1, .5, 0. */
    run_window("HannWindow", 4, 1, 0, 4, (double[]){0, 0.5, 1, 0.5});
    run_window("HannWindow", 5, 0, RN_F64, 5, (double[]){0, 0.5, 1, 0.5, 0});
    run_window("HammingWindow", 4, 1, 0, 4, (double[]){4.0 / 46, 25.0 / 46, 1, 25.0 / 46});
    run_window("BlackmanWindow", 4, 1, RN_F64, 4, (double[]){0, 0.34, 1, 0.34});
}

/* ---- MelWeightMatrix ---- */

Test(signal, mel_weight_matrix_triangles)
{
    /* One mel bin from 0 to 4900 Hz = 700 (2^3 - 1): the mel points are
     * equally spaced, 0, 1/3 and 2/3 of the way, i.e. 700 (2^i - 1) Hz =
     * 0, 700, 2100 Hz. With dft_length 16 at 8000 Hz they fall in bins
     * floor(17 hz / 8000) = 0, 1, 4. The filter rises from bin 0 to 1 at
     * bin 1 and falls to 0 at bin 4: 0, 1, 2/3, 1/3, then 0 up to bin 8. */
    node_case c = nc_new("MelWeightMatrix", 17);
    int32_t bins = 1, len = 16, rate = 8000;
    float lo = 0, hi = 4900;
    nc_input(&c, RN_I32, 0, NULL, &bins, true);
    nc_input(&c, RN_I32, 0, NULL, &len, true);
    nc_input(&c, RN_I32, 0, NULL, &rate, true);
    nc_input(&c, RN_F32, 0, NULL, &lo, true);
    nc_input(&c, RN_F32, 0, NULL, &hi, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){9, 1});
    expect_f32(&c.out[0], 9, (float[]){0, 1, 2.0f / 3, 1.0f / 3, 0, 0, 0, 0, 0}, 1e-6);
    nc_free(&c);
}
