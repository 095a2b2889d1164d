/* bench, run as a subprocess on REF with tiny models: sync and async runs,
 * the JSON and HTML reports, the trace, per-layer counters, inputs and
 * outputs, shapes, the cache, and the documented errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tools/tool_util.h"
#include "tools/npy.h"

/* Runs bench and asserts it succeeded. */
static tool_run bench_ok(const char *const *args)
{
    tool_run r = tool_exec("bench", args, NULL);
    cr_assert_eq(r.status, 0, "bench failed (%d): %s\n%s", r.status, r.err, r.out);
    return r;
}

/* Runs bench with -json and returns the parsed report. */
static json_value *bench_json(const char *const *args, char *dir, size_t dir_size)
{
    tool_temp_dir(dir, dir_size);
    char path[600];
    snprintf(path, sizeof path, "%s/report.json", dir);
    const char *argv[64];
    size_t n = 0;
    for (; args[n] != NULL; n++)
        argv[n] = args[n];
    argv[n++] = "-json";
    argv[n++] = path;
    argv[n] = NULL;
    tool_run r = bench_ok(argv);
    tool_run_free(&r);
    char *text = tool_read_file(path, NULL);
    cr_assert_not_null(text, "no JSON report at %s", path);
    char error[256];
    json_value *root = json_parse(text, error, sizeof error);
    cr_assert_not_null(root, "the JSON report does not parse: %s", error);
    free(text);
    return root;
}

static double number_at(const json_value *root, const char *path)
{
    const json_value *v = json_at(root, path);
    cr_assert_not_null(v, "the JSON report has no %s", path);
    cr_assert_eq(v->type, JSON_NUMBER, "%s is not a number", path);
    return v->number;
}

static const char *string_at(const json_value *root, const char *path)
{
    const json_value *v = json_at(root, path);
    cr_assert_not_null(v, "the JSON report has no %s", path);
    cr_assert_eq(v->type, JSON_STRING, "%s is not a string", path);
    return v->string;
}

/* Asserts that stderr is exactly one line holding `needle`, and that the
 * exit status is `status`. */
static void assert_one_line_error(const tool_run *r, int status, const char *needle)
{
    cr_assert_eq(r->status, status, "exit status %d, expected %d; stderr: %s", r->status, status,
                 r->err);
    cr_assert_eq(tool_count_lines(r->err), 1, "expected one line on stderr, got:\n%s", r->err);
    cr_assert(strstr(r->err, "[ ERROR ]") != NULL, "%s", r->err);
    cr_assert(strstr(r->err, needle) != NULL, "'%s' is not in: %s", needle, r->err);
}

