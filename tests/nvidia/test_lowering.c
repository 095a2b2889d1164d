/* What the NVIDIA device decides without a GPU: which nodes it runs (the
 * light CNNs entirely, an LSTM not), how the light models lower (fusions
 * into cuDNN convolutions, a memory plan whose live values never share
 * bytes, the f16 and bf16 conversions), its properties (bf16 from compute
 * capability 8.0) and the reasons create gives, the weights' rounding to
 * f16 and bf16, and cuDNN backend descriptors, which build on the host. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/ops.h"
#include "graph/onnx/onnx_reader.h"
#include "plugins/api/plan.h"
#include "plugins/nvidia/nvidia.h"
#include "plugins/ref/ref.h"
#include "tests/nvidia/same_program.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static const char *const light_models[] = {"bvlc_alexnet", "densenet121", "inception_v1",
                                           "inception_v2", "resnet50",    "shufflenet",
                                           "squeezenet",   "vgg19",       "zfnet512"};

static bool find(const char *rel, char *buf, size_t size)
{
    const char *roots[] = {".cache/onnx-1.22.0", "../.cache/onnx-1.22.0"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, size, "%s/%s", roots[i], rel);
        if (access(buf, R_OK) == 0)
            return true;
    }
    return false;
}

/* The model as NVIDIA compiles it (transforms with REF's constant folding). */
static graph *transformed(const char *rel)
{
    char path[512];
    if (!find(rel, path, sizeof path))
        cr_skip_test("%s is missing: run scripts/setup", rel);
    graph *model, *g;
    OK(onnx_read_file(path, &model));
    plugin_kernel_registry *ref;
    OK(plugin_kernel_registry_create(&ref));
    OK(ref_register_kernels(ref));
    plugin_properties props;
    plugin_properties_default(&props);
    OK(nv_transform(model, ref, &props, &g));
    graph_free(model);
    plugin_kernel_registry_free(ref);
    return g;
}

static graph *light(const char *name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "light/light_%s.onnx", name);
    return transformed(rel);
}

/* No two arena values alive at the same step share a byte. */
static void check_memory_plan(const nv_program *p)
{
    size_t sum = 0;
    for (int a = 0; a < p->n_values; a++) {
        const nv_value *x = &p->values[a];
        if (x->root != a || x->storage != NV_ARENA)
            continue;
        sum += x->nbytes;
        cr_assert(x->offset + x->nbytes <= p->arena_bytes, "%s beyond the arena", x->name);
        for (int b = a + 1; b < p->n_values; b++) {
            const nv_value *y = &p->values[b];
            if (y->root != b || y->storage != NV_ARENA || x->nbytes == 0 || y->nbytes == 0)
                continue;
            bool time = x->first <= y->last && y->first <= x->last;
            bool space = x->offset < y->offset + y->nbytes && y->offset < x->offset + x->nbytes;
            cr_assert(!(time && space), "'%s' [%d,%d] and '%s' [%d,%d] overlap", x->name, x->first,
                      x->last, y->name, y->first, y->last);
        }
    }
    cr_assert(p->arena_bytes < sum, "no reuse: arena %zu bytes, values %zu", p->arena_bytes, sum);
}

Test(nvidia_lowering, runs_every_light_model_entirely)
{
    for (size_t i = 0; i < sizeof light_models / sizeof light_models[0]; i++) {
        graph *g = light(light_models[i]);
        for (int k = 0; k < g->n_nodes; k++) {
            const char *why = "";
            cr_assert(nv_supports(g->nodes[k], &why), "%s: node '%s' (%s): %s", light_models[i],
                      g->nodes[k]->name, g->nodes[k]->op_type, why);
        }
        nv_program *p;
        OK(nv_lower_graph(g, RN_F32, &p));
        cr_assert_eq(p->n_inputs, 1, "%s", light_models[i]);
        cr_assert_eq(p->n_outputs, 1, "%s", light_models[i]);
        cr_assert_eq(nv_program_count(p, NV_STEP_CONVERT), 0);
        check_memory_plan(p);
        nv_program_free(p);
        /* f16 channels-last too, with its layout conversions: each converts
         * a value that is NCHW into a channels-last copy for a convolution,
         * or back. */
        OK(nv_lower_graph(g, RN_F16, &p));
        check_memory_plan(p);
        int convs = nv_program_count(p, NV_STEP_CONV), nhwc = 0;
        for (int k = 0; k < p->n_steps; k++) {
            const nv_step *s = &p->steps[k];
            nhwc += s->kind == NV_STEP_CONV && p->values[s->out].nhwc;
            if (s->kind == NV_STEP_TRANSPOSE && p->values[s->in[0]].rank == 4)
                cr_assert_neq(p->values[s->in[0]].nhwc, p->values[s->out].nhwc, "%s",
                              light_models[i]);
        }
        cr_log_info("%s f16: %d of %d convolutions channels-last, %d layout conversions",
                    light_models[i], nhwc, convs, nv_program_count(p, NV_STEP_TRANSPOSE));
        nv_program_free(p);
        graph_free(g);
    }
}

