/* REF LayerNormalization (opset 17): each row of the dims [axis, rank) is
 * normalised to zero mean and unit variance, then scaled and shifted by
 * Scale and B (broadcast one-way to those dims). The optional Mean and
 * InvStdDev outputs hold the per-row statistics. Computed in double, which
 * is at least as precise as any stash_type. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool layernorm_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t)) {
        *why = "input type is not f32, f64, f16 or bf16";
        return false;
    }
    for (int i = 1; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL && node->inputs[i]->type != t) {
            *why = "inputs of different element types";
            return false;
        }
    }
    return true;
}

/* Expands a parameter broadcast one-way to dims[axis, rank) into n doubles. */
static rn_status layernorm_param(const graph_node *node, const graph_tensor *x, int axis,
                                 const graph_tensor *p, int64_t n, double *dst)
{
    int nd = x->rank - axis;
    if (p->rank > nd)
        goto bad;
    for (int d = 0; d < p->rank; d++) {
        int64_t pd = p->dims[d], xd = x->dims[x->rank - p->rank + d];
        if (pd != 1 && pd != xd)
            goto bad;
    }
    int64_t idx[RN_MAX_RANK] = {0}, pstride[RN_MAX_RANK];
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int pd = d - (nd - p->rank);
        int64_t dim = pd >= 0 ? p->dims[pd] : 1;
        pstride[d] = dim == 1 ? 0 : s;
        s *= dim;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += idx[d] * pstride[d];
        dst[j] = ref_nn_get(p->type, p->data, (size_t)off);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[axis + d])
                break;
            idx[d] = 0;
        }
    }
    return RN_OK;
bad:
    return rn_set_error(RN_SHAPE_MISMATCH,
                        "node '%s' (%s): a parameter of rank %d does not broadcast to the %d "
                        "normalized dims",
                        node->name, node->op_type, p->rank, nd);
}

static rn_status layernorm_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 2);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *scale = &args->inputs[1];
    const graph_tensor *bias = args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    graph_tensor *y = &args->outputs[0];
    graph_tensor *mean_out =
        args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    graph_tensor *inv_out = args->n_outputs > 2 && args->outputs[2].data ? &args->outputs[2] : NULL;
    int r = x->rank;
    int64_t axis = graph_node_attr_int_or_default(node, "axis");
    double eps = graph_node_attr_float_or_default(node, "epsilon");
    if (r < 1 || axis < -r || axis >= r)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): axis %lld is out of range for rank %d",
                            node->name, node->op_type, (long long)axis, r);
    int ax = (int)(axis < 0 ? axis + r : axis);
    int64_t outer = ref_nn_span(x->dims, 0, ax), n = ref_nn_span(x->dims, ax, r);
    if ((mean_out && (int64_t)graph_tensor_count(mean_out) != outer) ||
        (inv_out && (int64_t)graph_tensor_count(inv_out) != outer))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): Mean / InvStdDev must hold %lld "
                            "values",
                            node->name, node->op_type, (long long)outer);
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    double *sc = ref_tmp_alloc((size_t)(n > 0 ? n : 1) * 2 * sizeof(double));
    rn_status st = v && sc ? RN_OK : ref_nn_oom(node);
    double *bb = sc ? sc + n : NULL;
    if (st == RN_OK)
        st = layernorm_param(node, x, ax, scale, n, sc);
    if (st == RN_OK && bias != NULL)
        st = layernorm_param(node, x, ax, bias, n, bb);
    for (int64_t j = 0; st == RN_OK && bias == NULL && j < n; j++)
        bb[j] = 0.0;
    for (int64_t o = 0; st == RN_OK && o < outer; o++) {
        double *row = v + o * n;
        double s = 0.0, s2 = 0.0;
        for (int64_t j = 0; j < n; j++)
            s += row[j];
        double mu = n > 0 ? s / (double)n : 0.0;
        for (int64_t j = 0; j < n; j++)
            s2 += (row[j] - mu) * (row[j] - mu);
        double inv = 1.0 / sqrt((n > 0 ? s2 / (double)n : 0.0) + eps);
        for (int64_t j = 0; j < n; j++)
            row[j] = (row[j] - mu) * inv * sc[j] + bb[j];
        if (mean_out)
            ref_nn_set(mean_out->type, mean_out->data, (size_t)o, mu);
        if (inv_out)
            ref_nn_set(inv_out->type, inv_out->data, (size_t)o, inv);
    }
    if (st == RN_OK)
        ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    ref_tmp_free(sc);
    return st;
}

const plugin_kernel ref_kernel_layernorm = {
    .domain = "",
    .op_type = "LayerNormalization",
    .impl_type = "ref",
    .supports = layernorm_supports,
    .run = layernorm_run,
};
