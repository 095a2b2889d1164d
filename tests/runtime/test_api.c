/* The public API: tensors, core, compile, infer requests and their errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

Test(status, names_come_from_the_table)
{
    cr_assert_str_eq(rn_status_name(RN_OK), "OK");
    cr_assert_str_eq(rn_status_name(RN_REQUEST_BUSY), "REQUEST_BUSY");
    cr_assert_str_eq(rn_status_name((rn_status)-999), "UNKNOWN");
    cr_assert(RN_INVALID_ARG < 0);
}

Test(status, last_error_is_per_thread_detail)
{
    rn_status st = rn_set_error(RN_INVALID_ARG, "key '%s'", "FOO");
    cr_assert_eq(st, RN_INVALID_ARG);
    cr_assert_str_eq(rn_last_error(), "key 'FOO'");
    rn_wrap_error(st, "compile: ");
    cr_assert_str_eq(rn_last_error(), "compile: key 'FOO'");
}

Test(tensor, create_owns_zeroed_buffer)
{
    int64_t dims[] = {2, 3};
    rn_tensor *t = NULL;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 2, &t), RN_OK);
    cr_assert_eq(rn_tensor_byte_size(t), 24);
    cr_assert_eq(rn_tensor_element_count(t), 6);
    cr_assert_eq(rn_tensor_rank(t), 2);
    cr_assert_eq(rn_tensor_dims(t)[1], 3);
    const float *x = rn_tensor_data(t);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(x[i], 0.0f);
    rn_tensor_free(t);
    rn_tensor_free(NULL);
}

Test(tensor, bad_shapes_are_errors_and_out_untouched)
{
    int64_t dims[] = {2, -1};
    rn_tensor *t = (rn_tensor *)0x1;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 2, &t), RN_INVALID_ARG);
    cr_assert_eq(t, (rn_tensor *)0x1);
    cr_assert(strstr(rn_last_error(), "negative") != NULL);
    int64_t big[RN_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert_eq(rn_tensor_create(RN_F32, big, RN_MAX_RANK + 1, &t), RN_INVALID_ARG);
    cr_assert_eq(rn_tensor_create((rn_element_type)99, dims, 0, &t), RN_INVALID_ARG);
}

Test(tensor, wrap_checks_the_byte_size)
{
    float buf[6];
    int64_t dims[] = {2, 3};
    rn_tensor *t;
    cr_assert_eq(rn_tensor_wrap(RN_F32, dims, 2, buf, sizeof buf - 4, &t), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "24 bytes") != NULL);
    cr_assert_eq(rn_tensor_wrap(RN_F32, dims, 2, buf, sizeof buf, &t), RN_OK);
    cr_assert_eq(rn_tensor_data(t), buf);
    rn_tensor_free(t); /* does not free buf */
}

Test(core, lists_ref)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    bool ref = false;
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        ref |= strcmp(rn_core_device_name(core, i), "REF") == 0;
    cr_assert(ref);
    cr_assert_null(rn_core_device_name(core, 1000));
    rn_core_free(core);
}

Test(core, missing_model_file_names_the_path)
{
    rn_core *core;
    rn_core_create(&core);
    rn_model *m = NULL;
    cr_assert_eq(rn_core_read_model(core, "/nonexistent/model.onnx", &m), RN_IO_ERROR);
    cr_assert_null(m);
    cr_assert(strstr(rn_last_error(), "/nonexistent/model.onnx") != NULL, "%s", rn_last_error());
    rn_core_free(core);
}

/* A core with test_add compiled on REF, and a request. */
typedef struct fixture {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
    rn_infer_request *request;
} fixture;

static void open_add(fixture *f, const rn_property *props, size_t n)
{
    cr_assert_eq(rn_core_create(&f->core), RN_OK);
    cr_assert_eq(rn_core_read_model(f->core, NODE_DIR "/test_add/model.onnx", &f->model), RN_OK,
                 "%s", rn_last_error());
    cr_assert_eq(rn_core_compile_model(f->core, f->model, "REF", props, n, &f->compiled), RN_OK,
                 "%s", rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(f->compiled, &f->request), RN_OK);
}

static void close_fixture(fixture *f)
{
    rn_infer_request_free(f->request);
    rn_compiled_model_free(f->compiled);
    rn_model_free(f->model);
    rn_core_free(f->core);
}