Test(nvidia_lowering, bf16_lowers_every_light_model_as_f16_with_bf16_values)
{
    for (size_t i = 0; i < sizeof light_models / sizeof light_models[0]; i++) {
        graph *g = light(light_models[i]);
        nv_program *h, *b;
        OK(nv_lower_graph(g, RN_F16, &h));
        OK(nv_lower_graph(g, RN_BF16, &b));
        nv_test_assert_bf16_as_f16(h, b, light_models[i]);
        check_memory_plan(b);
        cr_assert_eq(nv_program_count(b, NV_STEP_CONVERT), 2, "%s: input and output",
                     light_models[i]);
        for (int v = 0; v < b->n_values; v++) {
            const nv_value *x = &b->values[v];
            if (x->host_type == RN_F32 && strchr(x->name, '#') == NULL)
                cr_assert_eq(x->type, RN_BF16, "%s", x->name);
        }
        nv_program_free(h);
        nv_program_free(b);
        graph_free(g);
    }
    /* ResNet-50 in bf16 is channels-last throughout, as in f16. */
    graph *g = light("resnet50");
    nv_program *b;
    OK(nv_lower_graph(g, RN_BF16, &b));
    cr_assert_eq(nv_program_count(b, NV_STEP_TRANSPOSE), 1, "the input, once");
    for (int k = 0; k < b->n_steps; k++)
        if (b->steps[k].kind == NV_STEP_CONV)
            cr_assert(b->values[b->steps[k].out].nhwc, "conv '%s' writes NHWC", b->steps[k].node);
    nv_program_free(b);
    graph_free(g);
}

/* y is the element of the 16-bit format (decoded exactly by `decode`)
 * nearest to x, ties to the even encoding; beyond the largest finite value
 * by half its spacing or more, the infinity of x's sign. */
static void assert_rounded(float x, uint16_t y, float (*decode)(uint16_t), uint16_t inf,
                           const char *fmt)
{
    if (isnan(x)) {
        cr_assert(isnan(decode(y)), "%s: NaN stays NaN", fmt);
        return;
    }
    uint16_t sign = signbit(x) ? 0x8000 : 0, mag = y & 0x7fff;
    cr_assert_eq(y & 0x8000, sign, "%s: the sign of %a", fmt, (double)x);
    double ax = fabs((double)x), max = decode(inf - 1), beyond = max - decode(inf - 2);
    if (mag == inf) {
        cr_assert(isinf(x) || ax >= max + beyond / 2, "%s: %a is finite", fmt, (double)x);
        return;
    }
    cr_assert(mag < inf, "%s: %a became %#x", fmt, (double)x, y);
    cr_assert(ax < max + beyond / 2, "%s: %a should overflow", fmt, (double)x);
    double got = fabs((double)decode(y)), err = fabs(ax - got);
    /* Each neighbour is as far or farther; at equal distance y is even. */
    for (int d = -1; d <= 1; d += 2) {
        if ((d < 0 && mag == 0) || (d > 0 && mag + 1 >= inf))
            continue;
        double other = fabs(ax - fabs((double)decode((uint16_t)(mag + d))));
        cr_assert(err <= other, "%s: %a -> %a, but %a is nearer", fmt, (double)x, got,
                  (double)decode((uint16_t)(mag + d)));
        if (err == other)
            cr_assert_eq(mag & 1, 0, "%s: the tie %a goes to the even neighbour", fmt, (double)x);
    }
}

Test(nvidia_weights, rounding_to_f16_and_bf16_is_to_nearest_even)
{
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x);
    uint16_t *h = malloc(N * sizeof *h), *b = malloc(N * sizeof *b);
    cr_assert(x != NULL && h != NULL && b != NULL);
    /* Special values, exact ties of both formats, then bit patterns from
     * a fixed LCG over every exponent. */
    const float special[] = {0.0f,
                             -0.0f,
                             1.0f,
                             -1.0f,
                             INFINITY,
                             -INFINITY,
                             NAN,
                             65504.0f,
                             65520.0f,
                             65519.99f,
                             3.3895314e38f,
                             3.4028235e38f,
                             -3.4028235e38f,
                             1e-40f,
                             6.0e-8f,
                             1.0f + 0x1p-8f,
                             1.0f + 0x3p-8f,
                             1.0f + 0x1p-11f,
                             1.0f + 0x3p-11f,
                             0.1f};
    size_t n = 0;
    for (; n < sizeof special / sizeof special[0]; n++)
        x[n] = special[n];
    uint32_t state = 12345;
    for (; n < N; n++) {
        state = state * 1664525u + 1013904223u;
        uint32_t bits = state;
        if (n % 4 == 0) /* near the f16 range, where its rounding matters */
            bits = (bits & 0x807fffffu) | ((uint32_t)(100 + bits % 50) << 23);
        float f;
        memcpy(&f, &bits, sizeof f);
        x[n] = f;
    }
    nv_round_to(RN_F16, x, h, N);
    nv_round_to(RN_BF16, x, b, N);
    for (size_t i = 0; i < N; i++) {
        assert_rounded(x[i], h[i], plugin_f16_to_f32, 0x7c00, "f16");
        assert_rounded(x[i], b[i], plugin_bf16_to_f32, 0x7f80, "bf16");
    }
    /* A few by hand: 1 + 2^-8 is a bf16 tie that goes down to 1, 1 + 3 *
     * 2^-8 one that goes up to 1 + 2^-6 (both even); the largest f32
     * overflows bf16. */
    cr_assert_eq(b[15], 0x3f80);
    cr_assert_eq(b[16], 0x3f82);
    cr_assert_eq(b[11], 0x7f80);
    cr_assert_eq(b[12], 0xff80);
    free(x);
    free(h);
    free(b);
}

