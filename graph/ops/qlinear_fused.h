/* The inputs of runnel's QLinearFusedConv and QLinearFusedGemm (schemas in
 * graph/ops/quant.c; made by transforms/fuse_qdq.c; kernels in
 * plugins/ref/kernels/qlinear_fused.c and plugins/cpu/quant.c). Zero points
 * are optional (0); mid, sum and y come with their scale or not at all. */
#ifndef RUNNEL_GRAPH_OPS_QLINEAR_FUSED_H
#define RUNNEL_GRAPH_OPS_QLINEAR_FUSED_H

enum {
    QF_X,  /* u8 / i8, per tensor */
    QF_XS, /* x_scale */
    QF_XZ, /* x_zero_point */
    QF_W,  /* i8 / u8 weights, per tensor or per output channel */
    QF_WS, /* w_scale */
    QF_WZ, /* w_zero_point */
    QF_B,  /* f32 bias */
    QF_MS, /* mid_scale: the output quantized and dequantized before the sum */
    QF_MZ, /* mid_zero_point */
    QF_S,  /* sum: the quantized residual added after it */
    QF_SS, /* sum_scale */
    QF_SZ, /* sum_zero_point */
    QF_YS, /* y_scale: the output quantized (f32 without it) */
    QF_YZ, /* y_zero_point (its type is the output's) */
    QF_N
};

#endif /* RUNNEL_GRAPH_OPS_QLINEAR_FUSED_H */
