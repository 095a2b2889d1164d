/* Remote contexts and tensors of the GPU device (plugins/gpu/remote.c):
 * a model compiled in the user's own cl_context and queue reads its inputs
 * from, and writes its outputs into, the user's cl_mem buffers, with no
 * upload or download (the compiled model's GPU_BYTES_UPLOADED counts host
 * inputs only) and the results REF computes; tensors the context
 * allocates; the default context; the errors (a cl_mem of another context
 * or too small, unknown parameters, a remote tensor of another device or
 * context); and DEVICE_ID selection ("GPU.1") among two PoCL devices. Every
 * test skips, saying why, where the GPU device cannot start. */
#include <CL/cl.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static rn_model *node_model(rn_core *core, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, name);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s: %s", name, rn_last_error());
    return model;
}

/* The user's side: an OpenCL context and in-order queue of their own. */
typedef struct user_cl {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    char context_handle[32], queue_handle[32];
} user_cl;

static void user_cl_open(user_cl *u)
{
    cl_platform_id platform;
    cl_uint np = 0;
    cr_assert_eq(clGetPlatformIDs(1, &platform, &np), CL_SUCCESS);
    cr_assert_eq(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &u->device, NULL), CL_SUCCESS);
    cl_int err;
    u->context = clCreateContext(NULL, 1, &u->device, NULL, NULL, &err);
    cr_assert_not_null(u->context, "clCreateContext: %d", err);
    u->queue = clCreateCommandQueue(u->context, u->device, 0, &err);
    cr_assert_not_null(u->queue, "clCreateCommandQueue: %d", err);
    snprintf(u->context_handle, sizeof u->context_handle, "%p", (void *)u->context);
    snprintf(u->queue_handle, sizeof u->queue_handle, "%p", (void *)u->queue);
}

static void user_cl_close(user_cl *u)
{
    clReleaseCommandQueue(u->queue);
    clReleaseContext(u->context);
}

static rn_remote_context *user_context(rn_core *core, const user_cl *u)
{
    rn_property params[] = {{"CONTEXT_TYPE", "OCL"},
                            {"OCL_CONTEXT", u->context_handle},
                            {"OCL_QUEUE", u->queue_handle}};
    rn_remote_context *ctx;
    cr_assert_eq(rn_core_create_context(core, "GPU", params, 3, &ctx), RN_OK, "%s",
                 rn_last_error());
    return ctx;
}

/* A remote tensor over the user's cl_mem `mem`. */
static rn_status wrap_mem(rn_remote_context *ctx, const rn_port *port, cl_mem mem, rn_tensor **out)
{
    char handle[32];
    snprintf(handle, sizeof handle, "%p", (void *)mem);
    rn_property params[] = {{"SHARED_MEM_TYPE", "OCL_BUFFER"}, {"MEM_HANDLE", handle}};
    return rn_remote_context_create_tensor(ctx, port->element_type, port->shape.dims,
                                           (size_t)port->shape.rank, params, 2, out);
}

static size_t port_count(const rn_port *p)
{
    size_t n = 1;
    for (int d = 0; d < p->shape.rank; d++)
        n *= (size_t)p->shape.dims[d];
    return n;
}

static uint64_t compiled_counter(const rn_compiled_model *cm, const char *key)
{
    char buf[64];
    cr_assert_eq(rn_compiled_model_get_property(cm, key, buf, sizeof buf), RN_OK, "%s",
                 rn_last_error());
    return strtoull(buf, NULL, 10);
}

/* REF's output 0 for inputs gpu_fill(seed = input index + 1). */
static float *ref_output(rn_core *core, rn_model *model, size_t *count)
{
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    for (size_t i = 0; i < rn_compiled_model_input_count(cm); i++) {
        rn_tensor *t;
        cr_assert_eq(rn_infer_request_get_input_tensor(r, i, &t), RN_OK);
        gpu_fill(rn_tensor_data(t), rn_tensor_element_count(t), (uint32_t)i + 1);
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK);
    *count = rn_tensor_element_count(out);
    float *copy = malloc(*count * sizeof *copy + 1);
    memcpy(copy, rn_tensor_data(out), *count * sizeof *copy);
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    return copy;
}

