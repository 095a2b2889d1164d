/* REF kernels of ONNX Runtime's contrib ops (com.microsoft), one node at a
 * time: values worked out by hand (or the published value of erf and tanh
 * at a point) beside each case, and the errors bad input gets. Their parity
 * with ONNX Runtime on random data is tests/wild (wild_contrib_*). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/ref/node_case.h"

static void expect_error(rn_status got, rn_status want, const char *fragment)
{
    cr_assert_eq(got, want, "status %d, expected %d (%s)", got, want, rn_last_error());
    cr_assert(strstr(rn_last_error(), "'n'") != NULL, "error names no node: %s", rn_last_error());
    cr_assert(strstr(rn_last_error(), fragment) != NULL, "error lacks '%s': %s", fragment,
              rn_last_error());
}

static node_case ms_case(const char *op)
{
    node_case c = nc_new(op, 1);
    c.domain = "com.microsoft";
    return c;
}

Test(contrib, gelu_family_at_known_points)
{
    /* x = [-1, 0, 1, 2]: Gelu = x Phi(x): Phi(1) = 0.8413447, Phi(2) = 0.9772499;
     * FastGelu(1) = 0.5 (1 + tanh(0.7978846 * 1.044715)) = 0.8411920;
     * QuickGelu(1) = 1 / (1 + e^-1.702) = 0.8457958. */
    static const float x[] = {-1, 0, 1, 2};
    static const int64_t d4[] = {4};
    node_case c = ms_case("Gelu");
    nc_f32(&c, 1, d4, x);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-0.1586553f, 0, 0.8413447f, 1.9544998f}, 1e-6);
    nc_free(&c);
    c = ms_case("FastGelu");
    nc_f32(&c, 1, d4, x);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-0.1588080f, 0, 0.8411920f, 1.9545977f}, 1e-6);
    nc_free(&c);
    c = ms_case("QuickGelu");
    nc_f32(&c, 1, d4, x);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){-0.1542042f, 0, 0.8457958f, 1.9356586f}, 1e-6);
    nc_free(&c);
}

Test(contrib, bias_gelu_needs_a_bias_of_the_last_dim)
{
    /* BiasGelu(a, b) = Gelu(a + b): a = [0, 0], b = [1, -1] -> [Phi(1), -Phi(-1)] */
    static const int64_t d2[] = {2}, d3[] = {3};
    node_case c = ms_case("BiasGelu");
    nc_f32(&c, 1, d2, (float[]){0, 0});
    nc_f32(&c, 1, d2, (float[]){1, -1});
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){0.8413447f, -0.1586553f}, 1e-6);
    nc_free(&c);
    c = ms_case("BiasGelu");
    nc_f32(&c, 1, d2, (float[]){0, 0});
    nc_f32(&c, 1, d3, (float[]){1, 2, 3});
    expect_error(nc_build_run(&c, 1), RN_SHAPE_MISMATCH, "input 1");
    nc_free(&c);
}

Test(contrib, fused_matmul_transposes_and_scales)
{
    /* A = [[1, 2], [3, 4]] transposed: [[1, 3], [2, 4]]; B = I; alpha 2 */
    static const int64_t d22[] = {2, 2};
    node_case c = ms_case("FusedMatMul");
    nc_f32(&c, 2, d22, (float[]){1, 2, 3, 4});
    nc_f32(&c, 2, d22, (float[]){1, 0, 0, 1});
    nc_int(&c, "transA", 1);
    nc_float(&c, "alpha", 2.0f);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 4, (float[]){2, 6, 4, 8}, 1e-6);
    nc_free(&c);
    c = ms_case("FusedMatMul");
    nc_f32(&c, 2, d22, (float[]){1, 2, 3, 4});
    nc_f32(&c, 2, (int64_t[]){3, 2}, (float[]){1, 0, 0, 1, 0, 0});
    expect_error(nc_build(&c, 1), RN_SHAPE_MISMATCH, "inner dims");
    nc_free(&c);
}

