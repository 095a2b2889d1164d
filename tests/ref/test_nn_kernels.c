/* REF NN kernels (Conv, pools, LRN, BatchNormalization, Gemm, MatMul,
 * Softmax, LayerNormalization, Dropout, Flatten), run one node at a time the
 * way the executor does: build a one-node graph, infer shapes, pick the
 * kernel from the REF registry, allocate outputs from the inferred shapes,
 * run. Expected values are worked out by hand in the comment beside them;
 * the larger cases check the f32 fast paths (im2col + blocked sgemm) against
 * a plain loop written here. */
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

static void expect_ok(rn_status st)
{
    cr_assert_eq(st, RN_OK, "status %s: %s", rn_status_name(st), rn_last_error());
}

static const float iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const float ones9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};

/* A deterministic pseudo-random float in [-1, 1). */
static float noise(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* ---- Conv ---- */

Test(conv, valid_2x2_kernel_sums_windows)
{
    /* x = 0..8 as 3x3, W = 2x2 of ones: each output sums a 2x2 window:
     * 0+1+3+4 = 8, 1+2+4+5 = 12, 3+4+6+7 = 20, 4+5+7+8 = 24. */
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 4, (int64_t[]){1, 1, 3, 3}, iota);
    nc_input(&c, RN_F32, 4, (int64_t[]){1, 1, 2, 2}, ones9, true);
    expect_ok(nc_build_run(&c, 1));
    expect_shape(&c.out[0], 4, (int64_t[]){1, 1, 2, 2});
    expect_f32_rel(&c.out[0], 4, (float[]){8, 12, 20, 24}, 1e-5);
    nc_free(&c);
}

Test(conv, pads_of_one_sum_3x3_neighbourhoods)
{
    /* 3x3 ones over x = 0..8 padded by 1: each output is its neighbourhood's sum,
     * e.g. corner (0,0): 0+1+3+4 = 8, centre: 0+..+8 = 36, edge (0,1): 0+1+2+3+4+5 = 15. */
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 4, (int64_t[]){1, 1, 3, 3}, iota);
    nc_input(&c, RN_F32, 4, (int64_t[]){1, 1, 3, 3}, ones9, true);
    nc_ints(&c, "pads", 4, (int64_t[]){1, 1, 1, 1});
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 9, (float[]){8, 15, 12, 21, 36, 27, 20, 33, 24}, 1e-5);
    nc_free(&c);
}

Test(conv, same_upper_and_same_lower_put_the_odd_pad_at_opposite_ends)
{
    /* 1-D x = 1..5, W = [1, 10], stride 2: out = ceil(5/2) = 3, total pad =
     * (3-1)*2 + 2 - 5 = 1. SAME_UPPER pads at the end: windows (1,2) (3,4) (5,0)
     * -> 21, 43, 5. SAME_LOWER pads at the start: (0,1) (2,3) (4,5) -> 10, 32, 54. */
    static const float x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 10};
    const char *modes[2] = {"SAME_UPPER", "SAME_LOWER"};
    const float want[2][3] = {{21, 43, 5}, {10, 32, 54}};
    for (int m = 0; m < 2; m++) {
        node_case c = nc_new("Conv", 11);
        nc_f32(&c, 3, (int64_t[]){1, 1, 5}, x);
        nc_input(&c, RN_F32, 3, (int64_t[]){1, 1, 2}, w, true);
        nc_string(&c, "auto_pad", modes[m]);
        nc_ints(&c, "strides", 1, (int64_t[]){2});
        expect_ok(nc_build_run(&c, 1));
        expect_shape(&c.out[0], 3, (int64_t[]){1, 1, 3});
        expect_f32_rel(&c.out[0], 3, want[m], 1e-5);
        nc_free(&c);
    }
}

Test(conv, valid_auto_pad_ignores_pads)
{
    /* VALID with (ignored) pads: 1-D x = 1..5, W = [1, 1, 1] -> 6, 9, 12. */
    static const float x[5] = {1, 2, 3, 4, 5}, w[3] = {1, 1, 1};
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 3, (int64_t[]){1, 1, 5}, x);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 1, 3}, w, true);
    nc_string(&c, "auto_pad", "VALID");
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 3, (float[]){6, 9, 12}, 1e-5);
    nc_free(&c);
}

Test(conv, dilation_spreads_the_kernel)
{
    /* 1-D x = 1..5, W = [1, 1], dilation 2: span 3, out 3: x0+x2, x1+x3, x2+x4 = 4, 6, 8. */
    static const float x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 1};
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 3, (int64_t[]){1, 1, 5}, x);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 1, 2}, w, true);
    nc_ints(&c, "dilations", 1, (int64_t[]){2});
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 3, (float[]){4, 6, 8}, 1e-5);
    nc_free(&c);
}

Test(conv, strides_with_asymmetric_pads)
{
    /* x = 0..15 as 4x4, W = 2x2 ones, stride 2, pads top 1 left 0 bottom 0 right 1.
     * Rows -1..0 and 1..2, cols 0..1 and 2..3 (col 4 is padding):
     * (0,0): 0+1 = 1; (0,1): 2+3 = 5; (1,0): 4+5+8+9 = 26; (1,1): 6+7+10+11 = 34.
     * Out H = (4+1-2)/2+1 = 2, W = (4+1-2)/2+1 = 2. */
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 4, (int64_t[]){1, 1, 4, 4}, iota);
    nc_input(&c, RN_F32, 4, (int64_t[]){1, 1, 2, 2}, ones9, true);
    nc_ints(&c, "strides", 2, (int64_t[]){2, 2});
    nc_ints(&c, "pads", 4, (int64_t[]){1, 0, 0, 1});
    expect_ok(nc_build_run(&c, 1));
    expect_shape(&c.out[0], 4, (int64_t[]){1, 1, 2, 2});
    expect_f32_rel(&c.out[0], 4, (float[]){1, 5, 26, 34}, 1e-5);
    nc_free(&c);
}

