/* Gemm (and runnel's FusedGemm: Gemm + activation) as a oneDNN inner
 * product, MatMul as a oneDNN matmul. Constant weights are converted into
 * the primitive's layout once at compile time (transforms/fuse_conv.c
 * stores a Gemm's constant B as [N, K], transB = 1); in bf16 the
 * activations and weights of both are bf16. */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"

static bool gemm_supports(const rn_node *node, const char **why)
{
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    if (rn_node_input_type(node, 0) != RN_F32 || a.rank != 2 || b.rank != 2) {
        *why = "2-D f32 operands only";
        return false;
    }
    if (rn_node_attr_int(node, "transA", 0) != 0 || rn_node_attr_int(node, "transB", 0) != 1 ||
        rn_node_attr_float(node, "alpha", 1.0f) != 1.0f) {
        *why = "transA, alpha != 1 or B not transposed";
        return false;
    }
    if (rn_node_input_constant(node, 1) == NULL) {
        *why = "B is not a constant";
        return false;
    }
    if (rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0') {
        const rn_kernel_tensor *c = rn_node_input_constant(node, 2);
        int64_t n = b.dims[0];
        if (c == NULL || rn_node_attr_float(node, "beta", 1.0f) != 1.0f ||
            !((c->rank == 1 && c->dims[0] == n) ||
              (c->rank == 2 && c->dims[0] == 1 && c->dims[1] == n))) {
            *why = "C must be a constant [N] or [1, N] with beta 1";
            return false;
        }
    }
    if (strcmp(rn_node_op_type(node), "FusedGemm") == 0 && !cpu_activation_supported(node)) {
        *why = "activation oneDNN has no post-op for";
        return false;
    }
    return cpu_static_node(node, why);
}

/* Whether a dim of input i is 0 (shapes static). */
static bool empty_input(const rn_node *node, int i)
{
    rn_partial_shape s = rn_node_input_shape(node, i);
    for (int d = 0; d < s.rank; d++)
        if (s.dims[d] == 0)
            return true;
    return false;
}

static bool matmul_supports(const rn_node *node, const char **why)
{
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    if (rn_node_input_type(node, 0) != RN_F32 || a.rank < 2 || b.rank < 2 || a.rank > 5 ||
        b.rank > 5) {
        *why = "f32 operands of rank 2 to 5 only";
        return false;
    }
    /* Creating oneDNN 2.6's matmul with a bias or post-ops for an M of 0
     * divides by zero (SIGFPE); an empty product has nothing to compute. */
    if (cpu_static_node(node, why) && (empty_input(node, 0) || empty_input(node, 1))) {
        *why = "an empty tensor";
        return false;
    }
    if (strcmp(rn_node_op_type(node), "FusedMatMul") == 0) {
        const rn_kernel_tensor *b = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0]
                                        ? rn_node_input_constant(node, 2)
                                        : NULL;
        if (rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] &&
            (b == NULL || b->type != RN_F32)) {
            *why = "the bias is not an f32 constant";
            return false;
        }
        if (!cpu_activation_supported(node)) {
            *why = "activation oneDNN has no post-op for";
            return false;
        }
    }
    return cpu_static_node(node, why);
}

static rn_status md_dims(int rank, const int64_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag,
                         dnnl_memory_desc_t *md)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    if (dnnl_memory_desc_init_by_tag(md, rank, d, dt, tag) != dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe a rank-%d tensor", rank);
    return RN_OK;
}

