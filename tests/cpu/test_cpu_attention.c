/* The attention's heads split across the LATENCY stream's team
 * (plugins/cpu/attention.c): one fork per ScaledDotProductAttention, each
 * thread the whole attention (scale * Q @ K^T, mask, softmax, @ V) of the
 * heads it takes, single-threaded; REF's unfused graph's result within
 * 1e-4. tests/cpu/attention_heads.onnx (make_attention_heads_model.py):
 * batch 2, 4 heads of 32, sequence 128, the exporter's head Transposes and
 * its padding mask [B, 1, 1, S]. The runtime is linked statically to read
 * team.c's census of the copy the Core runs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/team.h"
#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

#define MODEL "tests/cpu/attention_heads.onnx"

/* The model compiled for CPU under LATENCY on `threads` threads (NULL: the
 * device's default). */
static rn_compiled_model *compile(rn_core *core, rn_model *model, const char *threads)
{
    rn_property p[] = {{"PERFORMANCE_HINT", "LATENCY"},
                       {"INFERENCE_PRECISION_HINT", "f32"},
                       {"INFERENCE_NUM_THREADS", threads}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, threads != NULL ? 3 : 2, &cm));
    return cm;
}

/* The f32 heads' kernel for the ISA oneDNN dispatches to here (CPU_ISA;
 * ONEDNN_MAX_CPU_ISA=AVX2 caps it on AVX-512 hosts): runnel's own products
 * on AVX-512, per-head dnnl_sgemm below; RN_CPU_ATTENTION_TILES=0 at
 * compile time keeps dnnl_sgemm everywhere. */
static const char *f32_heads_impl(rn_core *core)
{
    char isa[64];
    OK(rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa));
    const char *tiles = getenv("RN_CPU_ATTENTION_TILES");
    if (tiles != NULL && strcmp(tiles, "0") == 0)
        return "gemm:heads";
    return strncmp(isa, "avx512_core", strlen("avx512_core")) == 0 ? "avx512:heads" : "gemm:heads";
}

/* The plan is the one attention node (its head Transposes read with
 * strides), heads split, on the f32 heads' kernel `impl`. */
static void check_plan(rn_compiled_model *cm, const char *impl)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int attention = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].layer_type, "Parameter") == 0 ||
            strcmp(nodes[i].layer_type, "Result") == 0 || strcmp(nodes[i].layer_type, "Const") == 0)
            continue;
        cr_assert_str_eq(nodes[i].layer_type, "ScaledDotProductAttention", "node %s",
                         nodes[i].name);
        cr_assert_str_eq(nodes[i].impl_type, impl, "%s", nodes[i].name);
        attention++;
    }
    cr_assert_eq(attention, 1);
}

/* CPU's output (`count` values) against REF's on the same input
 * (cpu_testing_run_once). */