static void expect_close(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-3f * fabsf(want[i]) + 1e-5f,
                  "%s: element %zu: GPU %g, REF %g", what, i, got[i], want[i]);
}

typedef struct model_case {
    char name[64];
    /* The output's producer writes the user's cl_mem (the download, a
     * device-to-device copy, does not run); false: the plan does not allow
     * it (test_add's Add writes in place over its first input's upload, so
     * the result aliases it) and the result is copied out of the arena. */
    bool output_in_place;
} model_case;

ParameterizedTestParameters(gpu_remote, runs_on_the_users_cl_mem_with_no_upload_or_download)
{
    static model_case cases[] = {
        {"test_add", false}, {"test_basic_conv_with_padding", true}, {"test_flatten_axis1", true}};
    return cr_make_param_array(model_case, cases, sizeof cases / sizeof cases[0]);
}

/* Whether the node named `name` ran in the last run (profiling). */
static bool node_ran(rn_infer_request *r, const char *name)
{
    const rn_profiling_info *info;
    size_t n_info;
    cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n_info), RN_OK);
    for (size_t e = 0; e < n_info; e++)
        if (strcmp(info[e].node_name, name) == 0)
            return info[e].status == RN_NODE_EXECUTED;
    cr_assert_fail("no profiling entry '%s'", name);
    return false;
}

/* The user writes each input into a cl_mem of their own with
 * clEnqueueWriteBuffer, binds it, runs, and reads the output cl_mem back
 * with clEnqueueReadBuffer: REF's results, and nothing moved by the
 * device's uploads and downloads. Where the plan allows, the output's
 * producer writes the user's cl_mem itself: the download of the result
 * (a device-to-device copy) does not run. */
