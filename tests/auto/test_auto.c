/* AUTO: the device chosen by priority and by what supports the model, the
 * startup fallback (first requests on a host device while SLOWDEV compiles
 * for a long time, then SLOWDEV), CUMULATIVE_THROUGHPUT spreading requests
 * over the devices, and the runtime fallback. Compiles in the background and
 * runs requests async: CI also runs it under TSan. */
#include <criterion/criterion.h>
#include <time.h>
#include <unistd.h>

#include "tests/hetero/models.h"

#define N 64

static long slowdev_uploaded(rn_core *core)
{
    char buf[32];
    cr_assert_eq(rn_core_get_property(core, "SLOWDEV", "SLOWDEV_BYTES_UPLOADED", buf, sizeof buf),
                 RN_OK);
    return atol(buf);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* y = relu(x) for x[i] = (i - N/2) / 4 (model_chain3). */
static void expect_relu(const float *y)
{
    for (int i = 0; i < N; i++) {
        float x = (float)(i - N / 2) * 0.25f;
        cr_assert_float_eq(y[i], x > 0 ? x : 0.0f, 1e-6, "element %d", i);
    }
}

Test(auto_device, startup_fallback_runs_first_requests_while_slowdev_compiles, .timeout = 60)
{
    rn_core *core = slowdev_core("", 0);
    rn_property slow[] = {{"SLOWDEV_COMPILE_US", "2000000"}};
    cr_assert_eq(rn_core_set_property(core, "SLOWDEV", slow, 1), RN_OK);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    double t0 = now_s();
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", NULL, 0, &c), RN_OK, "%s",
                 rn_last_error());
    float y[N];
    run_once(c, y, N);
    double first = now_s() - t0;
    /* The first request completed before SLOWDEV's 2 s compile finished,
     * on REF: SLOWDEV moved nothing. */
    cr_expect(first < 1.5, "the first request took %.2f s", first);
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "REF");
    cr_expect_eq(slowdev_uploaded(core), 0);
    expect_relu(y);
    /* Later requests run on SLOWDEV once it has compiled. */
    while (strcmp(compiled_prop(c, "EXECUTION_DEVICES"), "SLOWDEV") != 0 && now_s() - t0 < 20)
        usleep(20000);
    cr_assert_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "SLOWDEV");
    cr_expect(now_s() - t0 >= 2.0, "SLOWDEV was ready before its compile time");
    run_once(c, y, N);
    expect_relu(y);
    cr_expect_eq(slowdev_uploaded(core), N * 4, "one run's input went through SLOWDEV");
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(auto_device, without_startup_fallback_compile_waits_for_the_device, .timeout = 60)
{
    rn_core *core = slowdev_core("", 0);
    rn_property slow[] = {{"SLOWDEV_COMPILE_US", "300000"}};
    cr_assert_eq(rn_core_set_property(core, "SLOWDEV", slow, 1), RN_OK);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"ENABLE_STARTUP_FALLBACK", "NO"}};
    double t0 = now_s();
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect(now_s() - t0 >= 0.3);
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "SLOWDEV");
    float y[N];
    run_once(c, y, N);
    expect_relu(y);
    cr_expect_eq(slowdev_uploaded(core), N * 4);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(auto_device, priority_and_support_choose_the_device)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"ENABLE_STARTUP_FALLBACK", "NO"}};
    /* SLOWDEV refuses Neg: REF, the next in the list, runs the model. */
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "REF");
    rn_compiled_model_free(c);
    /* No list: accelerators, then CPU, then REF. */
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "CPU");
    float y[N];
    run_once(c, y, N);
    expect_relu(y);
    rn_compiled_model_free(c);
    /* A model no listed device runs is an error naming each one's reason. */
    cr_expect_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV", p, 1, &c), RN_UNSUPPORTED);
    cr_expect(strstr(rn_last_error(), "SLOWDEV: it does not support 'n1'") != NULL, "%s",
              rn_last_error());
    cr_expect_eq(rn_core_compile_model(core, model, "AUTO:NOPE", p, 1, &c), RN_NOT_FOUND);
    rn_property bad[] = {{"ENABLE_RUNTIME_FALLBACK", "maybe"}};
    cr_expect_eq(rn_core_compile_model(core, model, "AUTO:REF", bad, 1, &c), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "ENABLE_RUNTIME_FALLBACK") != NULL, "%s", rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}

