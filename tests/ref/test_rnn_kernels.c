/* REF recurrent kernels (RNN, GRU, LSTM), run one node at a time the way the
 * executor does: build a one-node graph, infer shapes, pick the kernel from
 * the REF registry, allocate outputs from the inferred shapes, run. The cells
 * are kept to one hidden unit and one input, with Relu or Affine activations
 * where that makes the recurrence exact, so every expected value is worked
 * out by hand in the comment beside it. */
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

/* ---- RNN ---- */

/* hidden 1, input 1, W = 1, R = 0.5, no bias, Relu: h_t = relu(x_t + 0.5 h). */
static void rnn_case(node_case *c, const char *direction, const float *x, int seq, int batch)
{
    static const float w[] = {1, 1}, r[] = {0.5f, 0.5f};
    int dirs = strcmp(direction, "bidirectional") == 0 ? 2 : 1;
    *c = nc_new("RNN", 14);
    nc_input(c, RN_F32, 3, (int64_t[]){seq, batch, 1}, x, false);
    nc_input(c, RN_F32, 3, (int64_t[]){dirs, 1, 1}, w, true);
    nc_input(c, RN_F32, 3, (int64_t[]){dirs, 1, 1}, r, true);
    nc_int(c, "hidden_size", 1);
    nc_string(c, "direction", direction);
    const char *acts[] = {"Relu", "Relu"};
    nc_strings(c, "activations", dirs, acts);
}

Test(rnn, rnn_forward_and_reverse)
{
    /* x = 1, 2. Forward: h = relu(1) = 1, then relu(2 + 0.5) = 2.5.
     * Reverse: h = relu(2) = 2 at t = 1, then relu(1 + 1) = 2 at t = 0. */
    float x[] = {1, 2};
    node_case c;
    rnn_case(&c, "forward", x, 2, 1);
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 4, (int64_t[]){2, 1, 1, 1});
    expect_f32(&c.out[0], 2, (float[]){1, 2.5f}, 1e-6);
    expect_f32(&c.out[1], 1, (float[]){2.5f}, 1e-6);
    nc_free(&c);
    rnn_case(&c, "reverse", x, 2, 1);
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){2, 2}, 1e-6);
    expect_f32(&c.out[1], 1, (float[]){2}, 1e-6);
    nc_free(&c);
}

Test(rnn, rnn_bidirectional_with_sequence_lengths)
{
    /* Batch 2 (x[t][b]): sequence 0 is 1, 2 (length 2), sequence 1 is 3 then
     * padding (length 1). Forward: b0 1, 2.5; b1 3, then 0 in Y. Reverse:
     * b0 2 at t=1 then 2 at t=0; b1 starts at its last valid step t=0: 3.
     * Y[t][dir][b]; Y_h[dir][b] is the state after each sequence's last
     * valid step. */
    float x[] = {1, 3, 2, 99};
    int32_t lens[] = {2, 1};
    node_case c;
    rnn_case(&c, "bidirectional", x, 2, 2);
    nc_skip(&c);
    nc_input(&c, RN_I32, 1, (int64_t[]){2}, lens, false);
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 4, (int64_t[]){2, 2, 2, 1});
    expect_f32(&c.out[0], 8, (float[]){1, 3, 2, 3, 2.5f, 0, 2, 0}, 1e-6);
    expect_f32(&c.out[1], 4, (float[]){2.5f, 3, 2, 3}, 1e-6);
    nc_free(&c);
}

Test(rnn, rnn_rejects_a_sequence_length_beyond_the_sequence)
{
    float x[] = {1, 2};
    int32_t lens[] = {3};
    node_case c;
    rnn_case(&c, "forward", x, 2, 1);
    nc_skip(&c);
    nc_input(&c, RN_I32, 1, (int64_t[]){1}, lens, false);
    rn_status st = nc_build_run(&c, 2);
    cr_assert_eq(st, RN_INVALID_ARG, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (RNN)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- GRU ---- */

/* hidden 1, input 1; f = Affine(alpha 0, beta 0.5) makes z = r = 0.5 and
 * g = Affine(1, 0) is the identity (alpha / beta consumed in order). W =
 * (z 0, r 0, h 1), R = (0, 0, 2), B = Wb (0, 0, 0) Rb (0, 0, 1). */
static void gru_case(node_case *c, int lbr, const float *x)
{
    static const float w[] = {0, 0, 1}, r[] = {0, 0, 2}, b[] = {0, 0, 0, 0, 0, 1};
    *c = nc_new("GRU", 14);
    nc_input(c, RN_F32, 3, (int64_t[]){2, 1, 1}, x, false);
    nc_input(c, RN_F32, 3, (int64_t[]){1, 3, 1}, w, true);
    nc_input(c, RN_F32, 3, (int64_t[]){1, 3, 1}, r, true);
    nc_input(c, RN_F32, 2, (int64_t[]){1, 6}, b, true);
    nc_int(c, "hidden_size", 1);
    nc_int(c, "linear_before_reset", lbr);
    const char *acts[] = {"Affine", "affine"};
    nc_strings(c, "activations", 2, acts);
    nc_floats(c, "activation_alpha", 2, (float[]){0, 1});
    nc_floats(c, "activation_beta", 2, (float[]){0.5f, 0});
}

Test(rnn, gru_linear_before_reset)
{
    /* x = 1, 1, H0 = 0; H' = 0.5 h + 0.5 H.
     * lbr 0: h = x + 2 (0.5 H) + 1: h = 2 -> H = 1; h = 1 + 1 + 1 = 3 -> H = 2.
     * lbr 1: h = x + 0.5 (2 H + 1): h = 1.5 -> H = 0.75;
     *        h = 1 + 0.5 (1.5 + 1) = 2.25 -> H = 1.125 + 0.375 = 1.5. */
    float x[] = {1, 1};
    node_case c;
    gru_case(&c, 0, x);
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){1, 2}, 1e-6);
    expect_f32(&c.out[1], 1, (float[]){2}, 1e-6);
    nc_free(&c);
    gru_case(&c, 1, x);
    cr_assert_eq(nc_build_run(&c, 2), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.75f, 1.5f}, 1e-6);
    nc_free(&c);
}