Test(nvidia_lowering, resnet50_is_53_fused_convolutions)
{
    graph *g = light("resnet50");
    nv_program *p;
    OK(nv_lower_graph(g, RN_F32, &p));
    /* ResNet-50: 49 convolutions on the main path and 4 projections; every
     * BatchNormalization, ReLU and residual Add is inside a convolution. */
    cr_assert_eq(nv_program_count(p, NV_STEP_CONV), 53);
    cr_assert_eq(nv_program_count(p, NV_STEP_BINARY), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_UNARY), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_BATCHNORM), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_POOL), 2); /* MaxPool, GlobalAveragePool */
    cr_assert_eq(nv_program_count(p, NV_STEP_GEMM), 1);
    int residual = 0, relu = 0;
    for (int k = 0; k < p->n_steps; k++) {
        const nv_step *s = &p->steps[k];
        if (s->kind != NV_STEP_CONV)
            continue;
        residual += s->in[3] >= 0;
        relu += s->act == NV_ACT_RELU;
        cr_assert(s->in[2] >= 0, "conv '%s' has its folded bias", s->node);
    }
    cr_assert_eq(residual, 16, "one residual Add per bottleneck block");
    cr_assert_eq(relu, 49, "every convolution but the 4 projections ends in ReLU");
    /* Weights: 25.5 M parameters in f32. */
    cr_assert(p->weights_bytes > 100000000u && p->weights_bytes < 104000000u, "%zu",
              p->weights_bytes);
    nv_program_free(p);
    graph_free(g);
}

/* f16 convolutions run channels-last (cuDNN's layout on tensor cores):
 * ResNet-50's input is converted once, every convolution reads and writes
 * NHWC with KRSC weights, the pooling between them too; what follows the
 * global pooling (1x1) is the same bytes in either layout. */
Test(nvidia_lowering, f16_resnet50_runs_channels_last)
{
    graph *g = light("resnet50");
    nv_program *p;
    OK(nv_lower_graph(g, RN_F16, &p));
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 1, "the input, once");
    int convs = 0;
    for (int k = 0; k < p->n_steps; k++) {
        const nv_step *s = &p->steps[k];
        if (s->kind == NV_STEP_TRANSPOSE) {
            cr_assert_eq(k, 1, "right after the input's f32 -> f16 conversion");
            cr_assert(!p->values[s->in[0]].nhwc);
            cr_assert(p->values[s->out].nhwc);
        }
        if (s->kind != NV_STEP_CONV)
            continue;
        convs++;
        cr_assert(p->values[s->in[0]].nhwc, "conv '%s' reads NHWC", s->node);
        cr_assert(p->values[s->out].nhwc, "conv '%s' writes NHWC", s->node);
        cr_assert(p->values[p->values[s->in[1]].root].nhwc, "conv '%s': KRSC weights", s->node);
        if (s->in[3] >= 0)
            cr_assert(p->values[s->in[3]].nhwc, "conv '%s': NHWC residual", s->node);
    }
    cr_assert_eq(convs, 53);
    check_memory_plan(p);
    nv_program_free(p);
    /* RUNNEL_NV_LAYOUT=nchw keeps every value NCHW. */
    setenv("RUNNEL_NV_LAYOUT", "nchw", 1);
    OK(nv_lower_graph(g, RN_F16, &p));
    unsetenv("RUNNEL_NV_LAYOUT");
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 0);
    for (int v = 0; v < p->n_values; v++)
        cr_assert(!p->values[v].nhwc, "%s", p->values[v].name);
    nv_program_free(p);
    graph_free(g);
}

