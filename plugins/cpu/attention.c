/* runnel ScaledDotProductAttention (transforms/fuse_attention.c) as three
 * oneDNN primitives over one scores buffer in the kernel's scratch:
 *
 *   matmul   scores = scale * Q @ Kt (+ mask): the scale as the output
 *            scale, the mask as a binary-add post-op where the matmul is a
 *            brgemm one that applies it as it stores; else (gemm-based
 *            matmul on AVX2, no post-op or only a reference matmul for the
 *            mask's broadcast) a binary primitive in place on the scores;
 *   softmax  over the last axis, in place;
 *   matmul   y = scores @ V.
 *
 * The scores are never a value of the plan (no arena slot of their own, no
 * layout conversion): they live in the node's scratch, after the primitives'
 * scratchpad, for the node's run only. Q, Kt, V, the mask and y are plain
 * row-major f32 (the plan converts a blocked producer's output); with
 * qkv_layout "BSHD" the matmuls read the heads of Q, K and V [B, S, H, D]
 * through strided descriptors, where the exporter's Transposes copied them;
 * with out_layout "BSHD" y is [B, S, H, Dv], each head's rows written with a
 * stride where the exporter's head merge Transpose copied them.
 *
 * Where the batch dims allow it the heads are split across the team
 * instead (heads_build: per head dnnl_sgemm, mask and softmax, dnnl_sgemm),
 * and in a bf16 model on a CPU with avx512_bf16 (bf16_build) those heads
 * read Q, K and V in the plain bf16 the products wrote (through the CPU's
 * Reshape views, reshape.c) and write y in plain bf16: the products by
 * vdpbf16ps with f32 sums, the softmax in f32 (AVX-512: the rows'
 * maximums taken as the scores are stored, exp(score - maximum) rounded to
 * bf16 before @ V, each output row scaled by 1 / the f32 sum as it is
 * stored); no conversion is left around the attention. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/team.h"
#include "transforms/transforms.h"

enum { QK, ADD, SOFTMAX, PV, N_PRIMS };

typedef struct sdpa_state {
    cpu_prim p[N_PRIMS]; /* p[ADD] only when the mask is not a post-op */
    bool has_add;
    cpu_md q, kt, v, mask, scores, dst;
    bool has_mask;
    size_t scores_at; /* offset of the scores in the scratch */
    size_t scratch;
    /* Heads split across the team (heads_build): one fork per run, each
     * thread the whole attention of the heads it takes, single-threaded. */
    bool heads;
    int team;    /* threads of the fork (1: no fork) */
    int n_batch; /* the output's batch dims: its rank - 2 */
    float scale;
    bool denormals, avx2;
    plugin_bind_thread bind; /* the compiled model's, as a primitive's (cpu_prim) */
    int stream_threads;
    int64_t units;                  /* heads of all batches: the product of the batch dims */
    int64_t batch[RN_MAX_RANK - 2]; /* the output's batch dims (r - 2 of them) */
    int64_t S, Sk, D, Dv;
    bool k_t;                        /* K read [Sk, D] (BSHD) and transposed, else Kt [D, Sk] */
    int64_t q_ld, k_ld, v_ld;        /* row strides of one head */
    int64_t q_step[RN_MAX_RANK - 2]; /* per batch index: Q's offset */
    int64_t k_step[RN_MAX_RANK - 2], v_step[RN_MAX_RANK - 2];
    int64_t m_step[RN_MAX_RANK - 2]; /* the mask's (0: broadcast) */
    int64_t m_row, m_col;            /* the mask's row and column strides */
    size_t head_scores;              /* bytes of one thread's scores, aligned */
    int64_t y_ld;                    /* row stride of one head's output */
    int64_t y_step[RN_MAX_RANK - 2]; /* per batch index: the output's offset */
    /* bf16 heads (bf16_build): Q, K, V and y plain bf16 as the products
     * write them; per thread K and V packed in pairs for vdpbf16ps, a block
     * of score rows in f32 and as bf16 probabilities. */
    bool bf16;
    /* f32 heads by runnel's own AVX-512 products (tiles_build), else
     * per-head dnnl_sgemm: per thread K^T packed (kp_at, [D][ldk]) and a
     * block of score rows (sc_at, [F32_ROWS][ldk]). */
    bool tiles;
    bool y_f32; /* the bf16 policy's tail (TRANSFORMS_ATTR_F32_OUTPUT): y in f32 */
    cpu_layout in_l[3], out_l;
    const rn_layout *in_layout[3], *out_layout;
    int64_t ldk, ldv, ldp;             /* row strides (elements) of K packed, V packed, P */
    size_t kp_at, vp_at, sc_at, pb_at; /* offsets in a thread's scratch */
} sdpa_state;

static bool sdpa_supports(const rn_node *node, const char **why)
{
    int n = rn_node_input_count(node);
    int r = rn_node_input_shape(node, 0).rank;
    for (int k = 0; k < n; k++) {
        if (k == 3 && rn_node_input_name(node, k)[0] == '\0')
            continue;
        rn_partial_shape s = rn_node_input_shape(node, k);
        if (rn_node_input_type(node, k) != RN_F32 || (k < 3 && s.rank != r) ||
            (k == 3 && s.rank > r)) {
            *why = "f32 Q, Kt, V of one rank and a mask of no higher rank";
            return false;
        }
    }
    if (r < 2 || r > 5) {
        *why = "Q, Kt and V of rank 2 to 5 only";
        return false;
    }
    const char *layout = rn_node_attr_string(node, "qkv_layout", "BHSD");
    if (strcmp(layout, "BHSD") != 0 && (strcmp(layout, "BSHD") != 0 || r != 4)) {
        *why = "qkv_layout BHSD, or BSHD of rank-4 inputs";
        return false;
    }
    const char *out = rn_node_attr_string(node, "out_layout", "BHSD");
    if (strcmp(out, "BHSD") != 0 && (strcmp(out, "BSHD") != 0 || r != 4)) {
        *why = "out_layout BHSD, or BSHD of a rank-4 output";
        return false;
    }
    return cpu_static_node(node, why);
}

/* Whether the node writes [B, S, H, Dv] (out_layout BSHD: the head merge
 * Transpose absorbed) instead of [B, H, S, Dv]. */
static bool merged_output(const rn_node *node)
{
    return strcmp(rn_node_attr_string(node, "out_layout", "BHSD"), "BSHD") == 0;
}

/* The output's dims in the heads' order [.., H, S, Dv] (the stored ones
 * with H and S swapped back for out_layout BSHD). */
