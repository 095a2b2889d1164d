/* The behaviour suite, after OpenVINO's shared behaviour tests: callback,
 * cancellation, wait, io_tensor, multithreading, perf_counters, properties,
 * life_time, query_model, runtime_model. Every test runs on every device. */
#include <pthread.h>

#include "tests/behavior/behavior.h"

/* ---- callback ---- */

typedef struct cb_state {
    atomic_int calls;
    atomic_int restarts;
    rn_status last;
} cb_state;

static void restart_cb(rn_infer_request *r, rn_status st, void *data)
{
    cb_state *s = data;
    s->last = st;
    atomic_fetch_add(&s->calls, 1);
    if (atomic_fetch_sub(&s->restarts, 1) > 0)
        rn_infer_request_start_async(r);
}

BEHAVIOR_DEVICES(callback, receives_ok_and_may_restart)
ParameterizedTest(device_param *d, callback, receives_ok_and_may_restart, .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r = behavior_add_request(&m, 3.0f);
    cb_state s = {.restarts = 4};
    cr_assert_eq(rn_infer_request_set_callback(r, restart_cb, &s), RN_OK);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
    for (int i = 0; i < 100000 && atomic_load(&s.calls) < 5; i++)
        usleep(100);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    cr_assert_eq(atomic_load(&s.calls), 5);
    cr_assert_eq(s.last, RN_OK);
    behavior_check_add(r, 3.0f);
    rn_infer_request_free(r);
    behavior_close(&m);
}

static void status_cb(rn_infer_request *r, rn_status st, void *data)
{
    (void)r;
    *(rn_status *)data = st;
}

BEHAVIOR_DEVICES(callback, receives_the_error)
ParameterizedTest(device_param *d, callback, receives_the_error, .timeout = 120)
{
    behavior_skip_runtime_shapes(d->name);
    behavior_model m;
    behavior_open(&m, d->name, "test_reshape_reduced_dims", NULL, 0);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &r), RN_OK);
    int64_t bad[] = {7, 7}, dims[] = {2};
    rn_tensor *shape;
    cr_assert_eq(rn_tensor_wrap(RN_I64, dims, 1, bad, sizeof bad, &shape), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, shape), RN_OK);
    rn_status seen = RN_OK;
    cr_assert_eq(rn_infer_request_set_callback(r, status_cb, &seen), RN_OK);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_SHAPE_MISMATCH);
    cr_assert_eq(seen, RN_SHAPE_MISMATCH);
    rn_infer_request_free(r);
    rn_tensor_free(shape);
    behavior_close(&m);
}

/* ---- cancellation and wait ---- */

BEHAVIOR_DEVICES(cancellation, cancelled_run_reports_cancelled_and_restarts)
ParameterizedTest(device_param *d, cancellation, cancelled_run_reports_cancelled_and_restarts,
                  .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    int cancelled = 0;
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_infer_request_cancel(r), RN_OK);
        rn_status st = rn_infer_request_wait(r);
        cr_assert(st == RN_OK || st == RN_CANCELLED, "%s", rn_status_name(st));
        cancelled += st == RN_CANCELLED;
    }
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    behavior_check_add(r, 2.0f);
    rn_infer_request_free(r);
    behavior_close(&m);
    (void)cancelled; /* a fast device may finish first: both outcomes are legal */
}

BEHAVIOR_DEVICES(wait, wait_for_rejects_negative_and_wait_on_idle_is_ok)
ParameterizedTest(device_param *d, wait, wait_for_rejects_negative_and_wait_on_idle_is_ok,
                  .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait_for(r, 0), RN_OK);
    cr_assert_eq(rn_infer_request_wait_for(r, -5), RN_INVALID_ARG);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    rn_status st;
    while ((st = rn_infer_request_wait_for(r, 1)) == RN_RESULT_NOT_READY)
        ;
    cr_assert_eq(st, RN_OK, "%s", rn_status_name(st));
    behavior_check_add(r, 2.0f);
    rn_infer_request_free(r);
    behavior_close(&m);
}

/* ---- io_tensor ---- */

