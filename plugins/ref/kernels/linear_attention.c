/* REF LinearAttention (opset 27), following the ONNX reference: a recurrent
 * state S (B, Hkv, dk, dv), from past_state or zeros, is updated token by
 * token and read by the queries:
 *   gated rules:  S = exp(g_t) * S            (decay g per head or per dk)
 *   delta rules:  v_t = beta_t * (v_t - S^T k_t)
 *   always:       S = S + k_t (x) v_t;  o_t = scale * q_t^T S
 * with update_rule linear, gated, delta or gated_delta (default). Inputs are
 * packed (B, T, H * D); each key / value head serves q_num_heads /
 * kv_num_heads query heads. scale 0 means 1 / sqrt(dk). present_state is the
 * final S. Computed in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool linear_attention_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    for (int i = 0; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL && !ref_nn_is_float(node->inputs[i]->type)) {
            *why = "inputs must be f32, f64, f16 or bf16";
            return false;
        }
    }
    return true;
}

static rn_status linear_attention_bad(const graph_node *node, const char *what)
{
    return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): %s", node->name, node->op_type, what);
}

static rn_status linear_attention_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *q = &args->inputs[0], *k = &args->inputs[1], *v = &args->inputs[2];
    const graph_tensor *past = args->n_inputs > 3 && args->inputs[3].data ? &args->inputs[3] : NULL;
    const graph_tensor *decay =
        args->n_inputs > 4 && args->inputs[4].data ? &args->inputs[4] : NULL;
    const graph_tensor *beta = args->n_inputs > 5 && args->inputs[5].data ? &args->inputs[5] : NULL;
    graph_tensor *y = &args->outputs[0];
    graph_tensor *state_out =
        args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    int64_t qh = graph_node_attr_int(node, "q_num_heads", 0);
    int64_t kvh = graph_node_attr_int(node, "kv_num_heads", 0);
    if (qh < 1 || kvh < 1 || qh % kvh != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): q_num_heads must be a positive multiple of "
                            "kv_num_heads",
                            node->name, node->op_type);
    if (q->rank != 3 || k->rank != 3 || v->rank != 3)
        return linear_attention_bad(node, "query, key and value must be (B, T, H * D)");
    int64_t b_n = q->dims[0], t_n = q->dims[1];
    if (k->dims[0] != b_n || v->dims[0] != b_n || k->dims[1] != t_n || v->dims[1] != t_n ||
        q->dims[2] % qh != 0 || k->dims[2] % kvh != 0 || v->dims[2] % kvh != 0 ||
        q->dims[2] / qh != k->dims[2] / kvh)
        return linear_attention_bad(node, "query, key and value do not split into the heads");
    int64_t dk = q->dims[2] / qh, dv = v->dims[2] / kvh, group = qh / kvh;
    const char *rule = graph_node_attr_string(node, "update_rule", "gated_delta");
    bool gated = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
    bool delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
    if ((gated && decay == NULL) || (delta && beta == NULL))
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): update_rule '%s' needs %s", node->name,
                            node->op_type, rule, gated ? "decay" : "beta");
    /* decay: one value per head, or per head and key dim; beta: per head or
     * one for all heads. */
    bool decay_per_dim = false;
    if (gated) {
        if (decay->rank != 3 || decay->dims[0] != b_n || decay->dims[1] != t_n ||
            (decay->dims[2] != kvh && decay->dims[2] != kvh * dk))
            return linear_attention_bad(node, "decay must be (B, T, Hkv) or (B, T, Hkv * dk)");
        decay_per_dim = decay->dims[2] == kvh * dk && dk != 1;
    }
    if (delta && (beta->rank != 3 || beta->dims[0] != b_n || beta->dims[1] != t_n ||
                  (beta->dims[2] != kvh && beta->dims[2] != 1)))
        return linear_attention_bad(node, "beta must be (B, T, Hkv) or (B, T, 1)");
    if (past != NULL && (past->rank != 4 || past->dims[0] != b_n || past->dims[1] != kvh ||
                         past->dims[2] != dk || past->dims[3] != dv))
        return linear_attention_bad(node, "past_state must be (B, Hkv, dk, dv)");
    size_t n_state = (size_t)(b_n * kvh * dk * dv);
    if (graph_tensor_count(y) != (size_t)(b_n * t_n * qh * dv) ||
        (state_out != NULL && graph_tensor_count(state_out) != n_state))
        return linear_attention_bad(node, "an output does not have the expected size");
    double scale = graph_node_attr_float(node, "scale", 0.0f);
    if (scale == 0.0)
        scale = 1.0 / sqrt((double)dk);
    double *s = past != NULL ? ref_nn_to_f64(past->type, past->data, n_state)
                             : ref_tmp_calloc(n_state ? n_state : 1, sizeof(double));
    double *vt = ref_tmp_alloc((size_t)(dv > 0 ? dv : 1) * sizeof(double));
    if (!s || !vt) {
        ref_tmp_free(s);
        ref_tmp_free(vt);
        return ref_nn_oom(node);
    }
    for (int64_t b = 0; b < b_n; b++)
        for (int64_t t = 0; t < t_n; t++) {
            size_t row = (size_t)(b * t_n + t);
            for (int64_t h = 0; h < kvh; h++) {
                double *sh = s + (b * kvh + h) * dk * dv;
                size_t kat = row * (size_t)(kvh * dk) + (size_t)(h * dk);
                if (gated)
                    for (int64_t d = 0; d < dk; d++) {
                        size_t at =
                            row * (size_t)decay->dims[2] + (size_t)(decay_per_dim ? h * dk + d : h);
                        double g = exp(ref_nn_get(decay->type, decay->data, at));
                        for (int64_t m = 0; m < dv; m++)
                            sh[d * dv + m] *= g;
                    }
                for (int64_t m = 0; m < dv; m++)
                    vt[m] = ref_nn_get(v->type, v->data,
                                       row * (size_t)(kvh * dv) + (size_t)(h * dv + m));
                if (delta) {
                    size_t bat = row * (size_t)beta->dims[2] + (size_t)(beta->dims[2] == 1 ? 0 : h);
                    double bt = ref_nn_get(beta->type, beta->data, bat);
                    for (int64_t m = 0; m < dv; m++) {
                        double r = 0.0;
                        for (int64_t d = 0; d < dk; d++)
                            r += sh[d * dv + m] * ref_nn_get(k->type, k->data, kat + (size_t)d);
                        vt[m] = bt * (vt[m] - r);
                    }
                }
                for (int64_t d = 0; d < dk; d++) {
                    double kd = ref_nn_get(k->type, k->data, kat + (size_t)d);
                    for (int64_t m = 0; m < dv; m++)
                        sh[d * dv + m] += kd * vt[m];
                }
            }
            for (int64_t h = 0; h < qh; h++) {
                const double *sh = s + (b * kvh + h / group) * dk * dv;
                size_t qat = row * (size_t)(qh * dk) + (size_t)(h * dk);
                for (int64_t m = 0; m < dv; m++) {
                    double o = 0.0;
                    for (int64_t d = 0; d < dk; d++)
                        o += ref_nn_get(q->type, q->data, qat + (size_t)d) * sh[d * dv + m];
                    ref_nn_set(y->type, y->data, row * (size_t)(qh * dv) + (size_t)(h * dv + m),
                               scale * o);
                }
            }
        }
    if (state_out != NULL)
        ref_nn_from_f64(state_out->type, state_out->data, s, n_state);
    ref_tmp_free(s);
    ref_tmp_free(vt);
    return RN_OK;
}

const plugin_kernel ref_kernel_linear_attention = {
    .domain = "",
    .op_type = "LinearAttention",
    .impl_type = "ref",
    .supports = linear_attention_supports,
    .run = linear_attention_run,
};