static rn_partial_shape heads_shape(const rn_node *node)
{
    rn_partial_shape y = rn_node_output_shape(node, 0);
    if (merged_output(node)) {
        int64_t h = y.dims[2];
        y.dims[2] = y.dims[1];
        y.dims[1] = h;
    }
    return y;
}

static void sdpa_release(void *state)
{
    sdpa_state *s = state;
    if (s == NULL)
        return;
    for (int i = 0; i < N_PRIMS; i++)
        cpu_prim_release(&s->p[i]);
    free(s);
}

static size_t sdpa_scratch(const void *state)
{
    return ((const sdpa_state *)state)->scratch;
}

static const char *sdpa_impl(const void *state)
{
    const sdpa_state *s = state;
    if (s->bf16)
        return "avx512_bf16:heads";
    if (s->heads)
        return s->tiles ? "avx512:heads" : "gemm:heads";
    return s->p[QK].impl;
}

static const rn_layout *sdpa_input_layout(const void *state, int i)
{
    const sdpa_state *s = state;
    return s->bf16 && i < 3 ? s->in_layout[i] : NULL;
}

static const rn_layout *sdpa_output_layout(const void *state, int i)
{
    const sdpa_state *s = state;
    return s->bf16 && i == 0 ? s->out_layout : NULL; /* NULL too for y_f32 */
}

/* The plain descriptor of input k at rank r (leading 1s); with `perm`
 * (qkv_layout BSHD: rank 4) the input viewed permuted, with strides: dim d
 * of the view is the input's dim perm[d]. */
static rn_status input_md(const rn_node *node, int k, int r, const int *perm, cpu_md *md)
{
    rn_partial_shape s = rn_node_input_shape(node, k);
    int64_t dims[RN_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = i - (r - s.rank) >= 0 ? s.dims[i - (r - s.rank)] : 1;
    if (perm == NULL)
        return cpu_plain_md(RN_F32, r, dims, md);
    dnnl_dims_t view, strides, plain;
    plain[3] = 1;
    for (int i = 2; i >= 0; i--)
        plain[i] = plain[i + 1] * dims[i + 1];
    for (int i = 0; i < 4; i++) {
        view[i] = dims[perm[i]];
        strides[i] = plain[perm[i]];
    }
    dnnl_status_t ds = cpu_md_init_by_strides(md, 4, view, dnnl_f32, strides);
    return ds == dnnl_success ? RN_OK : cpu_error(node, "describing the attention's heads", ds);
}

/* Creates the primitive of op descriptor d with attribute attr (taken over)
 * into p; *done false when oneDNN has no implementation. */
static rn_status make_prim(const rn_node *node, const cpu_op *d, dnnl_primitive_attr_t attr,
                           cpu_prim *p, bool *done)
{
    dnnl_engine_t eng = NULL;
    rn_status st = cpu_engine(&eng);
    dnnl_primitive_desc_t pd = NULL;
    *done = false;
    if (st == RN_OK) {
        int prev = cpu_team_begin(node);
        dnnl_status_t ds = cpu_op_pd(&pd, d, attr, eng);
        cpu_team_end(prev);
        if (ds == dnnl_unimplemented)
            pd = NULL;
        else if (ds != dnnl_success)
            st = cpu_error(node, "creating an attention primitive", ds);
    }
    dnnl_primitive_attr_destroy(attr);
    if (st != RN_OK || pd == NULL)
        return st;
    *done = true;
    return cpu_prim_init(p, node, pd);
}

/* scores = scale * Q @ Kt, plus the mask as a post-op when `post`. */
static rn_status qk_prim(const rn_node *node, sdpa_state *s, bool post, bool *done)
{
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_t attr = NULL;
    cpu_op d;
    float scale = rn_node_attr_float(node, "scale", 1.0f);
    dnnl_status_t ds = cpu_op_matmul(&d, &s->q, &s->kt, NULL, &s->scores);
    if (ds == dnnl_success)
        ds = cpu_post_ops_begin_scale(&po, scale);
    if (ds == dnnl_success && post && po == NULL)
        ds = dnnl_post_ops_create(&po);
    if (ds == dnnl_success && post)
        ds = cpu_post_ops_append_binary(po, dnnl_binary_add, &s->mask);
    if (ds != dnnl_success) {
        if (po != NULL)
            dnnl_post_ops_destroy(po);
        return cpu_error(node, "describing the attention scores", ds);
    }
    rn_status st = cpu_attr(node, po, &attr);
    if (po != NULL)
        dnnl_post_ops_destroy(po);
    if (st != RN_OK)
        return st;
    if ((ds = cpu_attr_set_scale(attr, scale)) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return cpu_error(node, "setting the attention scale", ds);
    }
    return make_prim(node, &d, attr, &s->p[QK], done);
}

static bool heads_build(const rn_node *node, sdpa_state *s, bool bshd);
static void tiles_build(sdpa_state *s);
static void bf16_build(const rn_node *node, const rn_kernel_ctx *ctx, sdpa_state *s);

/* RN_CPU_ATTENTION_HEADS=0 keeps the batched primitives below (an A/B
 * switch for bench/models: docs/cpu.md). */
static bool heads_enabled(void)
{
    const char *v = getenv("RN_CPU_ATTENTION_HEADS");
    return v == NULL || strcmp(v, "0") != 0;
}

static rn_status build(const rn_node *node, const rn_kernel_ctx *ctx, sdpa_state *s)
{
    static const int split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
    bool bshd = strcmp(rn_node_attr_string(node, "qkv_layout", "BHSD"), "BSHD") == 0;
    if (heads_enabled() && heads_build(node, s, bshd)) {
        bf16_build(node, ctx, s);
        return RN_OK;
    }
    rn_partial_shape y = heads_shape(node);
    int r = y.rank;
    rn_status st;
    if ((st = input_md(node, 0, r, bshd ? split : NULL, &s->q)) != RN_OK ||
        (st = input_md(node, 1, r, bshd ? split_t : NULL, &s->kt)) != RN_OK ||
        (st = input_md(node, 2, r, bshd ? split : NULL, &s->v)) != RN_OK ||
        (s->has_mask && (st = input_md(node, 3, r, NULL, &s->mask)) != RN_OK))
        return st;
    int64_t sdims[RN_MAX_RANK];
    for (int i = 0; i < r; i++)
        sdims[i] = i < r - 1 ? y.dims[i] : s->kt.dims[r - 1];
    if ((st = cpu_plain_md(RN_F32, r, sdims, &s->scores)) != RN_OK)
        return st;
    if (merged_output(node)) { /* [B, H, S, Dv] over the bytes of [B, S, H, Dv] */
        dnnl_dims_t dims = {y.dims[0], y.dims[1], y.dims[2], y.dims[3]},
                    strides = {y.dims[2] * y.dims[1] * y.dims[3], y.dims[3], y.dims[1] * y.dims[3],
                               1};
        dnnl_status_t ds = cpu_md_init_by_strides(&s->dst, 4, dims, dnnl_f32, strides);
        if (ds != dnnl_success)
            return cpu_error(node, "describing the attention's merged heads", ds);
    } else if ((st = cpu_plain_md(RN_F32, r, y.dims, &s->dst)) != RN_OK) {
        return st;
    }
    bool done = false;
    if ((st = qk_prim(node, s, s->has_mask, &done)) != RN_OK)
        return st;
    if (done && s->has_mask &&
        (strncmp(s->p[QK].impl, "ref", 3) == 0 || strncmp(s->p[QK].impl, "gemm", 4) == 0)) {
        /* oneDNN 2.6 takes some mask broadcasts ([1, 1, S, S]) as a post-op
         * only in its reference matmul, many times slower than gemm:jit; and
         * its gemm-based matmul (AVX2: no brgemm) applies binary post-ops in
         * a pass of their own over the scores, slower than the binary
         * primitive (docs/performance.md, cpu-attn). brgemm matmuls apply
         * them as they store the scores: they keep the post-op. */
        cpu_prim_release(&s->p[QK]);
        done = false;
    }
    dnnl_primitive_attr_t attr;
    if (!done && s->has_mask) {
        /* No fast post-op for this broadcast: the scores, then a binary add. */
        cpu_op bd;
        dnnl_status_t ds = cpu_op_binary(&bd, dnnl_binary_add, &s->scores, &s->mask, &s->scores);
        if (ds != dnnl_success)
            return cpu_error(node, "describing the attention mask", ds);
        if ((st = qk_prim(node, s, false, &done)) != RN_OK)
            return st;
        if (done && ((st = cpu_attr(node, NULL, &attr)) != RN_OK ||
                     (st = make_prim(node, &bd, attr, &s->p[ADD], &s->has_add)) != RN_OK))
            return st;
        done = done && s->has_add;
    }
    if (!done)
        return cpu_error(node, "creating the attention scores' matmul", dnnl_unimplemented);
    cpu_op sd;
    dnnl_status_t ds = cpu_op_softmax(&sd, dnnl_softmax_accurate, &s->scores, &s->scores, r - 1);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the attention softmax", ds);
    if ((st = cpu_attr(node, NULL, &attr)) != RN_OK ||
        (st = make_prim(node, &sd, attr, &s->p[SOFTMAX], &done)) != RN_OK)
        return st;
    if (!done)
        return cpu_error(node, "creating the attention softmax", dnnl_unimplemented);
    cpu_op md;
    if ((ds = cpu_op_matmul(&md, &s->scores, &s->v, NULL, &s->dst)) != dnnl_success)
        return cpu_error(node, "describing the attention output", ds);
    if ((st = cpu_attr(node, NULL, &attr)) != RN_OK ||
        (st = make_prim(node, &md, attr, &s->p[PV], &done)) != RN_OK)
        return st;
    if (!done)
        return cpu_error(node, "creating the attention output's matmul", dnnl_unimplemented);
    size_t pad = 0;
    for (int i = 0; i < N_PRIMS; i++)
        pad = s->p[i].scratch > pad ? s->p[i].scratch : pad;
    s->scores_at = (pad + 63) & ~(size_t)63;
    s->scratch = s->scores_at + cpu_md_get_size(&s->scores);
    return RN_OK;
}

/* ---- heads split across the team ---- */

#define EXP_HI 88.3762626647949f
#define EXP_LO (-88.3762626647949f)

/* exp of 8 floats (Cephes' polynomial, relative error ~1e-7; below
 * EXP_LO 0, as expf's underflow). */
__attribute__((target("avx2,fma"))) static inline __m256 exp8(__m256 x)
{
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(EXP_HI)), _mm256_set1_ps(EXP_LO));
    __m256 fx = _mm256_floor_ps(
        _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) static float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

