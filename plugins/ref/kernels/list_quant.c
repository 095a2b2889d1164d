/* REF kernels of the quant family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_quant[] = {
    NULL,
};
