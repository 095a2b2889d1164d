/* REF CausalConvWithState (opset 27): a causal depthwise 1-D convolution
 * carrying its left context between calls. The input (B, C, L) is prefixed
 * with past_state (B, C, k - 1), or zeros; each channel c is convolved with
 * its own kernel weight[c, 0, :] (plus bias[c]) so that output l sees
 * positions l - k + 1 .. l; activation silu / swish applies x * sigmoid(x)
 * to the result rounded to the input's type (as the reference does).
 * present_state is the last k - 1 positions of the prefixed input.
 * Computed in double. */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"

static bool causal_conv_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    for (int i = 0; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL &&
            (!ref_nn_is_float(node->inputs[i]->type) || node->inputs[i]->type != t)) {
            *why = "inputs are not all f32, f64, f16 or bf16 of one type";
            return false;
        }
    }
    const char *act = graph_node_attr_string(node, "activation", "none");
    if (strcmp(act, "none") != 0 && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0) {
        *why = "activation is not none, silu or swish";
        return false;
    }
    return true;
}

static rn_status causal_conv_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *w = &args->inputs[1];
    const graph_tensor *bias = args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    const graph_tensor *past = args->n_inputs > 3 && args->inputs[3].data ? &args->inputs[3] : NULL;
    graph_tensor *y = &args->outputs[0];
    graph_tensor *state = args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    if (x->rank != 3 || w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 ||
        w->dims[2] < 1)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input must be (B, C, L) and weight (C, 1, k >= 1)",
                            node->name, node->op_type);
    int64_t b_n = x->dims[0], c_n = x->dims[1], len = x->dims[2], k = w->dims[2];
    if ((bias != NULL && graph_tensor_count(bias) != (size_t)c_n) ||
        (past != NULL && (past->rank != 3 || past->dims[0] != b_n || past->dims[1] != c_n ||
                          past->dims[2] != k - 1)) ||
        graph_tensor_count(y) != graph_tensor_count(x) ||
        (state != NULL && graph_tensor_count(state) != (size_t)(b_n * c_n * (k - 1))))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): bias (C), past_state (B, C, k - 1) or an output has "
                            "the wrong shape",
                            node->name, node->op_type);
    bool silu = strcmp(graph_node_attr_string(node, "activation", "none"), "none") != 0;
    int64_t span = len + k - 1;
    for (int64_t b = 0; b < b_n; b++)
        for (int64_t c = 0; c < c_n; c++) {
            size_t xrow = (size_t)((b * c_n + c) * len), prow = (size_t)((b * c_n + c) * (k - 1));
            /* Position p of the prefixed input (past for p < k - 1). */
#define CAUSAL_AT(p)                                                                               \
    ((p) < k - 1 ? (past != NULL ? ref_nn_get(past->type, past->data, prow + (size_t)(p)) : 0.0)   \
                 : ref_nn_get(x->type, x->data, xrow + (size_t)((p) - (k - 1))))
            for (int64_t l = 0; l < len; l++) {
                double acc = bias != NULL ? ref_nn_get(bias->type, bias->data, (size_t)c) : 0.0;
                for (int64_t j = 0; j < k; j++)
                    acc += ref_nn_get(w->type, w->data, (size_t)(c * k + j)) * CAUSAL_AT(l + j);
                if (silu) {
                    uint64_t cell = 0;
                    ref_nn_set(y->type, &cell, 0, acc); /* round to the input's type first */
                    acc = ref_nn_get(y->type, &cell, 0);
                    acc = acc / (1.0 + exp(-acc));
                }
                ref_nn_set(y->type, y->data, xrow + (size_t)l, acc);
            }
            for (int64_t j = 0; state != NULL && j < k - 1; j++)
                ref_nn_set(state->type, state->data, prow + (size_t)j,
                           CAUSAL_AT(span - (k - 1) + j));
#undef CAUSAL_AT
        }
    return RN_OK;
}

const plugin_kernel ref_kernel_causal_conv = {
    .domain = "",
    .op_type = "CausalConvWithState",
    .impl_type = "ref",
    .supports = causal_conv_supports,
    .run = causal_conv_run,
};
