/* REF RotaryEmbedding (opset 23). X is (batch, heads, sequence, head size)
 * or (batch, sequence, heads * head size) with num_heads. The first
 * rotary_embedding_dim (default: all) values of each head are rotated in
 * pairs by the angle whose cos / sin the caches hold: pairs (i, i + dim/2)
 * by default, (2i, 2i + 1) when interleaved:
 *   x1' = cos * x1 - sin * x2,  x2' = sin * x1 + cos * x2.
 * The caches are (max position, dim / 2) indexed by position_ids (batch,
 * sequence), or (batch, sequence, dim / 2) without position_ids. The other
 * values pass through. Computed in double. */
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool rotary_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 3, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t) || node->inputs[1]->type != t || node->inputs[2]->type != t) {
        *why = "X and the caches must be f32, f64, f16 or bf16 of one type";
        return false;
    }
    if (node->n_inputs > 3 && node->inputs[3] != NULL && node->inputs[3]->type != RN_I64) {
        *why = "position_ids must be i64";
        return false;
    }
    return true;
}

static rn_status rotary_bad(const graph_node *node, const char *what)
{
    return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): %s", node->name, node->op_type, what);
}

static rn_status rotary_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 3, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *cosc = &args->inputs[1], *sinc = &args->inputs[2];
    const graph_tensor *pos = args->n_inputs > 3 && args->inputs[3].data ? &args->inputs[3] : NULL;
    graph_tensor *y = &args->outputs[0];
    int64_t batch, seq, heads, hd;
    if (x->rank == 4) {
        batch = x->dims[0];
        heads = x->dims[1];
        seq = x->dims[2];
        hd = x->dims[3];
    } else if (x->rank == 3) {
        heads = graph_node_attr_int(node, "num_heads", 0);
        batch = x->dims[0];
        seq = x->dims[1];
        if (heads < 1 || x->dims[2] % heads != 0)
            return rotary_bad(node, "num_heads must divide the hidden size of a 3-D input");
        hd = x->dims[2] / heads;
    } else {
        return rotary_bad(node, "input must be 3-D or 4-D");
    }
    int64_t dim = graph_node_attr_int(node, "rotary_embedding_dim", 0);
    if (dim == 0)
        dim = hd;
    if (dim < 0 || dim > hd || dim % 2 != 0)
        return rotary_bad(node, "rotary_embedding_dim must be even and at most the head size");
    int64_t half = dim / 2, max_pos = 0;
    bool interleaved = graph_node_attr_int(node, "interleaved", 0) != 0;
    if (pos != NULL) {
        if (pos->rank != 2 || pos->dims[0] != batch || pos->dims[1] != seq)
            return rotary_bad(node, "position_ids must be (batch, sequence)");
        if (cosc->rank != 2 || sinc->rank != 2 || cosc->dims[1] != half || sinc->dims[1] != half ||
            sinc->dims[0] != cosc->dims[0])
            return rotary_bad(node, "with position_ids the caches must be (positions, dim / 2)");
        max_pos = cosc->dims[0];
    } else if (cosc->rank != 3 || sinc->rank != 3 || cosc->dims[0] != batch ||
               cosc->dims[1] != seq || cosc->dims[2] != half || sinc->dims[0] != batch ||
               sinc->dims[1] != seq || sinc->dims[2] != half) {
        return rotary_bad(node,
                          "without position_ids the caches must be (batch, sequence, dim / 2)");
    }
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    if (v == NULL)
        return ref_nn_oom(node);
    rn_status st = RN_OK;
    for (int64_t b = 0; b < batch && st == RN_OK; b++)
        for (int64_t s = 0; s < seq; s++) {
            int64_t row = b * seq + s;
            if (pos != NULL) {
                row = ((const int64_t *)pos->data)[b * seq + s];
                if (row < 0 || row >= max_pos) {
                    st = rn_set_error(
                        RN_INVALID_ARG, "node '%s' (%s): position id %lld is outside [0, %lld)",
                        node->name, node->op_type, (long long)row, (long long)max_pos);
                    break;
                }
            }
            for (int64_t h = 0; h < heads; h++) {
                double *p = v + (x->rank == 4 ? ((b * heads + h) * seq + s) * hd
                                              : (b * seq + s) * heads * hd + h * hd);
                for (int64_t i = 0; i < half; i++) {
                    double c = ref_nn_get(cosc->type, cosc->data, (size_t)(row * half + i));
                    double sn = ref_nn_get(sinc->type, sinc->data, (size_t)(row * half + i));
                    int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
                    double x1 = p[i1], x2 = p[i2];
                    p[i1] = c * x1 - sn * x2;
                    p[i2] = sn * x1 + c * x2;
                }
            }
        }
    if (st == RN_OK)
        ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    return st;
}

const plugin_kernel ref_kernel_rotary_embedding = {
    .domain = "",
    .op_type = "RotaryEmbedding",
    .impl_type = "ref",
    .supports = rotary_supports,
    .run = rotary_run,
};
