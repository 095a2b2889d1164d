/* The GPU device's ops for a transformer encoder's embeddings, masks and
 * LayerNorms (plugins/gpu/index.c, reduce.c): Gather with i64 and i32
 * indices (negative ones too), Cast round trips between f32, i64, i32 and
 * bool, Where with a bool condition broadcast, the comparisons and Not,
 * Expand, Slice, the reductions, and PyTorch's BERT mask subgraph. Each
 * case (tests/gpu/encoder_ops, made by make_encoder_ops_models.py, and the
 * ONNX node tests of those ops) runs on REF and on GPU with the same inputs
 * (the case's input_K.pb): every output agrees, floats within rtol 1e-3,
 * other types exactly. A decomposed LayerNorm and Gelu run as one node
 * each; a ReduceMean outside that pattern runs by itself. Skips, saying
 * why, where the GPU device cannot start. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define CASES    "tests/gpu/encoder_ops"
#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

/* A TensorProto file (raw_data, or float/int64/int32 fields) as a tensor. */
static rn_tensor *read_pb(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)size + 1);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size, "%s", path);
    fclose(f);
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, (size_t)size, buf);
    free(buf);
    cr_assert_not_null(p, "%s: not a TensorProto", path);
    int64_t dims[8];
    cr_assert(p->n_dims <= 8, "%s: rank %zu", path, p->n_dims);
    for (size_t d = 0; d < p->n_dims; d++)
        dims[d] = p->dims[d];
    rn_element_type type = (rn_element_type)p->data_type;
    rn_tensor *t;
    cr_assert_eq(rn_tensor_create(type, dims, p->n_dims, &t), RN_OK, "%s: %s", path,
                 rn_last_error());
    size_t n = rn_tensor_element_count(t), bytes = rn_tensor_byte_size(t);
    uint8_t *data = rn_tensor_data(t);
    if (p->has_raw_data) {
        cr_assert_eq(p->raw_data.len, bytes, "%s: raw_data size", path);
        memcpy(data, p->raw_data.data, bytes);
    } else if (type == RN_F32 && p->n_float_data == n) {
        memcpy(data, p->float_data, bytes);
    } else if (type == RN_I64 && p->n_int64_data == n) {
        memcpy(data, p->int64_data, bytes);
    } else if ((type == RN_I32 || type == RN_BOOL) && p->n_int32_data == n) {
        for (size_t i = 0; i < n; i++) {
            if (type == RN_BOOL)
                data[i] = p->int32_data[i] != 0;
            else
                ((int32_t *)data)[i] = p->int32_data[i];
        }
    } else {
        cr_assert_fail("%s: a tensor of type %d this test cannot read", path, p->data_type);
    }
    onnx__tensor_proto__free_unpacked(p, NULL);
    return t;
}

/* The outputs of `model` compiled on `device` for the inputs of `dir`. */
static rn_tensor **run_case(rn_core *core, rn_model *model, const char *dir, const char *device,
                            size_t *n_out, rn_compiled_model **cm_out)
{
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, device, NULL, 0, &cm), RN_OK, "%s: %s: %s", dir,
                 device, rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    size_t n_in = rn_compiled_model_input_count(cm);
    rn_tensor *in[16];
    cr_assert(n_in <= 16);
    for (size_t i = 0; i < n_in; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, i);
        in[i] = read_pb(path);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, i, in[i]), RN_OK, "%s: input %zu: %s",
                     dir, i, rn_last_error());
    }
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s: %s: %s", dir, device, rn_last_error());
    *n_out = rn_compiled_model_output_count(cm);
    rn_tensor **out = calloc(*n_out, sizeof *out);
    for (size_t o = 0; o < *n_out; o++) {
        rn_tensor *t;
        cr_assert_eq(rn_infer_request_get_output_tensor(r, o, &t), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_tensor_create(rn_tensor_element_type(t), rn_tensor_dims(t),
                                      rn_tensor_rank(t), &out[o]),
                     RN_OK);
        memcpy(rn_tensor_data(out[o]), rn_tensor_data(t), rn_tensor_byte_size(t));
    }
    rn_infer_request_free(r);
    for (size_t i = 0; i < n_in; i++)
        rn_tensor_free(in[i]);
    if (cm_out != NULL)
        *cm_out = cm;
    else
        rn_compiled_model_free(cm);
    return out;
}

static void free_outputs(rn_tensor **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rn_tensor_free(t[i]);
    free(t);
}

/* GPU against REF on the case in `dir`; the GPU's compiled model in *cm
 * when cm is not NULL. */
