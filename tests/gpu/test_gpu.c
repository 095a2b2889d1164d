/* The GPU device (plugins/gpu) on whatever OpenCL platform the machine has
 * (PoCL's CPU device in CI): it loads as a plugin, names its OpenCL device,
 * fails cleanly without a platform, computes what REF computes on the ops
 * it claims, moves exactly the input bytes to the device, runs requests
 * concurrently through its device stages, and refuses what it lacks. Every
 * test that needs a platform skips, saying why, where there is none. */
#include <CL/cl.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static void read_node_model(rn_core *core, const char *name, rn_model **model)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, name);
    cr_assert_eq(rn_core_read_model(core, path, model), RN_OK, "%s: %s", name, rn_last_error());
}

static uint64_t counter(rn_core *core, const char *key)
{
    char buf[64];
    cr_assert_eq(rn_core_get_property(core, "GPU", key, buf, sizeof buf), RN_OK, "%s",
                 rn_last_error());
    return strtoull(buf, NULL, 10);
}

Test(gpu, no_platform_fails_create_with_the_reason_and_ref_still_works)
{
    /* The ICD loader reads its vendors from an empty folder: no platform. */
    char dir[] = "/tmp/rn_no_icd_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("OCL_ICD_VENDORS", dir, 1);
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_neq(rn_core_load_plugin(core, NULL, GPU_SO), RN_OK);
    cr_assert(strstr(rn_last_error(), "no OpenCL platform") != NULL, "message: %s",
              rn_last_error());
    cr_assert_eq(rn_core_failed_device_count(core), 1);
    const char *name, *reason;
    cr_assert_eq(rn_core_failed_device(core, 0, &name, &reason), RN_OK);
    cr_assert(strstr(reason, "no OpenCL platform") != NULL, "reason: %s", reason);
    /* REF is unaffected. */
    rn_model *model;
    read_node_model(core, "test_add", &model);
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_compiled_model *none;
    cr_assert_neq(rn_core_compile_model(core, model, "GPU", NULL, 0, &none), RN_OK);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    rmdir(dir);
}

Test(gpu, properties_name_the_opencl_device)
{
    rn_core *core = gpu_core();
    /* The first GPU device of the platforms, else the first other one, as
     * OpenCL itself lists them. */
    cl_platform_id platforms[8];
    cl_uint np = 0;
    cr_assert_eq(clGetPlatformIDs(8, platforms, &np), CL_SUCCESS);
    cl_device_id first = NULL;
    for (int pass = 0; pass < 2 && first == NULL; pass++)
        for (cl_uint p = 0; p < np && first == NULL; p++) {
            cl_uint nd = 0;
            cl_device_type t =
                pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR;
            if (clGetDeviceIDs(platforms[p], t, 1, &first, &nd) != CL_SUCCESS)
                first = NULL;
        }
    cr_assert_not_null(first);
    char want[256] = "";
    clGetDeviceInfo(first, CL_DEVICE_NAME, sizeof want - 1, want, NULL);
    char buf[1024];
    cr_assert_eq(rn_core_get_property(core, "GPU", "FULL_DEVICE_NAME", buf, sizeof buf), RN_OK);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(rn_core_get_property(core, "GPU", "DEVICE_ARCHITECTURE", buf, sizeof buf), RN_OK);
    cr_assert(strstr(buf, want) != NULL && strstr(buf, "driver") != NULL, "%s", buf);
    cr_assert_eq(rn_core_get_property(core, "GPU", "OPTIMIZATION_CAPABILITIES", buf, sizeof buf),
                 RN_OK);
    cr_assert(strstr(buf, "FP32") != NULL, "%s", buf);
    cr_assert_eq(rn_core_get_property(core, "GPU", "NO_SUCH_KEY", buf, sizeof buf), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "NO_SUCH_KEY") != NULL, "%s", rn_last_error());
    rn_core_free(core);
}

/* Runs `model` on `device` with inputs from gpu_fill(seed = input index) and
 * returns output 0 (malloc'ed) and its element count. */
static float *run_on(rn_core *core, rn_model *model, const char *device, size_t *count)
{
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, device, NULL, 0, &cm), RN_OK, "%s: %s", device,
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    size_t n_in = rn_compiled_model_input_count(cm);
    for (size_t i = 0; i < n_in; i++) {
        rn_tensor *t;
        cr_assert_eq(rn_infer_request_get_input_tensor(r, i, &t), RN_OK, "%s", rn_last_error());
        gpu_fill(rn_tensor_data(t), rn_tensor_element_count(t), (uint32_t)i + 1);
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s: %s", device, rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK, "%s", rn_last_error());
    *count = rn_tensor_element_count(out);
    float *copy = malloc(*count * sizeof *copy + 1);
    memcpy(copy, rn_tensor_data(out), *count * sizeof *copy);
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    return copy;
}

typedef struct op_case {
    char name[64];
} op_case;

