/* The 2-D window of a Conv or a pooling node: the attributes as the graph
 * library parses them once for every device (rn_node_window: auto_pad as an
 * enum, strides, dilations, pads, kernel_shape), in the int geometry the
 * OpenCL kernels take. */
#ifndef RUNNEL_PLUGINS_GPU_WINDOW_H
#define RUNNEL_PLUGINS_GPU_WINDOW_H

#include <stdbool.h>

#include "runnel/kernel.h"

typedef struct gpu_window {
    rn_window attrs; /* as parsed (rn_node_window) */
    int kernel[2];   /* from kernel_shape (0: from the weights) */
    int stride[2];
    int dilation[2];
    int pads[4]; /* top, left, bottom, right: explicit, or from auto_pad once resolved */
} gpu_window;

/* Reads the attributes of a node with `n` = 2 spatial dims; false with a
 * reason for what the device lacks (another rank, a bad attribute, sizes
 * past the kernels' int range). */
bool gpu_window_parse(const rn_node *node, int n, const char **why, gpu_window *w);

/* The kernel size (from the weights when kernel_shape is absent) and the
 * pads for these sizes (the output already inferred): auto_pad's, derived
 * as ONNX says by rn_window_pads. */
void gpu_window_resolve(gpu_window *w, int H, int W, int OH, int OW, int KH, int KW);

#endif /* RUNNEL_PLUGINS_GPU_WINDOW_H */
