/* REF image-family kernels (ConvTranspose, DeformConv, the normalisations,
 * LpPool, Resize / Upsample, GridSample / AffineGrid, RoiAlign / MaxRoiPool,
 * MaxUnpool, NonMaxSuppression, Attention and its relatives,
 * RotaryEmbedding, Swish, the losses and the training optimizers), run one
 * node at a time the way the executor does: build a one-node graph and infer
 * shapes (compile time), pick the kernel from the REF registry, infer again
 * with every input value known (run time), allocate the outputs whose shapes
 * are then known, run (the kernel allocates the others). Every expected
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

static void nc_scalar_f32(node_case *c, const float *v)
{
    nc_input(c, RN_F32, 0, NULL, v, false);
}

static void nc_scalar_i64(node_case *c, const int64_t *v)
{
    nc_input(c, RN_I64, 0, NULL, v, false);
}

static void expect_error_names_node(void)
{
    cr_assert(strstr(rn_last_error(), "'n'") != NULL, "%s", rn_last_error());
}

/* ---- ConvTranspose ---- */

Test(conv_transpose, stride_spreads_each_input_over_the_kernel)
{
    /* x = [1, 2], w = [1, 1], stride 2: input i lands on outputs 2i, 2i + 1
     * -> [1, 1, 2, 2]; output_padding 1 appends one zero: [1, 1, 2, 2, 0]. */
    node_case c = nc_new("ConvTranspose", 11);
    float x[] = {1, 2}, w[] = {1, 1};
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, x);
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, w);
    nc_ints(&c, "strides", 1, (int64_t[]){2});
    nc_ints(&c, "output_padding", 1, (int64_t[]){1});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 1, 5});
    expect_f32(&c.out[0], 5, (float[]){1, 1, 2, 2, 0}, 1e-5);
    nc_free(&c);
}

Test(conv_transpose, groups_keep_channels_apart_and_add_bias)
{
    /* Two groups of one channel: y0 = x0 * [1, 2] + 10, y1 = x1 * [3, 4] - 1.
     * x0 = [1], x1 = [2] -> y0 = [11, 12], y1 = [5, 7]. */
    node_case c = nc_new("ConvTranspose", 11);
    float x[] = {1, 2}, w[] = {1, 2, 3, 4}, b[] = {10, -1};
    nc_f32(&c, 3, (int64_t[]){1, 2, 1}, x);
    nc_f32(&c, 3, (int64_t[]){2, 1, 2}, w);
    nc_f32(&c, 1, (int64_t[]){2}, b);
    nc_int(&c, "group", 2);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 2, 2});
    expect_f32(&c.out[0], 4, (float[]){11, 12, 5, 7}, 1e-5);
    nc_free(&c);
}

Test(conv_transpose, channels_not_matching_the_weight_is_an_error)
{
    node_case c = nc_new("ConvTranspose", 11);
    float x[4] = {0}, w[2] = {0};
    nc_f32(&c, 3, (int64_t[]){1, 2, 2}, x);
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, w);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    expect_error_names_node();
    nc_free(&c);
}

/* ---- normalisations ---- */

Test(norm, rms_normalization_divides_by_the_root_mean_square)
{
    /* x = [3, 4]: mean of squares 12.5, rms 3.5355; scale [1, 2]:
     * [3 / 3.5355, 8 / 3.5355] = [0.848528, 2.262742] (epsilon 0). */
    node_case c = nc_new("RMSNormalization", 23);
    float x[] = {3, 4}, s[] = {1, 2};
    nc_f32(&c, 2, (int64_t[]){1, 2}, x);
    nc_f32(&c, 1, (int64_t[]){2}, s);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.848528f, 2.262742f}, 1e-5);
    nc_free(&c);
}

Test(norm, rms_normalization_axis_0_normalises_everything_together)
{
    /* x = [[1], [7]] with axis 0: mean of squares 25, rms 5 -> [0.2, 1.4]. */
    node_case c = nc_new("RMSNormalization", 23);
    float x[] = {1, 7}, s[] = {1, 1};
    nc_f32(&c, 2, (int64_t[]){2, 1}, x);
    nc_f32(&c, 2, (int64_t[]){2, 1}, s);
    nc_int(&c, "axis", 0);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.2f, 1.4f}, 1e-5);
    nc_free(&c);
}

/* x = 1 x 2 x 1 x 2 = [0, 2 | 4, 6] in one group: mean 3, variance
 * (9 + 1 + 1 + 9) / 4 = 5, normalised n = [-3, -1, 1, 3] / sqrt(5). */
static const float gn_x[] = {0, 2, 4, 6};
#define GN_N(v) ((float)((v) / sqrt(5.0)))

Test(norm, group_normalization_18_scales_per_group)
{
    /* Opset 18: one scale / bias per group: 2n + 1. */
    node_case c = nc_new("GroupNormalization", 18);
    float s[] = {2}, b[] = {1};
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 2}, gn_x);
    nc_f32(&c, 1, (int64_t[]){1}, s);
    nc_f32(&c, 1, (int64_t[]){1}, b);
    nc_int(&c, "num_groups", 1);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4,
               (float[]){2 * GN_N(-3) + 1, 2 * GN_N(-1) + 1, 2 * GN_N(1) + 1, 2 * GN_N(3) + 1},
               1e-5);
    nc_free(&c);
}

