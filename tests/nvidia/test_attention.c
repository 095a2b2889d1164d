/* The f32 attention as cuBLAS's products (NV_STEP_BLAS_ATTENTION), checked
 * without a GPU: attention graphs as exporters write them (the BSHD head
 * split and merge, BHSD of rank 2 to 4, masks broadcast several ways) are
 * transformed and lowered as NVIDIA does; the step's two GEMMs
 * (nv_attention_blas_plan) run on a CPU model of
 * cublasGemmStridedBatchedEx written from cuBLAS's documentation
 * (column-major, op, leading dimensions checked as cuBLAS checks them, every
 * read and write inside its buffer), with the masked softmax between them
 * as nvk_attention_softmax computes it; the result, read where the
 * program's output lives, must equal REF's run of the original graph. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"
#include "tests/transforms/transforms_test_util.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* A buffer and its size in elements, for bounds checks. */
typedef struct buffer {
    float *data;
    int64_t count;
} buffer;

static float read_at(buffer b, int64_t i)
{
    cr_assert(i >= 0 && i < b.count, "read at %lld outside %lld elements", (long long)i,
              (long long)b.count);
    return b.data[i];
}

/* cublasGemmStridedBatchedEx as documented: for p in [0, count),
 * C_p = alpha op(A_p) op(B_p) + beta C_p, X_p = X + p * stride_x, column-
 * major: op(A)(i, l) = A[i + l * lda] (N) or A[l + i * lda] (T), op(B)(l, j)
 * = B[l + j * ldb] (N) or B[j + l * ldb] (T), C(i, j) = C[i + j * ldc];
 * lda >= max(1, N ? m : k), ldb >= max(1, N ? k : n), ldc >= max(1, m). */
static void cublas_model(bool ta, bool tb, int m, int n, int k, float alpha, buffer a, int lda,
                         int64_t sa, buffer b, int ldb, int64_t sb, float beta, buffer c, int ldc,
                         int64_t sc, int count)
{
    cr_assert(m >= 0 && n >= 0 && k >= 0 && count >= 0);
    cr_assert_geq(lda, ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1), "lda %d", lda);
    cr_assert_geq(ldb, tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1), "ldb %d", ldb);
    cr_assert_geq(ldc, m > 1 ? m : 1, "ldc %d", ldc);
    for (int p = 0; p < count; p++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0.0;
                for (int l = 0; l < k; l++) {
                    int64_t ai = p * sa + (ta ? l + (int64_t)i * lda : i + (int64_t)l * lda);
                    int64_t bi = p * sb + (tb ? j + (int64_t)l * ldb : l + (int64_t)j * ldb);
                    acc += (double)read_at(a, ai) * read_at(b, bi);
                }
                int64_t ci = p * sc + i + (int64_t)j * ldc;
                float old = beta != 0.0f ? read_at(c, ci) : 0.0f;
                read_at(c, ci); /* bounds */
                c.data[ci] = (float)(alpha * acc) + beta * old;
            }
}

/* One planned product as exec.c's attention_product issues it. */
static void product(const nv_blas_gemm *g, buffer left, buffer right, buffer c)
{
    buffer a = g->swap ? right : left, b = g->swap ? left : right;
    for (int i = 0; i < g->calls; i++) {
        buffer ai = {a.data + i * g->step_a, a.count - i * g->step_a};
        buffer bi = {b.data + i * g->step_b, b.count - i * g->step_b};
        buffer ci = {c.data + i * g->step_c, c.count - i * g->step_c};
        cublas_model(g->trans_a, g->trans_b, g->m, g->n, g->k, g->alpha, ai, g->lda, g->stride_a,
                     bi, g->ldb, g->stride_b, 0.0f, ci, g->ldc, g->stride_c, g->count);
    }
}

/* nvk_attention_softmax: each row of [B, H, Sq, Sk] plus its mask (clamped
 * to -1e30), then Softmax, in place. */
