/* The REF device: the generic plan-based device (plugins/api/device.h)
 * with REF's kernels alone, no passes of its own, host memory. This file,
 * ref.h, registry.c and kernels/ are everything it is. */
#include "plugins/api/device.h"
#include "plugins/ref/ref.h"

static rn_status ref_device_kernels(void *context, plugin_kernel_registry *r)
{
    (void)context;
    return ref_register_kernels(r);
}

static const plugin_device_iface ref_device = {
    .info =
        {
            .name = "REF",
            .full_name = "runnel reference device (portable C kernels)",
            .architecture = "ref",
            .capabilities = "FP32 FP16 BF16 INT8 EXPORT_IMPORT",
        },
    .context_kind = {"REF", "HOST", "HOST_BUFFER"},
    .specializes = true,
    .register_kernels = ref_device_kernels,
};

PLUGIN_DEVICE_DEFINE(ref_plugin_ops, "REF", ref_device, plugin_device_add_extension, NULL);
