/* Registering device plugins: built-in ones, shared objects loaded with
 * dlopen (one entry point, rn_plugin_entry), plugins files, and the plugins
 * file installed beside libruntime.so (device discovery). Every way a
 * plugin can fail to load is an error with its reason, recorded so that it
 * can be read back, and leaves the other devices working. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "graph/ops.h"
#include "plugins/api/kit_id.h"
#include "runnel/extension.h"
#include "runtime/runtime.h"

void runtime_close_library(void *library)
{
    if (library != NULL)
        dlclose(library);
}

/* Records `name` as failed with the current last error, and returns st. */
static rn_status record_failure(rn_core *core, const char *name, rn_status st)
{
    if (core->n_failures < RUNTIME_MAX_DEVICES) {
        runtime_failure *f = &core->failures[core->n_failures++];
        snprintf(f->name, sizeof f->name, "%s", name);
        snprintf(f->reason, sizeof f->reason, "%s", rn_last_error());
    }
    return st;
}

/* Checks a device name: RN_OK, or RN_INVALID_ARG naming it. */
static rn_status check_name(const char *label)
{
    if (strlen(label) == 0 || strlen(label) >= RUNTIME_NAME_MAX)
        return rn_set_error(RN_INVALID_ARG, "plugin %s: a device name needs 1 to %d characters",
                            label, RUNTIME_NAME_MAX - 1);
    return RN_OK;
}

/* Checks a plugin's vtable and the name it registers under: RN_OK, or an
 * error naming the plugin. */
static rn_status check_plugin(const char *label, const rn_plugin_ops *ops)
{
    if (ops == NULL)
        return rn_set_error(RN_INVALID_ARG, "plugin %s: the entry point returned no plugin", label);
    if (ops->abi_version != RN_PLUGIN_ABI_VERSION)
        return rn_set_error(RN_UNSUPPORTED,
                            "plugin %s: built for plugin ABI version %u, this runtime uses %u",
                            label, ops->abi_version, RN_PLUGIN_ABI_VERSION);
    if (ops->create == NULL || ops->destroy == NULL || ops->compile_model == NULL ||
        ops->device_name == NULL || ops->version == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "plugin %s: device_name, version, create, destroy and compile_model "
                            "are required",
                            label);
    if ((ops->create_context == NULL) != (ops->get_default_context == NULL))
        return rn_set_error(RN_INVALID_ARG,
                            "plugin %s: create_context and get_default_context come together",
                            label);
    return check_name(label);
}

/* The slot of device `name` (any case) that is or may become a device (not
 * FAILED), or NULL; starts nothing. */
static runtime_device *find_slot(const rn_core *core, const char *name)
{
    for (int i = 0; i < core->n_devices; i++) {
        runtime_device *d = (runtime_device *)&core->devices[i];
        if (strcasecmp(d->name, name) == 0 &&
            atomic_load_explicit(&d->state, memory_order_acquire) != RUNTIME_DEVICE_FAILED)
            return d;
    }
    return NULL;
}

rn_status runtime_register_plugin(rn_core *core, const char *name, const rn_plugin_ops *ops,
                                  void *library)
{
    const char *label =
        name != NULL ? name : (ops != NULL && ops->device_name ? ops->device_name : "(unnamed)");
    /* An installed device of that name not started yet starts now: it is
     * either the same library (then already there) or a device that
     * exists. */
    runtime_find_device(core, label);
    pthread_mutex_lock(&core->lock);
    rn_status st = check_plugin(label, ops);
    if (st == RN_OK && core->n_devices == RUNTIME_MAX_DEVICES)
        st = rn_set_error(RN_OUT_OF_MEMORY, "plugin %s: more than %d devices", label,
                          RUNTIME_MAX_DEVICES);
    runtime_device *same = st == RN_OK ? find_slot(core, label) : NULL;
    if (same != NULL && library != NULL && same->library == library && same->installed) {
        /* The same library under the same name, found in the installed
         * plugins file and loaded again by the user (a program written
         * before discovery): already there. */
        pthread_mutex_unlock(&core->lock);
        runtime_close_library(library); /* dlopen's extra reference */
        return RN_OK;
    }
    if (same != NULL)
        st = rn_set_error(RN_INVALID_ARG, "plugin %s: a device with that name exists", label);
    rn_plugin *plugin = NULL;
    if (st == RN_OK && (st = ops->create(&plugin)) != RN_OK)
        rn_wrap_error(st, "device %s cannot start: ", label);
    if (st != RN_OK) {
        record_failure(core, label, st);
        pthread_mutex_unlock(&core->lock);
        runtime_close_library(library);
        return st;
    }
    runtime_device *d = &core->devices[core->n_devices];
    snprintf(d->name, sizeof d->name, "%s", label);
    d->ops = ops;
    d->plugin = plugin;
    d->library = library;
    atomic_store_explicit(&d->state, RUNTIME_DEVICE_READY, memory_order_release);
    core->n_devices++;
    pthread_mutex_unlock(&core->lock);
    if (ops->attach_core != NULL)
        ops->attach_core(plugin, core);
    return RN_OK;
}