BEHAVIOR_DEVICES(io_tensor, get_tensor_twice_is_the_same_buffer)
ParameterizedTest(device_param *d, io_tensor, get_tensor_twice_is_the_same_buffer)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    rn_tensor *a, *b;
    cr_assert_eq(rn_infer_request_get_input_tensor(r, 0, &a), RN_OK);
    cr_assert_eq(rn_infer_request_get_input_tensor(r, 0, &b), RN_OK);
    cr_assert_eq(rn_tensor_data(a), rn_tensor_data(b));
    cr_assert_eq(rn_infer_request_infer(r), RN_OK);
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &a), RN_OK);
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &b), RN_OK);
    cr_assert_eq(rn_tensor_data(a), rn_tensor_data(b));
    rn_infer_request_free(r);
    behavior_close(&m);
}

BEHAVIOR_DEVICES(io_tensor, user_tensors_are_used_in_place)
ParameterizedTest(device_param *d, io_tensor, user_tensors_are_used_in_place)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &r), RN_OK);
    float x[60], y[60], z[60];
    for (int i = 0; i < 60; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
        z[i] = -1.0f;
    }
    int64_t dims[] = {3, 4, 5};
    rn_tensor *tx, *ty, *tz;
    rn_tensor_wrap(RN_F32, dims, 3, x, sizeof x, &tx);
    rn_tensor_wrap(RN_F32, dims, 3, y, sizeof y, &ty);
    rn_tensor_wrap(RN_F32, dims, 3, z, sizeof z, &tz);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, tx), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, ty), RN_OK);
    cr_assert_eq(rn_infer_request_set_output_tensor(r, 0, tz), RN_OK);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
    for (int i = 0; i < 60; i++)
        cr_assert_float_eq(z[i], (float)i + 1.0f, 1e-6);
    x[5] = 100.0f; /* the caller's buffer is read at the next run, not copied at set time */
    cr_assert_eq(rn_infer_request_infer(r), RN_OK);
    cr_assert_float_eq(z[5], 101.0f, 1e-6);
    rn_infer_request_free(r);
    rn_tensor_free(tx);
    rn_tensor_free(ty);
    rn_tensor_free(tz);
    behavior_close(&m);
}

BEHAVIOR_DEVICES(io_tensor, busy_request_refuses_tensors_callback_and_profiling)
ParameterizedTest(device_param *d, io_tensor, busy_request_refuses_tensors_callback_and_profiling,
                  .timeout = 120)
{
    /* A run long enough to be busy: SqueezeNet on REF kernels (tens of milliseconds), and on
     * SLOWDEV a compute stage of 300 ms on top. A fast device's run (CPU: a few milliseconds)
     * may end before the calls on a loaded machine: an attempt whose run had ended by the time
     * the calls were made (it no longer runs after them, or a new start was accepted) proves
     * nothing and is made again; a call accepted while the run still runs fails. */
    if (access(LIGHT_DIR "/light_squeezenet.onnx", R_OK) != 0)
        cr_skip_test("%s/light_squeezenet.onnx is missing: run scripts/setup", LIGHT_DIR);
    rn_core *core = behavior_core(d->name);
    rn_model *model;
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_read_model(core, LIGHT_DIR "/light_squeezenet.onnx", &model), RN_OK);
    rn_property props[] = {{"ENABLE_PROFILING", "YES"}, {"SLOWDEV_EXECUTE_US", "300000"}};
    cr_assert_eq(rn_core_compile_model(core, model, d->name, props,
                                       strcmp(d->name, "SLOWDEV") == 0 ? 2 : 1, &cm),
                 RN_OK, "%s", rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    rn_port port;
    cr_assert_eq(rn_compiled_model_input(cm, 0, &port), RN_OK);
    rn_tensor *fresh;
    cr_assert_eq(
        rn_tensor_create(port.element_type, port.shape.dims, (size_t)port.shape.rank, &fresh),
        RN_OK);
    rn_tensor *t;
    const rn_profiling_info *info;
    size_t n;
    int attempts = 0;
    for (;; attempts++) {
        cr_assert_lt(attempts, 50, "every run ended before the calls could be made");
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
        rn_status got = rn_infer_request_get_input_tensor(r, 0, &t);
        bool running_message = got == RN_REQUEST_BUSY && strstr(rn_last_error(), "running");
        rn_status set = rn_infer_request_set_input_tensor(r, 0, fresh);
        rn_status callback = rn_infer_request_set_callback(r, NULL, NULL);
        rn_status profiling = rn_infer_request_profiling_info(r, &info, &n);
        rn_status again = rn_infer_request_start_async(r);
        bool still_running = rn_infer_request_wait_for(r, 0) == RN_RESULT_NOT_READY;
        cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
        if (got == RN_REQUEST_BUSY && set == RN_REQUEST_BUSY && callback == RN_REQUEST_BUSY &&
            profiling == RN_REQUEST_BUSY && again == RN_REQUEST_BUSY) {
            cr_assert(running_message, "the busy error does not say the request is running");
            break;
        }
        if (again == RN_OK || !still_running)
            continue; /* the run ended before the calls: no proof either way */
        cr_assert_fail("a call on a running request was accepted: get_input %d, set_input %d, "
                       "set_callback %d, profiling %d, start_async %d (RN_REQUEST_BUSY is %d)",
                       got, set, callback, profiling, again, RN_REQUEST_BUSY);
    }
    if (attempts > 0)
        cr_log_info("%s: %d attempts whose run ended before the calls", d->name, attempts);
    cr_assert_eq(rn_infer_request_get_input_tensor(r, 0, &t), RN_OK);
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK);
    rn_infer_request_free(r);
    rn_tensor_free(fresh);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* ---- multithreading ---- */

