/* REF indexing kernels (Scatter*, TensorScatter, Trilu, CumSum/CumProd,
 * OneHot, Compress, EyeLike, TopK, Unique, NonZero, ReverseSequence,
 * CenterCropPad, Hardmax, Col2Im, BitCast, TfIdfVectorizer,
 * ArrayFeatureExtractor), run one node at a time the way
 * the executor does: build a one-node graph, infer shapes at compile time,
 * pick the kernel from the REF registry, infer again at run time with every
 * input value known, allocate the outputs whose shape that settles and let
 * the kernel allocate the others (alloc_output), run. Every expected value
 * below is worked out by hand in the comment beside it. */
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

static void expect_error(rn_status got, rn_status want, const char *fragment)
{
    cr_assert_eq(got, want, "status %d, expected %d (%s)", got, want, rn_last_error());
    cr_assert(strstr(rn_last_error(), "'n'") != NULL, "error names no node: %s", rn_last_error());
    cr_assert(strstr(rn_last_error(), fragment) != NULL, "error lacks '%s': %s", fragment,
              rn_last_error());
}

static const float iota12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

/* ---- ScatterElements, Scatter ---- */

Test(indexing, scatter_elements_add_sums_duplicate_indices)
{
    /* data [1,5] = 1..5; both updates go to column 1: 2 + 1.1 + 2.1 = 5.2. */
    node_case c = nc_new("ScatterElements", 18);
    static const float data[] = {1, 2, 3, 4, 5}, upd[] = {1.1f, 2.1f};
    static const int64_t idx[] = {1, 1};
    nc_input(&c, RN_F32, 2, (int64_t[]){1, 5}, data, false);
    nc_input(&c, RN_I64, 2, (int64_t[]){1, 2}, idx, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){1, 2}, upd, false);
    nc_int(&c, "axis", 1);
    nc_string(&c, "reduction", "add");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 5, (float[]){1, 5.2f, 3, 4, 5}, 1e-5);
    nc_free(&c);
}

Test(indexing, scatter_elements_max_and_min_with_negative_indices)
{
    /* Index -2 is column 3. max: column 1 keeps max(2, 0) = 2, column 3
     * becomes max(4, 9) = 9. min: column 1 becomes 0, column 3 keeps 4. */
    static const float data[] = {1, 2, 3, 4, 5}, upd[] = {0, 9};
    static const int64_t idx[] = {1, -2};
    const char *red[] = {"max", "min"};
    const float want[2][5] = {{1, 2, 3, 9, 5}, {1, 0, 3, 4, 5}};
    for (int r = 0; r < 2; r++) {
        node_case c = nc_new("ScatterElements", 18);
        nc_input(&c, RN_F32, 2, (int64_t[]){1, 5}, data, false);
        nc_input(&c, RN_I64, 2, (int64_t[]){1, 2}, idx, false);
        nc_input(&c, RN_F32, 2, (int64_t[]){1, 2}, upd, false);
        nc_int(&c, "axis", -1);
        nc_string(&c, "reduction", red[r]);
        cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
        expect_f32(&c.out[0], 5, want[r], 1e-5);
        nc_free(&c);
    }
}

Test(indexing, scatter_elements_adds_int64_exactly)
{
    /* 2^53 + 1 is not a double; adding 1 must give 2^53 + 2 exactly. */
    node_case c = nc_new("ScatterElements", 18);
    static const int64_t data[] = {(INT64_C(1) << 53) + 1}, upd[] = {1}, idx[] = {0};
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, data, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, idx, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, upd, false);
    nc_string(&c, "reduction", "add");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 1, (int64_t[]){(INT64_C(1) << 53) + 2});
    nc_free(&c);
}

Test(indexing, scatter_opset_10_writes_along_axis_0)
{
    /* out[idx[i][j]][j] = upd[i][j]: i=0 writes (1,0)=1 (0,1)=1.1 (2,2)=1.2,
     * i=1 writes (0,0)=2 (2,1)=2.1 (1,2)=2.2. */
    node_case c = nc_new("Scatter", 10);
    static const float data[9] = {0};
    static const float upd[] = {1, 1.1f, 1.2f, 2, 2.1f, 2.2f};
    static const int32_t idx[] = {1, 0, 2, 0, 2, 1};
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 3}, data, false);
    nc_input(&c, RN_I32, 2, (int64_t[]){2, 3}, idx, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, upd, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 9, (float[]){2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f}, 1e-5);
    nc_free(&c);
}

