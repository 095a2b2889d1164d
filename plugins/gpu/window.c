/* Sliding-window attributes of Conv and the pools (window.h). */
#include <string.h>

#include "plugins/gpu/window.h"

#define MAX_SIZE (1 << 20)

bool gpu_window_parse(const rn_node *node, int n, const char **why, gpu_window *w)
{
    memset(w, 0, sizeof *w);
    if (n != 2) {
        *why = "GPU: 2-D windows only";
        return false;
    }
    if (rn_node_window(node, n, NULL, false, &w->attrs) != RN_OK) {
        rn_clear_error();
        *why = "GPU: bad window attributes (auto_pad, kernel_shape, strides, dilations or pads)";
        return false;
    }
    const rn_window *a = &w->attrs;
    for (int d = 0; d < 2; d++) {
        if (a->kernel[d] > MAX_SIZE || a->stride[d] > MAX_SIZE || a->dilation[d] > MAX_SIZE ||
            a->pads[d] > MAX_SIZE || a->pads[d + 2] > MAX_SIZE) {
            *why = "GPU: window sizes, strides, dilations and pads up to 2^20 only";
            return false;
        }
        w->kernel[d] = a->kernel_known ? (int)a->kernel[d] : 0;
        w->stride[d] = (int)a->stride[d];
        w->dilation[d] = (int)a->dilation[d];
        w->pads[d] = (int)a->pads[d];
        w->pads[d + 2] = (int)a->pads[d + 2];
    }
    return true;
}

void gpu_window_resolve(gpu_window *w, int H, int W, int OH, int OW, int KH, int KW)
{
    if (w->kernel[0] == 0)
        w->kernel[0] = KH, w->kernel[1] = KW;
    rn_window *a = &w->attrs;
    a->kernel[0] = w->kernel[0], a->kernel[1] = w->kernel[1];
    a->kernel_known = true;
    int in[2] = {H, W}, out[2] = {OH, OW};
    for (int d = 0; d < 2; d++) {
        int64_t begin, end;
        rn_window_pads(a, d, in[d], out[d], &begin, &end);
        w->pads[d] = (int)begin, w->pads[d + 2] = (int)end;
    }
}
