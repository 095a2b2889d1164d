/* REF elementwise kernels and their shape inference, one node at a time the
 * way the executor runs them: build a one-node graph, infer shapes, pick the
 * kernel from the REF registry, allocate outputs from the inferred shapes,
 * run. Every expected value is worked out by hand in the comment beside it. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "plugins/api/kernel.h"
#include "plugins/ref/ref.h"
#include "tests/ref/node_case.h"

#define EXPECT_INTS(T, t, n, ...)                                                                  \
    do {                                                                                           \
        const T want_[] = {__VA_ARGS__};                                                           \
        cr_assert_eq(graph_tensor_count(t), (size_t)(n));                                          \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                                \
            cr_assert_eq(((const T *)(t)->data)[i_], want_[i_], "element %zu: %lld, want %lld",    \
                         i_, (long long)((const T *)(t)->data)[i_], (long long)want_[i_]);         \
    } while (0)

static const float iota6[6] = {0, 1, 2, 3, 4, 5};

/* ---- broadcasting ---- */

Test(elementwise, add_broadcasts_trailing_dims)
{
    /* [2,3] + [3]: each row of 0..5 gets 10, 20, 30. */
    node_case c = nc_new("Add", 14);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){10, 20, 30}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, (float[]){10, 21, 32, 13, 24, 35}, 0);
    nc_free(&c);
}

Test(elementwise, sub_broadcasts_column_against_row)
{
    /* [2,1] - [1,3] = [2,3]: a[i] - b[j] with a = {10, 20}, b = {1, 2, 3}. */
    node_case c = nc_new("Sub", 14);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, (float[]){10, 20}, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){1, 3}, (float[]){1, 2, 3}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, (float[]){9, 8, 7, 19, 18, 17}, 0);
    nc_free(&c);
}

Test(elementwise, mul_broadcasts_a_middle_dim_and_a_scalar)
{
    /* [2,3,2] * [3,1]: element (i,j,k) = (6i + 2j + k) * m[j], m = {1, 10, 100}. */
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i;
    node_case c = nc_new("Mul", 14);
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 3, 2}, x, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 1}, (float[]){1, 10, 100}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 3, (int64_t[]){2, 3, 2});
    expect_f32(&c.out[0], 12, (float[]){0, 1, 20, 30, 400, 500, 6, 7, 80, 90, 1000, 1100}, 0);
    nc_free(&c);

    /* scalar (rank 0) on the left: 2 - [1, 2, 3] */
    c = nc_new("Sub", 14);
    nc_input(&c, RN_F32, 0, NULL, (float[]){2}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){1, 2, 3}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 1, (int64_t[]){3});
    expect_f32(&c.out[0], 3, (float[]){1, 0, -1}, 0);
    nc_free(&c);
}

Test(elementwise, opset6_broadcast_axis_aligns_the_second_input)
{
    /* Add-6 with broadcast=1, axis=0: b of shape [2] lines up with a's dim 0,
     * so row i of a gets b[i] (numpy would have refused [2,3] + [2]). */
    node_case c = nc_new("Add", 6);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){100, 200}, false);
    nc_int(&c, "broadcast", 1);
    nc_int(&c, "axis", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, (float[]){100, 101, 102, 203, 204, 205}, 0);
    nc_free(&c);
}

