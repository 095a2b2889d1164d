/* Test plugins built as shared objects, one per -D variant (see BUILD):
 *   TESTDEV_GOOD          a working device "TESTDEV" that runs REF's kernels
 *   TESTDEV_BAD_ABI       reports a plugin ABI version this runtime does not have
 *   TESTDEV_FAILING       a device whose backend cannot start
 *   TESTDEV_NO_ENTRY      exports no rn_plugin_entry
 *   TESTDEV_OTHER_KIT     TESTDEV built against another device kit (its kit id
 *                         is not the runtime's: the loader refuses it)
 * They exercise the Core's plugin loading, not device behaviour. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/kit_id.h"
#include "plugins/api/plan.h"
#include "plugins/ref/ref.h"
#include "runnel/plugin.h"

typedef struct rn_plugin {
    plugin_kernel_registry *kernels;
} testdev;

/* A compiled model is the generic plan. */
struct rn_plugin_compiled {
    plugin_plan *plan;
};

static rn_status testdev_create(testdev **out)
{
#ifdef TESTDEV_FAILING
    (void)out;
    return rn_set_error(RN_DEVICE_ERROR, "no TESTDEV accelerator is present on this machine");
#else
    testdev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "TESTDEV: out of memory");
    rn_status st = plugin_kernel_registry_create(&d->kernels);
    if (st == RN_OK)
        st = ref_register_kernels(d->kernels);
    if (st != RN_OK) {
        plugin_kernel_registry_free(d->kernels);
        free(d);
        return st;
    }
    *out = d;
    return RN_OK;
#endif
}

static void testdev_destroy(testdev *d)
{
    if (d == NULL)
        return;
    plugin_kernel_registry_free(d->kernels);
    free(d);
}

static rn_status testdev_create_request(rn_plugin_compiled *compiled, rn_infer_request *owner,
                                        rn_plugin_request **out)
{
    return plugin_request_create(compiled->plan, owner, out);
}

static void testdev_compiled_free(rn_plugin_compiled *compiled)
{
    if (compiled == NULL)
        return;
    plugin_plan_free(compiled->plan);
    free(compiled);
}

static const rn_compiled_model_ops testdev_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = testdev_create_request,
    .request_ops = &plugin_generic_request_ops,
    .free = testdev_compiled_free,
};

static rn_status testdev_compile(testdev *d, const rn_graph *model, rn_plugin_context *context,
                                 const rn_property *properties, size_t n_properties,
                                 const rn_compiled_model_ops **ops, rn_plugin_compiled **compiled)
{
    (void)context; /* TESTDEV has no remote contexts: the Core passes NULL */
    if (n_properties > 0)
        return rn_set_error(RN_INVALID_ARG, "TESTDEV: unknown property '%s'", properties[0].key);
    rn_plugin_compiled *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "TESTDEV: out of memory");
    plugin_plan_options options = {.n_streams = 1, .threads_per_stream = 1};
    rn_status st = plugin_plan_build(model, d->kernels, &options, &c->plan);
    if (st != RN_OK) {
        free(c);
        return st;
    }
    *ops = &testdev_compiled_ops;
    *compiled = c;
    return RN_OK;
}

static const rn_plugin_ops testdev_ops = {
#ifdef TESTDEV_BAD_ABI
    .abi_version = RN_PLUGIN_ABI_VERSION + 1000,
#else
    .abi_version = RN_PLUGIN_ABI_VERSION,
#endif
    .device_name = "TESTDEV",
    .version = "1.2.3-testdev",
    .create = testdev_create,
    .destroy = testdev_destroy,
    .compile_model = testdev_compile,
};

#ifdef TESTDEV_OTHER_KIT
/* What a plugin built against an older runtime's kit headers carries. */
RN_KIT const char rn_plugin_kit[] = "0123456789abcdef";
#else
PLUGIN_KIT_STAMP;
#endif

#ifndef TESTDEV_NO_ENTRY
const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version);

const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version)
{
    (void)abi_version; /* the Core checks the vtable's version */
    return &testdev_ops;
}
#else
/* Defined under another name (and hidden), so the Core finds no entry point. */
const rn_plugin_ops *testdev_not_the_entry(void);
const rn_plugin_ops *testdev_not_the_entry(void)
{
    return &testdev_ops;
}
#endif
