/* A transformer encoder block (embedding Gather, multi-head attention with
 * Reshape/Transpose/batched MatMul/Softmax, residual Adds, LayerNorm and
 * Gelu as exporters decompose them, a feed-forward pair of MatMuls) lowers
 * entirely to NVIDIA's steps, with the LayerNorm and Gelu patterns fused
 * back into one step each. Needs no GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"
#include "tests/nvidia/same_program.h"
#include "tests/transforms/transforms_test_util.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

enum { SEQ = 8, HID = 16, HEADS = 2, DH = 8, FFN = 32, VOCAB = 50 };

static graph_value *weights(graph *g, const char *name, int64_t rows, int64_t cols)
{
    size_t n = (size_t)(rows * cols);
    float *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = (float)((i * 7919u + strlen(name)) % 97u) / 97.0f - 0.5f;
    int64_t dims[2] = {rows, cols};
    graph_value *v = tt_const_f32(g, name, cols > 0 && rows > 0 ? 2 : 1, dims, w);
    free(w);
    return v;
}

static graph_value *bias(graph *g, const char *name, int64_t n)
{
    float *b = calloc((size_t)n, sizeof *b);
    for (int64_t i = 0; i < n; i++)
        b[i] = 0.01f * (float)i;
    graph_value *v = tt_const_f32(g, name, 1, &n, b);
    free(b);
    return v;
}

/* x @ W + b, named `name`. */
static graph_value *linear(graph *g, const char *name, graph_value *x, int64_t in, int64_t out)
{
    char w[64], b[64], mm[64];
    snprintf(w, sizeof w, "%s.W", name);
    snprintf(b, sizeof b, "%s.b", name);
    snprintf(mm, sizeof mm, "%s.mm", name);
    graph_value *y = tt_binary(g, mm, "MatMul", x, weights(g, w, in, out));
    return tt_binary(g, name, "Add", y, bias(g, b, out));
}

static graph_value *reshape(graph *g, const char *name, graph_value *x, int rank,
                            const int64_t *shape)
{
    char s[64];
    snprintf(s, sizeof s, "%s.shape", name);
    int64_t r = rank;
    graph_value *in[2] = {x, tt_const_i64(g, s, 1, &r, shape)};
    return tt_op(g, name, "Reshape", 2, in);
}

static graph_value *transpose(graph *g, const char *name, graph_value *x, const int64_t *perm)
{
    graph_value *y = tt_unary(g, name, "Transpose", x);
    tt_attr_ints(g, name, "perm", 4, perm);
    return y;
}

static graph_value *layernorm(graph *g, const char *p, graph_value *x)
{
    const int64_t last[1] = {-1};
    float two = 2.0f, eps = 1e-5f;
    char n[10][64];
    const char *parts[] = {"mean", "sub", "pow", "var", "add_eps",
                           "sqrt", "div", "mul", "add", "two"};
    for (int i = 0; i < 10; i++)
        snprintf(n[i], sizeof n[i], "%s.%s", p, parts[i]);
    graph_value *mean = tt_unary(g, n[0], "ReduceMean", x);
    tt_attr_ints(g, n[0], "axes", 1, last);
    graph_value *c = tt_binary(g, n[1], "Sub", x, mean);
    graph_value *sq = tt_binary(g, n[2], "Pow", c, tt_const_f32(g, n[9], 0, NULL, &two));
    graph_value *var = tt_unary(g, n[3], "ReduceMean", sq);
    tt_attr_ints(g, n[3], "axes", 1, last);
    char e[64], gm[64], bt[64];
    snprintf(e, sizeof e, "%s.eps", p);
    snprintf(gm, sizeof gm, "%s.gamma", p);
    snprintf(bt, sizeof bt, "%s.beta", p);
    graph_value *ve = tt_binary(g, n[4], "Add", var, tt_const_f32(g, e, 0, NULL, &eps));
    graph_value *sd = tt_unary(g, n[5], "Sqrt", ve);
    graph_value *nrm = tt_binary(g, n[6], "Div", c, sd);
    graph_value *sc = tt_binary(g, n[7], "Mul", nrm, bias(g, gm, HID));
    return tt_binary(g, n[8], "Add", sc, bias(g, bt, HID));
}