Test(elementwise, incompatible_shapes_are_a_shape_error)
{
    node_case c = nc_new("Add", 14);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){4}, iota6, false);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "node 'n' (Add)") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "[2,3]") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(elementwise, mixed_input_types_are_a_type_error_naming_both)
{
    node_case c = nc_new("Add", 14);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, iota6, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, (int32_t[]){1, 2, 3}, false);
    cr_assert_eq(nc_build(&c, 1), RN_TYPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "'in0' has type f32") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "'in1' has type i32") != NULL, "%s", rn_last_error());
    nc_free(&c);

    c = nc_new("Sqrt", 13); /* Sqrt is for floating types only */
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, (int64_t[]){4}, false);
    cr_assert_eq(nc_build(&c, 1), RN_TYPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "floating") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(elementwise, kernel_refuses_an_unhandled_type_with_a_reason)
{
    /* Build the node without inference and give it string inputs: the REF Add
     * kernel must say UNSUPPORTED and name the input and type. */
    node_case c = nc_new("Add", 14);
    cr_assert_eq(graph_create("case", &c.g), RN_OK);
    graph_value *v[3];
    cr_assert_eq(graph_add_value(c.g, "a", &v[0]), RN_OK);
    cr_assert_eq(graph_add_value(c.g, "b", &v[1]), RN_OK);
    cr_assert_eq(graph_add_value(c.g, "y", &v[2]), RN_OK);
    v[0]->type = v[1]->type = v[2]->type = RN_STRING;
    cr_assert_eq(graph_add_node(c.g, "n", "", "Add", 14, 2, v, 1, &v[2], &c.node), RN_OK);
    cr_assert_eq(plugin_kernel_registry_create(&c.reg), RN_OK);
    cr_assert_eq(ref_register_kernels(c.reg), RN_OK);
    const plugin_kernel *k = NULL;
    cr_assert_eq(plugin_kernel_registry_pick(c.reg, c.node, &k), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "input 0 type string") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- integer arithmetic ---- */

Test(elementwise, integer_div_truncates_toward_zero)
{
    /* 7/2 = 3, -7/2 = -3, 7/-2 = -3, -7/-2 = 3 (C and ONNX, not floor). */
    node_case c = nc_new("Div", 14);
    nc_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){7, -7, 7, -7}, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){2, 2, -2, -2}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out[0], 4, 3, -3, -3, 3);
    nc_free(&c);

    /* u8: 200/3 = 66, 255/255 = 1; by zero gives 0 instead of trapping. */
    c = nc_new("Div", 14);
    nc_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){200, 255, 9}, false);
    nc_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){3, 255, 0}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out[0], 3, 66, 1, 0);
    nc_free(&c);

    /* INT32_MIN / -1 overflows: it wraps back to INT32_MIN. */
    c = nc_new("Div", 14);
    nc_input(&c, RN_I32, 1, (int64_t[]){1}, (int32_t[]){INT32_MIN}, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){1}, (int32_t[]){-1}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out[0], 1, INT32_MIN);
    nc_free(&c);
}

Test(elementwise, integer_add_and_neg_wrap)
{
    /* i8: 127 + 1 = -128, -128 + -1 = 127. */
    node_case c = nc_new("Add", 14);
    nc_input(&c, RN_I8, 1, (int64_t[]){2}, (int8_t[]){127, -128}, false);
    nc_input(&c, RN_I8, 1, (int64_t[]){2}, (int8_t[]){1, -1}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int8_t, &c.out[0], 2, -128, 127);
    nc_free(&c);

    /* -INT64_MIN and |INT64_MIN| are INT64_MIN again. */
    c = nc_new("Neg", 13);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){INT64_MIN, 5}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out[0], 2, INT64_MIN, -5);
    nc_free(&c);
    c = nc_new("Abs", 13);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){INT64_MIN, -5}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out[0], 2, INT64_MIN, 5);
    nc_free(&c);
}

Test(elementwise, mod_sign_follows_divisor_or_dividend)
{
    /* fmod=0 (Python %): -7%3 = 2, 7%-3 = -2, -7%-3 = -1, 7%3 = 1. */
    node_case c = nc_new("Mod", 13);
    nc_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){-7, 7, -7, 7}, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){3, -3, -3, 3}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out[0], 4, 2, -2, -1, 1);
    nc_free(&c);

    /* fmod=1 (C's %): -7%3 = -1, 7%-3 = 1, -7%-3 = -1, 7%3 = 1. */
    c = nc_new("Mod", 13);
    nc_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){-7, 7, -7, 7}, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){4}, (int32_t[]){3, -3, -3, 3}, false);
    nc_int(&c, "fmod", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out[0], 4, -1, 1, -1, 1);
    nc_free(&c);

    /* floats with fmod=1: fmod(-7.5, 2) = -1.5, fmod(7.5, -2) = 1.5. */
    c = nc_new("Mod", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-7.5f, 7.5f}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){2, -2}, false);
    nc_int(&c, "fmod", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){-1.5f, 1.5f}, 0);
    nc_free(&c);

    /* floats without fmod=1 are refused by the spec */
    c = nc_new("Mod", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-7.5f, 7.5f}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){2, -2}, false);
    cr_assert_eq(nc_build(&c, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "fmod") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(elementwise, pow_with_mixed_types_keeps_the_base_type)
{
    /* i64 ** i64 is exact: 3^4 = 81, (-2)^3 = -8, 2^-1 = 0 (no integer
     * reciprocal), 1^-5 = 1. */
    node_case c = nc_new("Pow", 15);
    nc_input(&c, RN_I64, 1, (int64_t[]){4}, (int64_t[]){3, -2, 2, 1}, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){4}, (int64_t[]){4, 3, -1, -5}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out[0], 4, 81, -8, 0, 1);
    nc_free(&c);

    /* i32 ** f32: 2^0.5 = 1.41 truncates to 1, 4^0.5 = 2, 10^2 = 100. */
    c = nc_new("Pow", 15);
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, (int32_t[]){2, 4, 10}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){0.5f, 0.5f, 2}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_I32, 1, (int64_t[]){3});
    EXPECT_INTS(int32_t, &c.out[0], 3, 1, 2, 100);
    nc_free(&c);

    /* f32 ** u64 scalar exponent, broadcast: x^3. */
    c = nc_new("Pow", 15);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){2, -1, 0.5f}, false);
    nc_input(&c, RN_U64, 0, NULL, (uint64_t[]){3}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 1, (int64_t[]){3});
    expect_f32(&c.out[0], 3, (float[]){8, -1, 0.125f}, 0);
    nc_free(&c);
}

