/* The behaviour suite, part three: remote contexts and tensors, properties
 * set on a compiled model, the request pipeline and plugin versions. Every
 * test runs on every device. */
#include <inttypes.h>

#include "tests/behavior/behavior.h"

/* test_add's inputs and output are f32 [3, 4, 5]. */
static const int64_t add_dims[] = {3, 4, 5};
#define ADD_COUNT 60

/* A remote tensor of test_add's shape in `c`, filled from host values. */
static rn_tensor *remote_from(rn_remote_context *c, const float *values)
{
    rn_tensor *t, *host;
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 3, NULL, 0, &t), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(
        rn_tensor_wrap(RN_F32, add_dims, 3, (void *)values, ADD_COUNT * sizeof(float), &host),
        RN_OK);
    cr_assert_eq(rn_tensor_copy(host, t), RN_OK, "%s", rn_last_error());
    rn_tensor_free(host);
    return t;
}

/* Copies a remote tensor of test_add's shape back to host values. */
static void remote_to(const rn_tensor *t, float *values)
{
    rn_tensor *host;
    cr_assert_eq(rn_tensor_wrap(RN_F32, add_dims, 3, values, ADD_COUNT * sizeof(float), &host),
                 RN_OK);
    cr_assert_eq(rn_tensor_copy(t, host), RN_OK, "%s", rn_last_error());
    rn_tensor_free(host);
}

static void fill_inputs(float *x, float *y, float k)
{
    behavior_fill_add(x, y, ADD_COUNT, k);
}

static void check_sum(const float *z, float k)
{
    behavior_expect_sum(z, ADD_COUNT, k);
}

/* ---- remote_context ---- */

BEHAVIOR_PHYSICAL_DEVICES(remote_context, default_context_is_shared_and_describes_itself)
ParameterizedTest(device_param *d, remote_context, default_context_is_shared_and_describes_itself)
{
    rn_core *core = behavior_core(d->name);
    rn_remote_context *a, *b;
    cr_assert_eq(rn_core_get_default_context(core, d->name, &a), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_get_default_context(core, d->name, &b), RN_OK);
    cr_assert_eq(a, b, "the default context is one context");
    cr_assert_str_eq(rn_remote_context_device(a), d->name);
    char buf[256];
    cr_assert_eq(rn_remote_context_get_property(a, "SUPPORTED_PROPERTIES", buf, sizeof buf), RN_OK);
    cr_assert(strstr(buf, "CONTEXT_TYPE") != NULL, "%s", buf);
    cr_assert_eq(rn_remote_context_get_property(a, "CONTEXT_TYPE", buf, sizeof buf), RN_OK);
    cr_assert(buf[0] != '\0');
    cr_assert_eq(rn_remote_context_get_property(a, "DEVICE_ID", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "0");
    cr_assert_eq(rn_remote_context_get_property(a, "NO_SUCH_KEY", buf, sizeof buf), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "NO_SUCH_KEY") != NULL, "%s", rn_last_error());
    rn_remote_context_free(a);
    rn_remote_context_free(b);
    cr_assert_eq(rn_core_get_default_context(core, "NO_SUCH_DEVICE", &a), RN_NOT_FOUND);
    rn_core_free(core);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, create_context_names_bad_parameters)
