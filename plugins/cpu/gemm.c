/* Gemm (and runnel's FusedGemm: Gemm + activation) as a oneDNN inner
 * product, MatMul as a oneDNN matmul. Constant weights are converted into
 * the primitive's layout once at compile time (transforms/fuse_conv.c
 * stores a Gemm's constant B as [N, K], transB = 1); in bf16 the
 * activations and weights of both are bf16.
 *
 * A MatMul by constant weights [K, N] whose matmul oneDNN implements with
 * its gemm (oneDNN 2.6 without brgemm, e.g. AVX2: "gemm:jit", weights plain,
 * B packed again on every call) runs as a 1x1 convolution instead, when
 * oneDNN has a jit one for it: x [..., M, K] viewed as an image [1, K, M, 1]
 * channels-last (nhwc: x's own bytes), y [1, N, M, 1] nhwc (y's), the
 * weights [N, K, 1, 1] in the convolution's layout, converted once from the
 * plain [K, N] tensor read with its axes swapped (cpu_layout_init_plain).
 * Bias, residual (FusedMatMul's input 3: a sum post-op over the output,
 * which the plan may put on the residual's bytes) and activation are the
 * convolution's bias and post-ops. Measured on
 * AVX2 in BERT-base at one thread: 0.82-0.91 of the matmul's time per
 * product (bench/LOG.md, "Encoder products as 1x1 convolutions"). The same
 * in f32 and bf16 where the matmul is brgemm on AVX-512, which keeps such
 * weights plain too (gemm_desc); in bf16 x and y keep the bf16 layout of
 * the MatMul's own shape, the bytes the convolution reads as nhwc. */
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

/* A FusedMatMul's residual (input 3: fuse_matmul_add), summed into the
 * output by the primitive's sum post-op. */
static bool has_residual(const rn_node *node)
{
    return strcmp(rn_node_op_type(node), "FusedMatMul") == 0 && rn_node_input_count(node) > 3 &&
           rn_node_input_name(node, 3)[0] != '\0';
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
        if (has_residual(node) && rn_node_input_type(node, 3) != RN_F32) {
            *why = "the residual is not f32";
            return false;
        }
    }
    return cpu_static_node(node, why);
}

static rn_status md_dims(int rank, const int64_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag,
                         cpu_md *md)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    if (cpu_md_init_by_tag(md, rank, d, dt, tag) != dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe a rank-%d tensor", rank);
    return RN_OK;
}

/* Whether input 1 is constant weights [K, N] (leading 1s allowed) of a
 * product whose output has A's rank: the 1x1 convolution's case. */
static bool weights_2d(const rn_node *node)
{
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    if (rn_node_input_constant(node, 1) == NULL || b.rank > a.rank)
        return false;
    for (int i = 0; i < b.rank - 2; i++)
        if (b.dims[i] != 1)
            return false;
    return true;
}

/* The MatMul x [..., M, K] @ W [K, N] as a 1x1 convolution over x viewed
 * as [1, K, M, 1] nhwc, x and W of element type dt, y of y_dt (*pd NULL
 * when oneDNN has none). */
static void conv1x1_desc(const rn_node *node, dnnl_data_type_t dt, dnnl_data_type_t y_dt,
                         bool fused, bool sum, dnnl_primitive_desc_t *pd)
{
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    int64_t k = a.dims[a.rank - 1], n = b.dims[b.rank - 1], m = 1;
    for (int i = 0; i < a.rank - 1; i++)
        m *= a.dims[i];
    dnnl_dims_t xd = {1, k, m, 1}, wd = {n, k, 1, 1}, yd = {1, n, m, 1}, bd = {n};
    dnnl_dims_t ones = {1, 1}, zeros = {0, 0};
    cpu_md x, w, bias, y;
    cpu_op cd;
    bool has_bias = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
    dnnl_status_t ds = cpu_md_init_by_tag(&x, 4, xd, dt, dnnl_nhwc);
    if (ds == dnnl_success)
        ds = cpu_md_init_by_tag(&w, 4, wd, dt, dnnl_format_tag_any);
    if (ds == dnnl_success)
        ds = cpu_md_init_by_tag(&y, 4, yd, y_dt, dnnl_nhwc);
    if (ds == dnnl_success)
        ds = cpu_md_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a);
    if (ds == dnnl_success)
        ds = cpu_op_conv(&cd, dnnl_convolution_direct, &x, &w, has_bias ? &bias : NULL, &y, ones,
                         zeros, zeros, zeros);
    *pd = NULL;
    /* Not describable or not creatable: the matmul stays. */
    if (ds != dnnl_success || cpu_weighted_pd(node, &cd, fused, sum, pd) != RN_OK)
        rn_clear_error();
}

/* Whether an f32 brgemm matmul by constant 2-D weights runs as the 1x1
 * convolution too (gemm_desc); RN_CPU_MATMUL_CONV1X1=0: no. */
static bool conv1x1_over_brgemm(void)
{
    const char *v = getenv("RN_CPU_MATMUL_CONV1X1");
    return v == NULL || strcmp(v, "0") != 0;
}

