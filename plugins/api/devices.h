/* Devices that run models on other devices (HETERO, AUTO): the list of
 * devices they are given ("D1,D2", MULTI_DEVICE_PRIORITIES), found in the
 * core that registered them (rn_core_device_plugin), and their answers to
 * query_model put together. */
#ifndef RUNNEL_PLUGINS_API_DEVICES_H
#define RUNNEL_PLUGINS_API_DEVICES_H

#include <pthread.h>
#include <stdbool.h>

#include "plugins/api/properties.h"
#include "runnel/plugin.h"

#define PLUGIN_MAX_DEVICES     8
#define PLUGIN_DEVICE_NAME_MAX 64

/* A device of a list, resolved in the core (the handles are the core's). */
typedef struct plugin_device {
    char name[PLUGIN_DEVICE_NAME_MAX];
    const rn_plugin_ops *ops;
    rn_plugin *plugin;
} plugin_device;

/* Devices in priority order. */
typedef struct plugin_devices {
    int n;
    plugin_device at[PLUGIN_MAX_DEVICES];
} plugin_devices;

/* Whether a device runs models on other devices (it answers
 * MULTI_DEVICE_PRIORITIES). */
bool plugin_device_is_meta(const rn_plugin_ops *ops, rn_plugin *plugin);

/* Parses "D1,D2,..." and finds each device in `core`; `who` names the
 * asking device in messages. RN_INVALID_ARG for an empty or malformed list
 * or a meta device in it, RN_NOT_FOUND naming an absent device. */
rn_status plugin_devices_resolve(rn_core *core, const char *who, const char *list,
                                 plugin_devices *out);

/* query_model over several devices: a name is supported when one of them
 * supports it. The arrays are the caller's, as query_model's. */
rn_status plugin_devices_query_union(const plugin_devices *devs, const rn_graph *model,
                                     const rn_property *properties, size_t n, char ***names_out,
                                     bool **supported_out, size_t *count_out);

#define PLUGIN_MAX_FORWARD 32

/* The settings of a meta device: the shared keys, validated into props and
 * kept (owned copies, the last value of each key) to pass on to the devices
 * it compiles on; its own keys go to its own config through `own`. */
typedef struct plugin_meta_settings {
    plugin_properties props;
    size_t n_forward;
    rn_property forward[PLUGIN_MAX_FORWARD];
} plugin_meta_settings;

/* Applies (key, value) to a meta device's own config when the key is one of
 * its own (*taken set); RN_INVALID_ARG naming a bad value. */
typedef rn_status (*plugin_own_key_fn)(void *config, const char *key, const char *value,
                                       bool *taken);

/* Applies properties all or nothing: own keys to `config` (a struct of
 * config_size bytes, copied on success), the others to s. */
rn_status plugin_meta_apply(plugin_meta_settings *s, void *config, size_t config_size,
                            plugin_own_key_fn own, const rn_property *p, size_t n);

/* What a meta device (HETERO, AUTO) holds besides its own config, at the
 * start of its plugin struct: the core it reaches the other devices through
 * (attach_core), its settings, and the lock that guards them and the
 * config. */
typedef struct plugin_meta_device {
    rn_core *core;
    pthread_mutex_t lock;
    plugin_meta_settings s;
} plugin_meta_device;

/* A meta device's plugin struct of `size` bytes that starts with a
 * plugin_meta_device: zeroed, its lock made, the shared defaults in s.props;
 * NULL (the error set) when out of memory. */
void *plugin_meta_device_create(size_t size);
/* Frees what plugin_meta_device_create made (NULL: a no-op). */
void plugin_meta_device_destroy(void *device);

/* plugin_meta_apply to d's settings and `config` under d's lock (a meta
 * device's set_property). */
rn_status plugin_meta_set(plugin_meta_device *d, void *config, size_t config_size,
                          plugin_own_key_fn own, const rn_property *p, size_t n);

/* Under d's lock: *config_out (config_size bytes) becomes a copy of
 * `config` and *dst (empty or holding settings) a copy of d's settings —
 * what a compile or a query of a meta device starts from. */
rn_status plugin_meta_snapshot(plugin_meta_device *d, const void *config, void *config_out,
                               size_t config_size, plugin_meta_settings *dst);

/* Reads one of a meta device's own keys from its config: RN_NOT_FOUND (no
 * message) for a key that is not its own. */
typedef rn_status (*plugin_own_get_fn)(const void *config, const char *key, char *buf, size_t size);

/* A read-write property of a meta device or its compiled model, under
 * `lock`: its own (`own`) or a shared one of props; RN_NOT_FOUND naming
 * `who` and the key for any other. */
rn_status plugin_meta_get(pthread_mutex_t *lock, const void *config, plugin_own_get_fn own,
                          const plugin_properties *props, const char *who, const char *key,
                          char *buf, size_t size);

/* The compiled model i of a meta device's compiled model runs on (a part,
 * a candidate device): *ops NULL when there is none now. */
typedef void (*plugin_meta_part_fn)(void *ctx, int i, const rn_compiled_model_ops **ops,
                                    rn_plugin_compiled **compiled);

/* A meta device's compiled model's set_property, under `lock`: the keys
 * are validated into a copy of *props (plugin_properties_set_compiled:
 * LIVE keys only), passed on to each of the n compiled models `part` names
 * that takes properties (stopping at the first error), and *props becomes
 * the copy once every one took them. */
rn_status plugin_meta_set_compiled(pthread_mutex_t *lock, plugin_properties *props, int n,
                                   plugin_meta_part_fn part, void *ctx, const rn_property *p,
                                   size_t n_props);

/* dst (empty or holding settings) becomes a copy of src. */
rn_status plugin_meta_copy(plugin_meta_settings *dst, const plugin_meta_settings *src);
void plugin_meta_release(plugin_meta_settings *s);

/* SUPPORTED_PROPERTIES of a meta device: the read-only keys it answers
 * (SUPPORTED_PROPERTIES, FULL_DEVICE_NAME, DEVICE_ARCHITECTURE), its own
 * keys (NULL-terminated), then the shared read-write ones. */
rn_status plugin_meta_supported(const char *const *own_keys, char *buf, size_t size);

#endif /* RUNNEL_PLUGINS_API_DEVICES_H */