Test(auto_device, cumulative_throughput_spreads_requests_over_every_device, .timeout = 60)
{
    rn_core *core = slowdev_core("", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"PERFORMANCE_HINT", "CUMULATIVE_THROUGHPUT"}};
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "SLOWDEV,REF");
    int n = atoi(compiled_prop(c, "OPTIMAL_NUMBER_OF_INFER_REQUESTS"));
    cr_assert(n >= 2 && n <= 64, "%d", n);
    rn_infer_request **r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(rn_compiled_model_create_infer_request(c, &r[i]), RN_OK);
        rn_tensor *x;
        rn_infer_request_get_input_tensor(r[i], 0, &x);
        float *xd = rn_tensor_data(x);
        for (int k = 0; k < N; k++)
            xd[k] = (float)(k - N / 2) * 0.25f;
    }
    for (int i = 0; i < n; i++)
        cr_assert_eq(rn_infer_request_start_async(r[i]), RN_OK, "%s", rn_last_error());
    for (int i = 0; i < n; i++) {
        cr_assert_eq(rn_infer_request_wait(r[i]), RN_OK, "%s", rn_last_error());
        rn_tensor *y;
        cr_assert_eq(rn_infer_request_get_output_tensor(r[i], 0, &y), RN_OK);
        expect_relu(rn_tensor_data(y));
    }
    /* Some requests ran on SLOWDEV (its copy engine moved their inputs),
     * the others on REF. */
    long on_slowdev = slowdev_uploaded(core) / (N * 4);
    cr_expect(on_slowdev > 0 && on_slowdev < n, "%ld of %d requests on SLOWDEV", on_slowdev, n);
    for (int i = 0; i < n; i++)
        rn_infer_request_free(r[i]);
    free(r);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

Test(auto_device, runtime_fallback_retries_a_failed_request_on_the_next_device, .timeout = 60)
{
    rn_core *core = slowdev_core("", 0);
    rn_property fail[] = {{"SLOWDEV_FAIL_REQUESTS", "YES"}};
    cr_assert_eq(rn_core_set_property(core, "SLOWDEV", fail, 1), RN_OK);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"ENABLE_STARTUP_FALLBACK", "NO"}};
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "SLOWDEV");
    float y[N];
    run_once(c, y, N);
    expect_relu(y);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(c, &r), RN_OK);
    rn_tensor *x;
    rn_infer_request_get_input_tensor(r, 0, &x);
    float *xd = rn_tensor_data(x);
    for (int k = 0; k < N; k++)
        xd[k] = (float)(k - N / 2) * 0.25f;
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
        rn_tensor *out;
        cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK);
        expect_relu(rn_tensor_data(out));
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(c);
    /* Without the fallback, the device's failure is the request's. */
    rn_property off[] = {{"ENABLE_STARTUP_FALLBACK", "NO"}, {"ENABLE_RUNTIME_FALLBACK", "NO"}};
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", off, 2, &c), RN_OK);
    cr_assert_eq(rn_compiled_model_create_infer_request(c, &r), RN_OK);
    cr_expect_eq(rn_infer_request_infer(r), RN_DEVICE_ERROR);
    cr_expect(strstr(rn_last_error(), "SLOWDEV_FAIL_REQUESTS") != NULL, "%s", rn_last_error());
    rn_infer_request_free(r);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

/* A LIVE key set on AUTO's compiled model reaches the device it runs on: a
 * run on REF is then profiled. A compile-time key is refused naming it. */
Test(auto_device, live_properties_reach_the_device)
{
    rn_core *core = slowdev_core("Neg", 0);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"ENABLE_STARTUP_FALLBACK", "NO"}};
    cr_assert_eq(rn_core_compile_model(core, model, "AUTO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    cr_assert_str_eq(compiled_prop(c, "EXECUTION_DEVICES"), "REF");
    rn_property fixed = {"NUM_STREAMS", "4"};
    cr_expect_eq(rn_compiled_model_set_property(c, &fixed, 1), RN_INVALID_ARG);
    cr_expect(strstr(rn_last_error(), "NUM_STREAMS") != NULL, "%s", rn_last_error());
    rn_property on = {"ENABLE_PROFILING", "YES"};
    cr_assert_eq(rn_compiled_model_set_property(c, &on, 1), RN_OK, "%s", rn_last_error());
    cr_expect_str_eq(compiled_prop(c, "ENABLE_PROFILING"), "YES");
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(c, &r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK, "%s", rn_last_error());
    cr_expect_gt(n, 0);
    rn_infer_request_free(r);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}
