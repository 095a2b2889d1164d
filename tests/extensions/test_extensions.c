/* Extensions: a shared object adds a custom op (schema + REF kernel). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define EXTENSION "tests/extensions/libtwice.so"
#define SLOWDEV   "tests/slowdev/libslowdev.so"

/* Writes a model with one com.example.runnel.Twice node (x [2,3] f32 -> y) to
 * a temporary file; returns its path (static buffer). */
static const char *write_twice_model(void)
{
    static char path[256];
    const char *tmp = getenv("TEST_TMPDIR");
    snprintf(path, sizeof path, "%s/twice_XXXXXX", tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);

    Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
    Onnx__TensorShapeProto__Dimension d1 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
    d0.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d0.dim_value = 2;
    d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d1.dim_value = 3;
    Onnx__TensorShapeProto__Dimension *dims[] = {&d0, &d1};
    Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 2;
    shape.dim = dims;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1;
    tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt.shape = &shape;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type.tensor_type = &tt;
    Onnx__ValueInfoProto x = ONNX__VALUE_INFO_PROTO__INIT, y = ONNX__VALUE_INFO_PROTO__INIT;
    x.name = "x";
    x.type = &type;
    y.name = "y";
    y.type = &type;
    Onnx__ValueInfoProto *inputs[] = {&x}, *outputs[] = {&y};
    char *node_in[] = {"x"}, *node_out[] = {"y"};
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    node.name = "twice0";
    node.op_type = "Twice";
    node.domain = "com.example.runnel";
    node.n_input = 1;
    node.input = node_in;
    node.n_output = 1;
    node.output = node_out;
    Onnx__NodeProto *nodes[] = {&node};
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "twice_model";
    g.n_node = 1;
    g.node = nodes;
    g.n_input = 1;
    g.input = inputs;
    g.n_output = 1;
    g.output = outputs;
    Onnx__OperatorSetIdProto onnx_set = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    onnx_set.domain = "";
    onnx_set.has_version = 1;
    onnx_set.version = 17;
    Onnx__OperatorSetIdProto custom_set = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    custom_set.domain = "com.example.runnel";
    custom_set.has_version = 1;
    custom_set.version = 1;
    Onnx__OperatorSetIdProto *sets[] = {&onnx_set, &custom_set};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.graph = &g;
    m.n_opset_import = 2;
    m.opset_import = sets;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&m, buf);
    cr_assert_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    return path;
}

/* Criterion runs each test in its own process, so the extension starts out
 * unregistered in every test. */
Test(extensions, unknown_custom_op_is_refused_before_loading)
{
    rn_core *core;
    rn_core_create(&core);
    rn_model *m = NULL;
    cr_assert_eq(rn_core_read_model(core, write_twice_model(), &m), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "Twice") != NULL, "%s", rn_last_error());
    cr_assert_null(m);
    rn_core_free(core);
}

Test(extensions, custom_op_runs_on_ref_after_loading)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_add_extension(core, EXTENSION), RN_OK, "%s", rn_last_error());
    rn_model *m;
    cr_assert_eq(rn_core_read_model(core, write_twice_model(), &m), RN_OK, "%s", rn_last_error());
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, m, "REF", NULL, 0, &cm), RN_OK, "%s", rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    rn_tensor *x, *y;
    rn_infer_request_get_input_tensor(r, 0, &x);
    float *xd = rn_tensor_data(x);
    for (int i = 0; i < 6; i++)
        xd[i] = (float)i - 2.5f;
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_infer_request_get_output_tensor(r, 0, &y);
    const float *yd = rn_tensor_data(y);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(yd[i], 2.0f * ((float)i - 2.5f), 1e-6);
    const rn_runtime_node *nodes;
    size_t n;
    cr_assert_eq(rn_compiled_model_runtime_model(cm, &nodes, &n), RN_OK);
    cr_assert_str_eq(nodes[0].impl_type, "extension");
    /* Loading it again (another core, or twice) is harmless. */
    cr_assert_eq(rn_core_add_extension(core, EXTENSION), RN_OK, "%s", rn_last_error());
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}

/* SLOWDEV is a dlopen'ed plugin that links libruntime.so: the schema the
 * extension registers is in the one op table its query and plan read, so
 * HETERO places the custom op on it and it runs there. */
Test(extensions, custom_op_runs_inside_hetero_on_a_dlopened_device)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_load_plugin(core, NULL, SLOWDEV), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_add_extension(core, EXTENSION), RN_OK, "%s", rn_last_error());
    rn_model *m;
    cr_assert_eq(rn_core_read_model(core, write_twice_model(), &m), RN_OK, "%s", rn_last_error());
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, m, "HETERO:SLOWDEV,REF", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    char devices[64];
    cr_assert_eq(rn_compiled_model_get_property(cm, "EXECUTION_DEVICES", devices, sizeof devices),
                 RN_OK, "%s", rn_last_error());
    cr_expect_str_eq(devices, "SLOWDEV");
    const rn_runtime_node *nodes;
    size_t n;
    cr_assert_eq(rn_compiled_model_runtime_model(cm, &nodes, &n), RN_OK);
    bool on_slowdev = false;
    for (size_t i = 0; i < n; i++)
        on_slowdev = on_slowdev || (strcmp(nodes[i].original_names, "twice0") == 0 &&
                                    strncmp(nodes[i].impl_type, "SLOWDEV:", 8) == 0);
    cr_expect(on_slowdev, "twice0 does not run on SLOWDEV");
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    rn_tensor *x, *y;
    rn_infer_request_get_input_tensor(r, 0, &x);
    float *xd = rn_tensor_data(x);
    for (int i = 0; i < 6; i++)
        xd[i] = (float)i * 0.75f - 1.0f;
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_infer_request_get_output_tensor(r, 0, &y);
    const float *yd = rn_tensor_data(y);
    for (int i = 0; i < 6; i++)
        cr_expect_float_eq(yd[i], 2.0f * ((float)i * 0.75f - 1.0f), 1e-6, "y[%d] = %g", i, yd[i]);
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}

Test(extensions, bad_libraries_are_named)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_add_extension(core, "tests/extensions/libnothing.so"), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "libnothing.so") != NULL);
    cr_assert_eq(rn_core_add_extension(core, "tests/plugins/libtestdev.so"), RN_NOT_FOUND,
                 "a plugin is not an extension");
    cr_assert(strstr(rn_last_error(), "rn_extension_entry") != NULL, "%s", rn_last_error());
    rn_core_free(core);
}
