/* query, run as a subprocess: devices, their properties (RO/RW) and
 * values, failed plugins, versions, JSON, errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/version.h"
#include "tests/tools/tool_util.h"

static json_value *query_json(const char *const *args, const char *const *env)
{
    const char *argv[16] = {"-json"};
    size_t n = 1;
    for (size_t i = 0; args != NULL && args[i] != NULL; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    tool_run r = tool_exec("query", argv, env);
    cr_assert_eq(r.status, 0, "query failed: %s", r.err);
    char error[256];
    json_value *root = json_parse(r.out, error, sizeof error);
    cr_assert_not_null(root, "query -json does not parse: %s\n%s", error, r.out);
    tool_run_free(&r);
    return root;
}

static const json_value *device(const json_value *root, const char *name)
{
    const json_value *devices = json_member(root, "devices");
    cr_assert(devices != NULL && devices->type == JSON_ARRAY);
    for (size_t i = 0; i < devices->n; i++) {
        const json_value *n = json_member(devices->items[i], "name");
        if (n != NULL && n->type == JSON_STRING && strcmp(n->string, name) == 0)
            return devices->items[i];
    }
    return NULL;
}

static const json_value *property(const json_value *dev, const char *key)
{
    const json_value *props = json_member(dev, "properties");
    cr_assert(props != NULL && props->type == JSON_ARRAY);
    for (size_t i = 0; i < props->n; i++)
        if (strcmp(json_member(props->items[i], "key")->string, key) == 0)
            return props->items[i];
    return NULL;
}

static const char *access_of(const json_value *dev, const char *key)
{
    const json_value *p = property(dev, key);
    cr_assert_not_null(p, "no property %s", key);
    const json_value *a = json_member(p, "access");
    cr_assert(a != NULL && a->type == JSON_STRING);
    return a->string;
}

Test(query, lists_ref_with_its_properties_marked_ro_or_rw)
{
    tool_run r = tool_exec("query", NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *lines[] = {"REF\n",
                           "FULL_DEVICE_NAME (RO): ",
                           "SUPPORTED_PROPERTIES (RO): ",
                           "PERFORMANCE_HINT (RW): ",
                           "NUM_STREAMS (RW): ",
                           "ENABLE_PROFILING (RW): NO",
                           "CACHE_DIR (RW)",
                           "version: " RN_VERSION_STRING "\n",
                           "Devices that failed to load"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_expect(strstr(r.out, lines[i]) != NULL, "'%s' is not in:\n%s", lines[i], r.out);
    tool_run_free(&r);
}

Test(query, json_lists_every_supported_property_with_a_value)
{
    json_value *root = query_json(NULL, NULL);
    cr_expect_str_eq(json_member(root, "runnel_version")->string, RN_VERSION_STRING);
    const json_value *ref = device(root, "REF");
    cr_assert_not_null(ref, "REF is not listed");
    const json_value *supported = json_member(property(ref, "SUPPORTED_PROPERTIES"), "value");
    cr_assert(supported != NULL && supported->type == JSON_STRING);
    /* Every key SUPPORTED_PROPERTIES names has its own entry with a value. */
    char *keys = strdup(supported->string);
    size_t count = 0;
    for (char *save = NULL, *k = strtok_r(keys, " ,", &save); k; k = strtok_r(NULL, " ,", &save)) {
        const json_value *p = property(ref, k);
        cr_expect_not_null(p, "%s has no entry", k);
        if (p != NULL)
            cr_expect_eq(json_member(p, "value")->type, JSON_STRING, "%s has no value", k);
        count++;
    }
    free(keys);
    cr_expect_eq(json_member(ref, "properties")->n, count);
    cr_expect_str_eq(access_of(ref, "SUPPORTED_PROPERTIES"), "RO");
    cr_expect_str_eq(access_of(ref, "FULL_DEVICE_NAME"), "RO");
    cr_expect_str_eq(access_of(ref, "PERFORMANCE_HINT"), "RW");
    cr_expect_str_eq(access_of(ref, "INFERENCE_NUM_THREADS"), "RW");
    cr_expect_str_eq(json_member(ref, "version")->string, RN_VERSION_STRING);
    json_free(root);
}

Test(query, d_restricts_to_one_device)
{
    const char *args[] = {"-d", "REF", NULL};
    json_value *root = query_json(args, NULL);
    cr_expect_eq(json_member(root, "devices")->n, 1);
    cr_expect_not_null(device(root, "REF"));
    json_free(root);
}

