/* REF kernels of the rnn family: RNN (rnn.c, with the helpers the three
 * share), GRU (gru.c) and LSTM (lstm.c). */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_rnn, ref_kernel_gru, ref_kernel_lstm;

const plugin_kernel *const ref_kernels_rnn[] = {
    &ref_kernel_rnn,
    &ref_kernel_gru,
    &ref_kernel_lstm,
    NULL,
};
