/* REF MatMulInteger and QLinearMatMul: numpy.matmul of u8 / i8 matrices with
 * integer accumulation (1-D operands and broadcast batch dims as MatMul).
 *
 * A and B are shifted by their zero points into i32 (A's per tensor or per
 * row, B's per tensor or per column) and multiplied per batch with the
 * wrapping i32 GEMM:
 *   MatMulInteger: y = acc (i32);
 *   QLinearMatMul: y = saturate(round(acc * (a_scale * b_scale / y_scale)
 *                  + y_zero_point)), the multiplier computed in the scales'
 *                  type (f32, f16 or bf16, rounding at each step) and the
 *                  rest in double, round half to even, as the ONNX reference
 *                  does; a_scale is per tensor or per row, b_scale per tensor
 *                  or per column, y_scale and y_zero_point per tensor.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/quant_util.h"
#include "plugins/ref/kernels/tmp.h"

typedef struct qmm_shape {
    int64_t m, n, k, batch;
    int nbatch;
    int64_t bdims[RN_MAX_RANK], astride[RN_MAX_RANK], bstride[RN_MAX_RANK];
} qmm_shape;

static bool is_int8(const graph_value *v)
{
    return v != NULL && (v->type == RN_U8 || v->type == RN_I8);
}

static bool is_float(const graph_value *v)
{
    return v != NULL && ref_nn_is_float(v->type);
}

static bool matmul_integer_supports(const graph_node *node, const char **why)
{
    if (!is_int8(node->inputs[0]) || !is_int8(node->inputs[1])) {
        *why = "A or B is not u8 or i8";
        return false;
    }
    return true;
}

static bool qlinear_matmul_supports(const graph_node *node, const char **why)
{
    if (!is_int8(node->inputs[0]) || !is_int8(node->inputs[3])) {
        *why = "a or b is not u8 or i8";
        return false;
    }
    const graph_value *y = node->outputs[0];
    if (y == NULL || (y->type != RN_U8 && y->type != RN_I8)) {
        *why = "output is not u8 or i8";
        return false;
    }
    if (!is_float(node->inputs[1]) || !is_float(node->inputs[4]) || !is_float(node->inputs[6])) {
        *why = "a scale is not f32, f16, bf16 or f64";
        return false;
    }
    return true;
}

static rn_status qmm_shape_init(const graph_node *node, const graph_tensor *a,
                                const graph_tensor *b, const graph_tensor *y, qmm_shape *s)
{
    int ra = a->rank, rb = b->rank;
    if (ra < 1 || rb < 1)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "inputs of rank %d and %d; both need rank >= 1",
                            REF_Q_NODE_ARGS(node), ra, rb);
    memset(s, 0, sizeof *s);
    s->m = ra == 1 ? 1 : a->dims[ra - 2];
    s->k = a->dims[ra - 1];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
    s->n = rb == 1 ? 1 : b->dims[rb - 1];
    if (s->k != kb)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_Q_NODE_FMT "A has %lld columns but B %lld rows",
                            REF_Q_NODE_ARGS(node), (long long)s->k, (long long)kb);
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0;
    s->nbatch = na > nb ? na : nb;
    int64_t as = s->m * s->k, bs = s->k * s->n;
    s->batch = 1;
    for (int i = s->nbatch - 1; i >= 0; i--) {
        int ia = i - (s->nbatch - na), ib = i - (s->nbatch - nb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_Q_NODE_FMT "batch dims %lld and %lld do not broadcast",
                                REF_Q_NODE_ARGS(node), (long long)da, (long long)db);
        s->bdims[i] = da == 0 || db == 0 ? 0 : (da > db ? da : db);
        s->astride[i] = da == 1 ? 0 : as;
        s->bstride[i] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
        s->batch *= s->bdims[i];
    }
    if (graph_tensor_count(y) != (size_t)(s->batch * s->m * s->n))
        return rn_set_error(
            RN_SHAPE_MISMATCH, REF_Q_NODE_FMT "output holds %zu values; expected %lld",
            REF_Q_NODE_ARGS(node), graph_tensor_count(y), (long long)(s->batch * s->m * s->n));
    return RN_OK;
}

/* Whether parameter p (a zero point or scale) is per tensor (1 element) or
 * holds `len` elements along the last dim (`last`: per column) or the one
 * before it (per row), every other dim being 1. */