static graph_value *gelu(graph *g, graph_value *x)
{
    float s2 = 1.4142135381698608f, one = 1.0f, half = 0.5f;
    graph_value *d = tt_binary(g, "gelu.div", "Div", x, tt_const_f32(g, "gelu.s2", 0, NULL, &s2));
    graph_value *e = tt_unary(g, "gelu.erf", "Erf", d);
    graph_value *a = tt_binary(g, "gelu.add", "Add", e, tt_const_f32(g, "gelu.one", 0, NULL, &one));
    graph_value *m = tt_binary(g, "gelu.mul", "Mul", x, a);
    return tt_binary(g, "gelu.half", "Mul", m, tt_const_f32(g, "gelu.h", 0, NULL, &half));
}

static graph *encoder(void)
{
    graph *g = tt_graph();
    const int64_t ids_dims[2] = {1, SEQ};
    graph_value *ids = tt_input(g, "ids", RN_I64, 2, ids_dims);
    graph_value *emb_in[2] = {weights(g, "embedding", VOCAB, HID), ids};
    graph_value *x = tt_op(g, "embed", "Gather", 2, emb_in); /* [1, SEQ, HID] */
    const int64_t heads[4] = {1, SEQ, HEADS, DH}, flat[3] = {1, SEQ, HID};
    const int64_t bhsd[4] = {0, 2, 1, 3}, bhds[4] = {0, 2, 3, 1};
    graph_value *q =
        transpose(g, "q.t", reshape(g, "q.r", linear(g, "q", x, HID, HID), 4, heads), bhsd);
    graph_value *k =
        transpose(g, "k.t", reshape(g, "k.r", linear(g, "k", x, HID, HID), 4, heads), bhds);
    graph_value *v =
        transpose(g, "v.t", reshape(g, "v.r", linear(g, "v", x, HID, HID), 4, heads), bhsd);
    float scale = sqrtf((float)DH);
    graph_value *s = tt_binary(g, "scores", "MatMul", q, k);
    s = tt_binary(g, "scaled", "Div", s, tt_const_f32(g, "scale", 0, NULL, &scale));
    graph_value *p = tt_unary(g, "probs", "Softmax", s);
    tt_attr_int(g, "probs", "axis", -1);
    graph_value *ctx = tt_binary(g, "context", "MatMul", p, v);
    ctx = reshape(g, "context.r", transpose(g, "context.t", ctx, bhsd), 3, flat);
    graph_value *h =
        layernorm(g, "ln1", tt_binary(g, "res1", "Add", linear(g, "o", ctx, HID, HID), x));
    graph_value *f = linear(g, "ffn2", gelu(g, linear(g, "ffn1", h, HID, FFN)), FFN, HID);
    graph_value *y = layernorm(g, "ln2", tt_binary(g, "res2", "Add", f, h));
    tt_output(g, y);
    tt_finish(g);
    return g;
}

/* The encoder as NVIDIA compiles it with INFERENCE_PRECISION_HINT
 * `precision`: the model, its transformed graph (which the program's
 * constants and names point into) and the program. */
typedef struct lowered {
    graph *model, *g;
    nv_program *p;
} lowered;

static lowered lower_encoder(rn_element_type precision)
{
    lowered l = {.model = encoder()};
    plugin_properties props;
    plugin_properties_default(&props);
    props.inference_precision = precision;
    OK(nv_transform(l.model, tt_registry(), &props, &l.g));
    OK(nv_lower_graph(l.g, precision, &l.p));
    return l;
}

static void lowered_free(lowered *l)
{
    nv_program_free(l->p);
    graph_free(l->g);
    graph_free(l->model);
}

