/* REF kernels of the indexing family. */
#include "plugins/ref/ref.h"

const plugin_kernel *const ref_kernels_indexing[] = {
    NULL,
};