/* A plugins file with SLOWDEV (which loads) and TESTDEV (which fails). */
static void plugins_file(char *path, size_t size)
{
    char dir[512];
    tool_temp_dir(dir, sizeof dir);
    snprintf(path, size, "%s/plugins.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "SLOWDEV %s\nTESTDEV %s\n", SLOWDEV_LIB, FAILING_LIB);
    fclose(f);
}

Test(query, lists_dynamic_devices_and_the_ones_that_failed_with_why)
{
    char path[600];
    plugins_file(path, sizeof path);
    const char *args[] = {"-plugins", path, NULL};
    json_value *root = query_json(args, NULL);
    const json_value *slow = device(root, "SLOWDEV");
    cr_assert_not_null(slow, "SLOWDEV is not listed");
    /* SLOWDEV, a descriptor on the generic device, answers
     * SUPPORTED_PROPERTIES with the shared keys and its own. */
    cr_expect_eq(json_member(slow, "supported_properties_reported")->boolean, true);
    cr_expect_str_eq(access_of(slow, "FULL_DEVICE_NAME"), "RO");
    cr_expect_str_eq(access_of(slow, "NUM_STREAMS"), "RW");
    cr_expect_str_eq(access_of(slow, "SLOWDEV_UPLOAD_US"), "RW");
    cr_expect_str_eq(access_of(slow, "SLOWDEV_BYTES_UPLOADED"), "RO");
    cr_expect_eq(json_member(device(root, "REF"), "supported_properties_reported")->boolean, true);
    cr_expect_null(device(root, "TESTDEV"));
    const json_value *failed = json_member(root, "failed_devices");
    cr_assert(failed != NULL && failed->type == JSON_ARRAY && failed->n == 1);
    cr_expect_str_eq(json_member(failed->items[0], "name")->string, "TESTDEV");
    cr_expect(strstr(json_member(failed->items[0], "reason")->string, "accelerator") != NULL);
    json_free(root);
    /* The same through $RUNNEL_PLUGINS, in text. */
    char env[700];
    snprintf(env, sizeof env, "RUNNEL_PLUGINS=%s", path);
    const char *envs[] = {env, NULL};
    tool_run r = tool_exec("query", NULL, envs);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "SLOWDEV\n") != NULL);
    cr_expect(strstr(r.out, "    TESTDEV: ") != NULL, "%s", r.out);
    tool_run_free(&r);
}

Test(query, an_absent_or_failed_device_is_a_one_line_error)
{
    const char *absent[] = {"-d", "NOPE", NULL};
    tool_run r = tool_exec("query", absent, NULL);
    cr_expect_eq(r.status, 1);
    cr_expect_eq(tool_count_lines(r.err), 1, "%s", r.err);
    cr_expect(strstr(r.err, "device 'NOPE' is not available") != NULL, "%s", r.err);
    tool_run_free(&r);
    char path[600];
    plugins_file(path, sizeof path);
    const char *failed[] = {"-d", "TESTDEV", "-plugins", path, NULL};
    r = tool_exec("query", failed, NULL);
    cr_expect_eq(r.status, 1);
    cr_expect_eq(tool_count_lines(r.err), 1, "%s", r.err);
    cr_expect(strstr(r.err, "failed to load") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "accelerator") != NULL, "%s", r.err);
    tool_run_free(&r);
    const char *bad[] = {"-x", NULL};
    r = tool_exec("query", bad, NULL);
    cr_expect_eq(r.status, 2);
    cr_expect_eq(tool_count_lines(r.err), 1, "%s", r.err);
    cr_expect(strstr(r.err, "unknown flag '-x'") != NULL, "%s", r.err);
    tool_run_free(&r);
}

/* -plugins FILE names a device the installed plugins file names too: the
 * file's plugin is the one that runs (as with $RUNNEL_PLUGINS), not the
 * installed one, which would otherwise have kept the name. */
Test(query, a_plugins_file_replaces_an_installed_device_of_the_same_name)
{
    char dir[512], installed[600], mine[600], testdev[4096];
    tool_temp_dir(dir, sizeof dir);
    cr_assert_not_null(realpath("tests/plugins/libtestdev.so", testdev));
    snprintf(installed, sizeof installed, "%s/installed.txt", dir);
    snprintf(mine, sizeof mine, "%s/mine.txt", dir);
    FILE *f = fopen(installed, "w");
    cr_assert_not_null(f);
    fprintf(f, "XDEV %s\n", testdev);
    fclose(f);
    f = fopen(mine, "w");
    cr_assert_not_null(f);
    fprintf(f, "XDEV %s\n", SLOWDEV_LIB);
    fclose(f);
    char env[700];
    snprintf(env, sizeof env, "RUNNEL_INSTALLED_PLUGINS=%s", installed);
    const char *envs[] = {env, NULL};
    /* Installed alone, XDEV is the test device: no SLOWDEV keys. */
    const char *alone[] = {"-d", "XDEV", NULL};
    json_value *root = query_json(alone, envs);
    const json_value *x = device(root, "XDEV");
    cr_assert_not_null(x, "the installed XDEV is not listed");
    cr_expect_null(property(x, "SLOWDEV_UPLOAD_US"));
    json_free(root);
    /* With -plugins, SLOWDEV answers as XDEV. */
    const char *args[] = {"-d", "XDEV", "-plugins", mine, NULL};
    root = query_json(args, envs);
    x = device(root, "XDEV");
    cr_assert_not_null(x, "XDEV is not listed with -plugins");
    cr_expect_str_eq(access_of(x, "SLOWDEV_UPLOAD_US"), "RW");
    json_free(root);
}