Test(bench, sync_run_of_5_iterations_reports_latency_and_throughput)
{
    const char *args[] = {"-m", ADD_MODEL, "-d", "REF", "-api", "sync", "-niter", "5", NULL};
    tool_run r = bench_ok(args);
    cr_assert(strstr(r.out, "Count:               5 iterations") != NULL, "%s", r.out);
    const char *fields[] = {"Duration:",
                            "Median:",
                            "Average:",
                            "Min:",
                            "Max:",
                            "p90:",
                            "p99:",
                            "Throughput:",
                            "FPS",
                            "Read model took",
                            "Compile model took",
                            "LOADED_FROM_CACHE",
                            "NUM_STREAMS",
                            "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
                            "PERFORMANCE_HINT",
                            "INFERENCE_PRECISION_HINT",
                            "EXECUTION_DEVICES",
                            "[Step 10/10]"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        cr_expect(strstr(r.out, fields[i]) != NULL, "'%s' is not printed:\n%s", fields[i], r.out);
    /* Not a terminal: plain progress lines, no carriage returns. */
    cr_expect(strchr(r.out, '\r') == NULL);
    cr_expect(strstr(r.out, "Progress 100%") != NULL, "%s", r.out);
    cr_expect_str_empty(r.err);
    tool_run_free(&r);
}

Test(bench, async_run_of_5_iterations_counts_exactly_5)
{
    char dir[512];
    const char *args[] = {"-m",     ADD_MODEL, "-d",     "REF", "-api", "async",
                          "-niter", "5",       "-nireq", "2",   NULL};
    json_value *root = bench_json(args, dir, sizeof dir);
    cr_expect_eq(number_at(root, "results.count"), 5);
    cr_expect_eq(number_at(root, "results.latency.count"), 5);
    cr_expect_eq(number_at(root, "settings.nireq"), 2);
    cr_expect_str_eq(string_at(root, "settings.api"), "async");
    cr_expect_str_eq(string_at(root, "settings.hint"), "throughput");
    json_free(root);
}

Test(bench, json_report_parses_and_holds_every_field)
{
    char dir[512];
    const char *args[] = {"-m", ADD_MODEL, "-d", "REF", "-niter", "5", "-pc", NULL};
    json_value *root = bench_json(args, dir, sizeof dir);
    const char *strings[] = {"tool",
                             "runnel_version",
                             "command_line",
                             "settings.model",
                             "settings.device",
                             "settings.api",
                             "settings.hint",
                             "settings.report_type",
                             "steps.full_device_name",
                             "steps.loaded_from_cache",
                             "compiled_model_properties.NUM_STREAMS",
                             "compiled_model_properties.OPTIMAL_NUMBER_OF_INFER_REQUESTS",
                             "compiled_model_properties.PERFORMANCE_HINT",
                             "compiled_model_properties.INFERENCE_PRECISION_HINT",
                             "compiled_model_properties.EXECUTION_DEVICES"};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        string_at(root, strings[i]);
    const char *numbers[] = {"settings.nireq",
                             "settings.niter",
                             "steps.read_ms",
                             "steps.compile_ms",
                             "steps.first_inference_ms",
                             "results.count",
                             "results.duration_ms",
                             "results.latency.median_ms",
                             "results.latency.average_ms",
                             "results.latency.min_ms",
                             "results.latency.max_ms",
                             "results.latency.p90_ms",
                             "results.latency.p99_ms",
                             "results.throughput_fps",
                             "results.batch",
                             "performance_counters.inferences",
                             "performance_counters.total_us"};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        number_at(root, numbers[i]);
    cr_expect_str_eq(string_at(root, "compiled_model_properties.EXECUTION_DEVICES"), "REF");
    cr_expect_str_eq(string_at(root, "compiled_model_properties.PERFORMANCE_HINT"), "THROUGHPUT");
    /* The statistics are consistent with one another. */
    double min = number_at(root, "results.latency.min_ms");
    double med = number_at(root, "results.latency.median_ms");
    double max = number_at(root, "results.latency.max_ms");
    double p90 = number_at(root, "results.latency.p90_ms");
    double p99 = number_at(root, "results.latency.p99_ms");
    double avg = number_at(root, "results.latency.average_ms");
    cr_expect(min <= med && med <= p90 && p90 <= p99 && p99 <= max, "%g %g %g %g %g", min, med, p90,
              p99, max);
    cr_expect(min <= avg && avg <= max);
    double fps = number_at(root, "results.throughput_fps");
    double duration = number_at(root, "results.duration_ms");
    cr_expect(fps > 0 && duration > 0);
    cr_expect(fabs(fps - 5 * 1e3 / duration) <= 1e-6 * fps, "fps %g, duration %g", fps, duration);
    /* Inputs, outputs and the counters of the one Add layer. */
    const json_value *inputs = json_at(root, "inputs");
    cr_assert(inputs != NULL && inputs->type == JSON_ARRAY && inputs->n == 2);
    cr_expect_str_eq(string_at(inputs->items[0], "name"), "x");
    cr_expect_str_eq(string_at(inputs->items[0], "shape"), "[3,4,5]");
    cr_expect_str_eq(string_at(inputs->items[0], "element_type"), "f32");
    const json_value *outputs = json_at(root, "outputs");
    cr_assert(outputs != NULL && outputs->type == JSON_ARRAY && outputs->n == 1);
    cr_expect_str_eq(string_at(outputs->items[0], "name"), "sum");
    cr_expect_eq(number_at(root, "performance_counters.inferences"), 5);
    const json_value *layers = json_at(root, "performance_counters.layers");
    cr_assert(layers != NULL && layers->type == JSON_ARRAY && layers->n == 1);
    cr_expect_str_eq(string_at(layers->items[0], "layer_type"), "Add");
    cr_expect_str_eq(string_at(layers->items[0], "status"), "EXECUTED");
    number_at(layers->items[0], "real_time_us");
    const json_value *types = json_at(root, "performance_counters.layer_types");
    cr_assert(types != NULL && types->type == JSON_ARRAY && types->n == 1);
    cr_expect_str_eq(string_at(types->items[0], "layer_type"), "Add");
    json_free(root);
}

Test(bench, nireq_0_uses_the_optimal_number_of_requests)
{
    char dir[512];
    const char *args[] = {"-m", ADD_MODEL, "-niter", "3", "-nireq", "0", NULL};
    json_value *root = bench_json(args, dir, sizeof dir);
    const char *optimal =
        string_at(root, "compiled_model_properties.OPTIMAL_NUMBER_OF_INFER_REQUESTS");
    cr_expect_eq(number_at(root, "settings.nireq"), atof(optimal));
    json_free(root);
}

Test(bench, hints_reach_the_compiled_model)
{
    char dir[512];
    const char *latency[] = {"-m", ADD_MODEL, "-niter", "2", "-hint", "latency", NULL};
    json_value *root = bench_json(latency, dir, sizeof dir);
    cr_expect_str_eq(string_at(root, "compiled_model_properties.PERFORMANCE_HINT"), "LATENCY");
    json_free(root);
    const char *sync[] = {"-m", ADD_MODEL, "-niter", "2", "-api", "sync", NULL};
    root = bench_json(sync, dir, sizeof dir);
    /* benchmark_app's default: latency for sync, throughput for async. */
    cr_expect_str_eq(string_at(root, "settings.hint"), "latency");
    cr_expect_eq(number_at(root, "settings.nireq"), 1);
    json_free(root);
    const char *streams[] = {"-m", ADD_MODEL,   "-niter", "2", "-nstreams",
                             "3",  "-nthreads", "3",      NULL};
    root = bench_json(streams, dir, sizeof dir);
    cr_expect_str_eq(string_at(root, "compiled_model_properties.NUM_STREAMS"), "3");
    json_free(root);
    /* -p passes any other compile-time property. */
    const char *profiling[] = {"-m", ADD_MODEL, "-niter", "2", "-p", "ENABLE_PROFILING=YES", NULL};
    root = bench_json(profiling, dir, sizeof dir);
    cr_expect_str_eq(string_at(root, "compiled_model_properties.ENABLE_PROFILING"), "YES");
    json_free(root);
}

Test(bench, pc_prints_the_per_layer_table_and_type_totals)
{
    const char *args[] = {"-m", CONV_MODEL, "-niter", "3", "-pc", NULL};
    tool_run r = bench_ok(args);
    cr_expect(strstr(r.out, "Performance counters") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "layer name") != NULL);
    cr_expect(strstr(r.out, "Conv") != NULL);
    cr_expect(strstr(r.out, "EXECUTED") != NULL);
    cr_expect(strstr(r.out, "Per layer type") != NULL);
    cr_expect(strstr(r.out, "Total time of the layers") != NULL);
    tool_run_free(&r);
}