Test(elementwise, bitshift_by_the_width_or_more_is_zero)
{
    /* u8: 1 << 7 = 128, 1 << 8 = 0 (not C's undefined), 3 << 7 = 128
     * (the high bit falls off). */
    node_case c = nc_new("BitShift", 11);
    nc_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){1, 1, 3}, false);
    nc_input(&c, RN_U8, 1, (int64_t[]){3}, (uint8_t[]){7, 8, 7}, false);
    nc_string(&c, "direction", "LEFT");
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out[0], 3, 128, 0, 128);
    nc_free(&c);

    /* u32 right: 0xF0 >> 4 = 0xF, x >> 40 = 0. */
    c = nc_new("BitShift", 11);
    nc_input(&c, RN_U32, 1, (int64_t[]){2}, (uint32_t[]){0xF0, 0xFFFFFFFFu}, false);
    nc_input(&c, RN_U32, 1, (int64_t[]){2}, (uint32_t[]){4, 40}, false);
    nc_string(&c, "direction", "RIGHT");
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint32_t, &c.out[0], 2, 0xF, 0);
    nc_free(&c);
}

/* ---- Cast ---- */

static uint16_t cast_one_to_16(rn_element_type from, const void *x, rn_element_type to)
{
    node_case c = nc_new("Cast", 13);
    nc_input(&c, from, 1, (int64_t[]){1}, x, false);
    nc_int(&c, "to", to);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    uint16_t h = ((const uint16_t *)c.out[0].data)[0];
    nc_free(&c);
    return h;
}

Test(cast, f32_to_f16_rounds_half_to_even_and_overflows_to_inf)
{
    /* 1 + 2^-11 lies halfway between 1 (0x3C00) and 1 + 2^-10 (0x3C01): the
     * even one, 0x3C00. 1 + 3*2^-11 lies between 0x3C01 and 0x3C02: 0x3C02.
     * 65504 is the largest half (0x7BFF); 65520 is halfway to 65536, which is
     * past it, so inf (0x7C00). 2^-24 is the smallest subnormal (0x0001). */
    float in[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65520.0f, 0x1p-24f, -2.0f};
    uint16_t want[] = {0x3C00, 0x3C02, 0x7BFF, 0x7C00, 0x0001, 0xC000};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        uint16_t h = cast_one_to_16(RN_F32, &in[i], RN_F16);
        cr_assert_eq(h, want[i], "%.9g: 0x%04x, want 0x%04x", in[i], h, want[i]);
    }
}

Test(cast, f64_to_f16_rounds_once)
{
    /* 1 + 2^-11 + 2^-40 is just above the halfway point, so 0x3C01. Going
     * through f32 first would land exactly on 1 + 2^-11 and round to 0x3C00. */
    double d = 1.0 + 0x1p-11 + 0x1p-40;
    uint16_t h = cast_one_to_16(RN_F64, &d, RN_F16);
    cr_assert_eq(h, 0x3C01, "0x%04x", h);
    /* the same for bf16: 1 + 2^-8 + 2^-40 is above the tie of 0x3F80/0x3F81 */
    d = 1.0 + 0x1p-8 + 0x1p-40;
    h = cast_one_to_16(RN_F64, &d, RN_BF16);
    cr_assert_eq(h, 0x3F81, "0x%04x", h);
}

