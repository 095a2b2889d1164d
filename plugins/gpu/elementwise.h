/* Elementwise launches that several GPU kernels share: broadcasting binary
 * ops and unary activations (elementwise.c). */
#ifndef RUNNEL_PLUGINS_GPU_ELEMENTWISE_H
#define RUNNEL_PLUGINS_GPU_ELEMENTWISE_H

#include "plugins/gpu/gpu.h"

/* program.c's binary() op codes. */
enum {
    GPU_BINARY_ADD = 0,
    GPU_BINARY_SUB,
    GPU_BINARY_MUL,
    GPU_BINARY_DIV,
    GPU_BINARY_MAX,
    GPU_BINARY_MIN,
    GPU_BINARY_ADD_SCALED, /* a + alpha * b */
    GPU_BINARY_POW,
};

/* How a and b broadcast to y (numpy rules, right-aligned). */
typedef struct gpu_broadcast {
    int rank;
    gpu_idx8 dims, a_strides, b_strides;
    size_t count;
} gpu_broadcast;
void gpu_broadcast_init(gpu_broadcast *bc, rn_partial_shape y, rn_partial_shape a,
                        rn_partial_shape b);

/* Enqueues y = op(a, b) with kernel k of g (a "binary" kernel). */
rn_status gpu_binary_launch(gpu_node *g, const rn_kernel_args *args, int k, const gpu_broadcast *bc,
                            gpu_mem a, gpu_mem b, gpu_mem y, int op, float alpha);
/* Enqueues y = act(x) over n elements with kernel k of g (a "unary"). */
rn_status gpu_unary_launch(gpu_node *g, const rn_kernel_args *args, int k, gpu_mem x, gpu_mem y,
                           size_t n, int act, float p0, float p1);

#endif /* RUNNEL_PLUGINS_GPU_ELEMENTWISE_H */