Test(indexing, scatter_elements_index_out_of_range_is_an_error)
{
    node_case c = nc_new("ScatterElements", 18);
    static const float data[] = {1, 2, 3}, upd[] = {7};
    static const int64_t idx[] = {3};
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, data, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, idx, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, upd, false);
    expect_error(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG, "index 3");
    nc_free(&c);
}

Test(indexing, scatter_elements_updates_of_another_shape_is_an_error)
{
    node_case c = nc_new("ScatterElements", 18);
    static const float data[] = {1, 2, 3}, upd[] = {7, 8};
    static const int64_t idx[] = {0};
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, data, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, idx, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, upd, false);
    expect_error(nc_build(&c, 1), RN_SHAPE_MISMATCH, "updates");
    nc_free(&c);
}

/* ---- ScatterND ---- */

Test(indexing, scatter_nd_mul_scales_whole_rows)
{
    /* data [4,2] = 1..8; rows 0, 2, 0 are multiplied by (2,2), (3,3),
     * (10,10): row 0 = (1*20, 2*20), row 2 = (5*3, 6*3). */
    node_case c = nc_new("ScatterND", 18);
    static const float data[] = {1, 2, 3, 4, 5, 6, 7, 8}, upd[] = {2, 2, 3, 3, 10, 10};
    static const int64_t idx[] = {0, 2, 0};
    nc_input(&c, RN_F32, 2, (int64_t[]){4, 2}, data, false);
    nc_input(&c, RN_I64, 2, (int64_t[]){3, 1}, idx, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 2}, upd, false);
    nc_string(&c, "reduction", "mul");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 8, (float[]){20, 40, 3, 4, 15, 18, 7, 8}, 1e-5);
    nc_free(&c);
}

Test(indexing, scatter_nd_full_tuples_write_single_elements)
{
    /* Tuples (1,0) and (-2,1) = (0,1) on a 2x2 of zeros. */
    node_case c = nc_new("ScatterND", 16);
    static const int32_t data[4] = {0}, upd[] = {5, 6};
    static const int64_t idx[] = {1, 0, -2, 1};
    nc_input(&c, RN_I32, 2, (int64_t[]){2, 2}, data, false);
    nc_input(&c, RN_I64, 2, (int64_t[]){2, 2}, idx, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){2}, upd, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i32(&c.out[0], 4, (int32_t[]){0, 6, 5, 0});
    nc_free(&c);
}

Test(indexing, scatter_nd_updates_not_matching_the_slices_is_an_error)
{
    /* Tuples of 1 on [4,2] select rows of 2; updates [3,3] do not fit. */
    node_case c = nc_new("ScatterND", 18);
    static const float data[8] = {0}, upd[9] = {0};
    static const int64_t idx[] = {0, 1, 2};
    nc_input(&c, RN_F32, 2, (int64_t[]){4, 2}, data, false);
    nc_input(&c, RN_I64, 2, (int64_t[]){3, 1}, idx, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 3}, upd, false);
    expect_error(nc_build(&c, 1), RN_SHAPE_MISMATCH, "updates");
    nc_free(&c);
}

/* ---- TensorScatter ---- */

Test(indexing, tensor_scatter_circular_wraps_and_linear_overflow_is_an_error)
{
    /* cache [2,4,1] of zeros, update [2,2,1] = (1,2), (3,4), write indices
     * (1, 3). Circular: batch 0 writes positions 1,2; batch 1 writes 3, 0. */
    static const float cache[8] = {0}, upd[] = {1, 2, 3, 4};
    static const int64_t wi[] = {1, 3};
    node_case c = nc_new("TensorScatter", 24);
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 4, 1}, cache, false);
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 2, 1}, upd, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, wi, false);
    nc_string(&c, "mode", "circular");
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 8, (float[]){0, 1, 2, 0, 4, 0, 0, 3}, 1e-5);
    nc_free(&c);

    /* Linear: batch 1 would write positions 3 and 4 of a cache of 4. */
    node_case d = nc_new("TensorScatter", 24);
    nc_input(&d, RN_F32, 3, (int64_t[]){2, 4, 1}, cache, false);
    nc_input(&d, RN_F32, 3, (int64_t[]){2, 2, 1}, upd, false);
    nc_input(&d, RN_I64, 1, (int64_t[]){2}, wi, false);
    expect_error(nc_build_run_dynamic(&d, 1), RN_INVALID_ARG, "write index 3");
    nc_free(&d);
}

/* ---- Trilu ---- */