typedef struct thread_job {
    behavior_model *m;
    int id;
    bool async;
    int failures;
} thread_job;

static void *infer_thread(void *arg)
{
    thread_job *j = arg;
    rn_infer_request *r;
    if (rn_compiled_model_create_infer_request(j->m->compiled, &r) != RN_OK) {
        j->failures++;
        return NULL;
    }
    float k = (float)(j->id + 2);
    rn_tensor *a, *b;
    rn_infer_request_get_input_tensor(r, 0, &a);
    rn_infer_request_get_input_tensor(r, 1, &b);
    float *x = rn_tensor_data(a), *y = rn_tensor_data(b);
    for (size_t i = 0; i < rn_tensor_element_count(a); i++) {
        x[i] = (float)i;
        y[i] = (k - 1.0f) * (float)i;
    }
    for (int it = 0; it < 30; it++) {
        rn_status st = j->async ? rn_infer_request_start_async(r) : rn_infer_request_infer(r);
        if (st == RN_OK && j->async)
            st = rn_infer_request_wait(r);
        rn_tensor *out;
        if (st != RN_OK || rn_infer_request_get_output_tensor(r, 0, &out) != RN_OK) {
            j->failures++;
            continue;
        }
        const float *z = rn_tensor_data(out);
        for (size_t i = 0; i < rn_tensor_element_count(out); i++)
            if (z[i] != k * (float)i) {
                j->failures++;
                break;
            }
    }
    rn_infer_request_free(r);
    return NULL;
}