ParameterizedTestParameters(gpu, matches_ref_on_the_ops_it_claims)
{
    static op_case cases[] = {
        {"test_add_bcast"},
        {"test_sum_example"},
        {"test_sigmoid"},
        {"test_leakyrelu"},
        {"test_conv_with_strides_and_asymmetric_padding"},
        {"test_conv_with_autopad_same"},
        {"test_basic_conv_with_padding"},
        {"test_maxpool_2d_pads"},
        {"test_averagepool_2d_pads_count_include_pad"},
        {"test_averagepool_2d_same_upper"},
        {"test_globalaveragepool"},
        {"test_lrn"},
        {"test_softmax_axis_1"},
        {"test_logsoftmax_axis_0"},
        {"test_gemm_all_attributes"},
        {"test_gemm_default_matrix_bias"},
        {"test_matmul_3d"},
        {"test_matmul_4d"},
        {"test_concat_2d_axis_1"},
        {"test_transpose_all_permutations_4"},
        {"test_layer_normalization_3d_axis_negative_1_epsilon"},
    };
    return cr_make_param_array(op_case, cases, sizeof cases / sizeof cases[0]);
}

/* REF is the oracle: the same model and inputs, rtol 1e-3 (ONNX's). */
ParameterizedTest(op_case *c, gpu, matches_ref_on_the_ops_it_claims)
{
    rn_core *core = gpu_core();
    rn_model *model;
    read_node_model(core, c->name, &model);
    size_t n_ref, n_gpu;
    float *want = run_on(core, model, "REF", &n_ref);
    float *got = run_on(core, model, "GPU", &n_gpu);
    cr_assert_eq(n_gpu, n_ref);
    for (size_t i = 0; i < n_ref; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-3f * fabsf(want[i]) + 1e-5f,
                  "%s: element %zu: GPU %g, REF %g", c->name, i, got[i], want[i]);
    free(want);
    free(got);
    rn_model_free(model);
    rn_core_free(core);
}

Test(gpu, uploads_exactly_the_input_bytes_per_run)
{
    rn_core *core = gpu_core();
    rn_model *model;
    read_node_model(core, "test_add", &model); /* x, y: f32 [3, 4, 5] */
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    rn_tensor *x, *y, *z;
    rn_infer_request_get_input_tensor(r, 0, &x);
    rn_infer_request_get_input_tensor(r, 1, &y);
    size_t n = rn_tensor_element_count(x);
    float *xd = rn_tensor_data(x), *yd = rn_tensor_data(y);
    uint64_t up0 = counter(core, "GPU_BYTES_UPLOADED");
    uint64_t down0 = counter(core, "GPU_BYTES_DOWNLOADED");
    for (int run = 1; run <= 3; run++) {
        for (size_t i = 0; i < n; i++)
            xd[i] = (float)i, yd[i] = (float)(run * 100);
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &z), RN_OK);
        const float *zd = rn_tensor_data(z);
        for (size_t i = 0; i < n; i++)
            cr_assert_float_eq(zd[i], (float)i + (float)(run * 100), 1e-5, "run %d, %zu", run, i);
        cr_assert_eq(counter(core, "GPU_BYTES_UPLOADED") - up0,
                     (uint64_t)run * 2 * n * sizeof(float));
        cr_assert_eq(counter(core, "GPU_BYTES_DOWNLOADED") - down0,
                     (uint64_t)run * n * sizeof(float));
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(gpu, async_requests_run_through_the_device_stages)
{
    rn_core *core = gpu_core();
    rn_model *model;
    read_node_model(core, "test_add", &model);
    rn_compiled_model *cm;
    rn_property props[] = {{"PERFORMANCE_HINT", "THROUGHPUT"}};
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", props, 1, &cm), RN_OK, "%s",
                 rn_last_error());
    const rn_pipeline_stage *stages;
    size_t n_stages;
    cr_assert_eq(rn_compiled_model_pipeline(cm, &stages, &n_stages), RN_OK);
    bool execute = false, wait = false;
    for (size_t i = 0; i < n_stages; i++) {
        execute |= strcmp(stages[i].stage, "execute") == 0;
        /* On the stream: arming the marker does not block (plugins/gpu/plugin.c). */
        wait |= strcmp(stages[i].stage, "wait") == 0 && strcmp(stages[i].executor, "stream") == 0;
    }
    cr_assert(execute && wait, "the pipeline has an execute stage and a wait on the stream");
    enum { N = 6 };
    rn_infer_request *r[N];
    for (int k = 0; k < N; k++) {
        cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r[k]), RN_OK);
        rn_tensor *x, *y;
        rn_infer_request_get_input_tensor(r[k], 0, &x);
        rn_infer_request_get_input_tensor(r[k], 1, &y);
        float *xd = rn_tensor_data(x), *yd = rn_tensor_data(y);
        for (size_t i = 0; i < rn_tensor_element_count(x); i++)
            xd[i] = (float)i, yd[i] = (float)(k * (int)i);
    }
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < N; k++)
            cr_assert_eq(rn_infer_request_start_async(r[k]), RN_OK, "%s", rn_last_error());
        for (int k = 0; k < N; k++) {
            cr_assert_eq(rn_infer_request_wait(r[k]), RN_OK, "%s", rn_last_error());
            rn_tensor *z;
            rn_infer_request_get_output_tensor(r[k], 0, &z);
            const float *zd = rn_tensor_data(z);
            for (size_t i = 0; i < rn_tensor_element_count(z); i++)
                cr_assert_float_eq(zd[i], (float)((k + 1) * (int)i), 1e-4, "request %d", k);
        }
    }
    for (int k = 0; k < N; k++)
        rn_infer_request_free(r[k]);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(gpu, an_op_it_lacks_is_refused_with_the_reason)
{
    rn_core *core = gpu_core();
    rn_model *model;
    read_node_model(core, "test_cumsum_1d", &model);
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", NULL, 0, &cm), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "CumSum") != NULL, "message: %s", rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}