Test(indexing, trilu_upper_and_lower_with_offsets)
{
    /* x [3,4] = 1..12. upper, k=1 keeps j - i >= 1; lower, k=-1 keeps
     * j - i <= -1. */
    static const int64_t x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    static const int64_t kp[] = {1}, kn[] = {-1};
    node_case c = nc_new("Trilu", 14);
    nc_input(&c, RN_I64, 2, (int64_t[]){3, 4}, x, false);
    nc_input(&c, RN_I64, 0, NULL, kp, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 12, (int64_t[]){0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
    nc_free(&c);

    node_case d = nc_new("Trilu", 14);
    nc_input(&d, RN_I64, 2, (int64_t[]){3, 4}, x, false);
    nc_input(&d, RN_I64, 0, NULL, kn, false);
    nc_int(&d, "upper", 0);
    cr_assert_eq(nc_build_run_dynamic(&d, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&d.out[0], 12, (int64_t[]){0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
    nc_free(&d);
}

Test(indexing, trilu_extreme_k_keeps_nothing_or_everything)
{
    /* upper with k = INT64_MAX keeps no element; lower keeps them all. */
    static const int64_t k[] = {INT64_MAX};
    for (int upper = 0; upper < 2; upper++) {
        node_case c = nc_new("Trilu", 14);
        nc_input(&c, RN_F32, 3, (int64_t[]){2, 2, 3}, iota12, false);
        nc_input(&c, RN_I64, 1, (int64_t[]){1}, k, true);
        nc_int(&c, "upper", upper);
        cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
        float want[12] = {0};
        if (!upper)
            memcpy(want, iota12, sizeof want);
        expect_f32(&c.out[0], 12, want, 1e-5);
        nc_free(&c);
    }
}

/* ---- CumSum, CumProd ---- */

Test(indexing, cumsum_reverse_exclusive_along_axis_1)
{
    /* [[1,2,3],[4,5,6]] summed from the right, leaving each element out:
     * row 0 = (2+3, 3, 0), row 1 = (5+6, 6, 0). */
    static const int32_t x[] = {1, 2, 3, 4, 5, 6}, axis[] = {1};
    node_case c = nc_new("CumSum", 14);
    nc_input(&c, RN_I32, 2, (int64_t[]){2, 3}, x, false);
    nc_input(&c, RN_I32, 0, NULL, axis, false);
    nc_int(&c, "exclusive", 1);
    nc_int(&c, "reverse", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i32(&c.out[0], 6, (int32_t[]){5, 3, 0, 11, 6, 0});
    nc_free(&c);
}

Test(indexing, cumsum_negative_axis_in_f64)
{
    /* axis -2 of [2,3] is axis 0: row 1 = row 0 + row 1. */
    static const double x[] = {1, 2, 3, 4, 5, 6};
    static const int64_t axis[] = {-2};
    node_case c = nc_new("CumSum", 14);
    nc_input(&c, RN_F64, 2, (int64_t[]){2, 3}, x, false);
    nc_input(&c, RN_I64, 0, NULL, axis, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f64(&c.out[0], 6, (double[]){1, 2, 3, 5, 7, 9}, 1e-12);
    nc_free(&c);
}

Test(indexing, cumprod_inclusive_and_exclusive)
{
    /* [2,3,4]: inclusive (2, 6, 24); exclusive (1, 2, 6). */
    static const int64_t x[] = {2, 3, 4}, axis[] = {0};
    const int64_t want[2][3] = {{2, 6, 24}, {1, 2, 6}};
    for (int ex = 0; ex < 2; ex++) {
        node_case c = nc_new("CumProd", 26);
        nc_input(&c, RN_I64, 1, (int64_t[]){3}, x, false);
        nc_input(&c, RN_I64, 0, NULL, axis, true);
        nc_int(&c, "exclusive", ex);
        cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
        expect_i64(&c.out[0], 3, want[ex]);
        nc_free(&c);
    }
}

Test(indexing, cumsum_axis_out_of_range_is_an_error)
{
    static const float x[] = {1, 2};
    static const int64_t axis[] = {1};
    node_case c = nc_new("CumSum", 14);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, x, false);
    nc_input(&c, RN_I64, 0, NULL, axis, false);
    expect_error(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG, "axis");
    nc_free(&c);
}

/* ---- OneHot ---- */

Test(indexing, one_hot_axis_0_negative_and_out_of_range_indices)
{
    /* indices (0, -1, 5, 3), depth 3, axis 0: column i is hot at row
     * idx (or idx + 3 when negative); 5 and 3 are outside [-3, 3), so their
     * columns stay off. Values (off 0, on 7) make the output i32. */
    static const int64_t idx[] = {0, -1, 5, 3};
    static const float depth[] = {3};
    static const int32_t values[] = {0, 7};
    node_case c = nc_new("OneHot", 11);
    nc_input(&c, RN_I64, 1, (int64_t[]){4}, idx, false);
    nc_input(&c, RN_F32, 0, NULL, depth, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){2}, values, false);
    nc_int(&c, "axis", 0);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 4});
    expect_i32(&c.out[0], 12, (int32_t[]){7, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0});
    nc_free(&c);
}

Test(indexing, one_hot_depth_unknown_at_compile_time_is_dynamic)
{
    static const int64_t idx[] = {1}, depth[] = {4};
    static const float values[] = {0, 1};
    node_case c = nc_new("OneHot", 11);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, idx, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, depth, false);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, values, false);
    cr_assert_eq(nc_build(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.node->outputs[0]->shape.rank, 2);
    cr_assert_eq(c.node->outputs[0]->shape.dims[1], RN_DIM_DYNAMIC);
    cr_assert_eq(nc_run_dynamic(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){0, 1, 0, 0}, 1e-5);
    nc_free(&c);
}

/* ---- Compress ---- */

Test(indexing, compress_with_axis_and_a_short_condition)
{
    /* x [2,3] = 0..5; condition (0, 1) along axis 1 keeps column 1 only. */
    static const bool cond[] = {false, true};
    node_case c = nc_new("Compress", 11);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota12, false);
    nc_input(&c, RN_BOOL, 1, (int64_t[]){2}, cond, false);
    nc_int(&c, "axis", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 1});
    expect_f32(&c.out[0], 2, (float[]){1, 4}, 1e-5);
    nc_free(&c);
}

