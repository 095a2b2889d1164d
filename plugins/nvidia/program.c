/* Lowering the claimed model to a program: values (with views resolved to
 * their roots), steps with their attributes parsed once, the conversions
 * f16 and bf16 need at the inputs and outputs, and the static memory plan
 * (liveness-based offsets in one arena per request slot; constants in one
 * weights buffer per compiled model; pinned staging for the host copies).
 * Plain C: it needs no GPU, and tests check it on the light models. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"

#define ALIGN 256

static size_t align_up(size_t x)
{
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

typedef struct lowering {
    nv_program *p;
    int cap_values, cap_steps;
    const rn_node *const *nodes;
    int n_nodes;
    const char *const *output_names;
    int n_outputs;
    bool channels_last; /* NHWC around f16 and bf16 convolutions (choose_layouts) */
} lowering;

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory lowering the model");
}

static int find_value(const nv_program *p, const char *name)
{
    for (int i = p->n_values - 1; i >= 0; i--)
        if (strcmp(p->values[i].name, name) == 0)
            return i;
    return -1;
}

/* Adds a value of `host_type` and shape (static), on the device in the
 * program's compute type when that is f32 (f16 or bf16 in those modes). */
static rn_status add_value(lowering *l, const char *name, rn_element_type host_type,
                           const rn_partial_shape *shape, int *out)
{
    nv_program *p = l->p;
    if (p->n_values == l->cap_values) {
        int cap = l->cap_values ? 2 * l->cap_values : 64;
        nv_value *v = realloc(p->values, (size_t)cap * sizeof *v);
        if (v == NULL)
            return oom();
        p->values = v;
        l->cap_values = cap;
    }
    nv_value *v = &p->values[p->n_values];
    memset(v, 0, sizeof *v);
    if ((v->name = strdup(name)) == NULL)
        return oom();
    v->host_type = host_type;
    v->type = host_type == RN_F32 ? p->compute : host_type;
    v->rank = shape->rank;
    v->count = 1;
    for (int d = 0; d < shape->rank; d++) {
        v->dims[d] = shape->dims[d];
        v->count *= (size_t)shape->dims[d];
    }
    v->nbytes = v->count * rn_element_type_size(v->type);
    v->storage = NV_ARENA;
    v->root = p->n_values;
    v->first = v->last = -2;
    v->input = v->output = -1;
    *out = p->n_values++;
    return RN_OK;
}

static rn_status add_step(lowering *l, const nv_step *s)
{
    nv_program *p = l->p;
    if (p->n_steps == l->cap_steps) {
        int cap = l->cap_steps ? 2 * l->cap_steps : 64;
        nv_step *n = realloc(p->steps, (size_t)cap * sizeof *n);
        if (n == NULL)
            return oom();
        p->steps = n;
        l->cap_steps = cap;
    }
    p->steps[p->n_steps++] = *s;
    return RN_OK;
}

/* The value an input of node reads (-1 for an omitted optional input). */
static rn_status input_value(lowering *l, const rn_node *n, int i, int *out)
{
    const char *name = rn_node_input_name(n, i);
    if (name[0] == '\0') {
        *out = -1;
        return RN_OK;
    }
    int v = find_value(l->p, name);
    if (v < 0)
        return rn_set_error(RN_UNSUPPORTED,
                            "NVIDIA: node '%s' (%s) reads '%s', which NVIDIA does not compute "
                            "(a Dropout mask)",
                            rn_node_name(n), rn_node_op_type(n), name);
    *out = v;
    return RN_OK;
}

static rn_status output_value(lowering *l, const rn_node *n, int *out)
{
    rn_partial_shape s = rn_node_output_shape(n, 0);
    return add_value(l, rn_node_output_name(n, 0), rn_node_output_type(n, 0), &s, out);
}

static nv_act parse_act(const char *name, const float *params, int n_params, float *alpha,
                        float *beta)
{
    *alpha = 0.0f, *beta = 0.0f;
    if (strcmp(name, "Relu") == 0)
        return NV_ACT_RELU;
    if (strcmp(name, "Sigmoid") == 0)
        return NV_ACT_SIGMOID;
    if (strcmp(name, "Tanh") == 0)
        return NV_ACT_TANH;
    if (strcmp(name, "LeakyRelu") == 0) {
        float p[1];
        rn_activation_params(name, params, n_params < 0 ? 0 : n_params, p, 1);
        *alpha = p[0]; /* activation_params, else LeakyRelu's default */
        return NV_ACT_LEAKY_RELU;
    }
    if (strcmp(name, "Clip") == 0) {
        *alpha = n_params > 0 ? params[0] : -3.4e38f;
        *beta = n_params > 1 ? params[1] : 3.4e38f;
        return NV_ACT_CLIP;
    }
    if (strcmp(name, "Gelu") == 0)
        return NV_ACT_GELU;
    if (strcmp(name, "GeluTanh") == 0)
        return NV_ACT_GELU_TANH;
    return NV_ACT_NONE;
}

static void fused_act(const rn_node *n, nv_step *s)
{
    const float *params = NULL;
    int np = rn_node_attr_floats(n, "activation_params", &params);
    s->act = parse_act(rn_node_attr_string(n, "activation", ""), params, np, &s->alpha, &s->beta);
}

static int64_t prod(const int64_t *dims, int from, int to)
{
    int64_t r = 1;
    for (int d = from; d < to; d++)
        r *= dims[d];
    return r;
}

static float const_scalar(const rn_node *n, int i, float dflt)
{
    if (i >= rn_node_input_count(n) || rn_node_input_name(n, i)[0] == '\0')
        return dflt;
    const rn_kernel_tensor *c = rn_node_input_constant(n, i);
    if (c == NULL || c->type != RN_F32 || c->nbytes < sizeof(float))
        return dflt;
    return *(const float *)c->data;
}

/* The window as parsed once (rn_node_window; shape inference has read it
 * already, so it parses): strides, dilations, the explicit pads (none for
 * VALID; SAME_* is refused by nv_supports) and kernel_shape when given. */
