/* REF kernels of the control-flow family: If (if.c), Loop (loop.c) and Scan
 * (scan.c), which run their bodies as nested plans of REF's own kernels. */
#include "plugins/ref/ref.h"

extern const plugin_kernel ref_kernel_if, ref_kernel_loop, ref_kernel_scan;

const plugin_kernel *const ref_kernels_control[] = {
    &ref_kernel_if,
    &ref_kernel_loop,
    &ref_kernel_scan,
    NULL,
};
