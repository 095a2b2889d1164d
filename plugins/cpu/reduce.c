/* ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
 * ReduceL2 and ReduceSumSquare as a oneDNN reduction primitive over f32:
 * the destination is the input's shape with 1 on the reduced axes, plain,
 * which are also the bytes of the keepdims 0 output. The axes come from
 * the attribute or, from ReduceSum-13 and the others' opset 18, a constant
 * input (graph_reduce_axes reads both as shape inference does). Only where
 * oneDNN has more than its reference reduction (slower than REF's kernel:
 * reduce_pd), which means a plain source: from a producer's blocked layout
 * the plan converts. L1, L2 and
 * SumSquare are oneDNN's p-norms with p 1 and 2 and eps 0. A reduction
 * over no axis of more than one element (noop_with_empty_axes, or axes of
 * size 1) stays on REF's kernel: oneDNN has nothing to reduce then. */
#include <string.h>

#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"

static const struct {
    const char *op;
    dnnl_alg_kind_t alg;
    float p;
} reduce_algs[] = {
    {"ReduceSum", dnnl_reduction_sum, 0.0f},
    {"ReduceMean", dnnl_reduction_mean, 0.0f},
    {"ReduceMax", dnnl_reduction_max, 0.0f},
    {"ReduceMin", dnnl_reduction_min, 0.0f},
    {"ReduceProd", dnnl_reduction_mul, 0.0f},
    {"ReduceL1", dnnl_reduction_norm_lp_sum, 1.0f},
    {"ReduceL2", dnnl_reduction_norm_lp_sum, 2.0f},
    {"ReduceSumSquare", dnnl_reduction_norm_lp_power_p_sum, 2.0f},
};

/* The reduced axes: from the constant axes input when the op's opset has
 * one (false when it is not a constant), else the attribute. */
static bool reduce_axes(const rn_node *node, int rank, bool *reduced, const char **why)
{
    const int64_t *axes = NULL;
    int64_t n_axes = -1;
    if (rn_node_input_count(node) > 1 && rn_node_input_name(node, 1)[0] != '\0') {
        const rn_kernel_tensor *t = rn_node_input_constant(node, 1);
        if (t == NULL || t->type != RN_I64) {
            *why = "axes are not an i64 constant";
            return false;
        }
        n_axes = 1;
        for (int d = 0; d < t->rank; d++)
            n_axes *= t->dims[d];
        axes = t->data;
    }
    if (graph_reduce_axes(node, rank, axes, n_axes, reduced) != RN_OK) {
        rn_clear_error();
        *why = "invalid axes";
        return false;
    }
    return true;
}

/* The reduction over the plain f32 input: *pd NULL when oneDNN has no
 * implementation or only its reference one ("ref:any"), which runs several
 * times slower than REF's kernel (1x256x56x56 summed over C: 80 ms against
 * 15, its L2 over H and W: 113 against 26). oneDNN 2.6's jit reduction
 * takes Sum, Mean, Max, Min and Prod over the innermost axes, so the input
 * is described with its axes of size 1 dropped and neighbouring axes that
 * are both reduced or both kept merged (the same bytes): [N, C, H, W] over
 * H and W is [N * C, H * W] over the last. *src gets that descriptor. */
static rn_status reduce_pd(const rn_node *node, cpu_md *src, dnnl_primitive_desc_t *pd)
{
    rn_partial_shape x = rn_node_input_shape(node, 0);
    bool reduced[RN_MAX_RANK] = {false}, group_reduced[RN_MAX_RANK];
    const char *why = NULL;
    *pd = NULL;
    if (!reduce_axes(node, x.rank, reduced, &why))
        return rn_set_error(RN_INVALID_ARG, "CPU: node '%s' (%s): %s", rn_node_name(node),
                            rn_node_op_type(node), why);
    int64_t sdims[RN_MAX_RANK], ddims[RN_MAX_RANK];
    int n = 0;
    for (int d = 0; d < x.rank; d++) {
        if (x.dims[d] == 1)
            continue;
        if (n > 0 && group_reduced[n - 1] == reduced[d]) {
            sdims[n - 1] *= x.dims[d];
        } else {
            group_reduced[n] = reduced[d];
            sdims[n++] = x.dims[d];
        }
    }
    for (int i = 0; i < n; i++)
        ddims[i] = group_reduced[i] ? 1 : sdims[i];
    cpu_md dst;
    rn_status st;
    if ((st = cpu_plain_md(RN_F32, n, sdims, src)) != RN_OK ||
        (st = cpu_plain_md(RN_F32, n, ddims, &dst)) != RN_OK)
        return st;
    size_t k = 0;
    while (strcmp(reduce_algs[k].op, rn_node_op_type(node)) != 0)
        k++;
    cpu_op rd;
    dnnl_status_t ds = cpu_op_reduction(&rd, reduce_algs[k].alg, src, &dst, reduce_algs[k].p, 0.0f);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the reduction", ds);
    if ((st = cpu_weighted_pd(node, &rd, false, false, pd)) != RN_OK || *pd == NULL)
        return st;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        impl == NULL || strncmp(impl, "ref", 3) == 0) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
    }
    return RN_OK;
}

static bool reduce_supports(const rn_node *node, const char **why)
{
    rn_partial_shape x = rn_node_input_shape(node, 0);
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "f32 only";
        return false;
    }
    if (!cpu_static_node(node, why))
        return false;
    if (x.rank < 1 || x.rank > DNNL_MAX_NDIMS) {
        *why = "a scalar input";
        return false;
    }
    bool reduced[RN_MAX_RANK] = {false}, any = false;
    if (!reduce_axes(node, x.rank, reduced, why))
        return false;
    for (int d = 0; d < x.rank; d++)
        any = any || (reduced[d] && x.dims[d] > 1);
    for (int d = 0; d < x.rank; d++)
        if (x.dims[d] == 0) {
            *why = "an empty input (the reduction of nothing)";
            return false;
        }
    if (!any) {
        *why = "no axis of more than one element reduced (oneDNN has nothing to reduce)";
        return false;
    }
    cpu_md src;
    dnnl_primitive_desc_t pd = NULL;
    if (reduce_pd(node, &src, &pd) != RN_OK || pd == NULL) {
        rn_clear_error();
        *why = "oneDNN has only its reference reduction for these axes and this op (slower "
               "than REF's kernel)";
        return false;
    }
    dnnl_primitive_desc_destroy(pd);
    return true;
}

/* A blocked source gets oneDNN's reference reduction: none then
 * (cpu_unary_prepare asks again with a plain source). */
static rn_status reduce_desc(const rn_node *node, const cpu_unary *u, dnnl_primitive_desc_t *pd)
{
    rn_partial_shape x = rn_node_input_shape(node, 0);
    cpu_md plain;
    rn_status st = cpu_plain_md(RN_F32, x.rank, x.dims, &plain);
    if (st != RN_OK)
        return st;
    *pd = NULL;
    cpu_md src;
    return cpu_md_equal(&plain, &u->src) ? reduce_pd(node, &src, pd) : RN_OK;
}

static rn_status reduce_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    return cpu_unary_prepare(node, ctx, reduce_desc, state);
}

CPU_UNARY_KERNEL(cpu_kernel_reduce_sum, "ReduceSum", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_mean, "ReduceMean", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_max, "ReduceMax", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_min, "ReduceMin", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_prod, "ReduceProd", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_l1, "ReduceL1", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_l2, "ReduceL2", reduce_supports, reduce_prepare);
CPU_UNARY_KERNEL(cpu_kernel_reduce_sum_square, "ReduceSumSquare", reduce_supports, reduce_prepare);