static void conv_attrs(const rn_node *n, nv_step *s)
{
    rn_window w;
    s->strides[0] = s->strides[1] = 1;
    s->dilations[0] = s->dilations[1] = 1;
    if (rn_node_window(n, 2, NULL, false, &w) != RN_OK) {
        rn_clear_error();
        return;
    }
    for (int d = 0; d < 2; d++) {
        s->strides[d] = w.stride[d];
        s->dilations[d] = w.dilation[d];
        if (w.kernel_known)
            s->kernel[d] = w.kernel[d];
    }
    if (w.auto_pad == RN_AUTO_PAD_NOTSET)
        for (int i = 0; i < 4; i++)
            s->pads[i] = w.pads[i];
}

/* How many inputs of the claimed nodes read `name` (outputs of the
 * partition count as one more reader). */
static int readers(const lowering *l, const char *name)
{
    int count = 0;
    for (int k = 0; k < l->n_nodes; k++)
        for (int j = 0; j < rn_node_input_count(l->nodes[k]); j++)
            count += strcmp(rn_node_input_name(l->nodes[k], j), name) == 0;
    for (int o = 0; o < l->n_outputs; o++)
        count += strcmp(l->output_names[o], name) == 0;
    return count;
}

static bool same_shape(const nv_value *a, const nv_value *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

/* The step that writes value v (its root), or -1. */
static int producer_step(const nv_program *p, int v)
{
    for (int k = p->n_steps - 1; k >= 0; k--)
        if (p->steps[k].out == v)
            return k;
    return -1;
}

static void contiguous_strides(const nv_value *v, int64_t *strides)
{
    int64_t stride = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= v->dims[d];
    }
}

/* A value's strides over (batch, head, row, feature) of an attention whose
 * batch dims are the first rank-2 of a BHSD tensor; `swap` reads rows and
 * features the other way round (Kt [.., D, Sk]). */
static void bhsd_strides(const nv_value *v, bool swap, int64_t *out)
{
    int64_t st[RN_MAX_RANK];
    contiguous_strides(v, st);
    int r = v->rank;
    out[0] = r >= 3 ? st[0] : 0;
    out[1] = r == 4 ? st[1] : 0;
    out[2] = st[r - (swap ? 1 : 2)];
    out[3] = st[r - (swap ? 2 : 1)];
}

/* ScaledDotProductAttention(Q, Kt, V[, mask]) as one step. */
static void lower_attention(lowering *l, const rn_node *n, nv_step *s)
{
    const nv_program *p = l->p;
    const nv_value *q = &p->values[s->in[0]], *k = &p->values[s->in[1]], *v = &p->values[s->in[2]],
                   *y = &p->values[s->out];
    nvk_attention_args *a = &s->att;
    bool bshd = strcmp(rn_node_attr_string(n, "qkv_layout", "BHSD"), "BSHD") == 0;
    a->scale = rn_node_attr_float(n, "scale", 1.0f);
    int r = q->rank;
    if (bshd) { /* [B, S, H, D]: the head split read with strides */
        a->batch = q->dims[0], a->heads = q->dims[2];
        a->sq = q->dims[1], a->sk = k->dims[1], a->d = q->dims[3], a->dv = v->dims[3];
        const nv_value *x[3] = {q, k, v};
        int64_t *out[3] = {a->q_strides, a->k_strides, a->v_strides};
        for (int i = 0; i < 3; i++) {
            int64_t st[RN_MAX_RANK];
            contiguous_strides(x[i], st);
            out[i][0] = st[0], out[i][1] = st[2], out[i][2] = st[1], out[i][3] = st[3];
        }
    } else {
        a->batch = r >= 3 ? q->dims[0] : 1;
        a->heads = r == 4 ? q->dims[1] : 1;
        a->sq = q->dims[r - 2], a->d = q->dims[r - 1];
        a->sk = k->dims[r - 1], a->dv = v->dims[r - 1];
        bhsd_strides(q, false, a->q_strides);
        bhsd_strides(k, true, a->k_strides);
        bhsd_strides(v, false, a->v_strides);
    }
    bhsd_strides(y, false, a->o_strides);
    if (s->n_in > 3 && s->in[3] >= 0) {
        /* The mask broadcasts to the scores [batch dims.., Sq, Sk]. */
        const nv_value *m = &p->values[s->in[3]];
        int64_t st[RN_MAX_RANK], sc[4] = {0, 0, 0, 0};
        contiguous_strides(m, st);
        int sr = bshd ? 4 : r; /* the scores' rank */
        for (int d = 0; d < sr; d++) {
            int md = d - (sr - m->rank);
            int64_t stride = md >= 0 && m->dims[md] != 1 ? st[md] : 0;
            sc[d < sr - 2 ? d : d + (4 - sr)] = stride; /* onto (b, h, i, j) */
        }
        memcpy(a->mask_strides, sc, sizeof sc);
    } else {
        s->n_in = 3;
    }
}

/* How an attention step runs: runnel's fused kernel in f16 and bf16 (tensor cores)
 * and with RUNNEL_NV_ATTENTION=rows (the scalar kernel, for A/B runs);
 * otherwise, and where the kernel's limits (heads of 256 features, 65535
 * batch x heads) are passed, cuBLAS's two products around runnel's masked
 * softmax (BLAS_ATTENTION: in f32 cuBLAS's products beat the scalar fused
 * kernel), with the scores in a scratch value of the step, in[4], which the
 * memory plan keeps live for that step only. */
static rn_status choose_attention(lowering *l, nv_step *s)
{
    nv_program *p = l->p;
    const nvk_attention_args *a = &s->att;
    const char *mode = getenv("RUNNEL_NV_ATTENTION");
    bool rows = mode != NULL && strcmp(mode, "rows") == 0;
    bool kernel_fits = a->d <= 256 && a->dv <= 256 && a->batch * a->heads <= 65535;
    nv_blas_gemm g[2];
    bool blas = nv_attention_blas_plan(a, g);
    s->kind = NV_STEP_ATTENTION;
    if (kernel_fits && (p->compute != RN_F32 || rows || !blas))
        return RN_OK;
    if (!blas)
        return rn_set_error(RN_UNSUPPORTED,
                            "NVIDIA: node '%s' (%s): attention heads of more than 256 features "
                            "or more than 65535 batch x heads, with strides no GEMM reads",
                            s->node, s->op);
    char name[512];
    snprintf(name, sizeof name, "%s#scores", p->values[s->out].name);
    rn_partial_shape sh = {.rank = 4, .dims = {a->batch, a->heads, a->sq, a->sk}};
    int t;
    rn_status st = add_value(l, name, RN_F32, &sh, &t); /* the compute type */
    if (st != RN_OK)
        return st;
    s->kind = NV_STEP_BLAS_ATTENTION;
    if (s->n_in < 4)
        s->in[3] = -1;
    s->in[4] = t;
    s->n_in = 5;
    return RN_OK;
}