Test(norm, group_normalization_21_scales_per_channel)
{
    /* Opset 21: channel 0 gets n * 1 + 0, channel 1 n * 2 + 1. */
    node_case c = nc_new("GroupNormalization", 21);
    float s[] = {1, 2}, b[] = {0, 1};
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 2}, gn_x);
    nc_f32(&c, 1, (int64_t[]){2}, s);
    nc_f32(&c, 1, (int64_t[]){2}, b);
    nc_int(&c, "num_groups", 1);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){GN_N(-3), GN_N(-1), 2 * GN_N(1) + 1, 2 * GN_N(3) + 1}, 1e-5);
    nc_free(&c);
}

Test(norm, group_normalization_groups_must_divide_channels)
{
    node_case c = nc_new("GroupNormalization", 21);
    float s[3] = {0}, x[3] = {0};
    nc_f32(&c, 3, (int64_t[]){1, 3, 1}, x);
    nc_f32(&c, 1, (int64_t[]){3}, s);
    nc_f32(&c, 1, (int64_t[]){3}, s);
    nc_int(&c, "num_groups", 2);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    expect_error_names_node();
    nc_free(&c);
}

Test(norm, instance_normalization_normalises_each_channel)
{
    /* Channels [0, 2] and [4, 8]: means 1 and 6, std 1 and 2 -> [-1, 1] per
     * channel, then scale [1, 3], bias [0, 5]: [-1, 1, 2, 8]. */
    node_case c = nc_new("InstanceNormalization", 6);
    float x[] = {0, 2, 4, 8}, s[] = {1, 3}, b[] = {0, 5};
    nc_f32(&c, 3, (int64_t[]){1, 2, 2}, x);
    nc_f32(&c, 1, (int64_t[]){2}, s);
    nc_f32(&c, 1, (int64_t[]){2}, b);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-1, 1, 2, 8}, 1e-5);
    nc_free(&c);
}

Test(norm, mean_variance_normalization_adds_epsilon_to_the_deviation)
{
    /* Default axes [0, 2, 3] over 1 x 1 x 1 x 2 = [1, 3]: mean 2, std 1 ->
     * [-1, 1] (the 1e-9 is invisible at f32). */
    node_case c = nc_new("MeanVarianceNormalization", 13);
    float x[] = {1, 3};
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 2}, x);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){-1, 1}, 1e-5);
    nc_free(&c);
}

Test(norm, lp_normalization_l1_uses_absolute_values_and_keeps_zero_rows)
{
    /* Rows [-1, 3] (L1 norm 4) and [0, 0] (norm 0 -> zeros). */
    node_case c = nc_new("LpNormalization", 1);
    float x[] = {-1, 3, 0, 0};
    nc_f32(&c, 2, (int64_t[]){2, 2}, x);
    nc_int(&c, "p", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-0.25f, 0.75f, 0, 0}, 1e-5);
    nc_free(&c);
}

Test(norm, lp_normalization_p_3_is_rejected)
{
    node_case c = nc_new("LpNormalization", 1);
    float x[2] = {0};
    nc_f32(&c, 1, (int64_t[]){2}, x);
    nc_int(&c, "p", 3);
    cr_assert_eq(nc_build(&c, 1), RN_INVALID_ARG);
    expect_error_names_node();
    nc_free(&c);
}

Test(norm, swish_is_x_times_sigmoid_of_alpha_x)
{
    /* alpha 2, x = ln(3) / 2: sigmoid(ln 3) = 3/4 -> 0.75 * ln(3) / 2. */
    node_case c = nc_new("Swish", 24);
    float x[] = {0, (float)(log(3.0) / 2)};
    nc_f32(&c, 1, (int64_t[]){2}, x);
    nc_float(&c, "alpha", 2.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0, (float)(0.75 * log(3.0) / 2)}, 1e-5);
    nc_free(&c);
}

/* ---- LpPool ---- */

Test(lp_pool, p2_window_is_the_euclidean_norm_and_pads_add_nothing)
{
    /* x = [3, 4], kernel 2, pads 1 + 1: windows [pad, 3], [3, 4], [4, pad]
     * -> [3, 5, 4]. */
    node_case c = nc_new("LpPool", 18);
    float x[] = {3, 4};
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, x);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_ints(&c, "pads", 2, (int64_t[]){1, 1});
    nc_int(&c, "p", 2);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 1, 3});
    expect_f32(&c.out[0], 3, (float[]){3, 5, 4}, 1e-5);
    nc_free(&c);
}

/* ---- Resize / Upsample ---- */

Test(resize, nearest_half_pixel_round_prefer_floor)
{
    /* [1, 2] to 4: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, which
     * round (ties down) and clamp to 0, 0, 1, 1 -> [1, 1, 2, 2]. */
    node_case c = nc_new("Resize", 13);
    float x[] = {1, 2}, scales[] = {1, 2};
    nc_f32(&c, 2, (int64_t[]){1, 2}, x);
    nc_skip(&c);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, scales, true);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){1, 1, 2, 2}, 1e-5);
    nc_free(&c);
}

Test(resize, nearest_asymmetric_ceil_on_downscale)
{
    /* [1..5] to 2 (scale 0.4): x = o / 0.4 = 0, 2.5; ceil: 0, 3 -> [1, 4]. */
    node_case c = nc_new("Resize", 13);
    float x[] = {1, 2, 3, 4, 5};
    int64_t sizes[] = {2};
    nc_f32(&c, 1, (int64_t[]){5}, x);
    nc_skip(&c);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, sizes, true);
    nc_string(&c, "coordinate_transformation_mode", "asymmetric");
    nc_string(&c, "nearest_mode", "ceil");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){1, 4}, 1e-5);
    nc_free(&c);
}

