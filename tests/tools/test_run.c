/* run, as a subprocess: -infer_precision and -p set compile-time
 * properties (the compiled model reports them back, the outputs follow
 * them), and their errors are one line naming the problem. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "tests/tools/tool_util.h"
#include "tools/npy.h"

/* True when this build and machine have the CPU device (REF always runs);
 * *native_bf16 when it runs bf16 natively (its OPTIMIZATION_CAPABILITIES
 * name BF16: avx512_bf16 or AMX). */
static bool have_cpu(bool *native_bf16)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    bool found = false;
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        found |= strcmp(rn_core_device_name(core, i), "CPU") == 0;
    char caps[256] = "";
    if (found)
        cr_assert_eq(
            rn_core_get_property(core, "CPU", "OPTIMIZATION_CAPABILITIES", caps, sizeof caps),
            RN_OK, "%s", rn_last_error());
    *native_bf16 = strstr(caps, "BF16") != NULL;
    rn_core_free(core);
    return found;
}

/* Writes an f32 .npy of the given shape holding a smooth pattern that
 * bf16 cannot represent exactly. */
static void write_pattern(const char *path, const int64_t *dims, size_t rank, double phase)
{
    rn_tensor *x;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, rank, &x), RN_OK);
    float *p = rn_tensor_data(x);
    for (size_t i = 0; i < rn_tensor_element_count(x); i++)
        p[i] = (float)(sin((double)i * 0.37 + phase) + 0.1 * cos((double)i * 1.3));
    cr_assert_eq(npy_write(path, x), RN_OK, "%s", rn_last_error());
    rn_tensor_free(x);
}

/* A Conv model run takes: its file, the inputs run is given (name, shape,
 * the pattern's phase) and its output's name. */
typedef struct conv_model {
    const char *path;
    struct {
        const char *name;
        int64_t dims[4];
        double phase;
    } in[2];
    size_t n_in;
    const char *output;
} conv_model;

/* The strided Conv of ONNX's node tests: x [1,1,7,5] and W [1,1,3,3] both
 * inputs (the CPU device runs a Conv whose weights are an input with REF's
 * kernel, in f32 at every precision). */
static const conv_model node_conv = {
    CONV_MODEL, {{"x", {1, 1, 7, 5}, 0.0}, {"W", {1, 1, 3, 3}, 0.5}}, 2, "y"};
/* PyTorch's Conv2d as ONNX's converted tests hold it: x [2,3,7,5], its
 * weights [4,3,3,2] and bias constants, which oneDNN runs in bf16 where the
 * CPU has it natively. */
static const conv_model torch_conv = {PT_CONV_MODEL, {{"0", {2, 3, 7, 5}, 0.0}}, 1, "3"};

/* Runs model `m` on `device` with the extra flags, on its inputs written
 * into dir, the output into dir/<tag>/; returns the output tensor (the
 * caller frees it) and what run printed. */
static rn_tensor *conv(const conv_model *m, const char *dir, const char *tag, const char *device,
                       const char *const *extra, char **stdout_text)
{
    char out[700], path[800], file[2][720], spec[2][800];
    snprintf(out, sizeof out, "%s/%s", dir, tag);
    const char *args[32] = {"-m", m->path, "-d", device, "-o", out};
    size_t n = 6;
    for (size_t i = 0; i < m->n_in; i++) {
        int a = snprintf(file[i], sizeof file[i], "%s/in%zu.npy", dir, i);
        int b = snprintf(spec[i], sizeof spec[i], "%s=%s", m->in[i].name, file[i]);
        cr_assert(a < (int)sizeof file[i] && b < (int)sizeof spec[i], "path too long: %s", dir);
        write_pattern(file[i], m->in[i].dims, 4, m->in[i].phase);
        args[n++] = "-i";
        args[n++] = spec[i];
    }
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    tool_run r = tool_exec("run", args, NULL);
    cr_assert_eq(r.status, 0, "run %s failed: %s", tag, r.err);
    *stdout_text = r.out;
    r.out = NULL;
    tool_run_free(&r);
    snprintf(path, sizeof path, "%s/%s.npy", out, m->output);
    rn_tensor *t;
    cr_assert_eq(npy_read(path, &t), RN_OK, "%s: %s", path, rn_last_error());
    return t;
}

static double max_abs_diff(const rn_tensor *a, const rn_tensor *b)
{
    cr_assert_eq(rn_tensor_element_count(a), rn_tensor_element_count(b));
    const float *x = rn_tensor_data(a), *y = rn_tensor_data(b);
    double m = 0;
    for (size_t i = 0; i < rn_tensor_element_count(a); i++)
        m = fmax(m, fabs((double)x[i] - (double)y[i]));
    return m;
}

