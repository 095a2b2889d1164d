/* The CPU device where oneDNN cannot serve a node: a primitive that cannot be
 * created for a node's shapes or attributes falls back to the next kernel
 * that supports the node (REF's), with the reason in the runtime model; a
 * primitive that needs scratch memory gets it in constant folding too. The
 * models (make_fallback_models.py) are shapes of real models the device
 * once failed on where REF ran; every output is compared with REF's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static rn_compiled_model *compile(rn_core *core, const char *file, const char *device)
{
    char path[512];
    snprintf(path, sizeof path, "tests/cpu/%s", file);
    rn_model *model;
    OK(rn_core_read_model(core, path, &model));
    rn_property f32[] = {{"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, device, strcmp(device, "CPU") == 0 ? f32 : NULL,
                             strcmp(device, "CPU") == 0 ? 1 : 0, &cm));
    rn_model_free(model);
    return cm;
}

/* An f32 tensor of `dims` filled with a deterministic pattern in [-1, 1). */
static rn_tensor *pattern(const int64_t *dims, size_t rank)
{
    rn_tensor *x;
    OK(rn_tensor_create(RN_F32, dims, rank, &x));
    float *p = rn_tensor_data(x);
    for (size_t i = 0; i < rn_tensor_element_count(x); i++)
        p[i] = (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
    return x;
}

/* Runs cm on inputs 0..n-1; returns output k's elements (malloc'ed) and
 * their count. */
static float *run_with(rn_compiled_model *cm, rn_tensor *const *inputs, size_t n, size_t k,
                       size_t *count)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    for (size_t i = 0; i < n; i++)
        OK(rn_infer_request_set_input_tensor(r, i, inputs[i]));
    OK(rn_infer_request_infer(r));
    rn_tensor *y;
    OK(rn_infer_request_get_output_tensor(r, k, &y));
    *count = rn_tensor_element_count(y);
    float *out = malloc(*count * sizeof *out + 1);
    cr_assert_not_null(out);
    memcpy(out, rn_tensor_data(y), *count * sizeof *out);
    rn_infer_request_free(r);
    return out;
}

/* Runs cm on input 0 of `dims` filled with pattern(). */
static float *run(rn_compiled_model *cm, const int64_t *dims, size_t rank, size_t k, size_t *count)
{
    rn_tensor *x = pattern(dims, rank);
    float *out = run_with(cm, &x, 1, k, count);
    rn_tensor_free(x);
    return out;
}

static void expect_same(const float *cpu, size_t n_cpu, const float *ref, size_t n_ref,
                        const char *what)
{
    cr_assert_eq(n_cpu, n_ref, "%s: %zu elements on CPU, %zu on REF", what, n_cpu, n_ref);
    for (size_t i = 0; i < n_cpu; i++)
        cr_assert(fabsf(cpu[i] - ref[i]) <= 1e-5f + 1e-5f * fabsf(ref[i]),
                  "%s[%zu]: CPU %g, REF %g", what, i, cpu[i], ref[i]);
}

/* YOLO's anchor grid over dynamic H and W: specialised per run, the
 * grid's Concats fold to constants on oneDNN's concat, which needs a
 * scratchpad (it once failed with "out of memory (oneDNN status 1)"). */
Test(cpu_fallback, anchor_grid_of_dynamic_shapes_matches_ref)
{
    rn_core *core;
    OK(rn_core_create(&core));
    rn_compiled_model *cpu = compile(core, "anchors_dyn.onnx", "CPU");
    rn_compiled_model *ref = compile(core, "anchors_dyn.onnx", "REF");
    const int64_t shapes[][4] = {{1, 4, 40, 40}, {1, 4, 24, 32}, {1, 4, 1, 7}, {1, 4, 40, 40}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t n_cpu, n_ref;
        float *a = run(cpu, shapes[s], 4, 0, &n_cpu);
        float *b = run(ref, shapes[s], 4, 0, &n_ref);
        cr_assert_eq(n_cpu, (size_t)(shapes[s][2] * shapes[s][3] * 3));
        char what[64];
        snprintf(what, sizeof what, "y of [1,4,%lld,%lld]", (long long)shapes[s][2],
                 (long long)shapes[s][3]);
        expect_same(a, n_cpu, b, n_ref, what);
        free(a);
        free(b);
    }
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_core_free(core);
}