Test(resize, linear_align_corners_hits_both_ends)
{
    /* [0, 10, 20] to 5: x = o * 2 / 4 -> 0, 5, 10, 15, 20. */
    node_case c = nc_new("Resize", 13);
    float x[] = {0, 10, 20};
    int64_t sizes[] = {1, 5};
    nc_f32(&c, 2, (int64_t[]){1, 3}, x);
    nc_skip(&c);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, sizes, true);
    nc_string(&c, "mode", "linear");
    nc_string(&c, "coordinate_transformation_mode", "align_corners");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 5, (float[]){0, 5, 10, 15, 20}, 1e-5);
    nc_free(&c);
}

Test(resize, linear_on_u8_rounds_and_clamps_taps_to_the_edge)
{
    /* [0, 255] to 4, half_pixel: x = -0.25, 0.25, 0.75, 1.25. Taps clamp to
     * the edge: 0, 0.25 * 255 = 63.75 -> 64, 191.25 -> 191, 255. */
    node_case c = nc_new("Resize", 13);
    uint8_t x[] = {0, 255};
    int64_t sizes[] = {1, 4};
    nc_input(&c, RN_U8, 2, (int64_t[]){1, 2}, x, false);
    nc_skip(&c);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, sizes, true);
    nc_string(&c, "mode", "linear");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    const uint8_t *y = c.out[0].data;
    cr_assert(y[0] == 0 && y[1] == 64 && y[2] == 191 && y[3] == 255, "%d %d %d %d", y[0], y[1],
              y[2], y[3]);
    nc_free(&c);
}

Test(resize, tf_crop_and_resize_extrapolates_outside_the_roi)
{
    /* [0, 1, 2, 3], roi [0.5, 1.5] of the one axis, 3 outputs: x = o * 1 *
     * 3 / 2 + 0.5 * 3 = 1.5, 3, 4.5; 4.5 > 3 gives extrapolation_value 10. */
    node_case c = nc_new("Resize", 13);
    float x[] = {0, 1, 2, 3}, roi[] = {0.5f, 1.5f};
    int64_t sizes[] = {3};
    nc_f32(&c, 1, (int64_t[]){4}, x);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, roi, true);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, sizes, true);
    nc_string(&c, "mode", "linear");
    nc_string(&c, "coordinate_transformation_mode", "tf_crop_and_resize");
    nc_float(&c, "extrapolation_value", 10.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){1.5f, 3, 10}, 1e-5);
    nc_free(&c);
}

Test(resize, cubic_keeps_values_at_integral_coordinates)
{
    /* Scale 2 asymmetric: even outputs sit on inputs (x = o / 2 integral),
     * so they copy them exactly; odd ones are interpolated. */
    node_case c = nc_new("Resize", 13);
    float x[] = {1, 5, 2, 8}, scales[] = {2};
    nc_f32(&c, 1, (int64_t[]){4}, x);
    nc_skip(&c);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, scales, true);
    nc_string(&c, "mode", "cubic");
    nc_string(&c, "coordinate_transformation_mode", "asymmetric");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    const float *y = c.out[0].data;
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[2 * i], x[i], 1e-6, "y[%d] = %g", 2 * i, y[2 * i]);
    /* x = 0.5, a = -0.75: taps -1 (clamped to 0), 0, 1, 2 weigh
     * -0.09375, 0.59375, 0.59375, -0.09375:
     * -0.09375 * 1 + 0.59375 * 1 + 0.59375 * 5 - 0.09375 * 2 = 3.28125. */
    cr_assert_float_eq(y[1], 3.28125f, 1e-5, "y[1] = %g", y[1]);
    nc_free(&c);
}

Test(resize, keep_aspect_ratio_not_larger_uses_the_smaller_scale)
{
    /* 2 x 4 asked to fit 2 x 2 on axes (0, 1): scales 1 and 0.5, the
     * smaller wins: round(2 * 0.5) x round(4 * 0.5) = 1 x 2. */
    node_case c = nc_new("Resize", 18);
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t sizes[] = {2, 2};
    nc_f32(&c, 2, (int64_t[]){2, 4}, x);
    nc_skip(&c);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, sizes, true);
    nc_ints(&c, "axes", 2, (int64_t[]){0, 1});
    nc_string(&c, "keep_aspect_ratio_policy", "not_larger");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){1, 2});
    nc_free(&c);
}

Test(resize, sizes_known_only_at_run_time_leave_dims_dynamic)
{
    node_case c = nc_new("Resize", 13);
    float x[] = {1, 2};
    int64_t sizes[] = {1, 3};
    nc_f32(&c, 2, (int64_t[]){1, 2}, x);
    nc_skip(&c);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, sizes, false);
    cr_assert_eq(nc_build(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.node->outputs[0]->shape.dims[1], RN_DIM_DYNAMIC);
    cr_assert_eq(nc_run_dynamic(&c), RN_OK, "%s", rn_last_error());
    /* 2 to 3, half_pixel nearest: x = -1/6, 1/2, 7/6 -> 0, 0 (tie down), 1. */
    expect_f32(&c.out[0], 3, (float[]){1, 1, 2}, 1e-5);
    nc_free(&c);
}

Test(resize, scales_and_sizes_together_are_an_error)
{
    node_case c = nc_new("Resize", 13);
    float x[] = {1, 2}, scales[] = {2};
    int64_t sizes[] = {4};
    nc_f32(&c, 1, (int64_t[]){2}, x);
    nc_skip(&c);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, scales, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, sizes, true);
    cr_assert_eq(nc_build(&c, 1), RN_INVALID_ARG);
    expect_error_names_node();
    nc_free(&c);
}

