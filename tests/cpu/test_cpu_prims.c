/* ConvTranspose, Resize and Reduce* on the CPU device's oneDNN primitives
 * (deconvolution, resampling, reduction) against REF's kernels, on models
 * with constant weights, scales, sizes and axes (tests/cpu/
 * make_prims_models.py; the ONNX node tests feed those as inputs, which
 * keeps such nodes on REF's kernels inside CPU): grouped, dilated and
 * depthwise transposed convolutions with asymmetric pads, output_padding,
 * output_shape and auto_pad in 1-D, 2-D and 3-D; nearest and linear
 * resizes of a non-square image and a trilinear one; reductions over
 * several axes with and without keepdims. Each node the primitives can take
 * must run as one (impl_type not "ref"), the others (cubic Resize, the
 * reductions oneDNN has only a reference implementation for) on REF, and
 * every output must match REF's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

#define MAX_OUTPUTS 16

typedef struct outputs {
    size_t n;
    float *data[MAX_OUTPUTS];
    size_t count[MAX_OUTPUTS];
} outputs;

/* Runs once on a deterministic input in [-1, 1) (in [0.5, 1.5) with
 * `positive`: products stay away from 0); copies every output. */
static void run_once(rn_compiled_model *cm, bool positive, outputs *o)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    rn_tensor *in;
    OK(rn_infer_request_get_input_tensor(r, 0, &in));
    float *x = rn_tensor_data(in);
    size_t n = rn_tensor_element_count(in);
    for (size_t i = 0; i < n; i++)
        x[i] = positive ? (float)((i * 7919u) % 1000u) / 1000.0f + 0.5f
                        : (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
    OK(rn_infer_request_infer(r));
    o->n = rn_compiled_model_output_count(cm);
    cr_assert_leq(o->n, MAX_OUTPUTS);
    for (size_t k = 0; k < o->n; k++) {
        rn_tensor *out;
        OK(rn_infer_request_get_output_tensor(r, k, &out));
        o->count[k] = rn_tensor_element_count(out);
        o->data[k] = malloc(o->count[k] * sizeof(float));
        memcpy(o->data[k], rn_tensor_data(out), o->count[k] * sizeof(float));
    }
    rn_infer_request_free(r);
}

static void outputs_free(outputs *o)
{
    for (size_t k = 0; k < o->n; k++)
        free(o->data[k]);
}

/* Nodes of layer type `op` in the CPU model, and how many run REF's kernel. */
static int count_op(rn_compiled_model *cm, const char *op, int *on_ref)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int count = 0;
    *on_ref = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].layer_type, op) == 0) {
            count++;
            if (strcmp(nodes[i].impl_type, "ref") == 0)
                (*on_ref)++;
        }
    return count;
}

/* The model tests/cpu/<name>.onnx on CPU (f32) and REF: `nodes` nodes of
 * type `op`, `ref_nodes` of them on REF's kernel in CPU, every output within
 * rtol of REF's (relative to the output's largest magnitude). */
static void check_model(const char *name, const char *op, int nodes, int ref_nodes, bool positive,
                        float rtol)
{
    char path[256];
    snprintf(path, sizeof path, "tests/cpu/%s.onnx", name);
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, path, &model));
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cpu, *ref;
    OK(rn_core_compile_model(core, model, "CPU", p, 1, &cpu));
    OK(rn_core_compile_model(core, model, "REF", NULL, 0, &ref));
    int on_ref = 0;
    cr_assert_eq(count_op(cpu, op, &on_ref), nodes, "%s: %d %s nodes expected", name, nodes, op);
    cr_assert_eq(on_ref, ref_nodes, "%s: %d %s nodes on REF's kernel, expected %d", name, on_ref,
                 op, ref_nodes);
    outputs a, b;
    run_once(cpu, positive, &a);
    run_once(ref, positive, &b);
    cr_assert_eq(a.n, b.n);
    for (size_t k = 0; k < b.n; k++) {
        cr_assert_eq(a.count[k], b.count[k], "%s output %zu: %zu vs %zu elements", name, k,
                     a.count[k], b.count[k]);
        float scale = 0.0f;
        for (size_t i = 0; i < b.count[k]; i++)
            scale = fmaxf(scale, fabsf(b.data[k][i]));
        cr_assert_gt(scale, 0.0f, "%s output %zu is all zeros", name, k);
        for (size_t i = 0; i < b.count[k]; i++)
            cr_assert(fabsf(a.data[k][i] - b.data[k][i]) <= rtol * scale,
                      "%s output %zu [%zu]: CPU %.9g, REF %.9g", name, k, i, a.data[k][i],
                      b.data[k][i]);
    }
    outputs_free(&a);
    outputs_free(&b);
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_model_free(model);
    rn_core_free(core);
}

Test(cpu_prims, convtranspose_grouped_dilated_asymmetric_matches_ref)
{
    check_model("convtranspose", "ConvTranspose", 3, 0, false, 1e-5f);
}

Test(cpu_prims, convtranspose_same_1d_3d_matches_ref)
{
    check_model("convtranspose_same", "ConvTranspose", 2, 0, false, 1e-5f);
}

/* output_padding beyond the end pad: a negative end pad for oneDNN, on
 * its blocked (jit) and its grouped (gemm) deconvolutions. */
Test(cpu_prims, convtranspose_output_padding_matches_ref)
{
    check_model("convtranspose_outpad", "ConvTranspose", 2, 0, false, 1e-5f);
}

/* The cubic Resize stays on REF: oneDNN has no cubic resampling. */
Test(cpu_prims, resize_non_square_matches_ref)
{
    check_model("resize", "Resize", 5, 1, false, 1e-5f);
}

Test(cpu_prims, resize_trilinear_matches_ref)
{
    check_model("resize_3d", "Resize", 1, 0, false, 1e-5f);
}

/* Sum, Mean, Max, Min and Prod over innermost axes (after dropping axes of
 * size 1) on oneDNN's jit reduction; the ReduceSum over [1, 3], and L1, L2
 * and SumSquare (p-norms) on REF: oneDNN 2.6 has only its reference
 * reduction for those, slower than REF's kernel. */
Test(cpu_prims, reduce_several_axes_matches_ref)
{
    const char *ops[] = {"ReduceSum",  "ReduceMean", "ReduceMax", "ReduceMin",
                         "ReduceProd", "ReduceL1",   "ReduceL2",  "ReduceSumSquare"};
    const int counts[] = {3, 1, 1, 1, 1, 1, 1, 1}, on_ref[] = {1, 0, 0, 0, 0, 1, 1, 1};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        check_model("reduce", ops[i], counts[i], on_ref[i], true, 1e-5f);
}

Test(cpu_prims, reduce_axes_attribute_matches_ref)
{
    const char *ops[] = {"ReduceMean", "ReduceMax", "ReduceL2", "ReduceSum"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        check_model("reduce_13", ops[i], 1, i == 2 ? 1 : 0, false, 1e-5f);
}
