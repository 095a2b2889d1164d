/* REF kernels of the signal family: DFT and STFT (dft.c), the Hann, Hamming
 * and Blackman windows (window.c) and MelWeightMatrix (mel.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_dft, ref_kernel_stft, ref_kernel_hann_window,
    ref_kernel_hamming_window, ref_kernel_blackman_window, ref_kernel_mel_weight_matrix;

const plugin_kernel *const ref_kernels_signal[] = {
    &ref_kernel_dft,
    &ref_kernel_stft,
    &ref_kernel_hann_window,
    &ref_kernel_hamming_window,
    &ref_kernel_blackman_window,
    &ref_kernel_mel_weight_matrix,
    NULL,
};
