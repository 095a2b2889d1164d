/* What the tests that start the GPU device share: a core with the plugin
 * loaded (or the test skipped, saying why), and deterministic inputs. */
#ifndef RUNNEL_TESTS_GPU_GPU_CORE_H
#define RUNNEL_TESTS_GPU_GPU_CORE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "runnel/runnel.h"

#define GPU_SO "plugins/gpu/libgpu.so"

/* A core with the GPU loaded; skips the test, with the reason, when the
 * plugin cannot start (no OpenCL platform or device). */
static inline rn_core *gpu_core(void)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    if (rn_core_load_plugin(core, NULL, GPU_SO) != RN_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", rn_last_error());
        rn_core_free(core);
        cr_skip_test("the GPU device cannot start here: %s", why);
    }
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