static bool qmm_param_ok(const graph_tensor *p, int64_t len, bool last)
{
    size_t count = graph_tensor_count(p);
    if (count == 1)
        return true;
    if (count != (size_t)len)
        return false;
    if (p->rank == 1)
        return true;
    return p->dims[p->rank - (last ? 1 : 2)] == len;
}

static rn_status qmm_param_error(const graph_node *node, int i, const char *what, int64_t len)
{
    return rn_set_error(RN_SHAPE_MISMATCH,
                        REF_Q_NODE_FMT "input %d must hold 1 element or %lld (one per %s)",
                        REF_Q_NODE_ARGS(node), i, (long long)len, what);
}

/* acc[batch x m x n] = (A - a_zp) x (B - b_zp) in wrapping i32. */
static rn_status qmm_accumulate(const plugin_kernel_args *args, int ia, int iaz, int ib, int ibz,
                                qmm_shape *s, int32_t **acc_out)
{
    const graph_node *node = args->node;
    const graph_tensor *a = &args->inputs[ia], *b = &args->inputs[ib];
    const graph_tensor *az = ref_q_opt(args, iaz), *bz = ref_q_opt(args, ibz);
    rn_status st = qmm_shape_init(node, a, b, &args->outputs[0], s);
    if (st != RN_OK)
        return st;
    if (az != NULL && !qmm_param_ok(az, s->m, false))
        return qmm_param_error(node, iaz, "row of A", s->m);
    if (bz != NULL && !qmm_param_ok(bz, s->n, true))
        return qmm_param_error(node, ibz, "column of B", s->n);
    size_t na = graph_tensor_count(a), nb = graph_tensor_count(b);
    size_t nacc = (size_t)(s->batch * s->m * s->n);
    int32_t *as = ref_tmp_alloc((na ? na : 1) * sizeof *as);
    int32_t *bs = ref_tmp_alloc((nb ? nb : 1) * sizeof *bs);
    int32_t *acc = ref_tmp_calloc(nacc ? nacc : 1, sizeof *acc);
    if (!as || !bs || !acc) {
        ref_tmp_free(as), ref_tmp_free(bs), ref_tmp_free(acc);
        return ref_nn_oom(node);
    }
    bool a_rows = az != NULL && graph_tensor_count(az) != 1;
    bool b_cols = bz != NULL && graph_tensor_count(bz) != 1;
    for (size_t i = 0; i < na; i++) {
        int64_t z =
            az == NULL ? 0 : ref_mv_int_at(az, a_rows ? i / (size_t)s->k % (size_t)s->m : 0);
        as[i] = (int32_t)(ref_mv_int_at(a, i) - z);
    }
    for (size_t i = 0; i < nb; i++) {
        int64_t z = bz == NULL ? 0 : ref_mv_int_at(bz, b_cols ? i % (size_t)s->n : 0);
        bs[i] = (int32_t)(ref_mv_int_at(b, i) - z);
    }
    int64_t idx[RN_MAX_RANK] = {0};
    for (int64_t bi = 0; bi < s->batch; bi++) {
        int64_t ao = 0, bo = 0;
        for (int i = 0; i < s->nbatch; i++) {
            ao += idx[i] * s->astride[i];
            bo += idx[i] * s->bstride[i];
        }
        ref_igemm(RN_I32, false, false, s->m, s->n, s->k, 1, as + ao, s->k, bs + bo, s->n, 0,
                  acc + bi * s->m * s->n, s->n);
        for (int i = s->nbatch - 1; i >= 0; i--) {
            if (++idx[i] < s->bdims[i])
                break;
            idx[i] = 0;
        }
    }
    ref_tmp_free(as);
    ref_tmp_free(bs);
    *acc_out = acc;
    return RN_OK;
}

