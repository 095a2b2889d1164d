/* ONNX's operator-format int8 ops on the CPU device: QLinearConv and
 * QLinearMatMul become runnel's QLinearFused ops (transforms/fuse_qop.c)
 * and run as oneDNN int8 primitives; the cases oneDNN cannot compute as ONNX
 * does stay on REF's kernel inside CPU. One-node models and their expected
 * outputs are written by tests/cpu/make_qop_models.py (onnx's reference
 * evaluator, checked against ONNX Runtime where it runs the case): u8 and
 * i8 inputs, per-channel scales, nonzero input, weight (per channel) and
 * output zero points, u8 weights folded into i8, a grouped, strided,
 * dilated, asymmetrically padded convolution with an i32 bias, saturation.
 *
 * Tolerance: ONNX rescales the exact s32 accumulator in double precision;
 * oneDNN with f32 scales (x_scale * w_scale / y_scale as one f32) and the
 * bias in f32, so a value within f32 rounding of a half step may round the
 * other way: every element within one step of the expected, most equal.
 * The weights are 7-bit after the zero point (|w - w_zp| <= 63), so
 * oneDNN's vpmaddubsw on CPUs without VNNI cannot saturate (see
 * docs/cpu.md). REF's kernels must match within one step too, and the
 * integer ops (MatMulInteger, ConvInteger: REF's kernels) exactly. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* The expected output, as int64 values of the given element size and
 * signedness. */
typedef struct values {
    size_t n;
    int64_t *v;
} values;

static int64_t value_at(const void *data, rn_element_type t, size_t i)
{
    switch (t) {
    case RN_U8:
        return ((const uint8_t *)data)[i];
    case RN_I8:
        return ((const int8_t *)data)[i];
    case RN_I32:
        return ((const int32_t *)data)[i];
    default:
        cr_assert_fail("unexpected output type %d", (int)t);
        return 0;
    }
}

static size_t elem_size(rn_element_type t)
{
    return t == RN_I32 ? 4 : 1;
}

static void read_expected(const char *name, rn_element_type t, values *out)
{
    char path[256];
    snprintf(path, sizeof path, "tests/cpu/%s.expected", name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    cr_assert_gt(bytes, 0, "%s is empty", path);
    unsigned char *raw = malloc((size_t)bytes);
    cr_assert_eq(fread(raw, 1, (size_t)bytes, f), (size_t)bytes);
    fclose(f);
    out->n = (size_t)bytes / elem_size(t);
    out->v = malloc(out->n * sizeof *out->v);
    for (size_t i = 0; i < out->n; i++)
        out->v[i] = value_at(raw, t, i);
    free(raw);
}

/* Runs once on the script's input (element i from b = (i * 7919 + 13) mod
 * 256: b as u8, b - 128 as i8, b / 64 - 2 as f32); the output's values and
 * type. */
static void run_once(rn_compiled_model *cm, values *out, rn_element_type *type)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    rn_tensor *in;
    OK(rn_infer_request_get_input_tensor(r, 0, &in));
    unsigned char *x = rn_tensor_data(in);
    rn_element_type xt = rn_tensor_element_type(in);
    for (size_t i = 0; i < rn_tensor_element_count(in); i++) {
        unsigned b = (unsigned)((i * 7919u + 13u) % 256u);
        if (xt == RN_F32)
            ((float *)x)[i] = (float)b / 64.0f - 2.0f;
        else
            x[i] = (unsigned char)(b ^ (xt == RN_I8 ? 0x80u : 0u));
    }
    OK(rn_infer_request_infer(r));
    rn_tensor *y;
    OK(rn_infer_request_get_output_tensor(r, 0, &y));
    *type = rn_tensor_element_type(y);
    out->n = rn_tensor_element_count(y);
    out->v = malloc(out->n * sizeof *out->v);
    for (size_t i = 0; i < out->n; i++)
        out->v[i] = value_at(rn_tensor_data(y), *type, i);
    rn_infer_request_free(r);
}