ParameterizedTest(device_param *d, remote_context, create_context_names_bad_parameters)
{
    rn_core *core = behavior_core(d->name);
    rn_remote_context *c = NULL;
    /* OCL_QUEUE is unknown to host devices; GPU reads it as a cl_command_queue
     * (a fake handle would crash OpenCL: tests/gpu/test_gpu_remote.c). */
    rn_property unknown = {strcmp(d->name, "GPU") == 0 ? "VA_DEVICE" : "OCL_QUEUE", "0x1234"};
    cr_assert_eq(rn_core_create_context(core, d->name, &unknown, 1, &c), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), unknown.key) != NULL, "%s", rn_last_error());
    rn_property bad_id = {"DEVICE_ID", "7"};
    cr_assert_eq(rn_core_create_context(core, d->name, &bad_id, 1, &c), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "DEVICE_ID") != NULL, "%s", rn_last_error());
    cr_assert_null(c, "a failed create leaves nothing behind");
    rn_property good = {"DEVICE_ID", "0"};
    cr_assert_eq(rn_core_create_context(core, d->name, &good, 1, &c), RN_OK, "%s", rn_last_error());
    rn_remote_context *def;
    cr_assert_eq(rn_core_get_default_context(core, d->name, &def), RN_OK);
    cr_assert_neq(c, def, "a created context is a new one");
    rn_remote_context_free(def);
    rn_remote_context_free(c);
    rn_core_free(core);
}

/* Runs test_add with inputs and output in remote tensors of `c`, sync then
 * async, and checks the sums. */
static void run_remote_add(rn_compiled_model *compiled, rn_remote_context *c)
{
    float x[ADD_COUNT], y[ADD_COUNT], z[ADD_COUNT];
    fill_inputs(x, y, 3.0f);
    rn_tensor *rx = remote_from(c, x), *ry = remote_from(c, y), *rz;
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 3, NULL, 0, &rz), RN_OK);
    cr_assert(rn_tensor_is_remote(rx));
    cr_assert_null(rn_tensor_data(rx), "remote memory is not host-addressable");
    cr_assert_eq(rn_tensor_context(rx), c);
    cr_assert_eq(rn_tensor_byte_size(rx), ADD_COUNT * sizeof(float));
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &r), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, rx), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, ry), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_output_tensor(r, 0, rz), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK);
    cr_assert_eq(out, rz, "the result is in the remote tensor set for it");
    memset(z, 0, sizeof z);
    remote_to(rz, z);
    check_sum(z, 3.0f);
    /* New input values through the same tensors, async this time. */
    fill_inputs(x, y, 5.0f);
    rn_tensor *host;
    cr_assert_eq(rn_tensor_wrap(RN_F32, add_dims, 3, y, sizeof y, &host), RN_OK);
    cr_assert_eq(rn_tensor_copy(host, ry), RN_OK);
    rn_tensor_free(host);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
    remote_to(rz, z);
    check_sum(z, 5.0f);
    rn_infer_request_free(r);
    rn_tensor_free(rx);
    rn_tensor_free(ry);
    rn_tensor_free(rz);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, remote_tensors_are_inputs_and_outputs_in_place)
ParameterizedTest(device_param *d, remote_context, remote_tensors_are_inputs_and_outputs_in_place,
                  .timeout = 120)
{
    rn_core *core = behavior_core(d->name);
    rn_model *model;
    behavior_read_model(core, "test_add", &model);
    /* In a context of its own... */
    rn_remote_context *c;
    cr_assert_eq(rn_core_create_context(core, d->name, NULL, 0, &c), RN_OK, "%s", rn_last_error());
    rn_compiled_model *compiled;
    cr_assert_eq(rn_core_compile_model_with_context(core, model, c, NULL, 0, &compiled), RN_OK,
                 "%s", rn_last_error());
    rn_remote_context *got;
    cr_assert_eq(rn_compiled_model_get_context(compiled, &got), RN_OK);
    cr_assert_eq(got, c, "the compiled model runs in the context it was compiled in");
    rn_remote_context_free(got);
    run_remote_add(compiled, c);
    rn_compiled_model_free(compiled);
    /* ...and in the default one. */
    cr_assert_eq(rn_core_compile_model(core, model, d->name, NULL, 0, &compiled), RN_OK);
    rn_remote_context *def;
    cr_assert_eq(rn_compiled_model_get_context(compiled, &def), RN_OK);
    cr_assert_eq(rn_core_get_default_context(core, d->name, &got), RN_OK);
    cr_assert_eq(def, got, "a model compiled without a context runs in the default one");
    rn_remote_context_free(got);
    run_remote_add(compiled, def);
    rn_remote_context_free(def);
    rn_compiled_model_free(compiled);
    rn_remote_context_free(c);
    rn_model_free(model);
    rn_core_free(core);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, tensors_of_another_context_or_device_are_refused)
