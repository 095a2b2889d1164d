/* REF kernels of the rnn family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_rnn[] = {
    NULL,
};
