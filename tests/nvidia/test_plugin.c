/* The NVIDIA plugin as the Core loads it (dlopen, rn_plugin_entry): where
 * CUDA cannot start (no driver, as on the CI machines, or no device) the
 * device is refused with that reason, recorded as a failed device, and REF
 * still compiles and runs. Where a GPU is present the device registers and
 * reports its properties; the on-device checks are the harness's
 * (scripts/nvidia-harness, docs/nvidia.md). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"

#define PLUGIN "plugins/nvidia/libnvidia.so"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* Loads the plugin; true when the device started. *reason: why not. */
static bool load(rn_core *core, char *reason, size_t size)
{
    cr_assert_eq(access(PLUGIN, R_OK), 0, "%s is missing from the runfiles", PLUGIN);
    rn_status st = rn_core_load_plugin(core, "NVIDIA", PLUGIN);
    snprintf(reason, size, "%s", st == RN_OK ? "" : rn_last_error());
    if (st != RN_OK)
        cr_assert_eq(st, RN_DEVICE_ERROR, "%s: %s", rn_status_name(st), rn_last_error());
    return st == RN_OK;
}

Test(nvidia, refuses_without_a_driver_or_device_and_says_why)
{
    rn_core *core;
    OK(rn_core_create(&core));
    size_t failed_before = rn_core_failed_device_count(core);
    char reason[1024];
    if (load(core, reason, sizeof reason)) {
        rn_core_free(core);
        cr_skip_test("a CUDA device is present: the refusal cannot be observed here");
    }
    /* The message is the one create gives for this machine. */
    cr_assert(strstr(reason, "device NVIDIA cannot start") != NULL, "%s", reason);
    cr_assert(strstr(reason, "no CUDA driver") != NULL ||
                  strstr(reason, "no CUDA device") != NULL ||
                  strstr(reason, "older than required") != NULL,
              "%s", reason);
    cr_assert(strstr(reason, "cudaGetDeviceCount") != NULL ||
                  strstr(reason, "older than required") != NULL,
              "the CUDA error is named: %s", reason);
    /* Recorded as a failed device; absent from the devices. */
    cr_assert_eq(rn_core_failed_device_count(core), failed_before + 1);
    const char *name, *why;
    OK(rn_core_failed_device(core, failed_before, &name, &why));
    cr_assert_str_eq(name, "NVIDIA");
    cr_assert(strstr(why, "no CUDA") != NULL || strstr(why, "older") != NULL, "%s", why);
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        cr_assert_str_neq(rn_core_device_name(core, i), "NVIDIA");
    char buf[64];
    cr_assert_neq(rn_core_get_property(core, "NVIDIA", "FULL_DEVICE_NAME", buf, sizeof buf), RN_OK);
    rn_core_free(core);
}

/* Light SqueezeNet from the onnx wheel (scripts/setup). */
static const char *resnet(void)
{
    const char *paths[] = {".cache/onnx-1.22.0/light/light_squeezenet.onnx",
                           "../.cache/onnx-1.22.0/light/light_squeezenet.onnx"};
    for (size_t i = 0; i < 2; i++)
        if (access(paths[i], R_OK) == 0)
            return paths[i];
    return NULL;
}

Test(nvidia, other_devices_work_after_the_refusal)
{
    const char *path = resnet();
    if (path == NULL)
        cr_skip_test("light_squeezenet.onnx is missing: run scripts/setup");
    rn_core *core;
    OK(rn_core_create(&core));
    char reason[1024];
    bool started = load(core, reason, sizeof reason);
    rn_model *model;
    OK(rn_core_read_model(core, path, &model));
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "REF", NULL, 0, &cm));
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    OK(rn_infer_request_infer(r));
    rn_tensor *out;
    OK(rn_infer_request_get_output_tensor(r, 0, &out));
    cr_assert_eq(rn_tensor_element_count(out), 1000);
    /* Compiling for the absent device names it. */
    if (!started) {
        rn_compiled_model *none;
        cr_assert_neq(rn_core_compile_model(core, model, "NVIDIA", NULL, 0, &none), RN_OK);
        cr_assert(strstr(rn_last_error(), "NVIDIA") != NULL, "%s", rn_last_error());
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(nvidia, reports_its_properties_on_a_gpu)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char reason[1024];
    if (!load(core, reason, sizeof reason)) {
        rn_core_free(core);
        cr_skip_test("no GPU here (%s): the device's properties are checked by the harness on a "
                     "GPU machine",
                     reason);
    }
    char buf[256];
    OK(rn_core_get_property(core, "NVIDIA", "DEVICE_ARCHITECTURE", buf, sizeof buf));
    cr_assert(strncmp(buf, "sm_", 3) == 0, "%s", buf);
    OK(rn_core_get_property(core, "NVIDIA", "NVIDIA_CUDNN_VERSION", buf, sizeof buf));
    cr_assert(buf[0] >= '9', "%s", buf);
    rn_core_free(core);
}