/* An AveragePool whose pads exceed its kernel: the CPU's pooling kernel
 * takes the node, oneDNN refuses the primitive, and the node runs on REF's
 * kernel with oneDNN's reason in the runtime model; its MaxPool neighbour
 * stays on oneDNN with no reason. */
Test(cpu_fallback, refused_primitive_runs_on_ref_and_says_why)
{
    rn_core *core;
    OK(rn_core_create(&core));
    rn_compiled_model *cpu = compile(core, "pool_big_pads.onnx", "CPU");
    rn_compiled_model *ref = compile(core, "pool_big_pads.onnx", "REF");
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cpu, &nodes, &n));
    bool seen_avg = false, seen_max = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "AveragePool") == 0) {
            seen_avg = true;
            cr_assert_str_eq(nodes[i].impl_type, "ref");
            cr_assert_not_null(nodes[i].fallback, "AveragePool: no fallback reason");
            cr_assert(strstr(nodes[i].fallback, "oneDNN") != NULL &&
                          strstr(nodes[i].fallback, nodes[i].name) != NULL,
                      "AveragePool's reason: %s", nodes[i].fallback);
        } else if (strcmp(nodes[i].layer_type, "MaxPool") == 0) {
            seen_max = true;
            cr_assert_str_neq(nodes[i].impl_type, "ref");
            cr_assert_null(nodes[i].fallback, "MaxPool: %s", nodes[i].fallback);
        }
    }
    cr_assert(seen_avg && seen_max, "the runtime model lacks a pooling node");
    const int64_t dims[] = {1, 3, 5, 5};
    for (size_t k = 0; k < 2; k++) {
        size_t n_cpu, n_ref;
        float *a = run(cpu, dims, 4, k, &n_cpu);
        float *b = run(ref, dims, 4, k, &n_ref);
        expect_same(a, n_cpu, b, n_ref, k == 0 ? "avg" : "max");
        free(a);
        free(b);
    }
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_core_free(core);
}

/* A Conv in each branch of an If: the branch bodies' values get their size
 * at run time, so the CPU's Conv there must write a plain tensor (or hand
 * the node to REF); both branches match REF's. */
Test(cpu_fallback, conv_in_if_branches_matches_ref)
{
    rn_core *core;
    OK(rn_core_create(&core));
    rn_compiled_model *cpu = compile(core, "conv_in_if.onnx", "CPU");
    rn_compiled_model *ref = compile(core, "conv_in_if.onnx", "REF");
    const int64_t dims[] = {1, 3, 9, 9};
    for (int branch = 0; branch < 2; branch++) {
        rn_tensor *in[2] = {pattern(dims, 4), NULL};
        OK(rn_tensor_create(RN_BOOL, NULL, 0, &in[1]));
        *(uint8_t *)rn_tensor_data(in[1]) = (uint8_t)branch;
        size_t n_cpu, n_ref;
        float *a = run_with(cpu, in, 2, 0, &n_cpu);
        float *b = run_with(ref, in, 2, 0, &n_ref);
        expect_same(a, n_cpu, b, n_ref, branch ? "then" : "else");
        free(a);
        free(b);
        rn_tensor_free(in[0]);
        rn_tensor_free(in[1]);
    }
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_core_free(core);
}

/* Compiles `file` on CPU and REF, runs each on one pattern input of
 * `dims`, and expects output 0 equal. */
static void expect_model_matches_ref(const char *file, const int64_t *dims, size_t rank)
{
    rn_core *core;
    OK(rn_core_create(&core));
    rn_compiled_model *cpu = compile(core, file, "CPU");
    rn_compiled_model *ref = compile(core, file, "REF");
    size_t n_cpu, n_ref;
    float *a = run(cpu, dims, rank, 0, &n_cpu);
    float *b = run(ref, dims, rank, 0, &n_ref);
    expect_same(a, n_cpu, b, n_ref, file);
    free(a);
    free(b);
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_core_free(core);
}

/* The same with the condition a constant of the model. */
Test(cpu_fallback, conv_in_a_constant_if_matches_ref)
{
    const int64_t dims[] = {1, 3, 9, 9};
    expect_model_matches_ref("conv_in_if_const.onnx", dims, 4);
}

/* A Conv on constants only is folded at compile time on plain tensors (a
 * oneDNN Conv folded in its blocked layout gave other values). */
Test(cpu_fallback, folded_conv_matches_ref)
{
    const int64_t dims[] = {1, 5, 6, 6};
    expect_model_matches_ref("conv_folded.onnx", dims, 4);
}
