/* REF InstanceNormalization and GroupNormalization: X is N x C x D1...;
 * each (image, group of C / G channels) block is normalised to zero mean
 * and unit variance (population variance, plus epsilon), then scaled and
 * shifted per channel (InstanceNormalization, GroupNormalization-21) or per
 * group (GroupNormalization-18). InstanceNormalization is the G = C case.
 * Computed in double, which is at least as precise as any stash_type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool group_norm_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t)) {
        *why = "input X is not f32, f64, f16 or bf16";
        return false;
    }
    for (int i = 1; i < node->n_inputs; i++) {
        if (node->inputs[i] == NULL || node->inputs[i]->type != t) {
            *why = "scale and bias must be present and of X's type";
            return false;
        }
    }
    if (strcmp(node->op_type, "GroupNormalization") == 0) {
        int64_t stash = graph_node_attr_int(node, "stash_type", 1);
        if (!ref_nn_is_float((rn_element_type)stash)) {
            *why = "stash_type is not a float type";
            return false;
        }
    }
    return true;
}

static rn_status group_norm_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *scale = &args->inputs[1], *bias = &args->inputs[2];
    graph_tensor *y = &args->outputs[0];
    bool instance = strcmp(node->op_type, "InstanceNormalization") == 0;
    if (x->rank < 2)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input X has rank %d; at least 2",
                            node->name, node->op_type, x->rank);
    int64_t batch = x->dims[0], c = x->dims[1], spatial = ref_nn_span(x->dims, 2, x->rank);
    int64_t groups = instance ? c : graph_node_attr_int(node, "num_groups", 0);
    double eps = graph_node_attr_float_or_default(node, "epsilon");
    if (groups < 1 || c % groups != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): num_groups %lld does not divide %lld channels",
                            node->name, node->op_type, (long long)groups, (long long)c);
    /* GroupNormalization-18 takes one scale / bias per group, later versions
     * (and InstanceNormalization) one per channel. */
    bool per_group = !instance && node->opset < 21;
    int64_t n_param = per_group ? groups : c;
    if (graph_tensor_count(scale) != (size_t)n_param || graph_tensor_count(bias) != (size_t)n_param)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): scale and bias must hold %lld values (got %zu and "
                            "%zu)",
                            node->name, node->op_type, (long long)n_param,
                            graph_tensor_count(scale), graph_tensor_count(bias));
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    if (v == NULL)
        return ref_nn_oom(node);
    int64_t cg = c / groups, block = cg * spatial;
    for (int64_t n = 0; n < batch; n++) {
        for (int64_t g = 0; g < groups; g++) {
            double *p = v + (n * c + g * cg) * spatial;
            double s = 0.0, s2 = 0.0;
            for (int64_t i = 0; i < block; i++)
                s += p[i];
            double mean = block > 0 ? s / (double)block : 0.0;
            for (int64_t i = 0; i < block; i++)
                s2 += (p[i] - mean) * (p[i] - mean);
            double inv = 1.0 / sqrt((block > 0 ? s2 / (double)block : 0.0) + eps);
            for (int64_t ch = 0; ch < cg; ch++) {
                size_t k = (size_t)(per_group ? g : g * cg + ch);
                double a = ref_nn_get(scale->type, scale->data, k) * inv;
                double b = ref_nn_get(bias->type, bias->data, k);
                double *q = p + ch * spatial;
                for (int64_t i = 0; i < spatial; i++)
                    q[i] = (q[i] - mean) * a + b;
            }
        }
    }
    ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    return RN_OK;
}

const plugin_kernel ref_kernel_instance_norm = {
    .domain = "",
    .op_type = "InstanceNormalization",
    .impl_type = "ref",
    .supports = group_norm_supports,
    .run = group_norm_run,
};

const plugin_kernel ref_kernel_group_norm = {
    .domain = "",
    .op_type = "GroupNormalization",
    .impl_type = "ref",
    .supports = group_norm_supports,
    .run = group_norm_run,
};
