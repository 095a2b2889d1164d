/* The 2-D window of a Conv or a pooling node, read from its attributes
 * (kernel_shape, strides, dilations, pads, auto_pad). */
#ifndef RUNNEL_PLUGINS_GPU_WINDOW_H
#define RUNNEL_PLUGINS_GPU_WINDOW_H

#include <stdbool.h>

#include "runnel/kernel.h"

typedef struct gpu_window {
    int kernel[2];   /* from kernel_shape (0: from the weights) */
    int stride[2];   /* 1 by default */
    int dilation[2]; /* 1 by default */
    int pads[4];     /* top, left, bottom, right */
    int auto_pad;    /* 0 NOTSET, 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID */
} gpu_window;

/* Reads the attributes of a node with `n` = 2 spatial dims; false with a
 * reason for what the device lacks (another rank, a bad attribute). */
bool gpu_window_parse(const rn_node *node, int n, const char **why, gpu_window *w);

/* Pads from auto_pad SAME_* for these sizes (the output already inferred);
 * the kernel size comes from the weights when kernel_shape is absent. */
void gpu_window_resolve(gpu_window *w, int H, int W, int OH, int OW, int KH, int KW);

#endif /* RUNNEL_PLUGINS_GPU_WINDOW_H */