__attribute__((target("avx2,fma"))) static float hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_shuffle_ps(s, s, 1)));
}

/* x[0..n) = softmax(x + mask), the mask's columns m[j * m_col] (m_col 0:
 * one value for the row), no mask when m is NULL. */
__attribute__((target("avx2,fma"))) static void softmax_avx2(float *x, const float *m,
                                                             int64_t m_col, int64_t n)
{
    int64_t j = 0, n8 = n & ~(int64_t)7;
    if (m != NULL && m_col == 1) {
        for (j = 0; j < n8; j += 8)
            _mm256_storeu_ps(x + j, _mm256_add_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(m + j)));
        for (; j < n; j++)
            x[j] += m[j];
    } else if (m != NULL) {
        for (j = 0; j < n; j++)
            x[j] += m[0];
    }
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (j = 0; j < n8; j += 8)
        vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + j));
    float mx = hmax8(vmax);
    for (; j < n; j++)
        mx = x[j] > mx ? x[j] : mx;
    __m256 vsum = _mm256_setzero_ps(), vm = _mm256_set1_ps(mx);
    for (j = 0; j < n8; j += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
        _mm256_storeu_ps(x + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum8(vsum);
    for (; j < n; j++)
        sum += x[j] = expf(x[j] - mx);
    __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (j = 0; j < n8; j += 8)
        _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), inv));
    for (; j < n; j++)
        x[j] *= 1.0f / sum;
}

static void softmax_plain(float *x, const float *m, int64_t m_col, int64_t n)
{
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        if (m != NULL)
            x[j] += m[j * m_col];
        mx = x[j] > mx ? x[j] : mx;
    }
    for (int64_t j = 0; j < n; j++)
        sum += x[j] = expf(x[j] - mx);
    for (int64_t j = 0; j < n; j++)
        x[j] /= sum;
}

/* Row-major strides of dims[0..n) with 0 for a dim of 1 (a broadcast). */
static void bcast_strides(const int64_t *dims, int n, int64_t inner, int64_t *strides)
{
    for (int d = n - 1; d >= 0; d--) {
        strides[d] = dims[d] == 1 ? 0 : inner;
        inner *= dims[d];
    }
}

/* Whether the node runs heads-split: Q, Kt and V of the output's batch
 * dims (no broadcast of their own), a mask broadcasting to the scores; then
 * the strides of one head in each. */