/* Opens a plugin's shared object and gets its vtable from its entry point;
 * on failure the error names `label` and `path`, and nothing is left open. */
static rn_status open_plugin(const char *label, const char *path, void **library,
                             const rn_plugin_ops **ops)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return rn_set_error(RN_NOT_FOUND, "plugin %s: cannot load '%s': %s", label, path,
                            dlerror());
    dlerror();
    /* A plugin built against the device kit (in-tree ones) calls libruntime.so's
     * RN_KIT functions and sees its structs: only the kit it was built with
     * will do. One built on include/runnel only carries no kit id. */
    const char *kit = dlsym(lib, PLUGIN_KIT_SYMBOL);
    if (kit != NULL && strncmp(kit, PLUGIN_KIT_ID, sizeof PLUGIN_KIT_ID) != 0) {
        rn_status st =
            rn_set_error(RN_UNSUPPORTED,
                         "plugin %s: '%s' was built against runnel device kit %.16s, "
                         "this runtime's kit is %s: rebuild the plugin with this runtime",
                         label, path, kit, PLUGIN_KIT_ID);
        dlclose(lib);
        return st;
    }
    rn_plugin_entry_fn entry;
    *(void **)&entry = dlsym(lib, RN_PLUGIN_ENTRY_NAME);
    if (entry == NULL) {
        dlclose(lib);
        return rn_set_error(RN_NOT_FOUND, "plugin %s: '%s' has no entry point %s()", label, path,
                            RN_PLUGIN_ENTRY_NAME);
    }
    *library = lib;
    *ops = entry(RN_PLUGIN_ABI_VERSION);
    return RN_OK;
}

rn_status rn_core_load_plugin(rn_core *core, const char *name, const char *path)
{
    if (core == NULL || path == NULL)
        return rn_set_error(RN_INVALID_ARG, "load_plugin: core and path must be set");
    const char *label = name != NULL ? name : path;
    void *lib;
    const rn_plugin_ops *ops;
    rn_status st = open_plugin(label, path, &lib, &ops);
    if (st != RN_OK) {
        pthread_mutex_lock(&core->lock);
        record_failure(core, label, st);
        pthread_mutex_unlock(&core->lock);
        return st;
    }
    return runtime_register_plugin(core, name, ops, lib);
}

void runtime_start_device(rn_core *core, runtime_device *d)
{
    if (atomic_load_explicit(&d->state, memory_order_acquire) != RUNTIME_DEVICE_PENDING)
        return;
    pthread_mutex_lock(&core->start_lock);
    if (atomic_load_explicit(&d->state, memory_order_acquire) != RUNTIME_DEVICE_PENDING) {
        pthread_mutex_unlock(&core->start_lock); /* another thread started it */
        return;
    }
    void *lib = NULL;
    const rn_plugin_ops *ops = NULL;
    rn_plugin *plugin = NULL;
    rn_status st = open_plugin(d->name, d->path, &lib, &ops);
    if (st == RN_OK)
        st = check_plugin(d->name, ops);
    if (st == RN_OK && (st = ops->create(&plugin)) != RN_OK)
        rn_wrap_error(st, "device %s cannot start: ", d->name);
    if (st == RN_OK) {
        d->ops = ops;
        d->plugin = plugin;
        d->library = lib;
        if (ops->attach_core != NULL)
            ops->attach_core(plugin, core);
        atomic_store_explicit(&d->state, RUNTIME_DEVICE_READY, memory_order_release);
    } else {
        runtime_close_library(lib);
        pthread_mutex_lock(&core->lock);
        record_failure(core, d->name, st);
        pthread_mutex_unlock(&core->lock);
        atomic_store_explicit(&d->state, RUNTIME_DEVICE_FAILED, memory_order_release);
    }
    pthread_mutex_unlock(&core->start_lock);
}

const runtime_device *runtime_find_device(const rn_core *core, const char *device)
{
    runtime_device *d = find_slot(core, device);
    if (d == NULL)
        return NULL;
    runtime_start_device((rn_core *)core, d);
    return atomic_load_explicit(&d->state, memory_order_acquire) == RUNTIME_DEVICE_READY ? d : NULL;
}

