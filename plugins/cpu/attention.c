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
 * through strided descriptors, where the exporter's Transposes copied them. */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"

enum { QK, ADD, SOFTMAX, PV, N_PRIMS };

typedef struct sdpa_state {
    cpu_prim p[N_PRIMS]; /* p[ADD] only when the mask is not a post-op */
    bool has_add;
    dnnl_memory_desc_t q, kt, v, mask, scores, dst;
    bool has_mask;
    size_t scores_at; /* offset of the scores in the scratch */
    size_t scratch;
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
    return cpu_static_node(node, why);
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
    return ((const sdpa_state *)state)->p[QK].impl;
}

/* The plain descriptor of input k at rank r (leading 1s); with `perm`
 * (qkv_layout BSHD: rank 4) the input viewed permuted, with strides: dim d
 * of the view is the input's dim perm[d]. */
static rn_status input_md(const rn_node *node, int k, int r, const int *perm,
                          dnnl_memory_desc_t *md)
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
    dnnl_status_t ds = dnnl_memory_desc_init_by_strides(md, 4, view, dnnl_f32, strides);
    return ds == dnnl_success ? RN_OK : cpu_error(node, "describing the attention's heads", ds);
}

/* Creates the primitive of op descriptor d with attribute attr (taken over)
 * into p; *done false when oneDNN has no implementation. */
static rn_status make_prim(const rn_node *node, const void *d, dnnl_primitive_attr_t attr,
                           cpu_prim *p, bool *done)
{
    dnnl_engine_t eng = NULL;
    rn_status st = cpu_engine(&eng);
    dnnl_primitive_desc_t pd = NULL;
    *done = false;
    if (st == RN_OK) {
        int prev = cpu_team_begin(node);
        dnnl_status_t ds = dnnl_primitive_desc_create(&pd, d, attr, eng, NULL);
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
    dnnl_matmul_desc_t d;
    dnnl_status_t ds = dnnl_matmul_desc_init(&d, &s->q, &s->kt, NULL, &s->scores);
    if (ds == dnnl_success && post && (ds = dnnl_post_ops_create(&po)) == dnnl_success)
        ds = dnnl_post_ops_append_binary(po, dnnl_binary_add, &s->mask);
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
    float scale = rn_node_attr_float(node, "scale", 1.0f);
    if (scale != 1.0f &&
        (ds = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale)) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return cpu_error(node, "setting the attention scale", ds);
    }
    return make_prim(node, &d, attr, &s->p[QK], done);
}

static rn_status build(const rn_node *node, sdpa_state *s)
{
    static const int split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
    bool bshd = strcmp(rn_node_attr_string(node, "qkv_layout", "BHSD"), "BSHD") == 0;
    rn_partial_shape y = rn_node_output_shape(node, 0);
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
    if ((st = cpu_plain_md(RN_F32, r, sdims, &s->scores)) != RN_OK ||
        (st = cpu_plain_md(RN_F32, r, y.dims, &s->dst)) != RN_OK)
        return st;
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
        dnnl_binary_desc_t bd;
        dnnl_status_t ds =
            dnnl_binary_desc_init(&bd, dnnl_binary_add, &s->scores, &s->mask, &s->scores);
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
    dnnl_softmax_v2_desc_t sd;
    dnnl_status_t ds = dnnl_softmax_v2_forward_desc_init(
        &sd, dnnl_forward_inference, dnnl_softmax_accurate, &s->scores, &s->scores, r - 1);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the attention softmax", ds);
    if ((st = cpu_attr(node, NULL, &attr)) != RN_OK ||
        (st = make_prim(node, &sd, attr, &s->p[SOFTMAX], &done)) != RN_OK)
        return st;
    if (!done)
        return cpu_error(node, "creating the attention softmax", dnnl_unimplemented);
    dnnl_matmul_desc_t md;
    if ((ds = dnnl_matmul_desc_init(&md, &s->scores, &s->v, NULL, &s->dst)) != dnnl_success)
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
    s->scratch = s->scores_at + dnnl_memory_desc_get_size(&s->scores);
    return RN_OK;
}

static rn_status sdpa_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    sdpa_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    s->has_mask = rn_node_input_count(node) > 3 && rn_node_input_name(node, 3)[0] != '\0';
    rn_status st = build(node, s);
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
    .scratch_bytes = sdpa_scratch,
    .impl_name = sdpa_impl,
};