Test(conv, depthwise_groups_with_bias)
{
    /* group 2, one channel each: c0 = [1, 2] * 10 + 1, c1 = [3, 4] * 100 + 2. */
    static const float x[4] = {1, 2, 3, 4}, w[2] = {10, 100}, b[2] = {1, 2};
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 4, (int64_t[]){1, 2, 1, 2}, x);
    nc_input(&c, RN_F32, 4, (int64_t[]){2, 1, 1, 1}, w, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, b, true);
    nc_int(&c, "group", 2);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){11, 21, 302, 402}, 1e-5);
    nc_free(&c);
}

Test(conv, grouped_channels_only_see_their_group)
{
    /* C = 4, group 2, M = 2, 1x1 kernels. Channels hold 1, 2, 3, 4 (one pixel).
     * Group 0 (ch 0,1) with W0 = [1, 1] -> 3; group 1 (ch 2,3) with W1 = [1, -1] -> -1. */
    static const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, -1};
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 4, (int64_t[]){1, 4, 1, 1}, x);
    nc_input(&c, RN_F32, 4, (int64_t[]){2, 2, 1, 1}, w, true);
    nc_int(&c, "group", 2);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 2, (float[]){3, -1}, 1e-5);
    nc_free(&c);
}

/* A plain-loop 2-D convolution (groups, strides, pads, dilations) in double. */
static void conv_oracle(const float *x, const float *w, const float *b, int64_t batch, int64_t ch,
                        int64_t h, int64_t wd, int64_t m, int64_t group, int64_t k, int64_t s,
                        int64_t p, int64_t d, int64_t oh, int64_t ow, float *y)
{
    int64_t cg = ch / group, mg = m / group;
    for (int64_t n = 0; n < batch; n++)
        for (int64_t o = 0; o < m; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double acc = b ? b[o] : 0.0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t u = 0; u < k; u++)
                            for (int64_t v = 0; v < k; v++) {
                                int64_t ih = i * s - p + u * d, iw = j * s - p + v * d;
                                if (ih < 0 || ih >= h || iw < 0 || iw >= wd)
                                    continue;
                                acc += (double)w[((o * cg + c) * k + u) * k + v] *
                                       x[((n * ch + (o / mg) * cg + c) * h + ih) * wd + iw];
                            }
                    y[((n * m + o) * oh + i) * ow + j] = (float)acc;
                }
}

Test(conv, im2col_and_sgemm_match_a_plain_loop)
{
    /* Sizes chosen to cross the sgemm's register tiles and cache blocks
     * (M not a multiple of 6, K > 128, N not a multiple of 16), for the
     * 1x1 direct path, the im2col path, grouped and depthwise cases. */
    struct {
        int64_t batch, ch, h, w, m, group, k, s, p, d;
    } cases[] = {
        {2, 19, 13, 11, 23, 1, 3, 1, 1, 1},
        {1, 40, 9, 17, 13, 1, 1, 1, 0, 1},
        {1, 6, 15, 15, 9, 3, 3, 2, 2, 2},
        {1, 3, 20, 20, 8, 1, 7, 2, 3, 1},
        {1, 8, 10, 10, 8, 8, 3, 1, 1, 1},
        /* Depthwise: channel multiplier 2 with stride 2 and dilation 2; a
         * 37-wide row (blocks of 16 and 4 plus a tail) with a 5x5 kernel. */
        {1, 6, 13, 13, 12, 6, 3, 2, 1, 2},
        {1, 4, 9, 37, 4, 4, 5, 1, 2, 1},
        /* K = 576, 64 columns per output row: im2col runs in several bands. */
        {1, 64, 64, 64, 8, 1, 3, 1, 1, 1},
    };
    uint32_t seed = 7;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        int64_t n = cases[t].batch, ch = cases[t].ch, h = cases[t].h, wd = cases[t].w;
        int64_t m = cases[t].m, grp = cases[t].group, k = cases[t].k, s = cases[t].s;
        int64_t p = cases[t].p, d = cases[t].d;
        int64_t nx = n * ch * h * wd, nw = m * (ch / grp) * k * k;
        float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
        float *b = malloc(sizeof(float) * (size_t)m);
        for (int64_t i = 0; i < nx; i++)
            x[i] = noise(&seed);
        for (int64_t i = 0; i < nw; i++)
            w[i] = noise(&seed);
        for (int64_t i = 0; i < m; i++)
            b[i] = noise(&seed);
        node_case c = nc_new("Conv", 11);
        nc_f32(&c, 4, (int64_t[]){n, ch, h, wd}, x);
        nc_input(&c, RN_F32, 4, (int64_t[]){m, ch / grp, k, k}, w, true);
        nc_input(&c, RN_F32, 1, (int64_t[]){m}, b, true);
        nc_int(&c, "group", grp);
        nc_ints(&c, "strides", 2, (int64_t[]){s, s});
        nc_ints(&c, "pads", 4, (int64_t[]){p, p, p, p});
        nc_ints(&c, "dilations", 2, (int64_t[]){d, d});
        expect_ok(nc_build_run(&c, 1));
        int64_t oh = (h + 2 * p - (k - 1) * d - 1) / s + 1,
                ow = (wd + 2 * p - (k - 1) * d - 1) / s + 1;
        expect_shape(&c.out[0], 4, (int64_t[]){n, m, oh, ow});
        float *want = malloc(sizeof(float) * (size_t)(n * m * oh * ow));
        conv_oracle(x, w, b, n, ch, h, wd, m, grp, k, s, p, d, oh, ow, want);
        expect_f32_rel(&c.out[0], (size_t)(n * m * oh * ow), want, 1e-4);
        free(want);
        nc_free(&c);
        free(x);
        free(w);
        free(b);
    }
}

