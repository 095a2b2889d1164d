/* REF signal kernels (DFT, STFT, the Hann, Hamming and Blackman windows,
 * MelWeightMatrix), run one node at a time the way the executor does: build a
 * one-node graph, infer shapes, pick the kernel from the REF registry,
 * allocate outputs from the inferred shapes, run. Every expected value is
 * worked out by hand in the comment beside it. */
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

/* ---- DFT ---- */

Test(signal, dft_of_a_real_signal)
{
    /* x = 1 2 3 4: X0 = 10, X1 = 1 - 3 + i(-2 + 4) = -2 + 2i, X2 = 1 - 2 + 3
     * - 4 = -2, X3 = -2 - 2i. Opset 20, axis input 1 (the signal axis of
     * [1, 4, 1]). */
    node_case c = nc_new("DFT", 20);
    float x[] = {1, 2, 3, 4};
    int64_t axis = 1;
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, x, false);
    nc_skip(&c);
    nc_input(&c, RN_I64, 0, NULL, &axis, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 4, 2});
    expect_f32(&c.out[0], 8, (float[]){10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
    nc_free(&c);
}

Test(signal, dft_onesided_keeps_half_the_bins)
{
    /* The same signal, onesided: bins 0 .. 4 / 2. Opset 20's default axis -2. */
    node_case c = nc_new("DFT", 20);
    float x[] = {1, 2, 3, 4};
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, x, false);
    nc_int(&c, "onesided", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 3, 2});
    expect_f32(&c.out[0], 6, (float[]){10, 0, -2, 2, -2, 0}, 1e-5);
    nc_free(&c);
}

Test(signal, dft_length_zero_pads_opset17_axis_attribute)
{
    /* x = 1 1 padded to 4 points: X_k = 1 + e^(-i pi k / 2) = 2, 1 - i, 0,
     * 1 + i. Opset 17 takes the axis as an attribute. */
    node_case c = nc_new("DFT", 17);
    float x[] = {1, 1};
    int64_t len = 4;
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 2, 1}, x, false);
    nc_input(&c, RN_I64, 0, NULL, &len, true);
    nc_int(&c, "axis", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 4, 2});
    expect_f32(&c.out[0], 8, (float[]){2, 0, 1, -1, 0, 0, 1, 1}, 1e-6);
    nc_free(&c);
}

Test(signal, dft_inverse_undoes_the_forward_transform)
{
    /* The inverse of 10, -2+2i, -2, -2-2i is 1 2 3 4 (real). */
    node_case c = nc_new("DFT", 20);
    float x[] = {10, 0, -2, 2, -2, 0, -2, -2};
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 2}, x, false);
    nc_int(&c, "inverse", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 8, (float[]){1, 0, 2, 0, 3, 0, 4, 0}, 1e-6);
    nc_free(&c);
}

Test(signal, dft_inverse_onesided_is_irfft)
{
    /* The onesided bins 10, -2+2i, -2 of 1 2 3 4 give back the real signal of
     * length 2 * (3 - 1) = 4, shaped [1, 4, 1]. */
    node_case c = nc_new("DFT", 20);
    float x[] = {10, 0, -2, 2, -2, 0};
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 3, 2}, x, false);
    nc_int(&c, "inverse", 1);
    nc_int(&c, "onesided", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){1, 4, 1});
    expect_f32(&c.out[0], 4, (float[]){1, 2, 3, 4}, 1e-6);
    nc_free(&c);
}

