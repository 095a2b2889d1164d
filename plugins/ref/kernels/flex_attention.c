/* REF FlexAttention (ai.onnx.preview, version 1) without modifier
 * subgraphs: Y = softmax(scale * Q K^T) V over rank-4 inputs, each key /
 * value head serving q_heads / kv_heads consecutive query heads; scale
 * defaults to 1 / sqrt(head size). A node with score_mod or prob_mod is
 * unsupported: REF kernels cannot run subgraphs. Computed in double (which
 * meets any softmax_precision). */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool flex_attention_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    for (int i = 0; i < 3; i++) {
        if (!ref_nn_is_float(node->inputs[i]->type)) {
            *why = "Q, K and V must be f32, f64, f16 or bf16";
            return false;
        }
    }
    if (graph_node_attr(node, "score_mod") != NULL || graph_node_attr(node, "prob_mod") != NULL) {
        *why = "score_mod / prob_mod subgraphs are not run by REF kernels";
        return false;
    }
    return true;
}

static rn_status flex_attention_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *q = &args->inputs[0], *k = &args->inputs[1], *v = &args->inputs[2];
    graph_tensor *y = &args->outputs[0];
    if (q->rank != 4 || k->rank != 4 || v->rank != 4 || k->dims[0] != q->dims[0] ||
        v->dims[0] != q->dims[0] || k->dims[3] != q->dims[3] || v->dims[1] != k->dims[1] ||
        v->dims[2] != k->dims[2] || k->dims[1] < 1 || q->dims[1] % k->dims[1] != 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): Q (B, Hq, L, E), K (B, Hkv, S, E) and V (B, Hkv, S, "
                            "Ev) do not agree",
                            node->name, node->op_type);
    int64_t b_n = q->dims[0], hq = q->dims[1], l_n = q->dims[2], e = q->dims[3];
    int64_t hkv = k->dims[1], s_n = k->dims[2], ev = v->dims[3], group = hq / hkv;
    if (graph_tensor_count(y) != (size_t)(b_n * hq * l_n * ev))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output shape does not match",
                            node->name, node->op_type);
    double scale = 1.0 / sqrt((double)e);
    const graph_attr *sa = graph_node_attr(node, "scale");
    if (sa != NULL && sa->type == GRAPH_ATTR_FLOAT)
        scale = sa->f;
    double *p = ref_tmp_alloc((size_t)(s_n > 0 ? s_n : 1) * sizeof(double));
    if (p == NULL)
        return ref_nn_oom(node);
    for (int64_t b = 0; b < b_n; b++)
        for (int64_t h = 0; h < hq; h++) {
            size_t kbase = (size_t)((b * hkv + h / group) * s_n);
            for (int64_t i = 0; i < l_n; i++) {
                size_t qat = (size_t)(((b * hq + h) * l_n + i) * e);
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j < s_n; j++) {
                    double d = 0.0;
                    for (int64_t c = 0; c < e; c++)
                        d += ref_nn_get(q->type, q->data, qat + (size_t)c) *
                             ref_nn_get(k->type, k->data,
                                        (kbase + (size_t)j) * (size_t)e + (size_t)c);
                    p[j] = d * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int64_t j = 0; j < s_n; j++) {
                    p[j] = exp(p[j] - mx);
                    sum += p[j];
                }
                for (int64_t c = 0; c < ev; c++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < s_n; j++)
                        acc += p[j] / sum *
                               ref_nn_get(v->type, v->data,
                                          (kbase + (size_t)j) * (size_t)ev + (size_t)c);
                    ref_nn_set(y->type, y->data, (size_t)(((b * hq + h) * l_n + i) * ev + c), acc);
                }
            }
        }
    ref_tmp_free(p);
    return RN_OK;
}

const plugin_kernel ref_kernel_flex_attention = {
    .domain = "ai.onnx.preview",
    .op_type = "FlexAttention",
    .impl_type = "ref",
    .supports = flex_attention_supports,
    .run = flex_attention_run,
};