Test(run, infer_precision_f32_and_bf16_on_cpu)
{
    bool native_bf16;
    if (!have_cpu(&native_bf16))
        cr_skip_test("the CPU device is not available in this build or on this machine");
    char dir[512];
    tool_temp_dir(dir, sizeof dir);
    char *out_ref, *out_f32, *out_bf16, *out_p;
    rn_tensor *ref = conv(&torch_conv, dir, "ref", "REF", NULL, &out_ref);
    const char *f32[] = {"-infer_precision", "f32", NULL};
    rn_tensor *at_f32 = conv(&torch_conv, dir, "f32", "CPU", f32, &out_f32);
    const char *bf16[] = {"-infer_precision", "bf16", NULL};
    rn_tensor *at_bf16 = conv(&torch_conv, dir, "bf16", "CPU", bf16, &out_bf16);
    const char *p_bf16[] = {"-p", "INFERENCE_PRECISION_HINT=bf16", NULL};
    rn_tensor *at_p = conv(&torch_conv, dir, "p", "CPU", p_bf16, &out_p);

    /* the compiled model reports the precision it runs: bf16 where the CPU
     * has it natively, f32 elsewhere (as OpenVINO's CPU plugin) */
    const char *want = native_bf16 ? "precision bf16\n" : "precision f32\n";
    cr_expect(strstr(out_f32, "precision f32\n") != NULL, "%s", out_f32);
    cr_expect(strstr(out_bf16, "property INFERENCE_PRECISION_HINT=bf16\n") != NULL, "%s", out_bf16);
    cr_expect(strstr(out_bf16, want) != NULL, "%s", out_bf16);
    cr_expect(strstr(out_p, want) != NULL, "%s", out_p);

    /* f32 agrees with REF closely. bf16 (8 bits of mantissa) departs from
     * it where the CPU runs bf16 natively, by little on a 3x3x2 kernel over 3
     * channels (inputs within 1.2, PyTorch's weights within 0.24: at most
     * 18 * 2 * 1.2 * 0.24 * 2^-9 = 0.02). Elsewhere oneDNN has
     * no bf16 kernels and the CPU device runs those nodes in f32
     * (docs/cpu.md), within the same bound. -p gives what -infer_precision
     * gives. */
    double d32 = max_abs_diff(at_f32, ref), d16 = max_abs_diff(at_bf16, ref);
    cr_expect_lt(d32, 1e-4, "CPU f32 vs REF: %g", d32);
    if (native_bf16)
        cr_expect_gt(d16, d32, "CPU bf16 (%g) is no further from REF than f32 (%g)", d16, d32);
    cr_expect_lt(d16, 0.05, "CPU bf16 vs REF: %g (native bf16: %d)", d16, native_bf16);
    cr_expect_eq(max_abs_diff(at_p, at_bf16), 0.0);
    rn_tensor_free(ref);
    rn_tensor_free(at_f32);
    rn_tensor_free(at_bf16);
    rn_tensor_free(at_p);
    free(out_ref);
    free(out_f32);
    free(out_bf16);
    free(out_p);
}

Test(run, p_replaces_runs_own_setting)
{
    /* run sets ENABLE_PROFILING=NO unless -pc; -p ENABLE_PROFILING=YES
     * replaces it, and the per-node table comes out */
    char dir[512], *text;
    tool_temp_dir(dir, sizeof dir);
    const char *prof[] = {"-p", "ENABLE_PROFILING=YES", NULL};
    rn_tensor *t = conv(&node_conv, dir, "prof", "REF", prof, &text);
    cr_expect(strstr(text, "property ENABLE_PROFILING=YES\n") != NULL, "%s", text);
    cr_expect(strstr(text, "time (us)") != NULL, "no profiling table:\n%s", text);
    rn_tensor_free(t);
    free(text);
}

Test(run, property_errors_name_the_problem)
{
    struct {
        const char *args[10];
        int status;
        const char *needle;
    } cases[] = {
        {{"-m", ADD_MODEL, "-p", "NOEQUALS", NULL}, 2, "-p 'NOEQUALS': expected KEY=VALUE"},
        {{"-m", ADD_MODEL, "-p", "=YES", NULL}, 2, "expected KEY=VALUE"},
        {{"-m", ADD_MODEL, "-p", "KEY=", NULL}, 2, "expected KEY=VALUE"},
        {{"-m", ADD_MODEL, "-infer_precision", "", NULL}, 2, "-infer_precision: expected"},
        {{"-m", ADD_MODEL, "-p", NULL}, 2, "unknown or incomplete flag '-p'"},
        {{"-m", ADD_MODEL, "-p", "NO_SUCH_KEY=1", NULL}, 1, "NO_SUCH_KEY"},
        /* REF computes in f32 only */
        {{"-m", ADD_MODEL, "-infer_precision", "bf16", NULL}, 1, "bad value 'bf16'"},
        {{"-m", ADD_MODEL, "-infer_precision", "f99", NULL}, 1, "INFERENCE_PRECISION_HINT"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tool_run r = tool_exec("run", cases[i].args, NULL);
        cr_expect_eq(r.status, cases[i].status, "case %zu: exit %d, expected %d; stderr: %s", i,
                     r.status, cases[i].status, r.err);
        cr_expect(strstr(r.err, cases[i].needle) != NULL, "case %zu: '%s' is not in: %s", i,
                  cases[i].needle, r.err);
        tool_run_free(&r);
    }
    /* more -p flags than run keeps */
    const char *args[64] = {"-m", ADD_MODEL};
    size_t n = 2;
    for (int k = 0; k < 17; k++) {
        args[n++] = "-p";
        args[n++] = "ENABLE_PROFILING=NO";
    }
    args[n] = NULL;
    tool_run r = tool_exec("run", args, NULL);
    cr_expect_eq(r.status, 2, "stderr: %s", r.err);
    cr_expect(strstr(r.err, "more than 16 -p flags") != NULL, "%s", r.err);
    tool_run_free(&r);
}