Test(signal, dft_rejects_the_last_axis)
{
    node_case c = nc_new("DFT", 17);
    float x[] = {1, 2};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, x, false);
    nc_int(&c, "axis", 1);
    rn_status st = nc_build_run(&c, 1);
    cr_assert_eq(st, RN_INVALID_ARG, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (DFT)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- STFT ---- */

Test(signal, stft_frames_and_windows)
{
    /* 1..8, frames of 4 every 4 samples, onesided: frame 1 2 3 4 gives 10,
     * -2+2i, -2 and 5 6 7 8 gives 26, -2+2i, -2. With the window 0 1 1 0 the
     * first frame is 0 2 3 0: X0 = 5, X1 = 2(-i) + 3(-1) = -3 - 2i,
     * X2 = -2 + 3 = 1; the second 0 6 7 0: 13, -7 - 6i, 1. */
    float x[] = {1, 2, 3, 4, 5, 6, 7, 8}, win[] = {0, 1, 1, 0};
    int64_t step = 4, len = 4;
    for (int windowed = 0; windowed < 2; windowed++) {
        node_case c = nc_new("STFT", 17);
        nc_input(&c, RN_F32, 3, (int64_t[]){1, 8, 1}, x, false);
        nc_input(&c, RN_I64, 0, NULL, &step, true);
        if (windowed)
            nc_input(&c, RN_F32, 1, (int64_t[]){4}, win, true);
        else
            nc_skip(&c);
        nc_input(&c, RN_I64, 0, NULL, &len, true);
        cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
        expect_shape(&c.out[0], 4, (int64_t[]){1, 2, 3, 2});
        if (windowed)
            expect_f32(&c.out[0], 12, (float[]){5, 0, -3, -2, 1, 0, 13, 0, -7, -6, 1, 0}, 1e-5);
        else
            expect_f32(&c.out[0], 12, (float[]){10, 0, -2, 2, -2, 0, 26, 0, -2, 2, -2, 0}, 1e-5);
        nc_free(&c);
    }
}

/* ---- windows ---- */

static void run_window(const char *op, int64_t size, int periodic, int64_t dtype, int n,
                       const double *want)
{
    node_case c = nc_new(op, 17);
    int32_t s = (int32_t)size;
    nc_input(&c, RN_I32, 0, NULL, &s, true);
    nc_int(&c, "periodic", periodic);
    if (dtype)
        nc_int(&c, "output_datatype", dtype);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){n});
    for (int i = 0; i < n; i++) {
        double got = dtype == RN_F64 ? ((double *)c.out[0].data)[i] : ((float *)c.out[0].data)[i];
        cr_assert(fabs(got - want[i]) < 1e-6, "%s[%d] = %.9g, want %.9g", op, i, got, want[i]);
    }
    nc_free(&c);
}

Test(signal, windows_periodic_and_symmetric)
{
    /* Periodic N = 4: cos(2 pi n / 4) = 1, 0, -1, 0. Hann 0.5 - 0.5 cos:
     * 0, .5, 1, .5; Hamming 25/46 - 21/46 cos: 4/46, 25/46, 1, 25/46;
     * Blackman .42 - .5 cos + .08 cos(2x): 0, .34, 1, .34. Symmetric size 5
     * uses N = 4 too: Hann 0, .5, 1, .5, 0. */
    run_window("HannWindow", 4, 1, 0, 4, (double[]){0, 0.5, 1, 0.5});
    run_window("HannWindow", 5, 0, RN_F64, 5, (double[]){0, 0.5, 1, 0.5, 0});
    run_window("HammingWindow", 4, 1, 0, 4, (double[]){4.0 / 46, 25.0 / 46, 1, 25.0 / 46});
    run_window("BlackmanWindow", 4, 1, RN_F64, 4, (double[]){0, 0.34, 1, 0.34});
}

/* ---- MelWeightMatrix ---- */

Test(signal, mel_weight_matrix_triangles)
{
    /* One mel bin from 0 to 4900 Hz = 700 (2^3 - 1): the mel points are
     * equally spaced, 0, 1/3 and 2/3 of the way, i.e. 700 (2^i - 1) Hz =
     * 0, 700, 2100 Hz. With dft_length 16 at 8000 Hz they fall in bins
     * floor(17 hz / 8000) = 0, 1, 4. The filter rises from bin 0 to 1 at
     * bin 1 and falls to 0 at bin 4: 0, 1, 2/3, 1/3, then 0 up to bin 8. */
    node_case c = nc_new("MelWeightMatrix", 17);
    int32_t bins = 1, len = 16, rate = 8000;
    float lo = 0, hi = 4900;
    nc_input(&c, RN_I32, 0, NULL, &bins, true);
    nc_input(&c, RN_I32, 0, NULL, &len, true);
    nc_input(&c, RN_I32, 0, NULL, &rate, true);
    nc_input(&c, RN_F32, 0, NULL, &lo, true);
    nc_input(&c, RN_F32, 0, NULL, &hi, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){9, 1});
    expect_f32(&c.out[0], 9, (float[]){0, 1, 2.0f / 3, 1.0f / 3, 0, 0, 0, 0, 0}, 1e-6);
    nc_free(&c);
}