ParameterizedTest(model_case *c, gpu_remote, runs_on_the_users_cl_mem_with_no_upload_or_download)
{
    rn_core *core = gpu_core();
    rn_model *model = node_model(core, c->name);
    size_t n_want;
    float *want = ref_output(core, model, &n_want);
    user_cl u;
    user_cl_open(&u);
    rn_remote_context *ctx = user_context(core, &u);
    char buf[64];
    cr_assert_eq(rn_remote_context_get_property(ctx, "CONTEXT_TYPE", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "OCL");
    cr_assert_eq(rn_remote_context_get_property(ctx, "OCL_CONTEXT", buf, sizeof buf), RN_OK);
    cr_assert_eq((void *)(uintptr_t)strtoull(buf, NULL, 0), (void *)u.context, "%s", buf);
    rn_compiled_model *cm;
    rn_property profiling[] = {{"ENABLE_PROFILING", "YES"}};
    cr_assert_eq(rn_core_compile_model_with_context(core, model, ctx, profiling, 1, &cm), RN_OK,
                 "%s", rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    size_t n_in = rn_compiled_model_input_count(cm);
    cl_mem in_mem[4], out_mem;
    rn_tensor *in_t[4], *out_t;
    cl_int err;
    for (size_t i = 0; i < n_in; i++) {
        rn_port port;
        cr_assert_eq(rn_compiled_model_input(cm, i, &port), RN_OK);
        const rn_port *p = &port;
        size_t n = port_count(p);
        float *host = malloc(n * sizeof *host);
        gpu_fill(host, n, (uint32_t)i + 1);
        in_mem[i] = clCreateBuffer(u.context, CL_MEM_READ_WRITE, n * sizeof *host, NULL, &err);
        cr_assert_not_null(in_mem[i]);
        cr_assert_eq(clEnqueueWriteBuffer(u.queue, in_mem[i], CL_TRUE, 0, n * sizeof *host, host, 0,
                                          NULL, NULL),
                     CL_SUCCESS);
        free(host);
        cr_assert_eq(wrap_mem(ctx, p, in_mem[i], &in_t[i]), RN_OK, "%s", rn_last_error());
        cr_assert(rn_tensor_is_remote(in_t[i]));
        cr_assert_null(rn_tensor_data(in_t[i]));
        cr_assert_eq(rn_remote_tensor_get_property(in_t[i], "SHARED_MEM_TYPE", buf, sizeof buf),
                     RN_OK);
        cr_assert_str_eq(buf, "OCL_BUFFER");
        cr_assert_eq(rn_remote_tensor_get_property(in_t[i], "MEM_HANDLE", buf, sizeof buf), RN_OK);
        cr_assert_eq((void *)(uintptr_t)strtoull(buf, NULL, 0), (void *)in_mem[i]);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, i, in_t[i]), RN_OK, "%s",
                     rn_last_error());
    }
    rn_port out_port;
    cr_assert_eq(rn_compiled_model_output(cm, 0, &out_port), RN_OK);
    const rn_port *po = &out_port;
    size_t n_out = port_count(po);
    cr_assert_eq(n_out, n_want);
    out_mem = clCreateBuffer(u.context, CL_MEM_READ_WRITE, n_out * sizeof(float), NULL, &err);
    cr_assert_not_null(out_mem);
    cr_assert_eq(wrap_mem(ctx, po, out_mem, &out_t), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_output_tensor(r, 0, out_t), RN_OK, "%s", rn_last_error());
    uint64_t up0 = compiled_counter(cm, "GPU_BYTES_UPLOADED");
    uint64_t down0 = compiled_counter(cm, "GPU_BYTES_DOWNLOADED");
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
        float *got = calloc(n_out, sizeof *got);
        cr_assert_eq(clEnqueueReadBuffer(u.queue, out_mem, CL_TRUE, 0, n_out * sizeof *got, got, 0,
                                         NULL, NULL),
                     CL_SUCCESS);
        expect_close(got, want, n_out, c->name);
        if (strcmp(c->name, "test_basic_conv_with_padding") == 0) {
            /* No node writes over the Conv's inputs: their uploads do not
             * run, the Conv reads the caller's cl_mem. */
            const rn_profiling_info *info;
            size_t n_info, uploads = 0;
            cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n_info), RN_OK);
            for (size_t e = 0; e < n_info; e++)
                if (strstr(info[e].node_name, "plain->cl") != NULL) {
                    uploads++;
                    cr_assert_neq(info[e].status, RN_NODE_EXECUTED, "%s ran", info[e].node_name);
                }
            cr_assert_eq(uploads, n_in);
        }
        char download[128];
        snprintf(download, sizeof download, "reorder:%s:cl->plain", po->name);
        cr_assert_eq(node_ran(r, download), !c->output_in_place, "%s: %s %s", c->name, download,
                     c->output_in_place ? "ran: the output was copied" : "did not run");
        /* The output tensor reads back the same through the Core. */
        float *copy = calloc(n_out, sizeof *copy);
        rn_tensor *host;
        cr_assert_eq(rn_tensor_wrap(RN_F32, po->shape.dims, (size_t)po->shape.rank, copy,
                                    n_out * sizeof *copy, &host),
                     RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_tensor_copy(out_t, host), RN_OK, "%s", rn_last_error());
        expect_close(copy, want, n_out, "rn_tensor_copy of the output");
        rn_tensor_free(host);
        free(copy);
        free(got);
    }
    cr_assert_eq(compiled_counter(cm, "GPU_BYTES_UPLOADED") - up0, 0);
    cr_assert_eq(compiled_counter(cm, "GPU_BYTES_DOWNLOADED") - down0, 0);
    rn_infer_request_free(r);
    for (size_t i = 0; i < n_in; i++) {
        rn_tensor_free(in_t[i]);
        clReleaseMemObject(in_mem[i]);
    }
    rn_tensor_free(out_t);
    clReleaseMemObject(out_mem);
    rn_compiled_model_free(cm);
    rn_remote_context_free(ctx);
    user_cl_close(&u);
    free(want);
    rn_model_free(model);
    rn_core_free(core);
}

/* GPU_BYTES_UPLOADED of the compiled model grows by exactly the bytes of
 * the host inputs of each run: both inputs on the host, one in a remote
 * tensor, none; and the upload of a remote input is not run at all. */
