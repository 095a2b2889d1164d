/* HETERO:GPU,CPU on the OpenCL device (PoCL here): a node the GPU refuses
 * runs on CPU between two GPU parts, with the crossings as transfer nodes,
 * and the outputs equal REF's. Skips, saying why, where no OpenCL device
 * can start. */
#include <criterion/criterion.h>

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"
#include "tests/hetero/models.h"

#define N 64

/* x → n0 Relu → n1 Floor → n2 Abs → y: the GPU has no Floor kernel. */
Test(hetero_gpu, op_the_gpu_refuses_runs_on_cpu_between_two_gpu_parts)
{
    rn_core *core = gpu_core();
    static const model_node nodes[] = {
        {"Relu", "n0", "x", NULL, "a"},
        {"Floor", "n1", "a", NULL, "b"},
        {"Abs", "n2", "b", NULL, "y"},
    };
    rn_model *model = model_build(core, nodes, 3, "y", N, false);
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:GPU,CPU", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "3");
    cr_expect_str_eq(compiled_prop(c, "HETERO_TRANSFERS"), "2");
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "GPU,CPU");
    expect_device(c, "n0", "GPU");
    expect_device(c, "n1", "CPU");
    expect_device(c, "n2", "GPU");
    float got[N];
    for (int round = 0; round < 2; round++) {
        run_once(c, got, N);
        expect_like_ref(core, model, got, N);
    }
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

/* Everything the GPU supports stays on it: one part, no transfer. */
Test(hetero_gpu, a_model_the_gpu_fully_supports_is_one_part)
{
    rn_core *core = gpu_core();
    rn_model *model = model_chain3(core, N); /* Relu, Neg, Abs */
    rn_compiled_model *c;
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:GPU,CPU", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "HETERO_PARTS"), "1");
    cr_expect_str_eq(compiled_prop(c, "HETERO_TRANSFERS"), "0");
    float got[N];
    run_once(c, got, N);
    expect_like_ref(core, model, got, N);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}