Test(indexing, compress_without_axis_flattens)
{
    /* Flattened x = 0..5; condition (1,0,0,1,1) keeps 0, 3, 4. */
    static const bool cond[] = {true, false, false, true, true};
    node_case c = nc_new("Compress", 11);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota12, false);
    nc_input(&c, RN_BOOL, 1, (int64_t[]){5}, cond, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){0, 3, 4}, 1e-5);
    nc_free(&c);
}

Test(indexing, compress_true_entry_past_the_axis_is_an_error)
{
    static const bool cond[] = {false, false, true};
    node_case c = nc_new("Compress", 11);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota12, false);
    nc_input(&c, RN_BOOL, 1, (int64_t[]){3}, cond, false);
    nc_int(&c, "axis", 0);
    expect_error(nc_build_run_dynamic(&c, 1), RN_SHAPE_MISMATCH, "entry 2");
    nc_free(&c);
}

/* ---- EyeLike ---- */

Test(indexing, eye_like_below_the_diagonal_with_dtype)
{
    /* A [3,4] i32 input, k = -1, dtype f64: ones at (1,0) and (2,1). */
    static const int32_t x[12] = {0};
    node_case c = nc_new("EyeLike", 22);
    nc_input(&c, RN_I32, 2, (int64_t[]){3, 4}, x, false);
    nc_int(&c, "k", -1);
    nc_int(&c, "dtype", RN_F64);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f64(&c.out[0], 12, (double[]){0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}, 1e-12);
    nc_free(&c);
}

Test(indexing, eye_like_diagonal_past_the_matrix_is_all_zero)
{
    static const int32_t x[6] = {0};
    node_case c = nc_new("EyeLike", 22);
    nc_input(&c, RN_I32, 2, (int64_t[]){2, 3}, x, false);
    nc_int(&c, "k", 3);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i32(&c.out[0], 6, (int32_t[]){0, 0, 0, 0, 0, 0});
    nc_free(&c);
}

/* ---- TopK ---- */

Test(indexing, top_k_ties_go_to_the_lower_index)
{
    /* x = (1, 3, 3, 2, 3): the three largest are the 3s at 1, 2, 4; the two
     * smallest are 1 (index 0) and 2 (index 3). */
    static const int64_t x[] = {1, 3, 3, 2, 3}, k3[] = {3}, k2[] = {2};
    node_case c = nc_new("TopK", 11);
    nc_input(&c, RN_I64, 1, (int64_t[]){5}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, k3, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 3, (int64_t[]){3, 3, 3});
    expect_i64(&c.out[1], 3, (int64_t[]){1, 2, 4});
    nc_free(&c);

    node_case d = nc_new("TopK", 11);
    nc_input(&d, RN_I64, 1, (int64_t[]){5}, x, false);
    nc_input(&d, RN_I64, 1, (int64_t[]){1}, k2, false);
    nc_int(&d, "largest", 0);
    cr_assert_eq(nc_build_run_dynamic(&d, 2), RN_OK, "%s", rn_last_error());
    expect_i64(&d.out[0], 2, (int64_t[]){1, 2});
    expect_i64(&d.out[1], 2, (int64_t[]){0, 3});
    nc_free(&d);
}