/* The head split of [B, S, H, D] read in place: the strides over (batch,
 * head, row, feature) of Q, K, V and of the output (the head merge a
 * view). */
static void assert_bshd_strides(const nv_step *a)
{
    const int64_t bshd[4] = {SEQ * HID, DH, HID, 1};
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(a->att.q_strides[d], bshd[d], "q stride %d", d);
        cr_assert_eq(a->att.k_strides[d], bshd[d], "k stride %d", d);
        cr_assert_eq(a->att.v_strides[d], bshd[d], "v stride %d", d);
        cr_assert_eq(a->att.o_strides[d], bshd[d], "output stride %d", d);
    }
    cr_assert(a->att_out_bshd);
}

/* The exporters' decomposition as it is (RUNNEL_NV_ATTENTION=unfused: the
 * attention's products, softmax and transposes stay steps). */
Test(nvidia_encoder, lowers_entirely_with_layernorm_and_gelu_fused)
{
    setenv("RUNNEL_NV_ATTENTION", "unfused", 1);
    lowered l = lower_encoder(RN_F32);
    const nv_program *p = l.p;
    cr_assert_eq(nv_program_count(p, NV_STEP_GATHER), 1);
    cr_assert_eq(nv_program_count(p, NV_STEP_GEMM), 8, "6 projections, QK^T and PV");
    cr_assert_eq(nv_program_count(p, NV_STEP_SOFTMAX), 1);
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 4);
    cr_assert_eq(nv_program_count(p, NV_STEP_LAYERNORM), 2, "both decompositions fused");
    cr_assert_eq(nv_program_count(p, NV_STEP_UNARY), 0, "the Gelu applied after its GEMM");
    cr_assert_eq(nv_program_count(p, NV_STEP_REDUCE_MEAN), 0);
    /* The attention's MatMuls are batched over the heads. */
    int batched = 0;
    for (int k = 0; k < p->n_steps; k++)
        if (p->steps[k].kind == NV_STEP_GEMM && p->steps[k].batch == HEADS)
            batched++;
    cr_assert_eq(batched, 2);
    nv_program *h;
    OK(nv_lower_graph(l.g, RN_F16, &h));
    cr_assert_eq(nv_program_count(h, NV_STEP_CONVERT), 1, "i64 ids stay, the f32 output converts");
    nv_program_free(h);
    lowered_free(&l);
    unsetenv("RUNNEL_NV_ATTENTION");
}

/* bf16 lowers the encoder as f16 does: the attention one step on tensor
 * cores reading the heads with strides, the biases and Gelu folded into
 * the GEMMs, the residuals into the LayerNorms; bf16 values where f16 has
 * f16. */
Test(nvidia_encoder, bf16_lowers_as_f16)
{
    lowered h = lower_encoder(RN_F16), b = lower_encoder(RN_BF16);
    nv_test_assert_bf16_as_f16(h.p, b.p, "encoder");
    cr_assert_eq(nv_program_count(b.p, NV_STEP_ATTENTION), 1);
    cr_assert_eq(nv_program_count(b.p, NV_STEP_BLAS_ATTENTION), 0);
    lowered_free(&h);
    lowered_free(&b);
}

/* In f16 the attention is one step on tensor cores: the head split's three
 * Transposes read with strides, the head merge after it a view (the step
 * writes [B, S, H, D]), the scale folded in; each projection's bias is
 * cuBLAS's C. */