/* The primitive descriptor for element type dt (NULL: unimplemented). */
static rn_status gemm_desc(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                           dnnl_primitive_desc_t *pd)
{
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    rn_partial_shape y = rn_node_output_shape(node, 0);
    rn_status st;
    dnnl_status_t ds;
    cpu_op d;
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
        ds = cpu_op_matmul(&d, &s->src, &s->wei, s->has_bias ? &s->bias : NULL, &s->dst);
    } else {
        int64_t n = b.dims[0];
        if ((st = md_dims(2, a.dims, dt, dnnl_format_tag_any, &s->src)) != RN_OK ||
            (st = md_dims(2, b.dims, dt, dnnl_format_tag_any, &s->wei)) != RN_OK ||
            (st = md_dims(2, y.dims, cpu_dst_type(node, dt), dnnl_format_tag_any, &s->dst)) !=
                RN_OK ||
            (st = cpu_plain_md(RN_F32, 1, &n, &s->bias)) != RN_OK)
            return st;
        ds = cpu_op_inner_product(&d, &s->src, &s->wei, s->has_bias ? &s->bias : NULL, &s->dst);
    }
    if (ds != dnnl_success)
        return cpu_error(node, "describing the product", ds);
    bool fused = strcmp(rn_node_op_type(node), "FusedGemm") == 0 ||
                 strcmp(rn_node_op_type(node), "FusedMatMul") == 0;
    st = cpu_weighted_pd(node, &d, fused, s->sum >= 0, pd);
    s->conv1x1 = false;
    /* On AVX-512 (not AMX: not measured), f32 and bf16: oneDNN 2.6's
     * brgemm matmul ("brg:avx512_core", "brg:avx512_core_bf16") reads the
     * constant weights plain ([K, N] row-major whatever "any" asks) where its 1x1
     * convolution has them blocked; on MiniLM-L6's products (M 128, K and
     * N 384 and 1536) the convolution took 0.89-0.92 of the matmul's time
     * in f32 and 0.83-0.87 in bf16 at one and two threads on a Zen 4
     * (bench/LOG.md, "MiniLM-L6 encoder per layer against OpenVINO on
     * AVX-512"). RN_CPU_MATMUL_CONV1X1=0 keeps the brgemm matmul (an A/B
     * switch for bench/models). */
    if (st != RN_OK || *pd == NULL || !s->matmul || !weights_2d(node))
        return st;
    const char *impl = cpu_pd_impl(*pd);
    bool brg = strncmp(impl, "brg", 3) == 0 && strstr(impl, "avx512") != NULL &&
               strstr(impl, "amx") == NULL && conv1x1_over_brgemm();
    if (!(strncmp(impl, "gemm", 4) == 0 && dt == dnnl_f32) && !brg)
        return st;
    dnnl_primitive_desc_t cpd = NULL;
    conv1x1_desc(node, dt, s->dst.data_type, fused, s->sum >= 0, &cpd);
    /* A jit kernel (2.x's "jit:avx2", 3.x's "brgconv_1x1:avx2", on
     * AVX-512 "brgconv_1x1:avx512_core"). */
    impl = cpd != NULL ? cpu_pd_impl(cpd) : "";
    if (strncmp(impl, "jit", 3) == 0 || strncmp(impl, "brg", 3) == 0) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = cpd;
        s->conv1x1 = true;
    } else if (cpd != NULL) {
        dnnl_primitive_desc_destroy(cpd);
    }
    return RN_OK;
}

static rn_status gemm_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    cpu_weighted *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    w->matmul = strstr(rn_node_op_type(node), "MatMul") != NULL;
    w->has_bias = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
    w->sum = has_residual(node) ? 3 : -1;
    rn_status st = cpu_weighted_prepare(node, w, gemm_desc);
    if (st == RN_OK && w->conv1x1) {
        /* x and y stay plain (nhwc of [1, K, M, 1] is [M, K] row-major):
         * in f32 no layout, in bf16 the one of the MatMul's own shape;
         * the weights [K, N] are read as [N, K, 1, 1] with strides. */
        w->src_layout = NULL;
        w->dst_layout = NULL;
        rn_partial_shape a = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
        cpu_md md;
        if (st == RN_OK && w->src.data_type != dnnl_f32 &&
            (st = cpu_plain_md(RN_F32, a.rank, a.dims, &md)) == RN_OK) {
            md.data_type = w->src.data_type;
            cpu_layout_init(&w->src_l, &md, RN_F32, &w->src_layout);
        }
        if (st == RN_OK && w->dst.data_type != dnnl_f32 &&
            (st = cpu_plain_md(RN_F32, y.rank, y.dims, &md)) == RN_OK) {
            md.data_type = w->dst.data_type;
            cpu_layout_init(&w->dst_l, &md, RN_F32, &w->dst_layout);
        }
        rn_partial_shape b = rn_node_input_shape(node, 1);
        int64_t k = b.dims[b.rank - 2], n = b.dims[b.rank - 1];
        dnnl_dims_t dims = {n, k, 1, 1}, strides = {1, n, n * k, n * k};
        cpu_md plain;
        dnnl_status_t ds = cpu_md_init_by_strides(&plain, 4, dims, dnnl_f32, strides);
        if (ds != dnnl_success)
            st = cpu_error(node, "describing the product's weights", ds);
        else
            cpu_layout_init_plain(&w->wei_l, &w->wei, &plain, &w->wei_layout);
    }
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