Test(conv, f64_and_f16_give_the_same_sums)
{
    /* The 2x2-ones case of valid_2x2_kernel_sums_windows in f64 and f16 (exact in both). */
    static const double xd[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, wd[4] = {1, 1, 1, 1};
    node_case c = nc_new("Conv", 11);
    nc_input(&c, RN_F64, 4, (int64_t[]){1, 1, 3, 3}, xd, false);
    nc_input(&c, RN_F64, 4, (int64_t[]){1, 1, 2, 2}, wd, true);
    expect_ok(nc_build_run(&c, 1));
    const double *yd = c.out[0].data;
    cr_assert(yd[0] == 8 && yd[1] == 12 && yd[2] == 20 && yd[3] == 24);
    nc_free(&c);

    uint16_t xh[9], wh[4];
    for (int i = 0; i < 9; i++)
        xh[i] = plugin_f32_to_f16((float)i);
    for (int i = 0; i < 4; i++)
        wh[i] = plugin_f32_to_f16(1.0f);
    c = nc_new("Conv", 11);
    nc_input(&c, RN_F16, 4, (int64_t[]){1, 1, 3, 3}, xh, false);
    nc_input(&c, RN_F16, 4, (int64_t[]){1, 1, 2, 2}, wh, true);
    expect_ok(nc_build_run(&c, 1));
    cr_assert_eq(c.out[0].type, RN_F16);
    const uint16_t *yh = c.out[0].data;
    cr_assert(plugin_f16_to_f32(yh[0]) == 8 && plugin_f16_to_f32(yh[3]) == 24);
    nc_free(&c);
}

Test(conv, channel_mismatch_is_a_shape_error)
{
    /* X has 3 channels, W expects 2 x group 1. */
    node_case c = nc_new("Conv", 11);
    nc_f32(&c, 4, (int64_t[]){1, 3, 3, 3}, iota);
    nc_input(&c, RN_F32, 4, (int64_t[]){1, 2, 2, 2}, ones9, true);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "'n'") != NULL, "message names the node: %s",
              rn_last_error());
    nc_free(&c);
}

Test(conv, integer_input_is_a_type_error)
{
    static const int32_t xi[9] = {0};
    node_case c = nc_new("Conv", 11);
    nc_input(&c, RN_I32, 4, (int64_t[]){1, 1, 3, 3}, xi, false);
    nc_input(&c, RN_I32, 4, (int64_t[]){1, 1, 2, 2}, xi, true);
    cr_assert_eq(nc_build(&c, 1), RN_TYPE_MISMATCH);
    nc_free(&c);
}

/* ---- pools ---- */

Test(pool, maxpool_ceil_mode_keeps_the_partial_window)
{
    /* 1-D x = 1..5, k 2, s 2: floor mode gives windows (1,2) (3,4) -> 2, 4;
     * ceil mode adds the partial window (5) -> 2, 4, 5. */
    static const float x[5] = {1, 2, 3, 4, 5};
    for (int ceil_mode = 0; ceil_mode < 2; ceil_mode++) {
        node_case c = nc_new("MaxPool", 12);
        nc_f32(&c, 3, (int64_t[]){1, 1, 5}, x);
        nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
        nc_ints(&c, "strides", 1, (int64_t[]){2});
        nc_int(&c, "ceil_mode", ceil_mode);
        expect_ok(nc_build_run(&c, 1));
        expect_shape(&c.out[0], 3, (int64_t[]){1, 1, ceil_mode ? 3 : 2});
        expect_f32_rel(&c.out[0], ceil_mode ? 3 : 2, (float[]){2, 4, 5}, 1e-5);
        nc_free(&c);
    }
}

Test(pool, ceil_mode_drops_a_window_starting_in_the_end_padding)
{
    /* x = 1..4, k 2, s 2, pads 0/1, ceil: (4+1-2)/2 = 1.5 -> 3 windows by the
     * ceiling, but the third would start at 4 (>= in + pad_begin) so 2 remain. */
    static const float x[4] = {1, 2, 3, 4};
    node_case c = nc_new("MaxPool", 12);
    nc_f32(&c, 3, (int64_t[]){1, 1, 4}, x);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_ints(&c, "strides", 1, (int64_t[]){2});
    nc_ints(&c, "pads", 2, (int64_t[]){0, 1});
    nc_int(&c, "ceil_mode", 1);
    expect_ok(nc_build_run(&c, 1));
    expect_shape(&c.out[0], 3, (int64_t[]){1, 1, 2});
    expect_f32_rel(&c.out[0], 2, (float[]){2, 4}, 1e-5);
    nc_free(&c);
}

