/* A model that omits an attribute runs the op's default on every device:
 * ONNX's node tests (Debian's libonnx-testdata) of the ops whose defaults the devices used to
 * restate (test_leakyrelu_default, ..., whose node writes none of the attributes named below:
 * checked in the model file) and of the windows whose auto_pad every device now reads from one
 * parse (test_conv_with_autopad_same, test_maxpool_2d_same_lower, ...) run on REF, CPU and GPU and
 * give ONNX's expected outputs (test_data_set_0/output_0.pb) within ONNX's rtol 1e-3. GPU skips,
 * saying why, where it cannot start. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

/* A case and the attributes its node must omit (NULL-terminated). */
typedef struct omitting {
    const char *name;
    const char *omits[5];
} omitting;

static const omitting cases[] = {
    {"test_leakyrelu_default", {"alpha", NULL}},
    {"test_elu_default", {"alpha", NULL}},
    {"test_selu_default", {"alpha", "gamma", NULL}},
    {"test_hardsigmoid_default", {"alpha", "beta", NULL}},
    {"test_thresholdedrelu_default", {"alpha", NULL}},
    {"test_lrn_default", {"alpha", "beta", "bias", NULL}},
    {"test_gemm_default_single_elem_vector_bias", {"alpha", "beta", "transA", "transB", NULL}},
    {"test_layer_normalization_default_axis", {"axis", "epsilon", NULL}},
    {"test_averagepool_2d_default", {"auto_pad", "ceil_mode", "count_include_pad", NULL}},
    {"test_maxpool_2d_default", {"auto_pad", "ceil_mode", "storage_order", NULL}},
    {"test_conv_with_autopad_same", {NULL}},
    {"test_maxpool_2d_same_lower", {NULL}},
    {"test_averagepool_2d_same_upper", {NULL}},
};

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (Debian's libonnx-testdata: scripts/setup)", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(*size + 1);
    cr_assert_eq(fread(buf, 1, *size, f), *size, "%s", path);
    fclose(f);
    return buf;
}

/* The model's one node omits each of `omits`. */
static void check_omits(const char *dir, const char *const *omits)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    size_t size;
    uint8_t *buf = slurp(path, &size);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, buf);
    free(buf);
    cr_assert(m != NULL && m->graph != NULL && m->graph->n_node == 1, "%s: one node", path);
    const Onnx__NodeProto *n = m->graph->node[0];
    for (int o = 0; omits[o] != NULL; o++)
        for (size_t a = 0; a < n->n_attribute; a++)
            cr_assert_str_neq(n->attribute[a]->name, omits[o], "%s writes %s", path, omits[o]);
    onnx__model_proto__free_unpacked(m, NULL);
}

/* A TensorProto file (raw_data or float_data) of f32 as a tensor. */
static rn_tensor *read_f32(const char *path)
{
    size_t size;
    uint8_t *buf = slurp(path, &size);
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, size, buf);
    free(buf);
    cr_assert(p != NULL && p->data_type == RN_F32 && p->n_dims <= 8, "%s: an f32 tensor", path);
    int64_t dims[8];
    for (size_t d = 0; d < p->n_dims; d++)
        dims[d] = p->dims[d];
    rn_tensor *t;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, p->n_dims, &t), RN_OK);
    size_t bytes = rn_tensor_byte_size(t);
    if (p->has_raw_data) {
        cr_assert_eq(p->raw_data.len, bytes, "%s", path);
        memcpy(rn_tensor_data(t), p->raw_data.data, bytes);
    } else {
        cr_assert_eq(p->n_float_data * sizeof(float), bytes, "%s", path);
        memcpy(rn_tensor_data(t), p->float_data, bytes);
    }
    onnx__tensor_proto__free_unpacked(p, NULL);
    return t;
}

/* Runs the case on `device`; false where the device has no kernel for its
 * op. */
static bool run_case(rn_core *core, const char *device, const omitting *c)
{
    char dir[256], path[512];
    snprintf(dir, sizeof dir, NODE_DIR "/%s", c->name);
    check_omits(dir, c->omits);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    rn_model *m;
    cr_assert_eq(rn_core_read_model(core, path, &m), RN_OK, "%s: %s", path, rn_last_error());
    rn_property f32[] = {{"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm;
    rn_status st = rn_core_compile_model(core, m, device, f32, 1, &cm);
    if (st == RN_UNSUPPORTED && strstr(rn_last_error(), "no kernel for op") != NULL) {
        /* The device has no kernel for the op at all (GPU: Selu): nothing
         * of its defaults to check there. */
        cr_log_info("%s: %s", device, rn_last_error());
        rn_model_free(m);
        return false;
    }
    cr_assert_eq(st, RN_OK, "%s on %s: %s", c->name, device, rn_last_error());
    char ran[64];
    cr_assert_eq(rn_compiled_model_get_property(cm, "EXECUTION_DEVICES", ran, sizeof ran), RN_OK);
    cr_assert_str_eq(ran, device, "%s ran on %s", c->name, ran);
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    size_t n_in = rn_compiled_model_input_count(cm);
    rn_tensor *in[4];
    cr_assert_leq(n_in, 4);
    for (size_t i = 0; i < n_in; i++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, i);
        in[i] = read_f32(path);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, i, in[i]), RN_OK, "%s", rn_last_error());
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s on %s: %s", c->name, device,
                 rn_last_error());
    snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", dir);
    rn_tensor *want = read_f32(path), *got;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &got), RN_OK);
    size_t n = rn_tensor_element_count(want);
    cr_assert_eq(rn_tensor_element_count(got), n, "%s on %s: output size", c->name, device);
    const float *g = rn_tensor_data(got), *w = rn_tensor_data(want);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabsf(g[i] - w[i]) <= 1e-5f + 1e-3f * fabsf(w[i]),
                  "%s on %s: y[%zu] = %g, ONNX's %g", c->name, device, i, g[i], w[i]);
    rn_tensor_free(want);
    for (size_t i = 0; i < n_in; i++)
        rn_tensor_free(in[i]);
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    return true;
}

/* Every case on `device`: most must have a kernel there. */
static void run_all(rn_core *core, const char *device)
{
    size_t ran = 0, n = sizeof cases / sizeof cases[0];
    for (size_t c = 0; c < n; c++)
        ran += run_case(core, device, &cases[c]);
    rn_core_free(core);
    cr_assert_geq(ran, n - 2, "%s ran %zu of the %zu cases", device, ran, n);
}

static rn_core *plain_core(void)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    return core;
}

Test(attr_default_models, run_onnx_s_default_on_ref)
{
    run_all(plain_core(), "REF");
}

Test(attr_default_models, run_onnx_s_default_on_cpu)
{
    run_all(plain_core(), "CPU");
}

Test(attr_default_models, run_onnx_s_default_on_gpu)
{
    run_all(gpu_core(), "GPU");
}