Test(gpu_remote, bytes_uploaded_per_run_are_the_host_input_bytes)
{
    rn_core *core = gpu_core();
    rn_model *model = node_model(core, "test_add"); /* x, y: f32 [3, 4, 5] */
    user_cl u;
    user_cl_open(&u);
    rn_remote_context *ctx = user_context(core, &u);
    rn_compiled_model *cm;
    rn_property profiling[] = {{"ENABLE_PROFILING", "YES"}};
    cr_assert_eq(rn_core_compile_model_with_context(core, model, ctx, profiling, 1, &cm), RN_OK,
                 "%s", rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    const size_t n = 3 * 4 * 5, bytes = n * sizeof(float);
    /* Host tensors of the caller's (a request frees its own when another
     * tensor is set). */
    const int64_t dims[] = {3, 4, 5};
    rn_tensor *x_host, *y_host;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 3, &x_host), RN_OK);
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 3, &y_host), RN_OK);
    float *xd = rn_tensor_data(x_host), *yd = rn_tensor_data(y_host);
    for (size_t i = 0; i < n; i++)
        xd[i] = (float)i, yd[i] = 1000.0f;
    cl_int err;
    cl_mem xm = clCreateBuffer(u.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cr_assert_not_null(xm);
    float xs[3 * 4 * 5];
    for (size_t i = 0; i < n; i++)
        xs[i] = (float)(2 * i);
    cr_assert_eq(clEnqueueWriteBuffer(u.queue, xm, CL_TRUE, 0, bytes, xs, 0, NULL, NULL),
                 CL_SUCCESS);
    rn_tensor *x_remote, *y_remote;
    rn_port px, py;
    cr_assert_eq(rn_compiled_model_input(cm, 0, &px), RN_OK);
    cr_assert_eq(rn_compiled_model_input(cm, 1, &py), RN_OK);
    cr_assert_eq(wrap_mem(ctx, &px, xm, &x_remote), RN_OK, "%s", rn_last_error());
    /* y in a tensor the context allocates, filled through rn_tensor_copy. */
    cr_assert_eq(rn_remote_context_create_tensor(ctx, RN_F32, py.shape.dims, 3, NULL, 0, &y_remote),
                 RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_copy(y_host, y_remote), RN_OK, "%s", rn_last_error());

    struct {
        rn_tensor *x, *y;
        uint64_t uploaded;
        float x_scale;
    } runs[] = {
        {x_host, y_host, 2 * bytes, 1.0f},
        {x_remote, y_host, bytes, 2.0f},
        {x_remote, y_remote, 0, 2.0f},
        {x_host, y_remote, bytes, 1.0f},
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, runs[k].x), RN_OK, "%s",
                     rn_last_error());
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, runs[k].y), RN_OK, "%s",
                     rn_last_error());
        uint64_t up0 = compiled_counter(cm, "GPU_BYTES_UPLOADED");
        uint64_t down0 = compiled_counter(cm, "GPU_BYTES_DOWNLOADED");
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
        cr_assert_eq(compiled_counter(cm, "GPU_BYTES_UPLOADED") - up0, runs[k].uploaded, "run %zu",
                     k);
        cr_assert_eq(compiled_counter(cm, "GPU_BYTES_DOWNLOADED") - down0, bytes, "run %zu", k);
        /* The upload of y in a remote tensor does not run: the Add reads
         * the caller's cl_mem. (x's does, as one copy on the device: the Add
         * writes its result in place over x's bytes, which must not be the
         * caller's.) Host inputs are uploaded. */
        const rn_profiling_info *info;
        size_t n_info;
        cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n_info), RN_OK, "%s",
                     rn_last_error());
        for (int in = 0; in < 2; in++) {
            bool remote = rn_tensor_is_remote(in == 0 ? runs[k].x : runs[k].y), found = false;
            if (in == 0 && remote)
                continue;
            for (size_t e = 0; e < n_info; e++) {
                char name[64];
                snprintf(name, sizeof name, "reorder:%s:", in == 0 ? "x" : "y");
                if (strncmp(info[e].node_name, name, strlen(name)) != 0)
                    continue;
                found = true;
                cr_assert_eq(info[e].status == RN_NODE_EXECUTED, !remote, "run %zu: %s %s", k,
                             info[e].node_name, remote ? "ran" : "did not run");
            }
            cr_assert(found, "run %zu: no upload of input %d in the profiling info", k, in);
        }
        rn_tensor *z;
        cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &z), RN_OK);
        const float *zd = rn_tensor_data(z);
        for (size_t i = 0; i < n; i++)
            cr_assert_float_eq(zd[i], runs[k].x_scale * (float)i + 1000.0f, 1e-4, "run %zu, %zu", k,
                               i);
    }
    rn_infer_request_free(r);
    rn_tensor_free(x_remote);
    rn_tensor_free(y_remote);
    rn_tensor_free(x_host);
    rn_tensor_free(y_host);
    clReleaseMemObject(xm);
    rn_compiled_model_free(cm);
    rn_remote_context_free(ctx);
    user_cl_close(&u);
    rn_model_free(model);
    rn_core_free(core);
}