static rn_status lower_node(lowering *l, const rn_node *n)
{
    const char *op = rn_node_op_type(n);
    nv_step s = {.node = rn_node_name(n), .op = op, .out = -1};
    rn_status st;
    s.n_in = rn_node_input_count(n) < NV_MAX_STEP_IN ? rn_node_input_count(n) : NV_MAX_STEP_IN;
    for (int i = 0; i < s.n_in; i++)
        if ((st = input_value(l, n, i, &s.in[i])) != RN_OK)
            return st;
    nv_program *p = l->p;
    const nv_value *x = s.in[0] >= 0 ? &p->values[s.in[0]] : NULL;

    /* Views: the output is the input's bytes under another shape. */
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Squeeze") == 0 ||
        strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0 ||
        (strcmp(op, "Sum") == 0 && s.n_in == 1)) {
        int y;
        if ((st = output_value(l, n, &y)) != RN_OK)
            return st;
        p->values[y].root = p->values[s.in[0]].root;
        p->values[y].storage = p->values[p->values[y].root].storage;
        return RN_OK;
    }
    /* The exporters' head merge after a fused attention: the attention
     * writes [B, S, H, D] and the Transpose is a view. */
    if (strcmp(op, "Transpose") == 0 && x != NULL && x->rank == 4) {
        const int64_t *perm;
        int k = producer_step(p, s.in[0]);
        if (rn_node_attr_ints(n, "perm", &perm) == 4 && perm[0] == 0 && perm[1] == 2 &&
            perm[2] == 1 && perm[3] == 3 && k >= 0 &&
            (p->steps[k].kind == NV_STEP_ATTENTION || p->steps[k].kind == NV_STEP_BLAS_ATTENTION) &&
            !p->steps[k].att_out_bshd && readers(l, x->name) == 1) {
            /* [B, H, S, D] written as [B, S, H, D]: batch, head, row, feature. */
            nvk_attention_args att = p->steps[k].att;
            att.o_strides[0] = x->dims[1] * x->dims[2] * x->dims[3];
            att.o_strides[1] = x->dims[3];
            att.o_strides[2] = x->dims[1] * x->dims[3];
            att.o_strides[3] = 1;
            nv_blas_gemm g[2];
            if (p->steps[k].kind == NV_STEP_ATTENTION || nv_attention_blas_plan(&att, g)) {
                int y;
                if ((st = output_value(l, n, &y)) != RN_OK)
                    return st;
                p->steps[k].att_out_bshd = true;
                p->steps[k].att = att;
                p->values[y].root = p->values[s.in[0]].root;
                return RN_OK;
            }
        }
    }
    /* A bias Add after a MatMul or Gemm that nothing else reads: Gemm's C
     * (the product added to the broadcast bias). */
    if (strcmp(op, "Add") == 0 && s.n_in == 2) {
        for (int side = 0; side < 2; side++) {
            const nv_value *prod_v = &p->values[s.in[side]], *b = &p->values[s.in[1 - side]];
            int k = producer_step(p, s.in[side]);
            if (k < 0 || p->steps[k].kind != NV_STEP_GEMM || p->steps[k].batch > 1 ||
                p->steps[k].gemm_beta != 0.0f || p->steps[k].act != NV_ACT_NONE ||
                prod_v->root != s.in[side] || b->storage != NV_CONST ||
                readers(l, prod_v->name) != 1)
                continue;
            int64_t cols = p->steps[k].n;
            bool row = (b->rank == 1 && b->dims[0] == cols) ||
                       (b->rank == 2 && b->dims[0] == 1 && b->dims[1] == cols);
            rn_partial_shape ys = rn_node_output_shape(n, 0);
            if (!row || ys.rank != prod_v->rank || b->rank > 2)
                continue;
            int y;
            if ((st = output_value(l, n, &y)) != RN_OK)
                return st;
            nv_step *g = &p->steps[k];
            g->in[2] = s.in[1 - side];
            g->n_in = 3;
            g->gemm_beta = 1.0f;
            p->values[y].root = p->values[s.in[side]].root;
            return RN_OK;
        }
    }
    /* An activation after a GEMM that nothing else reads: applied by the
     * GEMM's step, with its bias, in one pass after the product. */
    nv_act folded = NV_ACT_NONE;
    float fa = 0.0f, fb = 0.0f;
    if (s.n_in >= 1 && s.in[0] >= 0 &&
        (strcmp(op, "Relu") == 0 || strcmp(op, "Gelu") == 0 || strcmp(op, "Sigmoid") == 0 ||
         strcmp(op, "Tanh") == 0))
        folded = parse_act(op, NULL, 0, &fa, &fb);
    if (folded == NV_ACT_GELU && strcmp(rn_node_attr_string(n, "approximate", "none"), "tanh") == 0)
        folded = NV_ACT_GELU_TANH;
    if (folded != NV_ACT_NONE) {
        /* (through the view of a bias Add folded into the GEMM) */
        int r = p->values[s.in[0]].root, k = producer_step(p, r);
        if (k >= 0 && p->steps[k].kind == NV_STEP_GEMM && p->steps[k].act == NV_ACT_NONE &&
            p->steps[k].batch <= 1 && readers(l, x->name) == 1 &&
            (r == s.in[0] || readers(l, p->values[r].name) == 1) && rn_node_input_count(n) == 1) {
            int y;
            if ((st = output_value(l, n, &y)) != RN_OK)
                return st;
            nv_step *g = &p->steps[k];
            g->act = folded, g->alpha = fa, g->beta = fb;
            g->bias_after = g->gemm_beta == 1.0f && g->n_in > 2 && g->in[2] >= 0 &&
                            p->values[g->in[2]].count == (size_t)g->n;
            p->values[y].root = p->values[s.in[0]].root;
            return RN_OK;
        }
    }
    /* A residual Add read only by a LayerNormalization: the normalization
     * adds it as it reads (one pass less). */
    if (strcmp(op, "LayerNormalization") == 0 && s.in[0] >= 0) {
        int k = producer_step(p, s.in[0]);
        const nv_step *add = k >= 0 ? &p->steps[k] : NULL;
        if (add != NULL && add->kind == NV_STEP_BINARY && add->bin == NV_BIN_ADD &&
            add->n_in == 2 && add->act == NV_ACT_NONE && k == p->n_steps - 1 &&
            p->values[s.in[0]].root == s.in[0] && readers(l, x->name) == 1 &&
            same_shape(&p->values[add->in[0]], x) && same_shape(&p->values[add->in[1]], x)) {
            int a = add->in[0], b = add->in[1];
            p->n_steps--; /* the Add goes; its output value is never written */
            s.in[0] = a;
            if (s.n_in < 3)
                s.in[2] = -1;
            s.in[3] = b;
            s.n_in = 4;
        }
    }
    if ((st = output_value(l, n, &s.out)) != RN_OK)
        return st;
    x = &p->values[s.in[0]];
    const nv_value *y = &p->values[s.out];

    if (strcmp(op, "ScaledDotProductAttention") == 0) {
        lower_attention(l, n, &s);
        if ((st = choose_attention(l, &s)) != RN_OK)
            return st;
    } else if (strcmp(op, "Conv") == 0 || strcmp(op, "FusedConv") == 0) {
        s.kind = NV_STEP_CONV;
        conv_attrs(n, &s);
        s.group = rn_node_attr_int(n, "group", 1);
        for (int i = s.n_in; i < 4; i++)
            s.in[i] = -1;
        s.n_in = 4;
        if (strcmp(op, "FusedConv") == 0)
            fused_act(n, &s);
    } else if (strcmp(op, "Gemm") == 0 || strcmp(op, "FusedGemm") == 0) {
        s.kind = NV_STEP_GEMM;
        s.trans_a = rn_node_attr_int_or_default(n, "transA") != 0;
        s.trans_b = rn_node_attr_int_or_default(n, "transB") != 0;
        s.m = y->dims[0];
        s.n = y->dims[1];
        s.k = s.trans_a ? x->dims[0] : x->dims[1];
        s.batch = 1;
        s.gemm_alpha = rn_node_attr_float_or_default(n, "alpha");
        bool has_c = s.n_in > 2 && s.in[2] >= 0;
        s.gemm_beta = has_c ? rn_node_attr_float_or_default(n, "beta") : 0.0f;
        if (strcmp(op, "FusedGemm") == 0)
            fused_act(n, &s);
    } else if (strcmp(op, "MatMul") == 0) {
        const nv_value *b = &p->values[s.in[1]];
        s.kind = NV_STEP_GEMM;
        s.m = x->dims[x->rank - 2];
        s.k = x->dims[x->rank - 1];
        s.n = b->dims[b->rank - 1];
        s.batch = (int64_t)(y->count / (size_t)(s.m * s.n));
        s.a_batch_stride = prod(x->dims, 0, x->rank - 2) == 1 ? 0 : s.m * s.k;
        s.b_batch_stride = prod(b->dims, 0, b->rank - 2) == 1 ? 0 : s.k * s.n;
        s.gemm_alpha = 1.0f;
        if (s.batch > 1 && s.b_batch_stride == 0 && s.a_batch_stride != 0) {
            /* [batch, M, K] x [K, N]: one GEMM of batch * M rows. */
            s.m *= s.batch;
            s.batch = 1;
            s.a_batch_stride = 0;
        }
    } else if (strstr(op, "Pool") != NULL) {
        s.kind = NV_STEP_POOL;
        s.pool_mode = strstr(op, "Max") != NULL ? 0 : 1;
        if (strncmp(op, "Global", 6) == 0) {
            s.kernel[0] = x->dims[2], s.kernel[1] = x->dims[3];
            s.strides[0] = s.strides[1] = 1;
        } else {
            conv_attrs(n, &s);
            s.flag = rn_node_attr_int(n, "count_include_pad", 0) != 0;
        }
    } else if (strcmp(op, "LRN") == 0) {
        s.kind = NV_STEP_LRN;
        s.size = rn_node_attr_int(n, "size", 1);
        s.alpha = rn_node_attr_float_or_default(n, "alpha");
        s.beta = rn_node_attr_float_or_default(n, "beta");
        s.epsilon = rn_node_attr_float_or_default(n, "bias");
    } else if (strcmp(op, "Softmax") == 0) {
        s.kind = NV_STEP_SOFTMAX;
        int64_t axis = rn_node_attr_int(n, "axis", rn_node_opset(n) >= 13 ? -1 : 1);
        if (axis < 0)
            axis += x->rank;
        s.rows = prod(x->dims, 0, (int)axis);
        s.cols = prod(x->dims, (int)axis, x->rank);
    } else if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
               strcmp(op, "Div") == 0 || strcmp(op, "Pow") == 0 || strcmp(op, "Max") == 0 ||
               strcmp(op, "Min") == 0 || strcmp(op, "Sum") == 0) {
        s.kind = NV_STEP_BINARY;
        const char *names[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
        s.bin = NV_BIN_ADD;
        for (int i = 0; i < NV_BIN_COUNT; i++)
            if (strcmp(op, names[i]) == 0)
                s.bin = (nv_binary_op)i;
        /* Sum of k > 2: a chain of Adds through values of the output's shape. */
        int n_in = s.n_in, acc = s.in[0];
        for (int i = 1; i + 1 < n_in; i++) {
            char name[512];
            snprintf(name, sizeof name, "%s#sum%d", rn_node_output_name(n, 0), i);
            int t;
            rn_partial_shape sh = {.rank = y->rank};
            memcpy(sh.dims, y->dims, sizeof sh.dims);
            if ((st = add_value(l, name, RN_F32, &sh, &t)) != RN_OK)
                return st;
            nv_step a = s;
            a.in[0] = acc, a.in[1] = s.in[i], a.n_in = 2, a.out = t;
            if ((st = add_step(l, &a)) != RN_OK)
                return st;
            acc = t;
        }
        s.in[0] = acc, s.in[1] = s.in[n_in - 1], s.n_in = 2;
    } else if (strcmp(op, "Concat") == 0) {
        s.kind = NV_STEP_CONCAT;
        int64_t axis = rn_node_attr_int(n, "axis", 0);
        s.axis = (int)(axis < 0 ? axis + y->rank : axis);
    } else if (strcmp(op, "Transpose") == 0) {
        s.kind = NV_STEP_TRANSPOSE;
        const int64_t *perm;
        int np = rn_node_attr_ints(n, "perm", &perm);
        for (int d = 0; d < x->rank; d++)
            s.perm[d] = np == x->rank ? perm[d] : x->rank - 1 - d;
    } else if (strcmp(op, "LayerNormalization") == 0) {
        s.kind = NV_STEP_LAYERNORM;
        s.cols = x->dims[x->rank - 1];
        s.rows = (int64_t)(x->count / (size_t)(s.cols ? s.cols : 1));
        s.epsilon = rn_node_attr_float_or_default(n, "epsilon");
        if (s.n_in < 3)
            s.in[2] = -1, s.n_in = 3;
        if (s.n_in < 4)
            s.in[3] = -1;
    } else if (strcmp(op, "Gather") == 0) {
        s.kind = NV_STEP_GATHER;
        int64_t axis = rn_node_attr_int(n, "axis", 0);
        if (axis < 0)
            axis += x->rank;
        s.axis = (int)axis;
        s.outer = prod(x->dims, 0, (int)axis);
        s.axis_dim = x->dims[axis];
        s.inner = prod(x->dims, (int)axis + 1, x->rank);
        s.n_idx = (int64_t)p->values[s.in[1]].count;
    } else if (strcmp(op, "ReduceMean") == 0) {
        s.kind = NV_STEP_REDUCE_MEAN;
        s.cols = x->dims[x->rank - 1];
        s.rows = (int64_t)(x->count / (size_t)(s.cols ? s.cols : 1));
        s.n_in = 1;
    } else if (strcmp(op, "BatchNormalization") == 0 ||
               strcmp(op, "FusedBatchNormalization") == 0) {
        s.kind = NV_STEP_BATCHNORM;
        s.epsilon = rn_node_attr_float_or_default(n, "epsilon");
        s.rows = x->dims[0];
        s.cols = x->dims[1];
        s.inner = prod(x->dims, 2, x->rank);
        if (strcmp(op, "FusedBatchNormalization") == 0)
            fused_act(n, &s);
    } else {
        /* The unary activations. */
        s.kind = NV_STEP_UNARY;
        s.n_in = 1;
        const char *names[NV_ACT_COUNT] = {
            [NV_ACT_RELU] = "Relu", [NV_ACT_SIGMOID] = "Sigmoid",
            [NV_ACT_TANH] = "Tanh", [NV_ACT_LEAKY_RELU] = "LeakyRelu",
            [NV_ACT_CLIP] = "Clip", [NV_ACT_GELU] = "Gelu",
            [NV_ACT_ERF] = "Erf",   [NV_ACT_SQRT] = "Sqrt",
            [NV_ACT_EXP] = "Exp",   [NV_ACT_NEG] = "Neg",
            [NV_ACT_ABS] = "Abs",   [NV_ACT_RECIPROCAL] = "Reciprocal"};
        for (int a = 1; a < NV_ACT_COUNT; a++)
            if (names[a] != NULL && strcmp(op, names[a]) == 0)
                s.act = (nv_act)a;
        if (s.act == NV_ACT_LEAKY_RELU)
            s.alpha = rn_node_attr_float_or_default(n, "alpha");
        if (s.act == NV_ACT_CLIP) {
            s.alpha = rn_node_has_attr(n, "min") ? rn_node_attr_float(n, "min", 0)
                                                 : const_scalar(n, 1, -3.4e38f);
            s.beta = rn_node_has_attr(n, "max") ? rn_node_attr_float(n, "max", 0)
                                                : const_scalar(n, 2, 3.4e38f);
        }
        if (s.act == NV_ACT_GELU &&
            strcmp(rn_node_attr_string(n, "approximate", "none"), "tanh") == 0)
            s.act = NV_ACT_GELU_TANH;
        if (s.act == NV_ACT_NONE)
            return rn_set_error(RN_INTERNAL, "NVIDIA: node '%s': no lowering for %s",
                                rn_node_name(n), op);
    }
    return add_step(l, &s);
}

