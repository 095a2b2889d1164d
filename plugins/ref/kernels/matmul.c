/* REF MatMul: numpy.matmul semantics. A 1-D A is a row vector, a 1-D B a
 * column vector (the added dim is not in Y); the batch dims (all but the last
 * two) broadcast.
 *
 * f32 runs the blocked sgemm per batch (one GEMM over all batches when B has
 * no batch dims), f16 / bf16 widen to f32 around it, f64 and the integer
 * types (i32, i64, u32, u64, wrapping) run plain loops. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool matmul_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (node->inputs[1]->type != t) {
        *why = "inputs of different element types";
        return false;
    }
    if (!ref_nn_is_float(t) && !ref_nn_is_gemm_int(t)) {
        *why = "input type is not f32, f64, f16, bf16, i32, i64, u32 or u64";
        return false;
    }
    return true;
}

/* One (m x k) * (k x n) product of element type t; offsets in elements. */
static rn_status matmul_one(rn_element_type t, int64_t m, int64_t n, int64_t k, const void *a,
                            const void *b, void *y)
{
    if (t == RN_F32)
        return ref_sgemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, y, n);
    if (t == RN_F64)
        ref_dgemm(false, false, m, n, k, 1.0, a, k, b, n, 0.0, y, n);
    else
        ref_igemm(t, false, false, m, n, k, 1, a, k, b, n, 0, y, n);
    return RN_OK;
}

static rn_status matmul_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 2);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    graph_tensor *y = &args->outputs[0];
    int ra = a->rank, rb = b->rank;
    if (ra < 1 || rb < 1)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): inputs of rank %d and %d; both "
                            "need rank >= 1",
                            node->name, node->op_type, ra, rb);
    int64_t m = ra == 1 ? 1 : a->dims[ra - 2], k = a->dims[ra - 1];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2], n = rb == 1 ? 1 : b->dims[rb - 1];
    if (k != kb)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): A has %lld columns but B %lld rows",
                            node->name, node->op_type, (long long)k, (long long)kb);
    /* Batch dims, right-aligned, with element strides (0 where broadcast). */
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0;
    int nbatch = na > nb ? na : nb;
    int64_t bdims[RN_MAX_RANK], astride[RN_MAX_RANK], bstride[RN_MAX_RANK];
    int64_t as = m * k, bs = k * n, batch = 1;
    for (int i = nbatch - 1; i >= 0; i--) {
        int ia = i - (nbatch - na), ib = i - (nbatch - nb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): batch dims %lld and %lld do not broadcast",
                                node->name, node->op_type, (long long)da, (long long)db);
        bdims[i] = da > db ? da : db;
        if (da == 0 || db == 0)
            bdims[i] = 0;
        astride[i] = da == 1 ? 0 : as;
        bstride[i] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
        batch *= bdims[i];
    }
    if (graph_tensor_count(y) != (size_t)(batch * m * n))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): output holds %zu values; expected %lld", node->name,
                            node->op_type, graph_tensor_count(y), (long long)(batch * m * n));
    if (batch == 0 || m == 0 || n == 0)
        return RN_OK;

    rn_element_type t = a->type;
    const void *av = a->data, *bv = b->data;
    void *yv = y->data;
    float *ao = NULL, *bo = NULL, *yo = NULL;
    rn_status st = RN_OK;
    if (t == RN_F16 || t == RN_BF16) {
        const float *af, *bf;
        st = ref_nn_f32_view(a, &af, &ao);
        if (st == RN_OK)
            st = ref_nn_f32_view(b, &bf, &bo);
        if (st == RN_OK && !(yo = ref_tmp_alloc((size_t)(batch * m * n) * sizeof(float))))
            st = RN_OUT_OF_MEMORY;
        av = af;
        bv = bf;
        yv = yo;
        t = RN_F32;
    }
    size_t es = rn_element_type_size(t);
    bool b_shared = true;
    for (int i = 0; i < nbatch; i++)
        b_shared = b_shared && (bstride[i] == 0 || bdims[i] == 1);
    if (st == RN_OK && b_shared) {
        /* B is the same for every batch and A's batches are contiguous rows. */
        st = matmul_one(t, batch * m, n, k, av, bv, yv);
    } else {
        int64_t idx[RN_MAX_RANK] = {0};
        for (int64_t bi = 0; st == RN_OK && bi < batch; bi++) {
            int64_t ao_el = 0, bo_el = 0;
            for (int i = 0; i < nbatch; i++) {
                ao_el += idx[i] * astride[i];
                bo_el += idx[i] * bstride[i];
            }
            st = matmul_one(t, m, n, k, (const char *)av + (size_t)ao_el * es,
                            (const char *)bv + (size_t)bo_el * es,
                            (char *)yv + (size_t)(bi * m * n) * es);
            for (int i = nbatch - 1; i >= 0; i--) {
                if (++idx[i] < bdims[i])
                    break;
                idx[i] = 0;
            }
        }
    }
    if (st == RN_OK && yo != NULL)
        ref_nn_from_f32(y->type, y->data, yo, (size_t)(batch * m * n));
    ref_tmp_free(ao);
    ref_tmp_free(bo);
    ref_tmp_free(yo);
    return st == RN_OK ? RN_OK : ref_nn_oom(node);
}

const plugin_kernel ref_kernel_matmul = {
    .domain = "",
    .op_type = "MatMul",
    .impl_type = "ref",
    .supports = matmul_supports,
    .run = matmul_run,
};
