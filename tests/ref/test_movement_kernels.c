/* REF data-movement and reduction kernels, run one node at a time the way the
 * executor does: build a one-node graph, infer shapes, pick the kernel from
 * the REF registry, allocate outputs from the inferred shapes, run. Every
 * expected value below is worked out by hand in the comment beside it. */
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

static const float iota12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

/* ---- Slice ---- */

Test(movement, slice_negative_step_walks_backwards)
{
    /* x = 0..9; start 8, end 1, step -3 takes 8, 5, 2 (1 is excluded). */
    node_case c = nc_new("Slice", 13);
    int64_t starts[] = {8}, ends[] = {1}, steps[] = {-3}, axes[] = {0};
    nc_input(&c, RN_F32, 1, (int64_t[]){10}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, starts, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, ends, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, axes, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, steps, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){8, 5, 2}, 1e-5);
    nc_free(&c);
}

Test(movement, slice_negative_steps_on_two_axes_with_clamped_ends)
{
    /* x[3][4] = 4r + c. Axis 0 from 2 down to INT64_MIN (clamped to "before
     * 0") with step -1 takes rows 2, 1, 0; axis 1 from -1 (= 3) down to 0,
     * exclusive, step -2 takes columns 3, 1. */
    node_case c = nc_new("Slice", 13);
    int64_t starts[] = {2, -1}, ends[] = {INT64_MIN, 0}, axes[] = {0, 1}, steps[] = {-1, -2};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, starts, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, ends, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, axes, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, steps, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 2});
    expect_f32(&c.out[0], 6, (float[]){11, 9, 7, 5, 3, 1}, 1e-5);
    nc_free(&c);
}

Test(movement, slice_attribute_form_of_opset_1_clamps_out_of_range)
{
    /* Opset 1 takes starts/ends as attributes. Axis 1 from -100 (clamped to
     * 0) to 2, axis 0 from 1 to 1000 (clamped to 3): rows 1-2, columns 0-1. */
    node_case c = nc_new("Slice", 1);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_ints(&c, "starts", 2, (int64_t[]){-100, 1});
    nc_ints(&c, "ends", 2, (int64_t[]){2, 1000});
    nc_ints(&c, "axes", 2, (int64_t[]){1, 0});
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 2});
    expect_f32(&c.out[0], 4, (float[]){4, 5, 8, 9}, 1e-5);
    nc_free(&c);
}

Test(movement, slice_with_non_constant_starts_leaves_dims_dynamic)
{
    node_case c = nc_new("Slice", 13);
    int64_t starts[] = {1}, ends[] = {3};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, starts, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, ends, true);
    cr_assert_eq(nc_build(&c, 1), RN_OK, "%s", rn_last_error());
    const graph_value *y = c.node->outputs[0];
    cr_assert_eq(y->shape.rank, 2);
    cr_assert_eq(y->shape.dims[0], RN_DIM_DYNAMIC);
    nc_free(&c);
}

/* ---- Reshape ---- */

Test(movement, reshape_zero_copies_and_minus_one_infers)
{
    /* [2,3,2] with shape [0,-1]: 0 keeps dim 0 (2), -1 takes 12 / 2 = 6. */
    node_case c = nc_new("Reshape", 14);
    int64_t shape[] = {0, -1};
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 3, 2}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 6});
    expect_f32(&c.out[0], 12, iota12, 1e-5);
    nc_free(&c);
}

Test(movement, reshape_allowzero_keeps_a_literal_zero_dim)
{
    /* An empty [0,3] tensor reshaped to [3,0]: with allowzero the 0 is a
     * size; without it, it would copy input dim 1 and ask for [3,3]. */
    node_case c = nc_new("Reshape", 14);
    int64_t shape[] = {3, 0};
    nc_input(&c, RN_F32, 2, (int64_t[]){0, 3}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, true);
    nc_int(&c, "allowzero", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 0});
    nc_free(&c);
}