/* The impl of the one node of layer type `layer` in the CPU model. */
static const char *impl_of(rn_compiled_model *cm, const char *layer)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    const char *impl = NULL;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].layer_type, layer) == 0) {
            impl = nodes[i].impl_type;
            found++;
        }
    cr_assert_eq(found, 1, "one %s node expected, found %d", layer, found);
    return impl;
}

/* Elements of `got` more than `tol` from `want` (asserted none), and the
 * number that differ at all. */
static size_t compare(const char *what, const values *got, const values *want, int64_t tol)
{
    cr_assert_eq(got->n, want->n, "%s: %zu elements, expected %zu", what, got->n, want->n);
    size_t differ = 0;
    for (size_t i = 0; i < want->n; i++) {
        int64_t d = got->v[i] - want->v[i];
        cr_assert(d <= tol && d >= -tol, "%s [%zu]: %lld, expected %lld", what, i,
                  (long long)got->v[i], (long long)want->v[i]);
        differ += d != 0;
    }
    return differ;
}

/* tests/cpu/<name>.onnx on CPU and REF against its expected output: the
 * node on CPU is `layer` and runs on oneDNN (`on_onednn`) or REF's kernel;
 * every element within `tol` of the expected on both, at most 1 in 20 off. */
static void check(const char *name, const char *layer, bool on_onednn, int64_t tol)
{
    char path[256];
    snprintf(path, sizeof path, "tests/cpu/%s.onnx", name);
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, path, &model));
    rn_compiled_model *cpu, *ref;
    OK(rn_core_compile_model(core, model, "CPU", NULL, 0, &cpu));
    OK(rn_core_compile_model(core, model, "REF", NULL, 0, &ref));
    const char *impl = impl_of(cpu, layer);
    cr_assert_eq(strcmp(impl, "ref") != 0, on_onednn, "%s: impl %s, expected %s", name, impl,
                 on_onednn ? "a oneDNN primitive" : "ref");
    values c, r, want;
    rn_element_type ct, rt;
    run_once(cpu, &c, &ct);
    run_once(ref, &r, &rt);
    cr_assert_eq(ct, rt, "%s: CPU's output type %d, REF's %d", name, (int)ct, (int)rt);
    read_expected(name, ct, &want);
    size_t cpu_off = compare("CPU", &c, &want, tol);
    size_t ref_off = compare("REF", &r, &want, tol);
    cr_assert_leq(cpu_off * 20, want.n, "%s: %zu of %zu CPU elements off by one", name, cpu_off,
                  want.n);
    cr_assert_leq(ref_off * 20, want.n, "%s: %zu of %zu REF elements off by one", name, ref_off,
                  want.n);
    compare("CPU vs REF", &c, &r, tol == 0 ? 0 : 2 * tol);
    free(c.v);
    free(r.v);
    free(want.v);
    rn_compiled_model_free(cpu);
    rn_compiled_model_free(ref);
    rn_model_free(model);
    rn_core_free(core);
}

Test(cpu_qop, qlinearconv_u8_grouped_per_channel_bias_on_onednn)
{
    check("qop_conv_u8", "QLinearFusedConv", true, 1);
}

/* Whether the ISA oneDNN runs has VNNI (the CPU device's CPU_ISA:
 * avx2_vnni, avx512_core_vnni and every later level). Not /proc/cpuinfo:
 * with ONEDNN_MAX_CPU_ISA=AVX2 on a VNNI machine oneDNN runs without it. */
static bool cpu_has_vnni_flag(void)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    rn_core_free(core);
    return strstr(isa, "vnni") != NULL || strstr(isa, "bf16") != NULL ||
           strstr(isa, "amx") != NULL || strstr(isa, "fp16") != NULL;
}

/* An i8 x: oneDNN's convolution without VNNI halves the weights (its s8s8
 * compensation), so CPU declines it there and REF's kernel of the fused op
 * runs it. */
Test(cpu_qop, qlinearconv_s8_x_u8_weights_per_channel_zero_point)
{
    check("qop_conv_s8_u8w", "QLinearFusedConv", cpu_has_vnni_flag(), 1);
}

Test(cpu_qop, qlinearmatmul_per_column_scale_and_zero_point_on_onednn)
{
    check("qop_matmul", "QLinearFusedMatMul", true, 1);
}