Test(cast, f32_to_bf16_rounds_half_to_even)
{
    /* 1 + 2^-8 is halfway between 0x3F80 and 0x3F81: 0x3F80; 1 + 3*2^-8 is
     * halfway between 0x3F81 and 0x3F82: 0x3F82. NaN stays NaN. */
    float in[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, NAN};
    uint16_t h = cast_one_to_16(RN_F32, &in[0], RN_BF16);
    cr_assert_eq(h, 0x3F80, "0x%04x", h);
    h = cast_one_to_16(RN_F32, &in[1], RN_BF16);
    cr_assert_eq(h, 0x3F82, "0x%04x", h);
    h = cast_one_to_16(RN_F32, &in[2], RN_BF16);
    cr_assert((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0, "0x%04x is not NaN", h);
}

Test(cast, float_to_int_truncates_and_int_to_int_wraps)
{
    /* 2.7 -> 2, -2.7 -> -2, NaN -> 0 (defined here, undefined in C). */
    node_case c = nc_new("Cast", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){2.7f, -2.7f, NAN}, false);
    nc_int(&c, "to", RN_I32);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int32_t, &c.out[0], 3, 2, -2, 0);
    nc_free(&c);

    /* -1.0 -> u8 is 255, as numpy gives (truncate, then wrap). */
    c = nc_new("Cast", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-1.0f, 255.9f}, false);
    nc_int(&c, "to", RN_U8);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out[0], 2, 255, 255);
    nc_free(&c);

    /* i64 -> i8: 300 = 256 + 44 -> 44; -129 = -256 + 127 -> 127. */
    c = nc_new("Cast", 13);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){300, -129}, false);
    nc_int(&c, "to", RN_I8);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int8_t, &c.out[0], 2, 44, 127);
    nc_free(&c);

    /* to bool: only zero (either sign) is false; NaN is true. */
    c = nc_new("Cast", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){4}, (float[]){0.0f, -0.0f, NAN, 0.5f}, false);
    nc_int(&c, "to", RN_BOOL);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_BOOL, 1, (int64_t[]){4});
    EXPECT_INTS(uint8_t, &c.out[0], 4, 0, 0, 1, 1);
    nc_free(&c);
}

Test(cast, numbers_to_strings_and_back)
{
    /* numpy's str() of float32: shortest round-trip digits, ".0" on whole
     * numbers, scientific below 1e-4 and from 1e16. */
    node_case c = nc_new("Cast", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){6},
             (float[]){0.1f, 1.0f, 1e-5f, 1e16f, -123456.0f, INFINITY}, false);
    nc_int(&c, "to", RN_STRING);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    const char *want[] = {"0.1", "1.0", "1e-05", "1e+16", "-123456.0", "inf"};
    for (int i = 0; i < 6; i++)
        cr_assert_str_eq(((char **)c.out[0].data)[i], want[i]);
    nc_free(&c);

    const char *s[] = {"-1.5", "INF", "NaN", " 2"};
    c = nc_new("Cast", 13);
    nc_input(&c, RN_STRING, 1, (int64_t[]){4}, s, false);
    nc_int(&c, "to", RN_F32);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-1.5f, INFINITY, NAN, 2.0f}, 0);
    nc_free(&c);

    const char *bad[] = {"12abc"};
    c = nc_new("Cast", 13);
    nc_input(&c, RN_STRING, 1, (int64_t[]){1}, bad, false);
    nc_int(&c, "to", RN_F32);
    cr_assert_eq(nc_build_run(&c, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'12abc' is not a number") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(cast, unknown_target_type_is_refused)
{
    node_case c = nc_new("Cast", 19);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, iota6, false);
    nc_int(&c, "to", 21); /* UINT4: runnel has no packed 4-bit types */
    cr_assert_eq(nc_build(&c, 1), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "'to' is 21") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- Clip ---- */

Test(clip, omitted_bounds_do_not_clip)
{
    /* min omitted, max 2: only the top is cut; NaN stays NaN. */
    node_case c = nc_new("Clip", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){4}, (float[]){-5, 1, 7, NAN}, false);
    nc_skip(&c);
    nc_input(&c, RN_F32, 0, NULL, (float[]){2}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-5, 1, 2, NAN}, 0);
    nc_free(&c);

    /* no bounds at all: a copy */
    c = nc_new("Clip", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){-FLT_MAX, 0, FLT_MAX}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){-FLT_MAX, 0, FLT_MAX}, 0);
    nc_free(&c);

    /* i8 with only min = -3 */
    c = nc_new("Clip", 13);
    nc_input(&c, RN_I8, 1, (int64_t[]){3}, (int8_t[]){-128, -3, 127}, false);
    nc_input(&c, RN_I8, 0, NULL, (int8_t[]){-3}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int8_t, &c.out[0], 3, -3, -3, 127);
    nc_free(&c);
}

