/* Host devices: devices whose kernels run on this machine's cores in host
 * memory (REF, CPU). They share one plugin (plugins/ref/plugin.c): the
 * generic plan and request, the shared properties, export and import,
 * host-memory remote contexts. A host device supplies its names, its
 * kernels, its own compile-time passes and how its kernels are set up for
 * a plan (precision, threads). */
#ifndef RUNNEL_PLUGINS_REF_HOST_H
#define RUNNEL_PLUGINS_REF_HOST_H

#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/remote.h"
#include "runnel/plugin.h"
#include "transforms/transforms.h"

typedef struct host_device {
    const char *name;         /* "REF": device name, in messages, in blobs */
    const char *full_name;    /* FULL_DEVICE_NAME */
    const char *architecture; /* DEVICE_ARCHITECTURE, and the blob's architecture */
    const char *capabilities; /* OPTIMIZATION_CAPABILITIES */
    plugin_host_context_kind context_kind;
    /* Fills the device's kernel registry (tried in registration order). */
    rn_status (*register_kernels)(plugin_kernel_registry *r);
    /* (optional) Adjusts the device's default properties. */
    void (*defaults)(plugin_properties *p);
    /* (optional) Appends the device's passes to the default pipeline
     * (which was built from `o`). */
    rn_status (*add_passes)(transforms_pipeline *tp, const transforms_options *o,
                            const plugin_properties *props);
    /* (optional) Called in the thread that builds a plan (or a plan
     * specialised for run-time shapes) before it builds: sets up how the
     * kernels are prepared and may change the options (streams, threads). */
    void (*configure)(const plugin_properties *props, plugin_plan_options *options);
    /* (optional) The device's own read-only properties, asked first (a
     * device may answer a shared key, such as OPTIMIZATION_CAPABILITIES,
     * for the machine it runs on): RN_NOT_FOUND for keys it does not have
     * (the shared ones are asked next). */
    rn_status (*get_property)(const char *key, char *buf, size_t size);
    /* (optional) Export: the blob of a compiled plan (default:
     * plugin_export, the generic blob). */
    rn_status (*export_blob)(const struct host_device *dev, const plugin_plan *plan,
                             const plugin_properties *props, void **data, size_t *size);
    /* (optional) Import: reads a blob (default: plugin_import) into *g and
     * *props (as plugin_import). *pending is the device's state for
     * building the plan in this thread, which the host hands to
     * import_done after building it (built or not). */
    rn_status (*import_blob)(const struct host_device *dev, const void *data, size_t size,
                             const rn_property *overrides, size_t n_overrides,
                             plugin_properties *props, graph **g, void **pending);
    void (*import_done)(void *pending);
    /* (optional) Its read-only keys for SUPPORTED_PROPERTIES (NULL-ended). */
    const char *const *ro_keys;
} host_device;

extern const host_device ref_device;

/* The host plugin's functions (rn_plugin_ops), for a host device's table. */
rn_status host_create(const host_device *dev, rn_plugin **out);
void host_destroy(rn_plugin *p);
rn_status host_set_property(rn_plugin *p, const rn_property *props, size_t n);
rn_status host_get_property(rn_plugin *p, const char *key, char *buf, size_t size);
rn_status host_query(rn_plugin *p, const rn_graph *model, const rn_property *properties,
                     size_t n_properties, char ***names, bool **supported, size_t *count);
rn_status host_add_extension(rn_plugin *p, const rn_kernel_list *kernels);
rn_status host_import(rn_plugin *p, const void *data, size_t size, rn_plugin_context *context,
                      const rn_property *properties, size_t n_properties,
                      const rn_compiled_model_ops **ops, rn_plugin_compiled **compiled,
                      const rn_graph **io);
rn_status host_create_context(rn_plugin *p, const rn_property *params, size_t n,
                              const rn_remote_context_ops **ops, rn_plugin_context **context);
rn_status host_default_context(rn_plugin *p, const rn_remote_context_ops **ops,
                               rn_plugin_context **context);
rn_status host_compile(rn_plugin *p, const rn_graph *model, rn_plugin_context *context,
                       const rn_property *properties, size_t n_properties,
                       const rn_compiled_model_ops **ops, rn_plugin_compiled **compiled);

/* The rn_plugin_ops of a host device named `device` whose create is
 * `create_fn` (which calls host_create with its host_device). */
#define HOST_PLUGIN_OPS(device, create_fn)                                                         \
    {                                                                                              \
        .abi_version = RN_PLUGIN_ABI_VERSION, .device_name = device, .version = RN_VERSION_STRING, \
        .create = create_fn, .destroy = host_destroy, .set_property = host_set_property,           \
        .get_property = host_get_property, .query_model = host_query,                              \
        .add_extension = host_add_extension, .import_model = host_import,                          \
        .create_context = host_create_context, .get_default_context = host_default_context,        \
        .compile_model = host_compile,                                                             \
    }

#endif /* RUNNEL_PLUGINS_REF_HOST_H */
