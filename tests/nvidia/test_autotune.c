/* NVIDIA_AUTOTUNE without a GPU: the property (default NO, parsed, refused
 * for a bad value naming it, listed among the device's keys and its caching
 * properties, part of the cache key), the tuning policy (how many
 * candidates, which timing wins, what a failed timing means, how the
 * choice is named) and the scratch one convolution graph's timing needs.
 * The timing itself runs on the GPU machine (scripts/nvidia-harness). The
 * choices remembered by graph key, and the keys of ResNet-50's
 * convolutions. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize.h"
#include "plugins/api/device.h"
#include "plugins/nvidia/nvidia.h"
#include "plugins/ref/ref.h"
#include "tests/nvidia/same_program.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

Test(nvidia_autotune, property_defaults_to_no_parses_and_refuses_bad_values)
{
    nv_test_assert_own_bool("NVIDIA_AUTOTUNE", offsetof(nv_properties, own.autotune), "fast");
}

static bool listed(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *at = list; (at = strstr(at, word)) != NULL; at += n)
        if ((at == list || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0'))
            return true;
    return false;
}

/* SUPPORTED_PROPERTIES lists the device's own keys (plugins/api/device.c),
 * CACHING_PROPERTIES is the descriptor's text, and a compiled model
 * answers NVIDIA_CONV_ENGINES. */
Test(nvidia_autotune, listed_among_supported_and_caching_properties)
{
    const plugin_device_iface *d = &nv_device_iface;
    bool own = false;
    for (size_t i = 0; i < d->n_own_keys; i++)
        own |= strcmp(d->own_keys[i].key, "NVIDIA_AUTOTUNE") == 0;
    cr_assert(own, "NVIDIA_AUTOTUNE is one of the device's own keys");
    cr_assert_eq(d->n_own_keys, NV_N_PROPERTY_KEYS);
    cr_assert(listed(d->info.caching_properties, "NVIDIA_AUTOTUNE"), "%s",
              d->info.caching_properties);
    cr_assert(listed(d->info.caching_properties, "NVIDIA_ALLOW_TF32"), "%s",
              d->info.caching_properties);
    bool engines = false;
    for (int i = 0; d->compiled_ro_keys[i] != NULL; i++)
        engines |= strcmp(d->compiled_ro_keys[i], "NVIDIA_CONV_ENGINES") == 0;
    cr_assert(engines, "a compiled model answers NVIDIA_CONV_ENGINES");
}

/* The Core keys CACHE_DIR blobs on the compile properties (graph_hash):
 * a model compiled with NVIDIA_AUTOTUNE YES is not the NO one's blob. */
Test(nvidia_autotune, changes_the_cache_key)
{
    graph *g = nv_test_light("squeezenet");
    const char *keys[] = {"INFERENCE_PRECISION_HINT", "NVIDIA_AUTOTUNE"};
    const char *no[] = {"f16", "NO"}, *yes[] = {"f16", "YES"};
    uint64_t k_no, k_yes, k_again;
    OK(graph_hash(g, 2, keys, no, "NVIDIA", "sm_90", &k_no));
    OK(graph_hash(g, 2, keys, yes, "NVIDIA", "sm_90", &k_yes));
    OK(graph_hash(g, 2, keys, no, "NVIDIA", "sm_90", &k_again));
    cr_assert_neq(k_no, k_yes, "NVIDIA_AUTOTUNE YES and NO share a cache key");
    cr_assert_eq(k_no, k_again, "the key is stable");
    graph_free(g);
}

Test(nvidia_autotune, caps_candidates_until_the_budget_is_spent)
{
    cr_assert_eq(nv_tune_cap(0, NV_TUNE_BUDGET_MS), NV_TUNE_MAX_CANDIDATES);
    cr_assert_eq(nv_tune_cap(NV_TUNE_BUDGET_MS - 1, NV_TUNE_BUDGET_MS), NV_TUNE_MAX_CANDIDATES);
    cr_assert_eq(nv_tune_cap(NV_TUNE_BUDGET_MS, NV_TUNE_BUDGET_MS), 1, "spent: the first only");
    cr_assert_eq(nv_tune_cap(5, 0), 1, "no budget: the first only");
    /* Bounded: at most a few candidates, a budget of seconds. */
    cr_assert(NV_TUNE_MAX_CANDIDATES >= 2 && NV_TUNE_MAX_CANDIDATES <= 16);
    cr_assert(NV_TUNE_BUDGET_MS > 0 && NV_TUNE_BUDGET_MS <= 60000);
}

