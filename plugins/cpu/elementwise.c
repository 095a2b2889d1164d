/* Element-wise ops as oneDNN primitives: activations (eltwise), binary ops
 * with numpy broadcasting of the second input (binary, Sum of two), and the
 * activations fused into convolutions and GEMMs as post-ops. Each reads the
 * layout its input's producer writes, so a blocked (or bf16) tensor stays
 * as it is; when oneDNN has no implementation for that layout the kernel
 * asks for plain f32 and the plan converts. */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"

/* ---- activations ---- */

/* An activation as up to two eltwise steps. */
typedef struct activation {
    int n;
    dnnl_alg_kind_t alg[2];
    float alpha[2], beta[2];
} activation;

/* The activation named `op` ("Relu", "Clip", ...) with its parameters
 * (params: LeakyRelu/Elu alpha; Clip min, max). oneDNN's log and its
 * linear-then-clip HardSigmoid miss ONNX's results by more than its
 * tolerance: those run REF's kernels. */
static bool activation_of(const char *op, const float *given, int n_given, activation *a)
{
    memset(a, 0, sizeof *a);
    a->n = 1;
    /* The parameters with the op's defaults (its schema's) for those not
     * given; Clip's bounds have none. */
    float params[4];
    int n = rn_activation_params(op, given, n_given < 0 ? 0 : n_given, params, 4);
#define P(i, d) (n > (i) ? params[i] : (d))
    if (strcmp(op, "Relu") == 0)
        a->alg[0] = dnnl_eltwise_relu;
    else if (strcmp(op, "LeakyRelu") == 0)
        a->alg[0] = dnnl_eltwise_relu, a->alpha[0] = params[0];
    else if (strcmp(op, "Elu") == 0)
        a->alg[0] = dnnl_eltwise_elu, a->alpha[0] = params[0];
    else if (strcmp(op, "Sigmoid") == 0)
        a->alg[0] = dnnl_eltwise_logistic;
    else if (strcmp(op, "Tanh") == 0)
        a->alg[0] = dnnl_eltwise_tanh;
    else if (strcmp(op, "Exp") == 0)
        a->alg[0] = dnnl_eltwise_exp;
    else if (strcmp(op, "Sqrt") == 0)
        a->alg[0] = dnnl_eltwise_sqrt;
    else if (strcmp(op, "Abs") == 0)
        a->alg[0] = dnnl_eltwise_abs;
    else if (strcmp(op, "Neg") == 0)
        a->alg[0] = dnnl_eltwise_linear, a->alpha[0] = -1.0f;
    else if (strcmp(op, "Mish") == 0)
        a->alg[0] = dnnl_eltwise_mish;
    else if (strcmp(op, "HardSwish") == 0)
        /* x * min(max(alpha * x + beta, 0), 1): oneDNN 3.x reads alpha
         * and beta, 2.x ignores them (its 1/6 and 1/2 built in). */
        a->alg[0] = dnnl_eltwise_hardswish, a->alpha[0] = 1.0f / 6.0f, a->beta[0] = 0.5f;
    else if (strcmp(op, "Gelu") == 0 || strcmp(op, "GeluErf") == 0)
        a->alg[0] = dnnl_eltwise_gelu_erf;
    else if (strcmp(op, "GeluTanh") == 0)
        a->alg[0] = dnnl_eltwise_gelu_tanh;
    else if (strcmp(op, "Swish") == 0 || strcmp(op, "SiLU") == 0)
        a->alg[0] = dnnl_eltwise_swish, a->alpha[0] = 1.0f;
    else if (strcmp(op, "Clip") == 0)
        a->alg[0] = dnnl_eltwise_clip_v2, a->alpha[0] = P(0, -3.402823466e38f),
        a->beta[0] = P(1, 3.402823466e38f);
    else
        return false;
#undef P
    return true;
}

bool cpu_activation_supported(const rn_node *node)
{
    const char *act = rn_node_attr_string(node, "activation", NULL);
    activation a;
    return act == NULL || activation_of(act, NULL, 0, &a);
}