Test(nvidia_encoder, f16_attention_is_one_step_reading_the_heads_with_strides)
{
    lowered l = lower_encoder(RN_F16);
    const nv_program *p = l.p;
    cr_assert_eq(nv_program_count(p, NV_STEP_ATTENTION), 1);
    cr_assert_eq(nv_program_count(p, NV_STEP_BLAS_ATTENTION), 0, "f16 stays on tensor cores");
    cr_assert_eq(nv_program_count(p, NV_STEP_SOFTMAX), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 0, "heads read and written with strides");
    cr_assert_eq(nv_program_count(p, NV_STEP_GEMM), 6, "the projections only");
    cr_assert_eq(nv_program_count(p, NV_STEP_BINARY), 0,
                 "the biases are C or added after the product, the residuals by the LayerNorms");
    cr_assert_eq(nv_program_count(p, NV_STEP_UNARY), 0, "the Gelu applied by its GEMM");
    int residual_norms = 0, gelu_gemms = 0;
    for (int k = 0; k < p->n_steps; k++) {
        residual_norms += p->steps[k].kind == NV_STEP_LAYERNORM && p->steps[k].in[3] >= 0;
        gelu_gemms += p->steps[k].kind == NV_STEP_GEMM && p->steps[k].act == NV_ACT_GELU &&
                      p->steps[k].bias_after;
    }
    cr_assert_eq(residual_norms, 2);
    cr_assert_eq(gelu_gemms, 1);
    const nv_step *a = NULL;
    for (int k = 0; k < p->n_steps; k++) {
        if (p->steps[k].kind == NV_STEP_ATTENTION)
            a = &p->steps[k];
        if (p->steps[k].kind == NV_STEP_GEMM)
            cr_assert_eq(p->steps[k].gemm_beta, 1.0f, "step %d: the bias added by cuBLAS", k);
    }
    cr_assert_not_null(a);
    cr_assert_eq(a->att.batch, 1);
    cr_assert_eq(a->att.heads, HEADS);
    cr_assert_eq(a->att.sq, SEQ);
    cr_assert_eq(a->att.sk, SEQ);
    cr_assert_eq(a->att.d, DH);
    cr_assert_eq(a->att.dv, DH);
    cr_assert_float_eq(a->att.scale, 1.0f / sqrtf((float)DH), 1e-6f);
    assert_bshd_strides(a);
    cr_assert_eq(a->n_in, 3, "no mask");
    lowered_free(&l);
}

/* In f32 the fused node runs as cuBLAS's products (BLAS_ATTENTION): the
 * same strided reads of the heads, no Transpose step for the head split
 * or merge, the scores a scratch value live during the step only; the
 * GEMMs read Q, K, V and write the output with their row strides. */
Test(nvidia_encoder, f32_attention_is_cublas_products_reading_the_heads_with_strides)
{
    lowered l = lower_encoder(RN_F32);
    const nv_program *p = l.p;
    cr_assert_eq(nv_program_count(p, NV_STEP_BLAS_ATTENTION), 1);
    cr_assert_eq(nv_program_count(p, NV_STEP_ATTENTION), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_SOFTMAX), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 0, "heads read and written with strides");
    cr_assert_eq(nv_program_count(p, NV_STEP_GEMM), 6, "the projections only");
    cr_assert_eq(nv_program_count(p, NV_STEP_BINARY), 0, "the scale is the GEMM's alpha");
    cr_assert_str_eq(nv_step_kind_name(NV_STEP_BLAS_ATTENTION), "cublas_attention");
    int k = 0;
    while (p->steps[k].kind != NV_STEP_BLAS_ATTENTION)
        k++;
    const nv_step *a = &p->steps[k];
    assert_bshd_strides(a);
    cr_assert_eq(a->n_in, 5);
    cr_assert_lt(a->in[3], 0, "no mask");
    const nv_value *sc = &p->values[a->in[4]];
    cr_assert_eq(sc->type, RN_F32);
    cr_assert_eq(sc->rank, 4);
    cr_assert_eq(sc->dims[0], 1);
    cr_assert_eq(sc->dims[1], HEADS);
    cr_assert_eq(sc->dims[2], SEQ);
    cr_assert_eq(sc->dims[3], SEQ);
    cr_assert_eq(sc->storage, NV_ARENA);
    cr_assert_eq(sc->first, k, "the scores are scratch of the step");
    cr_assert_eq(sc->last, k);
    nv_blas_gemm gm[2];
    cr_assert(nv_attention_blas_plan(&a->att, gm), "the GEMMs read the heads in place");
    /* No live value shares the scratch's bytes. */
    for (int v = 0; v < p->n_values; v++) {
        const nv_value *o = &p->values[v];
        if (v == a->in[4] || o->root != v || o->storage != NV_ARENA || o->first > k || o->last < k)
            continue;
        cr_assert(o->offset + o->nbytes <= sc->offset || sc->offset + sc->nbytes <= o->offset,
                  "'%s' overlaps the scores", o->name);
    }
    lowered_free(&l);
}