Test(nvidia_autotune, picks_the_fastest_and_ignores_failed_timings)
{
    float ms[] = {1.0f, 0.5f, 0.25f, 0.75f};
    cr_assert_eq(nv_tune_pick(ms, 4), 2);
    cr_assert_eq(nv_tune_pick(ms, 2), 1, "only the first n count");
    float tie[] = {0.5f, 0.5f, 0.5f};
    cr_assert_eq(nv_tune_pick(tie, 3), 0, "a tie keeps the heuristic's order");
    float failed[] = {-1.0f, NAN, 0.0f, INFINITY, 0.3f, 0.4f};
    cr_assert_eq(nv_tune_pick(failed, 6), 4, "failed, zero and infinite timings never win");
    float none[] = {-1.0f, NAN, 0.0f};
    cr_assert_eq(nv_tune_pick(none, 3), -1, "all failed: none (the heuristic's first is kept)");
    cr_assert_eq(nv_tune_pick(ms, 0), -1);
}

Test(nvidia_autotune, a_candidate_time_is_its_fastest_run_unless_one_failed)
{
    float runs[] = {0.31f, 0.29f, 0.40f, 0.30f, 0.33f};
    cr_assert_float_eq(nv_tune_min(runs, 5), 0.29f, 1e-9);
    float one_failed[] = {0.31f, -1.0f, 0.30f};
    cr_assert_lt(nv_tune_min(one_failed, 3), 0.0f, "a failed run fails the candidate");
    float nan_run[] = {0.31f, NAN};
    cr_assert_lt(nv_tune_min(nan_run, 2), 0.0f);
    cr_assert_lt(nv_tune_min(runs, 0), 0.0f, "no runs: failed");
}

Test(nvidia_autotune, names_the_engine_and_what_tuning_did)
{
    char buf[96];
    nv_tune_label(buf, sizeof buf, 3, false, NULL, 1, 0);
    cr_assert_str_eq(buf, "engine 3", "untuned: as before");
    nv_tune_label(buf, sizeof buf, 7, true, NULL, 1, 0);
    cr_assert_str_eq(buf, "engine 7 (fallback)");
    float ms[] = {1.0f, 0.41f, 0.9f};
    nv_tune_label(buf, sizeof buf, 12, false, ms, 3, 1);
    cr_assert_str_eq(buf, "engine 12 (tuned: 0.41 of the first's time, 3 timed)");
    nv_tune_label(buf, sizeof buf, 5, false, ms, 3, 0);
    cr_assert_str_eq(buf, "engine 5 (tuned: the first, 3 timed)");
    nv_tune_label(buf, sizeof buf, 5, true, ms, 3, -1);
    cr_assert_str_eq(buf, "engine 5 (fallback, tuning failed: the heuristic's first)");
    float first_failed[] = {-1.0f, 0.5f};
    nv_tune_label(buf, sizeof buf, 9, false, first_failed, 2, 1);
    cr_assert_str_eq(buf, "engine 9 (tuned: the first failed, 2 timed)");
}

/* Timing a candidate needs X, W and Y (and the fused bias and residual) on
 * the device: each rounded up to 256 bytes, in the program's type. */
Test(nvidia_autotune, scratch_holds_the_operands_of_the_convolution)
{
    /* One 3x3 convolution, 1x8x16x16 -> 1x4x16x16, with a bias and a ReLU,
     * as a program holds it (only what the descriptors read). */
    nv_value v[4] = {
        {.name = "x", .rank = 4, .dims = {1, 8, 16, 16}},
        {.name = "w", .rank = 4, .dims = {4, 8, 3, 3}},
        {.name = "b", .rank = 1, .dims = {4}},
        {.name = "y", .rank = 4, .dims = {1, 4, 16, 16}},
    };
    for (int i = 0; i < 4; i++)
        v[i].root = i;
    nv_step s = {.kind = NV_STEP_CONV,
                 .node = "conv",
                 .op = "Conv",
                 .in = {0, 1, 2, -1},
                 .n_in = 3,
                 .out = 3,
                 .act = NV_ACT_RELU,
                 .pads = {1, 1, 1, 1},
                 .strides = {1, 1},
                 .dilations = {1, 1},
                 .group = 1};
    for (int t = 0; t < 2; t++) {
        nv_program p = {.values = v, .n_values = 4, .steps = &s, .n_steps = 1};
        p.compute = t ? RN_F16 : RN_F32;
        size_t e = t ? 2 : 4;
        nv_conv_graph *fused, *alone;
        OK(nv_conv_graph_create(&p, &s, true, &fused));
        OK(nv_conv_graph_create(&p, &s, false, &alone));
        size_t x = 8 * 16 * 16 * e, w = 4 * 8 * 9 * e, y = 4 * 16 * 16 * e, b = 256;
        size_t up_w = (w + 255) / 256 * 256;
        cr_assert_eq(nv_conv_graph_operand_bytes(alone), x + up_w + y, "%s", t ? "f16" : "f32");
        cr_assert_eq(nv_conv_graph_operand_bytes(fused), x + up_w + y + b, "%s", t ? "f16" : "f32");
        nv_conv_graph_free(fused);
        nv_conv_graph_free(alone);
    }
}

