/* int8 on the CPU device through the public API: a QDQ model as ONNX
 * Runtime's quantize_static writes it (built here with protobuf-c: u8
 * activations, i8 weights with a scale per output channel, i32 biases, a
 * residual Add + Relu, MaxPool and a Gemm) compiles to oneDNN int8
 * primitives (no REF kernel for the convolutions, the Gemm and the pool),
 * and its outputs match REF's.
 *
 * Tolerance: both compute the same quantized graph, but oneDNN rescales the
 * s32 accumulator by x_scale * w_scale / y_scale (one f32 product) while REF
 * divides an f32 convolution of dequantized values by y_scale; a value
 * within f32 rounding of a half step rounds the other way, so a quantized
 * tensor may differ by one step at a few elements, and that difference
 * moves the next layer's values by a fraction of a step. The logits (the
 * dequantized u8 output of the Gemm) must be within 2 steps of REF's, most
 * of them equal, and the top-1 class the same. The weights use 7 bits
 * (|w| <= 63): without VNNI (AVX2, AVX-512 before VNNI) oneDNN multiplies
 * u8 by s8 with vpmaddubsw, whose pair sums saturate at 32767 for 8-bit
 * weights (the reason ONNX Runtime's quantizer has reduce_range); with 7
 * bits they cannot, so the comparison holds on every ISA. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* ---- a tiny ONNX writer (everything lives until the model is packed) ---- */

#define MAX_NODES 48
#define MAX_INITS 64

typedef struct builder {
    Onnx__NodeProto nodes[MAX_NODES], *nodep[MAX_NODES];
    Onnx__AttributeProto attrs[MAX_NODES][2], *attrp[MAX_NODES][2];
    char *io[MAX_NODES][2][3];
    int n_nodes;
    Onnx__TensorProto inits[MAX_INITS], *initp[MAX_INITS];
    int64_t init_dims[MAX_INITS][4];
    int n_inits;
    char names[MAX_NODES + MAX_INITS][32];
    int n_names;
    unsigned seed;
} builder;

static builder b;

static char *fresh(const char *prefix)
{
    char *s = b.names[b.n_names++];
    snprintf(s, 32, "%s%d", prefix, b.n_names);
    return s;
}

static int next_int(int lo, int hi)
{
    b.seed = b.seed * 1103515245u + 12345u;
    return lo + (int)((b.seed >> 8) % (unsigned)(hi - lo + 1));
}

/* An initializer (data copied into malloc'ed memory, freed by the test). */
static char *init(int type, int rank, const int64_t *dims, const void *data, size_t elem)
{
    Onnx__TensorProto *t = &b.inits[b.n_inits];
    onnx__tensor_proto__init(t);
    t->name = fresh("c");
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)rank;
    for (int d = 0; d < rank; d++)
        b.init_dims[b.n_inits][d] = dims[d];
    t->dims = b.init_dims[b.n_inits];
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    t->has_raw_data = 1;
    t->raw_data.len = n * elem;
    t->raw_data.data = malloc(n * elem);
    memcpy(t->raw_data.data, data, n * elem);
    b.initp[b.n_inits] = t;
    b.n_inits++;
    return t->name;
}

static char *scalar_f32(float v)
{
    return init(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &v, 4);
}

static char *scalar_u8(uint8_t v)
{
    return init(ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, NULL, &v, 1);
}

/* A node of up to 3 inputs and one output; returns the output's name. */
static char *node(const char *op, int n_in, char *a, char *c, char *d)
{
    int k = b.n_nodes++;
    Onnx__NodeProto *n = &b.nodes[k];
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = fresh("n");
    b.io[k][0][0] = a, b.io[k][0][1] = c, b.io[k][0][2] = d;
    b.io[k][1][0] = fresh("v");
    n->n_input = (size_t)n_in;
    n->input = b.io[k][0];
    n->n_output = 1;
    n->output = b.io[k][1];
    b.nodep[k] = n;
    return b.io[k][1][0];
}

