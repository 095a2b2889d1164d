/* REF math kernels (Einsum, Det), run one node at a time the way the
 * executor does: build a one-node graph, infer shapes, pick the kernel from
 * the REF registry, allocate outputs from the inferred shapes, run. Every
 * expected value is worked out by hand in the comment beside it. */
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

/* ---- Einsum ---- */

static node_case einsum_case(const char *eq)
{
    node_case c = nc_new("Einsum", 12);
    nc_string(&c, "equation", eq);
    return c;
}

Test(math, einsum_matmul)
{
    /* {{1, 2}, {3, 4}} x {{5}, {6}} = {{17}, {39}} */
    node_case c = einsum_case("ij,jk->ik");
    float a[] = {1, 2, 3, 4}, b[] = {5, 6};
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 2}, a, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, b, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 1});
    expect_f32(&c.out[0], 2, (float[]){17, 39}, 0);
    nc_free(&c);
}

Test(math, einsum_repeated_index_walks_the_diagonal)
{
    /* x = 0..8 as 3x3: the diagonal is 0, 4, 8 ("ii->i") and the implicit
     * "ii" sums it (no label occurs once): 12. */
    float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    node_case c = einsum_case("ii->i");
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_f32(&c.out[0], 3, (float[]){0, 4, 8}, 0);
    nc_free(&c);
    c = einsum_case("ii");
    nc_input(&c, RN_F32, 2, (int64_t[]){3, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 0, NULL);
    expect_f32(&c.out[0], 1, (float[]){12}, 0);
    nc_free(&c);
}

Test(math, einsum_ellipsis_broadcasts)
{
    /* a [2, 1, 2] (batch 2 of one row), b [2, 1] (no batch dims, broadcast):
     * batch 0 row (1, 2) . (3, 4) = 11, batch 1 row (5, 6) . (3, 4) = 39. */
    node_case c = einsum_case("...ij, ...jk -> ...ik");
    float a[] = {1, 2, 5, 6}, b[] = {3, 4};
    nc_input(&c, RN_F32, 3, (int64_t[]){2, 1, 2}, a, false);
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 1}, b, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 3, (int64_t[]){2, 1, 1});
    expect_f32(&c.out[0], 2, (float[]){11, 39}, 0);
    nc_free(&c);
}

Test(math, einsum_implicit_output_is_in_ascii_order)
{
    /* "ba" on [2, 3]: the output labels in ASCII order are a, b, so the
     * result is the transpose [3, 2]; "Ba" keeps B (0x42) before a. */
    float x[] = {0, 1, 2, 3, 4, 5};
    node_case c = einsum_case("ba");
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){3, 2});
    expect_f32(&c.out[0], 6, (float[]){0, 3, 1, 4, 2, 5}, 0);
    nc_free(&c);
    c = einsum_case("Ba");
    nc_input(&c, RN_F32, 2, (int64_t[]){2, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 2, (int64_t[]){2, 3});
    expect_f32(&c.out[0], 6, x, 0);
    nc_free(&c);
}

Test(math, einsum_integers)
{
    /* i32 inner product: 1*4 + 2*5 + 3*6 = 32. */
    node_case c = einsum_case("i,i");
    int32_t a[] = {1, 2, 3}, b[] = {4, 5, 6};
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, a, false);
    nc_input(&c, RN_I32, 1, (int64_t[]){3}, b, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    cr_assert_eq(c.out[0].type, RN_I32);
    cr_assert_eq(*(int32_t *)c.out[0].data, 32);
    nc_free(&c);
}

Test(math, einsum_rejects_a_rank_that_does_not_match_its_term)
{
    node_case c = einsum_case("ij->i");
    float x[3] = {0};
    nc_input(&c, RN_F32, 1, (int64_t[]){3}, x, false);
    rn_status st = nc_build_run(&c, 1);
    cr_assert_eq(st, RN_SHAPE_MISMATCH, "%s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), "node 'n' (Einsum)") != NULL, "%s", rn_last_error());
    nc_free(&c);
}

/* ---- Det ---- */

Test(math, det_batch_with_pivoting_and_singular)
{
    /* det {{1, 2}, {3, 4}} = -2; {{0, 1}, {1, 0}} needs a row swap: -1;
     * {{1, 2}, {2, 4}} is singular: 0. */
    node_case c = nc_new("Det", 11);
    float x[] = {1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4};
    nc_input(&c, RN_F32, 3, (int64_t[]){3, 2, 2}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    expect_shape(&c.out[0], 1, (int64_t[]){3});
    expect_f32(&c.out[0], 3, (float[]){-2, -1, 0}, 1e-6);
    nc_free(&c);
}

Test(math, det_3x3)
{
    /* {{2, 0, 1}, {1, 3, 2}, {1, 1, 1}}: 2(3 - 2) - 0 + 1(1 - 3) = 0;
     * {{2, 0, 1}, {1, 3, 2}, {1, 1, 2}}: 2(6 - 2) + 1(1 - 3) = 6. */
    node_case c = nc_new("Det", 11);
    double x[] = {2, 0, 1, 1, 3, 2, 1, 1, 1, 2, 0, 1, 1, 3, 2, 1, 1, 2};
    nc_input(&c, RN_F64, 3, (int64_t[]){2, 3, 3}, x, false);
    cr_assert_eq(nc_build_run(&c, 1), RN_OK, "%s", rn_last_error());
    const double *y = c.out[0].data;
    cr_assert(fabs(y[0]) < 1e-12 && fabs(y[1] - 6) < 1e-12, "%g %g", y[0], y[1]);
    nc_free(&c);
}