/* The A/B switches in f32: RUNNEL_NV_ATTENTION=rows lowers the fused node
 * to runnel's scalar kernel, =unfused keeps the exporters' steps (the two
 * products batched over the heads, the softmax, the four transposes). */
Test(nvidia_encoder, f32_attention_switches_for_a_b_runs)
{
    setenv("RUNNEL_NV_ATTENTION", "rows", 1);
    lowered l = lower_encoder(RN_F32);
    const nv_program *p = l.p;
    cr_assert_eq(nv_program_count(p, NV_STEP_ATTENTION), 1);
    cr_assert_eq(nv_program_count(p, NV_STEP_BLAS_ATTENTION), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 0);
    for (int k = 0; k < p->n_steps; k++)
        if (p->steps[k].kind == NV_STEP_ATTENTION)
            cr_assert_eq(p->steps[k].n_in, 3, "Q, K, V: no scratch");
    lowered_free(&l);

    setenv("RUNNEL_NV_ATTENTION", "unfused", 1);
    l = lower_encoder(RN_F32);
    p = l.p;
    cr_assert_eq(nv_program_count(p, NV_STEP_ATTENTION), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_BLAS_ATTENTION), 0);
    cr_assert_eq(nv_program_count(p, NV_STEP_SOFTMAX), 1);
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 4);
    cr_assert_eq(nv_program_count(p, NV_STEP_GEMM), 8);
    lowered_free(&l);
    unsetenv("RUNNEL_NV_ATTENTION");
}

/* nv_lower_graph reads the graph through the public accessors
 * (rn_graph_node, rn_graph_input_name, rn_node_input_constant, ...): the
 * program's inputs are the parameters its nodes read, each once, and a
 * parameter no node reads is none; a constant read twice is one value on
 * the device. */
Test(nvidia_encoder, a_graph_lowers_with_each_read_input_once)
{
    graph *g = tt_graph();
    int64_t dims[2] = {2, 4};
    graph_value *x = tt_input(g, "x", RN_F32, 2, dims);
    tt_input(g, "unread", RN_F32, 2, dims);
    float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    graph_value *c = tt_const_f32(g, "w", 2, dims, w);
    graph_value *y = tt_binary(g, "y", "Add", tt_binary(g, "xw", "Mul", x, c), c);
    tt_output(g, y);
    tt_finish(g);
    cr_assert_eq(rn_graph_node_count(g), 2);
    cr_assert_eq(rn_graph_input_count(g), 2);
    cr_assert_not_null(rn_graph_constant(g, "w"));
    cr_assert_null(rn_graph_constant(g, "x"), "a parameter is no constant");
    nv_program *p;
    OK(nv_lower_graph(g, RN_F32, &p));
    cr_assert_eq(p->n_inputs, 1);
    cr_assert_str_eq(p->values[p->input_value[0]].name, "x");
    cr_assert_eq(p->n_outputs, 1);
    cr_assert_str_eq(p->values[p->output_value[0]].name, "y");
    int named_w = 0, named_unread = 0;
    for (int v = 0; v < p->n_values; v++) {
        named_w += strcmp(p->values[v].name, "w") == 0;
        named_unread += strcmp(p->values[v].name, "unread") == 0;
    }
    cr_assert_eq(named_w, 1, "the constant read twice is one value");
    cr_assert_eq(named_unread, 0);
    nv_program_free(p);
    graph_free(g);
}
