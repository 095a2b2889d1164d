/* REF kernels of the random family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_random[] = {
    NULL,
};
