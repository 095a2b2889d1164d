/* Dynamic shapes through the public API: a model whose batch dim is
 * dynamic (tests/tools/data/dynamic_add.onnx: sum = x + y, all [N, 4]) is
 * compiled on REF once and run with several shapes; the compiled model's
 * SHAPE_CACHE_BUILDS and SHAPE_CACHE_HITS count the plans specialised for
 * new shapes and the reuses of one built before. Expected sums are
 * computed here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"

#define DYNAMIC_ADD "tests/tools/data/dynamic_add.onnx"

typedef struct dyn_model {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
} dyn_model;

static void dyn_open(dyn_model *m)
{
    cr_assert_eq(rn_core_create(&m->core), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_read_model(m->core, DYNAMIC_ADD, &m->model), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_compile_model(m->core, m->model, "REF", NULL, 0, &m->compiled), RN_OK,
                 "%s", rn_last_error());
    rn_port port;
    cr_assert_eq(rn_compiled_model_input(m->compiled, 0, &port), RN_OK, "%s", rn_last_error());
    cr_assert_eq(port.shape.rank, 2);
    cr_assert_eq(port.shape.dims[0], RN_DIM_DYNAMIC, "the batch dim of %s is not dynamic",
                 DYNAMIC_ADD);
}

static void dyn_close(dyn_model *m)
{
    rn_compiled_model_free(m->compiled);
    rn_model_free(m->model);
    rn_core_free(m->core);
}

static long long property(const rn_compiled_model *compiled, const char *key)
{
    char buf[64];
    cr_assert_eq(rn_compiled_model_get_property(compiled, key, buf, sizeof buf), RN_OK, "%s: %s",
                 key, rn_last_error());
    char *end;
    long long v = strtoll(buf, &end, 10);
    cr_assert(end != buf && *end == '\0', "%s is '%s', not a number", key, buf);
    return v;
}

static void expect_cache(const rn_compiled_model *compiled, long long builds, long long hits,
                         const char *when)
{
    cr_assert_eq(property(compiled, "SHAPE_CACHE_BUILDS"), builds, "%s: %lld builds, expected %lld",
                 when, property(compiled, "SHAPE_CACHE_BUILDS"), builds);
    cr_assert_eq(property(compiled, "SHAPE_CACHE_HITS"), hits, "%s: %lld hits, expected %lld", when,
                 property(compiled, "SHAPE_CACHE_HITS"), hits);
}

/* Inputs of batch n (x[i] = i / 4 + n, y[i] = 1 - 3i), bound to r; the
 * tensors are the caller's to free after the request. */
static void bind_batch(rn_infer_request *r, int64_t n, rn_tensor **x, rn_tensor **y)
{
    int64_t dims[2] = {n, 4};
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 2, x), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 2, y), RN_OK, "%s", rn_last_error());
    float *a = rn_tensor_data(*x), *b = rn_tensor_data(*y);
    for (int64_t i = 0; i < n * 4; i++) {
        a[i] = (float)i / 4.0f + (float)n;
        b[i] = 1.0f - 3.0f * (float)i;
    }
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, *x), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, *y), RN_OK, "%s", rn_last_error());
}

static void expect_sum(rn_infer_request *r, int64_t n)
{
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_rank(out), 2);
    cr_assert_eq(rn_tensor_dims(out)[0], n, "batch %lld, expected %lld",
                 (long long)rn_tensor_dims(out)[0], (long long)n);
    cr_assert_eq(rn_tensor_dims(out)[1], 4);
    const float *z = rn_tensor_data(out);
    for (int64_t i = 0; i < n * 4; i++) {
        float want = ((float)i / 4.0f + (float)n) + (1.0f - 3.0f * (float)i);
        cr_assert_eq(z[i], want, "batch %lld, element %lld: %g, expected %g", (long long)n,
                     (long long)i, z[i], want);
    }
}

static void free_tensors(rn_tensor **x, rn_tensor **y, int n)
{
    for (int k = 0; k < n; k++) {
        rn_tensor_free(x[k]);
        rn_tensor_free(y[k]);
    }
}

/* Runs r once on batch n (sync or start_async + wait) and checks the sum. */
static void run_batch(rn_infer_request *r, int64_t n, bool async, rn_tensor **x, rn_tensor **y)
{
    bind_batch(r, n, x, y);
    if (async) {
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_infer_request_wait(r), RN_OK, "batch %lld: %s", (long long)n,
                     rn_last_error());
    } else {
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "batch %lld: %s", (long long)n,
                     rn_last_error());
    }
    expect_sum(r, n);
}

Test(dynamic_shapes, one_plan_per_shape_then_reuse)
{
    dyn_model m;
    dyn_open(&m);
    expect_cache(m.compiled, 0, 0, "compiled");
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &r), RN_OK, "%s",
                 rn_last_error());
    static const int64_t batches[] = {1, 3, 7};
    rn_tensor *x[4], *y[4];
    for (int k = 0; k < 3; k++)
        run_batch(r, batches[k], false, &x[k], &y[k]);
    expect_cache(m.compiled, 3, 0, "after batches 1, 3, 7");
    run_batch(r, 1, false, &x[3], &y[3]);
    expect_cache(m.compiled, 3, 1, "after batch 1 again");
    rn_infer_request_free(r);
    free_tensors(x, y, 4);
    dyn_close(&m);
}

/* A second request finds the plans the first one built (the compiled
 * model's cache), sync and async. */
Test(dynamic_shapes, plans_are_shared_by_requests)
{
    dyn_model m;
    dyn_open(&m);
    rn_infer_request *a, *b;
    cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &a), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &b), RN_OK, "%s",
                 rn_last_error());
    rn_tensor *x[4], *y[4];
    run_batch(a, 2, false, &x[0], &y[0]);
    run_batch(a, 5, true, &x[1], &y[1]);
    expect_cache(m.compiled, 2, 0, "request a ran batches 2 and 5");
    run_batch(b, 5, false, &x[2], &y[2]);
    expect_cache(m.compiled, 2, 1, "request b ran batch 5");
    run_batch(b, 2, true, &x[3], &y[3]);
    expect_cache(m.compiled, 2, 2, "request b ran batch 2");
    rn_infer_request_free(a);
    rn_infer_request_free(b);
    free_tensors(x, y, 4);
    dyn_close(&m);
}

/* SUPPORTED_PROPERTIES of the compiled model lists the plan's counters. */
Test(dynamic_shapes, supported_properties_list_the_cache_counters)
{
    dyn_model m;
    dyn_open(&m);
    char keys[2048];
    rn_status st =
        rn_compiled_model_get_property(m.compiled, "SUPPORTED_PROPERTIES", keys, sizeof keys);
    cr_assert_eq(st, RN_OK, "SUPPORTED_PROPERTIES of a compiled model: %s", rn_last_error());
    cr_expect(strstr(keys, "SHAPE_CACHE_BUILDS") != NULL, "SUPPORTED_PROPERTIES: %s", keys);
    cr_expect(strstr(keys, "SHAPE_CACHE_HITS") != NULL, "SUPPORTED_PROPERTIES: %s", keys);
    dyn_close(&m);
}
