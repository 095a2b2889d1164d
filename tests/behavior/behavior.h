/* The behaviour suite every plugin must pass: shared set-up. Each test runs
 * once per device (REF, CPU, SLOWDEV and GPU loaded from their shared
 * objects — GPU skips, saying why, where the machine has no OpenCL device,
 * and fails where its plugin cannot load for any other reason —,
 * HETERO over SLOWDEV, which refuses Conv, and REF, HETERO over GPU and
 * CPU, and AUTO choosing between CPU and REF). */
#ifndef RUNNEL_TESTS_BEHAVIOR_BEHAVIOR_H
#define RUNNEL_TESTS_BEHAVIOR_BEHAVIOR_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"

#define NODE_DIR   "/usr/share/libonnx-testdata/data/node"
#define SLOWDEV_SO "tests/slowdev/libslowdev.so"
#define LIGHT_DIR  ".cache/onnx-1.22.0/light"

#include "tests/gpu/gpu_core.h"  /* GPU_SO, gpu_load_or_skip */
#include "tests/gpu/pocl_lsan.h" /* the GPU device on PoCL */

typedef struct device_param {
    char name[32];
} device_param;

#define BEHAVIOR_DEVICES(suite, test)                                                              \
    ParameterizedTestParameters(suite, test)                                                       \
    {                                                                                              \
        static device_param devices[] = {{"REF"},                                                  \
                                         {"SLOWDEV"},                                              \
                                         {"CPU"},                                                  \
                                         {"GPU"},                                                  \
                                         {"HETERO:SLOWDEV,REF"},                                   \
                                         {"HETERO:GPU,CPU"},                                       \
                                         {"AUTO:CPU,REF"}};                                        \
        return cr_make_param_array(device_param, devices, sizeof devices / sizeof devices[0]);     \
    }

/* The devices that export their compiled models (not AUTO, whose blob
 * would be its device's). */
#define BEHAVIOR_EXPORT_DEVICES(suite, test)                                                       \
    ParameterizedTestParameters(suite, test)                                                       \
    {                                                                                              \
        static device_param devices[] = {                                                          \
            {"REF"}, {"SLOWDEV"}, {"CPU"}, {"GPU"}, {"HETERO:SLOWDEV,REF"}};                       \
        return cr_make_param_array(device_param, devices, sizeof devices / sizeof devices[0]);     \
    }

/* The devices with their own memory and containers (not HETERO, whose
 * contexts are its devices' and whose container tests/hetero checks). */
#define BEHAVIOR_PHYSICAL_DEVICES(suite, test)                                                     \
    ParameterizedTestParameters(suite, test)                                                       \
    {                                                                                              \
        static device_param devices[] = {{"REF"}, {"SLOWDEV"}, {"CPU"}, {"GPU"}};                  \
        return cr_make_param_array(device_param, devices, sizeof devices / sizeof devices[0]);     \
    }

/* Whether the device's requests go through SLOWDEV's stages (SLOWDEV, or
 * HETERO putting test_add on SLOWDEV, its first device). */
static inline bool behavior_on_slowdev(const char *device)
{
    return strcmp(device, "SLOWDEV") == 0 || strncmp(device, "HETERO:SLOWDEV", 14) == 0;
}

/* Whether the device's nodes run on the GPU device: GPU, or HETERO with GPU
 * first (test_add runs whole on the first device of a HETERO list). */
static inline bool behavior_on_gpu(const char *device)
{
    return strcmp(device, "GPU") == 0 || strncmp(device, "HETERO:GPU", 10) == 0;
}

/* A core with the device available (SLOWDEV loaded, its stages short). */
static inline rn_core *behavior_core(const char *device)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    if (strstr(device, "SLOWDEV") != NULL) {
        cr_assert_eq(rn_core_load_plugin(core, NULL, SLOWDEV_SO), RN_OK, "%s", rn_last_error());
        rn_property costs[] = {{"SLOWDEV_UPLOAD_US", "100"},
                               {"SLOWDEV_EXECUTE_US", "100"},
                               {"SLOWDEV_WAIT_US", "100"},
                               {"SLOWDEV_DOWNLOAD_US", "100"},
                               {"SLOWDEV_UNSUPPORTED_OPS", strchr(device, ':') ? "Conv" : ""}};
        cr_assert_eq(rn_core_set_property(core, "SLOWDEV", costs, 5), RN_OK, "%s", rn_last_error());
    }
    if (strstr(device, "GPU") != NULL)
        gpu_load_or_skip(core); /* skips only where no OpenCL device exists */
    return core;
}

/* GPU runs static shapes only: a model whose shapes come from a run-time
 * input (a Reshape fed its shape) is refused at compile time. */
static inline void behavior_skip_runtime_shapes(const char *device)
{
    if (strcmp(device, "GPU") == 0)
        cr_skip_test("GPU: this case needs shapes computed at run time, and the device's kernels "
                     "run static shapes only (docs/gpu.md)");
}

typedef struct behavior_model {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
} behavior_model;

/* Reads the model of a node test case of libonnx-testdata. */
static inline void behavior_read_model(rn_core *core, const char *case_name, rn_model **model)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, case_name);
    cr_assert_eq(rn_core_read_model(core, path, model), RN_OK, "%s", rn_last_error());
}

static inline void behavior_open(behavior_model *m, const char *device, const char *case_name,
                                 const rn_property *props, size_t n)
{
    m->core = behavior_core(device);
    behavior_read_model(m->core, case_name, &m->model);
    cr_assert_eq(rn_core_compile_model(m->core, m->model, device, props, n, &m->compiled), RN_OK,
                 "%s", rn_last_error());
}

static inline void behavior_close(behavior_model *m)
{
    rn_compiled_model_free(m->compiled);
    rn_model_free(m->model);
    rn_core_free(m->core);
}

/* test_add's inputs, so that the sum is k * i, and the check of the sum. */
static inline void behavior_fill_add(float *x, float *y, size_t n, float k)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = (k - 1.0f) * (float)i;
    }
}

static inline void behavior_expect_sum(const float *z, size_t n, float k)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(z[i], k * (float)i, 1e-4, "element %zu", i);
}

/* test_add: a request whose inputs sum to k * i. */
static inline rn_infer_request *behavior_add_request(behavior_model *m, float k)
{
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(m->compiled, &r), RN_OK, "%s",
                 rn_last_error());
    rn_tensor *a, *b;
    rn_infer_request_get_input_tensor(r, 0, &a);
    rn_infer_request_get_input_tensor(r, 1, &b);
    behavior_fill_add(rn_tensor_data(a), rn_tensor_data(b), rn_tensor_element_count(a), k);
    return r;
}

static inline void behavior_check_add(rn_infer_request *r, float k)
{
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK, "%s", rn_last_error());
    behavior_expect_sum(rn_tensor_data(out), rn_tensor_element_count(out), k);
}

#endif /* RUNNEL_TESTS_BEHAVIOR_BEHAVIOR_H */
