/* REF quantization kernels (QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, ConvInteger, QLinearConv, MatMulInteger,
 * QLinearMatMul) and float8 Cast, run one node at a time the way the executor
 * does: build a one-node graph, infer shapes, pick the kernel from the REF
 * registry, allocate outputs from the inferred shapes, run. Every expected
 * value is worked out by hand in the comment beside it. */
#include <criterion/criterion.h>
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

static void expect_bytes(const graph_tensor *t, size_t n, const uint8_t *want)
{
    cr_assert_eq(graph_tensor_count(t), n, "%zu elements, expected %zu", graph_tensor_count(t), n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(((const uint8_t *)t->data)[i], want[i], "element %zu: 0x%02x, want 0x%02x", i,
                     ((const uint8_t *)t->data)[i], want[i]);
}

/* ---- QuantizeLinear ---- */

Test(quant, quantize_rounds_half_to_even_and_saturates)
{
    /* x / 2 = 0, 1, 1.5, 500, -127, 2.5 rounds (half to even) to 0, 1, 2,
     * 500, -127, 2; + 128 gives 128, 129, 130, 628 -> 255, 1, 130. */
    node_case c = nc_new("QuantizeLinear", 13);
    float x[] = {0, 2, 3, 1000, -254, 5}, s = 2;
    uint8_t zp = 128;
    nc_input(&c, RN_F32, 1, (int64_t[]){6}, x, false);
    nc_input(&c, RN_F32, 0, NULL, &s, true);
    nc_input(&c, RN_U8, 0, NULL, &zp, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_U8);
    expect_bytes(&c.out[0], 6, (uint8_t[]){128, 129, 130, 255, 1, 130});
    nc_free(&c);
}

Test(quant, quantize_without_zero_point_gives_u8)
{
    /* No zero point: u8 with zero point 0; -3 / 1 saturates to 0. */
    node_case c = nc_new("QuantizeLinear", 13);
    float x[] = {-3, 7.5f}, s = 1;
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, x, false);
    nc_input(&c, RN_F32, 0, NULL, &s, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_U8);
    expect_bytes(&c.out[0], 2, (uint8_t[]){0, 8}); /* 7.5 rounds to even 8 */
    nc_free(&c);
}

Test(quant, quantize_per_axis_int8)
{
    /* x[2][3], axis 1: column scales 1, 2, 4 and zero points 0, 1, -1.
     * Row 0: 1/1+0, 2/2+1, 4/4-1 = 1, 2, 0. Row 1: -3, -3+1, 300/4-1 = 74. */
    node_case c = nc_new("QuantizeLinear", 13);
    float x[] = {1, 2, 4, -3, -6, 300}, s[] = {1, 2, 4};
    int8_t zp[] = {0, 1, -1};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, s, true);
    nc_input(&c, RN_I8, 1, (int64_t[]){3}, zp, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_I8);
    int8_t want[] = {1, 2, 0, -3, -2, 74};
    expect_bytes(&c.out[0], 6, (const uint8_t *)want);
    nc_free(&c);
}

Test(quant, quantize_blocked_with_output_dtype)
{
    /* Opset 21, x[2][4] in blocks of 2 along axis 1: scale [2][2] =
     * {{1, 10}, {2, 4}}, no zero point, output_dtype i16 (5).
     * Row 0: 1/1, 2/1, 30/10, 40/10 = 1, 2, 3, 4; row 1: 4/2, 6/2, 8/4,
     * -10/4 = -2.5 -> -2 (half to even) = 2, 3, 2, -2. */
    node_case c = nc_new("QuantizeLinear", 21);
    float x[] = {1, 2, 30, 40, 4, 6, 8, -10}, s[] = {1, 10, 2, 4};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 4}, x, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 2}, s, true);
    nc_int(&c, "axis", 1);
    nc_int(&c, "block_size", 2);
    nc_int(&c, "output_dtype", RN_I16);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_I16);
    const int16_t *y = c.out[0].data;
    int16_t want[] = {1, 2, 3, 4, 2, 3, 2, -2};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(y[i], want[i], "element %d: %d, want %d", i, y[i], want[i]);
    nc_free(&c);
}