rn_status cpu_fused_post_ops(const rn_node *node, bool sum, dnnl_post_ops_t *out)
{
    const char *act = rn_node_attr_string(node, "activation", NULL);
    const float *params = NULL;
    int n = rn_node_attr_floats(node, "activation_params", &params);
    activation a = {0};
    if (act != NULL && !activation_of(act, params, n, &a))
        return rn_set_error(RN_UNSUPPORTED, "CPU: node '%s': no post-op for activation '%s'",
                            rn_node_name(node), act);
    dnnl_post_ops_t po;
    dnnl_status_t s = dnnl_post_ops_create(&po);
    if (s == dnnl_success && sum)
        s = cpu_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef);
    for (int i = 0; i < a.n && s == dnnl_success; i++)
        s = cpu_post_ops_append_eltwise(po, a.alg[i], a.alpha[i], a.beta[i]);
    if (s != dnnl_success) {
        dnnl_post_ops_destroy(po);
        return cpu_error(node, "building post-ops", s);
    }
    *out = po;
    return RN_OK;
}

/* ---- one-input, one-output primitives over the input's layout ---- */

typedef struct ew_state {
    cpu_prim p;
    cpu_md src, src1, dst;
    bool binary, swap;
    cpu_layout src_l, src1_l, dst_l;
    const rn_layout *src_layout, *src1_layout, *dst_layout;
} ew_state;

static void ew_release(void *state)
{
    ew_state *s = state;
    if (s == NULL)
        return;
    cpu_prim_release(&s->p);
    free(s);
}

static const rn_layout *ew_input_layout(const void *state, int i)
{
    const ew_state *s = state;
    if (s->swap)
        i = 1 - i;
    return i == 0 ? s->src_layout : s->src1_layout;
}

static const rn_layout *ew_output_layout(const void *state, int i)
{
    return i == 0 ? ((const ew_state *)state)->dst_layout : NULL;
}

static size_t ew_scratch(const void *state)
{
    return ((const ew_state *)state)->p.scratch;
}

static const char *ew_impl(const void *state)
{
    return ((const ew_state *)state)->p.impl;
}

/* Unary: the op's activation, with the Clip bounds of opset 11+ read from
 * its constant inputs. */
static bool unary_activation(const rn_node *node, activation *a)
{
    const char *op = rn_node_op_type(node);
    float params[2];
    int n = 0;
    if (strcmp(op, "LeakyRelu") == 0 || strcmp(op, "Elu") == 0) {
        params[n++] = rn_node_attr_float_or_default(node, "alpha");
    } else if (strcmp(op, "Clip") == 0) {
        params[0] = rn_node_attr_float(node, "min", -3.402823466e38f);
        params[1] = rn_node_attr_float(node, "max", 3.402823466e38f);
        n = 2;
        for (int k = 1; k < 3 && k < rn_node_input_count(node); k++) {
            if (rn_node_input_name(node, k)[0] == '\0')
                continue;
            const rn_kernel_tensor *t = rn_node_input_constant(node, k);
            if (t == NULL || t->type != RN_F32 || t->data == NULL)
                return false;
            params[k - 1] = *(const float *)t->data;
        }
    } else if (strcmp(op, "Gelu") == 0) {
        const char *approx = rn_node_attr_string(node, "approximate", "none");
        op = strcmp(approx, "tanh") == 0 ? "GeluTanh" : "GeluErf";
    }
    return activation_of(op, params, n, a);
}

static bool unary_supports(const rn_node *node, const char **why)
{
    activation a;
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "f32 only";
        return false;
    }
    if (!unary_activation(node, &a)) {
        *why = "parameters oneDNN cannot take (non-constant Clip bounds)";
        return false;
    }
    return cpu_static_node(node, why);
}

