/* Sliding-window geometry shared by the REF Conv and pooling kernels. The
 * output size comes from shape inference (graph/ops/nn.c, which applies
 * ceil_mode and auto_pad); what the kernels still need is where each window
 * starts, i.e. the leading padding, which for SAME_UPPER / SAME_LOWER ONNX
 * derives from the output size. */
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

/* Reads an INTS attribute of exactly `n` entries into dst, or fills dst with
 * `dflt` when absent or empty (as shape inference does). Returns false on a
 * wrong length. */
static bool window_ints(const graph_node *node, const char *name, int n, int64_t dflt, int64_t *dst)
{
    const int64_t *vals;
    int count = graph_node_attr_ints(node, name, &vals);
    if (count <= 0) {
        for (int i = 0; i < n; i++)
            dst[i] = dflt;
        return true;
    }
    if (count != n)
        return false;
    memcpy(dst, vals, (size_t)n * sizeof(int64_t));
    return true;
}

bool ref_nn_window_attrs_ok(const graph_node *node, int n_spatial, const char **why)
{
    const char *auto_pad = graph_node_attr_string(node, "auto_pad", "NOTSET");
    if (strcmp(auto_pad, "NOTSET") != 0 && strcmp(auto_pad, "VALID") != 0 &&
        strcmp(auto_pad, "SAME_UPPER") != 0 && strcmp(auto_pad, "SAME_LOWER") != 0) {
        *why = "auto_pad is not NOTSET, VALID, SAME_UPPER or SAME_LOWER";
        return false;
    }
    if (n_spatial < 1 || n_spatial > RN_MAX_RANK - 2) {
        *why = "input rank is not 3 to 8 (N x C x spatial dims)";
        return false;
    }
    int64_t v[2 * RN_MAX_RANK];
    if (!window_ints(node, "strides", n_spatial, 1, v)) {
        *why = "strides length differs from the number of spatial dims";
        return false;
    }
    for (int i = 0; i < n_spatial; i++) {
        if (v[i] < 1) {
            *why = "strides must be >= 1";
            return false;
        }
    }
    if (!window_ints(node, "dilations", n_spatial, 1, v)) {
        *why = "dilations length differs from the number of spatial dims";
        return false;
    }
    for (int i = 0; i < n_spatial; i++) {
        if (v[i] < 1) {
            *why = "dilations must be >= 1";
            return false;
        }
    }
    if (!window_ints(node, "pads", 2 * n_spatial, 0, v)) {
        *why = "pads length is not twice the number of spatial dims";
        return false;
    }
    for (int i = 0; i < 2 * n_spatial; i++) {
        if (v[i] < 0) {
            *why = "pads must be >= 0";
            return false;
        }
    }
    return true;
}

rn_status ref_nn_window_init(const graph_node *node, const graph_tensor *x, const graph_tensor *y,
                             const int64_t *kernel, ref_nn_window *w)
{
    const char *why = NULL;
    int n = x->rank - 2;
    if (!ref_nn_window_attrs_ok(node, n, &why))
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): %s", node->name, node->op_type, why);
    if (y->rank != x->rank)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output rank %d, input rank %d",
                            node->name, node->op_type, y->rank, x->rank);
    int64_t pads[2 * RN_MAX_RANK];
    memset(w, 0, sizeof *w);
    w->n = n;
    window_ints(node, "strides", n, 1, w->stride);
    window_ints(node, "dilations", n, 1, w->dilation);
    window_ints(node, "pads", 2 * n, 0, pads);
    const char *auto_pad = graph_node_attr_string(node, "auto_pad", "NOTSET");
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0;
    bool same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    bool valid = strcmp(auto_pad, "VALID") == 0;
    for (int i = 0; i < n; i++) {
        w->in[i] = x->dims[2 + i];
        w->out[i] = y->dims[2 + i];
        w->kernel[i] = kernel[i];
        if (kernel[i] < 1)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): kernel dim %d is %lld", node->name,
                                node->op_type, i, (long long)kernel[i]);
        if (same_upper || same_lower) {
            int64_t span = (kernel[i] - 1) * w->dilation[i] + 1;
            int64_t total = (w->out[i] - 1) * w->stride[i] + span - w->in[i];
            if (total < 0)
                total = 0;
            w->pad_begin[i] = same_upper ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
        } else if (!valid) {
            w->pad_begin[i] = pads[i];
            w->pad_end[i] = pads[n + i];
        }
    }
    return RN_OK;
}
