/* The generic plan-based device: everything a device that compiles a model
 * into the generic plan shares (properties from one table, query_model,
 * compile and import, export, trace, the runtime model, host-memory remote
 * contexts), filled in by one descriptor in ggml's {iface, context} shape.
 *
 * A device is a `plugin_device_iface` (its names, its property rows, its
 * hooks: static, const) plus the context its optional `open` hook makes
 * (GPU's OpenCL devices, NVIDIA's probe, SLOWDEV's engines; NULL for REF and
 * CPU). REF, CPU, GPU, NVIDIA and SLOWDEV are each an iface, their kernels
 * and what is truly theirs (memory, remote contexts, device properties):
 * docs/plugins.md, "How to write a device".
 *
 * Every hook is optional (NULL: the generic behaviour said beside it)
 * except register_kernels. Hooks get the device's context, or the compiled
 * model (whose `device->context` is the device's). */
#ifndef RUNNEL_PLUGINS_API_DEVICE_H
#define RUNNEL_PLUGINS_API_DEVICE_H

#include <pthread.h>

#include "base/kit.h"
#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/remote.h"
#include "runnel/plugin.h"
#include "transforms/transforms.h"

typedef struct rn_plugin plugin_device;
typedef struct rn_plugin_compiled plugin_compiled;

typedef struct plugin_device_iface {
    /* Names and the table's INFO rows; info.architecture is also the one
     * the generic blob carries (unless `read` answers DEVICE_ARCHITECTURE
     * when the device opens: NVIDIA's "sm_90"). */
    plugin_device_info info;
    /* What its host-memory contexts are called (unless create_context). */
    plugin_host_context_kind context_kind;
    /* The device's own read-write keys (rows of the shape of the shared
     * table) over a struct of `own_size` bytes that the device and each
     * compiled model hold (`own`); LIVE ones may be set on a compiled
     * model too (then compiled_changed runs). */
    const plugin_property_def *own_keys;
    size_t n_own_keys;
    size_t own_size;
    /* (optional) Read-only keys `read` answers, and those `compiled_read`
     * answers, for SUPPORTED_PROPERTIES (NULL-ended). */
    const char *const *ro_keys;
    const char *const *compiled_ro_keys;
    /* (optional) Read-write keys outside the tables that `set_property`
     * takes and `read` answers (GPU's CACHE_DIR), NULL-ended. */
    const char *const *extra_rw_keys;
    /* Compiles the model as given: no passes (SLOWDEV). */
    bool untransformed;
    /* Keeps plans specialised for run-time input shapes, folding what they
     * decide (unless DISABLE_TRANSFORMATIONS). */
    bool specializes;
    /* Infers the shapes of the transformed graph (NVIDIA's lowering needs
     * every shape). */
    bool infer_shapes;

    /* (optional) Opens the device: its context, or the reason it cannot
     * start (no driver, no device) as the error. */
    rn_status (*open)(void **context);
    /* (optional) Closes what open made. */
    void (*close)(void *context);
    /* Fills the registry the plan picks kernels from (in order). */
    rn_status (*register_kernels)(void *context, plugin_kernel_registry *r);
    /* (optional) Fills the registry that constant folding evaluates with
     * (on the host); NULL: the device's own kernels. */
    rn_status (*register_folding)(plugin_kernel_registry *r);
    /* (optional) Adjusts the defaults of the shared and own values. */
    void (*defaults)(void *context, plugin_properties *props, void *own);
    /* (optional) Whether DEVICE_ID `id` names one of its devices (an error
     * naming the available ones); NULL: only "" and "0" do. */
    rn_status (*check_device_id)(void *context, const char *id);
    /* (optional) The device's own read-only keys, and shared RO ones it
     * answers for the machine it runs on, for device `id` (NULL: the
     * default one): RN_NOT_FOUND (no message) for the others. */
    rn_status (*read)(void *context, const char *id, const char *key, char *buf, size_t size);
    /* (optional) Sets one of extra_rw_keys (after the rest applied). */
    rn_status (*set_property)(void *context, const char *key, const char *value);
    /* (optional) Remote contexts of the device's own; NULL: host memory. */
    rn_status (*create_context)(void *context, const rn_property *params, size_t n,
                                const rn_remote_context_ops **ops, rn_plugin_context **out);
    rn_status (*default_context)(void *context, const rn_remote_context_ops **ops,
                                 rn_plugin_context **out);
    /* (optional) Appends the device's passes (its fusions) to the default
     * pipeline. */
    rn_status (*add_passes)(void *context, transforms_pipeline *tp, const plugin_properties *props);
    /* (optional) Why the device refuses op `op_type` with these own values
     * (the key that says so), NULL when it does not: query_model answers it
     * unsupported and compile fails naming the node and the reason. */
    const char *(*refuses)(const void *own, const char *op_type);

    /* ---- compiled models ---- */

    /* (optional) Where the model runs: sets c->context (and c->state) from
     * `requested` (NULL: as DEVICE_ID says). NULL: `requested`, else the
     * default host context. */
    rn_status (*place)(plugin_compiled *c, rn_plugin_context *requested);
    /* (optional) Frees what place and plan left in c->state. */
    void (*unplace)(plugin_compiled *c);
    /* (optional) The device's plan options (stages, allocator, partitions,
     * requests in flight), once per compiled model. */
    rn_status (*plan)(plugin_compiled *c, plugin_plan_options *o);
    /* (optional) In the thread that builds the plan or a specialised one,
     * before it builds: how the kernels are prepared (CPU's threads, the
     * GPU's current device). May change the options. */
    void (*enter)(plugin_compiled *c, plugin_plan_options *o);
    /* (optional, with specializes) Checks, at compile, the model as a run
     * whose dynamic input dims are all 1 would specialise it
     * (plugin_specialize_at_one): the base plan of a model with dynamic
     * inputs never runs, so a node no run could run is refused here, named,
     * instead of at the first run. An error fails the compile. The device
     * reads `g` with the rn_graph and rn_node accessors (runnel/plugin.h). */
    rn_status (*check_specialized)(plugin_compiled *c, const rn_graph *g);
    /* (optional) After the plan was built (st: whether it was). */
    rn_status (*built)(plugin_compiled *c, rn_status st);
    /* (optional) The compiled model's own read-only keys: RN_NOT_FOUND (no
     * message) for others. */
    rn_status (*compiled_read)(plugin_compiled *c, const char *key, char *buf, size_t size);
    /* (optional) A LIVE own key was set on the compiled model (c->lock
     * held). */
    void (*compiled_changed)(plugin_compiled *c);
    /* (optional) Export: the blob of c with `props`; NULL: plugin_export. */
    rn_status (*export_blob)(plugin_compiled *c, const plugin_properties *props, void **data,
                             size_t *size);
    /* (optional) Import: reads a blob into *g and c->props (as
     * plugin_import); *pending is handed to import_placed (once placed,
     * before building) and import_done (after building, built or not). */
    rn_status (*import_blob)(plugin_compiled *c, const void *data, size_t size,
                             const rn_property *overrides, size_t n_overrides, graph **g,
                             void **pending);
    void (*import_placed)(plugin_compiled *c, void *pending);
    void (*import_done)(void *pending);
    /* (optional) Appends the device's own to the plan's trace at `path`. */
    rn_status (*write_trace)(plugin_compiled *c, const char *path);
} plugin_device_iface;