Test(bench, detailed_report_has_every_request_and_sample)
{
    char dir[512];
    const char *args[] = {"-m", ADD_MODEL,      "-niter",   "6", "-nireq",
                          "3",  "-report_type", "detailed", NULL};
    json_value *root = bench_json(args, dir, sizeof dir);
    const json_value *requests = json_at(root, "requests");
    cr_assert(requests != NULL && requests->type == JSON_ARRAY);
    cr_expect_eq(requests->n, 3);
    double total = 0;
    for (size_t i = 0; i < requests->n; i++)
        total += number_at(requests->items[i], "latency.count");
    cr_expect_eq(total, 6);
    const json_value *samples = json_at(root, "latency_samples");
    cr_assert(samples != NULL && samples->type == JSON_ARRAY);
    cr_expect_eq(samples->n, 6);
    cr_expect_eq(samples->items[0]->n, 2);
    cr_expect_not_null(json_at(root, "performance_counters.layers"));
    json_free(root);
}

Test(bench, html_report_is_one_self_contained_page)
{
    char dir[512], html[600];
    tool_temp_dir(dir, sizeof dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    const char *args[] = {"-m", ADD_MODEL, "-niter", "20", "-pc", "-html", html, NULL};
    tool_run r = bench_ok(args);
    tool_run_free(&r);
    char *page = tool_read_file(html, NULL);
    cr_assert_not_null(page, "no HTML report");
    cr_expect(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    cr_expect(strstr(page, "</html>") != NULL);
    const char *parts[] = {"Latency histogram",
                           "Latency over time",
                           "Time per layer type",
                           "Settings",
                           "<svg",
                           "<rect",
                           "<circle",
                           "Add"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        cr_expect(strstr(page, parts[i]) != NULL, "'%s' is not in the page", parts[i]);
    /* Self-contained: nothing is fetched from elsewhere. */
    const char *external[] = {"http:", "https:", "<script", "<link", "src=", "@import"};
    for (size_t i = 0; i < sizeof external / sizeof external[0]; i++)
        cr_expect(strstr(page, external[i]) == NULL, "'%s' is in the page", external[i]);
    free(page);
}

Test(bench, trace_is_written_as_chrome_trace_json)
{
    char dir[512], trace[600];
    tool_temp_dir(dir, sizeof dir);
    snprintf(trace, sizeof trace, "%s/run.trace.json", dir);
    const char *args[] = {"-m", ADD_MODEL, "-niter", "4", "-nireq", "2", "-trace", trace, NULL};
    tool_run r = bench_ok(args);
    tool_run_free(&r);
    char *text = tool_read_file(trace, NULL);
    cr_assert_not_null(text, "no trace file");
    char error[256];
    json_value *root = json_parse(text, error, sizeof error);
    cr_assert_not_null(root, "the trace does not parse: %s", error);
    const json_value *events = root->type == JSON_ARRAY ? root : json_member(root, "traceEvents");
    cr_assert(events != NULL && events->type == JSON_ARRAY);
    /* Every stage and kernel of 5 runs (the first one included). */
    cr_expect_geq(events->n, 5);
    json_free(root);
    free(text);
}

/* Reads a float .npy written by bench. */
static rn_tensor *read_npy(const char *path)
{
    rn_tensor *t;
    cr_assert_eq(npy_read(path, &t), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_element_type(t), RN_F32);
    return t;
}

Test(bench, generated_inputs_are_arange_and_outputs_are_written)
{
    char dir[512], out[600], path[700];
    tool_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *args[] = {"-m", ADD_MODEL, "-niter", "2", "-o", out, NULL};
    tool_run r = bench_ok(args);
    tool_run_free(&r);
    snprintf(path, sizeof path, "%s/sum.npy", out);
    rn_tensor *sum = read_npy(path);
    cr_assert_eq(rn_tensor_element_count(sum), 60);
    /* x = y = arange(60)/60, so sum[i] = 2i/60. */
    const float *s = rn_tensor_data(sum);
    for (int i = 0; i < 60; i++)
        cr_expect_float_eq(s[i], 2.0f * (float)i / 60.0f, 1e-6, "sum[%d] = %g", i, (double)s[i]);
    rn_tensor_free(sum);
}

Test(bench, inputs_come_from_npy_files)
{
    char dir[512], x_path[600], y_path[600], out[600], spec_x[700], spec_y[700], path[700];
    tool_temp_dir(dir, sizeof dir);
    snprintf(x_path, sizeof x_path, "%s/x.npy", dir);
    snprintf(y_path, sizeof y_path, "%s/y.npy", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    int64_t dims[] = {3, 4, 5};
    rn_tensor *x, *y;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 3, &x), RN_OK);
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 3, &y), RN_OK);
    for (int i = 0; i < 60; i++) {
        ((float *)rn_tensor_data(x))[i] = (float)i;
        ((float *)rn_tensor_data(y))[i] = 100.0f;
    }
    cr_assert_eq(npy_write(x_path, x), RN_OK);
    cr_assert_eq(npy_write(y_path, y), RN_OK);
    snprintf(spec_x, sizeof spec_x, "x=%s", x_path);
    snprintf(spec_y, sizeof spec_y, "y=%s", y_path);
    const char *args[] = {"-m", ADD_MODEL, "-niter", "2", "-i", spec_x,
                          "-i", spec_y,    "-o",     out, NULL};
    tool_run r = bench_ok(args);
    cr_expect(strstr(r.out, x_path) != NULL, "the input's file is not printed:\n%s", r.out);
    tool_run_free(&r);
    snprintf(path, sizeof path, "%s/sum.npy", out);
    rn_tensor *sum = read_npy(path);
    for (int i = 0; i < 60; i++)
        cr_expect_float_eq(((float *)rn_tensor_data(sum))[i], (float)i + 100.0f, 1e-6);
    rn_tensor_free(sum);
    rn_tensor_free(x);
    rn_tensor_free(y);
    /* A file whose shape does not fit the input is an error naming it. */
    int64_t bad_dims[] = {2, 2};
    rn_tensor *bad;
    cr_assert_eq(rn_tensor_create(RN_F32, bad_dims, 2, &bad), RN_OK);
    cr_assert_eq(npy_write(x_path, bad), RN_OK);
    rn_tensor_free(bad);
    const char *bad_args[] = {"-m", ADD_MODEL, "-niter", "1", "-i", spec_x, NULL};
    r = tool_exec("bench", bad_args, NULL);
    assert_one_line_error(&r, 1, "'x'");
    tool_run_free(&r);
}

