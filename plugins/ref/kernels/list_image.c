/* REF kernels of the image family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_image[] = {
    NULL,
};