Test(movement, reshape_allowzero_with_zero_and_minus_one_is_an_error)
{
    node_case c = nc_new("Reshape", 14);
    int64_t shape[] = {0, -1};
    nc_input(&c, RN_F32, 2, (int64_t[]){0, 3}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, true);
    nc_int(&c, "allowzero", 1);
    cr_assert_eq(nc_build(&c, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'n'") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(movement, reshape_to_a_wrong_element_count_is_an_error)
{
    node_case c = nc_new("Reshape", 14);
    int64_t shape[] = {5, -1};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, true);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    nc_free(&c);
}

Test(movement, reshape_with_unknown_shape_value_has_dynamic_dims)
{
    node_case c = nc_new("Reshape", 14);
    int64_t shape[] = {4, 3};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, false);
    cr_assert_eq(nc_build(&c, 1), RN_OK, "%s", rn_last_error());
    const graph_value *y = c.node->outputs[0];
    cr_assert_eq(y->shape.rank, 2);
    cr_assert_eq(y->shape.dims[0], RN_DIM_DYNAMIC);
    cr_assert_eq(y->shape.dims[1], RN_DIM_DYNAMIC);
    nc_free(&c);
}

Test(movement, reshape_resolves_minus_one_beside_a_copied_dynamic_dim)
{
    /* Input [?,3,4] (batch unknown at compile time) to [0,-1]: the 0 carries
     * the batch over, so -1 is 3 * 4 = 12 even before the batch is known. */
    node_case c = nc_new("Reshape", 14);
    int64_t shape[] = {0, -1};
    nc_input(&c, RN_F32, 3, (int64_t[]){RN_DIM_DYNAMIC, 3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, true);
    cr_assert_eq(nc_build(&c, 1), RN_OK, "%s", rn_last_error());
    const graph_value *y = c.node->outputs[0];
    cr_assert_eq(y->shape.rank, 2);
    cr_assert_eq(y->shape.dims[0], RN_DIM_DYNAMIC);
    cr_assert_eq(y->shape.dims[1], 12);
    nc_free(&c);
}

/* ---- Gather ---- */

Test(movement, gather_negative_indices_count_from_the_end)
{
    /* x = [[1,2],[3,4],[5,6]]; indices [-1, 0] on axis 0 -> rows 2 and 0. */
    node_case c = nc_new("Gather", 13);
    float x[] = {1, 2, 3, 4, 5, 6};
    int64_t idx[] = {-1, 0};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, idx, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 2});
    expect_f32(&c.out[0], 4, (float[]){5, 6, 1, 2}, 1e-5);
    nc_free(&c);
}

Test(movement, gather_on_last_axis_with_2d_i32_indices)
{
    /* axis 1 (of [3,2]) with i32 indices [[-2]] -> shape [3,1,1] holding
     * column 0: 1, 3, 5. */
    node_case c = nc_new("Gather", 13);
    float x[] = {1, 2, 3, 4, 5, 6};
    int32_t idx[] = {-2};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 2}, x, false);
    nc_input(&c, RN_I32, 2, (int64_t[]){1, 1}, idx, false);
    nc_int(&c, "axis", -1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){3, 1, 1});
    expect_f32(&c.out[0], 3, (float[]){1, 3, 5}, 1e-5);
    nc_free(&c);
}

Test(movement, gather_index_out_of_range_is_an_error_not_a_crash)
{
    node_case c = nc_new("Gather", 13);
    float x[] = {1, 2, 3};
    int64_t idx[] = {3};
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, idx, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "index 3") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

Test(movement, gather_elements_negative_indices)
{
    /* x = [[1,2],[3,4]], axis 1, indices [[-1,0],[0,-1]] -> [[2,1],[3,4]]. */
    node_case c = nc_new("GatherElements", 13);
    float x[] = {1, 2, 3, 4};
    int64_t idx[] = {-1, 0, 0, -1};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 2}, x, false);
    nc_input(&c, RN_I64, 2, (int64_t[]){2, 2}, idx, false);
    nc_int(&c, "axis", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){2, 1, 3, 4}, 1e-5);
    nc_free(&c);
}

/* ---- Split ---- */

Test(movement, split_into_uneven_parts_by_num_outputs)
{
    /* 7 elements in 3 parts (opset 18): ceil(7/3) = 3, so 3, 3 and 1. */
    node_case c = nc_new("Split", 18);
    nc_input(&c, RN_F32, 1, (int64_t[]){7}, iota12, false);
    nc_int(&c, "num_outputs", 3);
    cr_assert_eq(nc_build_run(&c, 3), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){0, 1, 2}, 1e-5);
    expect_f32(&c.out[1], 3, (float[]){3, 4, 5}, 1e-5);
    expect_f32(&c.out[2], 1, (float[]){6}, 1e-5);
    nc_free(&c);
}

