/* What the tests that start the GPU device share: a core with the plugin
 * loaded (or the test skipped, saying why, where no OpenCL device exists),
 * and deterministic inputs. */
#ifndef RUNNEL_TESTS_GPU_GPU_CORE_H
#define RUNNEL_TESTS_GPU_GPU_CORE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runnel/runnel.h"

#define GPU_SO "plugins/gpu/libgpu.so"

/* Loads libgpu.so into `core`. Where the machine has no OpenCL platform or
 * device, the plugin refuses saying so, and the test skips with that reason
 * (the core freed); any other failure to load (dlopen, a missing symbol, the
 * ABI version, an OpenCL call failing on a device that exists) fails the
 * test: a regression that breaks the plugin must not turn into skips. */
static inline void gpu_load_or_skip(rn_core *core)
{
    if (rn_core_load_plugin(core, NULL, GPU_SO) == RN_OK)
        return;
    char why[512];
    snprintf(why, sizeof why, "%s", rn_last_error());
    rn_core_free(core);
    if (strstr(why, "GPU: no OpenCL platform") != NULL ||
        strstr(why, "GPU: the OpenCL platforms have no GPU, CPU or accelerator device") != NULL)
        cr_skip_test("no OpenCL device here: %s", why);
    cr_assert_fail("%s failed to load, and not for want of an OpenCL device: %s", GPU_SO, why);
}

/* A core with the GPU loaded (see gpu_load_or_skip). */
static inline rn_core *gpu_core(void)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    gpu_load_or_skip(core);
    return core;
}

/* Deterministic inputs in [-1, 1). */
static inline void gpu_fill(float *x, size_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    }
}

/* Fills every input of r (a request of cm) with gpu_fill's values. */
static inline void gpu_fill_inputs(rn_compiled_model *cm, rn_infer_request *r)
{
    for (size_t i = 0; i < rn_compiled_model_input_count(cm); i++) {
        rn_tensor *t;
        cr_assert_eq(rn_infer_request_get_input_tensor(r, i, &t), RN_OK, "%s", rn_last_error());
        gpu_fill(rn_tensor_data(t), rn_tensor_element_count(t), (uint32_t)i + 7);
    }
}

#endif /* RUNNEL_TESTS_GPU_GPU_CORE_H */
