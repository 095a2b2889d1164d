/* A core with the GPU device (plugins/gpu) loaded, for the tests that need
 * it; the test is skipped, saying why, where the device cannot start (no
 * OpenCL platform or device). Include after criterion/criterion.h. */
#ifndef RUNNEL_TESTS_GPU_GPU_CORE_H
#define RUNNEL_TESTS_GPU_GPU_CORE_H

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

#endif /* RUNNEL_TESTS_GPU_GPU_CORE_H */