Test(compile, unknown_device_is_not_found)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = NULL;
    rn_core_create(&core);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK);
    cr_assert_eq(rn_core_compile_model(core, model, "TPU", NULL, 0, &cm), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "TPU") != NULL);
    cr_assert_null(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(compile, a_host_device_index_other_than_0_is_refused)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = NULL;
    rn_core_create(&core);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK);
    cr_assert_eq(rn_core_compile_model(core, model, "REF.7", NULL, 0, &cm), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "DEVICE_ID '7'") != NULL, "%s", rn_last_error());
    cr_assert_null(cm);
    rn_property id[] = {{"DEVICE_ID", "3"}};
    cr_assert_eq(rn_core_compile_model(core, model, "REF", id, 1, &cm), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "available: 0") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_set_property(core, "REF", id, 1), RN_INVALID_ARG);
    cr_assert_eq(rn_core_compile_model(core, model, "REF.0", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(compile, unknown_property_names_the_key)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm = NULL;
    rn_core_create(&core);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK);
    rn_property props[] = {{"NO_SUCH_KEY", "1"}};
    cr_assert_eq(rn_core_compile_model(core, model, "REF", props, 1, &cm), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NO_SUCH_KEY") != NULL, "%s", rn_last_error());
    rn_property bad[] = {{"ENABLE_PROFILING", "maybe"}};
    cr_assert_eq(rn_core_compile_model(core, model, "REF", bad, 1, &cm), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "ENABLE_PROFILING") != NULL, "%s", rn_last_error());
    cr_assert_null(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(request, add_computes_the_sum)
{
    fixture f;
    open_add(&f, NULL, 0);
    cr_assert_eq(rn_compiled_model_input_count(f.compiled), 2);
    rn_port port;
    cr_assert_eq(rn_compiled_model_input(f.compiled, 0, &port), RN_OK);
    cr_assert_eq(port.element_type, RN_F32);
    cr_assert_eq(port.shape.rank, 3);
    rn_tensor *a, *b, *y;
    cr_assert_eq(rn_infer_request_get_input_tensor(f.request, 0, &a), RN_OK);
    cr_assert_eq(rn_infer_request_get_input_tensor(f.request, 1, &b), RN_OK);
    size_t n = rn_tensor_element_count(a);
    float *x0 = rn_tensor_data(a), *x1 = rn_tensor_data(b);
    for (size_t i = 0; i < n; i++) {
        x0[i] = (float)i;
        x1[i] = 0.5f * (float)i;
    }
    cr_assert_eq(rn_infer_request_infer(f.request), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_output_tensor(f.request, 0, &y), RN_OK);
    cr_assert_eq(rn_tensor_element_count(y), n);
    const float *out = rn_tensor_data(y);
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(out[i], 1.5f * (float)i, 1e-6);
    close_fixture(&f);
}

Test(request, wrong_type_or_shape_is_refused)
{
    fixture f;
    open_add(&f, NULL, 0);
    int64_t dims[] = {3, 4, 5};
    rn_tensor *t;
    rn_tensor_create(RN_I32, dims, 3, &t);
    cr_assert_eq(rn_infer_request_set_input_tensor(f.request, 0, t), RN_TYPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "i32") != NULL, "%s", rn_last_error());
    rn_tensor_free(t);
    int64_t wrong[] = {3, 4, 6};
    rn_tensor_create(RN_F32, wrong, 3, &t);
    cr_assert_eq(rn_infer_request_set_input_tensor(f.request, 0, t), RN_SHAPE_MISMATCH);
    cr_assert_eq(rn_infer_request_set_tensor(f.request, "no_such_input", t), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "no_such_input") != NULL);
    cr_assert_eq(rn_infer_request_set_input_tensor(f.request, 7, t), RN_INVALID_ARG);
    rn_tensor_free(t);
    close_fixture(&f);
}

Test(request, caller_output_buffer_receives_results)
{
    fixture f;
    open_add(&f, NULL, 0);
    float out[60];
    memset(out, 0, sizeof out);
    int64_t dims[] = {3, 4, 5};
    rn_tensor *y;
    cr_assert_eq(rn_tensor_wrap(RN_F32, dims, 3, out, sizeof out, &y), RN_OK);
    rn_port port;
    rn_compiled_model_output(f.compiled, 0, &port);
    cr_assert_eq(rn_infer_request_set_tensor(f.request, port.name, y), RN_OK, "%s",
                 rn_last_error());
    rn_tensor *a;
    rn_infer_request_get_input_tensor(f.request, 0, &a);
    ((float *)rn_tensor_data(a))[7] = 2.0f;
    cr_assert_eq(rn_infer_request_infer(f.request), RN_OK, "%s", rn_last_error());
    cr_assert_float_eq(out[7], 2.0f, 1e-6);
    rn_tensor *got;
    rn_infer_request_get_output_tensor(f.request, 0, &got);
    cr_assert_eq(got, y);
    close_fixture(&f);
    rn_tensor_free(y);
}