ParameterizedTest(device_param *d, remote_context, tensors_of_another_context_or_device_are_refused)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_remote_context *other;
    cr_assert_eq(rn_core_create_context(m.core, d->name, NULL, 0, &other), RN_OK);
    float x[ADD_COUNT] = {0};
    rn_tensor *foreign = remote_from(other, x);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &r), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, foreign), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "another") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_output_tensor(r, 0, foreign), RN_INVALID_ARG);
    /* A tensor of the other device (SLOWDEV's core has REF too). */
    if (strcmp(d->name, "SLOWDEV") == 0) {
        rn_remote_context *ref;
        cr_assert_eq(rn_core_get_default_context(m.core, "REF", &ref), RN_OK);
        rn_tensor *t = remote_from(ref, x);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, t), RN_INVALID_ARG);
        cr_assert(strstr(rn_last_error(), "device REF") != NULL, "%s", rn_last_error());
        rn_tensor_free(t);
        rn_remote_context_free(ref);
    }
    /* The request still runs with what it had. */
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_infer_request_free(r);
    rn_tensor_free(foreign);
    rn_remote_context_free(other);
    behavior_close(&m);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, import_with_a_context_runs_in_it)
ParameterizedTest(device_param *d, remote_context, import_with_a_context_runs_in_it, .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    void *blob;
    size_t size;
    cr_assert_eq(rn_compiled_model_export(m.compiled, &blob, &size), RN_OK, "%s", rn_last_error());
    rn_remote_context *c;
    cr_assert_eq(rn_core_create_context(m.core, d->name, NULL, 0, &c), RN_OK);
    rn_compiled_model *imported;
    cr_assert_eq(rn_core_import_model_with_context(m.core, blob, size, c, NULL, 0, &imported),
                 RN_OK, "%s", rn_last_error());
    rn_remote_context *got;
    cr_assert_eq(rn_compiled_model_get_context(imported, &got), RN_OK);
    cr_assert_eq(got, c);
    rn_remote_context_free(got);
    run_remote_add(imported, c);
    rn_compiled_model_free(imported);
    rn_remote_context_free(c);
    free(blob);
    behavior_close(&m);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, handles_are_freed_in_any_order)
ParameterizedTest(device_param *d, remote_context, handles_are_freed_in_any_order, .timeout = 120)
{
    rn_core *core = behavior_core(d->name);
    rn_model *model;
    behavior_read_model(core, "test_add", &model);
    rn_remote_context *c;
    cr_assert_eq(rn_core_create_context(core, d->name, NULL, 0, &c), RN_OK);
    rn_compiled_model *compiled;
    cr_assert_eq(rn_core_compile_model_with_context(core, model, c, NULL, 0, &compiled), RN_OK);
    float x[ADD_COUNT], y[ADD_COUNT], z[ADD_COUNT];
    fill_inputs(x, y, 2.0f);
    rn_tensor *rx = remote_from(c, x), *ry = remote_from(c, y);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &r), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, rx), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, ry), RN_OK);
    /* The user lets go of the context, the core and the compiled model
     * first: the tensors and the request keep what they need. */
    rn_remote_context_free(c);
    rn_model_free(model);
    rn_compiled_model_free(compiled);
    rn_core_free(core);
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK);
    memcpy(z, rn_tensor_data(out), sizeof z);
    check_sum(z, 2.0f);
    rn_infer_request_free(r);
    rn_tensor_free(rx);
    rn_tensor_free(ry);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, shared_memory_and_tensor_properties)