/* Partition inputs: constants (uploaded once) or the request's inputs. */
static rn_status lower_inputs(lowering *l, const char *const *names, int n)
{
    nv_program *p = l->p;
    for (int i = 0; i < n; i++) {
        const rn_node *reader = NULL;
        int port = -1;
        for (int k = 0; k < l->n_nodes && reader == NULL; k++)
            for (int j = 0; j < rn_node_input_count(l->nodes[k]); j++)
                if (strcmp(rn_node_input_name(l->nodes[k], j), names[i]) == 0) {
                    reader = l->nodes[k], port = j;
                    break;
                }
        if (reader == NULL)
            return rn_set_error(RN_INTERNAL, "NVIDIA: no node reads the partition input '%s'",
                                names[i]);
        rn_partial_shape s = rn_node_input_shape(reader, port);
        int v;
        rn_status st = add_value(l, names[i], rn_node_input_type(reader, port), &s, &v);
        if (st != RN_OK)
            return st;
        const rn_kernel_tensor *c = rn_node_input_constant(reader, port);
        if (c != NULL) {
            p->values[v].storage = NV_CONST;
            p->values[v].host_data = c->data;
        } else {
            p->values[v].input = p->n_inputs++;
        }
    }
    return RN_OK;
}

/* In f16 and bf16 an f32 input is uploaded as f32 into a staging value and
 * converted; an output is converted into a staging value and downloaded. */