Test(resize, unknown_mode_is_unsupported_not_wrong)
{
    node_case c = nc_new("Resize", 13);
    float x[] = {1, 2}, scales[] = {2};
    nc_f32(&c, 1, (int64_t[]){2}, x);
    nc_skip(&c);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, scales, true);
    nc_string(&c, "mode", "lanczos");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_UNSUPPORTED);
    nc_free(&c);
}

Test(resize, upsample_7_repeats_by_the_scales_attribute)
{
    /* [[1, 2]] with scales [2, 2] -> [[1, 1, 2, 2], [1, 1, 2, 2]]. */
    node_case c = nc_new("Upsample", 7);
    float x[] = {1, 2};
    nc_f32(&c, 2, (int64_t[]){1, 2}, x);
    nc_floats(&c, "scales", 2, (float[]){2, 2});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 4});
    expect_f32(&c.out[0], 8, (float[]){1, 1, 2, 2, 1, 1, 2, 2}, 1e-5);
    nc_free(&c);
}

/* ---- GridSample / AffineGrid ---- */

/* x = 1 x 1 x 2 x 2 = [[1, 2], [3, 4]], one grid point. */
static rn_status grid_sample_one(node_case *c, const float *grid, const char *padding,
                                 int64_t align)
{
    static const float x[] = {1, 2, 3, 4};
    nc_f32(c, 4, (int64_t[]){1, 1, 2, 2}, x);
    nc_f32(c, 4, (int64_t[]){1, 1, 1, 2}, grid);
    nc_string(c, "padding_mode", padding);
    nc_int(c, "align_corners", align);
    return nc_build_run_dynamic(c, 1);
}

Test(grid_sample, bilinear_center_averages_all_four)
{
    /* (0, 0) is the centre: (1 + 2 + 3 + 4) / 4 = 2.5. */
    node_case c = nc_new("GridSample", 16);
    cr_assert_eq(grid_sample_one(&c, (float[]){0, 0}, "zeros", 0), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){2.5f}, 1e-5);
    nc_free(&c);
}

Test(grid_sample, corner_without_align_mixes_in_the_padding)
{
    /* (-1, -1) without align_corners is pixel (-0.5, -0.5): a quarter of
     * pixel (0, 0) and three quarters padding. zeros: 0.25; border reads
     * the edge for all four taps: 1. */
    node_case c = nc_new("GridSample", 16);
    cr_assert_eq(grid_sample_one(&c, (float[]){-1, -1}, "zeros", 0), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.25f}, 1e-5);
    nc_free(&c);
    node_case d = nc_new("GridSample", 16);
    cr_assert_eq(grid_sample_one(&d, (float[]){-1, -1}, "border", 0), RN_OK, "%s", rn_last_error());
    expect_f32(&d.out[0], 1, (float[]){1}, 1e-5);
    nc_free(&d);
}

Test(grid_sample, reflection_folds_coordinates_back_inside)
{
    /* align_corners: normalised x = 3 is pixel (3 + 1) / 2 * 1 = 2; the
     * border is [0, 1], so 2 reflects off 1 to column 0 (border padding
     * would clamp to column 1); y = -1 is row 0: value 1. */
    node_case c = nc_new("GridSample", 16);
    cr_assert_eq(grid_sample_one(&c, (float[]){3, -1}, "reflection", 1), RN_OK, "%s",
                 rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){1}, 1e-5);
    nc_free(&c);
}

Test(grid_sample, nearest_rounds_half_to_even)
{
    /* align_corners, (0, 0) -> pixel (0.5, 0.5), which rounds to (0, 0): 1. */
    node_case c = nc_new("GridSample", 16);
    nc_string(&c, "mode", "nearest");
    cr_assert_eq(grid_sample_one(&c, (float[]){0, 0}, "zeros", 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){1}, 1e-5);
    nc_free(&c);
}

Test(affine_grid, identity_theta_gives_pixel_centres)
{
    /* size 1 x 1 x 2 x 2 without align_corners: centres at -0.5 and 0.5,
     * grid[h][w] = (x_w, y_h). */
    node_case c = nc_new("AffineGrid", 20);
    float theta[] = {1, 0, 0, 0, 1, 0};
    int64_t size[] = {1, 1, 2, 2};
    nc_f32(&c, 3, (int64_t[]){1, 2, 3}, theta);
    nc_input(&c, RN_I64, 1, (int64_t[]){4}, size, true);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 4, (int64_t[]){1, 2, 2, 2});
    expect_f32(&c.out[0], 8, (float[]){-0.5f, -0.5f, 0.5f, -0.5f, -0.5f, 0.5f, 0.5f, 0.5f}, 1e-5);
    nc_free(&c);
}

/* ---- RoiAlign / MaxRoiPool / MaxUnpool ---- */

Test(roi_align, one_bin_averages_its_samples)
{
    /* x = [[1, 2], [3, 4]], roi (0, 0)-(1, 1) with output_half_pixel, one
     * 1 x 1 bin sampled once at its centre (0.5, 0.5): 2.5. */
    node_case c = nc_new("RoiAlign", 16);
    float x[] = {1, 2, 3, 4}, rois[] = {0, 0, 1, 1};
    int64_t bi[] = {0};
    nc_f32(&c, 4, (int64_t[]){1, 1, 2, 2}, x);
    nc_f32(&c, 2, (int64_t[]){1, 4}, rois);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, bi, false);
    nc_string(&c, "coordinate_transformation_mode", "output_half_pixel");
    nc_int(&c, "sampling_ratio", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){2.5f}, 1e-5);
    nc_free(&c);
}