Test(contrib, dynamic_quantize_matmul_is_close_to_the_float_product)
{
    /* A = [[1, -1]] quantizes with scale 2/255 and zero point 128 (to 255
     * and 0 or 1, depending on how 1 / scale rounds in f32); B = [[1], [2]],
     * scale 1: within one quantization step (2 * 2/255) of the float
     * product -1. */
    node_case c = ms_case("DynamicQuantizeMatMul");
    nc_f32(&c, 2, (int64_t[]){1, 2}, (float[]){1, -1});
    nc_input(&c, RN_I8, 2, (int64_t[]){2, 1}, (int8_t[]){1, 2}, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){1}, (float[]){1}, true);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 1, (float[]){-1.0f}, 4.0 / 255.0);
    nc_free(&c);
}

Test(contrib, skip_layernorm_sums_then_normalizes)
{
    /* x + skip = [1, 3]: mean 2, variance 1 -> [-1, 1] (epsilon 0), gamma 2 */
    static const int64_t d12[] = {1, 2}, d2[] = {2};
    node_case c = ms_case("SkipLayerNormalization");
    nc_f32(&c, 2, d12, (float[]){0, 2});
    nc_f32(&c, 2, d12, (float[]){1, 1});
    nc_f32(&c, 1, d2, (float[]){2, 2});
    nc_float(&c, "epsilon", 0.0f);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){-2, 2}, 1e-6);
    nc_free(&c);
    c = ms_case("SkipLayerNormalization");
    nc_f32(&c, 2, d12, (float[]){0, 2});
    nc_f32(&c, 2, (int64_t[]){1, 3}, (float[]){1, 1, 1});
    nc_f32(&c, 1, d2, (float[]){2, 2});
    expect_error(nc_build_run(&c, 1), RN_SHAPE_MISMATCH, "skip");
    nc_free(&c);
}

Test(contrib, embed_layernorm_refuses_ids_out_of_range)
{
    /* vocabulary of 2 rows, id 5 */
    static const int64_t d11[] = {1, 1}, d22[] = {2, 2}, d2[] = {2};
    node_case c = ms_case("EmbedLayerNormalization");
    nc_input(&c, RN_I32, 2, d11, (int32_t[]){5}, false);
    nc_skip(&c);
    nc_input(&c, RN_F32, 2, d22, (float[]){1, 2, 3, 4}, true);
    nc_input(&c, RN_F32, 2, d22, (float[]){0, 0, 0, 0}, true);
    nc_skip(&c);
    nc_input(&c, RN_F32, 1, d2, (float[]){1, 1}, true);
    nc_input(&c, RN_F32, 1, d2, (float[]){0, 0}, true);
    expect_error(nc_build_run(&c, 2), RN_INVALID_ARG, "out of range");
    nc_free(&c);
}

Test(contrib, attention_over_one_key_returns_its_value)
{
    /* One token, one head: softmax over a single key is 1, so the output is
     * V = x @ Wv + bv. x = [1, 2]; Wv columns 4, 5 of W = [[1, 0], [0, 1]]
     * (identity), bv = [0.5, -0.5] -> [1.5, 1.5]. */
    static const float w[] = {1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1};
    node_case c = ms_case("Attention");
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, (float[]){1, 2});
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 6}, w, true);
    nc_input(&c, RN_F32, 1, (int64_t[]){6}, (float[]){0, 0, 0, 0, 0.5f, -0.5f}, true);
    nc_int(&c, "num_heads", 1);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 2, (float[]){1.5f, 1.5f}, 1e-6);
    nc_free(&c);
}

Test(contrib, attention_refuses_a_mask_of_another_shape_and_a_cache)
{
    static const float w[12] = {0};
    node_case c = ms_case("Attention");
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, (float[]){1, 2});
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 6}, w, true);
    nc_skip(&c);
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, (int32_t[]){1, 1, 1}, false);
    nc_int(&c, "num_heads", 1);
    expect_error(nc_build_run(&c, 1), RN_UNSUPPORTED, "mask");
    nc_free(&c);
    c = ms_case("Attention");
    nc_f32(&c, 3, (int64_t[]){1, 1, 2}, (float[]){1, 2});
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 6}, w, true);
    nc_int(&c, "num_heads", 3); /* 2 columns each: not a multiple of 3 heads */
    expect_error(nc_build_run(&c, 1), RN_SHAPE_MISMATCH, "num_heads 3");
    nc_free(&c);
}