static void check_against_ref(rn_core *core, rn_model *model, rn_compiled_model *cpu, size_t count)
{
    rn_compiled_model *ref;
    OK(rn_core_compile_model(core, model, "REF", NULL, 0, &ref));
    size_t n1, n2;
    float *a = cpu_testing_run_once(cpu, &n1);
    float *b = cpu_testing_run_once(ref, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_eq(n1, count);
    float scale = 0.0f;
    for (size_t i = 0; i < n2; i++)
        scale = fmaxf(scale, fabsf(b[i]));
    for (size_t i = 0; i < n2; i++)
        cr_assert(fabsf(a[i] - b[i]) <= 1e-4f * fmaxf(fabsf(b[i]), scale) + 1e-6f,
                  "[%zu]: CPU %g, REF %g", i, a[i], b[i]);
    free(a);
    free(b);
    rn_compiled_model_free(ref);
}

/* One inference's census after a first one. */
static cpu_team_census one_inference(rn_compiled_model *cm)
{
    rn_infer_request *rq = cpu_testing_infer(cm);
    cpu_team_census before = cpu_team_census_read();
    OK(rn_infer_request_infer(rq));
    cpu_team_census after = cpu_team_census_read();
    rn_infer_request_free(rq);
    for (int k = 0; k < 3; k++) {
        after.alone[k] -= before.alone[k];
        after.team[k] -= before.team[k];
    }
    return after;
}

/* Under LATENCY on two or more cores the attention is one fork of the team
 * (before: its three or four oneDNN primitives forked a team each, the
 * batched products scaling 1.15-1.3x on two threads). */
Test(cpu_attention, heads_split_is_one_fork_per_attention, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, MODEL, &model));
    rn_compiled_model *cm = compile(core, model, "2");
    check_plan(cm, f32_heads_impl(core));
    cpu_team_census c = one_inference(cm);
    cr_expect_eq(c.team[CPU_TEAM_PRIMITIVE], 1, "%lld runs on the team, %lld alone",
                 c.team[CPU_TEAM_PRIMITIVE], c.alone[CPU_TEAM_PRIMITIVE]);
    cr_expect_eq(c.alone[CPU_TEAM_PRIMITIVE], 0, "%lld runs on the team, %lld alone",
                 c.team[CPU_TEAM_PRIMITIVE], c.alone[CPU_TEAM_PRIMITIVE]);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* Heads split across two threads: REF's result. Runs under ThreadSanitizer
 * too, where the fork's threads are plain threads it sees (team.c). */
Test(cpu_attention, heads_split_on_two_threads_matches_ref, .timeout = 120)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, MODEL, &model));
    rn_compiled_model *cm = compile(core, model, "2");
    check_plan(cm, f32_heads_impl(core));
    check_against_ref(core, model, cm, (size_t)2 * 4 * 128 * 32);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* On one thread: no fork, the heads one after the other; REF's result. */
Test(cpu_attention, heads_on_one_thread_run_alone_and_match_ref, .timeout = 120)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, MODEL, &model));
    rn_compiled_model *cm = compile(core, model, "1");
    check_plan(cm, f32_heads_impl(core));
    cpu_team_census c = one_inference(cm);
    cr_expect_eq(c.team[CPU_TEAM_PRIMITIVE], 0, "%lld runs on the team",
                 c.team[CPU_TEAM_PRIMITIVE]);
    cr_expect_eq(c.alone[CPU_TEAM_PRIMITIVE], 1, "%lld runs alone", c.alone[CPU_TEAM_PRIMITIVE]);
    check_against_ref(core, model, cm, (size_t)2 * 4 * 128 * 32);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* ---- bf16 heads: tests/cpu/attention_bf16.onnx (make_attention_bf16_model.py) ---- */

#define BF16_MODEL "tests/cpu/attention_bf16.onnx"
#define BF16_D     24
#define BF16_U     (1.0f / 256) /* bf16's unit roundoff: 8 bits of significand */

/* The f32 heads where every tail of their tiles runs: the bf16 model in
 * f32 (sequence 77: not a multiple of a block's 8 rows nor of a tile's 32
 * columns; heads of 24; the padding mask; K read by
 * columns from the exporter's layout), REF's result within 1e-4, on one
 * thread and on two. */
Test(cpu_attention, f32_heads_with_every_tail_match_ref, .timeout = 120)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, BF16_MODEL, &model));
    const char *threads[] = {"1", "2"};
    for (int t = 0; t < 2; t++) {
        rn_compiled_model *cm = compile(core, model, threads[t]);
        const rn_runtime_node *nodes;
        size_t n;
        OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
        int attention = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(nodes[i].layer_type, "ScaledDotProductAttention") != 0)
                continue;
            cr_assert_str_eq(nodes[i].impl_type, f32_heads_impl(core), "%s", nodes[i].name);
            attention++;
        }
        cr_assert_eq(attention, 1);
        check_against_ref(core, model, cm, (size_t)2 * 77 * 96);
        rn_compiled_model_free(cm);
    }
    rn_model_free(model);
    rn_core_free(core);
}