static void run_threads(const char *device, bool async)
{
    behavior_model m;
    rn_property streams[] = {{"NUM_STREAMS", "2"}};
    behavior_open(&m, device, "test_add", streams, 1);
    pthread_t t[6];
    thread_job jobs[6];
    for (int i = 0; i < 6; i++) {
        jobs[i] = (thread_job){.m = &m, .id = i, .async = async};
        pthread_create(&t[i], NULL, infer_thread, &jobs[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(jobs[i].failures, 0, "thread %d: %d failures", i, jobs[i].failures);
    }
    behavior_close(&m);
}

BEHAVIOR_DEVICES(multithreading, sync_infer_from_many_threads)
ParameterizedTest(device_param *d, multithreading, sync_infer_from_many_threads, .timeout = 120)
{
    run_threads(d->name, false);
}

BEHAVIOR_DEVICES(multithreading, start_async_from_many_threads)
ParameterizedTest(device_param *d, multithreading, start_async_from_many_threads, .timeout = 120)
{
    run_threads(d->name, true);
}

/* ---- perf_counters ---- */

BEHAVIOR_DEVICES(perf_counters, stages_and_nodes_are_reported)
ParameterizedTest(device_param *d, perf_counters, stages_and_nodes_are_reported, .timeout = 120)
{
    behavior_model m;
    rn_property prof[] = {{"ENABLE_PROFILING", "YES"}};
    behavior_open(&m, d->name, "test_add", prof, 1);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK, "%s", rn_last_error());
    /* GPU: its uploads and download are nodes too (layout conversions). */
    size_t add = 5;
    while (add < n && strcmp(info[add].node_type, "Reorder") == 0)
        add++;
    cr_assert_eq(n, behavior_on_gpu(d->name) ? 9 : 6, "%zu profiling entries", n);
    cr_assert_eq(info[0].status, RN_NODE_EXECUTED, "input preprocessing");
    cr_assert(add < n && strcmp(info[add].node_type, "Add") == 0, "the Add node is listed");
    cr_assert_eq(info[add].status, RN_NODE_EXECUTED, "the Add node");
    bool device = behavior_on_slowdev(d->name);
    cr_assert_eq(info[1].status == RN_NODE_EXECUTED, device, "transfer to device");
    cr_assert_eq(info[3].status == RN_NODE_EXECUTED, device, "transfer from device");
    if (device)
        cr_assert(info[1].real_time_us >= 90, "upload costs 100 us, got %llu",
                  (unsigned long long)info[1].real_time_us);
    rn_infer_request_free(r);
    behavior_close(&m);
}

/* ---- properties ---- */

BEHAVIOR_DEVICES(properties, every_mandatory_rw_key_round_trips)
ParameterizedTest(device_param *d, properties, every_mandatory_rw_key_round_trips)
{
    rn_core *core = behavior_core(d->name);
    static const rn_property values[] = {
        {"ENABLE_PROFILING", "YES"},
        {"PERFORMANCE_HINT", "THROUGHPUT"},
        {"PERFORMANCE_HINT_NUM_REQUESTS", "4"},
        {"NUM_STREAMS", "2"},
        {"INFERENCE_NUM_THREADS", "2"},
        {"EXECUTION_MODE_HINT", "ACCURACY"},
        {"MODEL_PRIORITY", "HIGH"},
        {"LOG_LEVEL", "LOG_WARNING"},
        {"DISABLE_TRANSFORMATIONS", "YES"},
        {"EXCLUSIVE_ASYNC_REQUESTS", "NO"},
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        cr_assert_eq(rn_core_set_property(core, d->name, &values[i], 1), RN_OK, "%s: %s",
                     values[i].key, rn_last_error());
        char buf[64];
        cr_assert_eq(rn_core_get_property(core, d->name, values[i].key, buf, sizeof buf), RN_OK);
        cr_assert_str_eq(buf, values[i].value, "%s", values[i].key);
    }
    rn_core_free(core);
}

BEHAVIOR_DEVICES(properties, invalid_values_and_keys_are_named)
ParameterizedTest(device_param *d, properties, invalid_values_and_keys_are_named)
{
    rn_core *core = behavior_core(d->name);
    static const rn_property bad[] = {
        {"ENABLE_PROFILING", "perhaps"}, {"PERFORMANCE_HINT", "FASTEST"}, {"NUM_STREAMS", "-3"},
        {"MODEL_PRIORITY", "URGENT"},    {"NOT_A_PROPERTY", "1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(rn_core_set_property(core, d->name, &bad[i], 1), RN_INVALID_ARG, "%s",
                     bad[i].key);
        cr_assert(strstr(rn_last_error(), bad[i].key) != NULL, "%s", rn_last_error());
    }
    char buf[16];
    cr_assert_eq(rn_core_get_property(core, d->name, "NUM_STREAMS", buf, 1), RN_INVALID_ARG,
                 "a buffer too small is an error");
    rn_core_free(core);
}

BEHAVIOR_DEVICES(properties, compiled_model_reports_its_settings)
ParameterizedTest(device_param *d, properties, compiled_model_reports_its_settings)
{
    behavior_model m;
    rn_property p[] = {{"NUM_STREAMS", "2"}};
    behavior_open(&m, d->name, "test_add", p, 1);
    char buf[64];
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "NUM_STREAMS", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "2");
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", buf,
                                                sizeof buf),
                 RN_OK);
    cr_assert(atoi(buf) >= 2);
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "EXECUTION_DEVICES", buf, sizeof buf),
                 RN_OK);
    /* HETERO names the devices that run its parts (test_add is all on the
     * first device of the list), AUTO the one it chose (CPU, or REF while
     * CPU compiles). */
    if (strncmp(d->name, "AUTO", 4) == 0)
        cr_assert(strcmp(buf, "CPU") == 0 || strcmp(buf, "REF") == 0, "%s", buf);
    else if (strncmp(d->name, "HETERO:", 7) == 0)
        cr_assert(strncmp(buf, d->name + 7, strlen(buf)) == 0 && d->name[7 + strlen(buf)] == ',',
                  "EXECUTION_DEVICES %s, expected the first device of %s", buf, d->name);
    else
        cr_assert_str_eq(buf, d->name);
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "NOPE", buf, sizeof buf), RN_NOT_FOUND);
    behavior_close(&m);
}

