/* REF kernels of the signal family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_signal[] = {
    NULL,
};