ParameterizedTest(device_param *d, remote_context, shared_memory_and_tensor_properties)
{
    rn_core *core = behavior_core(d->name);
    rn_remote_context *c;
    cr_assert_eq(rn_core_get_default_context(core, d->name, &c), RN_OK);
    rn_tensor *t;
    /* Memory the caller already has in the context is shared, not copied.
     * GPU's MEM_HANDLE is a cl_mem, not host memory (a host pointer would
     * crash OpenCL): tests/gpu/test_gpu_remote.c shares the user's cl_mem. */
    if (strcmp(d->name, "GPU") != 0) {
        float *mem = calloc(ADD_COUNT, sizeof(float));
        char handle[32];
        snprintf(handle, sizeof handle, "0x%" PRIxPTR, (uintptr_t)mem);
        rn_property p = {"MEM_HANDLE", handle};
        cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 3, &p, 1, &t), RN_OK,
                     "%s", rn_last_error());
        char buf[64];
        cr_assert_eq(rn_remote_tensor_get_property(t, "MEM_HANDLE", buf, sizeof buf), RN_OK);
        cr_assert_str_eq(buf, handle);
        cr_assert_eq(rn_remote_tensor_get_property(t, "SHARED_MEM_TYPE", buf, sizeof buf), RN_OK);
        cr_assert(strstr(buf, "BUFFER") != NULL, "%s", buf);
        cr_assert_eq(rn_remote_tensor_get_property(t, "NOPE", buf, sizeof buf), RN_NOT_FOUND);
        float x[ADD_COUNT], y[ADD_COUNT];
        fill_inputs(x, y, 4.0f);
        rn_tensor *host;
        cr_assert_eq(rn_tensor_wrap(RN_F32, add_dims, 3, y, sizeof y, &host), RN_OK);
        cr_assert_eq(rn_tensor_copy(host, t), RN_OK);
        cr_assert_eq(memcmp(mem, y, sizeof y), 0, "the copy landed in the shared memory");
        cr_assert_eq(rn_remote_tensor_get_property(host, "MEM_HANDLE", buf, sizeof buf),
                     RN_INVALID_ARG, "a host tensor has no remote properties");
        rn_tensor_free(t);
        rn_tensor_free(host);
        free(mem);
    }
    /* Bad parameters are named. */
    rn_property bad[] = {{"MEM_HANDLE", "nowhere"}, {"MEM_HANDLE", "0"}, {"VA_SURFACE", "1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 3, &bad[i], 1, &t),
                     RN_INVALID_ARG, "%s=%s", bad[i].key, bad[i].value);
        cr_assert(strstr(rn_last_error(), bad[i].key) != NULL, "%s", rn_last_error());
    }
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_STRING, add_dims, 3, NULL, 0, &t),
                 RN_INVALID_ARG, "strings cannot be remote");
    int64_t negative[] = {2, -1};
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, negative, 2, NULL, 0, &t),
                 RN_INVALID_ARG);
    /* A host tensor of the context is ordinary, writable host memory. */
    cr_assert_eq(rn_remote_context_create_host_tensor(c, RN_F32, add_dims, 3, &t), RN_OK);
    cr_assert(!rn_tensor_is_remote(t));
    cr_assert_not_null(rn_tensor_data(t));
    ((float *)rn_tensor_data(t))[ADD_COUNT - 1] = 1.0f;
    rn_tensor_free(t);
    rn_remote_context_free(c);
    rn_core_free(core);
}

