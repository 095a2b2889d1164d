/* Resource limits of reading and compiling (docs/reliability.md):
 * MAX_TENSOR_BYTES, a core property (default 4 GiB, 0 for none), refuses a
 * model in which a value of static shape would need more bytes, when it is
 * read and, after a reshape, when it is compiled, before anything of that
 * size is allocated; the error names the value, its shape and both sizes.
 * Nesting depth and external data paths are bounded by the ONNX reader
 * (tests/graph/test_onnx_reader.c: subgraphs_nested_too_deep_are_refused,
 * deeply_nested_messages_do_not_overflow_the_stack,
 * external_data_paths_stay_in_the_model_folder). */
#include <criterion/criterion.h>
#include <string.h>

#include "runnel/runnel.h"

#define RELU        "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx" /* x: f32 [3,4,5] */
#define DYNAMIC_ADD "tests/tools/data/dynamic_add.onnx" /* x, y, sum: f32 [N,4] */

static void set_limit(rn_core *core, const char *bytes)
{
    rn_property p[] = {{"MAX_TENSOR_BYTES", bytes}};
    cr_assert_eq(rn_core_set_property(core, NULL, p, 1), RN_OK, "%s", rn_last_error());
}

static void assert_mentions(const char *message, const char *part)
{
    cr_assert(strstr(message, part) != NULL, "'%s' does not mention '%s'", message, part);
}

Test(limits, max_tensor_bytes_is_a_core_property_with_a_default)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    char buf[32];
    cr_assert_eq(rn_core_get_property(core, NULL, "MAX_TENSOR_BYTES", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "4294967296");
    set_limit(core, "1000");
    cr_assert_eq(rn_core_get_property(core, NULL, "MAX_TENSOR_BYTES", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "1000");
    const char *bad[] = {"", "-1", "12k", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rn_property p[] = {{"MAX_TENSOR_BYTES", bad[i]}};
        cr_assert_eq(rn_core_set_property(core, NULL, p, 1), RN_INVALID_ARG, "'%s'", bad[i]);
        assert_mentions(rn_last_error(), "MAX_TENSOR_BYTES");
    }
    cr_assert_eq(rn_core_get_property(core, NULL, "MAX_TENSOR_BYTES", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "1000", "a refused value changes nothing");
    rn_core_free(core);
}

Test(limits, reading_refuses_a_value_above_the_limit)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    rn_model *model = NULL;
    set_limit(core, "239"); /* x is 3*4*5 floats: 240 bytes */
    cr_assert_eq(rn_core_read_model(core, RELU, &model), RN_INVALID_ARG);
    cr_assert_null(model);
    assert_mentions(rn_last_error(), "'x'");
    assert_mentions(rn_last_error(), "[3,4,5]");
    assert_mentions(rn_last_error(), "240 bytes");
    set_limit(core, "240");
    cr_assert_eq(rn_core_read_model(core, RELU, &model), RN_OK, "%s", rn_last_error());
    rn_model_free(model);
    set_limit(core, "0"); /* no limit */
    cr_assert_eq(rn_core_read_model(core, RELU, &model), RN_OK, "%s", rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}

Test(limits, compiling_refuses_a_reshape_above_the_limit)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, DYNAMIC_ADD, &model), RN_OK, "%s", rn_last_error());
    /* 2^40 rows of 4 floats: 16 TiB per value, refused by the default. */
    rn_partial_shape huge = {.rank = 2, .dims = {INT64_C(1) << 40, 4}};
    cr_assert_eq(rn_model_reshape(model, "x", &huge), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_model_reshape(model, "y", &huge), RN_OK, "%s", rn_last_error());
    rn_compiled_model *compiled = NULL;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &compiled), RN_INVALID_ARG);
    cr_assert_null(compiled);
    assert_mentions(rn_last_error(), "MAX_TENSOR_BYTES");
    assert_mentions(rn_last_error(), "[1099511627776,4]");
    /* A small batch of the same model compiles. */
    rn_model_free(model);
    cr_assert_eq(rn_core_read_model(core, DYNAMIC_ADD, &model), RN_OK, "%s", rn_last_error());
    rn_partial_shape two = {.rank = 2, .dims = {2, 4}};
    cr_assert_eq(rn_model_reshape(model, "x", &two), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_model_reshape(model, "y", &two), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &compiled), RN_OK, "%s",
                 rn_last_error());
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
}