/* The bf16 model compiled for CPU in bf16 under LATENCY on `threads`
 * threads; NULL where bf16 is not native here (it resolves to f32). With
 * f32_attention the attention's bf16 heads are switched off at compile
 * time (RN_CPU_ATTENTION_BF16=0): the f32 heads behind conversions. */
static rn_compiled_model *compile_bf16(rn_core *core, rn_model *model, const char *threads,
                                       bool f32_attention)
{
    rn_property p[] = {{"PERFORMANCE_HINT", "LATENCY"},
                       {"INFERENCE_PRECISION_HINT", "bf16"},
                       {"INFERENCE_NUM_THREADS", threads}};
    rn_compiled_model *cm;
    if (f32_attention)
        setenv("RN_CPU_ATTENTION_BF16", "0", 1);
    rn_status st = rn_core_compile_model(core, model, "CPU", p, 3, &cm);
    unsetenv("RN_CPU_ATTENTION_BF16");
    OK(st);
    char precision[32];
    OK(rn_compiled_model_get_property(cm, "INFERENCE_PRECISION_HINT", precision, sizeof precision));
    if (strcmp(precision, "bf16") != 0) {
        rn_compiled_model_free(cm);
        return NULL;
    }
    return cm;
}

/* The plan in bf16: the attention runs the bf16 heads and writes
 * `output` ("bf16:abcd", or "plain" in the tail), its three input Reshapes
 * and, unless it is the model's result, its output Reshape are views of
 * the products' plain bf16 (no Reorder but the model input's, into bf16
 * for the first products). */
static void check_bf16_plan(rn_compiled_model *cm, int reshape_views, const char *output)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int attention = 0, views = 0, reorders = 0;
    for (size_t i = 0; i < n; i++) {
        cr_log_info("%s %s: %s (%s -> %s)", nodes[i].layer_type, nodes[i].name, nodes[i].impl_type,
                    nodes[i].input_layouts, nodes[i].output_layouts);
        if (strcmp(nodes[i].layer_type, "ScaledDotProductAttention") == 0) {
            cr_assert_str_eq(nodes[i].impl_type, "avx512_bf16:heads", "%s", nodes[i].name);
            cr_assert_str_eq(nodes[i].output_layouts, output, "%s", nodes[i].name);
            attention++;
        }
        views +=
            strcmp(nodes[i].layer_type, "Reshape") == 0 && strcmp(nodes[i].impl_type, "view") == 0;
        reorders += strcmp(nodes[i].layer_type, "Reorder") == 0;
    }
    cr_assert_eq(attention, 1);
    cr_assert_eq(views, reshape_views);
    cr_assert_eq(reorders, 1, "%d Reorders: only the model input's may be converted", reorders);
}

/* |a[i] - b[i]| <= bound for the n outputs of both, the largest logged. */
static void expect_within(const float *a, const float *b, size_t n, float bound, const char *what)
{
    float worst = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        worst = fmaxf(worst, d);
        cr_assert(d <= bound, "[%zu]: bf16 heads %g, %s %g (bound %g)", i, a[i], what, b[i], bound);
    }
    cr_log_info("against %s: largest difference %g (bound %g)", what, worst, bound);
}

/* bf16 heads against the f32 heads in the same bf16 plan: both read the
 * same bf16 Q, K, V (the f32 heads after exact bf16 -> f32 conversions),
 * compute the scores in f32 from the same exact products (only the order
 * of the additions differs: ~1e-7 relative) and the same softmax. What
 * differs: the bf16 heads round each probability to bf16 (its numerator
 * exp(s_j - max), scaled by 1 / the f32 sum after @ V: the same relative
 * error, at most u = 2^-8), moving y by at most u * sum_j p_j |v_j| <=
 * u max |V|; and both round y to bf16 (the bf16 heads as they store it,
 * the f32 path in its conversion before the output product): u |y| each,
 * |y| <= max |V|. V is the input rounded to bf16 (Wv = Wo = I), |V| < 1:
 * so |difference| <= 3u, plus 1e-5 for the scores' additions. Two threads:
 * the heads split across the team where it pays. */