Test(movement, split_by_explicit_sizes_on_axis_1)
{
    /* x[2][6] = 6r + c split [1, 0, 5] on axis 1: column 0, nothing, 1-5. */
    node_case c = nc_new("Split", 13);
    int64_t split[] = {1, 0, 5};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 6}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){3}, split, true);
    nc_int(&c, "axis", 1);
    cr_assert_eq(nc_build_run(&c, 3), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[1], 2, (int64_t[]){2, 0});
    expect_f32(&c.out[0], 2, (float[]){0, 6}, 1e-5);
    expect_f32(&c.out[2], 10, (float[]){1, 2, 3, 4, 5, 7, 8, 9, 10, 11}, 1e-5);
    nc_free(&c);
}

Test(movement, split_sizes_that_do_not_sum_to_the_axis_are_an_error)
{
    node_case c = nc_new("Split", 13);
    int64_t split[] = {2, 2};
    nc_input(&c, RN_F32, 1, (int64_t[]){5}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, split, true);
    cr_assert_eq(nc_build(&c, 2), RN_SHAPE_MISMATCH);
    nc_free(&c);
}

/* ---- Reductions ---- */

/* x[2][3][2] = 6i + 2j + k (the values 0..11). */

Test(reduce, sum_over_two_axes_without_keepdims)
{
    /* Sum over i and k of 6i + 2j + k, per j: j=0: 0+1+6+7 = 14,
     * j=1: 2+3+8+9 = 22, j=2: 4+5+10+11 = 30. */
    node_case c = nc_new("ReduceSum", 13);
    int64_t axes[] = {0, 2};
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 3, 2}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, axes, true);
    nc_int(&c, "keepdims", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){3});
    expect_f32(&c.out[0], 3, (float[]){14, 22, 30}, 1e-5);
    nc_free(&c);
}

Test(reduce, max_over_negative_axes_attribute_form)
{
    /* Opset 13 ReduceMax takes axes as an attribute; [-1, 0] = {2, 0}.
     * Max over i, k of 6i + 2j + k is 7 + 2j: 7, 9, 11. */
    node_case c = nc_new("ReduceMax", 13);
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 3, 2}, iota12, false);
    nc_ints(&c, "axes", 2, (int64_t[]){-1, 0});
    nc_int(&c, "keepdims", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){7, 9, 11}, 1e-5);
    nc_free(&c);
}

Test(reduce, mean_keepdims_over_all_axes_by_default)
{
    /* No axes: everything; mean of 0..11 is 5.5, shape [1,1,1]. */
    node_case c = nc_new("ReduceMean", 13);
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 3, 2}, iota12, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 1, 1});
    expect_f32(&c.out[0], 1, (float[]){5.5f}, 1e-5);
    nc_free(&c);
}

Test(reduce, sum_square_with_empty_axes_and_noop_squares_elementwise)
{
    /* noop_with_empty_axes with an empty axes input reduces nothing: the
     * output keeps the shape and each element is its own square. */
    node_case c = nc_new("ReduceSumSquare", 18);
    float x[] = {1, -2, 3};
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){0}, NULL, true);
    nc_int(&c, "noop_with_empty_axes", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){1, 4, 9}, 1e-5);
    nc_free(&c);
}