void runtime_start_all_devices(const rn_core *core)
{
    bool failed = false;
    for (int i = 0; i < core->n_devices; i++) {
        runtime_device *d = (runtime_device *)&core->devices[i];
        if (atomic_load_explicit(&d->state, memory_order_acquire) != RUNTIME_DEVICE_PENDING)
            continue;
        runtime_start_device((rn_core *)core, d);
        failed |= atomic_load_explicit(&d->state, memory_order_acquire) == RUNTIME_DEVICE_FAILED;
    }
    if (failed)
        rn_clear_error(); /* recorded: a listing reports it, it does not fail */
}

rn_status runtime_not_available(const rn_core *core, const char *device, const char *name)
{
    char reason[sizeof core->failures[0].reason] = "";
    pthread_mutex_lock((pthread_mutex_t *)&core->lock);
    for (int i = 0; i < core->n_failures; i++)
        if (strcasecmp(core->failures[i].name, name) == 0)
            snprintf(reason, sizeof reason, "%s", core->failures[i].reason);
    pthread_mutex_unlock((pthread_mutex_t *)&core->lock);
    if (reason[0] != '\0')
        return rn_set_error(RN_NOT_FOUND, "device '%s' is not available: it failed to load: %s",
                            device, reason);
    return rn_set_error(RN_NOT_FOUND, "device '%s' is not available", device);
}

/* Registers an installed plugin as a PENDING device (see
 * runtime_device_state): its library is loaded at the device's first use. */
static rn_status register_pending(rn_core *core, const char *name, const char *path)
{
    pthread_mutex_lock(&core->lock);
    rn_status st = check_name(name);
    if (st == RN_OK && core->n_devices == RUNTIME_MAX_DEVICES)
        st = rn_set_error(RN_OUT_OF_MEMORY, "plugin %s: more than %d devices", name,
                          RUNTIME_MAX_DEVICES);
    if (st == RN_OK && find_slot(core, name) != NULL)
        st = rn_set_error(RN_INVALID_ARG, "plugin %s: a device with that name exists", name);
    char *copy = NULL;
    if (st == RN_OK && (copy = strdup(path)) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "plugin %s: out of memory", name);
    if (st != RN_OK) {
        record_failure(core, name, st);
        pthread_mutex_unlock(&core->lock);
        return st;
    }
    runtime_device *d = &core->devices[core->n_devices];
    snprintf(d->name, sizeof d->name, "%s", name);
    d->path = copy;
    d->installed = true;
    atomic_store_explicit(&d->state, RUNTIME_DEVICE_PENDING, memory_order_release);
    core->n_devices++;
    pthread_mutex_unlock(&core->lock);
    return RN_OK;
}

/* Whether `name` is a device of the core or has failed to load in it. */
static bool known_device(rn_core *core, const char *name)
{
    pthread_mutex_lock(&core->lock);
    bool known = find_slot(core, name) != NULL;
    for (int i = 0; i < core->n_failures && !known; i++)
        known = strcasecmp(core->failures[i].name, name) == 0;
    pthread_mutex_unlock(&core->lock);
    return known;
}

/* Loads a plugins file. `base` (the installed file's folder) or NULL: with
 * it, a relative library path is taken from that folder, and a device the
 * core already has or already failed to load (RUNNEL_PLUGINS named it) is
 * left as it is. */
static rn_status load_plugins_file(rn_core *core, const char *path, const char *base)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "plugins file '%s': %s", path, strerror(errno));
    char line[2048];
    int lineno = 0;
    rn_status first = RN_OK;
    char first_error[1024] = "";
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#')
            continue;
        /* "NAME PATH" or "NAME=PATH" */
        char *sep = p + strcspn(p, " \t=");
        rn_status st = RN_OK;
        if (*sep == '\0') {
            st = rn_set_error(RN_PARSE_ERROR, "plugins file '%s', line %d: expected NAME PATH",
                              path, lineno);
        } else {
            *sep = '\0';
            char *lib = sep + 1 + strspn(sep + 1, " \t=");
            char joined[PATH_MAX + 2048];
            if (base != NULL && lib[0] != '/') {
                snprintf(joined, sizeof joined, "%s/%s", base, lib);
                lib = joined;
            }
            if (base == NULL)
                st = rn_core_load_plugin(core, p, lib);
            else if (!known_device(core, p))
                st = register_pending(core, p, lib);
        }
        if (st != RN_OK && first == RN_OK) {
            first = st;
            snprintf(first_error, sizeof first_error, "%s", rn_last_error());
        }
    }
    fclose(f);
    if (first != RN_OK)
        return rn_set_error(first, "%s", first_error);
    return RN_OK;
}