BEHAVIOR_PHYSICAL_DEVICES(remote_context, copy_checks_type_and_shape)
ParameterizedTest(device_param *d, remote_context, copy_checks_type_and_shape)
{
    rn_core *core = behavior_core(d->name);
    rn_remote_context *c;
    cr_assert_eq(rn_core_get_default_context(core, d->name, &c), RN_OK);
    rn_tensor *f32, *i32, *small, *a, *b;
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 3, NULL, 0, &f32), RN_OK);
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_I32, add_dims, 3, NULL, 0, &i32), RN_OK);
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 2, NULL, 0, &small), RN_OK);
    cr_assert_eq(rn_tensor_copy(f32, i32), RN_TYPE_MISMATCH);
    cr_assert_eq(rn_tensor_copy(f32, small), RN_SHAPE_MISMATCH);
    /* Remote to remote, and a strided host region into a remote tensor. */
    float grid[4][6];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            grid[i][j] = (float)(10 * i + j);
    int64_t roi_dims[] = {3, 4}, roi_strides[] = {6 * sizeof(float), sizeof(float)};
    rn_tensor *roi;
    cr_assert_eq(rn_tensor_wrap_strided(RN_F32, roi_dims, 2, roi_strides, &grid[1][1], &roi),
                 RN_OK);
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, roi_dims, 2, NULL, 0, &a), RN_OK);
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, roi_dims, 2, NULL, 0, &b), RN_OK);
    cr_assert_eq(rn_tensor_copy(roi, a), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_copy(a, b), RN_OK, "%s", rn_last_error());
    float back[12];
    rn_tensor *host;
    cr_assert_eq(rn_tensor_wrap(RN_F32, roi_dims, 2, back, sizeof back, &host), RN_OK);
    cr_assert_eq(rn_tensor_copy(b, host), RN_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_float_eq(back[i * 4 + j], grid[i + 1][j + 1], 0, "[%d][%d]", i, j);
    rn_tensor_free(host);
    rn_tensor_free(roi);
    rn_tensor_free(a);
    rn_tensor_free(b);
    rn_tensor_free(f32);
    rn_tensor_free(i32);
    rn_tensor_free(small);
    rn_remote_context_free(c);
    rn_core_free(core);
}

/* ---- SLOWDEV: remote tensors save the copy engines' work ---- */

static uint64_t slowdev_counter(rn_core *core, const char *key)
{
    char buf[32];
    cr_assert_eq(rn_core_get_property(core, "SLOWDEV", key, buf, sizeof buf), RN_OK, "%s",
                 rn_last_error());
    return strtoull(buf, NULL, 10);
}

Test(remote_context, slowdev_skips_transfers_of_remote_tensors, .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, "SLOWDEV", "test_add", NULL, 0);
    const uint64_t bytes = ADD_COUNT * sizeof(float);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    uint64_t up = slowdev_counter(m.core, "SLOWDEV_BYTES_UPLOADED");
    uint64_t down = slowdev_counter(m.core, "SLOWDEV_BYTES_DOWNLOADED");
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(slowdev_counter(m.core, "SLOWDEV_BYTES_UPLOADED") - up, 2 * bytes,
                 "host inputs are uploaded");
    cr_assert_eq(slowdev_counter(m.core, "SLOWDEV_BYTES_DOWNLOADED") - down, bytes,
                 "a host output is downloaded");
    /* One input on the device: only the other one moves; the output on
     * the device: nothing comes back. */
    rn_remote_context *c;
    cr_assert_eq(rn_compiled_model_get_context(m.compiled, &c), RN_OK);
    float x[ADD_COUNT], y[ADD_COUNT], z[ADD_COUNT];
    fill_inputs(x, y, 6.0f);
    rn_tensor *rx = remote_from(c, x), *rz, *hy;
    cr_assert_eq(rn_remote_context_create_tensor(c, RN_F32, add_dims, 3, NULL, 0, &rz), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_F32, add_dims, 3, y, sizeof y, &hy), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, rx), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, hy), RN_OK);
    cr_assert_eq(rn_infer_request_set_output_tensor(r, 0, rz), RN_OK, "%s", rn_last_error());
    up = slowdev_counter(m.core, "SLOWDEV_BYTES_UPLOADED");
    down = slowdev_counter(m.core, "SLOWDEV_BYTES_DOWNLOADED");
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(slowdev_counter(m.core, "SLOWDEV_BYTES_UPLOADED") - up, bytes);
    cr_assert_eq(slowdev_counter(m.core, "SLOWDEV_BYTES_DOWNLOADED") - down, 0);
    remote_to(rz, z);
    check_sum(z, 6.0f);
    rn_infer_request_free(r);
    rn_tensor_free(rx);
    rn_tensor_free(rz);
    rn_tensor_free(hy);
    rn_remote_context_free(c);
    behavior_close(&m);
}