/* A tuned choice is taken again, untimed, by a graph of the same key. */
Test(nvidia_autotune, remembers_choices_by_key)
{
    nv_tune_table t = {0};
    int64_t a[NV_CONV_KEY] = {1, 2, 3}, b[NV_CONV_KEY] = {1, 2, 4};
    cr_assert_null(nv_tune_find(&t, a));
    nv_tune_remember(&t, a, 3, 1.0f, 0.5f);
    const nv_tune_record *r = nv_tune_find(&t, a);
    cr_assert_not_null(r);
    cr_assert_eq(r->rank, 3);
    cr_assert_null(nv_tune_find(&t, b), "another key is not the same choice");
    nv_tune_remember(&t, a, 5, 1.0f, 0.4f);
    cr_assert_eq(nv_tune_find(&t, a)->rank, 3, "a key's first choice stays");
    /* Past the first allocation: every record still found. */
    for (int i = 0; i < 40; i++) {
        int64_t k[NV_CONV_KEY] = {100 + i};
        nv_tune_remember(&t, k, i % NV_TUNE_MAX_CANDIDATES, 1.0f, 1.0f);
    }
    for (int i = 0; i < 40; i++) {
        int64_t k[NV_CONV_KEY] = {100 + i};
        r = nv_tune_find(&t, k);
        cr_assert(r != NULL && r->rank == i % NV_TUNE_MAX_CANDIDATES, "record %d", i);
    }
    cr_assert_eq(nv_tune_find(&t, a)->rank, 3);
    cr_assert_eq(t.n, 41);
    nv_tune_table merged = {0};
    nv_tune_remember(&merged, b, 1, 2.0f, 1.0f);
    nv_tune_merge(&merged, &t);
    cr_assert_eq(merged.n, 42, "a merge adds the keys it lacks");
    nv_tune_table_release(&merged);
    nv_tune_table_release(&t);
    cr_assert_eq(t.n, 0);

    char buf[128];
    nv_tune_record kept = {.rank = 2, .first_ms = 1.0f, .best_ms = 0.5f};
    nv_tune_label_again(buf, sizeof buf, 12, false, &kept, true);
    cr_assert_str_eq(buf, "engine 12 (tuned as an earlier graph of its shapes: 0.50 of the first's "
                          "time)");
    nv_tune_record first = {.rank = 0, .first_ms = 1.0f, .best_ms = 1.0f};
    nv_tune_label_again(buf, sizeof buf, 4, true, &first, true);
    cr_assert_str_eq(buf,
                     "engine 4 (fallback, tuned as an earlier graph of its shapes: the first)");
    nv_tune_label_again(buf, sizeof buf, 4, false, &kept, false);
    cr_assert(strstr(buf, "the first: fewer candidates") != NULL, "%s", buf);
}

/* The key is what the heuristics see: the same step gives the same key, the
 * fused chain and the shapes change it, and ResNet-50's 53 convolutions
 * repeat keys (its blocks repeat shapes), which is what reuse saves. */