Test(request, profiling_reports_every_node)
{
    fixture f;
    rn_property props[] = {{"ENABLE_PROFILING", "YES"}};
    open_add(&f, props, 1);
    cr_assert_eq(rn_infer_request_infer(f.request), RN_OK);
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_profiling_info(f.request, &info, &n), RN_OK);
    cr_assert_eq(n, 6, "five stage entries and one node");
    cr_assert_str_eq(info[0].node_name, "input preprocessing");
    cr_assert_eq(info[0].status, RN_NODE_EXECUTED);
    cr_assert_str_eq(info[1].node_name, "transfer to device");
    cr_assert_eq(info[1].status, RN_NODE_NOT_RUN, "REF is a host device");
    cr_assert_str_eq(info[2].node_name, "execution");
    cr_assert_str_eq(info[4].node_name, "output postprocessing");
    cr_assert_str_eq(info[5].node_type, "Add");
    cr_assert_str_eq(info[5].exec_type, "ref");
    cr_assert_eq(info[5].status, RN_NODE_EXECUTED);
    const rn_runtime_node *rt;
    cr_assert_eq(rn_compiled_model_runtime_model(f.compiled, &rt, &n), RN_OK);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(rt[0].layer_type, "Add");
    cr_assert_eq(rt[0].execution_order, 0);
    cr_assert(rt[0].perf_counter_us >= 0, "the node ran with profiling on");
    cr_assert_str_eq(rt[0].original_names, rt[0].name);
    close_fixture(&f);
}

Test(request, profiling_off_is_an_error)
{
    fixture f;
    open_add(&f, NULL, 0);
    cr_assert_eq(rn_infer_request_infer(f.request), RN_OK);
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_profiling_info(f.request, &info, &n), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "ENABLE_PROFILING") != NULL, "%s", rn_last_error());
    const rn_runtime_node *rt;
    cr_assert_eq(rn_compiled_model_runtime_model(f.compiled, &rt, &n), RN_OK);
    cr_assert_eq(rt[0].perf_counter_us, -1, "not_executed without profiling");
    close_fixture(&f);
}

Test(lifetime, handles_can_be_freed_in_any_order)
{
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm;
    rn_infer_request *r;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK);
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &cm), RN_OK);
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    /* The core, the model and the compiled model go first; the request still runs. */
    rn_core_free(core);
    rn_model_free(model);
    rn_compiled_model_free(cm);
    rn_tensor *a;
    cr_assert_eq(rn_infer_request_get_input_tensor(r, 0, &a), RN_OK);
    ((float *)rn_tensor_data(a))[0] = 3.0f;
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_tensor *y;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &y), RN_OK);
    cr_assert_float_eq(((float *)rn_tensor_data(y))[0], 3.0f, 1e-6);
    rn_infer_request_free(r);
}

Test(query_model, names_every_layer_with_its_support)
{
    rn_core *core;
    rn_model *model;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK);
    rn_query_result *q = NULL;
    cr_assert_eq(rn_core_query_model(core, model, "REF", NULL, 0, &q), RN_OK, "%s",
                 rn_last_error());
    /* One Add node and its two parameters, all supported. */
    cr_assert_eq(rn_query_result_count(q), 3);
    for (size_t i = 0; i < rn_query_result_count(q); i++) {
        const char *name;
        int ok;
        cr_assert_eq(rn_query_result_entry(q, i, &name, &ok), RN_OK);
        cr_assert(ok, "%s", name);
    }
    const char *name;
    int ok;
    cr_assert_eq(rn_query_result_entry(q, 3, &name, &ok), RN_INVALID_ARG);
    rn_query_result_free(q);
    cr_assert_eq(rn_core_query_model(core, model, "NOPE", NULL, 0, &q), RN_NOT_FOUND);
    rn_model_free(model);
    rn_core_free(core);
}

Test(model, reshape_checks_rank_and_reinfers)
{
    rn_core *core;
    rn_model *model;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_relu/model.onnx", &model), RN_OK);
    rn_partial_shape wrong = {.rank = 2, .dims = {3, 4}};
    cr_assert_eq(rn_model_reshape(model, "x", &wrong), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "'x'") != NULL, "%s", rn_last_error());
    rn_partial_shape dyn = {.rank = 3, .dims = {RN_DIM_DYNAMIC, 4, 5}};
    cr_assert_eq(rn_model_reshape(model, "x", &dyn), RN_OK, "%s", rn_last_error());
    rn_port in, out;
    cr_assert_eq(rn_model_input(model, 0, &in), RN_OK);
    cr_assert_eq(in.shape.dims[0], RN_DIM_DYNAMIC);
    cr_assert_eq(rn_model_output(model, 0, &out), RN_OK);
    cr_assert_eq(out.shape.dims[0], RN_DIM_DYNAMIC, "the output follows the input");
    cr_assert_eq(out.shape.dims[2], 5);
    cr_assert_eq(rn_model_reshape(model, "nope", &dyn), RN_NOT_FOUND);
    rn_model_free(model);
    rn_core_free(core);
}

