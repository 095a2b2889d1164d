#include "plugins/ref/ref.h"

rn_status ref_register_kernels(plugin_kernel_registry *r)
{
    static const plugin_kernel *const *const families[] = {
        ref_kernels_nn,       ref_kernels_elementwise, ref_kernels_movement, ref_kernels_reduce,
        ref_kernels_indexing, ref_kernels_image,       ref_kernels_quant,    ref_kernels_signal,
        ref_kernels_rnn,      ref_kernels_random,      ref_kernels_math,     ref_kernels_control,
        ref_kernels_sequence, ref_kernels_string,      ref_kernels_contrib,  ref_kernels_ml,
    };
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        rn_status st = plugin_kernel_registry_add_list(r, families[i]);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}