Test(pool, maxpool_dilation_and_indices)
{
    /* x = 0..15 as 4x4, k 2x2, dilation 2: out 2x2, window (i,j) reads
     * (i,j) (i,j+2) (i+2,j) (i+2,j+2): max is x[i+2][j+2] = 10, 11, 14, 15 at
     * those flat indices; column-major (storage_order 1) indices are h + w*4:
     * (2,2) -> 10, (2,3) -> 14, (3,2) -> 11, (3,3) -> 15. */
    for (int order = 0; order < 2; order++) {
        node_case c = nc_new("MaxPool", 12);
        nc_f32(&c, 4, (int64_t[]){1, 1, 4, 4}, iota);
        nc_ints(&c, "kernel_shape", 2, (int64_t[]){2, 2});
        nc_ints(&c, "dilations", 2, (int64_t[]){2, 2});
        nc_int(&c, "storage_order", order);
        expect_ok(nc_build_run(&c, 2));
        expect_f32_rel(&c.out[0], 4, (float[]){10, 11, 14, 15}, 1e-5);
        cr_assert_eq(c.out[1].type, RN_I64);
        expect_i64(&c.out[1], 4, order ? (int64_t[]){10, 14, 11, 15} : (int64_t[]){10, 11, 14, 15});
        nc_free(&c);
    }
}

Test(pool, maxpool_indices_count_across_channels)
{
    /* Two channels of 2 values, k 2: channel 1's max (value 3) sits at flat index 2. */
    static const float x[4] = {0, 1, 3, 2};
    node_case c = nc_new("MaxPool", 12);
    nc_f32(&c, 3, (int64_t[]){1, 2, 2}, x);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    expect_ok(nc_build_run(&c, 2));
    expect_f32_rel(&c.out[0], 2, (float[]){1, 3}, 1e-5);
    expect_i64(&c.out[1], 2, (int64_t[]){1, 2});
    nc_free(&c);
}

Test(pool, maxpool_u8)
{
    static const uint8_t x[4] = {7, 200, 3, 9};
    node_case c = nc_new("MaxPool", 12);
    nc_input(&c, RN_U8, 3, (int64_t[]){1, 1, 4}, x, false);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_ints(&c, "strides", 1, (int64_t[]){2});
    expect_ok(nc_build_run(&c, 1));
    const uint8_t *y = c.out[0].data;
    cr_assert(c.out[0].type == RN_U8 && y[0] == 200 && y[1] == 9);
    nc_free(&c);
}

Test(pool, averagepool_count_include_pad)
{
    /* x = 1, 2, 3, k 3, pads 1/1: windows (p,1,2) (1,2,3) (2,3,p).
     * Excluding pads: 3/2, 6/3, 5/2; including: 3/3, 6/3, 5/3. */
    static const float x[3] = {1, 2, 3};
    const float want[2][3] = {{1.5f, 2, 2.5f}, {1, 2, 5.0f / 3}};
    for (int inc = 0; inc < 2; inc++) {
        node_case c = nc_new("AveragePool", 11);
        nc_f32(&c, 3, (int64_t[]){1, 1, 3}, x);
        nc_ints(&c, "kernel_shape", 1, (int64_t[]){3});
        nc_ints(&c, "pads", 2, (int64_t[]){1, 1});
        nc_int(&c, "count_include_pad", inc);
        expect_ok(nc_build_run(&c, 1));
        expect_f32_rel(&c.out[0], 3, want[inc], 1e-5);
        nc_free(&c);
    }
}

Test(pool, averagepool_ceil_window_counts_only_the_padded_input)
{
    /* x = 1..5, k 2, s 2, ceil, count_include_pad: the last window covers
     * position 4 and 5; 5 lies past input + pads so it is not counted: 5/1. */
    static const float x[5] = {1, 2, 3, 4, 5};
    node_case c = nc_new("AveragePool", 11);
    nc_f32(&c, 3, (int64_t[]){1, 1, 5}, x);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_ints(&c, "strides", 1, (int64_t[]){2});
    nc_int(&c, "ceil_mode", 1);
    nc_int(&c, "count_include_pad", 1);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 3, (float[]){1.5f, 3.5f, 5}, 1e-5);
    nc_free(&c);
}

Test(pool, averagepool_same_lower_pads_at_the_start)
{
    /* x = 1..4, k 2, SAME_LOWER, stride 1: out 4, total pad 1 at the start:
     * windows (p,1) (1,2) (2,3) (3,4) -> 1, 1.5, 2.5, 3.5 (pads not counted). */
    static const float x[4] = {1, 2, 3, 4};
    node_case c = nc_new("AveragePool", 11);
    nc_f32(&c, 3, (int64_t[]){1, 1, 4}, x);
    nc_ints(&c, "kernel_shape", 1, (int64_t[]){2});
    nc_string(&c, "auto_pad", "SAME_LOWER");
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){1, 1.5f, 2.5f, 3.5f}, 1e-5);
    nc_free(&c);
}

Test(pool, global_pools_reduce_each_plane)
{
    /* Two channels 0..3 and 4..7: averages 1.5 and 5.5, maxima 3 and 7. */
    const char *ops[2] = {"GlobalAveragePool", "GlobalMaxPool"};
    const float want[2][2] = {{1.5f, 5.5f}, {3, 7}};
    for (int i = 0; i < 2; i++) {
        node_case c = nc_new(ops[i], 11);
        nc_f32(&c, 4, (int64_t[]){1, 2, 2, 2}, iota);
        expect_ok(nc_build_run(&c, 1));
        expect_shape(&c.out[0], 4, (int64_t[]){1, 2, 1, 1});
        expect_f32_rel(&c.out[0], 2, want[i], 1e-5);
        nc_free(&c);
    }
}

Test(pool, kernel_shape_is_required)
{
    node_case c = nc_new("MaxPool", 12);
    nc_f32(&c, 3, (int64_t[]){1, 1, 4}, iota);
    cr_assert_neq(nc_build(&c, 1), RN_OK);
    nc_free(&c);
}