/* A device (the plugin's rn_plugin). */
struct rn_plugin {
    const plugin_device_iface *iface;
    void *context;                   /* what open made */
    plugin_kernel_registry *kernels; /* the plan's */
    plugin_kernel_registry *folding; /* constant folding's (may be kernels) */
    pthread_mutex_t lock;            /* guards props and own */
    plugin_properties props;
    void *own;
    plugin_host_context *default_context; /* unless default_context */
    char architecture[64];                /* the blob's */
};

/* A compiled model (the plugin's rn_plugin_compiled). */
struct rn_plugin_compiled {
    plugin_device *device;
    plugin_plan *plan;
    const rn_plugin_context *context;
    void *state;          /* the device's (place) */
    pthread_mutex_t lock; /* guards props and own (set_property after compiling) */
    plugin_properties props;
    void *own;
    plugin_plan_options options; /* as built, before the device's enter */
    char network_name[256];
    uint32_t optimal_requests;
    bool imported;
};

/* The device's functions (rn_plugin_ops), for its table. */
RN_KIT rn_status plugin_device_create(const plugin_device_iface *iface, plugin_device **out);
RN_KIT void plugin_device_destroy(plugin_device *p);
RN_KIT rn_status plugin_device_set_property(plugin_device *p, const rn_property *props, size_t n);
RN_KIT rn_status plugin_device_get_property(plugin_device *p, const char *key, char *buf,
                                            size_t size);