Test(quant, quantize_to_float8_saturates_unless_told_not_to)
{
    /* E4M3FN: 1000 and inf saturate to 448 (0x7e), -1000 to -448 (0xfe);
     * 0.3 lies between 0.28125 (1.001b * 2^-2) and 0.3125 (1.010b * 2^-2)
     * and is nearer 0.3125: exponent field 5, mantissa 2 = 0x2a. Without
     * saturate the overflows become NaN (0x7f, 0xff with the sign). */
    float x[] = {1000, -1000, 0.3f, INFINITY}, s = 1;
    uint8_t zp = 0;
    for (int sat = 1; sat >= 0; sat--) {
        node_case c = nc_new("QuantizeLinear", 19);
        nc_input(&c, RN_F32, 1, (int64_t[]){4}, x, false);
        nc_input(&c, RN_F32, 0, NULL, &s, true);
        nc_input(&c, RN_F8E4M3FN, 1, (int64_t[]){1}, &zp, true);
        nc_int(&c, "saturate", sat);
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        cr_assert_eq(c.out[0].type, RN_F8E4M3FN);
        if (sat)
            expect_bytes(&c.out[0], 4, (uint8_t[]){0x7e, 0xfe, 0x2a, 0x7e});
        else
            expect_bytes(&c.out[0], 4, (uint8_t[]){0x7f, 0xff, 0x2a, 0x7f});
        nc_free(&c);
    }
}

Test(quant, quantize_rejects_a_scale_of_the_wrong_length)
{
    node_case c = nc_new("QuantizeLinear", 13);
    float x[6] = {0}, s[] = {1, 2};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, s, true);
    nc_int(&c, "axis", 1);
    rn_status st = nc_build_run(&c, 1);
    cr_assert_eq(st, RN_SHAPE_MISMATCH, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (QuantizeLinear)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- DequantizeLinear ---- */

Test(quant, dequantize_per_axis_with_zero_points)
{
    /* x[2][2] u8, axis 0: row scales 0.5, 2 and zero points 10, 0:
     * (12 - 10) * 0.5 = 1, (8 - 10) * 0.5 = -1, 3 * 2 = 6, 0 * 2 = 0. */
    node_case c = nc_new("DequantizeLinear", 13);
    uint8_t x[] = {12, 8, 3, 0}, zp[] = {10, 0};
    float s[] = {0.5f, 2};
    nc_input(&c, RN_U8, 2, (int64_t[]){2, 2}, x, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, s, true);
    nc_input(&c, RN_U8, 1, (int64_t[]){2}, zp, true);
    nc_int(&c, "axis", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){1, -1, 6, 0}, 0);
    nc_free(&c);
}

