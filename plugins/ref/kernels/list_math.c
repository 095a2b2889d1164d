/* REF kernels of the math family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_math[] = {
    NULL,
};
