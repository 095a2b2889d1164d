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

/* The plan is the one attention node (its head Transposes read with
 * strides), heads split. */
static void check_plan(rn_compiled_model *cm)
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
        cr_assert_str_eq(nodes[i].impl_type, "gemm:heads", "%s", nodes[i].name);
        attention++;
    }
    cr_assert_eq(attention, 1);
}

/* CPU's output against REF's on the same input (cpu_testing_run_once). */
static void check_against_ref(rn_core *core, rn_model *model, rn_compiled_model *cpu)
{
    rn_compiled_model *ref;
    OK(rn_core_compile_model(core, model, "REF", NULL, 0, &ref));
    size_t n1, n2;
    float *a = cpu_testing_run_once(cpu, &n1);
    float *b = cpu_testing_run_once(ref, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_eq(n1, (size_t)2 * 4 * 128 * 32);
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
    check_plan(cm);
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
    check_plan(cm);
    check_against_ref(core, model, cm);
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
    check_plan(cm);
    cpu_team_census c = one_inference(cm);
    cr_expect_eq(c.team[CPU_TEAM_PRIMITIVE], 0, "%lld runs on the team",
                 c.team[CPU_TEAM_PRIMITIVE]);
    cr_expect_eq(c.alone[CPU_TEAM_PRIMITIVE], 1, "%lld runs alone", c.alone[CPU_TEAM_PRIMITIVE]);
    check_against_ref(core, model, cm);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}