static void masked_softmax(const nvk_attention_args *a, buffer s, buffer mask)
{
    int64_t rows = a->batch * a->heads * a->sq;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r % a->sq, bh = r / a->sq, b = bh / a->heads, h = bh % a->heads;
        int64_t moff = b * a->mask_strides[0] + h * a->mask_strides[1] + i * a->mask_strides[2];
        float *row = s.data + r * a->sk, m = -INFINITY;
        read_at(s, r * a->sk + a->sk - 1);
        for (int64_t j = 0; j < a->sk; j++) {
            if (mask.data != NULL)
                row[j] += fmaxf(read_at(mask, moff + j * a->mask_strides[3]), -1e30f);
            m = fmaxf(m, row[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < a->sk; j++)
            sum += exp((double)row[j] - m);
        for (int64_t j = 0; j < a->sk; j++)
            row[j] = (float)(exp((double)row[j] - m) / sum);
    }
}

typedef struct attention_case {
    const char *name;
    int rank;   /* of Q, K, V as the MatMuls read them (2 to 4) */
    bool bshd;  /* inputs [B, S, H, D] split by Transposes */
    bool merge; /* a head-merge Transpose [0, 2, 1, 3] after the attention */
    int64_t b, h, sq, sk, d, dv;
    int mask_rank; /* 0: no mask */
    int64_t mask_dims[4];
    float mask_inf; /* a value some mask entries take (-INFINITY: fully masked keys) */
} attention_case;

static float pattern(int64_t i, int salt)
{
    return (float)((i * 37 + salt * 11) % 23) / 23.0f - 0.5f;
}

/* The exporters' attention of case c: inputs q, k, v (k as Kt in BHSD). */
static graph *attention_model(const attention_case *c, float *data[3], int64_t counts[3])
{
    graph *g = tt_graph();
    int64_t qd[4], kd[4], vd[4];
    int r = c->rank;
    if (c->bshd) {
        int64_t q4[4] = {c->b, c->sq, c->h, c->d}, k4[4] = {c->b, c->sk, c->h, c->d},
                v4[4] = {c->b, c->sk, c->h, c->dv};
        memcpy(qd, q4, sizeof qd), memcpy(kd, k4, sizeof kd), memcpy(vd, v4, sizeof vd);
    } else {
        int64_t batch[2] = {c->b, c->h};
        for (int i = 0; i < r - 2; i++)
            qd[i] = kd[i] = vd[i] = batch[i];
        qd[r - 2] = c->sq, qd[r - 1] = c->d;
        kd[r - 2] = c->d, kd[r - 1] = c->sk; /* Kt */
        vd[r - 2] = c->sk, vd[r - 1] = c->dv;
    }
    const int64_t *dims[3] = {qd, kd, vd};
    const char *names[3] = {"q", "k", "v"};
    graph_value *in[3];
    for (int i = 0; i < 3; i++) {
        in[i] = tt_input(g, names[i], RN_F32, r, dims[i]);
        counts[i] = 1;
        for (int d = 0; d < r; d++)
            counts[i] *= dims[i][d];
        data[i] = malloc((size_t)counts[i] * sizeof(float));
        for (int64_t e = 0; e < counts[i]; e++)
            data[i][e] = pattern(e, i + 1);
    }
    if (c->bshd) {
        static const int64_t split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
        const char *t[3] = {"q.t", "k.t", "v.t"};
        for (int i = 0; i < 3; i++) {
            in[i] = tt_unary(g, t[i], "Transpose", in[i]);
            tt_attr_ints(g, t[i], "perm", 4, i == 1 ? split_t : split);
        }
    }
    float scale = 0.37f;
    graph_value *s = tt_binary(g, "scores", "MatMul", in[0], in[1]);
    s = tt_binary(g, "scaled", "Mul", s, tt_const_f32(g, "scale", 0, NULL, &scale));
    if (c->mask_rank > 0) {
        int64_t n = 1;
        for (int d = 0; d < c->mask_rank; d++)
            n *= c->mask_dims[d];
        float *m = malloc((size_t)n * sizeof *m);
        for (int64_t e = 0; e < n; e++)
            m[e] = e % 3 == 1 ? c->mask_inf : pattern(e, 7);
        s = tt_binary(g, "masked", "Add", s,
                      tt_const_f32(g, "mask", c->mask_rank, c->mask_dims, m));
        free(m);
    }
    graph_value *p = tt_unary(g, "probs", "Softmax", s);
    tt_attr_int(g, "probs", "axis", -1);
    graph_value *y = tt_binary(g, "context", "MatMul", p, in[2]);
    if (c->merge) {
        static const int64_t merge[4] = {0, 2, 1, 3};
        y = tt_unary(g, "context.t", "Transpose", y);
        tt_attr_ints(g, "context.t", "perm", 4, merge);
    }
    tt_output(g, y);
    tt_finish(g);
    return g;
}

static const nv_step *only_step(const nv_program *p, nv_step_kind kind)
{
    const nv_step *found = NULL;
    for (int k = 0; k < p->n_steps; k++)
        if (p->steps[k].kind == kind) {
            cr_assert_null(found, "one %s step", nv_step_kind_name(kind));
            found = &p->steps[k];
        }
    cr_assert_not_null(found, "a %s step", nv_step_kind_name(kind));
    return found;
}

/* The host buffer of value v of p: an input's data, a constant's, or
 * `arena` for the step's scratch and output. */
static buffer value_buffer(const nv_program *p, int v, float *const data[3],
                           const int64_t counts[3])
{
    const nv_value *x = &p->values[p->values[v].root];
    if (x->storage == NV_CONST)
        return (buffer){(float *)x->host_data, (int64_t)x->count};
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        if (strcmp(x->name, names[i]) == 0)
            return (buffer){data[i], counts[i]};
    cr_assert_fail("value '%s' is neither an input nor a constant", x->name);
    return (buffer){NULL, 0};
}

static void check_case(const attention_case *c)
{
    float *data[3];
    int64_t counts[3];
    graph *model = attention_model(c, data, counts);
    plugin_properties props;
    plugin_properties_default(&props);
    props.inference_precision = RN_F32;
    graph *g;
    OK(nv_transform(model, tt_registry(), &props, &g));
    nv_program *p;
    OK(nv_lower_graph(g, RN_F32, &p));
    cr_assert_eq(nv_program_count(p, NV_STEP_TRANSPOSE), 0, "%s: no head split or merge copies",
                 c->name);
    cr_assert_eq(nv_program_count(p, NV_STEP_GEMM), 0, "%s", c->name);
    cr_assert_eq(nv_program_count(p, NV_STEP_SOFTMAX), 0, "%s", c->name);
    const nv_step *s = only_step(p, NV_STEP_BLAS_ATTENTION);
    cr_assert_eq(s->n_in, 5, "%s", c->name);
    cr_assert_eq(s->in[3] >= 0, c->mask_rank > 0, "%s: the mask", c->name);
    cr_assert_eq(s->att_out_bshd, c->merge, "%s: the head merge a view", c->name);
    nv_blas_gemm gemm[2];
    cr_assert(nv_attention_blas_plan(&s->att, gemm), "%s", c->name);

    const nv_value *scores = &p->values[s->in[4]], *out = &p->values[p->values[s->out].root];
    cr_assert_eq(scores->count, (size_t)(c->b * c->h * c->sq * c->sk), "%s", c->name);
    cr_assert_eq(scores->type, RN_F32);
    int k = (int)(s - p->steps);
    cr_assert_eq(scores->first, k, "%s: the scores live in the step only", c->name);
    cr_assert_eq(scores->last, k, "%s", c->name);
    buffer sb = {malloc(scores->count * sizeof(float)), (int64_t)scores->count};
    buffer ob = {malloc(out->count * sizeof(float)), (int64_t)out->count};
    for (int64_t e = 0; e < ob.count; e++)
        ob.data[e] = NAN; /* every element must be written */
    buffer q = value_buffer(p, s->in[0], data, counts),
           kb = value_buffer(p, s->in[1], data, counts),
           v = value_buffer(p, s->in[2], data, counts);
    buffer mask = s->in[3] >= 0 ? value_buffer(p, s->in[3], data, counts) : (buffer){NULL, 0};
    product(&gemm[0], q, kb, sb);
    masked_softmax(&s->att, sb, mask);
    product(&gemm[1], sb, v, ob);

    graph_tensor ins[3];
    for (int i = 0; i < 3; i++) {
        const graph_value *x = model->inputs[i];
        ins[i] = tt_tensor_f32(x->shape.rank, x->shape.dims, data[i]);
    }
    graph_tensor want[1];
    tt_run(model, ins, 3, want);
    cr_assert_eq(graph_tensor_count(&want[0]), (size_t)ob.count, "%s", c->name);
    const float *w = want[0].data;
    for (int64_t e = 0; e < ob.count; e++)
        cr_assert(fabsf(ob.data[e] - w[e]) <= 1e-5f + 1e-4f * fabsf(w[e]),
                  "%s: element %lld: %g, REF %g", c->name, (long long)e, ob.data[e], w[e]);
    graph_tensor_release(&want[0]);
    free(sb.data);
    free(ob.data);
    for (int i = 0; i < 3; i++)
        free(data[i]);
    nv_program_free(p);
    graph_free(g);
    graph_free(model);
}

Test(nvidia_attention, bshd_heads_read_in_place_with_a_call_per_batch_row)
{
    attention_case c = {.name = "bshd b2 h3",
                        .rank = 4,
                        .bshd = true,
                        .merge = true,
                        .b = 2,
                        .h = 3,
                        .sq = 5,
                        .sk = 7,
                        .d = 4,
                        .dv = 6,
                        .mask_rank = 4,
                        .mask_dims = {2, 1, 1, 7},
                        .mask_inf = -INFINITY};
    check_case(&c);
}

Test(nvidia_attention, bshd_with_a_call_per_head_and_a_bhsd_output)
{
    attention_case c = {.name = "bshd b4 h2, output BHSD",
                        .rank = 4,
                        .bshd = true,
                        .merge = false,
                        .b = 4,
                        .h = 2,
                        .sq = 6,
                        .sk = 6,
                        .d = 8,
                        .dv = 8,
                        .mask_rank = 2,
                        .mask_dims = {6, 6},
                        .mask_inf = -3.4e38f};
    check_case(&c);
}

Test(nvidia_attention, bhsd_with_kt_in_one_call_and_a_merged_output)
{
    attention_case c = {.name = "bhsd rank 4",
                        .rank = 4,
                        .merge = true,
                        .b = 2,
                        .h = 2,
                        .sq = 3,
                        .sk = 5,
                        .d = 4,
                        .dv = 2,
                        .mask_rank = 4,
                        .mask_dims = {1, 2, 3, 5},
                        .mask_inf = -10.0f};
    check_case(&c);
}

Test(nvidia_attention, bhsd_of_rank_3_and_2)
{
    attention_case c3 = {
        .name = "bhsd rank 3", .rank = 3, .b = 3, .h = 1, .sq = 4, .sk = 4, .d = 5, .dv = 3};
    check_case(&c3);
    attention_case c2 = {.name = "rank 2",
                         .rank = 2,
                         .b = 1,
                         .h = 1,
                         .sq = 3,
                         .sk = 6,
                         .d = 2,
                         .dv = 4,
                         .mask_rank = 1,
                         .mask_dims = {6},
                         .mask_inf = -INFINITY};
    check_case(&c2);
}

Test(nvidia_attention, dims_of_one)
{
    attention_case c = {.name = "bshd b1 sq1 d1",
                        .rank = 4,
                        .bshd = true,
                        .merge = true,
                        .b = 1,
                        .h = 4,
                        .sq = 1,
                        .sk = 3,
                        .d = 1,
                        .dv = 1};
    check_case(&c);
    attention_case one = {.name = "bshd sk1",
                          .rank = 4,
                          .bshd = true,
                          .merge = true,
                          .b = 3,
                          .h = 2,
                          .sq = 2,
                          .sk = 1,
                          .d = 3,
                          .dv = 2};
    check_case(&one);
}

static void assert_gemm(const nv_blas_gemm *got, nv_blas_gemm want)
{
    cr_assert_eq(got->swap, want.swap);
    cr_assert_eq(got->trans_a, want.trans_a);
    cr_assert_eq(got->trans_b, want.trans_b);
    const int gi[] = {got->m, got->n, got->k, got->lda, got->ldb, got->ldc, got->count, got->calls};
    const int wi[] = {want.m, want.n, want.k, want.lda, want.ldb, want.ldc, want.count, want.calls};
    const char *ni[] = {"m", "n", "k", "lda", "ldb", "ldc", "count", "calls"};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(gi[i], wi[i], "%s: %d, want %d", ni[i], gi[i], wi[i]);
    const int64_t gs[] = {got->stride_a, got->stride_b, got->stride_c,
                          got->step_a,   got->step_b,   got->step_c};
    const int64_t ws[] = {want.stride_a, want.stride_b, want.stride_c,
                          want.step_a,   want.step_b,   want.step_c};
    const char *ns[] = {"stride_a", "stride_b", "stride_c", "step_a", "step_b", "step_c"};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(gs[i], ws[i], "%s: %lld, want %lld", ns[i], (long long)gs[i],
                     (long long)ws[i]);
    cr_assert_float_eq(got->alpha, want.alpha, 0.0f);
}

/* The plan's arguments for BERT-base's attention at batch 32 (the head
 * split and merge of [32, 128, 12, 64]): what the GPU runs. */
Test(nvidia_attention, bert_base_batch_32_arguments)
{
    enum { B = 32, H = 12, S = 128, D = 64 };
    nvk_attention_args a = {.batch = B,
                            .heads = H,
                            .sq = S,
                            .sk = S,
                            .d = D,
                            .dv = D,
                            .q_strides = {S * H * D, D, H * D, 1},
                            .k_strides = {S * H * D, D, H * D, 1},
                            .v_strides = {S * H * D, D, H * D, 1},
                            .o_strides = {S * H * D, D, H * D, 1},
                            .scale = 0.125f};
    nv_blas_gemm g[2];
    cr_assert(nv_attention_blas_plan(&a, g));
    /* scores^T [Sk, Sq] = K Q^T: OP_T on K and OP_N on Q, both read with
     * the row stride H*D; a call per head (step D), batching the 32 rows
     * of the batch (stride S*H*D; the scores' H*S*S). */
    assert_gemm(&g[0], (nv_blas_gemm){.swap = true,
                                      .trans_a = true,
                                      .trans_b = false,
                                      .m = S,
                                      .n = S,
                                      .k = D,
                                      .lda = H * D,
                                      .ldb = H * D,
                                      .ldc = S,
                                      .count = B,
                                      .calls = H,
                                      .stride_a = S * H * D,
                                      .stride_b = S * H * D,
                                      .stride_c = H * S * S,
                                      .step_a = D,
                                      .step_b = D,
                                      .step_c = S * S,
                                      .alpha = 0.125f});
    /* out^T [D, Sq] = V^T P^T: OP_N on both, V with ld H*D, P with ld S,
     * written with ldc H*D (the output's row stride: the merge a view). */
    assert_gemm(&g[1], (nv_blas_gemm){.swap = true,
                                      .trans_a = false,
                                      .trans_b = false,
                                      .m = D,
                                      .n = S,
                                      .k = S,
                                      .lda = H * D,
                                      .ldb = S,
                                      .ldc = H * D,
                                      .count = B,
                                      .calls = H,
                                      .stride_a = S * H * D,
                                      .stride_b = H * S * S,
                                      .stride_c = S * H * D,
                                      .step_a = D,
                                      .step_b = S * S,
                                      .step_c = D,
                                      .alpha = 1.0f});
}

/* An operand with no unit stride has no GEMM form: the plan says so (the
 * lowering then keeps the fused kernel). */
Test(nvidia_attention, no_plan_without_a_unit_stride)
{
    nvk_attention_args a = {.batch = 1,
                            .heads = 1,
                            .sq = 4,
                            .sk = 4,
                            .d = 4,
                            .dv = 4,
                            .q_strides = {0, 0, 8, 2},
                            .k_strides = {0, 0, 4, 1},
                            .v_strides = {0, 0, 4, 1},
                            .o_strides = {0, 0, 4, 1},
                            .scale = 1.0f};
    nv_blas_gemm g[2];
    cr_assert_not(nv_attention_blas_plan(&a, g));
    a.q_strides[3] = 1;
    cr_assert(nv_attention_blas_plan(&a, g));
}