/* The primitive descriptor for element type dt (NULL: unimplemented). */
static rn_status gemm_desc(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                           dnnl_primitive_desc_t *pd)
{
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    rn_partial_shape y = rn_node_output_shape(node, 0);
    rn_status st;
    dnnl_status_t ds;
    union {
        dnnl_inner_product_desc_t ip;
        dnnl_matmul_desc_t mm;
    } d;
    if (s->matmul) {
        /* Both operands at the output's rank (leading 1s): oneDNN
         * broadcasts the batch dims. */
        int r = y.rank;
        int64_t ad[RN_MAX_RANK], bd[RN_MAX_RANK];
        for (int i = 0; i < r; i++) {
            ad[i] = i - (r - a.rank) >= 0 ? a.dims[i - (r - a.rank)] : 1;
            bd[i] = i - (r - b.rank) >= 0 ? b.dims[i - (r - b.rank)] : 1;
        }
        bool const_b = rn_node_input_constant(node, 1) != NULL;
        dnnl_data_type_t wdt = const_b ? dt : dnnl_f32;
        dnnl_data_type_t sdt = const_b ? dt : dnnl_f32;
        /* Plain row-major for the activations; "any" for constant weights. */
        if ((st = cpu_plain_md(RN_F32, r, ad, &s->src)) != RN_OK)
            return st;
        s->src.data_type = sdt;
        if (const_b) {
            if ((st = md_dims(r, bd, wdt, dnnl_format_tag_any, &s->wei)) != RN_OK)
                return st;
        } else if ((st = cpu_plain_md(RN_F32, r, bd, &s->wei)) != RN_OK) {
            return st;
        }
        if ((st = cpu_plain_md(RN_F32, r, y.dims, &s->dst)) != RN_OK)
            return st;
        s->dst.data_type = cpu_dst_type(node, sdt);
        if (s->has_bias) {
            int64_t bd[RN_MAX_RANK];
            for (int i = 0; i < r; i++)
                bd[i] = i == r - 1 ? y.dims[r - 1] : 1;
            if ((st = cpu_plain_md(RN_F32, r, bd, &s->bias)) != RN_OK)
                return st;
        }
        ds = dnnl_matmul_desc_init(&d.mm, &s->src, &s->wei, s->has_bias ? &s->bias : NULL, &s->dst);
    } else {
        int64_t n = b.dims[0];
        if ((st = md_dims(2, a.dims, dt, dnnl_format_tag_any, &s->src)) != RN_OK ||
            (st = md_dims(2, b.dims, dt, dnnl_format_tag_any, &s->wei)) != RN_OK ||
            (st = md_dims(2, y.dims, cpu_dst_type(node, dt), dnnl_format_tag_any, &s->dst)) !=
                RN_OK ||
            (st = cpu_plain_md(RN_F32, 1, &n, &s->bias)) != RN_OK)
            return st;
        ds = dnnl_inner_product_forward_desc_init(&d.ip, dnnl_forward_inference, &s->src, &s->wei,
                                                  s->has_bias ? &s->bias : NULL, &s->dst);
    }
    if (ds != dnnl_success)
        return cpu_error(node, "describing the product", ds);
    bool fused = strcmp(rn_node_op_type(node), "FusedGemm") == 0 ||
                 strcmp(rn_node_op_type(node), "FusedMatMul") == 0;
    return cpu_weighted_pd(node, &d, fused, false, pd);
}

static rn_status gemm_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    cpu_weighted *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    w->matmul = strstr(rn_node_op_type(node), "MatMul") != NULL;
    w->has_bias = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
    w->sum = -1;
    rn_status st = cpu_weighted_prepare(node, w, gemm_desc);
    if (st != RN_OK) {
        cpu_weighted_release(w);
        return st;
    }
    *state = w;
    return RN_OK;
}

CPU_WEIGHTED_KERNEL(cpu_kernel_gemm, "", "Gemm", gemm_supports, gemm_prepare);
CPU_WEIGHTED_KERNEL(cpu_kernel_fused_gemm, "runnel", "FusedGemm", gemm_supports, gemm_prepare);
CPU_WEIGHTED_KERNEL(cpu_kernel_matmul, "", "MatMul", matmul_supports, gemm_prepare);
CPU_WEIGHTED_KERNEL(cpu_kernel_fused_matmul, "runnel", "FusedMatMul", matmul_supports,
                    gemm_prepare);