Test(bench, dynamic_model_needs_and_takes_data_shape)
{
    const char *none[] = {"-m", DYN_MODEL, "-niter", "1", NULL};
    tool_run r = tool_exec("bench", none, NULL);
    assert_one_line_error(&r, 1, "-data_shape");
    tool_run_free(&r);
    char dir[512];
    const char *data[] = {"-m", DYN_MODEL, "-niter", "2", "-data_shape", "x[2,4],y[2,4]", NULL};
    json_value *root = bench_json(data, dir, sizeof dir);
    const json_value *inputs = json_at(root, "inputs");
    cr_assert(inputs != NULL && inputs->n == 2);
    cr_expect_str_eq(string_at(inputs->items[0], "shape"), "[2,4]");
    cr_expect_str_eq(string_at(root, "settings.data_shape"), "x[2,4],y[2,4]");
    json_free(root);
    const char *shape[] = {"-m", DYN_MODEL, "-niter", "2", "-shape", "[5,4]", NULL};
    root = bench_json(shape, dir, sizeof dir);
    inputs = json_at(root, "inputs");
    cr_expect_str_eq(string_at(inputs->items[1], "shape"), "[5,4]");
    json_free(root);
}

Test(bench, cache_dir_loads_the_second_compile_from_the_cache)
{
    char dir[512], cache[600];
    tool_temp_dir(cache, sizeof cache);
    const char *args[] = {"-m", ADD_MODEL, "-niter", "1", "-cache_dir", cache, NULL};
    json_value *first = bench_json(args, dir, sizeof dir);
    cr_expect_str_eq(string_at(first, "steps.loaded_from_cache"), "NO");
    json_free(first);
    json_value *second = bench_json(args, dir, sizeof dir);
    cr_expect_str_eq(string_at(second, "steps.loaded_from_cache"), "YES");
    json_free(second);
}