Test(reduce, integer_prod_and_l1_stay_exact)
{
    /* i64 [[2,-3],[4,5]] over axis 1: prod -6 and 20. */
    int64_t x[] = {2, -3, 4, 5};
    node_case c = nc_new("ReduceProd", 18);
    int64_t axes[] = {1};
    nc_input(&c, RN_I64, 2, (int64_t[]){2, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, axes, true);
    nc_int(&c, "keepdims", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 2, (int64_t[]){-6, 20});
    nc_free(&c);

    /* L1 over axis 0: |2|+|4| = 6, |-3|+|5| = 8. */
    c = nc_new("ReduceL1", 18);
    int64_t axes0[] = {0};
    nc_input(&c, RN_I64, 2, (int64_t[]){2, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, axes0, true);
    nc_int(&c, "keepdims", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 2, (int64_t[]){6, 8});
    nc_free(&c);
}

Test(reduce, log_sum_exp_of_large_values_does_not_overflow)
{
    /* log(e^1000 + e^1000) = 1000 + log 2. */
    node_case c = nc_new("ReduceLogSumExp", 13);
    float x[] = {1000, 1000};
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, x, false);
    nc_int(&c, "keepdims", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 0, NULL);
    expect_f32(&c.out[0], 1, (float[]){1000.0f + (float)M_LN2}, 1e-5);
    nc_free(&c);
}

Test(reduce, argmax_and_argmin_with_ties_and_select_last_index)
{
    /* [[1,3,3],[2,2,0]] along axis 1: max ties at 1,2 (first 1, last 2) and
     * at 0,1 (first 0, last 1). */
    float x[] = {1, 3, 3, 2, 2, 0};
    for (int last = 0; last <= 1; last++) {
        node_case c = nc_new("ArgMax", 13);
        nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
        nc_int(&c, "axis", 1);
        nc_int(&c, "select_last_index", last);
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        expect_shape(&c.out[0], 2, (int64_t[]){2, 1});
        expect_i64(&c.out[0], 2, last ? (int64_t[]){2, 1} : (int64_t[]){1, 0});
        nc_free(&c);
    }
    /* ArgMin over axis 0 without keepdims: column minima at rows 0, 1, 1. */
    node_case c = nc_new("ArgMin", 13);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    nc_int(&c, "keepdims", 0);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 3, (int64_t[]){0, 1, 1});
    nc_free(&c);
}

/* ---- Pad, Transpose, Tile, Expand, DepthToSpace, Range, ConstantOfShape ---- */

static void pad_1d(const char *mode, const int64_t *pads, size_t n_want, const float *want)
{
    float x[] = {1, 2, 3};
    node_case c = nc_new("Pad", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, pads, true);
    float nine = 9;
    nc_input(&c, RN_F32, 0, NULL, &nine, false);
    nc_string(&c, "mode", mode);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s: %s", mode, rn_last_error());
    expect_f32(&c.out[0], n_want, want, 1e-5);
    nc_free(&c);
}

Test(movement, pad_modes_on_a_short_row)
{
    /* [1,2,3] padded 2 before and 1 after. */
    int64_t pads[] = {2, 1};
    pad_1d("constant", pads, 6, (float[]){9, 9, 1, 2, 3, 9});
    pad_1d("reflect", pads, 6, (float[]){3, 2, 1, 2, 3, 2});
    pad_1d("edge", pads, 6, (float[]){1, 1, 1, 2, 3, 3});
    pad_1d("wrap", pads, 6, (float[]){2, 3, 1, 2, 3, 1});
    /* Negative pads crop: drop one in front, add one constant behind. */
    pad_1d("constant", (int64_t[]){-1, 1}, 3, (float[]){2, 3, 9});
}

Test(movement, pad_opset_18_axes_input_pads_only_those_axes)
{
    /* [2][2] = [[0,1],[2,3]], axes [-1]: one column of zeros in front. */
    node_case c = nc_new("Pad", 18);
    int64_t pads[] = {1, 0}, axes[] = {-1};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 2}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, pads, true);
    nc_skip(&c);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, axes, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, (float[]){0, 0, 1, 0, 2, 3}, 1e-5);
    nc_free(&c);
}

Test(movement, transpose_copies_any_element_type_by_size)
{
    /* f16 bit patterns 1..6 in [2,3], transposed by default to [3,2]. */
    uint16_t x[] = {1, 2, 3, 4, 5, 6};
    node_case c = nc_new("Transpose", 13);
    nc_input(&c, RN_F16, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 2});
    const uint16_t want[] = {1, 4, 2, 5, 3, 6};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((uint16_t *)c.out[0].data)[i], want[i]);
    nc_free(&c);
}