Test(clip, min_above_max_gives_max_and_attributes_work_before_opset_11)
{
    /* min 5 > max 1: every element becomes 1. */
    node_case c = nc_new("Clip", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){0, 3, 9}, false);
    nc_input(&c, RN_F32, 0, NULL, (float[]){5}, false);
    nc_input(&c, RN_F32, 0, NULL, (float[]){1}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){1, 1, 1}, 0);
    nc_free(&c);

    /* Clip-6 reads min/max attributes; absent max means no upper bound. */
    c = nc_new("Clip", 6);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){-2, 0.5f, 1e30f}, false);
    nc_float(&c, "min", -1.0f);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){-1, 0.5f, 1e30f}, 0);
    nc_free(&c);
}

Test(clip, non_scalar_bound_is_refused)
{
    node_case c = nc_new("Clip", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){0, 3, 9}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){1, 2}, false);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "must be a scalar") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- variadic, comparisons, Where ---- */

Test(variadic, max_and_min_propagate_nan)
{
    /* max(1, NaN) and max(NaN, 2) are NaN (numpy.maximum), max(3, 1) = 3. */
    node_case c = nc_new("Max", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){1, NAN, 3}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){NAN, 2, 1}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){NAN, NAN, 3}, 0);
    nc_free(&c);

    c = nc_new("Min", 13);
    nc_input(&c, RN_F16, 1, (int64_t[]){2}, (uint16_t[]){0x7E00 /* NaN */, 0x4000 /* 2 */}, false);
    nc_input(&c, RN_F16, 1, (int64_t[]){2}, (uint16_t[]){0x3C00 /* 1 */, 0x3C00}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    uint16_t *h = c.out[0].data;
    cr_assert((h[0] & 0x7C00) == 0x7C00 && (h[0] & 0x3FF) != 0, "0x%04x is not NaN", h[0]);
    cr_assert_eq(h[1], 0x3C00);
    nc_free(&c);
}

Test(variadic, sum_and_mean_broadcast_three_inputs)
{
    /* [2,3] + [3] + scalar: iota6 + {10,20,30} + 100. Mean divides by 3. */
    node_case c = nc_new("Sum", 13);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota6, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){10, 20, 30}, false);
    nc_input(&c, RN_F32, 0, NULL, (float[]){100}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, (float[]){110, 121, 132, 113, 124, 135}, 0);
    nc_free(&c);

    c = nc_new("Mean", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){3, 6}, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, (float[]){0, 3}, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, (float[]){0}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_F32, 2, (int64_t[]){2, 2});
    expect_f32(&c.out[0], 4, (float[]){1, 2, 2, 3}, 0);
    nc_free(&c);

    /* one input: a copy, for an integer type too */
    c = nc_new("Max", 13);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, (int64_t[]){-4, 9}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(int64_t, &c.out[0], 2, -4, 9);
    nc_free(&c);
}