Test(trace, write_trace_needs_enable_trace)
{
    fixture f;
    open_add(&f, NULL, 0);
    cr_assert_eq(rn_compiled_model_write_trace(f.compiled, "/tmp/never.json"), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "ENABLE_TRACE") != NULL, "%s", rn_last_error());
    close_fixture(&f);
    rn_property p[] = {{"ENABLE_TRACE", "YES"}};
    open_add(&f, p, 1);
    cr_assert_eq(rn_infer_request_start_async(f.request), RN_OK);
    cr_assert_eq(rn_infer_request_wait(f.request), RN_OK);
    char path[] = "/tmp/runnel_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(rn_compiled_model_write_trace(f.compiled, path), RN_OK, "%s", rn_last_error());
    FILE *file = fopen(path, "r");
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, file);
    buf[n] = '\0';
    fclose(file);
    unlink(path);
    /* The callback task may still be finishing when wait returns (wait waits
     * for the user's callback, not for the task's trace record): check the
     * stages that have surely ended. */
    cr_assert(strstr(buf, "\"preprocess\"") != NULL, "the stages appear in the trace");
    cr_assert(strstr(buf, "\"postprocess\"") != NULL);
    close_fixture(&f);
}

Test(preprocess, input_type_mean_scale_and_output_type_become_nodes)
{
    rn_core *core;
    rn_model *model;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_relu/model.onnx", &model), RN_OK);
    float mean = 100.0f, scale = 2.0f;
    rn_input_preprocess pp = {
        .element_type = RN_U8, .n_mean = 1, .mean = &mean, .n_scale = 1, .scale = &scale};
    cr_assert_eq(rn_model_set_input_preprocess(model, "x", &pp), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_model_set_input_preprocess(model, "x", &pp), RN_INVALID_ARG, "only once");
    cr_assert_eq(rn_model_set_output_element_type(model, "y", RN_F64), RN_OK, "%s",
                 rn_last_error());
    rn_input_preprocess bad = {.layout = "NHWC"}; /* no such input */
    cr_assert_neq(rn_model_set_input_preprocess(model, "nope", &bad), RN_OK);
    cr_assert(strstr(rn_last_error(), "nope") != NULL, "%s", rn_last_error());
    rn_port in, out;
    rn_model_input(model, 0, &in);
    rn_model_output(model, 0, &out);
    cr_assert_eq(in.element_type, RN_U8, "the port takes what the user feeds");
    cr_assert_eq(out.element_type, RN_F64);
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    rn_tensor *x, *y;
    rn_infer_request_get_input_tensor(r, 0, &x);
    cr_assert_eq(rn_tensor_element_type(x), RN_U8);
    uint8_t *xd = rn_tensor_data(x);
    for (size_t i = 0; i < rn_tensor_element_count(x); i++)
        xd[i] = (uint8_t)(i * 4);
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_infer_request_get_output_tensor(r, 0, &y);
    const double *yd = rn_tensor_data(y);
    for (size_t i = 0; i < rn_tensor_element_count(y); i++) {
        double v = ((double)(uint8_t)(i * 4) - 100.0) / 2.0;
        cr_assert_float_eq(yd[i], v > 0 ? v : 0.0, 1e-6, "element %zu", i);
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(request, a_strided_roi_input_is_densified)
{
    fixture f;
    open_add(&f, NULL, 0);
    /* A [3,4,5] region of a [3,4,8] buffer: the last 3 columns are not part of it. */
    float big[3 * 4 * 8];
    for (int i = 0; i < 3 * 4 * 8; i++)
        big[i] = (float)i;
    int64_t dims[] = {3, 4, 5};
    int64_t strides[] = {4 * 8 * 4, 8 * 4, 4};
    rn_tensor *roi;
    cr_assert_eq(rn_tensor_wrap_strided(RN_F32, dims, 3, strides, big, &roi), RN_OK, "%s",
                 rn_last_error());
    cr_assert(!rn_tensor_is_dense(roi));
    cr_assert_eq(rn_infer_request_set_input_tensor(f.request, 0, roi), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_infer_request_infer(f.request), RN_OK, "%s", rn_last_error());
    rn_tensor *y;
    rn_infer_request_get_output_tensor(f.request, 0, &y);
    const float *yd = rn_tensor_data(y); /* input 1 is zeros: y is the region */
    for (int c = 0; c < 3; c++)
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 5; w++)
                cr_assert_float_eq(yd[(c * 4 + h) * 5 + w], big[(c * 4 + h) * 8 + w], 1e-6);
    int64_t bad[] = {4 * 8 * 4, 8 * 4, 2};
    rn_tensor *t;
    cr_assert_eq(rn_tensor_wrap_strided(RN_F32, dims, 3, bad, big, &t), RN_INVALID_ARG);
    close_fixture(&f);
    rn_tensor_free(roi);
}