Test(indexing, top_k_along_axis_0_with_nan_largest)
{
    /* x [3,2] columns (1, NaN, 5) and (4, 0, 4): k=2 along axis 0 gives
     * (NaN, 5) at rows (1, 2) and (4, 4) at rows (0, 2). */
    static const float x[] = {1, 4, NAN, 0, 5, 4};
    static const int64_t k[] = {2};
    node_case c = nc_new("TopK", 11);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, k, true);
    nc_int(&c, "axis", 0);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 2});
    expect_f32(&c.out[0], 4, (float[]){NAN, 4, 5, 4}, 1e-5);
    expect_i64(&c.out[1], 4, (int64_t[]){1, 0, 2, 2});
    nc_free(&c);
}

Test(indexing, top_k_orders_u64_above_int64_max_as_unsigned)
{
    /* 2^63 + 1 is the largest of (1, 2^63 + 1, 5) only when read unsigned. */
    static const uint64_t x[] = {1, (UINT64_C(1) << 63) + 1, 5};
    static const int64_t k[] = {2};
    node_case c = nc_new("TopK", 11);
    nc_input(&c, RN_U64, 1, (int64_t[]){3}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, k, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    cr_assert_eq(((const uint64_t *)c.out[0].data)[0], (UINT64_C(1) << 63) + 1);
    cr_assert_eq(((const uint64_t *)c.out[0].data)[1], 5);
    expect_i64(&c.out[1], 2, (int64_t[]){1, 2});
    nc_free(&c);
}

Test(indexing, top_k_opset_1_takes_k_as_an_attribute)
{
    static const float x[] = {3, 1, 2};
    node_case c = nc_new("TopK", 1);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    nc_int(&c, "k", 2);
    cr_assert_eq(nc_build_run_dynamic(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){3, 2}, 1e-5);
    expect_i64(&c.out[1], 2, (int64_t[]){0, 2});
    nc_free(&c);
}

Test(indexing, top_k_larger_than_the_axis_is_an_error)
{
    static const float x[] = {3, 1, 2};
    static const int64_t k[] = {4};
    node_case c = nc_new("TopK", 11);
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, k, false);
    expect_error(nc_build_run_dynamic(&c, 2), RN_INVALID_ARG, "k 4");
    nc_free(&c);
}

/* ---- Unique ---- */

Test(indexing, unique_sorted_and_unsorted_without_axis)
{
    /* x = (2, 1, 1, 3, 4, 3). Sorted: Y (1,2,3,4), first at (1,0,3,4),
     * inverse (1,0,0,2,3,2), counts (2,1,2,1). Unsorted keeps the order of
     * first occurrence: Y (2,1,3,4), first (0,1,3,4), inverse
     * (0,1,1,2,3,2), counts (1,2,2,1). */
    static const float x[] = {2, 1, 1, 3, 4, 3};
    node_case c = nc_new("Unique", 11);
    nc_input(&c, RN_F32, 1, (int64_t[]){6}, x, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 4), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){1, 2, 3, 4}, 1e-5);
    expect_i64(&c.out[1], 4, (int64_t[]){1, 0, 3, 4});
    expect_i64(&c.out[2], 6, (int64_t[]){1, 0, 0, 2, 3, 2});
    expect_i64(&c.out[3], 4, (int64_t[]){2, 1, 2, 1});
    cr_assert_eq(c.alloc_calls, 3, "Y, indices and counts are sized by the kernel");
    nc_free(&c);

    node_case d = nc_new("Unique", 11);
    nc_input(&d, RN_F32, 1, (int64_t[]){6}, x, false);
    nc_int(&d, "sorted", 0);
    cr_assert_eq(nc_build_run_dynamic(&d, 4), RN_OK, "%s", rn_last_error());
    expect_f32(&d.out[0], 4, (float[]){2, 1, 3, 4}, 1e-5);
    expect_i64(&d.out[1], 4, (int64_t[]){0, 1, 3, 4});
    expect_i64(&d.out[2], 6, (int64_t[]){0, 1, 1, 2, 3, 2});
    expect_i64(&d.out[3], 4, (int64_t[]){1, 2, 2, 1});
    nc_free(&d);
}