/* ---- LRN, BatchNormalization, LayerNormalization ---- */

Test(norm, lrn_divides_by_the_channel_window)
{
    /* size 3, alpha 3, beta 1, bias 1, channels 1, 2, 3 (one pixel):
     * c0: 1 / (1 + 1*(1+4)) = 1/6; c1: 2 / (1 + 14) = 2/15; c2: 3 / (1 + 13) = 3/14. */
    static const float x[3] = {1, 2, 3};
    node_case c = nc_new("LRN", 13);
    nc_f32(&c, 4, (int64_t[]){1, 3, 1, 1}, x);
    nc_int(&c, "size", 3);
    nc_float(&c, "alpha", 3);
    nc_float(&c, "beta", 1);
    nc_float(&c, "bias", 1);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 3, (float[]){1.0f / 6, 2.0f / 15, 3.0f / 14}, 1e-5);
    nc_free(&c);
}

Test(norm, batchnorm_inference)
{
    /* Channel 0: mean 1, var 4, scale 2, B 1 -> (x-1)/2*2+1 = x; channel 1:
     * mean 0, var 1, scale 1, B -1 -> x - 1 (epsilon 0). */
    static const float x[4] = {3, 5, 3, 5}, scale[2] = {2, 1}, b[2] = {1, -1};
    static const float mean[2] = {1, 0}, var[2] = {4, 1};
    node_case c = nc_new("BatchNormalization", 15);
    nc_f32(&c, 3, (int64_t[]){1, 2, 2}, x);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, scale, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, b, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, mean, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, var, true);
    nc_float(&c, "epsilon", 0);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){3, 5, 2, 4}, 1e-5);
    nc_free(&c);
}

Test(norm, batchnorm_training_mode_uses_batch_statistics)
{
    /* One channel, values 1 and 3: batch mean 2, variance 1 -> y = -1, 1
     * (scale 1, B 0, epsilon 0). Running stats with momentum 0.5 from
     * mean 0 / var 3: 0*0.5 + 2*0.5 = 1 and 3*0.5 + 1*0.5 = 2. */
    static const float x[2] = {1, 3}, one[1] = {1}, zero[1] = {0}, three[1] = {3};
    node_case c = nc_new("BatchNormalization", 15);
    nc_f32(&c, 3, (int64_t[]){2, 1, 1}, x);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, one, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, zero, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, zero, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, three, true);
    nc_float(&c, "epsilon", 0);
    nc_float(&c, "momentum", 0.5f);
    nc_int(&c, "training_mode", 1);
    expect_ok(nc_build_run(&c, 3));
    expect_f32_rel(&c.out[0], 2, (float[]){-1, 1}, 1e-5);
    expect_f32_rel(&c.out[1], 1, (float[]){1}, 1e-5);
    expect_f32_rel(&c.out[2], 1, (float[]){2}, 1e-5);
    nc_free(&c);
}

Test(norm, layernorm_statistics_outputs)
{
    /* Rows [1, 3] and [2, 6]: means 2 and 4, variances 1 and 4, so
     * InvStdDev 1 and 0.5 (epsilon 0); y = normalized * [1, 2] + [0, 10]:
     * row 0: -1, 1*2+10 = 12; row 1: -1, 12. */
    static const float x[4] = {1, 3, 2, 6}, scale[2] = {1, 2}, b[2] = {0, 10};
    node_case c = nc_new("LayerNormalization", 17);
    nc_f32(&c, 2, (int64_t[]){2, 2}, x);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, scale, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){2}, b, true);
    nc_float(&c, "epsilon", 0);
    expect_ok(nc_build_run(&c, 3));
    expect_f32_rel(&c.out[0], 4, (float[]){-1, 12, -1, 12}, 1e-5);
    expect_shape(&c.out[1], 2, (int64_t[]){2, 1});
    expect_f32_rel(&c.out[1], 2, (float[]){2, 4}, 1e-5);
    expect_f32_rel(&c.out[2], 2, (float[]){1, 0.5f}, 1e-5);
    nc_free(&c);
}

Test(norm, layernorm_axis_zero_normalizes_everything)
{
    /* axis 0 over [0, 1, 2, 3]: mean 1.5, variance 1.25; Scale broadcasts from [1]. */
    static const float one[1] = {1};
    node_case c = nc_new("LayerNormalization", 17);
    nc_f32(&c, 2, (int64_t[]){2, 2}, iota);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, one, true);
    nc_int(&c, "axis", 0);
    nc_float(&c, "epsilon", 0);
    expect_ok(nc_build_run(&c, 1));
    float s = 1.0f / sqrtf(1.25f);
    expect_f32_rel(&c.out[0], 4, (float[]){-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s}, 1e-5);
    nc_free(&c);
}

/* ---- Gemm ---- */

Test(gemm, transposes_alpha_beta_and_row_bias)
{
    /* A stored 2x1 with transA -> op(A) = [1 2] (1x2); B stored 2x2 [[1 2][3 4]]
     * with transB -> op(B) = [[1 3][2 4]]; A*B = [1+4, 3+8] = [5 11];
     * alpha 2, beta 10, C = [1, 2] (broadcast row) -> [10+10, 22+20] = [20, 42]. */
    static const float a[2] = {1, 2}, b[4] = {1, 2, 3, 4}, cc[2] = {1, 2};
    node_case c = nc_new("Gemm", 13);
    nc_f32(&c, 2, (int64_t[]){2, 1}, a);
    nc_f32(&c, 2, (int64_t[]){2, 2}, b);
    nc_f32(&c, 1, (int64_t[]){2}, cc);
    nc_int(&c, "transA", 1);
    nc_int(&c, "transB", 1);
    nc_float(&c, "alpha", 2);
    nc_float(&c, "beta", 10);
    expect_ok(nc_build_run(&c, 1));
    expect_shape(&c.out[0], 2, (int64_t[]){1, 2});
    expect_f32_rel(&c.out[0], 2, (float[]){20, 42}, 1e-5);
    nc_free(&c);
}