Test(roi_align, batch_index_out_of_range_is_an_error)
{
    node_case c = nc_new("RoiAlign", 16);
    float x[] = {1, 2, 3, 4}, rois[] = {0, 0, 1, 1};
    int64_t bi[] = {1};
    nc_f32(&c, 4, (int64_t[]){1, 1, 2, 2}, x);
    nc_f32(&c, 2, (int64_t[]){1, 4}, rois);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, bi, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG);
    expect_error_names_node();
    nc_free(&c);
}

Test(max_roi_pool, bins_take_their_maximum)
{
    /* x = [[1, 2], [3, 4]], roi over the whole map, pooled 1 x 2: columns
     * [1, 3] and [2, 4] -> [3, 4]. */
    node_case c = nc_new("MaxRoiPool", 1);
    float x[] = {1, 2, 3, 4}, rois[] = {0, 0, 0, 1, 1};
    nc_f32(&c, 4, (int64_t[]){1, 1, 2, 2}, x);
    nc_f32(&c, 2, (int64_t[]){1, 5}, rois);
    nc_ints(&c, "pooled_shape", 2, (int64_t[]){1, 2});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){3, 4}, 1e-5);
    nc_free(&c);
}

Test(max_unpool, scatters_values_to_their_indices)
{
    /* Unpooled length (2 - 1) * 2 + 2 = 4; values 5, 6 go to 1 and 3. */
    node_case c = nc_new("MaxUnpool", 11);
    float x[] = {5, 6};
    int64_t idx[] = {1, 3};
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, x);
    nc_input(&c, RN_I64, 3, (int64_t[]){1, 1, 2}, idx, false);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_ints(&c, "strides", 1, (int64_t[]){2});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){0, 5, 0, 6}, 1e-5);
    nc_free(&c);
}

Test(max_unpool, index_outside_the_output_is_an_error)
{
    node_case c = nc_new("MaxUnpool", 11);
    float x[] = {5, 6};
    int64_t idx[] = {1, 4};
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, x);
    nc_input(&c, RN_I64, 3, (int64_t[]){1, 1, 2}, idx, false);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_ints(&c, "strides", 1, (int64_t[]){2});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "index 4") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- DeformConv ---- */

Test(deform_conv, offsets_move_the_taps_bilinearly)
{
    /* x = [[1, 2], [3, 4]], 2 x 2 kernel of ones, one output. Zero offsets
     * sum the map: 10. Moving every tap +0.5 along x samples 1.5, 1 (half of
     * 2, half padding), 3.5, 2 -> 8. */
    float x[] = {1, 2, 3, 4}, w[] = {1, 1, 1, 1};
    float off0[8] = {0}, off1[8] = {0, 0.5f, 0, 0.5f, 0, 0.5f, 0, 0.5f};
    const float *offs[] = {off0, off1};
    float want[] = {10, 8};
    for (int i = 0; i < 2; i++) {
        node_case c = nc_new("DeformConv", 19);
        nc_f32(&c, 4, (int64_t[]){1, 1, 2, 2}, x);
        nc_f32(&c, 4, (int64_t[]){1, 1, 2, 2}, w);
        nc_f32(&c, 4, (int64_t[]){1, 8, 1, 1}, offs[i]);
        cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
        expect_f32(&c.out[0], 1, &want[i], 1e-5);
        nc_free(&c);
    }
}

/* ---- NonMaxSuppression ---- */

Test(nms, overlapping_box_is_suppressed_and_output_is_allocated)
{
    /* Box 1 overlaps box 0 with IoU 0.9 / 1.1 > 0.5 and scores lower, box 2
     * is apart: selected (0, 0, 0) and (0, 0, 2). */
    node_case c = nc_new("NonMaxSuppression", 11);
    float boxes[] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6}, scores[] = {0.9f, 0.8f, 0.7f};
    int64_t max_out[] = {10};
    float iou[] = {0.5f};
    nc_f32(&c, 3, (int64_t[]){1, 3, 4}, boxes);
    nc_f32(&c, 3, (int64_t[]){1, 1, 3}, scores);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, max_out, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, iou, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 3});
    expect_i64(&c.out[0], 6, (int64_t[]){0, 0, 0, 0, 0, 2});
    nc_free(&c);
}

Test(nms, without_max_output_nothing_is_selected)
{
    node_case c = nc_new("NonMaxSuppression", 11);
    float boxes[] = {0, 0, 1, 1}, scores[] = {0.9f};
    nc_f32(&c, 3, (int64_t[]){1, 1, 4}, boxes);
    nc_f32(&c, 3, (int64_t[]){1, 1, 1}, scores);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){0, 3});
    nc_free(&c);
}

/* ---- Attention ---- */

/* Q = [[1], [1]], K = [[0], [0]] (equal scores), V = [[2], [4]]: without a
 * mask each query averages V: 3. */
static const float att_q[] = {1, 1}, att_k[] = {0, 0}, att_v[] = {2, 4};

static void attention_inputs(node_case *c)
{
    nc_f32(c, 4, (int64_t[]){1, 1, 2, 1}, att_q);
    nc_f32(c, 4, (int64_t[]){1, 1, 2, 1}, att_k);
    nc_f32(c, 4, (int64_t[]){1, 1, 2, 1}, att_v);
}

Test(attention, causal_hides_later_keys)
{
    /* Query 0 sees key 0 only (2), query 1 both (3). */
    node_case c = nc_new("Attention", 23);
    attention_inputs(&c);
    nc_int(&c, "is_causal", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){2, 3}, 1e-5);
    nc_free(&c);
}

Test(attention, boolean_mask_false_means_hidden)
{
    /* Mask [[T, F], [F, T]]: query 0 sees key 0 (2), query 1 key 1 (4). */
    node_case c = nc_new("Attention", 23);
    uint8_t mask[] = {1, 0, 0, 1};
    attention_inputs(&c);
    nc_input(&c, RN_BOOL, 2, (int64_t[]){2, 2}, mask, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){2, 4}, 1e-5);
    nc_free(&c);
}

