/* REF random kernels (RandomNormal, RandomUniform, their *Like forms,
 * Bernoulli, Multinomial), run one node at a time the way the executor does.
 * Their values are random, so the tests check what is certain (ranges,
 * shapes, types, probabilities 0 and 1, impossible classes, a seed repeating
 * itself) and statistics with bounds of several standard errors. */
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

/* Runs RandomUniform [n] with a seed and returns a malloc'ed copy. */
static float *uniform_draw(int n, float seed, float low, float high)
{
    node_case c = nc_new("RandomUniform", 1);
    nc_ints(&c, "shape", 1, (int64_t[]){n});
    nc_float(&c, "seed", seed);
    nc_float(&c, "low", low);
    nc_float(&c, "high", high);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_F32);
    float *copy = malloc((size_t)n * sizeof *copy);
    memcpy(copy, c.out[0].data, (size_t)n * sizeof *copy);
    nc_free(&c);
    return copy;
}

Test(random, uniform_is_in_range_and_repeats_with_its_seed)
{
    /* 4000 draws in [2, 3): all in range, mean 2.5 within 0.02 (the standard
     * error is 0.29 / sqrt(4000) = 0.0046); the same seed gives the same
     * values, another seed others. */
    enum { N = 4000 };
    float *a = uniform_draw(N, 7, 2, 3), *b = uniform_draw(N, 7, 2, 3),
          *d = uniform_draw(N, 8, 2, 3);
    double sum = 0;
    int same = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(a[i] >= 2 && a[i] < 3, "a[%d] = %g", i, a[i]);
        cr_assert_eq(a[i], b[i], "draw %d differs between runs with one seed", i);
        same += a[i] == d[i];
        sum += a[i];
    }
    cr_assert(fabs(sum / N - 2.5) < 0.02, "mean %g", sum / N);
    cr_assert_lt(same, 10);
    free(a), free(b), free(d);
}

Test(random, normal_has_its_mean_and_scale)
{
    /* 8000 draws of N(5, 0.5^2) in f64: mean within 0.02 (5 standard
     * errors), standard deviation within 5 %. */
    enum { N = 8000 };
    node_case c = nc_new("RandomNormal", 1);
    nc_ints(&c, "shape", 2, (int64_t[]){80, 100});
    nc_float(&c, "mean", 5);
    nc_float(&c, "scale", 0.5f);
    nc_float(&c, "seed", 1);
    nc_int(&c, "dtype", RN_F64);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){80, 100});
    const double *y = c.out[0].data;
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++)
        sum += y[i];
    double mean = sum / N;
    for (int i = 0; i < N; i++)
        sq += (y[i] - mean) * (y[i] - mean);
    double sd = sqrt(sq / (N - 1));
    cr_assert(fabs(mean - 5) < 0.02, "mean %g", mean);
    cr_assert(fabs(sd - 0.5) < 0.025, "standard deviation %g", sd);
    nc_free(&c);
}

Test(random, uniform_like_takes_the_input_shape_and_type)
{
    node_case c = nc_new("RandomUniformLike", 1);
    double x[6] = {0};
    nc_input(&c, RN_F64, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_F64);
    expect_shape(&c.out[0], 2, (int64_t[]){2, 3});
    for (int i = 0; i < 6; i++) {
        double v = ((double *)c.out[0].data)[i];
        cr_assert(v >= 0 && v < 1, "%g", v);
    }
    nc_free(&c);
}

Test(random, bernoulli_certain_probabilities_and_dtype)
{
    /* p = 0 never fires, p = 1 always does; dtype bool (9). */
    node_case c = nc_new("Bernoulli", 15);
    float p[] = {0, 1, 0, 1, 1};
    nc_input(&c, RN_F32, 1, (int64_t[]){5}, p, false);
    nc_int(&c, "dtype", RN_BOOL);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_BOOL);
    const uint8_t *y = c.out[0].data;
    for (int i = 0; i < 5; i++)
        cr_assert_eq(y[i], p[i] != 0, "element %d", i);
    nc_free(&c);
}

Test(random, bernoulli_half_fires_about_half_the_time)
{
    /* 4000 draws at p = 0.5: 2000 +- 160 (5 standard deviations of 31.6). */
    enum { N = 4000 };
    static float p[N];
    for (int i = 0; i < N; i++)
        p[i] = 0.5f;
    node_case c = nc_new("Bernoulli", 15);
    nc_input(&c, RN_F32, 1, (int64_t[]){N}, p, false);
    nc_float(&c, "seed", 3);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_F32);
    int ones = 0;
    for (int i = 0; i < N; i++) {
        float v = ((float *)c.out[0].data)[i];
        cr_assert(v == 0 || v == 1);
        ones += v == 1;
    }
    cr_assert(abs(ones - N / 2) < 160, "%d ones", ones);
    nc_free(&c);
}

Test(random, multinomial_draws_only_possible_classes)
{
    /* Row 0 puts all weight on class 0 (log 1 = 0, the others -inf), row 1
     * on class 2; 50 samples each, i64. */
    node_case c = nc_new("Multinomial", 7);
    float x[] = {0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    nc_int(&c, "sample_size", 50);
    nc_int(&c, "dtype", RN_I64);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 50});
    const int64_t *y = c.out[0].data;
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(y[i], 0, "row 0 sample %d is %lld", i, (long long)y[i]);
        cr_assert_eq(y[50 + i], 2, "row 1 sample %d is %lld", i, (long long)y[50 + i]);
    }
    nc_free(&c);
}

Test(random, multinomial_rejects_a_row_without_weight)
{
    node_case c = nc_new("Multinomial", 7);
    float x[] = {-INFINITY, -INFINITY};
    nc_input(&c, RN_F32, 2, (int64_t[]){1, 2}, x, false);
    rn_status st = nc_build_run(&c, 1);
    cr_assert_eq(st, RN_INVALID_ARG, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (Multinomial)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}