/* Creates the eltwise primitive over src (its second step a post-op). */
static rn_status unary_desc(const rn_node *node, ew_state *s, dnnl_primitive_desc_t *pd)
{
    activation a;
    unary_activation(node, &a);
    cpu_op d;
    dnnl_status_t ds = cpu_op_eltwise(&d, a.alg[0], &s->src, a.alpha[0], a.beta[0]);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the activation", ds);
    dnnl_post_ops_t po = NULL;
    if (a.n > 1 && (ds = dnnl_post_ops_create(&po)) == dnnl_success)
        ds = cpu_post_ops_append_eltwise(po, a.alg[1], a.alpha[1], a.beta[1]);
    if (ds != dnnl_success) {
        dnnl_post_ops_destroy(po);
        return cpu_error(node, "building post-ops", ds);
    }
    dnnl_primitive_attr_t attr;
    rn_status st = cpu_attr(node, po, &attr);
    dnnl_post_ops_destroy(po);
    dnnl_engine_t eng = NULL;
    if (st == RN_OK && (st = cpu_engine(&eng)) == RN_OK) {
        int prev = cpu_team_begin(node);
        ds = cpu_op_pd(pd, &d, attr, eng);
        cpu_team_end(prev);
        if (ds != dnnl_success)
            *pd = NULL;
        if (ds != dnnl_success && ds != dnnl_unimplemented)
            st = cpu_error(node, "creating the activation", ds);
    }
    dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Binary: Add, Sub, Mul, Div, Max, Min, Sum of two; the second input
 * broadcast to the first (or, for commutative ops, the first to the
 * second). */
static dnnl_alg_kind_t binary_alg(const char *op, bool *commutative)
{
    *commutative = true;
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sum") == 0)
        return dnnl_binary_add;
    if (strcmp(op, "Mul") == 0)
        return dnnl_binary_mul;
    if (strcmp(op, "Max") == 0)
        return dnnl_binary_max;
    if (strcmp(op, "Min") == 0)
        return dnnl_binary_min;
    *commutative = false;
    if (strcmp(op, "Sub") == 0)
        return dnnl_binary_sub;
    if (strcmp(op, "Div") == 0)
        return dnnl_binary_div;
    return dnnl_alg_kind_undef;
}

static bool same_shape(rn_partial_shape a, rn_partial_shape b)
{
    return a.rank == b.rank && memcmp(a.dims, b.dims, sizeof(int64_t) * (size_t)a.rank) == 0;
}

/* Which input plays src0 (the full-size one): 0, 1, or -1 for none. */
static int binary_src0(const rn_node *node)
{
    bool comm;
    binary_alg(rn_node_op_type(node), &comm);
    rn_partial_shape y = rn_node_output_shape(node, 0);
    if (same_shape(rn_node_input_shape(node, 0), y))
        return 0;
    if (comm && same_shape(rn_node_input_shape(node, 1), y))
        return 1;
    return -1;
}

static bool binary_supports(const rn_node *node, const char **why)
{
    if (rn_node_input_count(node) != 2 || rn_node_input_type(node, 0) != RN_F32 ||
        rn_node_input_type(node, 1) != RN_F32) {
        *why = "two f32 inputs only";
        return false;
    }
    if (!cpu_static_node(node, why))
        return false;
    if (binary_src0(node) < 0) {
        *why = "neither input has the output's shape";
        return false;
    }
    return true;
}

static rn_status binary_desc(const rn_node *node, ew_state *s, dnnl_primitive_desc_t *pd)
{
    bool comm;
    cpu_op d;
    dnnl_status_t ds =
        cpu_op_binary(&d, binary_alg(rn_node_op_type(node), &comm), &s->src, &s->src1, &s->dst);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the binary op", ds);
    dnnl_primitive_attr_t attr;
    rn_status st = cpu_attr(node, NULL, &attr);
    dnnl_engine_t eng = NULL;
    if (st == RN_OK && (st = cpu_engine(&eng)) == RN_OK) {
        int prev = cpu_team_begin(node);
        ds = cpu_op_pd(pd, &d, attr, eng);
        cpu_team_end(prev);
        if (ds != dnnl_success)
            *pd = NULL;
        if (ds != dnnl_success && ds != dnnl_unimplemented)
            st = cpu_error(node, "creating the binary op", ds);
    }
    dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Describes src (and src1) from the producers' layouts (plain: false) or
 * as plain f32. */
static rn_status ew_mds(const rn_node *node, const rn_kernel_ctx *ctx, ew_state *s, bool native)
{
    rn_partial_shape y = rn_node_output_shape(node, 0);
    int i0 = s->swap ? 1 : 0;
    const rn_layout *l0 = native && ctx->n_input_layouts > i0 ? ctx->input_layouts[i0] : NULL;
    rn_status st = cpu_input_md(l0, RN_F32, y.rank, y.dims, &s->src);
    if (st != RN_OK)
        return st;
    s->dst = s->src;
    if (!s->binary)
        return RN_OK;
    int i1 = 1 - i0;
    rn_partial_shape b = rn_node_input_shape(node, i1);
    const rn_layout *l1 = native && ctx->n_input_layouts > i1 ? ctx->input_layouts[i1] : NULL;
    if (l1 != NULL && same_shape(b, y))
        return cpu_input_md(l1, RN_F32, y.rank, y.dims, &s->src1);
    /* Right-aligned broadcast: leading 1s up to the output's rank. */
    int64_t dims[RN_MAX_RANK];
    for (int d = 0; d < y.rank; d++) {
        int k = d - (y.rank - b.rank);
        dims[d] = k >= 0 ? b.dims[k] : 1;
    }
    return cpu_plain_md(RN_F32, y.rank, dims, &s->src1);
}

static rn_status ew_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    ew_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    bool comm;
    s->binary = binary_alg(rn_node_op_type(node), &comm) != dnnl_alg_kind_undef &&
                rn_node_input_count(node) == 2;
    s->swap = s->binary && binary_src0(node) == 1;
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = RN_OK;
    /* In the producers' layouts first, else plain f32. */
    for (int native = 1; native >= 0 && st == RN_OK && pd == NULL; native--) {
        if ((st = ew_mds(node, ctx, s, native)) == RN_OK)
            st = s->binary ? binary_desc(node, s, &pd) : unary_desc(node, s, &pd);
    }
    if (st == RN_OK && pd == NULL)
        st = cpu_error(node, "creating the primitive", dnnl_unimplemented);
    if (st == RN_OK)
        st = cpu_prim_init(&s->p, node, pd);
    if (st != RN_OK) {
        ew_release(s);
        return st;
    }
    cpu_layout_init(&s->src_l, &s->src, RN_F32, &s->src_layout);
    cpu_layout_init(&s->dst_l, &s->dst, RN_F32, &s->dst_layout);
    if (s->binary)
        cpu_layout_init(&s->src1_l, &s->src1, RN_F32, &s->src1_layout);
    *state = s;
    return RN_OK;
}

static rn_status ew_run(rn_kernel_args *args)
{
    const ew_state *s = args->state;
    int i0 = s->swap ? 1 : 0;
    cpu_arg a[3] = {{DNNL_ARG_SRC_0, &s->src, args->inputs[i0].data},
                    {DNNL_ARG_DST, &s->dst, args->outputs[0].data},
                    {DNNL_ARG_SRC_1, &s->src1, s->binary ? args->inputs[1 - i0].data : NULL}};
    return cpu_execute(&s->p, args, a, s->binary ? 3 : 2);
}

static int ew_inplace(const void *state)
{
    return ((const ew_state *)state)->swap ? 1 : 0;
}

#define EW_KERNEL(name, op, sup)                                                                   \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "onednn",                                                                     \
        .supports = sup,                                                                           \
        .prepare_ctx = ew_prepare,                                                                 \
        .run = ew_run,                                                                             \
        .release = ew_release,                                                                     \
        .input_layout = ew_input_layout,                                                           \
        .output_layout = ew_output_layout,                                                         \
        .scratch_bytes = ew_scratch,                                                               \
        .inplace_input = ew_inplace,                                                               \
        .impl_name = ew_impl,                                                                      \
    }

