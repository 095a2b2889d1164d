/* HETERO: affinity from the devices' query_model in priority order, the
 * user's AFFINITY, constants following consumers, island merging, the split
 * into parts with transfers as DAG nodes, errors naming node, op and every
 * device's reason, query_model's union, export/import and the cache. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "tests/hetero/models.h"

#define N 64

Test(hetero, middle_op_only_ref_supports_splits_into_three_parts)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "3");
    cr_expect_str_eq(compiled_prop(c, "HETERO_TRANSFERS"), "2");
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "SLOWDEV,REF");
    expect_device(c, "n0", "SLOWDEV");
    expect_device(c, "n1", "REF");
    expect_device(c, "n2", "SLOWDEV");
    const rn_runtime_node *nodes;
    size_t n, transfers = 0;
    cr_assert_eq(rn_compiled_model_runtime_model(c, &nodes, &n), RN_OK);
    for (size_t i = 0; i < n; i++)
        transfers += strcmp(nodes[i].layer_type, "Transfer") == 0;
    cr_expect_eq(transfers, 2);
    float got[N];
    run_once(c, got, N);
    expect_like_ref(core, model, got, N);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, first_device_that_supports_a_node_takes_it)
{
    rn_core *core = slowdev_core("", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:REF,SLOWDEV", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "1");
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "REF");
    expect_device(c, "n1", "REF");
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, user_affinity_overrides_priority)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"AFFINITY", "n0=REF"}};
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    expect_device(c, "n0", "REF");
    expect_device(c, "n2", "SLOWDEV");
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "2");
    float got[N];
    run_once(c, got, N);
    expect_like_ref(core, model, got, N);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, bad_affinity_is_named)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    static const struct {
        const char *value, *words;
    } cases[] = {
        {"n9=REF", "no node 'n9'"},
        {"n0=CPU", "device 'CPU' is not in the list"},
        {"n1=SLOWDEV", "does not support it"},
        {"n1", "is not 'node=DEVICE'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rn_property p[] = {{"AFFINITY", cases[i].value}};
        cr_expect_neq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", p, 1, &c), RN_OK);
        cr_expect(strstr(rn_last_error(), cases[i].words) != NULL, "%s: %s", cases[i].value,
                  rn_last_error());
    }
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, small_island_merges_into_the_device_around_it)
{
    rn_core *core = slowdev_core("Neg", 0);
    static const model_node nodes[] = {
        {"Neg", "n0", "x", NULL, "a"},
        {"Relu", "n1", "a", NULL, "b"},
        {"Neg", "n2", "b", NULL, "y"},
    };
    rn_model *model = model_build(core, nodes, 3, "y", N, false);
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    expect_device(c, "n1", "REF");
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "1");
    rn_compiled_model_free(c);
    /* Without merging, the island stays on the device it prefers. */
    rn_property p[] = {{"HETERO_ISLAND_NODES", "0"}};
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    expect_device(c, "n1", "SLOWDEV");
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "3");
    float got[N];
    run_once(c, got, N);
    expect_like_ref(core, model, got, N);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, constants_follow_their_consumers)
{
    /* k = Identity(c) computes from a constant only: it goes where its
     * consumer (Mul, which SLOWDEV refuses) is, not to SLOWDEV. */
    rn_core *core = slowdev_core("Mul", 0);
    static const model_node nodes[] = {
        {"Relu", "n0", "x", NULL, "a"},
        {"Identity", "k0", "c", NULL, "k"},
        {"Mul", "n1", "a", "k", "y"},
    };
    rn_model *model = model_build(core, nodes, 3, "y", N, true);
    rn_compiled_model *c;
    rn_property p[] = {{"DISABLE_TRANSFORMATIONS", "YES"}};
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    expect_device(c, "n0", "SLOWDEV");
    expect_device(c, "k0", "REF");
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "2");
    cr_expect_str_eq(compiled_prop(c, "HETERO_TRANSFERS"), "1");
    float got[N];
    run_once(c, got, N);
    expect_like_ref(core, model, got, N);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, node_no_device_supports_names_node_op_and_each_reason)
{
    rn_core *core = slowdev_core("Neg", 0);
    cr_assert_eq(rn_core_load_plugin(core, "SLOWDEV2", SLOWDEV_SO), RN_OK, "%s", rn_last_error());
    rn_property refuse[] = {{"SLOWDEV_UNSUPPORTED_OPS", "Neg,Abs"}};
    cr_assert_eq(rn_core_set_property(core, "SLOWDEV2", refuse, 1), RN_OK);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,SLOWDEV2", NULL, 0, &c),
                 RN_UNSUPPORTED);
    const char *e = rn_last_error();
    cr_expect(strstr(e, "'n1'") != NULL && strstr(e, "Neg") != NULL, "%s", e);
    cr_expect(strstr(e, "SLOWDEV:") != NULL && strstr(e, "SLOWDEV2:") != NULL, "%s", e);
    cr_expect(strstr(e, "SLOWDEV_UNSUPPORTED_OPS") != NULL, "each device's reason: %s", e);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, query_model_answers_for_the_union)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    const char *devices[] = {"HETERO:SLOWDEV", "HETERO:SLOWDEV,REF"};
    for (int k = 0; k < 2; k++) {
        rn_query_result *q;
        cr_assert_eq(rn_core_query_model(core, model, devices[k], NULL, 0, &q), RN_OK, "%s",
                     rn_last_error());
        bool seen = false;
        for (size_t i = 0; i < rn_query_result_count(q); i++) {
            const char *name;
            int ok;
            rn_query_result_entry(q, i, &name, &ok);
            if (strcmp(name, "n1") == 0) {
                seen = true;
                cr_expect_eq(ok, k == 1, "%s: n1", devices[k]);
            } else if (name[0] == 'n') {
                cr_expect(ok, "%s: %s", devices[k], name);
            }
        }
        cr_expect(seen);
        rn_query_result_free(q);
    }
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, device_names_are_checked)
{
    rn_core *core = slowdev_core("", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    cr_expect_eq(rn_core_compile_model(core, model, "REF:CPU", NULL, 0, &c), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "takes no device list") != NULL, "%s", rn_last_error());
    cr_expect_eq(rn_core_compile_model(core, model, "HETERO:NOPE,REF", NULL, 0, &c), RN_NOT_FOUND);
    cr_expect(strstr(rn_last_error(), "NOPE") != NULL, "%s", rn_last_error());
    cr_expect_eq(rn_core_compile_model(core, model, "HETERO", NULL, 0, &c), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "no devices") != NULL, "%s", rn_last_error());
    cr_expect_eq(rn_core_compile_model(core, model, "HETERO:", NULL, 0, &c), RN_INVALID_ARG);
    cr_expect_eq(rn_core_compile_model(core, model, "HETERO:HETERO", NULL, 0, &c), RN_INVALID_ARG);
    /* The list as a property works as the suffix does. */
    rn_property p[] = {{"MULTI_DEVICE_PRIORITIES", "REF"}};
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "REF");
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, a_failing_part_fails_the_request_naming_it)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"SLOWDEV_FAIL_REQUESTS", "YES"}};
    cr_assert_eq(rn_core_set_property(core, "SLOWDEV", p, 1), RN_OK);
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(c, &r), RN_OK);
    cr_expect_eq(rn_infer_request_infer(r), RN_DEVICE_ERROR);
    cr_expect(strstr(rn_last_error(), "part 0 on SLOWDEV") != NULL, "%s", rn_last_error());
    cr_expect_eq(rn_infer_request_start_async(r), RN_OK);
    cr_expect_eq(rn_infer_request_wait(r), RN_DEVICE_ERROR);
    cr_expect(strstr(rn_last_error(), "SLOWDEV_FAIL_REQUESTS") != NULL, "%s", rn_last_error());
    rn_tensor *y;
    cr_expect_neq(rn_infer_request_get_output_tensor(r, 0, &y), RN_OK);
    rn_infer_request_free(r);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(hetero, export_import_and_cache_give_the_same_outputs)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c, *imported;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    void *blob;
    size_t size;
    cr_assert_eq(rn_compiled_model_export(c, &blob, &size), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_import_model(core, blob, size, "HETERO", NULL, 0, &imported), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(imported, "HETERO_PARTS"), "3");
    expect_device(imported, "n1", "REF");
    float a[N], b[N];
    run_once(c, a, N);
    run_once(imported, b, N);
    cr_expect_arr_eq(a, b, sizeof a);
    rn_compiled_model_free(imported);
    /* A flipped byte is caught by the checksum; a truncated blob too. */
    ((unsigned char *)blob)[size / 2] ^= 0xff;
    cr_expect_eq(rn_core_import_model(core, blob, size, "HETERO", NULL, 0, &imported),
                 RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "checksum") != NULL, "%s", rn_last_error());
    ((unsigned char *)blob)[size / 2] ^= 0xff;
    for (size_t cut = 0; cut < size; cut += size / 97 + 1) {
        imported = NULL;
        cr_expect_neq(rn_core_import_model(core, blob, cut, "HETERO", NULL, 0, &imported), RN_OK,
                      "a blob cut at %zu of %zu bytes", cut, size);
        cr_expect_null(imported);
    }
    free(blob);
    rn_compiled_model_free(c);
    /* CACHE_DIR: the second compile is read back from the cache. */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/hetero_cache_XXXXXX",
             getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    rn_property cache[] = {{"CACHE_DIR", dir}};
    cr_assert_eq(rn_core_set_property(core, NULL, cache, 1), RN_OK);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", NULL, 0, &c), RN_OK,
                     "%s", rn_last_error());
        cr_expect_str_eq(compiled_prop(c, "LOADED_FROM_CACHE"), i == 0 ? "NO" : "YES");
        run_once(c, b, N);
        cr_expect_arr_eq(a, b, sizeof a);
        rn_compiled_model_free(c);
    }
    rn_model_free(model);
    rn_core_free(core);
}