Test(quant, dequantize_float8)
{
    /* E4M3FN bytes: 0x38 = 0.0111.000 = 1.0, 0xb8 = -1.0, 0x7e = 448,
     * 0x01 = the smallest subnormal 2^-9, 0x7f = NaN; times 2. */
    node_case c = nc_new("DequantizeLinear", 19);
    uint8_t x[] = {0x38, 0xb8, 0x7e, 0x01, 0x7f};
    float s = 2;
    nc_input(&c, RN_F8E4M3FN, 1, (int64_t[]){5}, x, false);
    nc_input(&c, RN_F32, 0, NULL, &s, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    const float *y = c.out[0].data, want[] = {2, -2, 896, 0x1p-8f};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(y[i], want[i], "element %d: %g, want %g", i, y[i], want[i]);
    cr_assert(isnan(y[4]));
    nc_free(&c);
}

Test(quant, dequantize_f16_scale_gives_f16)
{
    /* The output takes the scale's type: (5 - 1) * 0.25 = 1.0 = 0x3c00 in f16. */
    node_case c = nc_new("DequantizeLinear", 19);
    int8_t x = 5, zp = 1;
    uint16_t s = 0x3400; /* 0.25 */
    nc_input(&c, RN_I8, 1, (int64_t[]){1}, &x, false);
    nc_input(&c, RN_F16, 0, NULL, &s, true);
    nc_input(&c, RN_I8, 0, NULL, &zp, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_F16);
    cr_assert_eq(*(uint16_t *)c.out[0].data, 0x3c00);
    nc_free(&c);
}

/* ---- DynamicQuantizeLinear ---- */

Test(quant, dynamic_quantize_derives_scale_and_zero_point)
{
    /* Range [min(0, -3), max(0, 4.5)] = 7.5: scale 7.5 / 255, zero point
     * round(3 / scale) = 102. y = round(x / scale) + 102: 0 -> 102,
     * 2 -> 68 + 102 = 170, -3 -> 0, 4.5 -> 153 + 102 = 255. */
    node_case c = nc_new("DynamicQuantizeLinear", 11);
    float x[] = {0, 2, -3, 4.5f};
    nc_input(&c, RN_F32, 1, (int64_t[]){4}, x, false);
    cr_assert_eq(nc_build_run(&c, 3), RN_OK, "%s", rn_last_error());
    expect_bytes(&c.out[0], 4, (uint8_t[]){102, 170, 0, 255});
    cr_assert_float_eq(*(float *)c.out[1].data, 7.5f / 255.0f, 1e-9);
    cr_assert_eq(*(uint8_t *)c.out[2].data, 102);
    expect_shape(&c.out[1], 0, NULL);
    nc_free(&c);
}

/* ---- ConvInteger / QLinearConv ---- */

Test(quant, conv_integer_pads_with_the_zero_point)
{
    /* x = 11..14 with zero point 10 is 1 2 / 3 4; a 2x2 kernel of ones with
     * one pixel of padding all round sums each window of the padded image:
     * 1 3 2 / 4 10 6 / 3 7 4. Padding contributes 0, i.e. the zero point. */
    node_case c = nc_new("ConvInteger", 10);
    uint8_t x[] = {11, 12, 13, 14}, w[] = {1, 1, 1, 1}, xz = 10;
    nc_input(&c, RN_U8, 4, (int64_t[]){1, 1, 2, 2}, x, false);
    nc_input(&c, RN_U8, 4, (int64_t[]){1, 1, 2, 2}, w, true);
    nc_input(&c, RN_U8, 0, NULL, &xz, true);
    nc_attr(&c, (graph_attr){.name = strdup("pads"),
                             .type = GRAPH_ATTR_INTS,
                             .count = 4,
                             .ints = memcpy(malloc(4 * sizeof(int64_t)), (int64_t[]){1, 1, 1, 1},
                                            4 * sizeof(int64_t))});
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 4, (int64_t[]){1, 1, 3, 3});
    expect_i32(&c.out[0], 9, (int32_t[]){1, 3, 2, 4, 10, 6, 3, 7, 4});
    nc_free(&c);
}

Test(quant, conv_integer_per_channel_weight_zero_points)
{
    /* 1x1 kernels: w = 2 and 5 with zero points 1 and 3 are 1 and 2; x = 1..4
     * with zero point 1 is 0..3; channel 0 = x, channel 1 = 2x. */
    node_case c = nc_new("ConvInteger", 10);
    uint8_t x[] = {1, 2, 3, 4}, w[] = {2, 5}, xz = 1, wz[] = {1, 3};
    nc_input(&c, RN_U8, 4, (int64_t[]){1, 1, 2, 2}, x, false);
    nc_input(&c, RN_U8, 4, (int64_t[]){2, 1, 1, 1}, w, true);
    nc_input(&c, RN_U8, 0, NULL, &xz, true);
    nc_input(&c, RN_U8, 1, (int64_t[]){2}, wz, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i32(&c.out[0], 8, (int32_t[]){0, 1, 2, 3, 0, 2, 4, 6});
    nc_free(&c);
}

Test(quant, qlinear_conv_requantizes_with_bias)
{
    /* x = (10, 20) - 10 = (0, 10); w = 3 - 1 = 2; bias 5: acc = 5, 25.
     * Multiplier 0.5 * 0.25 / 1 = 0.125: 0.625 + 100 -> 101 and
     * 3.125 + 100 -> 103. */
    node_case c = nc_new("QLinearConv", 10);
    uint8_t x[] = {10, 20}, xz = 10, w = 3, wz = 1, yz = 100;
    float xs = 0.5f, ws = 0.25f, ys = 1;
    int32_t b = 5;
    nc_input(&c, RN_U8, 4, (int64_t[]){1, 1, 1, 2}, x, false);
    nc_input(&c, RN_F32, 0, NULL, &xs, true);
    nc_input(&c, RN_U8, 0, NULL, &xz, true);
    nc_input(&c, RN_U8, 4, (int64_t[]){1, 1, 1, 1}, &w, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, &ws, true);
    nc_input(&c, RN_U8, 1, (int64_t[]){1}, &wz, true);
    nc_input(&c, RN_F32, 0, NULL, &ys, true);
    nc_input(&c, RN_U8, 0, NULL, &yz, true);
    nc_input(&c, RN_I32, 1, (int64_t[]){1}, &b, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_U8);
    expect_bytes(&c.out[0], 2, (uint8_t[]){101, 103});
    nc_free(&c);
}

/* ---- MatMulInteger / QLinearMatMul ---- */

Test(quant, matmul_integer_per_row_zero_point)
{
    /* A = {{3, 4}, {5, 6}} minus row zero points 1, 2 = {{2, 3}, {3, 4}};
     * B = {{1}, {2}}: Y = {{2 + 6}, {3 + 8}} = {{8}, {11}}. */
    node_case c = nc_new("MatMulInteger", 10);
    uint8_t a[] = {3, 4, 5, 6}, b[] = {1, 2}, az[] = {1, 2};
    nc_input(&c, RN_U8, 2, (int64_t[]){2, 2}, a, false);
    nc_input(&c, RN_U8, 2, (int64_t[]){2, 1}, b, true);
    nc_input(&c, RN_U8, 1, (int64_t[]){2}, az, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 1});
    expect_i32(&c.out[0], 2, (int32_t[]){8, 11});
    nc_free(&c);
}