RN_KIT rn_status plugin_device_get_device_property(plugin_device *p, const char *id,
                                                   const char *key, char *buf, size_t size);
RN_KIT rn_status plugin_device_query(plugin_device *p, const rn_graph *model,
                                     const rn_property *props, size_t n, char ***names,
                                     bool **supported, size_t *count);
RN_KIT rn_status plugin_device_add_extension(plugin_device *p, const rn_kernel_list *kernels);
RN_KIT rn_status plugin_device_compile(plugin_device *p, const rn_graph *model,
                                       rn_plugin_context *context, const rn_property *props,
                                       size_t n, const rn_compiled_model_ops **ops,
                                       plugin_compiled **out);
RN_KIT rn_status plugin_device_import(plugin_device *p, const void *data, size_t size,
                                      rn_plugin_context *context, const rn_property *props,
                                      size_t n, const rn_compiled_model_ops **ops,
                                      plugin_compiled **out, const rn_graph **io);
RN_KIT rn_status plugin_device_create_context(plugin_device *p, const rn_property *params, size_t n,
                                              const rn_remote_context_ops **ops,
                                              rn_plugin_context **out);
RN_KIT rn_status plugin_device_default_context(plugin_device *p, const rn_remote_context_ops **ops,
                                               rn_plugin_context **out);

/* What the device compiles for `model` with `props`: a clone through the
 * default pass pipeline and the device's add_passes (constant folding with
 * p->folding; only preprocessing under DISABLE_TRANSFORMATIONS); the clone
 * alone for an untransformed device. Needs only p->iface, p->context and
 * p->folding (a device's unit tests may fill just those). */
RN_KIT rn_status plugin_device_transform(const plugin_device *p, const plugin_properties *props,
                                         const graph *model, graph **out);

/* A copy of `model` (a transformed graph) as a run whose dynamic input dims
 * are all 1 would specialise it (plugin_plan_spec_for with the device's
 * specialize): shapes inferred again, then, with `fold`, what they decide
 * (Shape, Size and the arithmetic they feed) folded with `folding`'s
 * kernels and dead nodes dropped. */
rn_status plugin_specialize_at_one(const graph *model, const plugin_kernel_registry *folding,
                                   bool fold, graph **out);

/* Defines `const rn_plugin_ops ops_name` of the device `iface` (a
 * plugin_device_iface) named `device`, with a create that opens it;
 * `extension_fn` (plugin_device_add_extension for devices whose kernels run
 * on the host, else NULL) and `device_property_fn`
 * (plugin_device_get_device_property for devices with several DEVICE_IDs,
 * else NULL) fill the optional slots. */
#define PLUGIN_DEVICE_DEFINE(ops_name, device, iface, extension_fn, device_property_fn)            \
    static rn_status ops_name##_create(rn_plugin **out)                                            \
    {                                                                                              \
        return plugin_device_create(&(iface), out);                                                \
    }                                                                                              \
    const rn_plugin_ops ops_name = {                                                               \
        .abi_version = RN_PLUGIN_ABI_VERSION,                                                      \
        .device_name = device,                                                                     \
        .version = RN_VERSION_STRING,                                                              \
        .create = ops_name##_create,                                                               \
        .destroy = plugin_device_destroy,                                                          \
        .set_property = plugin_device_set_property,                                                \
        .get_property = plugin_device_get_property,                                                \
        .query_model = plugin_device_query,                                                        \
        .add_extension = extension_fn,                                                             \
        .import_model = plugin_device_import,                                                      \
        .create_context = plugin_device_create_context,                                            \
        .get_default_context = plugin_device_default_context,                                      \
        .compile_model = plugin_device_compile,                                                    \
        .get_device_property = device_property_fn,                                                 \
    }

/* The entry point of a device in a shared object (rn_plugin_entry),
 * returning `ops_name`, and the device kit's id it was built against
 * (PLUGIN_KIT_STAMP: the file includes plugins/api/kit_id.h). */
#define PLUGIN_DEVICE_ENTRY(ops_name)                                                              \
    PLUGIN_KIT_STAMP;                                                                              \
    const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version)                                     \
    {                                                                                              \
        (void)abi_version;                                                                         \
        return &ops_name;                                                                          \
    }                                                                                              \
    extern const rn_plugin_ops ops_name /* takes the caller's semicolon */

#endif /* RUNNEL_PLUGINS_API_DEVICE_H */
