/* REF kernels of the quant family: QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear (quantize.c), ConvInteger and QLinearConv
 * (qlinear_conv.c), MatMulInteger and QLinearMatMul (qlinear_matmul.c), runnel's
 * QLinearFusedConv and QLinearFusedGemm (qlinear_fused.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_quantize_linear, ref_kernel_dequantize_linear,
    ref_kernel_dynamic_quantize_linear, ref_kernel_conv_integer, ref_kernel_qlinear_conv,
    ref_kernel_matmul_integer, ref_kernel_qlinear_matmul, ref_kernel_qlinear_fused_conv,
    ref_kernel_qlinear_fused_gemm, ref_kernel_qlinear_fused_matmul;

const plugin_kernel *const ref_kernels_quant[] = {
    &ref_kernel_quantize_linear,
    &ref_kernel_dequantize_linear,
    &ref_kernel_dynamic_quantize_linear,
    &ref_kernel_conv_integer,
    &ref_kernel_qlinear_conv,
    &ref_kernel_matmul_integer,
    &ref_kernel_qlinear_matmul,
    &ref_kernel_qlinear_fused_conv,
    &ref_kernel_qlinear_fused_gemm,
    &ref_kernel_qlinear_fused_matmul,
    NULL,
};