static void attr_ints(const char *name, int n, const int64_t *v)
{
    Onnx__NodeProto *nd = &b.nodes[b.n_nodes - 1];
    Onnx__AttributeProto *a = &b.attrs[b.n_nodes - 1][nd->n_attribute];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    if (n < 0) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = v[0];
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->n_ints = (size_t)n;
        a->ints = (int64_t *)v;
    }
    b.attrp[b.n_nodes - 1][nd->n_attribute++] = a;
    nd->attribute = b.attrp[b.n_nodes - 1];
}

/* Q then DQ with scale s and zero point z: what quantize_static puts on
 * every activation. Returns the DQ's output; *q the Q's. */
static char *qdq(char *x, float s, uint8_t z, char **q)
{
    char *sv = scalar_f32(s), *zv = scalar_u8(z);
    char *qv = node("QuantizeLinear", 3, x, sv, zv);
    if (q != NULL)
        *q = qv;
    return node("DequantizeLinear", 3, qv, sv, zv);
}

/* DequantizeLinear of 7-bit i8 weights [dims] with a scale per output
 * channel (along `axis`). */
static char *weights(int rank, const int64_t *dims, int64_t axis, float s0, float **scales)
{
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    int8_t *w = malloc(n), z[64] = {0};
    static float s[4][64];
    static int k;
    float *sc = s[k++ % 4];
    for (size_t i = 0; i < n; i++)
        w[i] = (int8_t)next_int(-63, 63);
    for (int64_t c = 0; c < dims[axis]; c++)
        sc[c] = s0 * (1.0f + 0.1f * (float)(c % 7));
    char *wv = init(ONNX__TENSOR_PROTO__DATA_TYPE__INT8, rank, dims, w, 1);
    char *sv = init(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &dims[axis], sc, 4);
    char *zv = init(ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 1, &dims[axis], z, 1);
    free(w);
    *scales = sc;
    char *out = node("DequantizeLinear", 3, wv, sv, zv);
    attr_ints("axis", -1, &axis);
    return out;
}

/* DequantizeLinear of an i32 bias with scale x_scale * w_scale[c]. */
static char *bias(int64_t m, float xs, const float *ws)
{
    int32_t q[64], z[64] = {0};
    float s[64];
    for (int64_t c = 0; c < m; c++) {
        q[c] = next_int(-3000, 3000);
        s[c] = xs * ws[c];
    }
    char *qv = init(ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, &m, q, 4);
    char *sv = init(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &m, s, 4);
    char *zv = init(ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, &m, z, 4);
    char *out = node("DequantizeLinear", 3, qv, sv, zv);
    int64_t axis = 0;
    attr_ints("axis", -1, &axis);
    return out;
}