Test(gemm, column_and_scalar_bias_broadcast)
{
    /* A = I (2x2), B = [[1 2][3 4]]: A*B = B. C column [10; 20] adds per row;
     * a scalar C = 5 adds everywhere. */
    static const float a[4] = {1, 0, 0, 1}, b[4] = {1, 2, 3, 4}, col[2] = {10, 20}, s[1] = {5};
    node_case c = nc_new("Gemm", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, a);
    nc_f32(&c, 2, (int64_t[]){2, 2}, b);
    nc_f32(&c, 2, (int64_t[]){2, 1}, col);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){11, 12, 23, 24}, 1e-5);
    nc_free(&c);

    c = nc_new("Gemm", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, a);
    nc_f32(&c, 2, (int64_t[]){2, 2}, b);
    nc_f32(&c, 0, NULL, s);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){6, 7, 8, 9}, 1e-5);
    nc_free(&c);
}

Test(gemm, bad_bias_shape_is_a_shape_error)
{
    /* (M, N) = (2, 2) cannot take C of 3 columns. */
    static const float a[4] = {0}, cc[3] = {0};
    node_case c = nc_new("Gemm", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, a);
    nc_f32(&c, 2, (int64_t[]){2, 2}, a);
    nc_f32(&c, 1, (int64_t[]){3}, cc);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    nc_free(&c);
}

Test(gemm, blocked_sgemm_matches_a_plain_loop)
{
    /* Sizes past the sgemm's blocks (KC 128, MC 144, NC 512) and its
     * matrix-vector paths (M = 1, N = 1), every transpose combination. */
    int64_t sizes[][3] = {{150, 530, 200}, {1, 37, 300}, {29, 1, 140}, {7, 9, 5}};
    uint32_t seed = 11;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int tr = 0; tr < 4; tr++) {
            int64_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
            bool ta = tr & 1, tb = tr & 2;
            float *a = malloc(sizeof(float) * (size_t)(m * k));
            float *b = malloc(sizeof(float) * (size_t)(k * n));
            float *cc = malloc(sizeof(float) * (size_t)(m * n));
            float *want = malloc(sizeof(float) * (size_t)(m * n));
            for (int64_t i = 0; i < m * k; i++)
                a[i] = noise(&seed);
            for (int64_t i = 0; i < k * n; i++)
                b[i] = noise(&seed);
            for (int64_t i = 0; i < m * n; i++)
                cc[i] = noise(&seed);
            for (int64_t i = 0; i < m; i++) {
                for (int64_t j = 0; j < n; j++) {
                    double acc = 0.0;
                    for (int64_t p = 0; p < k; p++)
                        acc += (double)(ta ? a[p * m + i] : a[i * k + p]) *
                               (tb ? b[j * k + p] : b[p * n + j]);
                    want[i * n + j] = (float)(0.5 * acc + 2.0 * cc[i * n + j]);
                }
            }
            node_case c = nc_new("Gemm", 13);
            nc_f32(&c, 2, ta ? (int64_t[]){k, m} : (int64_t[]){m, k}, a);
            nc_f32(&c, 2, tb ? (int64_t[]){n, k} : (int64_t[]){k, n}, b);
            nc_f32(&c, 2, (int64_t[]){m, n}, cc);
            nc_int(&c, "transA", ta);
            nc_int(&c, "transB", tb);
            nc_float(&c, "alpha", 0.5f);
            nc_float(&c, "beta", 2.0f);
            expect_ok(nc_build_run(&c, 1));
            expect_f32_rel(&c.out[0], (size_t)(m * n), want, 1e-4);
            nc_free(&c);
            free(a);
            free(b);
            free(cc);
            free(want);
        }
    }
}

Test(gemm, integer_gemm_wraps_and_scales)
{
    /* i32: [2 3] x [[4][5]] = 23, alpha 2 -> 46, beta 1 with C = 1 -> 47. */
    static const int32_t a[2] = {2, 3}, b[2] = {4, 5}, cc[1] = {1};
    node_case c = nc_new("Gemm", 13);
    nc_input(&c, RN_I32, 2, (int64_t[]){1, 2}, a, false);
    nc_input(&c, RN_I32, 2, (int64_t[]){2, 1}, b, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){1}, cc, false);
    nc_float(&c, "alpha", 2);
    expect_ok(nc_build_run(&c, 1));
    cr_assert_eq(((const int32_t *)c.out[0].data)[0], 47);
    nc_free(&c);
}

/* ---- MatMul ---- */

