/* Async infer requests: start/wait, callbacks, cancel, busy, restart from the
 * callback, many requests in flight. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"

#define NODE_DIR  "/usr/share/libonnx-testdata/data/node"
#define LIGHT_DIR ".cache/onnx-1.22.0/light"

/* The light models come from scripts/setup; without them the tests that need
 * a long-running model say so and skip. */
static void need_light_models(void)
{
    if (access(LIGHT_DIR "/light_squeezenet.onnx", R_OK) != 0)
        cr_skip_test("%s/light_squeezenet.onnx is missing: run scripts/setup", LIGHT_DIR);
}

typedef struct fixture {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
} fixture;

static void open_model(fixture *f, const char *path, const rn_property *props, size_t n)
{
    cr_assert_eq(rn_core_create(&f->core), RN_OK);
    cr_assert_eq(rn_core_read_model(f->core, path, &f->model), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_compile_model(f->core, f->model, "REF", props, n, &f->compiled), RN_OK,
                 "%s", rn_last_error());
}

static void close_model(fixture *f)
{
    rn_compiled_model_free(f->compiled);
    rn_model_free(f->model);
    rn_core_free(f->core);
}

/* Fills test_add's inputs with a + b = k * i and returns the request. */
static rn_infer_request *add_request(fixture *f, float k)
{
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(f->compiled, &r), RN_OK);
    rn_tensor *a, *b;
    rn_infer_request_get_input_tensor(r, 0, &a);
    rn_infer_request_get_input_tensor(r, 1, &b);
    float *x = rn_tensor_data(a), *y = rn_tensor_data(b);
    for (size_t i = 0; i < rn_tensor_element_count(a); i++) {
        x[i] = (float)i;
        y[i] = (k - 1.0f) * (float)i;
    }
    return r;
}

static void check_add(rn_infer_request *r, float k)
{
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK, "%s", rn_last_error());
    const float *z = rn_tensor_data(out);
    for (size_t i = 0; i < rn_tensor_element_count(out); i++)
        cr_assert_float_eq(z[i], k * (float)i, 1e-4, "element %zu", i);
}

Test(async, start_then_wait_gives_the_result, .timeout = 30)
{
    fixture f;
    open_model(&f, NODE_DIR "/test_add/model.onnx", NULL, 0);
    rn_infer_request *r = add_request(&f, 3.0f);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "waiting on an idle request is OK");
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
    check_add(r, 3.0f);
    rn_infer_request_free(r);
    close_model(&f);
}

typedef struct counter {
    atomic_int calls;
    atomic_int restarts_left;
    rn_status last;
} counter;

static void count_cb(rn_infer_request *r, rn_status st, void *data)
{
    counter *c = data;
    c->last = st;
    atomic_fetch_add(&c->calls, 1);
    if (atomic_fetch_sub(&c->restarts_left, 1) > 0)
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "restart from the callback: %s",
                     rn_last_error());
}

Test(async, callback_receives_status_and_may_restart, .timeout = 30)
{
    fixture f;
    open_model(&f, NODE_DIR "/test_add/model.onnx", NULL, 0);
    rn_infer_request *r = add_request(&f, 2.0f);
    counter c = {.restarts_left = 9};
    cr_assert_eq(rn_infer_request_set_callback(r, count_cb, &c), RN_OK);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    /* Ten runs: each callback but the last restarts; wait follows the chain. */
    for (int spins = 0; atomic_load(&c.calls) < 10 && spins < 10000; spins++) {
        rn_infer_request_wait(r);
        usleep(100);
    }
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    cr_assert_eq(atomic_load(&c.calls), 10);
    cr_assert_eq(c.last, RN_OK);
    check_add(r, 2.0f);
    rn_infer_request_free(r);
    close_model(&f);
}

static void slow_cb(rn_infer_request *r, rn_status st, void *data)
{
    (void)r, (void)st;
    usleep(200000);
    atomic_store((atomic_int *)data, 1);
}