/* A LIVE key set on the compiled model reaches every part: with
 * ENABLE_PROFILING on, a run's profile has each part's nodes, named by the
 * device that ran them. A compile-time key is refused, naming it, and a
 * list with a bad value changes nothing. */
Test(hetero, live_properties_reach_every_part)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    cr_assert_str_eq(compiled_prop(c, "HETERO_PARTS"), "3");
    rn_property fixed = {"NUM_STREAMS", "4"};
    cr_expect_eq(rn_compiled_model_set_property(c, &fixed, 1), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "NUM_STREAMS") != NULL, "%s", rn_last_error());
    rn_property list[] = {{"ENABLE_PROFILING", "YES"}, {"LOG_LEVEL", "sometimes"}};
    cr_expect_eq(rn_compiled_model_set_property(c, list, 2), RN_INVALID_ARG);
    cr_expect_str_eq(compiled_prop(c, "ENABLE_PROFILING"), "NO");
    cr_assert_eq(rn_compiled_model_set_property(c, list, 1), RN_OK, "%s", rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "ENABLE_PROFILING"), "YES");
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(c, &r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK, "%s", rn_last_error());
    bool slowdev = false, ref = false;
    for (size_t i = 0; i < n; i++) {
        slowdev |= strncmp(info[i].exec_type, "SLOWDEV:", 8) == 0;
        ref |= strncmp(info[i].exec_type, "REF:", 4) == 0;
    }
    cr_expect(slowdev && ref, "profiled on SLOWDEV %d, on REF %d", slowdev, ref);
    rn_infer_request_free(r);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}