/* ---- LSTM ---- */

Test(rnn, lstm_cell_state_and_batch_first_layout)
{
    /* hidden 1, input 1; f = Affine(0, 0.5) makes i = o = f = 0.5, g and h
     * the identity. W = (i 0, o 0, f 0, c 1), R = 0. x = 2, 4:
     * C = 0.5 * 0 + 0.5 * 2 = 1, H = 0.5; C = 0.5 + 0.5 * 4 = 2.5, H = 1.25.
     * Layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden]. Only
     * Y_h and Y_c are asked for (Y is omitted). */
    float x[] = {2, 4}, w[] = {0, 0, 0, 1}, r[] = {0, 0, 0, 0};
    node_case c = nc_new("LSTM", 14);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 2, 1}, x, false);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, w, true);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, r, true);
    nc_int(&c, "hidden_size", 1);
    nc_int(&c, "layout", 1);
    const char *acts[] = {"Affine", "Affine", "Affine"};
    nc_strings(&c, "activations", 3, acts);
    nc_floats(&c, "activation_alpha", 3, (float[]){0, 1, 1});
    nc_floats(&c, "activation_beta", 3, (float[]){0.5f, 0, 0});
    cr_assert_eq(nc_build_mask(&c, 3, 0x6), RN_OK, "%s", rn_last_error());
    cr_assert_eq(nc_run(&c), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[1], 3, (int64_t[]){1, 1, 1});
    expect_f32(&c.out[1], 1, (float[]){1.25f}, 1e-6);
    expect_f32(&c.out[2], 1, (float[]){2.5f}, 1e-6);
    nc_free(&c);
}

Test(rnn, lstm_input_forget_couples_the_gates)
{
    /* As above with f = Affine(0, 0.25): i = o = 0.25, and input_forget
     * makes the forget gate 1 - i = 0.75. x = 4: C = 0.25 * 4 = 1,
     * H = 0.25; x = 4 again: C = 0.75 + 1 = 1.75, H = 0.4375. */
    float x[] = {4, 4}, w[] = {0, 0, 0, 1}, r[] = {0, 0, 0, 0};
    node_case c = nc_new("LSTM", 7);
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 1, 1}, x, false);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, w, true);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, r, true);
    nc_int(&c, "hidden_size", 1);
    nc_int(&c, "input_forget", 1);
    const char *acts[] = {"Affine", "Affine", "Affine"};
    nc_strings(&c, "activations", 3, acts);
    nc_floats(&c, "activation_alpha", 3, (float[]){0, 1, 1});
    nc_floats(&c, "activation_beta", 3, (float[]){0.25f, 0, 0});
    cr_assert_eq(nc_build_run(&c, 3), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.25f, 0.4375f}, 1e-6);
    expect_f32(&c.out[2], 1, (float[]){1.75f}, 1e-6);
    nc_free(&c);
}

Test(rnn, lstm_clip_bounds_the_activation_inputs)
{
    /* Sigmoid / Tanh defaults with W_c = 100 and clip 1: the cell input
     * tanh(clip(100)) = tanh(1); the gates sigmoid(0) = 0.5. C = 0.5 tanh(1),
     * H = 0.5 tanh(clip(C)) = 0.5 tanh(0.5 tanh 1). */
    float x[] = {1}, w[] = {0, 0, 0, 100}, r[] = {0, 0, 0, 0};
    node_case c = nc_new("LSTM", 14);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 1, 1}, x, false);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, w, true);
    nc_input(&c, RN_F32, 3, (int64_t[]){1, 4, 1}, r, true);
    nc_int(&c, "hidden_size", 1);
    nc_float(&c, "clip", 1.0f);
    cr_assert_eq(nc_build_mask(&c, 2, 0x2), RN_OK, "%s", rn_last_error());
    cr_assert_eq(nc_run(&c), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[1], 1, (float[]){(float)(0.5 * tanh(0.5 * tanh(1.0)))}, 1e-6);
    nc_free(&c);
}