Test(movement, tile_and_expand_repeat_elements)
{
    /* Tile [[1,2]] by [2,2] -> [[1,2,1,2],[1,2,1,2]]. */
    float x[] = {1, 2};
    int64_t reps[] = {2, 2};
    node_case c = nc_new("Tile", 13);
    nc_input(&c, RN_F32, 2, (int64_t[]){1, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, reps, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 8, (float[]){1, 2, 1, 2, 1, 2, 1, 2}, 1e-5);
    nc_free(&c);

    /* Expand [2,1] = [[1],[2]] to [2,1,3]: broadcasting gives [2,2,3]. */
    int64_t shape[] = {2, 1, 3};
    c = nc_new("Expand", 13);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){3}, shape, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){2, 2, 3});
    expect_f32(&c.out[0], 12, (float[]){1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}, 1e-5);
    nc_free(&c);
}

Test(movement, depth_to_space_dcr_and_crd)
{
    /* x[1][4][1][1] = channels 0..3, blocksize 2 -> [1,1,2,2]. DCR reads
     * channel (b1*2 + b2): [[0,1],[2,3]]; with C' = 1 CRD reads the same. */
    for (int crd = 0; crd <= 1; crd++) {
        node_case c = nc_new("DepthToSpace", 13);
        nc_input(&c, RN_F32, 4, (int64_t[]){1, 4, 1, 1}, iota12, false);
        nc_int(&c, "blocksize", 2);
        nc_string(&c, "mode", crd ? "CRD" : "DCR");
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        expect_shape(&c.out[0], 4, (int64_t[]){1, 1, 2, 2});
        expect_f32(&c.out[0], 4, (float[]){0, 1, 2, 3}, 1e-5);
        nc_free(&c);
    }
    /* x[1][8][1][1], C' = 2: DCR channel (b1*2+b2)*2 + c -> c=0: 0,2,4,6;
     * c=1: 1,3,5,7. CRD channel c*4 + b1*2 + b2 -> 0..3 then 4..7. */
    for (int crd = 0; crd <= 1; crd++) {
        node_case c = nc_new("DepthToSpace", 13);
        nc_input(&c, RN_F32, 4, (int64_t[]){1, 8, 1, 1}, iota12, false);
        nc_int(&c, "blocksize", 2);
        nc_string(&c, "mode", crd ? "CRD" : "DCR");
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        expect_f32(&c.out[0], 8,
                   crd ? (float[]){0, 1, 2, 3, 4, 5, 6, 7} : (float[]){0, 2, 4, 6, 1, 3, 5, 7},
                   1e-5);
        nc_free(&c);
    }
}

Test(movement, range_counts_and_fills_negative_deltas)
{
    /* i32 from 10 down to 3 (exclusive) by -3: 10, 7, 4. */
    int32_t start = 10, limit = 3, delta = -3;
    node_case c = nc_new("Range", 11);
    nc_input(&c, RN_I32, 0, NULL, &start, true);
    nc_input(&c, RN_I32, 0, NULL, &limit, true);
    nc_input(&c, RN_I32, 0, NULL, &delta, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){3});
    const int32_t want[] = {10, 7, 4};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(((int32_t *)c.out[0].data)[i], want[i]);
    nc_free(&c);
}

Test(movement, constant_of_shape_defaults_to_f32_zeros)
{
    int64_t shape[] = {2, 3};
    node_case c = nc_new("ConstantOfShape", 9);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_F32);
    expect_f32(&c.out[0], 6, (float[]){0, 0, 0, 0, 0, 0}, 1e-5);
    nc_free(&c);
}

Test(movement, squeeze_unsqueeze_and_shape)
{
    /* Unsqueeze [3] at axes [0, -1] -> [1,3,1]; Shape with start -2 -> [3,1]. */
    int64_t axes[] = {0, -1};
    node_case c = nc_new("Unsqueeze", 13);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, axes, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 3, 1});
    nc_free(&c);

    c = nc_new("Shape", 15);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 3, 1}, iota12, false);
    nc_int(&c, "start", -2);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 2, (int64_t[]){3, 1});
    nc_free(&c);

    /* Squeeze of a non-1 axis is an error naming the axis. */
    c = nc_new("Squeeze", 11);
    nc_input(&c, RN_F32, 2, (int64_t[]){1, 3}, iota12, false);
    nc_ints(&c, "axes", 1, (int64_t[]){1});
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "axis 1") != NULL, "%s", rn_last_error());
    nc_free(&c);
}