Test(async, wait_returns_after_the_callback, .timeout = 30)
{
    fixture f;
    open_model(&f, NODE_DIR "/test_add/model.onnx", NULL, 0);
    rn_infer_request *r = add_request(&f, 2.0f);
    atomic_int done = 0;
    rn_infer_request_set_callback(r, slow_cb, &done);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    cr_assert_eq(atomic_load(&done), 1, "wait returned before the callback did");
    rn_infer_request_free(r);
    close_model(&f);
}

Test(async, busy_request_refuses_changes, .timeout = 120)
{
    need_light_models();
    fixture f;
    rn_property prof[] = {{"ENABLE_PROFILING", "YES"}};
    open_model(&f, LIGHT_DIR "/light_squeezenet.onnx", prof, 1);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(f.compiled, &r), RN_OK);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    /* SqueezeNet runs for tens of milliseconds on REF: the request is busy meanwhile. */
    rn_tensor *t;
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_start_async(r), RN_REQUEST_BUSY);
    cr_assert_eq(rn_infer_request_infer(r), RN_REQUEST_BUSY);
    cr_assert(strstr(rn_last_error(), "running") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_input_tensor(r, 0, &t), RN_REQUEST_BUSY);
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &t), RN_REQUEST_BUSY);
    cr_assert_eq(rn_infer_request_set_callback(r, NULL, NULL), RN_REQUEST_BUSY);
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_REQUEST_BUSY);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &t), RN_OK);
    cr_assert_eq(rn_tensor_element_count(t), 1000, "one score per class");
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK);
    rn_infer_request_free(r);
    close_model(&f);
}

Test(async, wait_for_times_out_and_rejects_negative, .timeout = 120)
{
    need_light_models();
    fixture f;
    open_model(&f, LIGHT_DIR "/light_squeezenet.onnx", NULL, 0);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(f.compiled, &r), RN_OK);
    cr_assert_eq(rn_infer_request_wait_for(r, -1), RN_INVALID_ARG);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    /* SqueezeNet takes longer than 1 ms on REF. */
    cr_assert_eq(rn_infer_request_wait_for(r, 1), RN_RESULT_NOT_READY);
    cr_assert_eq(rn_infer_request_cancel(r), RN_OK);
    rn_status st = rn_infer_request_wait(r);
    cr_assert(st == RN_CANCELLED || st == RN_OK, "%s", rn_status_name(st));
    rn_infer_request_free(r);
    close_model(&f);
}

Test(async, cancel_skips_the_rest_and_the_request_runs_again, .timeout = 120)
{
    need_light_models();
    fixture f;
    open_model(&f, LIGHT_DIR "/light_squeezenet.onnx", NULL, 0);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(f.compiled, &r), RN_OK);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_cancel(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_CANCELLED, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "cancel") != NULL, "%s", rn_last_error());
    rn_infer_request_free(r);
    close_model(&f);

    open_model(&f, NODE_DIR "/test_add/model.onnx", NULL, 0);
    r = add_request(&f, 4.0f);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    cr_assert_eq(rn_infer_request_cancel(r), RN_OK, "cancel on an idle request is a no-op");
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    check_add(r, 4.0f);
    rn_infer_request_free(r);
    close_model(&f);
}

#define N_REQUESTS 8

Test(async, many_requests_on_several_streams, .timeout = 120)
{
    fixture f;
    rn_property props[] = {{"NUM_STREAMS", "2"}};
    open_model(&f, NODE_DIR "/test_add/model.onnx", props, 1);
    char buf[32];
    cr_assert_eq(rn_compiled_model_get_property(f.compiled, "NUM_STREAMS", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "2");
    rn_infer_request *r[N_REQUESTS];
    for (int i = 0; i < N_REQUESTS; i++)
        r[i] = add_request(&f, (float)(i + 1));
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < N_REQUESTS; i++)
            cr_assert_eq(rn_infer_request_start_async(r[i]), RN_OK, "%s", rn_last_error());
        for (int i = 0; i < N_REQUESTS; i++)
            cr_assert_eq(rn_infer_request_wait(r[i]), RN_OK);
    }
    for (int i = 0; i < N_REQUESTS; i++) {
        check_add(r[i], (float)(i + 1));
        rn_infer_request_free(r[i]);
    }
    close_model(&f);
}