/* ---- life_time ---- */

BEHAVIOR_DEVICES(life_time, request_outlives_core_and_compiled_model)
ParameterizedTest(device_param *d, life_time, request_outlives_core_and_compiled_model,
                  .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r = behavior_add_request(&m, 5.0f);
    behavior_close(&m);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    behavior_check_add(r, 5.0f);
    rn_infer_request_free(r);
}

BEHAVIOR_DEVICES(life_time, freeing_a_running_request_waits_for_it)
ParameterizedTest(device_param *d, life_time, freeing_a_running_request_waits_for_it,
                  .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    for (int i = 0; i < 10; i++) {
        rn_infer_request *r = behavior_add_request(&m, 2.0f);
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
        rn_infer_request_free(r);
    }
    behavior_close(&m);
}

/* ---- query_model and runtime_model ---- */

BEHAVIOR_DEVICES(query_model, names_supported_layers)
ParameterizedTest(device_param *d, query_model, names_supported_layers)
{
    rn_core *core = behavior_core(d->name);
    rn_model *model;
    cr_assert_eq(
        rn_core_read_model(core, NODE_DIR "/test_conv_with_strides_padding/model.onnx", &model),
        RN_OK);
    rn_query_result *q;
    cr_assert_eq(rn_core_query_model(core, model, d->name, NULL, 0, &q), RN_OK, "%s",
                 rn_last_error());
    cr_assert(rn_query_result_count(q) >= 3, "the Conv node and its inputs");
    for (size_t i = 0; i < rn_query_result_count(q); i++) {
        const char *name;
        int ok;
        rn_query_result_entry(q, i, &name, &ok);
        cr_assert(ok, "%s", name);
    }
    rn_query_result_free(q);
    rn_model_free(model);
    rn_core_free(core);
}

BEHAVIOR_DEVICES(runtime_model, lists_nodes_in_execution_order)
ParameterizedTest(device_param *d, runtime_model, lists_nodes_in_execution_order)
{
    behavior_model m;
    rn_property prof[] = {{"ENABLE_PROFILING", "YES"}};
    behavior_open(&m, d->name, "test_add", prof, 1);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    cr_assert_eq(rn_infer_request_infer(r), RN_OK);
    const rn_runtime_node *nodes;
    size_t n;
    cr_assert_eq(rn_compiled_model_runtime_model(m.compiled, &nodes, &n), RN_OK, "%s",
                 rn_last_error());
    /* GPU: two uploads before the Add and a download after it (Reorder). */
    bool gpu = behavior_on_gpu(d->name);
    cr_assert_eq(n, gpu ? 4 : 1, "%zu runtime model rows", n);
    const rn_runtime_node *add = &nodes[gpu ? 2 : 0];
    for (size_t i = 0; i < n; i++)
        if (&nodes[i] != add)
            cr_assert_str_eq(nodes[i].layer_type, "Reorder");
    cr_assert_str_eq(add->layer_type, "Add");
    cr_assert_eq(add->execution_order, gpu ? 2 : 0);
    /* AUTO reports its current device's runtime model: when the best device
     * finished compiling after this request ran on the first one, its nodes
     * have not run yet (-1, "not executed"), as OpenVINO's AUTO reports them. */
    if (strncmp(d->name, "AUTO", 4) == 0)
        cr_assert(add->perf_counter_us >= -1, "%lld", (long long)add->perf_counter_us);
    else
        cr_assert(add->perf_counter_us >= 0, "%lld", (long long)add->perf_counter_us);
    cr_assert(strlen(add->original_names) > 0);
    rn_infer_request_free(r);
    behavior_close(&m);
}
