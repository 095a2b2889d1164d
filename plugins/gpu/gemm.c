/* Gemm, FusedGemm and MatMul through CLBlast: Sgemm, or strided-batched
 * Sgemm for MatMul over batches; Gemm's C (broadcast, times beta) and the
 * activation are runnel kernels after it. */
#include <clblast_c.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/elementwise.h"
#include "plugins/gpu/gpu.h"

typedef struct gemm_state {
    gpu_node g; /* first: gpu_state_free frees it */
    size_t M, N, K, batch;
    size_t a_stride, b_stride; /* per batch (0: shared) */
    bool trans_a, trans_b;
    float alpha, beta;
    gpu_broadcast c; /* Gemm's C against Y */
    bool has_c;
    int act;
    float a0, a1;
} gemm_state;

static bool gemm_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_input_shape(node, 0).rank != 2 || rn_node_input_shape(node, 1).rank != 2) {
        *why = "GPU: Gemm of 2-D A and B only";
        return false;
    }
    int act;
    float a0, a1;
    if (strcmp(rn_node_op_type(node), "FusedGemm") == 0 &&
        !gpu_fused_activation(node, &act, &a0, &a1, why))
        return false;
    return true;
}

static rn_status gemm_prepare(const rn_node *node, void **out)
{
    gemm_state *s;
    static const char *const kernels[] = {"binary", "unary", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape a = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    s->trans_a = rn_node_attr_int_or_default(node, "transA") != 0;
    s->trans_b = rn_node_attr_int_or_default(node, "transB") != 0;
    s->alpha = rn_node_attr_float_or_default(node, "alpha");
    s->beta = rn_node_attr_float_or_default(node, "beta");
    s->M = (size_t)y.dims[0], s->N = (size_t)y.dims[1];
    s->K = (size_t)(s->trans_a ? a.dims[0] : a.dims[1]);
    s->batch = 1;
    s->has_c = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
    if (s->has_c)
        gpu_broadcast_init(&s->c, y, y, rn_node_input_shape(node, 2));
    const char *why;
    if (strcmp(rn_node_op_type(node), "FusedGemm") == 0)
        gpu_fused_activation(node, &s->act, &s->a0, &s->a1, &why);
    *out = s;
    return RN_OK;
}

static bool matmul_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    if (a.rank < 2 || b.rank < 2) {
        *why = "GPU: MatMul of 1-D operands is not implemented";
        return false;
    }
    if (b.rank == 2)
        return true; /* A's batch folds into its rows */
    if (a.rank != b.rank) {
        *why = "GPU: MatMul with batch dims of different ranks is not implemented";
        return false;
    }
    for (int d = 0; d < a.rank - 2; d++)
        if (a.dims[d] != b.dims[d]) {
            *why = "GPU: MatMul with broadcast batch dims is not implemented";
            return false;
        }
    return true;
}

static rn_status matmul_prepare(const rn_node *node, void **out)
{
    gemm_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, NULL, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape a = rn_node_input_shape(node, 0), b = rn_node_input_shape(node, 1);
    s->K = (size_t)a.dims[a.rank - 1];
    s->N = (size_t)b.dims[b.rank - 1];
    s->M = (size_t)a.dims[a.rank - 2];
    s->alpha = 1.0f;
    size_t batch = 1;
    for (int d = 0; d < a.rank - 2; d++)
        batch *= (size_t)a.dims[d];
    if (b.rank == 2) {
        s->M *= batch; /* A's rows of every batch, against the one B */
        s->batch = 1;
    } else {
        s->batch = batch;
        s->a_stride = s->M * s->K;
        s->b_stride = s->K * s->N;
    }
    *out = s;
    return RN_OK;
}

static rn_status gemm_run(rn_kernel_args *args)
{
    gemm_state *s = args->state;
    cl_command_queue q = gpu_queue(args);
    gpu_mem a = gpu_input(&s->g, args, 0), b = gpu_input(&s->g, args, 1), y = gpu_output(args, 0);
    size_t lda = s->trans_a ? s->M : s->K, ldb = s->trans_b ? s->K : s->N;
    CLBlastTranspose ta = s->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = s->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode c;
    cl_event begin = gpu_span_begin(args), end = NULL;
    if (s->batch == 1)
        c = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, s->M, s->N, s->K, s->alpha, a.mem, a.off,
                         lda, b.mem, b.off, ldb, 0.0f, y.mem, y.off, s->N, &q, &end);
    else
        c = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, s->M, s->N, s->K, s->alpha,
                                       a.mem, a.off, lda, s->a_stride, b.mem, b.off, ldb,
                                       s->b_stride, 0.0f, y.mem, y.off, s->N, s->M * s->N, s->batch,
                                       &q, &end);
    gpu_span_end(&s->g, args, begin, end);
    if (c != CLBlastSuccess)
        return rn_set_error(RN_DEVICE_ERROR, "GPU: node '%s': CLBlast GEMM failed (status %d)",
                            s->g.name, (int)c);
    rn_status st = RN_OK;
    if (s->has_c && s->beta != 0.0f)
        st = gpu_binary_launch(&s->g, args, 0, &s->c, y, gpu_input(&s->g, args, 2), y,
                               GPU_BINARY_ADD_SCALED, s->beta);
    if (st == RN_OK && s->act != GPU_ACT_NONE)
        st = gpu_unary_launch(&s->g, args, 1, y, y, s->M * s->N, s->act, s->a0, s->a1);
    return st;
}

#define GEMM_KERNEL(name, dom, op, supports_fn, prepare_fn)                                        \
    const rn_kernel name = {                                                                       \
        .domain = dom,                                                                             \
        .op_type = op,                                                                             \
        .impl_type = "clblast",                                                                    \
        .supports = supports_fn,                                                                   \
        .prepare = prepare_fn,                                                                     \
        .run = gemm_run,                                                                           \
        .release = gpu_state_free,                                                                 \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

GEMM_KERNEL(gpu_kernel_gemm, "", "Gemm", gemm_supports, gemm_prepare);
GEMM_KERNEL(gpu_kernel_fused_gemm, "runnel", "FusedGemm", gemm_supports, gemm_prepare);
GEMM_KERNEL(gpu_kernel_matmul, "", "MatMul", matmul_supports, matmul_prepare);