static bool heads_build(const rn_node *node, sdpa_state *s, bool bshd)
{
    rn_partial_shape y = heads_shape(node);
    int r = y.rank, nb = r - 2;
    int64_t in[4][RN_MAX_RANK];
    for (int k = 0; k < 3 + s->has_mask; k++) {
        rn_partial_shape x = rn_node_input_shape(node, k);
        for (int i = 0; i < r; i++)
            in[k][i] = i - (r - x.rank) >= 0 ? x.dims[i - (r - x.rank)] : 1;
    }
    s->n_batch = nb;
    s->S = y.dims[r - 2];
    s->Dv = y.dims[r - 1];
    s->units = 1;
    for (int d = 0; d < nb; d++)
        s->units *= s->batch[d] = y.dims[d];
    if (bshd) { /* Q [B, S, H, D], K [B, Sk, H, D], V [B, Sk, H, Dv] */
        int64_t B = y.dims[0], H = y.dims[1];
        s->D = in[0][3];
        s->Sk = in[1][1];
        if (in[0][0] != B || in[0][1] != s->S || in[0][2] != H || in[1][0] != B || in[1][2] != H ||
            in[1][3] != s->D || in[2][0] != B || in[2][1] != s->Sk || in[2][2] != H ||
            in[2][3] != s->Dv)
            return false;
        s->k_t = true;
        s->q_ld = H * s->D, s->k_ld = H * s->D, s->v_ld = H * s->Dv;
        s->q_step[0] = s->S * s->q_ld, s->q_step[1] = s->D;
        s->k_step[0] = s->Sk * s->k_ld, s->k_step[1] = s->D;
        s->v_step[0] = s->Sk * s->v_ld, s->v_step[1] = s->Dv;
    } else { /* Q [.., S, D], Kt [.., D, Sk], V [.., Sk, Dv] */
        s->D = in[0][r - 1];
        s->Sk = in[1][r - 1];
        for (int d = 0; d < nb; d++)
            if (in[0][d] != y.dims[d] || in[1][d] != y.dims[d] || in[2][d] != y.dims[d])
                return false;
        if (in[0][r - 2] != s->S || in[1][r - 2] != s->D || in[2][r - 2] != s->Sk ||
            in[2][r - 1] != s->Dv)
            return false;
        s->k_t = false;
        s->q_ld = s->D, s->k_ld = s->Sk, s->v_ld = s->Dv;
        int64_t qi = s->S * s->D, ki = s->D * s->Sk, vi = s->Sk * s->Dv;
        for (int d = nb - 1; d >= 0; d--) {
            s->q_step[d] = qi, s->k_step[d] = ki, s->v_step[d] = vi;
            qi *= y.dims[d], ki *= y.dims[d], vi *= y.dims[d];
        }
    }
    if (s->has_mask) {
        for (int d = 0; d < r; d++) {
            int64_t want = d < nb ? y.dims[d] : d == nb ? s->S : s->Sk;
            if (in[3][d] != 1 && in[3][d] != want)
                return false;
        }
        int64_t st[RN_MAX_RANK];
        bcast_strides(in[3], r, 1, st);
        memcpy(s->m_step, st, sizeof(int64_t) * (size_t)nb);
        s->m_row = st[r - 2];
        s->m_col = st[r - 1];
    }
    if (s->units < 1 || s->S < 1 || s->Sk < 1 || s->D < 1 || s->Dv < 1)
        return false;
    if (merged_output(node)) { /* y [B, S, H, Dv]: a head's rows H * Dv apart */
        s->y_ld = y.dims[1] * s->Dv;
        s->y_step[0] = s->S * s->y_ld, s->y_step[1] = s->Dv;
    } else {
        s->y_ld = s->Dv;
        int64_t yi = s->S * s->Dv;
        for (int d = nb - 1; d >= 0; d--) {
            s->y_step[d] = yi;
            yi *= y.dims[d];
        }
    }
    int team = cpu_team_size(node, cpu_config_get()->threads);
    s->team = team > s->units ? (int)s->units : team < 1 ? 1 : team;
    s->head_scores = ((size_t)(s->S * s->Sk) * sizeof(float) + 63) & ~(size_t)63;
    s->scratch = (size_t)s->team * s->head_scores;
    s->scale = rn_node_attr_float(node, "scale", 1.0f);
    s->denormals = cpu_config_get()->denormals;
    s->bind = cpu_config_get()->bind;
    s->stream_threads = cpu_config_get()->threads;
    s->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    s->heads = true;
    tiles_build(s);
    return true;
}

/* ---- bf16 heads: Q, K, V and y in bf16, products by vdpbf16ps ---- */

/* RN_CPU_ATTENTION_BF16=0 at compile time keeps the f32 heads (and the
 * conversions of Q, K, V to f32 around them) in bf16 models: an A/B switch
 * for bench/models (docs/cpu.md). */
static bool bf16_enabled(void)
{
    const char *v = getenv("RN_CPU_ATTENTION_BF16");
    return v == NULL || strcmp(v, "0") != 0;
}

