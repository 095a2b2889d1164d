/* Reading a model from memory through the public API
 * (rn_core_read_model_from_memory): external data found in the folder the
 * caller names, in several files and at offsets, and the warnings a read
 * leaves (rn_model_warning). The models are built here with protobuf-c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

static Onnx__ValueInfoProto *f32_info(const char *name, int64_t d0, int64_t d1)
{
    static Onnx__ValueInfoProto vi[8];
    static Onnx__TypeProto tp[8];
    static Onnx__TypeProto__Tensor tt[8];
    static Onnx__TensorShapeProto sh[8];
    static Onnx__TensorShapeProto__Dimension dims[8][2];
    static Onnx__TensorShapeProto__Dimension *dimp[8][2];
    static int n;
    int k = n++;
    onnx__value_info_proto__init(&vi[k]);
    onnx__type_proto__init(&tp[k]);
    onnx__type_proto__tensor__init(&tt[k]);
    onnx__tensor_shape_proto__init(&sh[k]);
    int64_t d[2] = {d0, d1};
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&dims[k][i]);
        dims[k][i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[k][i].dim_value = d[i];
        dimp[k][i] = &dims[k][i];
    }
    sh[k].n_dim = 2;
    sh[k].dim = dimp[k];
    tt[k].has_elem_type = 1;
    tt[k].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt[k].shape = &sh[k];
    tp[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp[k].tensor_type = &tt[k];
    vi[k].name = (char *)name;
    vi[k].type = &tp[k];
    return &vi[k];
}

/* y = (x + a) * b over f32 [2,3]; a lives in "w/ab.bin" at byte 4, b in
 * "b.bin" at byte 0; the output is declared [3,2] (wrong: a warning). */