static rn_status add_staging(lowering *l, int v, bool output, int *stage)
{
    nv_program *p = l->p;
    const nv_value *x = &p->values[v];
    *stage = v;
    if (x->type == x->host_type)
        return RN_OK;
    char name[512];
    snprintf(name, sizeof name, "%s#%s", x->name, output ? "download" : "upload");
    rn_partial_shape s = {.rank = x->rank};
    memcpy(s.dims, x->dims, sizeof s.dims);
    rn_element_type compute = p->compute;
    p->compute = RN_F32; /* the staging value keeps the host type */
    rn_status st = add_value(l, name, x->host_type, &s, stage);
    p->compute = compute;
    return st;
}

static void touch(nv_program *p, int v, int step)
{
    if (v < 0)
        return;
    nv_value *r = &p->values[p->values[v].root];
    if (r->first == -2)
        r->first = step;
    r->last = step;
}

/* Liveness-based placement: roots by decreasing size, each at the lowest
 * offset that overlaps no placed value alive at the same time. */
static rn_status plan_memory(nv_program *p)
{
    int n = 0;
    int *order = malloc(((size_t)p->n_values + 1) * sizeof *order);
    if (order == NULL)
        return oom();
    size_t weights = 0;
    for (int v = 0; v < p->n_values; v++) {
        nv_value *x = &p->values[v];
        if (x->root != v)
            continue;
        if (x->storage == NV_CONST) {
            x->offset = weights;
            weights += align_up(x->nbytes ? x->nbytes : 1);
        } else {
            order[n++] = v;
        }
    }
    p->weights_bytes = weights;
    /* Insertion sort by size, largest first (stable: deterministic plans). */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && p->values[order[j]].nbytes > p->values[order[j - 1]].nbytes; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        nv_value *x = &p->values[order[i]];
        size_t size = align_up(x->nbytes ? x->nbytes : 1), off = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (int j = 0; j < i; j++) {
                const nv_value *o = &p->values[order[j]];
                size_t osize = align_up(o->nbytes ? o->nbytes : 1);
                bool time = x->first <= o->last && o->first <= x->last;
                if (time && off < o->offset + osize && o->offset < off + size) {
                    off = o->offset + osize;
                    moved = true;
                }
            }
        }
        x->offset = off;
        if (off + size > top)
            top = off + size;
    }
    p->arena_bytes = top;
    free(order);
    return RN_OK;
}