EW_KERNEL(cpu_kernel_relu, "Relu", unary_supports);
EW_KERNEL(cpu_kernel_leaky_relu, "LeakyRelu", unary_supports);
EW_KERNEL(cpu_kernel_elu, "Elu", unary_supports);
EW_KERNEL(cpu_kernel_sigmoid, "Sigmoid", unary_supports);
EW_KERNEL(cpu_kernel_tanh, "Tanh", unary_supports);
EW_KERNEL(cpu_kernel_exp, "Exp", unary_supports);
EW_KERNEL(cpu_kernel_sqrt, "Sqrt", unary_supports);
EW_KERNEL(cpu_kernel_abs, "Abs", unary_supports);
EW_KERNEL(cpu_kernel_neg, "Neg", unary_supports);
EW_KERNEL(cpu_kernel_mish, "Mish", unary_supports);
EW_KERNEL(cpu_kernel_hard_swish, "HardSwish", unary_supports);
EW_KERNEL(cpu_kernel_gelu, "Gelu", unary_supports);
EW_KERNEL(cpu_kernel_clip, "Clip", unary_supports);
EW_KERNEL(cpu_kernel_add, "Add", binary_supports);
EW_KERNEL(cpu_kernel_sub, "Sub", binary_supports);
EW_KERNEL(cpu_kernel_mul, "Mul", binary_supports);
EW_KERNEL(cpu_kernel_div, "Div", binary_supports);
EW_KERNEL(cpu_kernel_max, "Max", binary_supports);
EW_KERNEL(cpu_kernel_min, "Min", binary_supports);
EW_KERNEL(cpu_kernel_sum, "Sum", binary_supports);