Test(compare, outputs_bool_and_nan_compares_false)
{
    /* Less([1, NaN, 3], 2) = [1, 0, 0]; Equal(NaN, NaN) = 0. */
    node_case c = nc_new("Less", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){1, NAN, 3}, false);
    nc_input(&c, RN_F32, 0, NULL, (float[]){2}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_BOOL, 1, (int64_t[]){3});
    EXPECT_INTS(uint8_t, &c.out[0], 3, 1, 0, 0);
    nc_free(&c);

    c = nc_new("Equal", 13);
    nc_input(&c, RN_F64, 1, (int64_t[]){2}, (double[]){NAN, 1}, false);
    nc_input(&c, RN_F64, 1, (int64_t[]){2}, (double[]){NAN, 1}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out[0], 2, 0, 1);
    nc_free(&c);

    c = nc_new("And", 7); /* logic needs bool inputs */
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, iota6, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, iota6, false);
    cr_assert_eq(nc_build(&c, 1), RN_TYPE_MISMATCH);
    nc_free(&c);
}

Test(compare, isinf_detects_the_requested_sign)
{
    /* detect_negative=0: only +inf is reported. */
    node_case c = nc_new("IsInf", 10);
    nc_input(&c, RN_F32, 1, (int64_t[]){4}, (float[]){INFINITY, -INFINITY, NAN, 1}, false);
    nc_int(&c, "detect_negative", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint8_t, &c.out[0], 4, 1, 0, 0, 0);
    nc_free(&c);
}

Test(where, broadcasts_condition_and_both_branches)
{
    /* cond [2,1] = {1, 0}, x [1,3] = {1,2,3}, y scalar 9: row 0 takes x,
     * row 1 takes y. */
    node_case c = nc_new("Where", 16);
    nc_input(&c, RN_BOOL, 2, (int64_t[]){2, 1}, (uint8_t[]){1, 0}, false);
    nc_input(&c, RN_I64, 2, (int64_t[]){1, 3}, (int64_t[]){1, 2, 3}, false);
    nc_input(&c, RN_I64, 0, NULL, (int64_t[]){9}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_typed_shape(&c.out[0], RN_I64, 2, (int64_t[]){2, 3});
    EXPECT_INTS(int64_t, &c.out[0], 6, 1, 2, 3, 9, 9, 9);
    nc_free(&c);
}

/* ---- unary ---- */

Test(unary, round_is_half_to_even)
{
    /* 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, 2.6 -> 3. */
    node_case c = nc_new("Round", 11);
    nc_input(&c, RN_F32, 1, (int64_t[]){5}, (float[]){0.5f, 1.5f, 2.5f, -1.5f, 2.6f}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 5, (float[]){0, 2, 2, -2, 3}, 0);
    nc_free(&c);
}

Test(unary, f16_computes_through_f32_and_rounds_once)
{
    /* Sqrt(4) = 2 (0x4000); Neg(1) = -1 (0xBC00); Add 1 + 2^-11 ties to 1. */
    node_case c = nc_new("Sqrt", 13);
    nc_input(&c, RN_F16, 1, (int64_t[]){1}, (uint16_t[]){0x4400 /* 4 */}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint16_t, &c.out[0], 1, 0x4000);
    nc_free(&c);

    c = nc_new("Add", 14);
    nc_input(&c, RN_F16, 1, (int64_t[]){1}, (uint16_t[]){0x3C00}, false);
    nc_input(&c, RN_F16, 1, (int64_t[]){1}, (uint16_t[]){0x1000 /* 2^-11 */}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    EXPECT_INTS(uint16_t, &c.out[0], 1, 0x3C00);
    nc_free(&c);
}

Test(unary, activations_use_their_attribute_defaults)
{
    /* LeakyRelu default alpha 0.01: -100 -> -1. Elu alpha 2: x = ln(0.5)
     * gives 2 * (0.5 - 1) = -1. HardSigmoid defaults 0.2x + 0.5 clamped:
     * -5 -> 0, 0 -> 0.5, 5 -> 1. Gelu(1) = Phi(1) = 0.8413447. */
    node_case c = nc_new("LeakyRelu", 16);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){-100, 3}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){-1, 3}, 1e-6f);
    nc_free(&c);

    c = nc_new("Elu", 6);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){logf(0.5f), 4}, false);
    nc_float(&c, "alpha", 2.0f);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){-1, 4}, 1e-6f);
    nc_free(&c);

    c = nc_new("HardSigmoid", 6);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, (float[]){-5, 0, 5}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){0, 0.5f, 1}, 1e-7f);
    nc_free(&c);

    c = nc_new("Gelu", 20);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, (float[]){1, 0}, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.8413447f, 0}, 1e-6f);
    nc_free(&c);
}
