/* REF NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, following the
 * ONNX reference. The input is N x C x D1...; the target N x D1... holds
 * class indices. For every (n, d): loss = -weight[t] * logp[n, t, d], where
 * logp is the input itself (NLL) or its log-softmax over C (SCE); a target
 * equal to ignore_index contributes 0 with weight 0. reduction 'none' keeps
 * the target's shape, 'sum' adds up, 'mean' divides the sum by the sum of
 * the gathered weights (each 1 without a weight input, ignored ones 0).
 * SCE's optional second output is the log-softmax. A target outside
 * [0, C) that is not ignore_index is an error. Computed in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool loss_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    rn_element_type ti = node->inputs[1]->type;
    if (ti != RN_I32 && ti != RN_I64) {
        *why = "target is not i32 or i64";
        return false;
    }
    if (node->n_inputs > 2 && node->inputs[2] != NULL && node->inputs[2]->type != t) {
        *why = "weight is not of the input's type";
        return false;
    }
    const char *red = graph_node_attr_string(node, "reduction", "mean");
    if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0) {
        *why = "reduction is not none, sum or mean";
        return false;
    }
    return true;
}

static rn_status loss_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *target = &args->inputs[1];
    const graph_tensor *weight =
        args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    graph_tensor *out = &args->outputs[0];
    graph_tensor *log_prob =
        args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    bool sce = strcmp(node->op_type, "SoftmaxCrossEntropyLoss") == 0;
    const char *red = graph_node_attr_string(node, "reduction", "mean");
    const graph_attr *ii = graph_node_attr(node, "ignore_index");
    bool has_ignore = ii != NULL && ii->type == GRAPH_ATTR_INT;
    int64_t ignore = has_ignore ? ii->i : 0;
    if (x->rank < 2 || target->rank != x->rank - 1 || target->dims[0] != x->dims[0])
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input must be N x C x D1... and target N x D1...",
                            node->name, node->op_type);
    for (int d = 2; d < x->rank; d++)
        if (target->dims[d - 1] != x->dims[d])
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): target dim %d is %lld but the input's dim %d is "
                                "%lld",
                                node->name, node->op_type, d - 1, (long long)target->dims[d - 1], d,
                                (long long)x->dims[d]);
    int64_t n = x->dims[0], c = x->dims[1], inner = ref_nn_span(x->dims, 2, x->rank);
    if (weight != NULL && (weight->rank != 1 || weight->dims[0] != c))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): weight must have %lld values",
                            node->name, node->op_type, (long long)c);
    bool none = strcmp(red, "none") == 0;
    if ((none && graph_tensor_count(out) != (size_t)(n * inner)) ||
        (!none && graph_tensor_count(out) != 1))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output size does not match",
                            node->name, node->op_type);
    size_t count = graph_tensor_count(x);
    double *lp = ref_nn_to_f64(x->type, x->data, count);
    double *loss = ref_tmp_alloc((size_t)(n * inner > 0 ? n * inner : 1) * sizeof(double));
    if (!lp || !loss) {
        ref_tmp_free(lp);
        ref_tmp_free(loss);
        return ref_nn_oom(node);
    }
    if (sce) {
        /* log-softmax over C for every (n, d). */
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < inner; d++) {
                double *p = lp + i * c * inner + d, mx = -INFINITY, s = 0.0;
                for (int64_t k = 0; k < c; k++)
                    mx = p[k * inner] > mx ? p[k * inner] : mx;
                for (int64_t k = 0; k < c; k++)
                    s += exp(p[k * inner] - mx);
                double lse = mx + log(s);
                for (int64_t k = 0; k < c; k++)
                    p[k * inner] -= lse;
            }
    }
    double sum = 0.0, wsum = 0.0;
    rn_status st = RN_OK;
    for (int64_t i = 0; st == RN_OK && i < n; i++)
        for (int64_t d = 0; d < inner; d++) {
            size_t at = (size_t)(i * inner + d);
            int64_t t = target->type == RN_I64 ? ((const int64_t *)target->data)[at]
                                               : ((const int32_t *)target->data)[at];
            if (has_ignore && t == ignore) {
                loss[at] = 0.0;
                continue;
            }
            if (t < 0 || t >= c) {
                st = rn_set_error(RN_INVALID_ARG,
                                  "node '%s' (%s): target %lld at element %zu is outside [0, %lld)",
                                  node->name, node->op_type, (long long)t, at, (long long)c);
                break;
            }
            double w = weight != NULL ? ref_nn_get(weight->type, weight->data, (size_t)t) : 1.0;
            loss[at] = -w * lp[(i * c + t) * inner + d];
            sum += loss[at];
            wsum += w;
        }
    if (st == RN_OK) {
        if (none)
            ref_nn_from_f64(out->type, out->data, loss, (size_t)(n * inner));
        else if (strcmp(red, "sum") == 0)
            ref_nn_set(out->type, out->data, 0, sum);
        else
            ref_nn_set(out->type, out->data, 0, sum / wsum);
        if (log_prob != NULL) {
            if (graph_tensor_count(log_prob) != count)
                st = rn_set_error(RN_SHAPE_MISMATCH,
                                  "node '%s' (%s): log_prob must have the input's shape",
                                  node->name, node->op_type);
            else
                ref_nn_from_f64(log_prob->type, log_prob->data, lp, count);
        }
    }
    ref_tmp_free(lp);
    ref_tmp_free(loss);
    return st;
}

const plugin_kernel ref_kernel_sce_loss = {
    .domain = "",
    .op_type = "SoftmaxCrossEntropyLoss",
    .impl_type = "ref",
    .supports = loss_supports,
    .run = loss_run,
};

const plugin_kernel ref_kernel_nll_loss = {
    .domain = "",
    .op_type = "NegativeLogLikelihoodLoss",
    .impl_type = "ref",
    .supports = loss_supports,
    .run = loss_run,
};