Test(nvidia_autotune, graph_keys_repeat_across_resnet_blocks)
{
    graph *model = nv_test_light("resnet50"), *g;
    plugin_kernel_registry *ref;
    OK(plugin_kernel_registry_create(&ref));
    OK(ref_register_kernels(ref));
    plugin_properties props;
    plugin_properties_default(&props);
    OK(nv_transform(model, ref, &props, &g));
    nv_program *p;
    OK(nv_lower_graph(g, RN_F16, &p));
    enum { MAX = 128 };
    int64_t keys[MAX][NV_CONV_KEY];
    int n = 0, distinct = 0;
    for (int k = 0; k < p->n_steps && n < MAX; k++) {
        if (p->steps[k].kind != NV_STEP_CONV)
            continue;
        nv_conv_graph *fused, *again, *alone;
        OK(nv_conv_graph_create(p, &p->steps[k], true, &fused));
        OK(nv_conv_graph_create(p, &p->steps[k], true, &again));
        OK(nv_conv_graph_create(p, &p->steps[k], false, &alone));
        cr_assert(memcmp(nv_conv_graph_key(fused), nv_conv_graph_key(again), sizeof keys[0]) == 0,
                  "'%s': the same graph, the same key", p->steps[k].node);
        cr_assert(memcmp(nv_conv_graph_key(fused), nv_conv_graph_key(alone), sizeof keys[0]) != 0,
                  "'%s': the fused chain is part of the key", p->steps[k].node);
        memcpy(keys[n], nv_conv_graph_key(fused), sizeof keys[0]);
        bool seen = false;
        for (int i = 0; i < n && !seen; i++)
            seen = memcmp(keys[i], keys[n], sizeof keys[0]) == 0;
        distinct += !seen;
        n++;
        nv_conv_graph_free(fused);
        nv_conv_graph_free(again);
        nv_conv_graph_free(alone);
    }
    cr_log_info("ResNet-50 f16: %d graph keys for %d convolutions", distinct, n);
    cr_assert_eq(n, 53, "ResNet-50: 53 convolutions");
    cr_assert(distinct < n / 2, "%d keys for %d convolutions: blocks repeat", distinct, n);
    cr_assert(distinct >= 10, "%d keys: different shapes are different keys", distinct);
    nv_program_free(p);
    graph_free(g);
    graph_free(model);
    plugin_kernel_registry_free(ref);
}

/* The choices travel in a compiled blob's header as text (NVIDIA_TUNED):
 * read back they are the same records; made with another cuDNN or TF32
 * setting, or damaged, they are not taken (those graphs tune again). */
Test(nvidia_autotune, choices_round_trip_through_the_blob_text)
{
    nv_tune_table t = {0};
    for (int i = 0; i < 24; i++) {
        int64_t k[NV_CONV_KEY];
        for (int j = 0; j < NV_CONV_KEY; j++)
            k[j] = (int64_t)i * 1000003 - j * 7 - (j == 27 ? 1LL << 40 : 0);
        nv_tune_remember(&t, k, i % NV_TUNE_MAX_CANDIDATES, 0.25f + (float)i, 0.125f + (float)i);
    }
    char *text = NULL;
    OK(nv_tune_format(&t, 91900, false, &text));
    nv_tune_table back = {0};
    cr_assert(nv_tune_parse(text, 91900, false, &back), "%.200s", text);
    cr_assert_eq(back.n, t.n);
    for (int i = 0; i < t.n; i++) {
        const nv_tune_record *r = nv_tune_find(&back, t.records[i].key);
        cr_assert_not_null(r, "record %d", i);
        cr_assert_eq(r->rank, t.records[i].rank);
        cr_assert_float_eq(r->first_ms, t.records[i].first_ms, 1e-5);
        cr_assert_float_eq(r->best_ms, t.records[i].best_ms, 1e-5);
    }
    nv_tune_table other = {0};
    cr_assert(!nv_tune_parse(text, 91400, false, &other), "another cuDNN");
    cr_assert(!nv_tune_parse(text, 91900, true, &other), "another TF32 setting");
    cr_assert_eq(other.n, 0);
    /* Damaged: cut in a key, a bad rank, a record cut short, another format. */
    char *cut = strndup(text, (size_t)(strrchr(text, ' ') - text) + 10); /* in the last key */
    cr_assert(!nv_tune_parse(cut, 91900, false, &other), "cut short: %s", strrchr(cut, ' '));
    char *colon = strchr(text, ':');
    colon[1] = '9';
    cr_assert(!nv_tune_parse(text, 91900, false, &other), "rank 9 is past the candidates");
    cr_assert(!nv_tune_parse("nvtune1 cudnn=91900 tf32=0 1,2", 91900, false, &other));
    cr_assert(!nv_tune_parse("nvtune2 cudnn=91900 tf32=0", 91900, false, &other));
    cr_assert(!nv_tune_parse(NULL, 91900, false, &other));
    cr_assert_eq(other.n, 0, "a refused text adds nothing");
    free(cut);
    free(text);
    nv_tune_table_release(&back);
    nv_tune_table_release(&t);
}
