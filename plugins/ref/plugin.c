/* The REF device: the generic plan-based device (plugins/api/device.h)
 * with REF's kernels alone, no passes of its own, host memory, and
 * branches side by side on its stream's workers. This file,
 * ref.h, registry.c and kernels/ are everything it is. */
#include "plugins/api/device.h"
#include "plugins/ref/ref.h"

static rn_status ref_device_kernels(void *context, plugin_kernel_registry *r)
{
    (void)context;
    return ref_register_kernels(r);
}

/* What a fork of a request's branches costs beyond its chains (ns): a
 * parked worker's wake-up (a futex wake on the runner, tens of microseconds
 * in a VM before the worker runs) and the branch's input moving to its core;
 * branch.c raises it where forks measure more. A fork must save more than
 * this: SqueezeNet's expand 1x1 chains (85-145 us beside 390-460 us
 * expand 3x3s on a Zen 4) fork at best one of its 8 modules, Inception's
 * branches of hundreds of microseconds to milliseconds fork. */
#define REF_FORK_NS 100000

/* A stream of several workers (LATENCY: one stream on every core) runs a
 * request's independent branches side by side on them where that pays,
 * sync and async alike (plugins/api/branch.c, timed); each kernel runs on
 * one thread. */
static rn_status ref_plan(plugin_compiled *c, plugin_plan_options *o)
{
    (void)c;
    if (o->threads_per_stream > 1) {
        o->branch_threads = (int)o->threads_per_stream;
        o->branch_fork_ns = REF_FORK_NS;
    }
    return RN_OK;
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
    .plan = ref_plan,
};

PLUGIN_DEVICE_DEFINE(ref_plugin_ops, "REF", ref_device, plugin_device_add_extension, NULL);