Test(async, errors_reach_wait_with_their_message, .timeout = 30)
{
    fixture f;
    open_model(&f, NODE_DIR "/test_reshape_reduced_dims/model.onnx", NULL, 0);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(f.compiled, &r), RN_OK);
    rn_tensor *data, *shape;
    rn_infer_request_get_input_tensor(r, 0, &data);
    int64_t target[] = {5, 5}; /* the data has 24 elements: no such reshape */
    int64_t dims[] = {2};
    cr_assert_eq(rn_tensor_wrap(RN_I64, dims, 1, target, sizeof target, &shape), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, shape), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "Reshape") != NULL, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_INFER_NOT_STARTED,
                 "a failed run leaves no output");
    rn_infer_request_free(r);
    rn_tensor_free(shape);
    close_model(&f);
}

Test(properties, hints_choose_streams)
{
    fixture f;
    rn_property tput[] = {{"PERFORMANCE_HINT", "THROUGHPUT"}};
    open_model(&f, NODE_DIR "/test_add/model.onnx", tput, 1);
    char streams[32], nreq[32];
    cr_assert_eq(rn_compiled_model_get_property(f.compiled, "NUM_STREAMS", streams, sizeof streams),
                 RN_OK);
    cr_assert_eq(rn_compiled_model_get_property(f.compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
                                                nreq, sizeof nreq),
                 RN_OK);
    cr_assert(atoi(streams) >= 1);
    cr_assert(atoi(nreq) >= atoi(streams), "%s requests for %s streams", nreq, streams);
    close_model(&f);

    rn_property lat[] = {{"PERFORMANCE_HINT", "LATENCY"}};
    open_model(&f, NODE_DIR "/test_add/model.onnx", lat, 1);
    cr_assert_eq(rn_compiled_model_get_property(f.compiled, "NUM_STREAMS", streams, sizeof streams),
                 RN_OK);
    cr_assert_str_eq(streams, "1");
    close_model(&f);
}

Test(properties, device_properties_apply_to_compiles)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    rn_property p[] = {{"NUM_STREAMS", "3"}};
    cr_assert_eq(rn_core_set_property(core, "REF", p, 1), RN_OK);
    char buf[512];
    cr_assert_eq(rn_core_get_property(core, "REF", "NUM_STREAMS", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "3");
    rn_property bad[] = {{"NUM_STREAMS", "many"}};
    cr_assert_eq(rn_core_set_property(core, "REF", bad, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NUM_STREAMS") != NULL);
    cr_assert(strstr(rn_last_error(), "AUTO") != NULL, "accepted values are named");
    cr_assert_eq(rn_core_get_property(core, "REF", "SUPPORTED_PROPERTIES", buf, sizeof buf), RN_OK);
    cr_assert(strstr(buf, "PERFORMANCE_HINT") != NULL);
    cr_assert_eq(rn_core_get_property(core, "REF", "NO_SUCH", buf, sizeof buf), RN_NOT_FOUND);
    rn_model *m;
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &m), RN_OK);
    cr_assert_eq(rn_core_compile_model(core, m, "REF", NULL, 0, &cm), RN_OK);
    cr_assert_eq(rn_compiled_model_get_property(cm, "NUM_STREAMS", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "3", "the device property applies");
    rn_compiled_model_free(cm);
    rn_property over[] = {{"NUM_STREAMS", "1"}};
    cr_assert_eq(rn_core_compile_model(core, m, "REF", over, 1, &cm), RN_OK);
    cr_assert_eq(rn_compiled_model_get_property(cm, "NUM_STREAMS", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "1", "compile-time properties win");
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}