/* ---- compiled model properties ---- */

BEHAVIOR_PHYSICAL_DEVICES(properties, profiling_can_be_turned_on_after_compiling)
ParameterizedTest(device_param *d, properties, profiling_can_be_turned_on_after_compiling,
                  .timeout = 120)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_infer_request *r = behavior_add_request(&m, 2.0f);
    cr_assert_eq(rn_infer_request_infer(r), RN_OK);
    const rn_profiling_info *info;
    size_t n;
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_INVALID_ARG,
                 "profiling is off after a plain compile");
    rn_property on = {"ENABLE_PROFILING", "YES"};
    cr_assert_eq(rn_compiled_model_set_property(m.compiled, &on, 1), RN_OK, "%s", rn_last_error());
    char buf[16];
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "ENABLE_PROFILING", buf, sizeof buf),
                 RN_OK);
    cr_assert_str_eq(buf, "YES");
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
    cr_assert_eq(rn_infer_request_wait(r), RN_OK);
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK, "%s", rn_last_error());
    cr_assert_eq(info[n - 1].status, RN_NODE_EXECUTED, "the Add node ran, profiled");
    behavior_check_add(r, 2.0f);
    rn_property off = {"ENABLE_PROFILING", "NO"};
    cr_assert_eq(rn_compiled_model_set_property(m.compiled, &off, 1), RN_OK);
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_INVALID_ARG);
    rn_infer_request_free(r);
    behavior_close(&m);
}

BEHAVIOR_PHYSICAL_DEVICES(properties, compiled_model_refuses_compile_time_keys)
ParameterizedTest(device_param *d, properties, compiled_model_refuses_compile_time_keys)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    rn_property fixed = {"NUM_STREAMS", "4"};
    cr_assert_eq(rn_compiled_model_set_property(m.compiled, &fixed, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NUM_STREAMS") != NULL &&
                  strstr(rn_last_error(), "compile") != NULL,
              "%s", rn_last_error());
    rn_property unknown = {"NOT_A_PROPERTY", "1"};
    cr_assert_eq(rn_compiled_model_set_property(m.compiled, &unknown, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "NOT_A_PROPERTY") != NULL, "%s", rn_last_error());
    /* A bad value in a list changes nothing, not even the good ones. */
    rn_property list[] = {{"LOG_LEVEL", "LOG_DEBUG"}, {"ENABLE_PROFILING", "sometimes"}};
    cr_assert_eq(rn_compiled_model_set_property(m.compiled, list, 2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "ENABLE_PROFILING") != NULL, "%s", rn_last_error());
    char buf[32];
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "LOG_LEVEL", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "LOG_NONE");
    cr_assert_eq(rn_compiled_model_set_property(m.compiled, list, 1), RN_OK);
    cr_assert_eq(rn_compiled_model_get_property(m.compiled, "LOG_LEVEL", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "LOG_DEBUG");
    behavior_close(&m);
}

/* ---- pipeline ---- */