Test(cpu_attention, bf16_heads_match_the_f32_heads_within_bf16_rounding, .timeout = 120)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, BF16_MODEL, &model));
    rn_compiled_model *bf = compile_bf16(core, model, "2", false);
    if (bf == NULL) {
        rn_model_free(model);
        rn_core_free(core);
        cr_skip_test("bf16 is not native here (avx512_bf16 or AMX)");
    }
    check_bf16_plan(bf, 4, "bf16:abcd");
    rn_compiled_model *f = compile_bf16(core, model, "2", true);
    cr_assert_not_null(f);
    size_t n1, n2;
    float *a = cpu_testing_run_once(bf, &n1);
    float *b = cpu_testing_run_once(f, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_eq(n1, (size_t)2 * 77 * 96);
    expect_within(a, b, n1, 3 * BF16_U + 1e-5f, "f32 heads");
    free(a);
    free(b);
    rn_compiled_model_free(f);
    rn_compiled_model_free(bf);
    rn_model_free(model);
    rn_core_free(core);
}

/* bf16 heads against REF's f32 graph, one thread. Q = x~/2, K = 2x~,
 * V = x~ exactly (weights powers of two times I, no rounding of the
 * products'), x~ the input x rounded to bf16, |x~ - x| <= u|x|, |x| < 1.
 * The scores x~_i . x~_j / sqrt(D) differ from REF's by at most
 * delta = (2u + u^2) D / sqrt(D) (|x~ x~' - x x'| <= |x~ - x| |x~'| +
 * |x| |x~' - x'|, each term of D); a softmax whose inputs move by at most
 * delta moves each p_j by a factor in [e^-2delta, e^2delta], so
 * sum_j |p~_j - p_j| <= e^(2 delta) - 1, and y by at most that times
 * max|V| < 1; V's own rounding adds u, the probabilities' bf16 rounding
 * u, the output's u (none where the attention writes f32): |y - y_ref| <=
 * e^(2 delta) - 1 + 3u (0.092 for D = 24), plus 1e-5 for REF's own f32
 * arithmetic. */
static void expect_close_to_ref(const char *path, int reshape_views, const char *output)
{
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model(core, path, &model));
    rn_compiled_model *cm = compile_bf16(core, model, "1", false);
    if (cm == NULL) {
        rn_model_free(model);
        rn_core_free(core);
        cr_skip_test("bf16 is not native here (avx512_bf16 or AMX)");
    }
    check_bf16_plan(cm, reshape_views, output);
    rn_compiled_model *ref;
    OK(rn_core_compile_model(core, model, "REF", NULL, 0, &ref));
    size_t n1, n2;
    float *a = cpu_testing_run_once(cm, &n1);
    float *b = cpu_testing_run_once(ref, &n2);
    cr_assert_eq(n1, n2);
    float delta = (2 * BF16_U + BF16_U * BF16_U) * sqrtf((float)BF16_D);
    expect_within(a, b, n1, expf(2 * delta) - 1 + 3 * BF16_U + 1e-5f, "REF");
    free(a);
    free(b);
    rn_compiled_model_free(ref);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(cpu_attention, bf16_heads_are_close_to_ref, .timeout = 120)
{
    expect_close_to_ref(BF16_MODEL, 4, "bf16:abcd");
}

/* The attention as the model's tail (no output product after it): the
 * bf16 policy (transforms/precision.c) has it write f32, which the bf16
 * heads do from the same bf16 Q, K, V (the output's Reshape, the model's
 * result, copies). */
Test(cpu_attention, bf16_heads_in_the_tail_write_f32, .timeout = 120)
{
    expect_close_to_ref("tests/cpu/attention_bf16_tail.onnx", 3, "plain");
}