static void *build_model(size_t *size)
{
    static char *add_in[] = {"x", "a"}, *add_out[] = {"s"}, *mul_in[] = {"s", "b"},
                *mul_out[] = {"y"};
    static Onnx__NodeProto nodes[2], *nodep[2];
    onnx__node_proto__init(&nodes[0]);
    nodes[0].op_type = "Add";
    nodes[0].n_input = 2, nodes[0].input = add_in, nodes[0].n_output = 1, nodes[0].output = add_out;
    onnx__node_proto__init(&nodes[1]);
    nodes[1].op_type = "Mul";
    nodes[1].n_input = 2, nodes[1].input = mul_in, nodes[1].n_output = 1, nodes[1].output = mul_out;
    nodep[0] = &nodes[0], nodep[1] = &nodes[1];
    static Onnx__TensorProto w[2], *wp[2];
    static Onnx__StringStringEntryProto kv[2][3], *kvp[2][3];
    static int64_t wdims[2] = {2, 3};
    const char *where[2][3] = {{"w/ab.bin", "4", "24"}, {"b.bin", "0", "24"}};
    const char *keys[3] = {"location", "offset", "length"};
    for (int i = 0; i < 2; i++) {
        onnx__tensor_proto__init(&w[i]);
        w[i].name = i == 0 ? "a" : "b";
        w[i].has_data_type = 1;
        w[i].data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        w[i].n_dims = 2;
        w[i].dims = wdims;
        w[i].has_data_location = 1;
        w[i].data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        for (int k = 0; k < 3; k++) {
            onnx__string_string_entry_proto__init(&kv[i][k]);
            kv[i][k].key = (char *)keys[k];
            kv[i][k].value = (char *)where[i][k];
            kvp[i][k] = &kv[i][k];
        }
        w[i].n_external_data = 3;
        w[i].external_data = kvp[i];
        wp[i] = &w[i];
    }
    static Onnx__ValueInfoProto *in[1], *out[1];
    in[0] = f32_info("x", 2, 3);
    out[0] = f32_info("y", 3, 2);
    static Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "from_memory";
    g.n_node = 2, g.node = nodep;
    g.n_initializer = 2, g.initializer = wp;
    g.n_input = 1, g.input = in;
    g.n_output = 1, g.output = out;
    static Onnx__OperatorSetIdProto opset, *opsetp[1];
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 17;
    opsetp[0] = &opset;
    static Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.graph = &g;
    m.n_opset_import = 1;
    m.opset_import = opsetp;
    *size = onnx__model_proto__get_packed_size(&m);
    void *buf = malloc(*size);
    cr_assert_not_null(buf);
    onnx__model_proto__pack(&m, buf);
    return buf;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A folder holding w/ab.bin (4 junk bytes, then a = 1..6) and b.bin (b = 2). */
static const char *weights_dir(void)
{
    static char dir[1024];
    const char *base = getenv("TEST_TMPDIR");
    snprintf(dir, sizeof dir, "%s/read_memory_XXXXXX", base != NULL ? base : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    char path[1200];
    snprintf(path, sizeof path, "%s/w", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    float ab[7] = {-1, 1, 2, 3, 4, 5, 6}, b[6] = {2, 2, 2, 2, 2, 2};
    snprintf(path, sizeof path, "%s/w/ab.bin", dir);
    write_file(path, ab, sizeof ab);
    snprintf(path, sizeof path, "%s/b.bin", dir);
    write_file(path, b, sizeof b);
    return dir;
}

Test(read_memory, external_data_from_the_folder_given)
{
    size_t size;
    void *buf = build_model(&size);
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    rn_model *model = NULL;
    cr_assert_eq(rn_core_read_model_from_memory(core, buf, size, weights_dir(), &model), RN_OK,
                 "%s", rn_last_error());
    free(buf); /* the model keeps nothing of the bytes */
    /* the declared output [3,2] lost to the inferred [2,3], with a warning */
    cr_assert_eq(rn_model_warning_count(model), 1);
    cr_assert_not_null(strstr(rn_model_warning(model, 0), "'y'"), "%s", rn_model_warning(model, 0));
    cr_assert_null(rn_model_warning(model, 1));
    rn_port port;
    cr_assert_eq(rn_model_output(model, 0, &port), RN_OK);
    cr_assert_eq(port.shape.dims[0], 2);
    cr_assert_eq(port.shape.dims[1], 3);
    rn_compiled_model *compiled;
    rn_infer_request *request;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &compiled), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &request), RN_OK);
    rn_tensor *x, *y;
    cr_assert_eq(rn_infer_request_get_input_tensor(request, 0, &x), RN_OK);
    float *xd = rn_tensor_data(x);
    for (int i = 0; i < 6; i++)
        xd[i] = (float)(10 * i);
    cr_assert_eq(rn_infer_request_infer(request), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_output_tensor(request, 0, &y), RN_OK);
    const float *yd = rn_tensor_data(y);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(yd[i], 2.0f * (float)(10 * i + i + 1), 1e-6);
    rn_infer_request_free(request);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
}

Test(read_memory, external_data_without_a_folder_is_refused)
{
    size_t size;
    void *buf = build_model(&size);
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    rn_model *model = (rn_model *)&size;
    rn_status st = rn_core_read_model_from_memory(core, buf, size, NULL, &model);
    cr_assert_neq(st, RN_OK);
    cr_assert_eq(model, (rn_model *)&size, "out written on failure");
    cr_assert_not_null(strstr(rn_last_error(), "in memory"), "%s", rn_last_error());
    cr_assert_not_null(strstr(rn_last_error(), "'a'"), "%s", rn_last_error());
    /* a folder without the files: an I/O error naming the location */
    st = rn_core_read_model_from_memory(core, buf, size, "/nonexistent", &model);
    cr_assert_neq(st, RN_OK);
    cr_assert_not_null(strstr(rn_last_error(), "ab.bin"), "%s", rn_last_error());
    cr_assert_eq(rn_core_read_model_from_memory(core, NULL, 4, NULL, &model), RN_INVALID_ARG);
    free(buf);
    rn_core_free(core);
}