Test(bench, runs_on_a_device_from_a_dynamic_plugin)
{
    char dir[512], plugins[600];
    tool_temp_dir(dir, sizeof dir);
    snprintf(plugins, sizeof plugins, "%s/plugins.txt", dir);
    FILE *f = fopen(plugins, "w");
    cr_assert_not_null(f);
    fprintf(f, "SLOWDEV %s\n", SLOWDEV_LIB);
    fclose(f);
    const char *args[] = {"-m", ADD_MODEL,  "-d",    "SLOWDEV", "-niter",
                          "3",  "-plugins", plugins, NULL};
    tool_run r = bench_ok(args);
    cr_expect(strstr(r.out, "Count:               3 iterations") != NULL, "%s", r.out);
    tool_run_free(&r);
}

Test(bench, bad_flags_and_missing_files_give_one_line_errors)
{
    struct {
        const char *args[8];
        int status;
        const char *needle;
    } cases[] = {
        {{"-m", ADD_MODEL, "-foo", NULL}, 2, "unknown flag '-foo'"},
        {{"-m", ADD_MODEL, "-niter", "abc", NULL}, 2, "-niter 'abc'"},
        {{"-m", ADD_MODEL, "-niter", NULL}, 2, "needs a value"},
        {{"-m", ADD_MODEL, "-api", "turbo", NULL}, 2, "-api 'turbo'"},
        {{"-m", ADD_MODEL, "-hint", "fast", NULL}, 2, "-hint 'fast'"},
        {{"-m", ADD_MODEL, "-report_type", "all", NULL}, 2, "-report_type 'all'"},
        {{"-m", ADD_MODEL, "-t", "-1", NULL}, 2, "-t '-1'"},
        {{"-m", ADD_MODEL, "-shape", "x[3,4", NULL}, 2, "missing ']'"},
        {{"-m", ADD_MODEL, "-shape", "x[1..3,4,5]", NULL}, 2, "range"},
        {{"-niter", "1", NULL}, 2, "no model"},
        {{"stray", NULL}, 2, "unexpected argument 'stray'"},
        {{"-m", "/nonexistent/model.onnx", NULL}, 1, "/nonexistent/model.onnx"},
        {{"-m", ADD_MODEL, "-d", "NOPE", "-niter", "1", NULL}, 1, "device 'NOPE' is not available"},
        {{"-m", ADD_MODEL, "-shape", "x[2,4,5]", "-niter", "1", NULL}, 1, "'x'"},
        {{"-m", ADD_MODEL, "-shape", "z[3,4,5]", "-niter", "1", NULL}, 1, "'z'"},
        {{"-m", ADD_MODEL, "-data_shape", "w[1]", "-niter", "1", NULL}, 1, "'w'"},
        {{"-m", ADD_MODEL, "-nstreams", "many", "-niter", "1", NULL}, 1, "NUM_STREAMS"},
        {{"-m", ADD_MODEL, "-infer_precision", "f7", "-niter", "1", NULL},
         1,
         "INFERENCE_PRECISION_HINT"},
        {{"-m", ADD_MODEL, "-i", "x=/nonexistent.npy", "-niter", "1", NULL}, 1, "/nonexistent.npy"},
        {{"-m", ADD_MODEL, "-i", "q=/nonexistent.npy", "-niter", "1", NULL}, 1, "'q'"},
        {{"-m", ADD_MODEL, "-p", "NOEQUALS", NULL}, 2, "-p 'NOEQUALS': expected KEY=VALUE"},
        {{"-m", ADD_MODEL, "-p", "=YES", NULL}, 2, "expected KEY=VALUE"},
        {{"-m", ADD_MODEL, "-p", "NO_SUCH_KEY=1", "-niter", "1", NULL}, 1, "NO_SUCH_KEY"},
        {{"-m", NODE_DIR "/test_add/test_data_set_0/input_0.pb", "-niter", "1", NULL},
         1,
         "input_0.pb"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tool_run r = tool_exec("bench", cases[i].args, NULL);
        assert_one_line_error(&r, cases[i].status, cases[i].needle);
        tool_run_free(&r);
    }
}

Test(bench, help_lists_every_flag)
{
    const char *args[] = {"-h", NULL};
    tool_run r = tool_exec("bench", args, NULL);
    cr_assert_eq(r.status, 0);
    const char *flags[] = {"-m ",
                           "-d ",
                           "-hint",
                           "-api",
                           "-nireq",
                           "-nstreams",
                           "-nthreads",
                           "-niter",
                           "-t ",
                           "-shape",
                           "-data_shape",
                           "-i ",
                           "-infer_precision",
                           "-cache_dir",
                           "-pc",
                           "-report_type",
                           "-json",
                           "-html",
                           "-trace",
                           "-p KEY=VALUE"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        cr_expect(strstr(r.out, flags[i]) != NULL, "'%s' is not in the help", flags[i]);
    tool_run_free(&r);
}

Test(bench, realistic_model_runs_with_counters, .timeout = 120)
{
    if (access(SQUEEZENET, R_OK) != 0)
        cr_skip_test("%s is missing: run scripts/setup", SQUEEZENET);
    char dir[512];
    const char *args[] = {"-m", SQUEEZENET, "-niter", "4", "-nireq", "2", "-pc", NULL};
    json_value *root = bench_json(args, dir, sizeof dir);
    cr_expect_eq(number_at(root, "results.count"), 4);
    cr_expect_eq(number_at(root, "results.batch"), 1);
    const json_value *types = json_at(root, "performance_counters.layer_types");
    cr_assert(types != NULL && types->type == JSON_ARRAY);
    bool conv = false;
    for (size_t i = 0; i < types->n; i++)
        conv |= strstr(string_at(types->items[i], "layer_type"), "Conv") != NULL;
    cr_expect(conv, "no Conv (or FusedConv) in the per-type totals");
    json_free(root);
}