static Onnx__ValueInfoProto *f32_info(const char *name, int rank, const int64_t *d)
{
    static Onnx__ValueInfoProto vi[2];
    static Onnx__TypeProto tp[2];
    static Onnx__TypeProto__Tensor tt[2];
    static Onnx__TensorShapeProto sh[2];
    static Onnx__TensorShapeProto__Dimension dims[2][4], *dimp[2][4];
    static int n;
    int k = n++ % 2;
    onnx__value_info_proto__init(&vi[k]);
    onnx__type_proto__init(&tp[k]);
    onnx__type_proto__tensor__init(&tt[k]);
    onnx__tensor_shape_proto__init(&sh[k]);
    for (int i = 0; i < rank; i++) {
        onnx__tensor_shape_proto__dimension__init(&dims[k][i]);
        dims[k][i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[k][i].dim_value = d[i];
        dimp[k][i] = &dims[k][i];
    }
    sh[k].n_dim = (size_t)rank;
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

#define C       16 /* channels */
#define H       14
#define CLASSES 10
static const float logit_scale = 0.3f;

static void *pack(const char *name, Onnx__ValueInfoProto *input, Onnx__ValueInfoProto *output,
                  size_t *size);

/* x [1, C, H, H] -> Q/DQ (zero point 50) -> Conv 3x3 (2C) -> Q/DQ -> Conv 1x1 (C) -> Q/DQ
 * (mid, zero point 128) -> Add(., x's DQ) -> Relu -> Q/DQ -> MaxPool 2x2 ->
 * Q/DQ -> Flatten -> Q/DQ -> Gemm (CLASSES) -> Q/DQ: the logits. */
static void *build_model(size_t *size)
{
    memset(&b, 0, sizeof b);
    b.seed = 5;
    float *ws1, *ws2, *ws3;
    const float xs = 0.02f, s1 = 0.05f, s2 = 0.06f;
    char *xq;
    char *xd = qdq("x", xs, 50, &xq); /* x in [-1, 4): zero point 50 */
    const int64_t w1[4] = {2 * C, C, 3, 3}, w2[4] = {C, 2 * C, 1, 1}, pads[4] = {1, 1, 1, 1};
    char *w1v = weights(4, w1, 0, 0.004f, &ws1);
    char *c1 = node("Conv", 3, xd, w1v, bias(2 * C, xs, ws1));
    attr_ints("pads", 4, pads);
    char *y1 = qdq(c1, s1, 0, NULL);
    char *w2v = weights(4, w2, 0, 0.003f, &ws2);
    char *c2 = node("Conv", 3, y1, w2v, bias(C, s1, ws2));
    char *mid = qdq(c2, 0.04f, 128, NULL);
    char *sum = node("Add", 2, mid, xd, NULL);
    char *y2q;
    char *y2 = qdq(node("Relu", 1, sum, NULL, NULL), s2, 0, &y2q);
    char *pool = node("MaxPool", 1, y2, NULL, NULL);
    const int64_t k2[2] = {2, 2};
    attr_ints("kernel_shape", 2, k2);
    attr_ints("strides", 2, k2);
    char *pd = qdq(pool, s2, 0, NULL);
    char *flat = qdq(node("Flatten", 1, pd, NULL, NULL), s2, 0, NULL);
    const int64_t w3[2] = {CLASSES, C * (H / 2) * (H / 2)};
    char *w3v = weights(2, w3, 0, 0.002f, &ws3);
    char *gemm = node("Gemm", 3, flat, w3v, bias(CLASSES, s2, ws3));
    int64_t one = 1;
    attr_ints("transB", -1, &one);
    char *logits = qdq(gemm, logit_scale, 128, NULL);
    const int64_t xdims[4] = {1, C, H, H}, ydims[2] = {1, CLASSES};
    return pack("qdq_block", f32_info("x", 4, xdims), f32_info(logits, 2, ydims), size);
}

/* The model of what the builder holds, packed. */
static void *pack(const char *name, Onnx__ValueInfoProto *input, Onnx__ValueInfoProto *output,
                  size_t *size)
{
    static Onnx__ValueInfoProto *in[1], *out[1];
    in[0] = input;
    out[0] = output;
    static Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = (char *)name;
    g.n_node = (size_t)b.n_nodes, g.node = b.nodep;
    g.n_initializer = (size_t)b.n_inits, g.initializer = b.initp;
    g.n_input = 1, g.input = in;
    g.n_output = 1, g.output = out;
    static Onnx__OperatorSetIdProto opset, *opsetp[1];
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    opsetp[0] = &opset;
    static Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 7;
    m.graph = &g;
    m.n_opset_import = 1;
    m.opset_import = opsetp;
    *size = onnx__model_proto__get_packed_size(&m);
    void *buf = malloc(*size);
    cr_assert_not_null(buf);
    onnx__model_proto__pack(&m, buf);
    for (int i = 0; i < b.n_inits; i++)
        free(b.inits[i].raw_data.data);
    return buf;
}

#define ROWS 6
#define K    32
#define N    12

/* x [2, ROWS, K] -> Q/DQ (zero point 10) -> MatMul (DQ of [K, N] weights,
 * a scale per column) -> Q/DQ (zero point 128): a transformer's projection. */
static void *build_matmul_model(size_t *size)
{
    memset(&b, 0, sizeof b);
    b.seed = 9;
    float *ws;
    const int64_t wdims[2] = {K, N}, xdims[3] = {2, ROWS, K}, ydims[3] = {2, ROWS, N};
    char *xd = qdq("x", 0.02f, 10, NULL);
    char *mm = node("MatMul", 2, xd, weights(2, wdims, 1, 0.01f, &ws), NULL);
    char *y = qdq(mm, 0.05f, 128, NULL);
    return pack("qdq_matmul", f32_info("x", 3, xdims), f32_info(y, 3, ydims), size);
}

/* ---- running ---- */

/* Runs a compiled model once on a deterministic input; a malloc'ed copy of
 * its output (count values). */
static float *infer(rn_compiled_model *cm, size_t count)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    rn_tensor *in;
    OK(rn_infer_request_get_input_tensor(r, 0, &in));
    float *x = rn_tensor_data(in);
    for (size_t i = 0; i < rn_tensor_element_count(in); i++)
        x[i] = (float)((i * 7919u) % 1000u) / 200.0f - 1.0f; /* [-1, 4) */
    OK(rn_infer_request_infer(r));
    rn_tensor *out;
    OK(rn_infer_request_get_output_tensor(r, 0, &out));
    cr_assert_eq(rn_tensor_element_count(out), count);
    float *copy = malloc(count * sizeof *copy);
    memcpy(copy, rn_tensor_data(out), count * sizeof *copy);
    rn_infer_request_free(r);
    return copy;
}

static float *run(rn_core *core, rn_model *model, const char *device, rn_compiled_model **keep,
                  size_t count)
{
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, device, p, 1, &cm));
    float *y = infer(cm, count);
    if (keep != NULL)
        *keep = cm;
    else
        rn_compiled_model_free(cm);
    return y;
}

