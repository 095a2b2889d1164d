/* Small ONNX models for the HETERO and AUTO tests, built with protobuf-c:
 * unary and binary ops over f32 [1, N] values, named so that a test can say
 * which node runs where. */
#ifndef RUNNEL_TESTS_HETERO_MODELS_H
#define RUNNEL_TESTS_HETERO_MODELS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define SLOWDEV_SO "tests/slowdev/libslowdev.so"

/* A node: op, name, up to two inputs and one output (value names). */
typedef struct model_node {
    const char *op, *name, *in0, *in1, *out;
} model_node;

/* A model of `n` nodes over f32 [1, elems] values: graph input "x", graph
 * output `output`, and one initializer "c" (all 0.5) when with_constant. */
static inline rn_model *model_build(rn_core *core, const model_node *nodes, int n,
                                    const char *output, int64_t elems, bool with_constant)
{
    Onnx__NodeProto *np = calloc((size_t)n, sizeof *np);
    Onnx__NodeProto **npp = calloc((size_t)n, sizeof *npp);
    char *(*ins)[2] = calloc((size_t)n, sizeof *ins);
    char **outs = calloc((size_t)n, sizeof *outs);
    for (int i = 0; i < n; i++) {
        onnx__node_proto__init(&np[i]);
        np[i].op_type = (char *)nodes[i].op;
        np[i].name = (char *)nodes[i].name;
        ins[i][0] = (char *)nodes[i].in0;
        ins[i][1] = (char *)nodes[i].in1;
        np[i].n_input = nodes[i].in0 == NULL ? 0 : nodes[i].in1 != NULL ? 2 : 1;
        np[i].input = ins[i];
        outs[i] = (char *)nodes[i].out;
        np[i].n_output = 1;
        np[i].output = &outs[i];
        npp[i] = &np[i];
    }
    Onnx__TensorShapeProto__Dimension dims[2], *dimp[2];
    int64_t d[2] = {1, elems};
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&dims[i]);
        dims[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[i].dim_value = d[i];
        dimp[i] = &dims[i];
    }
    Onnx__TensorShapeProto sh;
    onnx__tensor_shape_proto__init(&sh);
    sh.n_dim = 2;
    sh.dim = dimp;
    Onnx__TypeProto__Tensor tt;
    onnx__type_proto__tensor__init(&tt);
    tt.has_elem_type = 1;
    tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt.shape = &sh;
    Onnx__TypeProto tp;
    onnx__type_proto__init(&tp);
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp.tensor_type = &tt;
    Onnx__ValueInfoProto in, out, *inp = &in, *outp = &out;
    onnx__value_info_proto__init(&in);
    in.name = "x";
    in.type = &tp;
    onnx__value_info_proto__init(&out);
    out.name = (char *)output;
    out.type = &tp;
    float *cvals = malloc((size_t)elems * sizeof *cvals);
    for (int64_t i = 0; i < elems; i++)
        cvals[i] = 0.5f;
    Onnx__TensorProto c, *cp = &c;
    onnx__tensor_proto__init(&c);
    c.name = "c";
    c.has_data_type = 1;
    c.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    c.n_dims = 2;
    c.dims = d;
    c.n_float_data = (size_t)elems;
    c.float_data = cvals;
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "hetero_test";
    g.n_node = (size_t)n, g.node = npp;
    g.n_input = 1, g.input = &inp;
    g.n_output = 1, g.output = &outp;
    if (with_constant)
        g.n_initializer = 1, g.initializer = &cp;
    Onnx__OperatorSetIdProto opset, *opsetp = &opset;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 17;
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.graph = &g;
    m.n_opset_import = 1;
    m.opset_import = &opsetp;
    size_t size = onnx__model_proto__get_packed_size(&m);
    void *buf = malloc(size);
    onnx__model_proto__pack(&m, buf);
    rn_model *model;
    cr_assert_eq(rn_core_read_model_from_memory(core, buf, size, NULL, &model), RN_OK, "%s",
                 rn_last_error());
    free(buf);
    free(cvals);
    free(np);
    free(npp);
    free(ins);
    free(outs);
    return model;
}