Test(indexing, unique_columns_along_axis_1)
{
    /* x [2,3] = [[1,0,1],[2,5,2]]: columns (1,2), (0,5), (1,2). Sorted
     * lexicographically (0,5) < (1,2): Y [[0,1],[5,2]], first (1, 0),
     * inverse (1, 0, 1), counts (1, 2). */
    static const int32_t x[] = {1, 0, 1, 2, 5, 2};
    node_case c = nc_new("Unique", 11);
    nc_input(&c, RN_I32, 2, (int64_t[]){2, 3}, x, false);
    nc_int(&c, "axis", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 4), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 2});
    expect_i32(&c.out[0], 4, (int32_t[]){0, 1, 5, 2});
    expect_i64(&c.out[1], 2, (int64_t[]){1, 0});
    expect_i64(&c.out[2], 3, (int64_t[]){1, 0, 1});
    expect_i64(&c.out[3], 2, (int64_t[]){1, 2});
    nc_free(&c);
}

Test(indexing, unique_with_only_the_first_output)
{
    static const int64_t x[] = {5, 5, 5};
    node_case c = nc_new("Unique", 11);
    nc_input(&c, RN_I64, 1, (int64_t[]){3}, x, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i64(&c.out[0], 1, (int64_t[]){5});
    nc_free(&c);
}

/* ---- NonZero ---- */

Test(indexing, non_zero_lists_coordinates_in_row_major_order)
{
    /* [[0, 1, 0], [-0.0, NaN, 2]]: non-zero at (0,1), (1,1), (1,2); -0.0 is
     * zero and NaN is not. Output rows are the row and column coordinates. */
    static const float x[] = {0, 1, 0, -0.0f, NAN, 2};
    node_case c = nc_new("NonZero", 13);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 3});
    expect_i64(&c.out[0], 6, (int64_t[]){0, 1, 1, 1, 1, 2});
    nc_free(&c);
}

/* ---- ReverseSequence ---- */

Test(indexing, reverse_sequence_time_major)
{
    /* x [4 steps, 2 batch], x[t][b] = 2t + b. Batch 0 reverses all 4 steps
     * (0,2,4,6 -> 6,4,2,0); batch 1 only its first 2 (1,3,5,7 -> 3,1,5,7). */
    static const float x[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const int64_t lens[] = {4, 2};
    node_case c = nc_new("ReverseSequence", 10);
    nc_input(&c, RN_F32, 2, (int64_t[]){4, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, lens, false);
    nc_int(&c, "time_axis", 0);
    nc_int(&c, "batch_axis", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 8, (float[]){6, 3, 4, 1, 2, 5, 0, 7}, 1e-5);
    nc_free(&c);
}

Test(indexing, reverse_sequence_length_past_the_time_axis_is_an_error)
{
    static const float x[] = {0, 1, 2, 3};
    static const int64_t lens[] = {1, 3};
    node_case c = nc_new("ReverseSequence", 10);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 2}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, lens, false);
    nc_int(&c, "batch_axis", 0);
    nc_int(&c, "time_axis", 1);
    expect_error(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG, "sequence_lens[1]");
    nc_free(&c);
}

/* ---- CenterCropPad ---- */

Test(indexing, center_crop_pad_crops_one_axis_and_pads_another)
{
    /* x [3,4] = 0..11 to [2,6]: axis 0 drops 1 row, at the end (odd
     * difference), keeping rows 0-1; axis 1 pads 1 column on each side. */
    static const int64_t shape[] = {2, 6};
    node_case c = nc_new("CenterCropPad", 18);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, shape, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 6});
    expect_f32(&c.out[0], 12, (float[]){0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0}, 1e-5);
    nc_free(&c);
}

Test(indexing, center_crop_pad_on_a_negative_axis)
{
    /* Axis -1 of [3,4] cropped to 1: difference 3, start 1: column 1. */
    static const int64_t shape[] = {1};
    node_case c = nc_new("CenterCropPad", 18);
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 4}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, shape, true);
    nc_ints(&c, "axes", 1, (int64_t[]){-1});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 1});
    expect_f32(&c.out[0], 3, (float[]){1, 5, 9}, 1e-5);
    nc_free(&c);
}

/* ---- Hardmax ---- */

