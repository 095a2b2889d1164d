/* Sliding-window geometry shared by the REF Conv and pooling kernels. The
 * attributes are read by graph/ops/window.c, as for shape inference; the
 * output size comes from shape inference (which applies ceil_mode and
 * auto_pad); what the kernels still need is where each window starts, i.e.
 * the leading padding, which for SAME_UPPER / SAME_LOWER ONNX derives from
 * the output size. */
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

bool ref_nn_window_attrs_ok(const graph_node *node, int n_spatial, const char **why)
{
    if (n_spatial < 1 || n_spatial > RN_MAX_RANK - 2) {
        *why = "input rank is not 3 to 8 (N x C x spatial dims)";
        return false;
    }
    graph_window w;
    if (graph_window_read(node, n_spatial, NULL, false, &w) != RN_OK) {
        *why = rn_last_error(); /* thread-local: names the attribute */
        return false;
    }
    return true;
}

rn_status ref_nn_window_init(const graph_node *node, const graph_tensor *x, const graph_tensor *y,
                             const int64_t *kernel, ref_nn_window *w)
{
    int n = x->rank - 2;
    if (n < 1 || n > RN_MAX_RANK - 2)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input rank %d; expected N x C x 1 to %d spatial dims",
                            node->name, node->op_type, x->rank, RN_MAX_RANK - 2);
    memset(w, 0, sizeof *w);
    rn_status st = graph_window_read(node, n, kernel, kernel == NULL, &w->attrs);
    if (st != RN_OK)
        return st;
    if (y->rank != x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output rank %d, input rank %d",
                            node->name, node->op_type, y->rank, x->rank);
    w->n = n;
    for (int i = 0; i < n; i++) {
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        w->kernel[i] = w->attrs.kernel[i];
        w->stride[i] = w->attrs.stride[i];
        w->dilation[i] = w->attrs.dilation[i];
        if (w->kernel[i] < 1)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): kernel dim %d is %lld", node->name,
                                node->op_type, i, (long long)w->kernel[i]);
        graph_window_pads(&w->attrs, i, w->in[i], w->out[i], &w->pad_begin[i], &w->pad_end[i]);
    }
    return RN_OK;
}