/* x → n0 Relu → n1 Neg → n2 Abs → y: with SLOWDEV refusing Neg, the
 * middle op only REF supports. */
static inline rn_model *model_chain3(rn_core *core, int64_t elems)
{
    static const model_node nodes[] = {
        {"Relu", "n0", "x", NULL, "a"},
        {"Neg", "n1", "a", NULL, "b"},
        {"Abs", "n2", "b", NULL, "y"},
    };
    return model_build(core, nodes, 3, "y", elems, false);
}

/* A compiled model's property, read into a static buffer. */
static inline const char *compiled_prop(rn_compiled_model *c, const char *key)
{
    static char buf[256];
    cr_assert_eq(rn_compiled_model_get_property(c, key, buf, sizeof buf), RN_OK, "%s: %s", key,
                 rn_last_error());
    return buf;
}

/* The device whose prefix the runtime model's row for node `name` has. */
static inline void expect_device(rn_compiled_model *c, const char *name, const char *device)
{
    const rn_runtime_node *nodes;
    size_t n;
    cr_assert_eq(rn_compiled_model_runtime_model(c, &nodes, &n), RN_OK, "%s", rn_last_error());
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s:", device);
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].original_names, name) == 0) {
            cr_assert(strncmp(nodes[i].impl_type, prefix, strlen(prefix)) == 0,
                      "node %s ran as '%s', expected on %s", name, nodes[i].impl_type, device);
            return;
        }
    cr_assert_fail("node %s is not in the runtime model", name);
}

/* A core with SLOWDEV loaded (short stages unless us > 0) refusing `ops`. */
static inline rn_core *slowdev_core(const char *refused, unsigned us)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_load_plugin(core, NULL, SLOWDEV_SO), RN_OK, "%s", rn_last_error());
    char cost[16];
    snprintf(cost, sizeof cost, "%u", us > 0 ? us : 50);
    rn_property p[] = {{"SLOWDEV_UPLOAD_US", cost},
                       {"SLOWDEV_EXECUTE_US", cost},
                       {"SLOWDEV_WAIT_US", "0"},
                       {"SLOWDEV_DOWNLOAD_US", cost},
                       {"SLOWDEV_UNSUPPORTED_OPS", refused}};
    cr_assert_eq(rn_core_set_property(core, "SLOWDEV", p, 5), RN_OK, "%s", rn_last_error());
    return core;
}

/* Runs `compiled` on x[i] = i - elems/2 and copies the output into out. */
static inline void run_once(rn_compiled_model *compiled, float *out, int64_t elems)
{
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &r), RN_OK, "%s",
                 rn_last_error());
    rn_tensor *x, *y;
    cr_assert_eq(rn_infer_request_get_input_tensor(r, 0, &x), RN_OK);
    float *xd = rn_tensor_data(x);
    for (int64_t i = 0; i < elems; i++)
        xd[i] = (float)(i - elems / 2) * 0.25f;
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &y), RN_OK, "%s", rn_last_error());
    memcpy(out, rn_tensor_data(y), (size_t)elems * sizeof *out);
    rn_infer_request_free(r);
}

/* The same model's output on REF (the oracle). */
static inline void expect_like_ref(rn_core *core, rn_model *model, const float *got, int64_t elems)
{
    rn_compiled_model *ref;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &ref), RN_OK, "%s",
                 rn_last_error());
    float *want = malloc((size_t)elems * sizeof *want);
    run_once(ref, want, elems);
    for (int64_t i = 0; i < elems; i++)
        cr_assert_float_eq(got[i], want[i], 1e-6, "element %lld", (long long)i);
    free(want);
    rn_compiled_model_free(ref);
}

#endif /* RUNNEL_TESTS_HETERO_MODELS_H */