Test(quant, qlinear_matmul_requantizes_and_saturates)
{
    /* Batch of 2: a = (2, 4) and (100, 100), b = (3, -1): acc = 2 and 200.
     * Multiplier 0.5 * 1 / 0.25 = 2: 4 - 1 = 3, and 400 - 1 saturates to
     * 127. */
    node_case c = nc_new("QLinearMatMul", 10);
    int8_t a[] = {2, 4, 100, 100}, az = 0, b[] = {3, -1}, bz = 0, yz = -1;
    float as = 0.5f, bs = 1, ys = 0.25f;
    nc_input(&c, RN_I8, 3, (int64_t[]){2, 1, 2}, a, false);
    nc_input(&c, RN_F32, 0, NULL, &as, true);
    nc_input(&c, RN_I8, 0, NULL, &az, true);
    nc_input(&c, RN_I8, 2, (int64_t[]){2, 1}, b, true);
    nc_input(&c, RN_F32, 0, NULL, &bs, true);
    nc_input(&c, RN_I8, 0, NULL, &bz, true);
    nc_input(&c, RN_F32, 0, NULL, &ys, true);
    nc_input(&c, RN_I8, 0, NULL, &yz, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){2, 1, 1});
    int8_t want[] = {3, 127};
    expect_bytes(&c.out[0], 2, (const uint8_t *)want);
    nc_free(&c);
}

/* ---- Cast with float8 ---- */

Test(quant, cast_to_e5m2_rounds_to_even_and_saturates)
{
    /* E5M2 keeps 2 mantissa bits: 1.125 is halfway between 1.0 (0x3c) and
     * 1.25 (0x3d) and goes to the even 1.0; 1.375 goes up to 1.5 (0x3e).
     * 1e6 saturates to 57344 (0x7b); without saturate it is +inf (0x7c). */
    float x[] = {1.125f, 1.375f, 1e6f};
    for (int sat = 1; sat >= 0; sat--) {
        node_case c = nc_new("Cast", 19);
        nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
        nc_int(&c, "to", RN_F8E5M2);
        nc_int(&c, "saturate", sat);
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        expect_bytes(&c.out[0], 3, (uint8_t[]){0x3c, 0x3e, sat ? 0x7b : 0x7c});
        nc_free(&c);
    }
}

Test(quant, cast_to_fnuz_has_no_negative_zero)
{
    /* E4M3FNUZ: -0 and a negative value too small to represent are +0;
     * NaN is 0x80; 1.0 is 0.1000.000 (bias 8) = 0x40. */
    float x[] = {-0.0f, -1e-9f, NAN, 1.0f};
    node_case c = nc_new("Cast", 19);
    nc_input(&c, RN_F32, 1, (int64_t[]){4}, x, false);
    nc_int(&c, "to", RN_F8E4M3FNUZ);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_bytes(&c.out[0], 4, (uint8_t[]){0x00, 0x00, 0x80, 0x40});
    nc_free(&c);
}