Test(nvidia_lowering, f16_converts_at_the_edges_and_halves_the_weights)
{
    graph *g = light("squeezenet");
    nv_program *f32, *f16;
    OK(nv_lower_graph(g, RN_F32, &f32));
    OK(nv_lower_graph(g, RN_F16, &f16));
    cr_assert_eq(nv_program_count(f16, NV_STEP_CONVERT), 2, "input and output");
    cr_assert_eq(f16->steps[0].kind, NV_STEP_CONVERT);
    cr_assert_eq(f16->steps[f16->n_steps - 1].kind, NV_STEP_CONVERT);
    /* f16 adds the two conversions and, around its channels-last
     * convolutions, layout conversions (Transposes) where a value changes
     * layout. */
    int layout16 =
        nv_program_count(f16, NV_STEP_TRANSPOSE) - nv_program_count(f32, NV_STEP_TRANSPOSE);
    cr_assert_eq(f16->n_steps, f32->n_steps + 2 + layout16);
    cr_assert(layout16 >= 1, "the input becomes NHWC once");
    for (int v = 0; v < f16->n_values; v++) {
        const nv_value *x = &f16->values[v];
        if (x->host_type == RN_F32 && strchr(x->name, '#') == NULL)
            cr_assert_eq(x->type, RN_F16, "%s", x->name);
    }
    /* Staging keeps the host type: f32 bytes are uploaded and downloaded. */
    const nv_value *in = &f16->values[f16->input_value[0]];
    cr_assert_eq(f16->pinned_bytes, f32->pinned_bytes);
    cr_assert_eq(in->type, RN_F16);
    cr_assert(f16->weights_bytes < f32->weights_bytes * 6 / 10, "%zu vs %zu", f16->weights_bytes,
              f32->weights_bytes);
    check_memory_plan(f16);
    nv_program_free(f32);
    nv_program_free(f16);
    graph_free(g);
}

Test(nvidia_lowering, refuses_what_it_does_not_run_naming_the_node)
{
    graph *g = transformed("node/test_lstm_defaults/model.onnx");
    nv_program *p = NULL;
    cr_assert_eq(nv_lower_graph(g, RN_F32, &p), RN_UNSUPPORTED);
    cr_assert_null(p);
    cr_assert(strstr(rn_last_error(), "(LSTM)") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "no kernel for this op") != NULL, "%s", rn_last_error());
    graph_free(g);
    g = transformed("node/test_nonzero_example/model.onnx");
    cr_assert_eq(nv_lower_graph(g, RN_F32, &p), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "NonZero") != NULL, "%s", rn_last_error());
    graph_free(g);
}