#define BF16_ROWS 8  /* score rows a tile computes */
#define BF16_COLS 32 /* columns of a tile: two vectors of 16 */

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static size_t aligned(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* Where the heads path runs in bf16: the model computes in bf16 on a CPU
 * with avx512_bf16 (AMX ones have it too), and the producers of Q, K and
 * V wrote plain bf16 of the inputs' shapes (the products' outputs through
 * the CPU's Reshape views), so reading them as they are needs no
 * conversion; D even (Q's pairs along D are read in place). The output
 * is plain bf16 of the output's shape. Else the f32 heads, unchanged. */
static void bf16_build(const rn_node *node, const rn_kernel_ctx *ctx, sdpa_state *s)
{
    if (!cpu_config_get()->bf16 || rn_node_attr_int(node, TRANSFORMS_ATTR_F32, 0) != 0 ||
        !bf16_enabled() || !__builtin_cpu_supports("avx512bf16") ||
        !__builtin_cpu_supports("avx512bw") || ctx == NULL || ctx->n_input_layouts < 3 ||
        s->D % 2 != 0)
        return;
    for (int k = 0; k < 3; k++) {
        rn_partial_shape x = rn_node_input_shape(node, k);
        const rn_layout *l = ctx->input_layouts[k];
        if (!cpu_layout_plain_of(l, RN_BF16, x.rank, x.dims))
            return;
        cpu_layout_init(&s->in_l[k], (const cpu_md *)l->desc, RN_F32, &s->in_layout[k]);
    }
    /* The output in bf16, or, where the bf16 policy keeps the tail f32, in
     * plain f32 (no layout). */
    rn_partial_shape y = rn_node_output_shape(node, 0);
    cpu_md md;
    s->y_f32 = cpu_dst_type(node, dnnl_bf16) == dnnl_f32;
    if (cpu_plain_md(s->y_f32 ? RN_F32 : RN_BF16, y.rank, y.dims, &md) != RN_OK) {
        rn_clear_error();
        return;
    }
    cpu_layout_init(&s->out_l, &md, RN_F32, &s->out_layout);
    int64_t k2 = s->D / 2, sk2 = (s->Sk + 1) / 2;
    s->ldk = round_up(s->Sk, BF16_COLS);
    s->ldv = round_up(s->Dv, BF16_COLS);
    s->ldp = 2 * sk2;
    s->kp_at = 0;
    s->vp_at = s->kp_at + aligned((size_t)(k2 * s->ldk) * 4);
    s->sc_at = s->vp_at + aligned((size_t)(sk2 * s->ldv) * 4);
    s->pb_at = s->sc_at + aligned((size_t)(BF16_ROWS * s->ldk) * 4);
    s->head_scores = s->pb_at + aligned((size_t)(BF16_ROWS * s->ldp) * 2);
    s->scratch = (size_t)s->team * s->head_scores;
    s->bf16 = true;
}

#define BF16_TARGET   __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma")))
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

/* c[r][0..1] = sum over p < k2 of a_r's pair p times b's row p (32
 * columns): a_r bf16 rows (pairs read as dwords), b dwords [k2][ldb], each
 * a pair of bf16 of one column, lower element first. */
BF16_TARGET static inline void tile_bf16(const uint16_t *const a[BF16_ROWS], int64_t k2,
                                         const uint32_t *b, int64_t ldb, __m512 c[BF16_ROWS][2])
{
#pragma GCC unroll 8
    for (int r = 0; r < BF16_ROWS; r++)
        c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k2; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * ldb);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + p * ldb + 16);
#pragma GCC unroll 8
        for (int r = 0; r < BF16_ROWS; r++) {
            int32_t pair;
            memcpy(&pair, a[r] + 2 * p, sizeof pair);
            __m512bh x = (__m512bh)_mm512_set1_epi32(pair);
            c[r][0] = _mm512_dpbf16_ps(c[r][0], x, b0);
            c[r][1] = _mm512_dpbf16_ps(c[r][1], x, b1);
        }
    }
}

/* The columns j..j+15 of a row of n as a mask: all, the tail, or none. */
static __mmask16 cols16(int64_t j, int64_t n)
{
    return j + 16 <= n ? (__mmask16)0xffff : j < n ? (__mmask16)((1u << (n - j)) - 1) : 0;
}

/* In place: rows r[0..8) of an 8x8 block become its columns. */
AVX512_TARGET static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* dst [c][ldd] = the transpose of src's n rows of c dwords (rows ld bytes
 * apart), 0 from column n up to ldd: 8x8 blocks transposed in registers,
 * the edges one by one (16-row gathers instead took 11 % of an f32 head).
 * A dword is an f32 (K^T for the f32 heads) or a pair of bf16 (K's columns
 * as vdpbf16ps reads them): only moved, never computed on. */
AVX512_TARGET static void transpose_dwords(const void *src, int64_t ld, int64_t n, int64_t c,
                                           void *dst, int64_t ldd)
{
    const char *from = src;
    float *to = dst;
    for (int64_t p = 0; p < c; p++)
        memset(to + p * ldd + n, 0, (size_t)(ldd - n) * sizeof(float));
    int64_t n8 = n & ~(int64_t)7, c8 = c & ~(int64_t)7;
    __m256 r[8];
    for (int64_t j = 0; j < n8; j += 8)
        for (int64_t p = 0; p < c8; p += 8) {
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_loadu_ps((const float *)(from + (j + i) * ld) + p);
            transpose8(r);
            for (int i = 0; i < 8; i++)
                _mm256_storeu_ps(to + (p + i) * ldd + j, r[i]);
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = j < n8 ? c8 : 0; p < c; p++)
            memcpy(to + p * ldd + j, from + j * ld + p * (int64_t)sizeof(float), sizeof(float));
}

/* dst[p][j] = (src[2p][j], src[2p + 1][j]) for j < n, 0 up to ldb: rows of
 * src (k of them, ld apart) interleaved in pairs; an odd k's last pair
 * has a 0 above. */
BF16_TARGET static void pack_rows(const uint16_t *src, int64_t ld, int64_t k, int64_t n,
                                  uint32_t *dst, int64_t ldb)
{
    for (int64_t p = 0; p < (k + 1) / 2; p++) {
        const uint16_t *lo = src + 2 * p * ld, *hi = 2 * p + 1 < k ? lo + ld : NULL;
        uint32_t *d = dst + p * ldb;
        for (int64_t j = 0; j < ldb; j += 16) {
            __mmask16 m = cols16(j, n);
            __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo + j));
            __m512i h = hi != NULL ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi + j))
                                   : _mm512_setzero_si512();
            _mm512_storeu_si512(d + j, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
        }
    }
}

/* dst[p][j] = (src[j][2p], src[j][2p + 1]) for j < n rows of src (ld
 * apart, k columns, k even), 0 up to ldb: K's rows as the columns of K^T,
 * its dwords transposed. */
BF16_TARGET static void pack_cols(const uint16_t *src, int64_t ld, int64_t k, int64_t n,
                                  uint32_t *dst, int64_t ldb)
{
    transpose_dwords(src, ld * (int64_t)sizeof(uint16_t), n, k / 2, dst, ldb);
}

/* exp of 16 floats x <= 0 (x - the row's maximum): Cephes' polynomial on
 * x - n ln 2, n = round(x / ln 2), times 2^n by scalef (relative error
 * ~1e-7, exp8's); x clamped at ln of f32's least normal, so that a masked
 * score (float32 min added) gives ~1e-38, nothing against the row's sum
 * of at least 1. */
AVX512_TARGET static inline __m512 exp16(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.33654f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    x = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), x);
    __m512 y = _mm512_set1_ps(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(y, n);
}

/* Stores columns j..j+15 of a score row: scale * c plus the mask's (m:
 * the row's mask, m_col 1 a value per column, 0 one for the row; NULL
 * none), and folds them (the row's columns only) into the row's maximum. */
AVX512_TARGET static inline void store_scores(float *row, int64_t j, int64_t n, __m512 c,
                                              __m512 scale, const float *m, int64_t m_col,
                                              __m512 *max)
{
    __mmask16 k = cols16(j, n);
    __m512 x = _mm512_mul_ps(c, scale);
    if (m != NULL)
        x = _mm512_add_ps(x, m_col == 1 ? _mm512_maskz_loadu_ps(k, m + j) : _mm512_set1_ps(m[0]));
    _mm512_storeu_ps(row + j, x);
    *max = _mm512_mask_max_ps(*max, k, *max, x);
}

