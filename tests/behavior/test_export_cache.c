/* Behaviour suite: import_export and cache, on every device. */
#include <dirent.h>
#include <sys/stat.h>

#include "tests/behavior/behavior.h"

static void run_and_check_add(rn_compiled_model *cm, float k)
{
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    rn_tensor *a, *b;
    rn_infer_request_get_input_tensor(r, 0, &a);
    rn_infer_request_get_input_tensor(r, 1, &b);
    float *x = rn_tensor_data(a), *y = rn_tensor_data(b);
    for (size_t i = 0; i < rn_tensor_element_count(a); i++) {
        x[i] = (float)i;
        y[i] = (k - 1.0f) * (float)i;
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    behavior_check_add(r, k);
    rn_infer_request_free(r);
}

BEHAVIOR_EXPORT_DEVICES(import_export, round_trip_gives_identical_outputs)
ParameterizedTest(device_param *d, import_export, round_trip_gives_identical_outputs)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    void *blob;
    size_t size;
    cr_assert_eq(rn_compiled_model_export(m.compiled, &blob, &size), RN_OK, "%s", rn_last_error());
    rn_compiled_model *imported;
    cr_assert_eq(rn_core_import_model(m.core, blob, size, d->name, NULL, 0, &imported), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_input_count(imported), 2);
    rn_port a, b;
    rn_compiled_model_input(m.compiled, 0, &a);
    rn_compiled_model_input(imported, 0, &b);
    cr_assert_str_eq(a.name, b.name);
    run_and_check_add(m.compiled, 3.0f);
    run_and_check_add(imported, 3.0f);
    rn_compiled_model_free(imported);
    free(blob);
    behavior_close(&m);
}

BEHAVIOR_PHYSICAL_DEVICES(import_export, each_container_check_names_itself)
ParameterizedTest(device_param *d, import_export, each_container_check_names_itself)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    void *blob;
    size_t size;
    cr_assert_eq(rn_compiled_model_export(m.compiled, &blob, &size), RN_OK);
    unsigned char *bad = malloc(size);
    rn_compiled_model *cm = NULL;
    /* Magic. */
    memcpy(bad, blob, size);
    bad[0] ^= 0xff;
    cr_assert_neq(rn_core_import_model(m.core, bad, size, d->name, NULL, 0, &cm), RN_OK);
    cr_assert(strstr(rn_last_error(), "magic") != NULL, "%s", rn_last_error());
    /* Format version (bytes 8..11). */
    memcpy(bad, blob, size);
    bad[8] = 99;
    cr_assert_neq(rn_core_import_model(m.core, bad, size, d->name, NULL, 0, &cm), RN_OK);
    cr_assert(strstr(rn_last_error(), "version") != NULL, "%s", rn_last_error());
    /* Checksum: a byte in the middle. */
    memcpy(bad, blob, size);
    bad[size / 2] ^= 0x5a;
    cr_assert_neq(rn_core_import_model(m.core, bad, size, d->name, NULL, 0, &cm), RN_OK);
    cr_assert(strstr(rn_last_error(), "checksum") != NULL, "%s", rn_last_error());
    /* Truncation. */
    cr_assert_neq(rn_core_import_model(m.core, blob, size / 3, d->name, NULL, 0, &cm), RN_OK);
    /* Another device. */
    const char *other = strcmp(d->name, "REF") == 0 ? "SLOWDEV" : "REF";
    if (strcmp(other, "SLOWDEV") == 0)
        cr_assert_eq(rn_core_load_plugin(m.core, NULL, SLOWDEV_SO), RN_OK);
    cr_assert_neq(rn_core_import_model(m.core, blob, size, other, NULL, 0, &cm), RN_OK);
    cr_assert(strstr(rn_last_error(), d->name) != NULL, "%s", rn_last_error());
    cr_assert_null(cm);
    free(bad);
    free(blob);
    behavior_close(&m);
}

/* A fresh cache folder under the test's temporary folder. */
static void make_cache_dir(char *buf, size_t size)
{
    const char *tmp = getenv("TEST_TMPDIR");
    snprintf(buf, size, "%s/cache_XXXXXX", tmp != NULL ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(buf));
}

static int count_entries(const char *dir)
{
    DIR *dh = opendir(dir);
    cr_assert_not_null(dh);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL)
        n += strstr(e->d_name, ".rnblob") != NULL;
    closedir(dh);
    return n;
}

static rn_compiled_model *compile_cached(rn_core *core, rn_model *model, const char *device,
                                         const char *expect_loaded)
{
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, device, NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    char buf[8];
    cr_assert_eq(rn_compiled_model_get_property(cm, "LOADED_FROM_CACHE", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, expect_loaded);
    return cm;
}

BEHAVIOR_EXPORT_DEVICES(cache, miss_then_hit_then_stale_entry_is_replaced)
ParameterizedTest(device_param *d, cache, miss_then_hit_then_stale_entry_is_replaced)
{
    char dir[512];
    make_cache_dir(dir, sizeof dir);
    rn_core *core = behavior_core(d->name);
    rn_property cache[] = {{"CACHE_DIR", dir}};
    cr_assert_eq(rn_core_set_property(core, NULL, cache, 1), RN_OK, "%s", rn_last_error());
    char back[512];
    cr_assert_eq(rn_core_get_property(core, NULL, "CACHE_DIR", back, sizeof back), RN_OK);
    cr_assert_str_eq(back, dir);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK);

    rn_compiled_model *cm = compile_cached(core, model, d->name, "NO");
    cr_assert_eq(count_entries(dir), 1, "a miss stores the blob");
    run_and_check_add(cm, 2.0f);
    rn_compiled_model_free(cm);

    cm = compile_cached(core, model, d->name, "YES");
    run_and_check_add(cm, 2.0f);
    rn_compiled_model_free(cm);

    /* Corrupt the entry: the next compile recompiles and replaces it. */
    DIR *dh = opendir(dir);
    struct dirent *e;
    char entry[1024] = "";
    while ((e = readdir(dh)) != NULL)
        if (strstr(e->d_name, ".rnblob") != NULL)
            snprintf(entry, sizeof entry, "%s/%s", dir, e->d_name);
    closedir(dh);
    FILE *f = fopen(entry, "r+b");
    cr_assert_not_null(f);
    fseek(f, 40, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
    cm = compile_cached(core, model, d->name, "NO");
    run_and_check_add(cm, 2.0f);
    rn_compiled_model_free(cm);
    cm = compile_cached(core, model, d->name, "YES");
    rn_compiled_model_free(cm);

    /* Other properties are another entry. */
    rn_property prof[] = {{"ENABLE_PROFILING", "YES"}};
    cr_assert_eq(rn_core_compile_model(core, model, d->name, prof, 1, &cm), RN_OK);
    cr_assert_eq(count_entries(dir), 2);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

BEHAVIOR_EXPORT_DEVICES(cache, unknown_core_property_is_refused)
ParameterizedTest(device_param *d, cache, unknown_core_property_is_refused)
{
    rn_core *core = behavior_core(d->name);
    rn_property p[] = {{"NUM_STREAMS", "2"}};
    cr_assert_eq(rn_core_set_property(core, NULL, p, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NUM_STREAMS") != NULL);
    rn_core_free(core);
}