Test(indexing, hardmax_axis_semantics_change_at_opset_13)
{
    /* x [2,3] = [[1,5,5],[3,2,0]].
     * opset 13, default axis -1: first max per row -> [[0,1,0],[1,0,0]].
     * opset 13, axis 0: per column -> col 0 row 1, cols 1-2 row 0.
     * opset 11, axis 0: coerced to one row of 6 -> only the first 5. */
    static const float x[] = {1, 5, 5, 3, 2, 0};
    struct {
        int opset, axis;
        float want[6];
    } cases[] = {
        {13, -1, {0, 1, 0, 1, 0, 0}},
        {13, 0, {0, 1, 1, 1, 0, 0}},
        {11, 0, {0, 1, 0, 0, 0, 0}},
    };
    for (int i = 0; i < 3; i++) {
        node_case c = nc_new("Hardmax", cases[i].opset);
        nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
        nc_int(&c, "axis", cases[i].axis);
        cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
        expect_f32(&c.out[0], 6, cases[i].want, 1e-5);
        nc_free(&c);
    }
}

/* ---- Col2Im ---- */

Test(indexing, col2im_sums_overlapping_blocks)
{
    /* 2x2 blocks sliding with stride 1 over a 3x3 image: 4 positions. With
     * all-ones columns, each pixel sums the blocks covering it: corners 1,
     * edges 2, center 4. */
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = 1;
    static const int64_t img[] = {3, 3}, blk[] = {2, 2};
    node_case c = nc_new("Col2Im", 18);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 4}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, img, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, blk, true);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 4, (int64_t[]){1, 1, 3, 3});
    expect_f32(&c.out[0], 9, (float[]){1, 2, 1, 2, 4, 2, 1, 2, 1}, 1e-5);
    nc_free(&c);
}

Test(indexing, col2im_drops_what_falls_in_the_padding)
{
    /* A 2x2 image padded by 1 on every side is 4x4: 2x2 blocks at stride 1
     * take 3x3 = 9 positions and every real pixel lies under 4 of them. */
    float x[36];
    for (int i = 0; i < 36; i++)
        x[i] = 1;
    static const int64_t img[] = {2, 2}, blk[] = {2, 2};
    node_case c = nc_new("Col2Im", 18);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 9}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, img, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, blk, false);
    nc_ints(&c, "pads", 4, (int64_t[]){1, 1, 1, 1});
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){4, 4, 4, 4}, 1e-5);
    nc_free(&c);
}

Test(indexing, col2im_wrong_block_count_is_an_error)
{
    /* A 3x3 image with 2x2 blocks has 4 positions, not 5. */
    static const float x[20] = {0};
    static const int64_t img[] = {3, 3}, blk[] = {2, 2};
    node_case c = nc_new("Col2Im", 18);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 5}, x, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, img, true);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, blk, true);
    expect_error(nc_build_run_dynamic(&c, 1), RN_SHAPE_MISMATCH, "blocks");
    nc_free(&c);
}

/* ---- BitCast ---- */

Test(indexing, bit_cast_reinterprets_and_rejects_other_sizes)
{
    /* 1.0f is 0x3f800000; -2.0f is 0xc0000000 = -1073741824 as i32. */
    static const float x[] = {1.0f, -2.0f};
    node_case c = nc_new("BitCast", 26);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, x, false);
    nc_int(&c, "to", RN_I32);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_i32(&c.out[0], 2, (int32_t[]){0x3f800000, -1073741824});
    nc_free(&c);

    node_case d = nc_new("BitCast", 26);
    nc_input(&d, RN_F32, 1, (int64_t[]){2}, x, false);
    nc_int(&d, "to", RN_I64);
    expect_error(nc_build(&d, 1), RN_TYPE_MISMATCH, "f32");
    nc_free(&d);
}

/* ---- TfIdfVectorizer ---- */

/* Pool: unigrams 1 and 3 (columns 0, 1), bigram (1, 2) (column 2). */
static void tfidf_case(node_case *c, const int64_t *x, int64_t n, const char *mode, int64_t skip)
{
    *c = nc_new("TfIdfVectorizer", 9);
    nc_input(c, RN_I64, 1, (int64_t[]){n}, x, false);
    nc_int(c, "min_gram_length", 1);
    nc_int(c, "max_gram_length", 2);
    nc_int(c, "max_skip_count", skip);
    nc_string(c, "mode", mode);
    nc_ints(c, "ngram_counts", 2, (int64_t[]){0, 2});
    nc_ints(c, "ngram_indexes", 3, (int64_t[]){0, 1, 2});
    nc_ints(c, "pool_int64s", 4, (int64_t[]){1, 3, 1, 2});
}