/* ---- layouts: channels-last (NHWC) around f16 and bf16 convolutions ---- */

void nv_value_strides(const nv_value *v, int64_t *strides)
{
    if (v->nhwc && v->rank == 4) {
        int64_t c = v->dims[1], h = v->dims[2], w = v->dims[3];
        strides[0] = h * w * c, strides[1] = 1, strides[2] = w * c, strides[3] = c;
        return;
    }
    int64_t stride = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= v->dims[d];
    }
}

/* A rank-4 value whose layout matters (H or W above one). */
static bool spatial(const nv_value *v)
{
    return v->rank == 4 && (v->dims[2] != 1 || v->dims[3] != 1);
}

/* Whether a pooling step runs on cuDNN (symmetric pads, floor rounding):
 * the rule exec.c's prepare_pool applies. */
static bool cudnn_pool(const nv_program *p, const nv_step *s)
{
    const nv_value *in = &p->values[s->in[0]], *out = &p->values[s->out];
    if (s->pads[0] != s->pads[2] || s->pads[1] != s->pads[3] || in->rank != 4)
        return false;
    for (int d = 0; d < 2; d++) {
        int64_t stride = s->strides[d] > 0 ? s->strides[d] : 1;
        if ((in->dims[2 + d] + 2 * s->pads[d] - s->kernel[d]) / stride + 1 != out->dims[2 + d])
            return false;
    }
    return true;
}

/* Clears value v's root from the candidates; true when it changed. */
static bool drop(const nv_program *p, bool *cand, int v)
{
    if (v < 0 || !cand[p->values[v].root])
        return false;
    cand[p->values[v].root] = false;
    return true;
}

static bool is_cand(const nv_program *p, const bool *cand, int v)
{
    return v >= 0 && cand[p->values[v].root];
}

/* Operands that must share one layout (elementwise over equal shapes, a
 * Concat over channels): all channels-last or none. */
static bool unify(const nv_program *p, bool *cand, const int *vals, int n)
{
    bool all = true, changed = false;
    for (int i = 0; i < n; i++)
        if (vals[i] >= 0 && spatial(&p->values[vals[i]]))
            all &= is_cand(p, cand, vals[i]);
    for (int i = 0; i < n && !all; i++)
        changed |= drop(p, cand, vals[i]);
    return changed;
}

/* One pass of the constraints; true when a candidate was dropped. */
static bool constrain(const nv_program *p, bool *cand)
{
    bool changed = false;
    for (int k = 0; k < p->n_steps; k++) {
        const nv_step *s = &p->steps[k];
        int ops[NV_MAX_STEP_IN + 1];
        int n = 0;
        for (int i = 0; i < s->n_in; i++)
            ops[n++] = s->in[i];
        ops[n++] = s->out;
        switch (s->kind) {
        case NV_STEP_CONV: {
            /* X converts to Y's layout, the residual is Y's; Y goes
             * channels-last only from an NHWC X or from a model input
             * (converted once): no conversion inside the model buys it. */
            int pair[2] = {s->in[3], s->out};
            if (s->in[3] >= 0)
                changed |= unify(p, cand, pair, 2);
            const nv_value *x = &p->values[s->in[0]];
            if (!is_cand(p, cand, s->in[0]) && p->values[x->root].input < 0)
                changed |= drop(p, cand, s->out);
            break;
        }
        case NV_STEP_POOL:
            if (!cudnn_pool(p, s))
                changed |= drop(p, cand, s->in[0]) | drop(p, cand, s->out);
            else if (spatial(&p->values[s->out]))
                changed |= unify(p, cand, (int[]){s->in[0], s->out}, 2);
            break;
        case NV_STEP_UNARY:
            changed |= unify(p, cand, ops, n);
            break;
        case NV_STEP_BINARY: {
            const nv_value *y = &p->values[s->out];
            if (same_shape(&p->values[s->in[0]], y) && same_shape(&p->values[s->in[1]], y))
                changed |= unify(p, cand, ops, n);
            else
                for (int i = 0; i < n; i++)
                    changed |= drop(p, cand, ops[i]);
            break;
        }
        case NV_STEP_CONCAT:
            if (s->axis == 1 && p->values[s->out].rank == 4)
                changed |= unify(p, cand, ops, n);
            else
                for (int i = 0; i < n; i++)
                    changed |= drop(p, cand, ops[i]);
            break;
        default:
            for (int i = 0; i < n; i++)
                changed |= drop(p, cand, ops[i]);
        }
    }
    return changed;
}

