/* REF Adagrad, Adam and Momentum (ai.onnx.preview.training, version 1):
 * one update step of n tensors at once, following the ONNX reference. The
 * inputs are R (learning rate), T (step count), then X_1..n, G_1..n and the
 * state tensors (H for Adagrad; V for Momentum; V then H for Adam); the
 * outputs the new X_1..n and the new states. With G' = norm_coefficient * X
 * + G:
 *   Adagrad:  H' = H + G'^2;  X' = X - R / (1 + T * decay_factor) * G' /
 *             (sqrt(H') + epsilon)
 *   Momentum: V' = alpha * V + (T > 0 ? beta : 1) * G';  X' = X - R * V'
 *             (standard) or X - R * (G' + alpha * V') (nesterov)
 *   Adam:     V' = alpha * V + (1 - alpha) * G';  H' = beta * H + (1 - beta)
 *             * G'^2;  R' = R * sqrt(1 - beta^T) / (1 - alpha^T) when T > 0;
 *             X' = (1 - norm_coefficient_post) * (X - R' * V' / (sqrt(H') +
 *             epsilon))
 * Computed in double. */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"

enum optimizer_kind { OPT_ADAGRAD, OPT_ADAM, OPT_MOMENTUM };

static enum optimizer_kind optimizer_kind_of(const graph_node *node)
{
    return strcmp(node->op_type, "Adam") == 0       ? OPT_ADAM
           : strcmp(node->op_type, "Momentum") == 0 ? OPT_MOMENTUM
                                                    : OPT_ADAGRAD;
}

static bool optimizer_supports(const graph_node *node, const char **why)
{
    int k = optimizer_kind_of(node) == OPT_ADAM ? 4 : 3;
    int n = (node->n_inputs - 2) / k;
    if (n < 1 || node->n_inputs != 2 + k * n || node->n_outputs != (k - 1) * n) {
        *why = "inputs and outputs do not form R, T and the tensor groups";
        return false;
    }
    for (int i = 0; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v == NULL || (i == 1 ? v->type != RN_I64 : v->type != RN_F32 && v->type != RN_F64)) {
            *why = "R and the tensors must be f32 or f64 and T i64, none omitted";
            return false;
        }
    }
    if (optimizer_kind_of(node) == OPT_MOMENTUM) {
        const char *mode = graph_node_attr_string(node, "mode", "");
        if (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0) {
            *why = "mode is not standard or nesterov";
            return false;
        }
    }
    return true;
}

static rn_status optimizer_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    enum optimizer_kind kind = optimizer_kind_of(node);
    int k = kind == OPT_ADAM ? 4 : 3, n = (args->n_inputs - 2) / k;
    const graph_tensor *in = args->inputs;
    if (n < 1 || args->n_inputs != 2 + k * n || args->n_outputs != (k - 1) * n ||
        in[0].data == NULL || in[1].data == NULL || graph_tensor_count(&in[0]) != 1 ||
        graph_tensor_count(&in[1]) != 1)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): R and T must be scalars followed by %d groups of "
                            "tensors",
                            node->name, node->op_type, k);
    double r = ref_nn_get(in[0].type, in[0].data, 0);
    int64_t t = ((const int64_t *)in[1].data)[0];
    double norm = graph_node_attr_float(node, "norm_coefficient", 0.0f);
    double eps = graph_node_attr_float(node, "epsilon", 1e-6f);
    double alpha = graph_node_attr_float(node, "alpha", kind == OPT_ADAM ? 0.9f : 0.0f);
    double beta = graph_node_attr_float(node, "beta", kind == OPT_ADAM ? 0.999f : 0.0f);
    bool nesterov = strcmp(graph_node_attr_string(node, "mode", "standard"), "nesterov") == 0;
    if (kind == OPT_ADAGRAD)
        r /= 1.0 + (double)t * graph_node_attr_float(node, "decay_factor", 0.0f);
    if (kind == OPT_ADAM && t > 0)
        r *= sqrt(1.0 - pow(beta, (double)t)) / (1.0 - pow(alpha, (double)t));
    double post = 1.0 - graph_node_attr_float(node, "norm_coefficient_post", 0.0f);
    for (int i = 0; i < n; i++) {
        const graph_tensor *x = &in[2 + i], *g = &in[2 + n + i], *s1 = &in[2 + 2 * n + i];
        const graph_tensor *s2 = kind == OPT_ADAM ? &in[2 + 3 * n + i] : NULL;
        graph_tensor *x_out = &args->outputs[i], *s1_out = &args->outputs[n + i];
        graph_tensor *s2_out = kind == OPT_ADAM ? &args->outputs[2 * n + i] : NULL;
        size_t count = graph_tensor_count(x);
        bool ok = x->data && g->data && s1->data && (s2 == NULL || s2->data) &&
                  graph_tensor_count(g) == count && graph_tensor_count(s1) == count &&
                  (s2 == NULL || graph_tensor_count(s2) == count);
        /* Omitted outputs are allowed (not written); present ones must fit. */
        const graph_tensor *outs[3] = {x_out, s1_out, s2_out};
        for (int o = 0; ok && o < 3; o++)
            ok = outs[o] == NULL || outs[o]->data == NULL || graph_tensor_count(outs[o]) == count;
        if (!ok)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): tensor group %d does not have one shape",
                                node->name, node->op_type, i);
        for (size_t e = 0; e < count; e++) {
            double xv = ref_nn_get(x->type, x->data, e);
            double gv = norm * xv + ref_nn_get(g->type, g->data, e);
            double a = ref_nn_get(s1->type, s1->data, e), xn, an, bn = 0.0;
            if (kind == OPT_ADAGRAD) {
                an = a + gv * gv;
                xn = xv - r * gv / (sqrt(an) + eps);
            } else if (kind == OPT_MOMENTUM) {
                an = alpha * a + (t > 0 ? beta : 1.0) * gv;
                xn = nesterov ? xv - r * (gv + alpha * an) : xv - r * an;
            } else {
                double h = ref_nn_get(s2->type, s2->data, e);
                an = alpha * a + (1.0 - alpha) * gv;
                bn = beta * h + (1.0 - beta) * gv * gv;
                xn = post * (xv - r * an / (sqrt(bn) + eps));
            }
            if (x_out->data)
                ref_nn_set(x_out->type, x_out->data, e, xn);
            if (s1_out->data)
                ref_nn_set(s1_out->type, s1_out->data, e, an);
            if (s2_out != NULL && s2_out->data)
                ref_nn_set(s2_out->type, s2_out->data, e, bn);
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_adagrad = {
    .domain = "ai.onnx.preview.training",
    .op_type = "Adagrad",
    .impl_type = "ref",
    .supports = optimizer_supports,
    .run = optimizer_run,
};

const plugin_kernel ref_kernel_adam = {
    .domain = "ai.onnx.preview.training",
    .op_type = "Adam",
    .impl_type = "ref",
    .supports = optimizer_supports,
    .run = optimizer_run,
};

const plugin_kernel ref_kernel_momentum = {
    .domain = "ai.onnx.preview.training",
    .op_type = "Momentum",
    .impl_type = "ref",
    .supports = optimizer_supports,
    .run = optimizer_run,
};
