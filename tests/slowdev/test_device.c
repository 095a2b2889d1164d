/* The generic plan-based device (plugins/api/device.c) as its descriptors
 * meet a user: the property table's keys, defaults and errors, a device's
 * own keys (SLOWDEV's, dlopen'ed), SUPPORTED_PROPERTIES of a device and of
 * a compiled model, and which keys a compiled model takes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "runnel/runnel.h"

#define SLOWDEV_SO "tests/slowdev/libslowdev.so"
#define RELU       "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"

static rn_core *core_with_slowdev(void)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_load_plugin(core, NULL, SLOWDEV_SO), RN_OK, "%s", rn_last_error());
    return core;
}

static const char *device_prop(rn_core *core, const char *device, const char *key)
{
    static char buf[4096];
    cr_assert_eq(rn_core_get_property(core, device, key, buf, sizeof buf), RN_OK, "%s %s: %s",
                 device, key, rn_last_error());
    return buf;
}

/* Whether space-separated `list` has `key`. */
static bool has_key(const char *list, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = strstr(list, key); p != NULL; p = strstr(p + 1, key))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

Test(device, defaults_come_from_the_table)
{
    rn_core *core = core_with_slowdev();
    const char *devices[] = {"REF", "CPU", "SLOWDEV"};
    for (size_t i = 0; i < 3; i++) {
        cr_expect_str_eq(device_prop(core, devices[i], "MODEL_PRIORITY"), "MEDIUM");
        cr_expect_str_eq(device_prop(core, devices[i], "PERFORMANCE_HINT"), "");
        cr_expect_str_eq(device_prop(core, devices[i], "NUM_STREAMS"), "1");
        cr_expect_str_eq(device_prop(core, devices[i], "LOG_LEVEL"), "LOG_NONE");
        cr_expect_str_eq(device_prop(core, devices[i], "RANGE_FOR_ASYNC_INFER_REQUESTS"), "1 64 1");
        cr_expect_str_eq(device_prop(core, devices[i], "EXECUTION_DEVICES"), devices[i]);
    }
    /* A device's own defaults: SLOWDEV's costs. */
    cr_expect_str_eq(device_prop(core, "SLOWDEV", "SLOWDEV_UPLOAD_US"), "200");
    cr_expect_str_eq(device_prop(core, "SLOWDEV", "SLOWDEV_FAIL_REQUESTS"), "NO");
    rn_core_free(core);
}

Test(device, every_supported_key_reads_back)
{
    rn_core *core = core_with_slowdev();
    const char *devices[] = {"REF", "CPU", "SLOWDEV"};
    for (size_t i = 0; i < 3; i++) {
        char keys[4096];
        snprintf(keys, sizeof keys, "%s", device_prop(core, devices[i], "SUPPORTED_PROPERTIES"));
        cr_expect(has_key(keys, "NUM_STREAMS") && has_key(keys, "FULL_DEVICE_NAME"), "%s: %s",
                  devices[i], keys);
        char *save = NULL;
        for (char *k = strtok_r(keys, " ", &save); k != NULL; k = strtok_r(NULL, " ", &save)) {
            char buf[4096];
            cr_expect_eq(rn_core_get_property(core, devices[i], k, buf, sizeof buf), RN_OK,
                         "%s %s: %s", devices[i], k, rn_last_error());
        }
    }
    const char *slow = device_prop(core, "SLOWDEV", "SUPPORTED_PROPERTIES");
    cr_expect(has_key(slow, "SLOWDEV_UPLOAD_US") && has_key(slow, "SLOWDEV_BYTES_UPLOADED"), "%s",
              slow);
    /* The host CPU rows are the CPU's only. */
    cr_expect(has_key(device_prop(core, "CPU", "SUPPORTED_PROPERTIES"), "CPU_BIND_THREAD"));
    cr_expect(!has_key(device_prop(core, "REF", "SUPPORTED_PROPERTIES"), "CPU_BIND_THREAD"));
    rn_core_free(core);
}