Test(cpu_qop, qlinearmatmul_s8_on_onednn)
{
    check("qop_matmul_s8", "QLinearFusedMatMul", true, 1);
}

/* u8 weights 0..255 with zero point 0: w - w_zp leaves i8, so the node
 * stays QLinearConv on REF's exact kernel. */
Test(cpu_qop, qlinearconv_weights_outside_i8_stay_on_ref)
{
    check("qop_conv_fallback", "QLinearConv", false, 0);
}

Test(cpu_qop, matmulinteger_on_onednn_exactly)
{
    check("qop_matmul_integer", "QLinearFusedMatMul", true, 0);
}

Test(cpu_qop, convinteger_on_onednn_exactly)
{
    check("qop_conv_integer", "QLinearFusedConv", true, 0);
}

/* Full-range weights: without VNNI oneDNN's vpmaddubsw would saturate, so
 * CPU declines the fused node there and REF's kernel computes it (exact: the
 * accumulators stay below 2^24). */
Test(cpu_qop, matmulinteger_full_range_exactly)
{
    check("qop_matmul_integer_full", "QLinearFusedMatMul", cpu_has_vnni_flag(), 0);
}

Test(cpu_qop, convinteger_full_range_exactly)
{
    check("qop_conv_integer_full", "QLinearFusedConv", cpu_has_vnni_flag(), 0);
}

/* quantize_dynamic's form: DynamicQuantizeLinear, then MatMulInteger whose
 * a_zero_point is known only at run time (oneDNN's runtime source zero
 * point). */
Test(cpu_qop, matmulinteger_runtime_zero_point_on_onednn_exactly)
{
    check("qop_matmul_integer_dynamic", "QLinearFusedMatMul", true, 0);
}

/* The number of nodes of layer type `layer` in a compiled model. */
static int count_of(rn_compiled_model *cm, const char *layer)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found += strcmp(nodes[i].layer_type, layer) == 0;
    return found;
}

/* The operator format's residual (ResNet-50 from quantize_static with
 * QOperator): QLinearConv -> DequantizeLinear -> Sum/Add(., an f32 residual:
 * a projection shortcut's QLinearConv -> DequantizeLinear) -> Relu ->
 * QuantizeLinear. On CPU the DequantizeLinears, the Sum and the Relu go into
 * the two convolutions (y as their mid quantization, the residual as an f32
 * sum), which run on oneDNN (`on_onednn`) or REF's kernel of the fused op;
 * the output still matches onnx's evaluator and REF (which runs the
 * unfused graph). */
static void check_residual(const char *name, bool on_onednn)
{
    check(name, "QuantizeLinear", true, 1);
    char path[256];
    snprintf(path, sizeof path, "tests/cpu/%s.onnx", name);
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cpu;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, path, &model));
    OK(rn_core_compile_model(core, model, "CPU", NULL, 0, &cpu));
    cr_expect_eq(count_of(cpu, "QLinearFusedConv"), 2);
    cr_expect_eq(count_of(cpu, "DequantizeLinear"), 0, "the DequantizeLinears are fused");
    cr_expect_eq(count_of(cpu, "Sum") + count_of(cpu, "Add"), 0, "the Sum/Add is fused");
    cr_expect_eq(count_of(cpu, "Relu"), 0, "the Relu is fused");
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cpu, &nodes, &n));
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].layer_type, "QLinearFusedConv") == 0)
            cr_expect_eq(strcmp(nodes[i].impl_type, "ref") != 0, on_onednn, "%s: impl %s",
                         nodes[i].name, nodes[i].impl_type);
    rn_compiled_model_free(cpu);
    rn_model_free(model);
    rn_core_free(core);
}

Test(cpu_qop, qlinearconv_residual_sum_relu_fused_into_the_convolutions)
{
    check_residual("qop_conv_residual", true);
}

/* An i8 x: without VNNI REF's kernel of the fused op (its f32 sum) runs it. */
Test(cpu_qop, qlinearconv_residual_s8_x_fused)
{
    check_residual("qop_conv_residual_s8", cpu_has_vnni_flag());
}
