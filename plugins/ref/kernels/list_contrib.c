/* REF kernels of ONNX Runtime's contrib ops (domain com.microsoft). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_ms_gelu, ref_kernel_ms_fast_gelu, ref_kernel_ms_bias_gelu,
    ref_kernel_ms_quick_gelu, ref_kernel_ms_bias_add, ref_kernel_ms_fused_matmul,
    ref_kernel_ms_dynamic_quantize_matmul, ref_kernel_ms_skip_layernorm,
    ref_kernel_ms_embed_layernorm, ref_kernel_ms_attention, ref_kernel_ms_multihead_attention;

const plugin_kernel *const ref_kernels_contrib[] = {
    &ref_kernel_ms_gelu,
    &ref_kernel_ms_fast_gelu,
    &ref_kernel_ms_bias_gelu,
    &ref_kernel_ms_quick_gelu,
    &ref_kernel_ms_bias_add,
    &ref_kernel_ms_fused_matmul,
    &ref_kernel_ms_dynamic_quantize_matmul,
    &ref_kernel_ms_skip_layernorm,
    &ref_kernel_ms_embed_layernorm,
    &ref_kernel_ms_attention,
    &ref_kernel_ms_multihead_attention,
    NULL,
};