/* Row x[0..n) of masked scores whose maximum is in max's lanes as
 * exp(x - max) in bf16 (round to nearest even) in y[0..round_up(n, 2)),
 * an odd n's last pair closed by a 0; returns 1 / their sum (in f32),
 * by which the row's output is scaled. */
BF16_TARGET static float exp_row(const float *x, int64_t n, __m512 max, uint16_t *y)
{
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(max)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 k = cols16(j, n);
        __m512 e =
            _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), mx)));
        sum = _mm512_add_ps(sum, e);
        _mm256_mask_storeu_epi16(y + j, k, (__m256i)_mm512_cvtneps_pbh(e));
    }
    if (n % 2 != 0)
        y[n] = 0;
    return 1.0f / _mm512_reduce_add_ps(sum);
}

/* One head: Q_h [S, D], K_h (k_t: [Sk, D], else K^T [D, Sk]), V_h [Sk, Dv]
 * in bf16, y_h [S, Dv] in bf16; mask (f32) as the f32 heads read it.
 * Blocks of BF16_ROWS rows: scale * Q @ K^T + mask in f32 (the rows'
 * maximums as they are stored), exp(score - maximum) as bf16 (the
 * softmax's numerators), @ V, each row scaled by 1 / its numerators' sum
 * (f32) as it is stored: the softmax normalised after the product, which
 * rounds the same probabilities to bf16 to within the scaling. A block's
 * rows past S read the last row again and are not stored. */
BF16_TARGET static void head_bf16(const sdpa_state *s, const uint16_t *q, const uint16_t *k,
                                  const uint16_t *v, const float *mask, void *y, float scale,
                                  char *scratch)
{
    uint32_t *kp = (uint32_t *)(scratch + s->kp_at), *vp = (uint32_t *)(scratch + s->vp_at);
    float *sc = (float *)(scratch + s->sc_at);
    uint16_t *pb = (uint16_t *)(scratch + s->pb_at);
    if (s->k_t)
        pack_cols(k, s->k_ld, s->D, s->Sk, kp, s->ldk);
    else
        pack_rows(k, s->k_ld, s->D, s->Sk, kp, s->ldk);
    pack_rows(v, s->v_ld, s->Sk, s->Dv, vp, s->ldv);
    __m512 vscale = _mm512_set1_ps(scale);
    __m512 c[BF16_ROWS][2], max[BF16_ROWS];
    float inv[BF16_ROWS];
    const uint16_t *a[BF16_ROWS];
    const float *m[BF16_ROWS];
    for (int64_t i0 = 0; i0 < s->S; i0 += BF16_ROWS) {
        int mb = s->S - i0 < BF16_ROWS ? (int)(s->S - i0) : BF16_ROWS;
        for (int r = 0; r < BF16_ROWS; r++) {
            a[r] = q + (i0 + (r < mb ? r : mb - 1)) * s->q_ld;
            m[r] = mask != NULL && r < mb ? mask + (i0 + r) * s->m_row : NULL;
            max[r] = _mm512_set1_ps(-INFINITY);
        }
        for (int64_t j0 = 0; j0 < s->Sk; j0 += BF16_COLS) {
            tile_bf16(a, s->D / 2, kp + j0, s->ldk, c);
            for (int r = 0; r < mb; r++) {
                float *row = sc + r * s->ldk;
                store_scores(row, j0, s->Sk, c[r][0], vscale, m[r], s->m_col, &max[r]);
                store_scores(row, j0 + 16, s->Sk, c[r][1], vscale, m[r], s->m_col, &max[r]);
            }
        }
        for (int r = 0; r < mb; r++)
            inv[r] = exp_row(sc + r * s->ldk, s->Sk, max[r], pb + r * s->ldp);
        for (int r = 0; r < BF16_ROWS; r++)
            a[r] = pb + (r < mb ? r : mb - 1) * s->ldp;
        for (int64_t d0 = 0; d0 < s->Dv; d0 += BF16_COLS) {
            tile_bf16(a, s->ldp / 2, vp + d0, s->ldv, c);
            __mmask16 m0 = cols16(d0, s->Dv), m1 = cols16(d0 + 16, s->Dv);
            for (int r = 0; r < mb; r++) {
                __m512 f = _mm512_set1_ps(inv[r]);
                __m512 y0 = _mm512_mul_ps(c[r][0], f), y1 = _mm512_mul_ps(c[r][1], f);
                int64_t at = (i0 + r) * s->y_ld + d0;
                if (s->y_f32) {
                    _mm512_mask_storeu_ps((float *)y + at, m0, y0);
                    _mm512_mask_storeu_ps((float *)y + at + 16, m1, y1);
                } else {
                    uint16_t *row = (uint16_t *)y + at;
                    _mm256_mask_storeu_epi16(row, m0, (__m256i)_mm512_cvtneps_pbh(y0));
                    _mm256_mask_storeu_epi16(row + 16, m1, (__m256i)_mm512_cvtneps_pbh(y1));
                }
            }
        }
    }
}

/* ---- f32 heads: runnel's own products in registers ---- */

/* RN_CPU_ATTENTION_TILES=0 at compile time keeps per-head dnnl_sgemm for
 * the f32 heads: an A/B switch for bench/models (docs/cpu.md). */
static bool tiles_enabled(void)
{
    const char *v = getenv("RN_CPU_ATTENTION_TILES");
    return v == NULL || strcmp(v, "0") != 0;
}

#define F32_ROWS 8  /* score rows a tile computes */
#define F32_COLS 32 /* columns of a tile: two vectors of 16 */

/* The f32 heads on AVX-512 as one pass per block of rows, as the bf16
 * heads do: the block's scores (scale * Q @ K^T + mask, each row's maximum
 * as it is stored) stay in L1, exp(score - maximum) in place, @ V read in
 * place, each output row scaled by 1 / its sum. The ISA oneDNN dispatches
 * to decides (ONEDNN_MAX_CPU_ISA=AVX2 keeps dnnl_sgemm on an AVX-512
 * host). On AVX2 an 8-float version of the same kernel took what
 * dnnl_sgemm takes (bench/LOG.md, "f32 attention heads in registers"): no
 * AVX2 kernel. */
