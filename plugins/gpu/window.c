/* Sliding-window attributes of Conv and the pools (window.h). */
#include <string.h>

#include "plugins/gpu/window.h"

static bool read_pair(const rn_node *node, const char *name, int dflt, int *out, const char **why)
{
    const int64_t *v = NULL;
    int n = rn_node_attr_ints(node, name, &v);
    out[0] = out[1] = dflt;
    if (n < 0)
        return true;
    if (n != 2 || v[0] < 1 || v[1] < 1 || v[0] > 1 << 20 || v[1] > 1 << 20) {
        *why = "GPU: 2-D windows with positive sizes, strides and dilations only";
        return false;
    }
    out[0] = (int)v[0], out[1] = (int)v[1];
    return true;
}

bool gpu_window_parse(const rn_node *node, int n, const char **why, gpu_window *w)
{
    memset(w, 0, sizeof *w);
    if (n != 2) {
        *why = "GPU: 2-D windows only";
        return false;
    }
    if (!read_pair(node, "kernel_shape", 0, w->kernel, why) ||
        !read_pair(node, "strides", 1, w->stride, why) ||
        !read_pair(node, "dilations", 1, w->dilation, why))
        return false;
    const int64_t *p = NULL;
    int np = rn_node_attr_ints(node, "pads", &p);
    if (np >= 0) {
        if (np != 4) {
            *why = "GPU: pads of a 2-D window have 4 values";
            return false;
        }
        for (int i = 0; i < 4; i++) {
            if (p[i] < 0 || p[i] > 1 << 20) {
                *why = "GPU: negative or huge pads";
                return false;
            }
            w->pads[i] = (int)p[i];
        }
    }
    const char *ap = rn_node_attr_string(node, "auto_pad", "NOTSET");
    w->auto_pad = strcmp(ap, "SAME_UPPER") == 0   ? 1
                  : strcmp(ap, "SAME_LOWER") == 0 ? 2
                  : strcmp(ap, "VALID") == 0      ? 3
                                                  : 0;
    if (w->auto_pad == 0 && strcmp(ap, "NOTSET") != 0 && ap[0] != '\0') {
        *why = "GPU: unknown auto_pad";
        return false;
    }
    return true;
}

/* ONNX pads are [x1_begin, x2_begin, x1_end, x2_end]: top, left, bottom,
 * right. */
void gpu_window_resolve(gpu_window *w, int H, int W, int OH, int OW, int KH, int KW)
{
    if (w->kernel[0] == 0)
        w->kernel[0] = KH, w->kernel[1] = KW;
    if (w->auto_pad == 3) {
        memset(w->pads, 0, sizeof w->pads);
    } else if (w->auto_pad != 0) {
        int in[2] = {H, W}, out[2] = {OH, OW};
        for (int d = 0; d < 2; d++) {
            int total =
                (out[d] - 1) * w->stride[d] + (w->kernel[d] - 1) * w->dilation[d] + 1 - in[d];
            if (total < 0)
                total = 0;
            int small = total / 2, big = total - small;
            w->pads[d] = w->auto_pad == 1 ? small : big;
            w->pads[d + 2] = w->auto_pad == 1 ? big : small;
        }
    }
}