Test(indexing, tfidf_counts_skip_grams_and_unigrams_once)
{
    /* x = (1, 5, 2, 1, 2). Unigram 1 occurs twice, 3 never. Bigrams with
     * skip 0 are (1,5) (5,2) (2,1) (1,2): one (1,2); with skip 1 (x[i],
     * x[i+2]) they are (1,2) (5,1) (2,2): one more. Unigrams are not counted
     * again for skip 1. TF = (2, 0, 2). */
    static const int64_t x[] = {1, 5, 2, 1, 2};
    node_case c;
    tfidf_case(&c, x, 5, "TF", 1);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){3});
    expect_f32(&c.out[0], 3, (float[]){2, 0, 2}, 1e-5);
    nc_free(&c);

    /* Without skips only the first (1,2) counts: (2, 0, 1). */
    tfidf_case(&c, x, 5, "TF", 0);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){2, 0, 1}, 1e-5);
    nc_free(&c);
}

Test(indexing, tfidf_idf_and_tfidf_weighting)
{
    /* Counts (2, 0, 2) as above with weights (0.5, 0.25, 4): IDF gives the
     * weight of every n-gram seen (0.5, 0, 4), TFIDF weight * count (1, 0,
     * 8). */
    static const int64_t x[] = {1, 5, 2, 1, 2};
    const char *modes[] = {"IDF", "TFIDF"};
    const float want[2][3] = {{0.5f, 0, 4}, {1, 0, 8}};
    for (int m = 0; m < 2; m++) {
        node_case c;
        tfidf_case(&c, x, 5, modes[m], 1);
        nc_floats(&c, "weights", 3, (float[]){0.5f, 0.25f, 4});
        cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
        expect_f32(&c.out[0], 3, want[m], 1e-5);
        nc_free(&c);
    }
}

Test(indexing, tfidf_pool_not_splitting_into_ngrams_is_an_error)
{
    /* The bigram part of the pool (from offset 2) holds 3 values. */
    static const int64_t x[] = {1, 2};
    node_case c = nc_new("TfIdfVectorizer", 9);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, x, false);
    nc_int(&c, "min_gram_length", 1);
    nc_int(&c, "max_gram_length", 2);
    nc_int(&c, "max_skip_count", 0);
    nc_string(&c, "mode", "TF");
    nc_ints(&c, "ngram_counts", 2, (int64_t[]){0, 2});
    nc_ints(&c, "ngram_indexes", 3, (int64_t[]){0, 1, 2});
    nc_ints(&c, "pool_int64s", 5, (int64_t[]){1, 3, 1, 2, 7});
    expect_error(nc_build_run_dynamic(&c, 1), RN_INVALID_ARG, "ngram_counts");
    nc_free(&c);
}

/* ---- ArrayFeatureExtractor ---- */

Test(indexing, array_feature_extractor_selects_last_axis_columns)
{
    /* x [2,3] = 0..5, columns (2, 0): [[2,0],[5,3]]. */
    static const int64_t idx[] = {2, 0};
    node_case c = nc_new("ArrayFeatureExtractor", 1);
    c.domain = "ai.onnx.ml";
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, idx, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 2});
    expect_f32(&c.out[0], 4, (float[]){2, 0, 5, 3}, 1e-5);
    nc_free(&c);
}

Test(indexing, array_feature_extractor_on_a_vector_and_out_of_range)
{
    /* A 1-D x is one row: [1, 1] holding x[1]. Index 3 of 3 columns fails. */
    static const int64_t ok[] = {1}, bad[] = {3};
    node_case c = nc_new("ArrayFeatureExtractor", 1);
    c.domain = "ai.onnx.ml";
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, iota12, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){1}, ok, false);
    cr_assert_eq(nc_build_run_dynamic(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){1, 1});
    expect_f32(&c.out[0], 1, (float[]){1}, 1e-5);
    nc_free(&c);

    node_case d = nc_new("ArrayFeatureExtractor", 1);
    d.domain = "ai.onnx.ml";
    nc_input(&d, RN_F32, 1, (int64_t[]){3}, iota12, false);
    nc_input(&d, RN_I64, 1, (int64_t[]){1}, bad, false);
    expect_error(nc_build_run_dynamic(&d, 1), RN_INVALID_ARG, "index 3");
    nc_free(&d);
}