BEHAVIOR_PHYSICAL_DEVICES(pipeline, stages_are_listed_with_their_executors)
ParameterizedTest(device_param *d, pipeline, stages_are_listed_with_their_executors)
{
    behavior_model m;
    behavior_open(&m, d->name, "test_add", NULL, 0);
    const rn_pipeline_stage *stages;
    size_t n;
    cr_assert_eq(rn_compiled_model_pipeline(m.compiled, &stages, &n), RN_OK, "%s", rn_last_error());
    static const rn_pipeline_stage host[] = {{"preprocess", "stream"},
                                             {"infer", "stream"},
                                             {"postprocess", "stream"},
                                             {"callback", "callback"}};
    static const rn_pipeline_stage device[] = {{"preprocess", "stream"},  {"upload", "stream"},
                                               {"infer", "stream"},       {"execute", "stream"},
                                               {"wait", "device-wait"},   {"download", "stream"},
                                               {"postprocess", "stream"}, {"callback", "callback"}};
    /* GPU: its copies are layout conversions among the kernels; its wait only arms an event
     * (it does not block), so it runs on the stream. */
    static const rn_pipeline_stage gpu[] = {{"preprocess", "stream"},  {"infer", "stream"},
                                            {"execute", "stream"},     {"wait", "stream"},
                                            {"postprocess", "stream"}, {"callback", "callback"}};
    bool slow = strcmp(d->name, "SLOWDEV") == 0, is_gpu = strcmp(d->name, "GPU") == 0;
    const rn_pipeline_stage *want = slow ? device : is_gpu ? gpu : host;
    size_t n_want = slow     ? sizeof device / sizeof device[0]
                    : is_gpu ? sizeof gpu / sizeof gpu[0]
                             : sizeof host / sizeof host[0];
    cr_assert_eq(n, n_want);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(stages[i].stage, want[i].stage, "stage %zu", i);
        cr_assert_str_eq(stages[i].executor, want[i].executor, "stage %zu (%s)", i, want[i].stage);
    }
    behavior_close(&m);
}

/* ---- versions ---- */

BEHAVIOR_PHYSICAL_DEVICES(plugin_version, every_device_reports_one)
ParameterizedTest(device_param *d, plugin_version, every_device_reports_one)
{
    rn_core *core = behavior_core(d->name);
    const char *version = NULL;
    cr_assert_eq(rn_core_get_version(core, d->name, &version), RN_OK);
    cr_assert_str_eq(version, RN_VERSION_STRING, "the in-tree plugins ship with the runtime");
    cr_assert_eq(rn_core_get_version(core, "NO_SUCH_DEVICE", &version), RN_NOT_FOUND);
    rn_core_free(core);
}

/* ---- LOG_LEVEL and EXCLUSIVE_ASYNC_REQUESTS ---- */

/* Runs fn with stderr captured into a file; returns what was written
 * (malloc'ed). */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
    char path[] = "/tmp/runnel-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn(arg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = calloc((size_t)size + 1, 1);
    cr_assert_eq(pread(fd, text, (size_t)size, 0), size);
    close(fd);
    unlink(path);
    return text;
}

typedef struct log_case {
    const char *device;
    const char *level;     /* LOG_LEVEL at compile time */
    const char *set_level; /* set on the compiled model before running, or NULL */
    bool fail;             /* run with an input that makes the run fail */
} log_case;

static void compile_and_run(void *arg)
{
    const log_case *lc = arg;
    behavior_model m;
    rn_property p = {"LOG_LEVEL", lc->level};
    behavior_open(&m, lc->device, lc->fail ? "test_reshape_reduced_dims" : "test_add", &p, 1);
    if (lc->set_level != NULL) {
        rn_property s = {"LOG_LEVEL", lc->set_level};
        cr_assert_eq(rn_compiled_model_set_property(m.compiled, &s, 1), RN_OK);
    }
    rn_infer_request *r;
    if (lc->fail) {
        cr_assert_eq(rn_compiled_model_create_infer_request(m.compiled, &r), RN_OK);
        int64_t bad[] = {7, 7}, dims[] = {2};
        rn_tensor *shape;
        cr_assert_eq(rn_tensor_wrap(RN_I64, dims, 1, bad, sizeof bad, &shape), RN_OK);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, shape), RN_OK);
        cr_assert_eq(rn_infer_request_start_async(r), RN_OK);
        cr_assert_neq(rn_infer_request_wait(r), RN_OK);
        rn_infer_request_free(r);
        rn_tensor_free(shape);
    } else {
        r = behavior_add_request(&m, 2.0f);
        cr_assert_eq(rn_infer_request_infer(r), RN_OK);
        rn_infer_request_free(r);
    }
    behavior_close(&m);
}