static void tiles_build(sdpa_state *s)
{
    s->tiles = false;
    if (!tiles_enabled() || !cpu_has_avx512() || !__builtin_cpu_supports("avx512f") ||
        !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
        return;
    s->tiles = true;
    s->ldk = round_up(s->Sk, F32_COLS);
    s->kp_at = 0;
    s->sc_at = aligned((size_t)(s->D * s->ldk) * sizeof(float));
    s->head_scores = s->sc_at + aligned((size_t)(F32_ROWS * s->ldk) * sizeof(float));
    s->scratch = (size_t)s->team * s->head_scores;
}

/* kp [D][ldk] = K^T, 0 past Sk: Kt's rows (K^T [D, Sk] rows k_ld apart)
 * copied, or (k_t) K's [Sk, D] transposed. */
AVX512_TARGET static void pack_kt(const sdpa_state *s, const float *k, float *kp)
{
    if (s->k_t) {
        transpose_dwords(k, s->k_ld * (int64_t)sizeof(float), s->Sk, s->D, kp, s->ldk);
        return;
    }
    for (int64_t p = 0; p < s->D; p++) {
        memcpy(kp + p * s->ldk, k + p * s->k_ld, (size_t)s->Sk * sizeof(float));
        memset(kp + p * s->ldk + s->Sk, 0, (size_t)(s->ldk - s->Sk) * sizeof(float));
    }
}

/* c[r][0..1] = sum over p < k of a_r[p] times b's row p (32 columns, the
 * masks' lanes; rows ldb apart). The sums are a local array (registers):
 * vector types may alias floats, so sums kept in c would be stored back
 * at every p. */
AVX512_TARGET static inline void tile_512(const float *const a[F32_ROWS], int64_t k, const float *b,
                                          int64_t ldb, __mmask16 m0, __mmask16 m1,
                                          __m512 c[F32_ROWS][2])
{
    __m512 acc[F32_ROWS][2];
#pragma GCC unroll 8
    for (int r = 0; r < F32_ROWS; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; p++) {
        __m512 b0 = _mm512_maskz_loadu_ps(m0, b + p * ldb);
        __m512 b1 = _mm512_maskz_loadu_ps(m1, b + p * ldb + 16);
#pragma GCC unroll 8
        for (int r = 0; r < F32_ROWS; r++) {
            __m512 x = _mm512_set1_ps(a[r][p]);
            acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < F32_ROWS; r++)
        c[r][0] = acc[r][0], c[r][1] = acc[r][1];
}

/* Row x[0..n) of masked scores whose maximum is in max's lanes as
 * exp(x - max), in place; returns 1 / their sum. */
AVX512_TARGET static float exp_row_512(float *x, int64_t n, __m512 max)
{
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(max)), sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 k = cols16(j, n);
        __m512 e =
            _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), mx)));
        sum = _mm512_add_ps(sum, e);
        _mm512_mask_storeu_ps(x + j, k, e);
    }
    return 1.0f / _mm512_reduce_add_ps(sum);
}

/* One head in f32 on AVX-512: Q_h [S, D] rows q_ld apart, K_h (k_t: [Sk,
 * D], else K^T [D, Sk]), V_h [Sk, Dv], y_h [S, Dv]. A block's rows past S
 * read the last row again and are not stored. */
AVX512_TARGET static void head_f32_512(const sdpa_state *s, const float *q, const float *k,
                                       const float *v, const float *mask, float *y, float scale,
                                       char *scratch)
{
    float *kp = (float *)(scratch + s->kp_at), *sc = (float *)(scratch + s->sc_at);
    pack_kt(s, k, kp);
    __m512 vscale = _mm512_set1_ps(scale);
    __m512 c[F32_ROWS][2], max[F32_ROWS];
    float inv[F32_ROWS];
    const float *a[F32_ROWS], *m[F32_ROWS];
    for (int64_t i0 = 0; i0 < s->S; i0 += F32_ROWS) {
        int mb = s->S - i0 < F32_ROWS ? (int)(s->S - i0) : F32_ROWS;
        for (int r = 0; r < F32_ROWS; r++) {
            a[r] = q + (i0 + (r < mb ? r : mb - 1)) * s->q_ld;
            m[r] = mask != NULL && r < mb ? mask + (i0 + r) * s->m_row : NULL;
            max[r] = _mm512_set1_ps(-INFINITY);
        }
        for (int64_t j0 = 0; j0 < s->Sk; j0 += F32_COLS) {
            tile_512(a, s->D, kp + j0, s->ldk, 0xffff, 0xffff, c);
            for (int r = 0; r < mb; r++) {
                float *row = sc + r * s->ldk;
                store_scores(row, j0, s->Sk, c[r][0], vscale, m[r], s->m_col, &max[r]);
                store_scores(row, j0 + 16, s->Sk, c[r][1], vscale, m[r], s->m_col, &max[r]);
            }
        }
        for (int r = 0; r < mb; r++)
            inv[r] = exp_row_512(sc + r * s->ldk, s->Sk, max[r]);
        for (int r = 0; r < F32_ROWS; r++)
            a[r] = sc + (r < mb ? r : mb - 1) * s->ldk;
        for (int64_t d0 = 0; d0 < s->Dv; d0 += F32_COLS) {
            __mmask16 m0 = cols16(d0, s->Dv), m1 = cols16(d0 + 16, s->Dv);
            tile_512(a, s->Sk, v + d0, s->v_ld, m0, m1, c);
            for (int r = 0; r < mb; r++) {
                __m512 f = _mm512_set1_ps(inv[r]);
                float *row = y + (i0 + r) * s->y_ld + d0;
                _mm512_mask_storeu_ps(row, m0, _mm512_mul_ps(c[r][0], f));
                _mm512_mask_storeu_ps(row + 16, m1, _mm512_mul_ps(c[r][1], f));
            }
        }
    }
}

typedef struct heads_run {
    const sdpa_state *s;
    const void *q, *k, *v; /* f32, or bf16 (s->bf16) */
    const float *mask;
    void *y;
    char *scratch;
    float scale;
    bool denormals, avx2;
    atomic_llong next; /* the next head to take */
    atomic_int failed; /* a dnnl_sgemm status other than success */
} heads_run;