Test(matmul, vector_operands_drop_their_dim)
{
    /* [1 2] . [[1 2][3 4]] = [7 10] (shape [2]); [[1 2][3 4]] . [1 1] = [3 7];
     * [1 2] . [3 4] = 11 (a scalar). */
    static const float v[2] = {1, 2}, m[4] = {1, 2, 3, 4}, o[2] = {1, 1}, w[2] = {3, 4};
    node_case c = nc_new("MatMul", 13);
    nc_f32(&c, 1, (int64_t[]){2}, v);
    nc_f32(&c, 2, (int64_t[]){2, 2}, m);
    expect_ok(nc_build_run(&c, 1));
    expect_shape(&c.out[0], 1, (int64_t[]){2});
    expect_f32_rel(&c.out[0], 2, (float[]){7, 10}, 1e-5);
    nc_free(&c);

    c = nc_new("MatMul", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, m);
    nc_f32(&c, 1, (int64_t[]){2}, o);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 2, (float[]){3, 7}, 1e-5);
    nc_free(&c);

    c = nc_new("MatMul", 13);
    nc_f32(&c, 1, (int64_t[]){2}, v);
    nc_f32(&c, 1, (int64_t[]){2}, w);
    expect_ok(nc_build_run(&c, 1));
    cr_assert_eq(c.out[0].rank, 0);
    expect_f32_rel(&c.out[0], 1, (float[]){11}, 1e-5);
    nc_free(&c);
}

Test(matmul, batch_dims_broadcast)
{
    /* A [2,1,1,2] = batches [1 0] and [0 1]; B [3,2,1] = columns [1;2], [3;4], [5;6].
     * Y [2,3,1,1]: A0 picks row 0 of each column (1, 3, 5), A1 row 1 (2, 4, 6). */
    static const float a[4] = {1, 0, 0, 1}, b[6] = {1, 2, 3, 4, 5, 6};
    node_case c = nc_new("MatMul", 13);
    nc_f32(&c, 4, (int64_t[]){2, 1, 1, 2}, a);
    nc_f32(&c, 3, (int64_t[]){3, 2, 1}, b);
    expect_ok(nc_build_run(&c, 1));
    expect_shape(&c.out[0], 4, (int64_t[]){2, 3, 1, 1});
    expect_f32_rel(&c.out[0], 6, (float[]){1, 3, 5, 2, 4, 6}, 1e-5);
    nc_free(&c);
}

Test(matmul, shared_b_folds_batches)
{
    /* A [2,2,2] (two identities scaled by 1 and 2) times B [2,2] = [[1 2][3 4]]. */
    static const float a[8] = {1, 0, 0, 1, 2, 0, 0, 2}, b[4] = {1, 2, 3, 4};
    node_case c = nc_new("MatMul", 13);
    nc_f32(&c, 3, (int64_t[]){2, 2, 2}, a);
    nc_f32(&c, 2, (int64_t[]){2, 2}, b);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 8, (float[]){1, 2, 3, 4, 2, 4, 6, 8}, 1e-5);
    nc_free(&c);
}

Test(matmul, integer_types)
{
    /* u64 wraps modulo 2^64: (2^63) * 2 = 0, + 1*3 = 3; i64: [-1 2] . [3 4] = 5. */
    static const uint64_t ua[2] = {UINT64_C(1) << 63, 1}, ub[2] = {2, 3};
    node_case c = nc_new("MatMul", 13);
    nc_input(&c, RN_U64, 2, (int64_t[]){1, 2}, ua, false);
    nc_input(&c, RN_U64, 2, (int64_t[]){2, 1}, ub, false);
    expect_ok(nc_build_run(&c, 1));
    cr_assert_eq(((const uint64_t *)c.out[0].data)[0], 3);
    nc_free(&c);

    static const int64_t ia[2] = {-1, 2}, ib[2] = {3, 4};
    c = nc_new("MatMul", 13);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, ia, false);
    nc_input(&c, RN_I64, 1, (int64_t[]){2}, ib, false);
    expect_ok(nc_build_run(&c, 1));
    cr_assert_eq(((const int64_t *)c.out[0].data)[0], 5);
    nc_free(&c);
}

Test(matmul, inner_dim_mismatch_is_a_shape_error)
{
    node_case c = nc_new("MatMul", 13);
    nc_f32(&c, 2, (int64_t[]){2, 3}, iota);
    nc_f32(&c, 2, (int64_t[]){2, 2}, iota);
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH);
    nc_free(&c);
}

/* ---- Softmax / LogSoftmax ---- */

Test(softmax, axis_semantics_changed_at_opset_13)
{
    /* x = [[0, ln 3], [0, ln 3]] ([2, 2]), axis 0.
     * Opset 11 coerces to 1x4 and normalises all four: 1, 3, 1, 3 over 8.
     * Opset 13 normalises each column: equal entries -> 0.5 everywhere. */
    float x[4] = {0, logf(3), 0, logf(3)};
    node_case c = nc_new("Softmax", 11);
    nc_f32(&c, 2, (int64_t[]){2, 2}, x);
    nc_int(&c, "axis", 0);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){0.125f, 0.375f, 0.125f, 0.375f}, 1e-5);
    nc_free(&c);

    c = nc_new("Softmax", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, x);
    nc_int(&c, "axis", 0);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){0.5f, 0.5f, 0.5f, 0.5f}, 1e-5);
    nc_free(&c);
}

Test(softmax, default_axis_is_last_from_opset_13)
{
    /* [2, 1, 2] with default axis -1: rows [0, ln 3] -> 0.25, 0.75. */
    float x[4] = {0, logf(3), 0, logf(3)};
    node_case c = nc_new("Softmax", 13);
    nc_f32(&c, 3, (int64_t[]){2, 1, 2}, x);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 4, (float[]){0.25f, 0.75f, 0.25f, 0.75f}, 1e-5);
    nc_free(&c);
}

Test(softmax, logsoftmax_of_large_values_stays_finite)
{
    /* [1000, 1000 + ln 3]: log(1/4), log(3/4) without overflowing exp. */
    float x[2] = {1000.0f, 1000.0f + logf(3)};
    node_case c = nc_new("LogSoftmax", 13);
    nc_f32(&c, 1, (int64_t[]){2}, x);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 2, (float[]){logf(0.25f), logf(0.75f)}, 1e-3);
    nc_free(&c);
}