Test(attention, past_key_value_are_prepended_to_present)
{
    /* One query (Q = [1]), past key [0] / value [10], new key [0] / value
     * [2]: present holds both, Y averages them: 6. */
    node_case c = nc_new("Attention", 23);
    float q[] = {1}, k[] = {0}, v[] = {2}, pk[] = {0}, pv[] = {10};
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 1}, q);
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 1}, k);
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 1}, v);
    nc_skip(&c);
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 1}, pk);
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 1}, pv);
    cr_assert_eq(nc_build_run_dynamic(&c, 3), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){6}, 1e-5);
    expect_shape(&c.out[2], 4, (int64_t[]){1, 1, 2, 1});
    expect_f32(&c.out[2], 2, (float[]){10, 2}, 1e-5);
    nc_free(&c);
}

Test(attention, grouped_query_heads_share_a_kv_head_and_3d_layout)
{
    /* 3-D, q_num_heads 2, kv_num_heads 1, head size 1: Q = (1, 1, 2) with
     * heads [0] and [ln 3]; K = [[0], [1]], V = [[0], [4]] (scale 1).
     * Head 0: scores 0, 0 -> 2. Head 1: scores 0, ln 3 -> weights 1/4, 3/4
     * -> 3. Y = (1, 1, 2) = [2, 3]. */
    node_case c = nc_new("Attention", 23);
    float q[] = {0, (float)log(3.0)}, k[] = {0, 1}, v[] = {0, 4};
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, q);
    nc_f32(&c, 3, (int64_t[]){1, 2, 1}, k);
    nc_f32(&c, 3, (int64_t[]){1, 2, 1}, v);
    nc_int(&c, "q_num_heads", 2);
    nc_int(&c, "kv_num_heads", 1);
    nc_float(&c, "scale", 1.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 1, 2});
    expect_f32(&c.out[0], 2, (float[]){2, 3}, 1e-5);
    nc_free(&c);
}

Test(attention, softcap_bounds_scores_before_the_mask)
{
    /* Q = [1], K = [[100], [0]], scale 1, softcap 1: scores tanh(100) ~ 1
     * and 0 -> weights e / (e + 1), 1 / (e + 1); with V = [[1], [0]],
     * Y = e / (e + 1) = 0.731059. */
    node_case c = nc_new("Attention", 23);
    float q[] = {1}, k[] = {100, 0}, v[] = {1, 0};
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 1}, q);
    nc_f32(&c, 4, (int64_t[]){1, 1, 2, 1}, k);
    nc_f32(&c, 4, (int64_t[]){1, 1, 2, 1}, v);
    nc_float(&c, "scale", 1.0f);
    nc_float(&c, "softcap", 1.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.731059f}, 1e-5);
    nc_free(&c);
}

Test(attention, heads_not_dividing_is_an_error)
{
    node_case c = nc_new("Attention", 23);
    float q[3] = {0}, kv[2] = {0};
    nc_f32(&c, 4, (int64_t[]){1, 3, 1, 1}, q);
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 1}, kv);
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 1}, kv);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    expect_error_names_node();
    nc_free(&c);
}

/* ---- LinearAttention / FlexAttention / CausalConvWithState ---- */

/* One head, dk = dv = 1, two tokens: q = [1, 1], k = [1, 2], v = [3, 4],
 * scale 1. */
static void linear_attention_inputs(node_case *c, const char *rule)
{
    static const float q[] = {1, 1}, k[] = {1, 2}, v[] = {3, 4};
    nc_f32(c, 3, (int64_t[]){1, 2, 1}, q);
    nc_f32(c, 3, (int64_t[]){1, 2, 1}, k);
    nc_f32(c, 3, (int64_t[]){1, 2, 1}, v);
    nc_int(c, "q_num_heads", 1);
    nc_int(c, "kv_num_heads", 1);
    nc_float(c, "scale", 1.0f);
    nc_string(c, "update_rule", rule);
}

Test(linear_attention, linear_rule_accumulates_outer_products)
{
    /* S = 1 * 3 = 3 -> o = 3; S = 3 + 2 * 4 = 11 -> o = 11. */
    node_case c = nc_new("LinearAttention", 27);
    linear_attention_inputs(&c, "linear");
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){3, 11}, 1e-5);
    expect_f32(&c.out[1], 1, (float[]){11}, 1e-5);
    nc_free(&c);
}

Test(linear_attention, gated_rule_decays_the_state)
{
    /* decay ln(0.5): S = 3; S = 3 * 0.5 + 8 = 9.5. */
    node_case c = nc_new("LinearAttention", 27);
    float g[] = {(float)log(0.5), (float)log(0.5)};
    linear_attention_inputs(&c, "gated");
    nc_skip(&c);
    nc_f32(&c, 3, (int64_t[]){1, 2, 1}, g);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){3, 9.5f}, 1e-5);
    nc_free(&c);
}

Test(linear_attention, delta_rule_writes_only_the_error)
{
    /* beta 1: S = 3; then S^T k = 6, v' = 4 - 6 = -2, S = 3 + 2 * -2 = -1. */
    node_case c = nc_new("LinearAttention", 27);
    float beta[] = {1, 1};
    linear_attention_inputs(&c, "delta");
    nc_skip(&c);
    nc_skip(&c);
    nc_f32(&c, 3, (int64_t[]){1, 2, 1}, beta);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){3, -1}, 1e-5);
    nc_free(&c);
}