rn_status rn_core_load_plugins_file(rn_core *core, const char *path)
{
    if (core == NULL || path == NULL)
        return rn_set_error(RN_INVALID_ARG, "load_plugins_file: core and path must be set");
    return load_plugins_file(core, path, NULL);
}

bool runtime_installed_plugins_file(char *path, size_t size)
{
    Dl_info info;
    char real[PATH_MAX];
    if (dladdr((void *)&runtime_installed_plugins_file, &info) == 0 || info.dli_fname == NULL ||
        realpath(info.dli_fname, real) == NULL)
        return false;
    char *slash = strrchr(real, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    return snprintf(path, size, "%s/%s", real, RUNTIME_PLUGINS_FILE) < (int)size &&
           access(path, R_OK) == 0;
}

void runtime_load_installed_plugins(rn_core *core)
{
    const char *env = getenv("RUNNEL_INSTALLED_PLUGINS");
    if (env != NULL && strcmp(env, "0") == 0)
        return;
    char path[PATH_MAX];
    if (env != NULL && strchr(env, '/') != NULL) {
        /* A path: that file stands in for the installed one (tests). */
        if (snprintf(path, sizeof path, "%s", env) >= (int)sizeof path || access(path, R_OK) != 0)
            return;
    } else if (!runtime_installed_plugins_file(path, sizeof path)) {
        return;
    }
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s", path);
    *strrchr(base, '/') = '\0';
    /* Registered, not loaded: each device starts at its first use. */
    load_plugins_file(core, path, base);
}

/* The failures, once every pending device has been tried: whoever asks
 * which devices failed gets the installed ones' reasons too. Records are
 * only appended, so an index stays valid. */
static int failure_count(const rn_core *core)
{
    runtime_start_all_devices(core);
    pthread_mutex_lock((pthread_mutex_t *)&core->lock);
    int n = core->n_failures;
    pthread_mutex_unlock((pthread_mutex_t *)&core->lock);
    return n;
}

size_t rn_core_failed_device_count(const rn_core *core)
{
    return (size_t)failure_count(core);
}

rn_status rn_core_failed_device(const rn_core *core, size_t index, const char **name,
                                const char **reason)
{
    int n = failure_count(core);
    if (index >= (size_t)n)
        return rn_set_error(RN_INVALID_ARG, "failed device %zu is out of range (%d)", index, n);
    *name = core->failures[index].name;
    *reason = core->failures[index].reason;
    return RN_OK;
}

rn_status rn_core_add_extension(rn_core *core, const char *path)
{
    if (core == NULL || path == NULL)
        return rn_set_error(RN_INVALID_ARG, "add_extension: core and path must be set");
    /* Extensions are never unloaded: their schemas join the process's table. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (lib == NULL)
        return rn_set_error(RN_NOT_FOUND, "extension '%s': cannot load: %s", path, dlerror());
    rn_extension_entry_fn entry;
    *(void **)&entry = dlsym(lib, RN_EXTENSION_ENTRY_NAME);
    if (entry == NULL)
        return rn_set_error(RN_NOT_FOUND, "extension '%s' has no entry point %s()", path,
                            RN_EXTENSION_ENTRY_NAME);
    const rn_extension *ext = entry(RN_EXTENSION_ABI_VERSION);
    if (ext == NULL || ext->abi_version != RN_EXTENSION_ABI_VERSION)
        return rn_set_error(RN_UNSUPPORTED,
                            "extension '%s': built for extension ABI version %u, this runtime "
                            "uses %u",
                            path, ext != NULL ? ext->abi_version : 0, RN_EXTENSION_ABI_VERSION);
    for (const rn_op_schema *const *op = ext->ops; op != NULL && *op != NULL; op++) {
        rn_status st = graph_op_register(*op);
        if (st != RN_OK)
            return rn_wrap_error(st, "extension '%s': ", path);
    }
    for (size_t i = 0; i < ext->n_devices; i++) {
        const runtime_device *dev = runtime_find_device(core, ext->devices[i].device);
        if (dev == NULL)
            continue; /* the device is absent: its kernels have nowhere to go */
        if (dev->ops->add_extension == NULL)
            return rn_set_error(RN_NOT_IMPLEMENTED, "extension '%s': device %s takes no extensions",
                                path, dev->name);
        rn_status st = dev->ops->add_extension(dev->plugin, &ext->devices[i].kernels);
        if (st != RN_OK)
            return rn_wrap_error(st, "extension '%s', device %s: ", path, dev->name);
    }
    return RN_OK;
}