static void check_case(const char *dir, rn_core *core, rn_compiled_model **cm)
{
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s: %s", path, rn_last_error());
    size_t n_ref, n_gpu;
    rn_tensor **want = run_case(core, model, dir, "REF", &n_ref, NULL);
    rn_tensor **got = run_case(core, model, dir, "GPU", &n_gpu, cm);
    cr_assert_eq(n_gpu, n_ref);
    for (size_t o = 0; o < n_ref; o++) {
        rn_element_type type = rn_tensor_element_type(want[o]);
        cr_assert_eq(rn_tensor_element_type(got[o]), type, "%s: output %zu's type", dir, o);
        size_t n = rn_tensor_element_count(want[o]);
        cr_assert_eq(rn_tensor_element_count(got[o]), n, "%s: output %zu's size", dir, o);
        cr_assert_eq(rn_tensor_rank(got[o]), rn_tensor_rank(want[o]));
        if (type == RN_F32) {
            const float *g = rn_tensor_data(got[o]), *w = rn_tensor_data(want[o]);
            for (size_t i = 0; i < n; i++)
                cr_assert(fabsf(g[i] - w[i]) <= 1e-3f * fabsf(w[i]) + 1e-5f ||
                              (isnan(g[i]) && isnan(w[i])),
                          "%s: output %zu, element %zu: GPU %g, REF %g", dir, o, i, g[i], w[i]);
        } else {
            size_t es = rn_element_type_size(type);
            const uint8_t *g = rn_tensor_data(got[o]), *w = rn_tensor_data(want[o]);
            for (size_t i = 0; i < n; i++)
                cr_assert(memcmp(g + i * es, w + i * es, es) == 0,
                          "%s: output %zu (%s), element %zu differs", dir, o,
                          rn_element_type_name(type), i);
        }
    }
    free_outputs(want, n_ref);
    free_outputs(got, n_gpu);
    rn_model_free(model);
}

typedef struct op_case {
    char dir[128];
} op_case;

ParameterizedTestParameters(gpu_encoder_ops, match_ref)
{
    static op_case cases[] = {
        {CASES "/gather_i64_neg"},
        {CASES "/gather_i32_axis_last"},
        {CASES "/gather_bool"},
        {CASES "/where_bcast"},
        {CASES "/where_i64"},
        {CASES "/cast_round_trips"},
        {CASES "/compare"},
        {CASES "/bert_mask"},
        {CASES "/slice"},
        {CASES "/reduce"},
        {NODE_DIR "/test_gather_0"},
        {NODE_DIR "/test_gather_negative_indices"},
        {NODE_DIR "/test_gather_2d_indices"},
        {NODE_DIR "/test_where_long_example"},
        {NODE_DIR "/test_equal_bcast"},
        {NODE_DIR "/test_greater_equal_bcast"},
        {NODE_DIR "/test_not_3d"},
        {NODE_DIR "/test_reduce_mean_do_not_keepdims_random"},
        {NODE_DIR "/test_reduce_max_default_axes_keepdims_random"},
    };
    return cr_make_param_array(op_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(op_case *c, gpu_encoder_ops, match_ref)
{
    rn_core *core = gpu_core();
    check_case(c->dir, core, NULL);
    rn_core_free(core);
}

/* How many nodes of the runtime model run `op`. */
static int count_op(rn_compiled_model *cm, const char *op)
{
    const rn_runtime_node *nodes;
    size_t n;
    cr_assert_eq(rn_compiled_model_runtime_model(cm, &nodes, &n), RN_OK, "%s", rn_last_error());
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(nodes[i].layer_type, op) == 0;
    return k;
}

typedef struct op_count {
    const char *op;
    int n;
} op_count;

/* The case in `dir` matches REF, and its GPU runtime model runs each op of
 * `want` (n of them) that many times. */
static void check_ops(const char *dir, const op_count *want, int n)
{
    rn_core *core = gpu_core();
    rn_compiled_model *cm;
    check_case(dir, core, &cm);
    for (int i = 0; i < n; i++)
        cr_assert_eq(count_op(cm, want[i].op), want[i].n, "%s: %s nodes", dir, want[i].op);
    rn_compiled_model_free(cm);
    rn_core_free(core);
}

Test(gpu_encoder_ops, a_decomposed_layernorm_and_gelu_run_as_one_node_each)
{
    static const op_count want[] = {
        {"LayerNormalization", 1}, {"Gelu", 1}, {"ReduceMean", 0}, {"Erf", 0}};
    check_ops(CASES "/layernorm_gelu", want, 4);
}

Test(gpu_encoder_ops, a_reduce_mean_outside_a_layernorm_runs_by_itself)
{
    static const op_count want[] = {{"ReduceMean", 1}, {"ReduceSum", 2}, {"ReduceMax", 1}};
    check_ops(CASES "/reduce", want, 3);
}

Test(gpu_encoder_ops, other_types_stay_refused_with_the_reason)
{
    rn_core *core = gpu_core();
    rn_model *model;
    /* Cast to f16 and to double: types the GPU does not hold. */
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_cast_FLOAT_to_DOUBLE/model.onnx", &model),
                 RN_OK, "%s", rn_last_error());
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", NULL, 0, &cm), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "f32, i64, i32 and bool tensors only") != NULL, "message: %s",
              rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}