Test(linear_attention, gated_rule_without_decay_is_an_error)
{
    node_case c = nc_new("LinearAttention", 27);
    linear_attention_inputs(&c, "gated");
    cr_assert_eq(nc_build(&c, 2), RN_INVALID_ARG);
    expect_error_names_node();
    nc_free(&c);
}

Test(causal_conv, past_state_is_the_left_context)
{
    /* weight [1, 10], input [1, 2, 3] after past [5]: [5, 1, 2, 3] gives
     * 5 + 10, 1 + 20, 2 + 30 = [15, 21, 32]; the new state is [3]. */
    node_case c = nc_new("CausalConvWithState", 27);
    float x[] = {1, 2, 3}, w[] = {1, 10}, past[] = {5};
    nc_f32(&c, 3, (int64_t[]){1, 1, 3}, x);
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, w);
    nc_skip(&c);
    nc_f32(&c, 3, (int64_t[]){1, 1, 1}, past);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){15, 21, 32}, 1e-5);
    expect_f32(&c.out[1], 1, (float[]){3}, 1e-5);
    nc_free(&c);
}

Test(flex_attention, query_heads_share_kv_heads_in_order)
{
    /* Query heads 0 and 1 use K/V head 0, heads 2 and 3 head 1; one key per
     * head, whose softmax weight is 1: Y = [7, 7, 9, 9]. */
    node_case c = nc_new("FlexAttention", 1);
    c.domain = "ai.onnx.preview";
    float q[] = {1, 2, 3, 4}, k[] = {1, 1}, v[] = {7, 9};
    nc_f32(&c, 4, (int64_t[]){1, 4, 1, 1}, q);
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 1}, k);
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 1}, v);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){7, 7, 9, 9}, 1e-5);
    nc_free(&c);
}

/* ---- RotaryEmbedding ---- */

Test(rotary, rotates_pairs_by_the_cached_angle)
{
    /* One head of size 2, position 1 whose angle is 90 degrees (cos 0,
     * sin 1): (1, 0) -> (0, 1). */
    node_case c = nc_new("RotaryEmbedding", 23);
    float x[] = {1, 0}, cosc[] = {1, 0}, sinc[] = {0, 1};
    int64_t pos[] = {1};
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 2}, x);
    nc_f32(&c, 2, (int64_t[]){2, 1}, cosc);
    nc_f32(&c, 2, (int64_t[]){2, 1}, sinc);
    nc_input(&c, RN_I64, 2, (int64_t[]){1, 1}, pos, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0, 1}, 1e-5);
    nc_free(&c);
}

Test(rotary, position_past_the_cache_is_an_error)
{
    node_case c = nc_new("RotaryEmbedding", 23);
    float x[] = {1, 0}, cosc[] = {1}, sinc[] = {0};
    int64_t pos[] = {1};
    nc_f32(&c, 4, (int64_t[]){1, 1, 1, 2}, x);
    nc_f32(&c, 2, (int64_t[]){1, 1}, cosc);
    nc_f32(&c, 2, (int64_t[]){1, 1}, sinc);
    nc_input(&c, RN_I64, 2, (int64_t[]){1, 1}, pos, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG);
    expect_error_names_node();
    nc_free(&c);
}

/* ---- losses ---- */

/* log-probabilities [[-1, -2], [-3, -4]], targets [1, 0], weights [1, 2]:
 * per-sample losses 2 * 2 = 4 and 1 * 3 = 3. */
static const float nll_x[] = {-1, -2, -3, -4}, nll_w[] = {1, 2};
static const int64_t nll_t[] = {1, 0};

Test(loss, nll_mean_divides_by_the_gathered_weights)
{
    /* (4 + 3) / (2 + 1) = 7 / 3. */
    node_case c = nc_new("NegativeLogLikelihoodLoss", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, nll_x);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, nll_t, false);
    nc_f32(&c, 1, (int64_t[]){2}, nll_w);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 0, NULL);
    expect_f32(&c.out[0], 1, (float[]){7.0f / 3.0f}, 1e-5);
    nc_free(&c);
}

Test(loss, nll_ignore_index_drops_the_sample_and_its_weight)
{
    /* Target 0 is ignored: 4 / 2 = 2; reduction none gives [4, 0]. */
    node_case c = nc_new("NegativeLogLikelihoodLoss", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, nll_x);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, nll_t, false);
    nc_f32(&c, 1, (int64_t[]){2}, nll_w);
    nc_int(&c, "ignore_index", 0);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){2}, 1e-5);
    nc_free(&c);
    node_case d = nc_new("NegativeLogLikelihoodLoss", 13);
    nc_f32(&d, 2, (int64_t[]){2, 2}, nll_x);
    nc_input(&d, RN_I64, 1, (int64_t[]){2}, nll_t, false);
    nc_f32(&d, 1, (int64_t[]){2}, nll_w);
    nc_int(&d, "ignore_index", 0);
    nc_string(&d, "reduction", "none");
    cr_assert_eq(nc_build_run_dynamic(&d, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&d.out[0], 1, (int64_t[]){2});
    expect_f32(&d.out[0], 2, (float[]){4, 0}, 1e-5);
    nc_free(&d);
}