/* The default context is the plugin's own OpenCL context: a model
 * compiled without a context takes its tensors, which the context
 * allocates. */
Test(gpu_remote, default_context_tensors_bind_to_a_model_compiled_without_a_context)
{
    rn_core *core = gpu_core();
    rn_model *model = node_model(core, "test_sigmoid"); /* x: f32 [3, 4, 5] */
    size_t n_want;
    float *want = ref_output(core, model, &n_want);
    rn_remote_context *ctx, *again;
    cr_assert_eq(rn_core_get_default_context(core, "GPU", &ctx), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_get_default_context(core, "GPU", &again), RN_OK);
    cr_assert_eq(ctx, again);
    rn_remote_context_free(again);
    char buf[64];
    cr_assert_eq(rn_remote_context_get_property(ctx, "CONTEXT_TYPE", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "OCL");
    cr_assert_eq(rn_remote_context_get_property(ctx, "DEVICE_ID", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "0");
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_port port;
    cr_assert_eq(rn_compiled_model_input(cm, 0, &port), RN_OK);
    const rn_port *p = &port;
    rn_tensor *x, *y, *host_x;
    cr_assert_eq(rn_remote_context_create_tensor(ctx, RN_F32, p->shape.dims, 3, NULL, 0, &x), RN_OK,
                 "%s", rn_last_error());
    cr_assert_eq(rn_remote_context_create_tensor(ctx, RN_F32, p->shape.dims, 3, NULL, 0, &y), RN_OK,
                 "%s", rn_last_error());
    cr_assert_eq(rn_tensor_create(RN_F32, p->shape.dims, 3, &host_x), RN_OK);
    gpu_fill(rn_tensor_data(host_x), n_want, 1);
    cr_assert_eq(rn_tensor_copy(host_x, x), RN_OK, "%s", rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, x), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_output_tensor(r, 0, y), RN_OK, "%s", rn_last_error());
    uint64_t up0 = compiled_counter(cm, "GPU_BYTES_UPLOADED");
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(compiled_counter(cm, "GPU_BYTES_UPLOADED") - up0, 0);
    cr_assert_eq(rn_tensor_copy(y, host_x), RN_OK, "%s", rn_last_error());
    expect_close(rn_tensor_data(host_x), want, n_want, "default context");
    rn_infer_request_free(r);
    rn_tensor_free(x);
    rn_tensor_free(y);
    rn_tensor_free(host_x);
    rn_compiled_model_free(cm);
    rn_remote_context_free(ctx);
    free(want);
    rn_model_free(model);
    rn_core_free(core);
}

static void expect_error(rn_status st, rn_status want, const char *needle)
{
    cr_assert_eq(st, want, "status %d, want %d: %s", st, want, rn_last_error());
    cr_assert(strstr(rn_last_error(), needle) != NULL, "'%s' not in: %s", needle, rn_last_error());
}

Test(gpu_remote, bad_contexts_and_tensors_are_refused_naming_the_problem)
{
    rn_core *core = gpu_core();
    user_cl u, other;
    user_cl_open(&u);
    user_cl_open(&other);
    rn_remote_context *ctx = user_context(core, &u), *bad = NULL;
    /* Unknown parameters and values. */
    rn_property unknown[] = {{"OCL_CONTEXT", u.context_handle}, {"VA_DEVICE", "1"}};
    expect_error(rn_core_create_context(core, "GPU", unknown, 2, &bad), RN_INVALID_ARG,
                 "unknown parameter 'VA_DEVICE'");
    rn_property type[] = {{"CONTEXT_TYPE", "VA_SHARED"}};
    expect_error(rn_core_create_context(core, "GPU", type, 1, &bad), RN_INVALID_ARG,
                 "CONTEXT_TYPE 'VA_SHARED'");
    rn_property not_handle[] = {{"OCL_CONTEXT", "zero"}};
    expect_error(rn_core_create_context(core, "GPU", not_handle, 1, &bad), RN_INVALID_ARG,
                 "OCL_CONTEXT 'zero' is not an address");
    rn_property mixed[] = {{"OCL_CONTEXT", u.context_handle}, {"OCL_QUEUE", other.queue_handle}};
    expect_error(rn_core_create_context(core, "GPU", mixed, 2, &bad), RN_INVALID_ARG,
                 "OCL_QUEUE belongs to another OpenCL context");
    cr_assert_null(bad);

    const int64_t dims[] = {3, 4, 5};
    rn_tensor *t = NULL;
    rn_property tensor_unknown[] = {{"VA_SURFACE", "3"}};
    expect_error(rn_remote_context_create_tensor(ctx, RN_F32, dims, 3, tensor_unknown, 1, &t),
                 RN_INVALID_ARG, "unknown parameter 'VA_SURFACE'");
    rn_property image[] = {{"SHARED_MEM_TYPE", "OCL_IMAGE2D"}};
    expect_error(rn_remote_context_create_tensor(ctx, RN_F32, dims, 3, image, 1, &t),
                 RN_INVALID_ARG, "SHARED_MEM_TYPE 'OCL_IMAGE2D'");
    /* A cl_mem of another OpenCL context. */
    cl_int err;
    cl_mem foreign = clCreateBuffer(other.context, CL_MEM_READ_WRITE, 240, NULL, &err);
    cr_assert_not_null(foreign);
    char h[32];
    snprintf(h, sizeof h, "%p", (void *)foreign);
    rn_property foreign_p[] = {{"MEM_HANDLE", h}};
    expect_error(rn_remote_context_create_tensor(ctx, RN_F32, dims, 3, foreign_p, 1, &t),
                 RN_INVALID_ARG, "another OpenCL context");
    /* A cl_mem smaller than the tensor. */
    cl_mem small = clCreateBuffer(u.context, CL_MEM_READ_WRITE, 200, NULL, &err);
    cr_assert_not_null(small);
    snprintf(h, sizeof h, "%p", (void *)small);
    rn_property small_p[] = {{"MEM_HANDLE", h}};
    expect_error(rn_remote_context_create_tensor(ctx, RN_F32, dims, 3, small_p, 1, &t),
                 RN_INVALID_ARG, "holds 200 bytes, the tensor needs 240");
    cr_assert_null(t);

    rn_model *model = node_model(core, "test_sigmoid");
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model_with_context(core, model, ctx, NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    /* A remote tensor of another device (REF's host context). */
    rn_remote_context *ref;
    cr_assert_eq(rn_core_get_default_context(core, "REF", &ref), RN_OK, "%s", rn_last_error());
    rn_tensor *ref_t;
    cr_assert_eq(rn_remote_context_create_tensor(ref, RN_F32, dims, 3, NULL, 0, &ref_t), RN_OK);
    expect_error(rn_infer_request_set_input_tensor(r, 0, ref_t), RN_INVALID_ARG,
                 "lives on device REF");
    /* A GPU tensor of another GPU context (the default one). */
    rn_remote_context *def;
    cr_assert_eq(rn_core_get_default_context(core, "GPU", &def), RN_OK);
    rn_tensor *def_t;
    cr_assert_eq(rn_remote_context_create_tensor(def, RN_F32, dims, 3, NULL, 0, &def_t), RN_OK,
                 "%s", rn_last_error());
    expect_error(rn_infer_request_set_input_tensor(r, 0, def_t), RN_INVALID_ARG,
                 "another GPU context");
    /* A model compiled without a context (the default context's) refuses a
     * tensor of the user's OpenCL context. */
    rn_compiled_model *plain;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", NULL, 0, &plain), RN_OK);
    rn_tensor *user_t;
    cr_assert_eq(rn_remote_context_create_tensor(ctx, RN_F32, dims, 3, NULL, 0, &user_t), RN_OK);
    rn_infer_request *r2;
    cr_assert_eq(rn_compiled_model_create_infer_request(plain, &r2), RN_OK);
    expect_error(rn_infer_request_set_input_tensor(r2, 0, user_t), RN_INVALID_ARG,
                 "another GPU context");
    /* A copy of the wrong shape. */
    const int64_t other_dims[] = {60};
    rn_tensor *flat;
    cr_assert_eq(rn_tensor_create(RN_F32, other_dims, 1, &flat), RN_OK);
    cr_assert_neq(rn_tensor_copy(flat, user_t), RN_OK);
    rn_tensor_free(flat);
    rn_infer_request_free(r2);
    rn_infer_request_free(r);
    rn_tensor_free(user_t);
    rn_tensor_free(def_t);
    rn_tensor_free(ref_t);
    rn_compiled_model_free(plain);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_remote_context_free(def);
    rn_remote_context_free(ref);
    rn_remote_context_free(ctx);
    clReleaseMemObject(foreign);
    clReleaseMemObject(small);
    user_cl_close(&other);
    user_cl_close(&u);
    rn_core_free(core);
}

/* The devices OpenCL itself lists, in the plugin's order (every platform's
 * GPUs, then its CPU and accelerator devices): returns how many there are,
 * and writes the name of device `index` to `name` when there is one. */
static int opencl_devices(int index, char *name, size_t size)
{
    cl_platform_id platforms[8];
    cl_uint np = 0;
    cr_assert_eq(clGetPlatformIDs(8, platforms, &np), CL_SUCCESS);
    int seen = 0;
    for (int pass = 0; pass < 2; pass++)
        for (cl_uint p = 0; p < np && p < 8; p++) {
            cl_device_id ids[16];
            cl_uint nd = 0;
            cl_device_type want =
                pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR;
            if (clGetDeviceIDs(platforms[p], want, 16, ids, &nd) != CL_SUCCESS)
                continue;
            for (cl_uint d = 0; d < nd && d < 16; d++, seen++)
                if (seen == index)
                    cr_assert_eq(clGetDeviceInfo(ids[d], CL_DEVICE_NAME, size, name, NULL),
                                 CL_SUCCESS);
        }
    return seen;
}

static void opencl_device_name(int index, char *name, size_t size)
{
    cr_assert_lt(index, opencl_devices(index, name, size), "OpenCL lists no device %d", index);
}

/* A core with two OpenCL devices (POCL_DEVICES="pthread pthread"): skips
 * only when OpenCL itself lists one device (a platform other than PoCL, or
 * one that ignores POCL_DEVICES); when it lists two or more, the plugin's
 * AVAILABLE_DEVICES must name each of them (a device-enumeration bug fails). */
static rn_core *two_device_core(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    rn_core *core = gpu_core();
    char buf[256], want[256] = "0";
    int n = opencl_devices(-1, NULL, 0);
    if (n < 2) {
        rn_core_free(core);
        cr_skip_test("OpenCL lists %d device here (the platform is not PoCL, or it ignored "
                     "POCL_DEVICES)",
                     n);
    }
    for (int i = 1; i < n; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), " %d", i);
    cr_assert_eq(rn_core_get_property(core, "GPU", "AVAILABLE_DEVICES", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, want, "AVAILABLE_DEVICES: %s, OpenCL lists %d devices", buf, n);
    return core;
}

/* PoCL exposes two devices with POCL_DEVICES="pthread pthread": GPU.1
 * compiles and runs on the second, GPU.7 is refused naming those there
 * are. */
Test(gpu_remote, device_id_selects_among_the_opencl_devices)
{
    rn_core *core = two_device_core();
    char buf[256];
    rn_model *model = node_model(core, "test_basic_conv_with_padding");
    size_t n_want;
    float *want = ref_output(core, model, &n_want);
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU.1", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_get_property(cm, "DEVICE_ID", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "1");
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    for (size_t i = 0; i < rn_compiled_model_input_count(cm); i++) {
        rn_tensor *t;
        rn_infer_request_get_input_tensor(r, i, &t);
        gpu_fill(rn_tensor_data(t), rn_tensor_element_count(t), (uint32_t)i + 1);
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK);
    expect_close(rn_tensor_data(out), want, n_want, "GPU.1");
    /* A context of device 1 ("GPU.1"): its tensors bind to the GPU.1 model
     * only through a compile in that context; the default context is
     * device 0's. */
    rn_remote_context *ctx1;
    cr_assert_eq(rn_core_create_context(core, "GPU.1", NULL, 0, &ctx1), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_remote_context_get_property(ctx1, "DEVICE_ID", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "1");
    rn_remote_context *def;
    cr_assert_eq(rn_core_get_default_context(core, "GPU", &def), RN_OK);
    rn_tensor *t0;
    rn_port port;
    cr_assert_eq(rn_compiled_model_input(cm, 0, &port), RN_OK);
    const rn_port *p = &port;
    cr_assert_eq(rn_remote_context_create_tensor(def, RN_F32, p->shape.dims, (size_t)p->shape.rank,
                                                 NULL, 0, &t0),
                 RN_OK);
    /* The Core lets it through (both are the default context's as far as
     * it knows); the device refuses it when the run binds it. */
    cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, t0), RN_OK, "%s", rn_last_error());
    expect_error(rn_infer_request_infer(r), RN_INVALID_ARG, "another OpenCL context");
    rn_remote_context_free(def);
    rn_remote_context_free(ctx1);
    rn_compiled_model *none = NULL;
    expect_error(rn_core_compile_model(core, model, "GPU.7", NULL, 0, &none), RN_INVALID_ARG,
                 "DEVICE_ID '7' does not exist (available: 0 1");
    cr_assert_null(none);
    rn_property id[] = {{"DEVICE_ID", "9"}};
    expect_error(rn_core_set_property(core, "GPU", id, 1), RN_INVALID_ARG, "available: 0 1");
    rn_infer_request_free(r);
    rn_tensor_free(t0);
    rn_compiled_model_free(cm);
    free(want);
    rn_model_free(model);
    rn_core_free(core);
}

/* "GPU.1" reads device 1's properties: its OpenCL name, and the bytes its
 * own runs moved (a model run on GPU.1 adds to GPU.1's GPU_BYTES_UPLOADED,
 * not to device 0's, which plain "GPU" reads). "GPU.7" is refused naming
 * the devices there are; properties are still set on "GPU" only. */
Test(gpu_remote, device_properties_answer_for_the_device_named)
{
    rn_core *core = two_device_core();
    char buf[512], want[256];
    for (int i = 0; i < 2; i++) {
        char device[16];
        snprintf(device, sizeof device, "GPU.%d", i);
        opencl_device_name(i, want, sizeof want);
        cr_assert_eq(rn_core_get_property(core, device, "FULL_DEVICE_NAME", buf, sizeof buf), RN_OK,
                     "%s: %s", device, rn_last_error());
        cr_assert_str_eq(buf, want, "%s", device);
        cr_assert_eq(rn_core_get_property(core, device, "DEVICE_ARCHITECTURE", buf, sizeof buf),
                     RN_OK);
        cr_assert(strstr(buf, want) != NULL, "%s: DEVICE_ARCHITECTURE '%s'", device, buf);
        cr_assert_eq(
            rn_core_get_property(core, device, "OPTIMIZATION_CAPABILITIES", buf, sizeof buf),
            RN_OK);
        cr_assert(strstr(buf, "FP32") != NULL, "%s", buf);
    }
    rn_model *model = node_model(core, "test_add");
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU.1", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    size_t in_bytes = 0;
    for (size_t i = 0; i < rn_compiled_model_input_count(cm); i++) {
        rn_tensor *t;
        rn_infer_request_get_input_tensor(r, i, &t);
        gpu_fill(rn_tensor_data(t), rn_tensor_element_count(t), (uint32_t)i + 1);
        in_bytes += rn_tensor_byte_size(t);
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_get_property(core, "GPU.1", "GPU_BYTES_UPLOADED", buf, sizeof buf), RN_OK);
    cr_assert_eq(strtoull(buf, NULL, 10), in_bytes, "GPU.1 uploaded %s bytes", buf);
    cr_assert_eq(rn_core_get_property(core, "GPU", "GPU_BYTES_UPLOADED", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "0", "device 0 ran nothing");
    cr_assert_eq(rn_core_get_property(core, "GPU.0", "GPU_BYTES_UPLOADED", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, "0");
    expect_error(rn_core_get_property(core, "GPU.7", "FULL_DEVICE_NAME", buf, sizeof buf),
                 RN_INVALID_ARG, "DEVICE_ID '7' does not exist (available: 0 1");
    rn_property p[] = {{"PERFORMANCE_HINT", "LATENCY"}};
    expect_error(rn_core_set_property(core, "GPU.1", p, 1), RN_INVALID_ARG,
                 "properties are set and read on 'GPU'");
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}