Test(device, unknown_keys_and_bad_values_name_the_key)
{
    rn_core *core = core_with_slowdev();
    char buf[256];
    cr_expect_eq(rn_core_get_property(core, "SLOWDEV", "NO_SUCH_KEY", buf, sizeof buf),
                 RN_NOT_FOUND);
    cr_expect(strstr(rn_last_error(), "NO_SUCH_KEY") != NULL, "%s", rn_last_error());
    cr_expect_eq(rn_core_get_property(core, "REF", "CPU_BIND_THREAD", buf, sizeof buf),
                 RN_NOT_FOUND);
    rn_property unknown[] = {{"NO_SUCH_KEY", "1"}};
    cr_expect_eq(rn_core_set_property(core, "SLOWDEV", unknown, 1), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "NO_SUCH_KEY") != NULL, "%s", rn_last_error());
    /* A bad value anywhere changes nothing, own keys and shared alike. */
    rn_property bad[] = {{"SLOWDEV_UPLOAD_US", "7"}, {"NUM_STREAMS", "-3"}};
    cr_expect_eq(rn_core_set_property(core, "SLOWDEV", bad, 2), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "NUM_STREAMS") != NULL, "%s", rn_last_error());
    cr_expect_str_eq(device_prop(core, "SLOWDEV", "SLOWDEV_UPLOAD_US"), "200");
    rn_property own_bad[] = {{"SLOWDEV_UPLOAD_US", "soon"}};
    cr_expect_eq(rn_core_set_property(core, "SLOWDEV", own_bad, 1), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "SLOWDEV_UPLOAD_US") != NULL, "%s", rn_last_error());
    rn_property good[] = {{"SLOWDEV_UPLOAD_US", "7"}, {"PERFORMANCE_HINT", "THROUGHPUT"}};
    cr_expect_eq(rn_core_set_property(core, "SLOWDEV", good, 2), RN_OK, "%s", rn_last_error());
    cr_expect_str_eq(device_prop(core, "SLOWDEV", "SLOWDEV_UPLOAD_US"), "7");
    cr_expect_str_eq(device_prop(core, "SLOWDEV", "PERFORMANCE_HINT"), "THROUGHPUT");
    /* Read-only keys are not set. */
    rn_property ro[] = {{"FULL_DEVICE_NAME", "mine"}};
    cr_expect_neq(rn_core_set_property(core, "REF", ro, 1), RN_OK);
    rn_core_free(core);
}

Test(device, a_compiled_model_takes_only_its_live_keys)
{
    rn_core *core = core_with_slowdev();
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, RELU, &model), RN_OK, "%s", rn_last_error());
    rn_property compile[] = {{"SLOWDEV_EXECUTE_US", "3"}};
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "SLOWDEV", compile, 1, &c), RN_OK, "%s",
                 rn_last_error());
    char buf[4096];
    cr_assert_eq(rn_compiled_model_get_property(c, "SUPPORTED_PROPERTIES", buf, sizeof buf), RN_OK,
                 "%s", rn_last_error());
    cr_expect(has_key(buf, "NETWORK_NAME") && has_key(buf, "OPTIMAL_NUMBER_OF_INFER_REQUESTS") &&
                  has_key(buf, "SLOWDEV_EXECUTE_US"),
              "%s", buf);
    cr_assert_eq(rn_compiled_model_get_property(c, "SLOWDEV_EXECUTE_US", buf, sizeof buf), RN_OK);
    cr_expect_str_eq(buf, "3");
    cr_assert_eq(rn_compiled_model_get_property(c, "EXECUTION_DEVICES", buf, sizeof buf), RN_OK);
    cr_expect_str_eq(buf, "SLOWDEV");
    rn_property live[] = {{"ENABLE_PROFILING", "YES"}};
    cr_expect_eq(rn_compiled_model_set_property(c, live, 1), RN_OK, "%s", rn_last_error());
    rn_property fixed[] = {{"SLOWDEV_EXECUTE_US", "9"}};
    cr_expect_eq(rn_compiled_model_set_property(c, fixed, 1), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "fixed") != NULL, "%s", rn_last_error());
    rn_property shared_fixed[] = {{"NUM_STREAMS", "2"}};
    cr_expect_eq(rn_compiled_model_set_property(c, shared_fixed, 1), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "NUM_STREAMS") != NULL, "%s", rn_last_error());
    cr_expect_eq(rn_compiled_model_get_property(c, "NO_SUCH_KEY", buf, sizeof buf), RN_NOT_FOUND);
    cr_expect(strstr(rn_last_error(), "NO_SUCH_KEY") != NULL, "%s", rn_last_error());
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(device, a_refused_op_names_the_node_and_the_key)
{
    rn_core *core = core_with_slowdev();
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, RELU, &model), RN_OK, "%s", rn_last_error());
    rn_property refuse[] = {{"SLOWDEV_UNSUPPORTED_OPS", "Abs,Relu"}};
    rn_compiled_model *c;
    cr_expect_eq(rn_core_compile_model(core, model, "SLOWDEV", refuse, 1, &c), RN_UNSUPPORTED);
    cr_expect(strstr(rn_last_error(), "Relu") != NULL &&
                  strstr(rn_last_error(), "SLOWDEV_UNSUPPORTED_OPS") != NULL,
              "%s", rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}