/* Nodes of a type in the runtime model; with `ref`, only those running a
 * REF kernel. */
static int count_type(rn_compiled_model *cm, const char *type, bool ref)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int count = 0;
    for (size_t i = 0; i < n; i++)
        count += strcmp(nodes[i].layer_type, type) == 0 &&
                 (!ref || strcmp(nodes[i].impl_type, "ref") == 0);
    return count;
}

static int argmax(const float *v)
{
    int best = 0;
    for (int i = 1; i < CLASSES; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

Test(cpu_int8, qdq_model_runs_on_int8_primitives_and_matches_ref, .timeout = 120)
{
    size_t size;
    void *onnx = build_model(&size);
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model_from_memory(core, onnx, size, NULL, &model));
    free(onnx);
    rn_compiled_model *cm;
    float *cpu = run(core, model, "CPU", &cm, CLASSES);
    float *ref = run(core, model, "REF", NULL, CLASSES);
    cr_assert_eq(count_type(cm, "QLinearFusedConv", false), 2, "both convolutions fused");
    cr_assert_eq(count_type(cm, "QLinearFusedGemm", false), 1, "the Gemm fused");
    cr_assert_eq(count_type(cm, "MaxPool", false), 1);
    cr_assert_eq(count_type(cm, "QLinearFusedConv", true) +
                     count_type(cm, "QLinearFusedGemm", true) + count_type(cm, "MaxPool", true),
                 0, "a convolution, the Gemm or the MaxPool runs REF");
    cr_assert_eq(count_type(cm, "Conv", false) + count_type(cm, "Add", false), 0);
    int equal = 0;
    float spread = 0.0f;
    for (int i = 0; i < CLASSES; i++) {
        float d = fabsf(cpu[i] - ref[i]);
        cr_assert_leq(d, 2.0f * logit_scale + 1e-6f, "logit %d: CPU %g, REF %g", i, cpu[i], ref[i]);
        equal += d == 0.0f;
        spread = fmaxf(spread, fabsf(ref[i] - ref[0]));
    }
    cr_assert_gt(spread, 4.0f * logit_scale, "the logits are not all alike (a useful test)");
    cr_assert_geq(equal, CLASSES / 2, "%d of %d logits equal", equal, CLASSES);
    cr_assert_eq(argmax(cpu), argmax(ref), "top-1: CPU %d, REF %d", argmax(cpu), argmax(ref));
    free(cpu);
    free(ref);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* A batch of rows by int8 weights: a oneDNN int8 matmul with a scale per
 * column, within one output step of REF. Most outputs are equal; the input
 * here has many exact ties (x / x_scale = k / 4 - 50), and CPU's
 * QuantizeLinear multiplies by the reciprocal of the scale (a oneDNN
 * reorder) where ONNX divides, so a tie may round to the other side: one
 * input step, which moves an output by less than one of its steps. */
Test(cpu_int8, qdq_matmul_runs_on_an_int8_matmul, .timeout = 120)
{
    size_t size;
    void *onnx = build_matmul_model(&size);
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model_from_memory(core, onnx, size, NULL, &model));
    free(onnx);
    rn_compiled_model *cm;
    size_t n = 2 * ROWS * N;
    float *cpu = run(core, model, "CPU", &cm, n);
    float *ref = run(core, model, "REF", NULL, n);
    cr_assert_eq(count_type(cm, "QLinearFusedMatMul", false), 1, "the MatMul fused");
    cr_assert_eq(count_type(cm, "QLinearFusedMatMul", true), 0, "the MatMul runs REF");
    int equal = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_leq(fabsf(cpu[i] - ref[i]), 0.05f + 1e-6f, "element %zu: CPU %g, REF %g", i,
                      cpu[i], ref[i]);
        equal += cpu[i] == ref[i];
    }
    cr_assert_geq(equal, (int)n * 3 / 4, "%d of %zu equal", equal, n);
    free(cpu);
    free(ref);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* An exported int8 model imports with its fused ops on oneDNN and gives the
 * same bytes. */
Test(cpu_int8, export_and_import_keep_the_int8_primitives, .timeout = 120)
{
    size_t size;
    void *onnx = build_model(&size);
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model_from_memory(core, onnx, size, NULL, &model));
    free(onnx);
    rn_compiled_model *cm, *imported;
    float *before = run(core, model, "CPU", &cm, CLASSES);
    void *blob;
    size_t blob_size;
    OK(rn_compiled_model_export(cm, &blob, &blob_size));
    OK(rn_core_import_model(core, blob, blob_size, "CPU", NULL, 0, &imported));
    free(blob);
    cr_assert_eq(count_type(imported, "QLinearFusedConv", false), 2);
    cr_assert_eq(count_type(imported, "QLinearFusedConv", true), 0, "REF after import");
    float *after = infer(imported, CLASSES);
    cr_assert(memcmp(before, after, CLASSES * sizeof *after) == 0, "outputs differ after import");
    free(before);
    free(after);
    rn_compiled_model_free(imported);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* A stream of one thread (INFERENCE_NUM_THREADS 1: each THROUGHPUT stream
 * has one) runs its int8 primitives on that thread. oneDNN's int8
 * convolution fixes its thread count when its descriptor is created; the
 * descriptor was created under the compiling thread's OpenMP maximum (every
 * CPU), so each convolution forked a team of every CPU on every stream:
 * under THROUGHPUT, streams x CPUs busy threads on the CPUs. A new OpenMP
 * thread named as the process is the caller's libgomp pool (cpu_testing's
 * census): a sync run of a one-thread stream must start none. */
Test(cpu_int8, one_thread_streams_run_int8_primitives_on_one_thread, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    size_t size;
    void *onnx = build_model(&size);
    rn_core *core;
    rn_model *model;
    OK(rn_core_create(&core));
    OK(rn_core_read_model_from_memory(core, onnx, size, NULL, &model));
    free(onnx);
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", "f32"},
                       {"PERFORMANCE_HINT", "LATENCY"},
                       {"INFERENCE_NUM_THREADS", "1"}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, "CPU", p, 3, &cm));
    cr_assert_eq(count_type(cm, "QLinearFusedConv", true), 0, "a convolution runs REF");
    cpu_testing_census before = cpu_testing_take_census();
    for (int i = 0; i < 3; i++)
        free(infer(cm, CLASSES));
    cpu_testing_census after = cpu_testing_take_census();
    cr_expect_eq(after.caller_team, before.caller_team,
                 "a one-thread stream's int8 run started %d OpenMP thread(s)",
                 after.caller_team - before.caller_team);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}