Test(nvidia_properties, precision_tf32_and_slots)
{
    nv_properties p;
    nv_properties_default(&p, 7);
    cr_assert_eq(p.base.inference_precision, RN_F16, "f16 by default with tensor cores");
    cr_assert(p.own.cuda_graph, "CUDA graphs by default");
    rn_property eager[] = {{"NVIDIA_CUDA_GRAPH", "NO"}};
    OK(nv_properties_apply(&p, eager, 1));
    cr_assert(!p.own.cuda_graph);
    nv_properties_default(&p, 6);
    cr_assert_eq(p.base.inference_precision, RN_F32);
    rn_property ok[] = {{"INFERENCE_PRECISION_HINT", "f16"},
                        {"NVIDIA_ALLOW_TF32", "YES"},
                        {"NVIDIA_MAX_SLOTS", "4"},
                        {"PERFORMANCE_HINT", "THROUGHPUT"}};
    OK(nv_properties_apply(&p, ok, 4));
    cr_assert_eq(p.base.inference_precision, RN_F16);
    cr_assert(p.own.allow_tf32);
    cr_assert_eq(p.own.max_slots, 4);
    char buf[32];
    OK(nv_properties_get(&p, "NVIDIA_ALLOW_TF32", buf, sizeof buf));
    cr_assert_str_eq(buf, "YES");
    OK(nv_properties_get(&p, "INFERENCE_PRECISION_HINT", buf, sizeof buf));
    cr_assert_str_eq(buf, "f16");
    /* A bad value anywhere changes nothing and names the key. */
    rn_property bad[] = {{"NVIDIA_MAX_SLOTS", "2"}, {"NVIDIA_ALLOW_TF32", "maybe"}};
    cr_assert_eq(nv_properties_apply(&p, bad, 2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NVIDIA_ALLOW_TF32") != NULL, "%s", rn_last_error());
    cr_assert_eq(p.own.max_slots, 4);
    rn_property slots[] = {{"NVIDIA_MAX_SLOTS", "0"}};
    cr_assert_eq(nv_properties_apply(&p, slots, 1), RN_INVALID_ARG);
    rn_property bf16[] = {{"INFERENCE_PRECISION_HINT", "bf16"}};
    cr_assert_eq(nv_properties_apply(&p, bf16, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "INFERENCE_PRECISION_HINT") != NULL, "%s", rn_last_error());
    rn_property unknown[] = {{"NVIDIA_FAST", "YES"}};
    cr_assert_eq(nv_properties_apply(&p, unknown, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NVIDIA_FAST") != NULL, "%s", rn_last_error());
}

/* bf16 is offered from compute capability 8.0 (Ampere, Hopper) and refused
 * before it naming what the device accepts; f16 stays the default. */
Test(nvidia_properties, bf16_from_compute_capability_8)
{
    rn_property bf16[] = {{"INFERENCE_PRECISION_HINT", "bf16"}};
    char buf[64];
    for (int cc = 8; cc <= 10; cc++) {
        nv_properties p;
        nv_properties_default(&p, cc);
        cr_assert_eq(p.base.inference_precision, RN_F16, "cc %d: f16 stays the default", cc);
        OK(nv_properties_apply(&p, bf16, 1));
        cr_assert_eq(p.base.inference_precision, RN_BF16, "cc %d", cc);
        OK(nv_properties_get(&p, "INFERENCE_PRECISION_HINT", buf, sizeof buf));
        cr_assert_str_eq(buf, "bf16");
        rn_property back[] = {{"INFERENCE_PRECISION_HINT", "f32"}};
        OK(nv_properties_apply(&p, back, 1));
        cr_assert_eq(p.base.inference_precision, RN_F32);
    }
    for (int cc = 6; cc <= 7; cc++) {
        nv_properties p;
        nv_properties_default(&p, cc);
        rn_element_type before = p.base.inference_precision;
        cr_assert_eq(nv_properties_apply(&p, bf16, 1), RN_INVALID_ARG, "cc %d", cc);
        const char *e = rn_last_error();
        cr_assert(strstr(e, "INFERENCE_PRECISION_HINT") != NULL && strstr(e, "'bf16'") != NULL,
                  "%s", e);
        cr_assert(strstr(e, "f32") != NULL && strstr(e, "f16") != NULL, "names what it takes: %s",
                  e);
        cr_assert_eq(p.base.inference_precision, before, "unchanged");
    }
    cr_assert(!nv_has_bf16(7) && nv_has_bf16(8) && nv_has_bf16(9));
    nv_device_info d = {.cc_major = 8, .cc_minor = 0};
    OK(nv_device_property(&d, "OPTIMIZATION_CAPABILITIES", buf, sizeof buf));
    cr_assert_str_eq(buf, "FP32 FP16 BF16 EXPORT_IMPORT");
    d.cc_major = 7, d.cc_minor = 5;
    OK(nv_device_property(&d, "OPTIMIZATION_CAPABILITIES", buf, sizeof buf));
    cr_assert_str_eq(buf, "FP32 FP16 EXPORT_IMPORT");
}

Test(nvidia_properties, device_properties_from_the_probe)
{
    nv_device_info d = {.device_id = 0,
                        .name = "NVIDIA H100 80GB HBM3",
                        .cc_major = 9,
                        .cc_minor = 0,
                        .total_memory = 85024079872u,
                        .sm_count = 132,
                        .runtime_version = 13000,
                        .driver_version = 12080,
                        .cudnn_version = 91900,
                        .cublas_version = 130100};
    char buf[128];
    OK(nv_device_property(&d, "DEVICE_ARCHITECTURE", buf, sizeof buf));
    cr_assert_str_eq(buf, "sm_90");
    OK(nv_device_property(&d, "NVIDIA_CUDA_VERSION", buf, sizeof buf));
    cr_assert_str_eq(buf, "13.0");
    OK(nv_device_property(&d, "NVIDIA_DRIVER_VERSION", buf, sizeof buf));
    cr_assert_str_eq(buf, "12.8");
    OK(nv_device_property(&d, "NVIDIA_CUDNN_VERSION", buf, sizeof buf));
    cr_assert_str_eq(buf, "9.19.0");
    OK(nv_device_property(&d, "NVIDIA_CUBLAS_VERSION", buf, sizeof buf));
    cr_assert_str_eq(buf, "13.1.0");
    OK(nv_device_property(&d, "FULL_DEVICE_NAME", buf, sizeof buf));
    cr_assert(strstr(buf, "H100") != NULL, "%s", buf);
    OK(nv_device_property(&d, "OPTIMIZATION_CAPABILITIES", buf, sizeof buf));
    cr_assert(strstr(buf, "FP16") != NULL, "%s", buf);
    OK(nv_device_property(&d, "DEVICE_TOTAL_MEM_SIZE", buf, sizeof buf));
    cr_assert_str_eq(buf, "85024079872");
    cr_assert_eq(nv_device_property(&d, "DEVICE_ARCHITECTURE", buf, 4), RN_INVALID_ARG,
                 "too small a buffer");
    cr_assert_eq(nv_device_property(&d, "NO_SUCH_KEY", buf, sizeof buf), RN_NOT_FOUND);
    d.cc_major = 6, d.cc_minor = 1;
    OK(nv_device_property(&d, "OPTIMIZATION_CAPABILITIES", buf, sizeof buf));
    cr_assert_str_eq(buf, "FP32 EXPORT_IMPORT");
}

Test(nvidia_device, reasons_create_gives)
{
    cr_assert_str_eq(nv_start_problem(35 /* cudaErrorInsufficientDriver */, 0), "no CUDA driver");
    cr_assert_str_eq(nv_start_problem(34 /* cudaErrorStubLibrary */, 0), "no CUDA driver");
    cr_assert_str_eq(nv_start_problem(100 /* cudaErrorNoDevice */, 0), "no CUDA device");
    cr_assert_str_eq(nv_start_problem(0, 0), "no CUDA device");
    cr_assert_null(nv_start_problem(0, 1));
    cr_assert_eq(nv_check_cudnn_version(80906), RN_DEVICE_ERROR);
    cr_assert(strstr(rn_last_error(), "cuDNN 8.9 older than required 9.0") != NULL, "%s",
              rn_last_error());
    OK(nv_check_cudnn_version(91900));
    /* This machine: the probe says why it cannot start, or finds a device. */
    nv_device_info info;
    rn_status st = nv_device_probe(0, &info);
    if (st == RN_OK)
        cr_skip_test("a CUDA device is present (%s): its refusal cannot be observed", info.name);
    cr_assert_eq(st, RN_DEVICE_ERROR);
    cr_assert(strstr(rn_last_error(), "NVIDIA: no CUDA") != NULL, "%s", rn_last_error());
}

Test(nvidia_cudnn, backend_descriptors_of_resnet_convolutions)
{
    graph *g = light("resnet50");
    nv_program *p;
    OK(nv_lower_graph(g, RN_F32, &p));
    int checked_residual = 0, checked_first = 0;
    for (int k = 0; k < p->n_steps; k++) {
        const nv_step *s = &p->steps[k];
        if (s->kind != NV_STEP_CONV)
            continue;
        int want = 1 + (s->in[2] >= 0) + (s->in[3] >= 0) + (s->act != NV_ACT_NONE);
        if (checked_first && (checked_residual || s->in[3] < 0))
            continue;
        nv_conv_graph *cg;
        OK(nv_conv_graph_create(p, s, true, &cg));
        cr_assert_eq(nv_conv_graph_ops(cg), want, "conv '%s'", s->node);
        nv_conv_graph_free(cg);
        OK(nv_conv_graph_create(p, s, false, &cg));
        cr_assert_eq(nv_conv_graph_ops(cg), 1);
        nv_conv_graph_free(cg);
        checked_first = 1;
        checked_residual |= s->in[3] >= 0;
    }
    cr_assert(checked_first && checked_residual);
    /* f16 and bf16 descriptors too (channels-last). */
    for (int t = 0; t < 2; t++) {
        nv_program *h;
        OK(nv_lower_graph(g, t ? RN_BF16 : RN_F16, &h));
        for (int k = 0; k < h->n_steps; k++)
            if (h->steps[k].kind == NV_STEP_CONV) {
                nv_conv_graph *cg;
                OK(nv_conv_graph_create(h, &h->steps[k], true, &cg));
                int want = 1 + (h->steps[k].in[2] >= 0) + (h->steps[k].in[3] >= 0) +
                           (h->steps[k].act != NV_ACT_NONE);
                cr_assert_eq(nv_conv_graph_ops(cg), want);
                nv_conv_graph_free(cg);
                break;
            }
        nv_program_free(h);
    }
    nv_program_free(p);
    graph_free(g);
}

/* Index arithmetic made short before a launch. */
Test(nvidia_collapse, broadcast_dims_merge_where_every_operand_walks_them_as_one)
{
    /* BERT's mask: scores [B, H, S, S] + mask [B, 1, 1, S]: H and the query
     * rows are broadcast in the mask and contiguous in the scores. */
    nvk_broadcast b = {.rank = 4,
                       .dims = {2, 12, 128, 128},
                       .a_strides = {12 * 128 * 128, 128 * 128, 128, 1},
                       .b_strides = {128, 0, 0, 1}};
    cr_assert_eq(nv_collapse_broadcast(&b), 3);
    cr_assert_eq(b.dims[0], 2);
    cr_assert_eq(b.dims[1], 12 * 128);
    cr_assert_eq(b.dims[2], 128);
    cr_assert_eq(b.a_strides[1], 128);
    cr_assert_eq(b.b_strides[0], 128);
    cr_assert_eq(b.b_strides[1], 0);
    cr_assert_eq(b.b_strides[2], 1);
    /* Same shapes: one flat dim. A bias over the last dim: two. */
    nvk_broadcast same = {
        .rank = 3, .dims = {4, 5, 6}, .a_strides = {30, 6, 1}, .b_strides = {30, 6, 1}};
    cr_assert_eq(nv_collapse_broadcast(&same), 1);
    cr_assert_eq(same.dims[0], 120);
    nvk_broadcast bias = {
        .rank = 3, .dims = {4, 5, 6}, .a_strides = {30, 6, 1}, .b_strides = {0, 0, 1}};
    cr_assert_eq(nv_collapse_broadcast(&bias), 2);
    cr_assert_eq(bias.dims[0], 20);
    cr_assert_eq(bias.b_strides[0], 0);
    /* A scalar result keeps one dim of one. */
    nvk_broadcast one = {.rank = 2, .dims = {1, 1}};
    cr_assert_eq(nv_collapse_broadcast(&one), 1);
    cr_assert_eq(one.dims[0], 1);
}

Test(nvidia_collapse, transpose_keeps_the_inner_run_as_wide_elements)
{
    /* [B, S, H, D] -> [B, H, S, D] in f16, D = 64: the last dim stays last,
     * so runs of 64 halves copy as 8 vectors of 16 bytes. */
    int esize = 2;
    int64_t dims[4] = {2, 12, 128, 64};
    int64_t strides[4] = {128 * 12 * 64, 64, 12 * 64, 1}; /* input strides, permuted */
    cr_assert_eq(nv_collapse_transpose(&esize, 4, dims, strides), 4);
    cr_assert_eq(esize, 16);
    cr_assert_eq(dims[3], 8);
    cr_assert_eq(strides[1], 8);
    cr_assert_eq(strides[2], 12 * 8);
    /* A full reversal of [3, 5] in f32 has no contiguous inner run. */
    esize = 4;
    int64_t d2[2] = {5, 3}, s2[2] = {1, 5};
    cr_assert_eq(nv_collapse_transpose(&esize, 2, d2, s2), 2);
    cr_assert_eq(esize, 4);
    /* Dims of one drop and neighbours that stay neighbours merge. */
    esize = 4;
    int64_t d3[4] = {1, 6, 4, 5}, s3[4] = {120, 20, 5, 1};
    cr_assert_eq(nv_collapse_transpose(&esize, 4, d3, s3), 1);
    cr_assert_eq(d3[0] * esize, 120 * 4);
}

/* ---- dynamic shapes: the base graph, and the graph a run specialises ---- */

/* The model of `rel` with dim `dim` of its first input dynamic, as NVIDIA
 * compiles it; the REF registry that folds (for the caller to free). */
static graph *dynamic(const char *rel, int dim, plugin_kernel_registry **ref)
{
    char path[512];
    if (!find(rel, path, sizeof path))
        cr_skip_test("%s is missing: run scripts/setup", rel);
    graph *model, *open, *g;
    OK(onnx_read_file(path, &model));
    graph_shape *shapes = calloc((size_t)model->n_inputs + 1, sizeof *shapes);
    cr_assert_not_null(shapes);
    for (int i = 0; i < model->n_inputs; i++)
        shapes[i] = model->inputs[i]->shape;
    cr_assert(shapes[0].rank > dim && shapes[0].dims[dim] > 0);
    shapes[0].dims[dim] = RN_DIM_DYNAMIC;
    OK(plugin_graph_with_shapes(model, shapes, &open));
    free(shapes);
    OK(plugin_kernel_registry_create(ref));
    OK(ref_register_kernels(*ref));
    plugin_properties props;
    plugin_properties_default(&props);
    OK(nv_transform(open, *ref, &props, &g));
    graph_free(open);
    graph_free(model);
    cr_assert(plugin_graph_has_dynamic_inputs(g));
    return g;
}

/* A copy of g specialised for input 0 of batch `batch` (dim 0), as a run's
 * plan is (plugin_plan_spec_for with the device's specialize). */
static graph *specialised(const graph *g, const plugin_kernel_registry *ref, int64_t batch)
{
    graph *one, *b;
    OK(plugin_specialize_at_one(g, ref, true, &one));
    graph_shape s = one->inputs[0]->shape;
    s.dims[0] = batch;
    OK(plugin_graph_with_shapes(one, &s, &b));
    graph_free(one);
    OK(graph_infer_shapes(b));
    return b;
}

Test(nvidia_dynamic, squeezenet_with_a_dynamic_batch_lowers_once_specialised)
{
    plugin_kernel_registry *ref;
    /* SqueezeNet has no Reshape to a fixed batch (ResNet-50's light model
     * reshapes to [1, 2048]). */
    graph *g = dynamic("light/light_squeezenet.onnx", 0, &ref);
    /* query_model's answer: every node runs (dims known at run time)... */
    for (int k = 0; k < g->n_nodes; k++) {
        const char *why = "";
        cr_assert(nv_supports_op(g->nodes[k], &why), "node '%s' (%s): %s", g->nodes[k]->name,
                  g->nodes[k]->op_type, why);
    }
    /* ...but the lowering needs the shapes of a run. */
    nv_program *p = NULL;
    cr_assert_eq(nv_lower_graph(g, RN_F32, &p), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "dynamic shape") != NULL, "%s", rn_last_error());
    /* The compile's check: the model with its dynamic dims 1. */
    graph *one;
    OK(plugin_specialize_at_one(g, ref, true, &one));
    OK(nv_check_lowering(one, true));
    graph_free(one);
    /* A run of batch 7: the program of batch 1 over 7 images. */
    OK(plugin_specialize_at_one(g, ref, true, &one));
    nv_program *p1;
    OK(nv_lower_graph(one, RN_F32, &p1));
    graph *b7 = specialised(g, ref, 7);
    OK(nv_lower_graph(b7, RN_F32, &p));
    cr_assert_eq(p->n_steps, p1->n_steps);
    cr_assert_gt(nv_program_count(p, NV_STEP_CONV), 20);
    cr_assert_eq(nv_program_count(p, NV_STEP_CONV), nv_program_count(p1, NV_STEP_CONV));
    cr_assert_eq(p->weights_bytes, p1->weights_bytes);
    const nv_value *in = &p->values[p->input_value[0]];
    const nv_value *out = &p->values[p->output_value[0]];
    const nv_value *out1 = &p1->values[p1->output_value[0]];
    cr_assert_eq(in->dims[0], 7);
    cr_assert_eq(out->rank, out1->rank);
    cr_assert_eq(out->dims[0], 7);
    cr_assert_eq(out1->dims[0], 1);
    cr_assert_eq(out->count, 7 * out1->count);
    /* The two programs' constants are copies of the base graph's (one
     * clone each), and each has the base constant as its identity: the
     * device copy the compiled model's programs share. */
    int shared = 0;
    for (int v = 0; v < p->n_values; v++) {
        const nv_value *c = &p->values[v];
        if (c->root != v || c->storage != NV_CONST)
            continue;
        const void *id = nv_weight_identity(g, c);
        cr_assert_not_null(id, "constant '%s' has no identity in the base graph", c->name);
        cr_assert_neq(id, c->host_data, "'%s': the clone shares the base's data", c->name);
        bool found = false;
        for (int u = 0; u < p1->n_values && !found; u++)
            if (p1->values[u].storage == NV_CONST && p1->values[u].root == u &&
                strcmp(p1->values[u].name, c->name) == 0) {
                found = true;
                cr_assert_neq(p1->values[u].host_data, c->host_data);
                cr_assert_eq(nv_weight_identity(g, &p1->values[u]), id, "'%s'", c->name);
            }
        cr_assert(found, "'%s' only in the batch-7 program", c->name);
        shared++;
    }
    cr_assert_gt(shared, 20);
    /* Different bytes under the same name are not the same weight. */
    nv_value changed = p->values[p->values[p->input_value[0]].root];
    for (int v = 0; v < p->n_values; v++)
        if (p->values[v].storage == NV_CONST && p->values[v].root == v && p->values[v].count > 1)
            changed = p->values[v];
    cr_assert_eq(changed.storage, NV_CONST);
    size_t n = changed.count * rn_element_type_size(changed.host_type);
    unsigned char *bytes = malloc(n);
    cr_assert_not_null(bytes);
    memcpy(bytes, changed.host_data, n);
    bytes[n - 1] ^= 1;
    changed.host_data = bytes;
    cr_assert_null(nv_weight_identity(g, &changed));
    free(bytes);
    nv_program_free(p1);
    graph_free(one);
    check_memory_plan(p);
    nv_program_free(p);
    graph_free(b7);
    graph_free(g);
    plugin_kernel_registry_free(ref);
}

Test(nvidia_dynamic, refuses_an_unsupported_op_of_a_dynamic_model_naming_the_node)
{
    plugin_kernel_registry *ref;
    /* LSTM's X is [seq, batch, input]: the batch dynamic. */
    graph *g = dynamic("node/test_lstm_defaults/model.onnx", 1, &ref);
    const char *lstm = NULL;
    for (int k = 0; k < g->n_nodes; k++)
        if (strcmp(g->nodes[k]->op_type, "LSTM") == 0)
            lstm = g->nodes[k]->name;
    cr_assert_not_null(lstm);
    graph *one;
    OK(plugin_specialize_at_one(g, ref, true, &one));
    cr_assert_eq(one->inputs[0]->shape.dims[1], 1);
    cr_assert_eq(nv_check_lowering(one, false), RN_UNSUPPORTED);
    const char *e = rn_last_error();
    char want[256];
    snprintf(want, sizeof want, "node '%s' (LSTM)", lstm);
    cr_assert(strstr(e, want) != NULL, "%s (wanted %s)", e, want);
    cr_assert(strstr(e, "no kernel for this op") != NULL, "%s", e);
    cr_assert(strstr(e, "dynamic dims 1") != NULL, "%s", e);
    graph_free(one);
    graph_free(g);
    plugin_kernel_registry_free(ref);
}
