/* What the GPU tests share: a core with the GPU device (plugins/gpu)
 * loaded, the test skipped, saying why, where the device cannot start (no
 * OpenCL platform or device); deterministic inputs. Include after
 * criterion/criterion.h. */
#ifndef RUNNEL_TESTS_GPU_GPU_CORE_H
#define RUNNEL_TESTS_GPU_GPU_CORE_H

#include <stdint.h>
#include <stdio.h>

#include "runnel/runnel.h"

#define GPU_SO "plugins/gpu/libgpu.so"

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

/* Fills every input of r (a request of cm) with deterministic values in
 * [-1, 1). */
static inline void gpu_fill_inputs(rn_compiled_model *cm, rn_infer_request *r)
{
    for (size_t i = 0; i < rn_compiled_model_input_count(cm); i++) {
        rn_tensor *t;
        cr_assert_eq(rn_infer_request_get_input_tensor(r, i, &t), RN_OK, "%s", rn_last_error());
        float *x = rn_tensor_data(t);
        uint32_t s = (uint32_t)i * 2654435761u + 7;
        for (size_t k = 0; k < rn_tensor_element_count(t); k++) {
            s = s * 1664525u + 1013904223u;
            x[k] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
        }
    }
}

#endif /* RUNNEL_TESTS_GPU_GPU_CORE_H */