static rn_status matmul_integer_run(plugin_kernel_args *args)
{
    rn_status st = ref_nn_args_ok(args, 2);
    if (st != RN_OK)
        return st;
    qmm_shape s;
    int32_t *acc;
    if ((st = qmm_accumulate(args, 0, 2, 1, 3, &s, &acc)) != RN_OK)
        return st;
    memcpy(args->outputs[0].data, acc, (size_t)(s.batch * s.m * s.n) * sizeof(int32_t));
    ref_tmp_free(acc);
    return RN_OK;
}

static rn_status qlinear_matmul_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_nn_args_ok(args, 1);
    static const int required[] = {1, 3, 4, 6};
    for (int k = 0; st == RN_OK && k < 4; k++)
        if (ref_q_opt(args, required[k]) == NULL)
            st = rn_set_error(RN_INVALID_ARG, REF_Q_NODE_FMT "required input %d is missing",
                              REF_Q_NODE_ARGS(node), required[k]);
    if (st != RN_OK)
        return st;
    const graph_tensor *as = &args->inputs[1], *bs = &args->inputs[4], *ys = &args->inputs[6];
    const graph_tensor *yz = ref_q_opt(args, 7);
    graph_tensor *y = &args->outputs[0];
    qmm_shape s;
    int32_t *acc;
    if ((st = qmm_accumulate(args, 0, 2, 3, 5, &s, &acc)) != RN_OK)
        return st;
    if (!qmm_param_ok(as, s.m, false))
        st = qmm_param_error(node, 1, "row of a", s.m);
    else if (!qmm_param_ok(bs, s.n, true))
        st = qmm_param_error(node, 4, "column of b", s.n);
    else if (graph_tensor_count(ys) != 1 || (yz != NULL && graph_tensor_count(yz) != 1))
        st = rn_set_error(RN_SHAPE_MISMATCH,
                          REF_Q_NODE_FMT "y_scale and y_zero_point must hold one element",
                          REF_Q_NODE_ARGS(node));
    if (st != RN_OK) {
        ref_tmp_free(acc);
        return st;
    }
    bool a_rows = graph_tensor_count(as) != 1, b_cols = graph_tensor_count(bs) != 1;
    rn_element_type t = as->type;
    double sy = ref_nn_get(ys->type, ys->data, 0);
    double zy = yz ? (double)ref_mv_int_at(yz, 0) : 0.0;
    int64_t lo = 0, hi = 0;
    ref_q_int_range(y->type, &lo, &hi);
    for (int64_t bi = 0; bi < s.batch; bi++)
        for (int64_t i = 0; i < s.m; i++)
            for (int64_t j = 0; j < s.n; j++) {
                double sa = ref_nn_get(as->type, as->data, (size_t)(a_rows ? i : 0));
                double sb = ref_nn_get(bs->type, bs->data, (size_t)(b_cols ? j : 0));
                double mult = ref_q_round_to(t, ref_q_round_to(t, sa * sb) / sy);
                size_t o = (size_t)((bi * s.m + i) * s.n + j);
                ref_mv_store_int(y->type, y->data, o,
                                 ref_q_saturate((double)acc[o] * mult + zy, lo, hi));
            }
    ref_tmp_free(acc);
    return RN_OK;
}

const plugin_kernel ref_kernel_matmul_integer = {
    .domain = "",
    .op_type = "MatMulInteger",
    .impl_type = "ref",
    .supports = matmul_integer_supports,
    .run = matmul_integer_run,
};

const plugin_kernel ref_kernel_qlinear_matmul = {
    .domain = "",
    .op_type = "QLinearMatMul",
    .impl_type = "ref",
    .supports = qlinear_matmul_supports,
    .run = qlinear_matmul_run,
};