Test(softmax, axis_out_of_range_is_rejected)
{
    node_case c = nc_new("Softmax", 13);
    nc_f32(&c, 2, (int64_t[]){2, 2}, iota);
    nc_int(&c, "axis", 2);
    cr_assert_eq(nc_build(&c, 1), RN_INVALID_ARG);
    nc_free(&c);
}

/* ---- Dropout / Flatten ---- */

Test(dropout, inference_is_identity_with_an_all_true_mask)
{
    node_case c = nc_new("Dropout", 13);
    nc_f32(&c, 1, (int64_t[]){3}, iota);
    expect_ok(nc_build_run(&c, 2));
    expect_f32_rel(&c.out[0], 3, (float[]){0, 1, 2}, 1e-5);
    cr_assert_eq(c.out[1].type, RN_BOOL);
    const uint8_t *mask = c.out[1].data;
    cr_assert(mask[0] && mask[1] && mask[2]);
    nc_free(&c);
}

Test(dropout, constant_training_mode_is_unsupported)
{
    static const float ratio[1] = {0.5f}, zero[1] = {0};
    static const uint8_t yes[1] = {1};
    node_case c = nc_new("Dropout", 13);
    nc_f32(&c, 1, (int64_t[]){3}, iota);
    nc_input(&c, RN_F32, 0, NULL, ratio, true);
    nc_input(&c, RN_BOOL, 0, NULL, yes, true);
    expect_ok(nc_build(&c, 1));
    cr_assert_eq(nc_run(&c), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "training_mode") != NULL, "%s", rn_last_error());
    nc_free(&c);

    /* Ratio 0 makes training mode the identity too. */
    c = nc_new("Dropout", 13);
    nc_f32(&c, 1, (int64_t[]){3}, iota);
    nc_input(&c, RN_F32, 0, NULL, zero, true);
    nc_input(&c, RN_BOOL, 0, NULL, yes, true);
    expect_ok(nc_build_run(&c, 1));
    expect_f32_rel(&c.out[0], 3, (float[]){0, 1, 2}, 1e-5);
    nc_free(&c);
}

Test(dropout, run_time_training_mode_is_an_error)
{
    static const uint8_t yes[1] = {1};
    node_case c = nc_new("Dropout", 13);
    nc_f32(&c, 1, (int64_t[]){3}, iota);
    nc_skip(&c);
    nc_input(&c, RN_BOOL, 0, NULL, yes, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_UNSUPPORTED);
    nc_free(&c);
}

Test(flatten, axis_splits_the_dims)
{
    /* [2, 3, 2] at axis 0 -> [1, 12]; axis 2 -> [6, 2]; axis -1 -> [6, 2]; axis 3 -> [12, 1]. */
    int64_t axes[4] = {0, 2, -1, 3};
    int64_t want[4][2] = {{1, 12}, {6, 2}, {6, 2}, {12, 1}};
    for (int i = 0; i < 4; i++) {
        node_case c = nc_new("Flatten", 13);
        nc_f32(&c, 3, (int64_t[]){2, 3, 2}, iota);
        nc_int(&c, "axis", axes[i]);
        expect_ok(nc_build_run(&c, 1));
        expect_shape(&c.out[0], 2, want[i]);
        expect_f32_rel(&c.out[0], 12, iota, 1e-5);
        nc_free(&c);
    }
}

Test(flatten, negative_axis_before_opset_11_is_rejected)
{
    node_case c = nc_new("Flatten", 9);
    nc_f32(&c, 2, (int64_t[]){2, 2}, iota);
    nc_int(&c, "axis", -1);
    cr_assert_eq(nc_build(&c, 1), RN_INVALID_ARG);
    nc_free(&c);
}

/* runnel FusedMatMul (transforms/fuse_conv.c): A @ B + bias + residual
 * (input 3), then the activation. A = [[1, 2], [3, 4]], B = I, bias
 * [10, 20], residual [[-20, -30], [0, 0]]: [[-9, -8], [13, 24]], Relu
 * [[0, 0], [13, 24]] (the residual is summed before the activation). */
Test(fused_matmul, residual_is_summed_before_the_activation)
{
    static const int64_t d22[] = {2, 2}, d2[] = {2};
    node_case c = nc_new("FusedMatMul", 1);
    c.domain = "runnel";
    nc_f32(&c, 2, d22, (float[]){1, 2, 3, 4});
    nc_input(&c, RN_F32, 2, d22, (float[]){1, 0, 0, 1}, true);
    nc_input(&c, RN_F32, 1, d2, (float[]){10, 20}, true);
    nc_f32(&c, 2, d22, (float[]){-20, -30, 0, 0});
    nc_string(&c, "activation", "Relu");
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){0, 0, 13, 24}, 1e-6);
    nc_free(&c);
    /* A residual of another shape than the output's is refused. */
    c = nc_new("FusedMatMul", 1);
    c.domain = "runnel";
    nc_f32(&c, 2, d22, (float[]){1, 2, 3, 4});
    nc_input(&c, RN_F32, 2, d22, (float[]){1, 0, 0, 1}, true);
    nc_skip(&c);
    nc_f32(&c, 2, (int64_t[]){2, 3}, (float[]){0, 0, 0, 0, 0, 0});
    cr_assert_eq(nc_build(&c, 1), RN_SHAPE_MISMATCH, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "residual") != NULL, "%s", rn_last_error());
    nc_free(&c);
}