static void heads_work(void *arg, int thread)
{
    heads_run *w = arg;
    const sdpa_state *s = w->s;
    /* The master entered before the fork (heads_run_node); a team thread
     * gets the denormal mode (and, a plain thread under TSan, no team of
     * its own for dnnl_sgemm). */
    cpu_thread_state saved = {0};
    if (thread != 0)
        saved = cpu_enter(1, w->denormals);
    float *sc = (float *)(w->scratch + (size_t)thread * s->head_scores);
    for (;;) {
        long long u = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed);
        if (u >= s->units)
            break;
        int64_t qo = 0, ko = 0, vo = 0, mo = 0, yo = 0, rest = u;
        for (int d = s->n_batch - 1; d >= 0; d--) {
            int64_t i = rest % s->batch[d];
            rest /= s->batch[d];
            qo += i * s->q_step[d], ko += i * s->k_step[d], vo += i * s->v_step[d];
            mo += i * s->m_step[d], yo += i * s->y_step[d];
        }
        if (s->bf16) {
            head_bf16(s, (const uint16_t *)w->q + qo, (const uint16_t *)w->k + ko,
                      (const uint16_t *)w->v + vo, w->mask != NULL ? w->mask + mo : NULL,
                      s->y_f32 ? (void *)((float *)w->y + yo) : (void *)((uint16_t *)w->y + yo),
                      w->scale, (char *)sc);
            continue;
        }
        if (s->tiles) {
            head_f32_512(s, (const float *)w->q + qo, (const float *)w->k + ko,
                         (const float *)w->v + vo, w->mask != NULL ? w->mask + mo : NULL,
                         (float *)w->y + yo, w->scale, (char *)sc);
            continue;
        }
        dnnl_status_t ds = dnnl_sgemm('N', s->k_t ? 'T' : 'N', s->S, s->Sk, s->D, w->scale,
                                      (const float *)w->q + qo, s->q_ld, (const float *)w->k + ko,
                                      s->k_ld, 0.0f, sc, s->Sk);
        for (int64_t i = 0; i < s->S && ds == dnnl_success; i++) {
            const float *m = w->mask != NULL ? w->mask + mo + i * s->m_row : NULL;
            if (w->avx2)
                softmax_avx2(sc + i * s->Sk, m, s->m_col, s->Sk);
            else
                softmax_plain(sc + i * s->Sk, m, s->m_col, s->Sk);
        }
        if (ds == dnnl_success)
            ds = dnnl_sgemm('N', 'N', s->S, s->Dv, s->Sk, 1.0f, sc, s->Sk, (const float *)w->v + vo,
                            s->v_ld, 0.0f, (float *)w->y + yo, s->y_ld);
        if (ds != dnnl_success) {
            atomic_store_explicit(&w->failed, (int)ds, memory_order_relaxed);
            break;
        }
    }
    if (thread != 0)
        cpu_leave(saved);
}

static rn_status heads_run_node(rn_kernel_args *args)
{
    const sdpa_state *s = args->state;
    heads_run w = {
        .s = s,
        .q = args->inputs[0].data,
        .k = args->inputs[1].data,
        .v = args->inputs[2].data,
        .mask = s->has_mask ? args->inputs[3].data : NULL,
        .y = args->outputs[0].data,
        .scratch = args->scratch.data,
        .scale = s->scale,
        .denormals = s->denormals,
        .avx2 = s->avx2,
    };
    atomic_init(&w.next, 0);
    atomic_init(&w.failed, (int)dnnl_success);
    cpu_bind_enter(s->bind, s->stream_threads);
    cpu_team_count(CPU_TEAM_PRIMITIVE, s->team);
    /* One thread's OpenMP maximum on the master: dnnl_sgemm forks no team
     * of its own; the fork's own cpu_wait_check / cpu_wait_done (team.c)
     * bracket the team's work for the wait policy (wait.c). */
    cpu_thread_state saved = cpu_enter(1, s->denormals);
    if (s->team > 1)
        cpu_branch_fork(heads_work, &w, s->team);
    else
        heads_work(&w, 0);
    cpu_leave(saved);
    int failed = atomic_load_explicit(&w.failed, memory_order_relaxed);
    if (failed != (int)dnnl_success)
        return cpu_error(args->node, "running the attention's heads", (dnnl_status_t)failed);
    return RN_OK;
}

static rn_status sdpa_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    sdpa_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    s->has_mask = rn_node_input_count(node) > 3 && rn_node_input_name(node, 3)[0] != '\0';
    rn_status st = build(node, ctx, s);
    if (st != RN_OK) {
        sdpa_release(s);
        return st;
    }
    *state = s;
    return RN_OK;
}

static rn_status sdpa_run(rn_kernel_args *args)
{
    const sdpa_state *s = args->state;
    if (args->scratch.data == NULL || args->scratch.nbytes < s->scratch)
        return rn_set_error(RN_INTERNAL, "node '%s': no scratch for the attention scores",
                            rn_node_name(args->node));
    if (s->heads)
        return heads_run_node(args);
    void *scores = (char *)args->scratch.data + s->scores_at;
    void *mask = s->has_mask ? args->inputs[3].data : NULL;
    cpu_arg qk[4] = {
        {DNNL_ARG_SRC, &s->q, args->inputs[0].data},
        {DNNL_ARG_WEIGHTS, &s->kt, args->inputs[1].data},
        {DNNL_ARG_DST, &s->scores, scores},
        {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, &s->mask, mask},
    };
    rn_status st = cpu_execute(&s->p[QK], args, qk, s->has_mask && !s->has_add ? 4 : 3);
    if (st == RN_OK && s->has_add) {
        cpu_arg add[3] = {{DNNL_ARG_SRC_0, &s->scores, scores},
                          {DNNL_ARG_SRC_1, &s->mask, mask},
                          {DNNL_ARG_DST, &s->scores, scores}};
        st = cpu_execute(&s->p[ADD], args, add, 3);
    }
    if (st == RN_OK) {
        cpu_arg sm[2] = {{DNNL_ARG_SRC, &s->scores, scores}, {DNNL_ARG_DST, &s->scores, scores}};
        st = cpu_execute(&s->p[SOFTMAX], args, sm, 2);
    }
    if (st == RN_OK) {
        cpu_arg pv[3] = {
            {DNNL_ARG_SRC, &s->scores, scores},
            {DNNL_ARG_WEIGHTS, &s->v, args->inputs[2].data},
            {DNNL_ARG_DST, &s->dst, args->outputs[0].data},
        };
        st = cpu_execute(&s->p[PV], args, pv, 3);
    }
    return st;
}

const rn_kernel cpu_kernel_scaled_dot_product_attention = {
    .domain = "runnel",
    .op_type = "ScaledDotProductAttention",
    .impl_type = "onednn",
    .supports = sdpa_supports,
    .prepare_ctx = sdpa_prepare,
    .run = sdpa_run,
    .release = sdpa_release,
    .input_layout = sdpa_input_layout,
    .output_layout = sdpa_output_layout,
    .scratch_bytes = sdpa_scratch,
    .impl_name = sdpa_impl,
};