/* Inserts step `s` at index `at`. */
static rn_status insert_step(lowering *l, int at, const nv_step *s)
{
    rn_status st = add_step(l, s);
    if (st != RN_OK)
        return st;
    nv_program *p = l->p;
    memmove(&p->steps[at + 1], &p->steps[at], (size_t)(p->n_steps - 1 - at) * sizeof *p->steps);
    p->steps[at] = *s;
    return RN_OK;
}

/* f16 and bf16 convolutions and what runs between them in NHWC, cuDNN's
 * fast layout on tensor cores (ResNet-50 batch 32 f16 on an H200: 2.5 ms
 * against 4.0 ms NCHW): every spatial rank-4 value inside the program
 * whose steps all take channels-last (convolutions, cuDNN pooling,
 * elementwise over equal shapes, Concat over channels) and that no view
 * reads; a convolution whose input has the other layout reads a converted
 * copy (a Transpose step). The weights of a convolution with an NHWC input
 * are KRSC. RUNNEL_NV_LAYOUT=nchw keeps every value NCHW (A/B runs). */
static rn_status choose_layouts(lowering *l)
{
    nv_program *p = l->p;
    const char *env = getenv("RUNNEL_NV_LAYOUT");
    if (p->compute == RN_F32 || !l->channels_last || (env != NULL && strcmp(env, "nchw") == 0) ||
        nv_program_count(p, NV_STEP_CONV) == 0)
        return RN_OK;
    int nv = p->n_values;
    bool *cand = calloc((size_t)nv + 1, sizeof *cand);
    int *converted = malloc(((size_t)nv + 1) * sizeof *converted);
    if (cand == NULL || converted == NULL) {
        free(cand);
        free(converted);
        return oom();
    }
    for (int v = 0; v < nv; v++) {
        const nv_value *x = &p->values[v];
        cand[v] = x->root == v && x->storage == NV_ARENA && spatial(x) && x->input < 0 &&
                  x->output < 0 && x->type == p->compute;
        converted[v] = -1;
    }
    for (int v = 0; v < nv; v++)
        if (p->values[v].root != v || p->values[v].output >= 0)
            cand[p->values[v].root] = false; /* a view would read other bytes */
    for (bool again = true; again;) {
        while (constrain(p, cand))
            ;
        /* A weight read by convolutions of both layouts: those inputs NCHW. */
        again = false;
        for (int k = 0; k < p->n_steps; k++) {
            const nv_step *a = &p->steps[k];
            if (a->kind != NV_STEP_CONV)
                continue;
            for (int j = 0; j < p->n_steps; j++) {
                const nv_step *b = &p->steps[j];
                if (b->kind == NV_STEP_CONV && b->in[1] == a->in[1] &&
                    is_cand(p, cand, a->out) != is_cand(p, cand, b->out))
                    again |= drop(p, cand, a->out) | drop(p, cand, b->out);
            }
        }
    }
    for (int v = 0; v < nv; v++)
        p->values[v].nhwc = cand[p->values[v].root];
    rn_status st = RN_OK;
    for (int k = 0; k < p->n_steps && st == RN_OK; k++) {
        nv_step *c = &p->steps[k];
        if (c->kind != NV_STEP_CONV)
            continue;
        bool want = p->values[c->out].nhwc;
        p->values[c->in[1]].nhwc = want; /* KRSC weights */
        p->values[p->values[c->in[1]].root].nhwc = want;
        int x = c->in[0];
        if (p->values[x].nhwc == want)
            continue;
        /* A copy of X in Y's layout, made once per value and layout. */
        int key = p->values[x].root;
        if (converted[key] < 0 || p->values[converted[key]].nhwc != want) {
            char name[512];
            snprintf(name, sizeof name, "%s#%s", p->values[x].name, want ? "nhwc" : "nchw");
            rn_partial_shape sh = {.rank = 4};
            memcpy(sh.dims, p->values[x].dims, sizeof sh.dims);
            int t;
            if ((st = add_value(l, name, p->values[x].host_type, &sh, &t)) != RN_OK)
                break;
            p->values[t].nhwc = want;
            nv_step tr = {.kind = NV_STEP_TRANSPOSE,
                          .node = c->node,
                          .op = "Transpose",
                          .in = {x},
                          .n_in = 1,
                          .out = t,
                          .perm = {0, 1, 2, 3}};
            if ((st = insert_step(l, k, &tr)) != RN_OK)
                break;
            c = &p->steps[++k]; /* the convolution moved one on */
            converted[key] = t;
        }
        c->in[0] = converted[key];
    }
    free(cand);
    free(converted);
    return st;
}

rn_status nv_lower(const rn_node *const *nodes, int n_nodes, const char *const *input_names,
                   int n_inputs, const char *const *output_names, int n_outputs,
                   rn_element_type precision, nv_program **out)
{
    return nv_lower_layouts(nodes, n_nodes, input_names, n_inputs, output_names, n_outputs,
                            precision, true, out);
}

bool nv_program_channels_last(const nv_program *p)
{
    for (int v = 0; v < p->n_values; v++)
        if (p->values[v].nhwc)
            return true;
    return false;
}