BEHAVIOR_PHYSICAL_DEVICES(properties, log_level_chooses_what_is_logged)
ParameterizedTest(device_param *d, properties, log_level_chooses_what_is_logged, .timeout = 120)
{
    behavior_skip_runtime_shapes(d->name);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "[runnel %s] ", d->name);
    log_case quiet = {d->name, "LOG_NONE", NULL, false};
    char *text = capture_stderr(compile_and_run, &quiet);
    cr_assert(strstr(text, prefix) == NULL, "LOG_NONE printed:\n%s", text);
    free(text);
    log_case trace = {d->name, "LOG_TRACE", NULL, false};
    text = capture_stderr(compile_and_run, &trace);
    cr_assert(strstr(text, "INFO: compiled 'test_add'") != NULL, "%s", text);
    cr_assert(strstr(text, "TRACE: request ") != NULL && strstr(text, "(Add, ") != NULL, "%s",
              text);
    cr_assert(strstr(text, "DEBUG: request ") != NULL, "%s", text);
    free(text);
    /* Raised on the compiled model: its runs log, its compile did not. */
    log_case raised = {d->name, "LOG_NONE", "LOG_DEBUG", false};
    text = capture_stderr(compile_and_run, &raised);
    cr_assert(strstr(text, "INFO: compiled") == NULL, "%s", text);
    cr_assert(strstr(text, "run done in") != NULL, "%s", text);
    cr_assert(strstr(text, "TRACE") == NULL, "%s", text);
    free(text);
    log_case failing = {d->name, "LOG_ERROR", NULL, true};
    text = capture_stderr(compile_and_run, &failing);
    cr_assert(strstr(text, "ERROR: request ") != NULL && strstr(text, "run failed: ") != NULL, "%s",
              text);
    cr_assert(strstr(text, "INFO") == NULL, "%s", text);
    free(text);
}

BEHAVIOR_PHYSICAL_DEVICES(properties, exclusive_async_requests_share_one_thread)
ParameterizedTest(device_param *d, properties, exclusive_async_requests_share_one_thread,
                  .timeout = 120)
{
    behavior_model a, b;
    rn_property p[] = {{"EXCLUSIVE_ASYNC_REQUESTS", "YES"}, {"PERFORMANCE_HINT", "THROUGHPUT"}};
    behavior_open(&a, d->name, "test_add", p, 2);
    behavior_open(&b, d->name, "test_add", p, 2);
    static const char *const one[] = {"NUM_STREAMS", "INFERENCE_NUM_THREADS",
                                      "OPTIMAL_NUMBER_OF_INFER_REQUESTS"};
    char buf[32];
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(rn_compiled_model_get_property(a.compiled, one[i], buf, sizeof buf), RN_OK);
        cr_assert_str_eq(buf, "1", "%s wins over the THROUGHPUT hint", one[i]);
    }
    cr_assert_eq(
        rn_compiled_model_get_property(a.compiled, "EXCLUSIVE_ASYNC_REQUESTS", buf, sizeof buf),
        RN_OK);
    cr_assert_str_eq(buf, "YES");
    /* Requests of both compiled models, in flight together, all complete. */
    rn_infer_request *r[8];
    for (int i = 0; i < 8; i++)
        r[i] = behavior_add_request(i % 2 ? &a : &b, (float)(i + 2));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(rn_infer_request_start_async(r[i]), RN_OK);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(rn_infer_request_wait(r[i]), RN_OK, "%s", rn_last_error());
        behavior_check_add(r[i], (float)(i + 2));
        rn_infer_request_free(r[i]);
    }
    behavior_close(&a);
    behavior_close(&b);
}