Test(loss, target_outside_the_classes_is_an_error)
{
    node_case c = nc_new("NegativeLogLikelihoodLoss", 13);
    int64_t t[] = {1, 2};
    nc_f32(&c, 2, (int64_t[]){2, 2}, nll_x);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, t, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "target 2") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(loss, softmax_cross_entropy_returns_the_log_softmax_too)
{
    /* scores [0, ln 3] for one sample of class 1: softmax [1/4, 3/4], loss
     * -ln(3/4) = 0.287682, log_prob [ln(1/4), ln(3/4)]. */
    node_case c = nc_new("SoftmaxCrossEntropyLoss", 13);
    float x[] = {0, (float)log(3.0)};
    int32_t t[] = {1};
    nc_f32(&c, 2, (int64_t[]){1, 2}, x);
    nc_input(&c, RN_I32, 1, (int64_t[]){1}, t, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.287682f}, 1e-5);
    expect_f32(&c.out[1], 2, (float[]){(float)log(0.25), (float)log(0.75)}, 1e-5);
    nc_free(&c);
}

/* ---- Adagrad / Adam / Momentum ---- */

Test(optimizer, adagrad_decays_the_rate_and_accumulates_squares)
{
    /* R 0.5, T 1, decay_factor 1: rate 0.25; H' = 0 + 2^2 = 4; X' = 1 -
     * 0.25 * 2 / 2 = 0.75 (epsilon 0). */
    node_case c = nc_new("Adagrad", 1);
    c.domain = "ai.onnx.preview.training";
    float r = 0.5f, x = 1, g = 2, h = 0;
    int64_t t = 1;
    nc_scalar_f32(&c, &r);
    nc_scalar_i64(&c, &t);
    nc_f32(&c, 1, (int64_t[]){1}, &x);
    nc_f32(&c, 1, (int64_t[]){1}, &g);
    nc_f32(&c, 1, (int64_t[]){1}, &h);
    nc_float(&c, "decay_factor", 1.0f);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.75f}, 1e-5);
    expect_f32(&c.out[1], 1, (float[]){4}, 1e-5);
    nc_free(&c);
}

/* Momentum with X = 1, G = 2, V = 1, R = 0.1, alpha 0.5, beta 0.25. */
static rn_status momentum_case(node_case *c, const int64_t *t, const char *mode)
{
    static const float r = 0.1f, x = 1, g = 2, v = 1;
    c->domain = "ai.onnx.preview.training";
    nc_scalar_f32(c, &r);
    nc_scalar_i64(c, t);
    nc_f32(c, 1, (int64_t[]){1}, &x);
    nc_f32(c, 1, (int64_t[]){1}, &g);
    nc_f32(c, 1, (int64_t[]){1}, &v);
    nc_float(c, "alpha", 0.5f);
    nc_float(c, "beta", 0.25f);
    nc_float(c, "norm_coefficient", 0.0f);
    nc_string(c, "mode", mode);
    return nc_build_run_dynamic(c, 2);
}

Test(optimizer, momentum_first_step_takes_the_whole_gradient)
{
    /* T 0: beta counts as 1: V' = 0.5 + 2 = 2.5, X' = 1 - 0.25 = 0.75. */
    node_case c = nc_new("Momentum", 1);
    int64_t t = 0;
    cr_assert_eq(momentum_case(&c, &t, "standard"), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.75f}, 1e-5);
    expect_f32(&c.out[1], 1, (float[]){2.5f}, 1e-5);
    nc_free(&c);
}

Test(optimizer, nesterov_momentum_looks_ahead)
{
    /* T 1: V' = 0.5 + 0.25 * 2 = 1; X' = 1 - 0.1 * (2 + 0.5 * 1) = 0.75. */
    node_case c = nc_new("Momentum", 1);
    int64_t t = 1;
    cr_assert_eq(momentum_case(&c, &t, "nesterov"), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.75f}, 1e-5);
    expect_f32(&c.out[1], 1, (float[]){1}, 1e-5);
    nc_free(&c);
}

Test(optimizer, adam_corrects_the_bias_of_both_moments)
{
    /* X 1, G 1, V 0, H 0, alpha 0.5, beta 0.75, epsilon 0, T 2: V' = 0.5,
     * H' = 0.25, R' = 0.1 * sqrt(1 - 0.75^2) / (1 - 0.5^2) = 0.0881917,
     * X' = 1 - R' * 0.5 / 0.5 = 0.911808. */
    node_case c = nc_new("Adam", 1);
    c.domain = "ai.onnx.preview.training";
    float r = 0.1f, x = 1, g = 1, v = 0, h = 0;
    int64_t t = 2;
    nc_scalar_f32(&c, &r);
    nc_scalar_i64(&c, &t);
    nc_f32(&c, 1, (int64_t[]){1}, &x);
    nc_f32(&c, 1, (int64_t[]){1}, &g);
    nc_f32(&c, 1, (int64_t[]){1}, &v);
    nc_f32(&c, 1, (int64_t[]){1}, &h);
    nc_float(&c, "alpha", 0.5f);
    nc_float(&c, "beta", 0.75f);
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run_dynamic(&c, 3), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){0.911808f}, 1e-5);
    expect_f32(&c.out[1], 1, (float[]){0.5f}, 1e-5);
    expect_f32(&c.out[2], 1, (float[]){0.25f}, 1e-5);
    nc_free(&c);
}

Test(optimizer, groups_that_do_not_divide_are_an_error)
{
    /* Adagrad needs 2 + 3n inputs: 6 is not. */
    node_case c = nc_new("Adagrad", 1);
    c.domain = "ai.onnx.preview.training";
    float r = 0.1f, x = 1;
    int64_t t = 0;
    nc_scalar_f32(&c, &r);
    nc_scalar_i64(&c, &t);
    for (int i = 0; i < 4; i++)
        nc_f32(&c, 1, (int64_t[]){1}, &x);
    cr_assert_eq(nc_build(&c, 2), RN_INVALID_ARG);
    expect_error_names_node();
    nc_free(&c);
}