rn_status nv_lower_layouts(const rn_node *const *nodes, int n_nodes, const char *const *input_names,
                           int n_inputs, const char *const *output_names, int n_outputs,
                           rn_element_type precision, bool channels_last, nv_program **out)
{
    nv_program *p = calloc(1, sizeof *p);
    if (p == NULL)
        return oom();
    p->compute = precision == RN_F16 || precision == RN_BF16 ? precision : RN_F32;
    lowering l = {.p = p,
                  .nodes = nodes,
                  .n_nodes = n_nodes,
                  .output_names = output_names,
                  .n_outputs = n_outputs,
                  .channels_last = channels_last};
    rn_status st = RN_OK;
    for (int i = 0; i < n_nodes && st == RN_OK; i++) {
        const char *why = "";
        if (!nv_supports(nodes[i], &why))
            st = rn_set_error(RN_UNSUPPORTED, "NVIDIA: node '%s' (%s): %s", rn_node_name(nodes[i]),
                              rn_node_op_type(nodes[i]), why);
    }
    if (st == RN_OK)
        st = lower_inputs(&l, input_names, n_inputs);
    /* Conversions of the f32 inputs come first. */
    int n_declared = p->n_values;
    p->input_value = calloc((size_t)p->n_inputs + 1, sizeof *p->input_value);
    p->input_stage = calloc((size_t)p->n_inputs + 1, sizeof *p->input_stage);
    p->input_pinned = calloc((size_t)p->n_inputs + 1, sizeof *p->input_pinned);
    int *stage_in = calloc((size_t)p->n_inputs + 1, sizeof *stage_in);
    if (st == RN_OK && (!p->input_value || !p->input_stage || !p->input_pinned || !stage_in))
        st = oom();
    for (int v = 0; v < n_declared && st == RN_OK; v++) {
        int i = p->values[v].input;
        if (i < 0)
            continue;
        p->input_value[i] = v;
        if ((st = add_staging(&l, v, false, &stage_in[i])) == RN_OK && stage_in[i] != v)
            st = add_step(&l, &(nv_step){.kind = NV_STEP_CONVERT,
                                         .node = p->values[v].name,
                                         .op = "Convert",
                                         .in = {stage_in[i]},
                                         .n_in = 1,
                                         .out = v});
    }
    for (int i = 0; i < n_nodes && st == RN_OK; i++)
        st = lower_node(&l, nodes[i]);
    /* Outputs, converted back to f32 where they were computed in f16 or bf16. */
    p->n_outputs = n_outputs;
    p->output_value = calloc((size_t)n_outputs + 1, sizeof *p->output_value);
    p->output_stage = calloc((size_t)n_outputs + 1, sizeof *p->output_stage);
    p->output_pinned = calloc((size_t)n_outputs + 1, sizeof *p->output_pinned);
    int *stage_out = calloc((size_t)n_outputs + 1, sizeof *stage_out);
    if (st == RN_OK && (!p->output_value || !p->output_stage || !p->output_pinned || !stage_out))
        st = oom();
    for (int o = 0; o < n_outputs && st == RN_OK; o++) {
        int v = find_value(p, output_names[o]);
        if (v < 0) {
            st = rn_set_error(RN_INTERNAL, "NVIDIA: no node writes the partition output '%s'",
                              output_names[o]);
            break;
        }
        if (p->values[p->values[v].root].storage == NV_CONST) {
            st = rn_set_error(RN_UNSUPPORTED, "NVIDIA: output '%s' is a constant of the model",
                              output_names[o]);
            break;
        }
        p->values[v].output = o;
        p->output_value[o] = v;
        if ((st = add_staging(&l, v, true, &stage_out[o])) == RN_OK && stage_out[o] != v)
            st = add_step(&l, &(nv_step){.kind = NV_STEP_CONVERT,
                                         .node = p->values[v].name,
                                         .op = "Convert",
                                         .in = {v},
                                         .n_in = 1,
                                         .out = stage_out[o]});
    }
    if (st == RN_OK)
        st = choose_layouts(&l);
    if (st == RN_OK) {
        /* Inputs live from the start (upload), outputs to the end (download). */
        for (int i = 0; i < p->n_inputs; i++)
            touch(p, stage_in[i], -1);
        for (int k = 0; k < p->n_steps; k++) {
            const nv_step *s = &p->steps[k];
            for (int i = 0; i < s->n_in; i++)
                touch(p, s->in[i], k);
            touch(p, s->out, k);
        }
        for (int o = 0; o < n_outputs; o++)
            touch(p, stage_out[o], p->n_steps);
        for (int v = 0; v < p->n_values; v++)
            if (p->values[v].root == v && p->values[v].first == -2)
                p->values[v].first = p->values[v].last = -1; /* read by nothing */
        st = plan_memory(p);
    }
    if (st == RN_OK) {
        size_t pinned = 0;
        for (int i = 0; i < p->n_inputs; i++) {
            const nv_value *s = &p->values[stage_in[i]];
            p->input_stage[i] = p->values[s->root].offset;
            p->input_pinned[i] = pinned;
            pinned += align_up(s->nbytes);
        }
        for (int o = 0; o < n_outputs; o++) {
            const nv_value *s = &p->values[stage_out[o]];
            p->output_stage[o] = p->values[s->root].offset;
            p->output_pinned[o] = pinned;
            pinned += align_up(s->nbytes);
        }
        p->pinned_bytes = pinned;
    }
    free(stage_in);
    free(stage_out);
    if (st != RN_OK) {
        nv_program_free(p);
        return st;
    }
    *out = p;
    return RN_OK;
}

void nv_program_free(nv_program *p)
{
    if (p == NULL)
        return;
    for (int v = 0; v < p->n_values; v++)
        free(p->values[v].name);
    free(p->values);
    free(p->steps);
    free(p->input_value);
    free(p->input_stage);
    free(p->input_pinned);
    free(p->output_value);
    free(p->output_stage);
    free(p->output_pinned);
    free(p);
}

int nv_program_count(const nv_program *p, nv_step_kind kind)
{
    int n = 0;
    for (int k = 0; k < p->n_steps; k++)
        n += p->steps[k].kind == kind;
    return n;
}

const char *nv_step_kind_name(nv_step_kind kind)
{
    static const char *const names[] = {
        [NV_STEP_CONVERT] = "Convert",
        [NV_STEP_CONV] = "cudnn_conv",
        [NV_STEP_GEMM] = "cublas_gemm",
        [NV_STEP_POOL] = "cudnn_pool",
        [NV_STEP_LRN] = "cudnn_lrn",
        [NV_STEP_SOFTMAX] = "cudnn_softmax",
        [NV_STEP_UNARY] = "cuda_unary",
        [NV_STEP_BINARY] = "cuda_binary",
        [NV_STEP_CONCAT] = "cuda_concat",
        [NV_STEP_TRANSPOSE] = "cuda_transpose",
        [NV_STEP_LAYERNORM] = "cuda_layernorm",
        [NV_STEP_GATHER] = "cuda_gather",
        [NV_STEP_REDUCE_MEAN] = "cuda_reduce_mean",
        [NV_STEP_BATCHNORM] = "cuda_batchnorm",
        [NV_STEP_ATTENTION] = "cuda_attention",
        [NV_STEP_BLAS_ATTENTION] = "cublas_attention",
    };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}
