/* runtime/'s private structures, shared by its files. */
#ifndef RUNNEL_RUNTIME_RUNTIME_H
#define RUNNEL_RUNTIME_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "graph/graph.h"
#include "runnel/plugin.h"
#include "runnel/runnel.h"

struct rn_tensor {
    rn_element_type type;
    size_t rank;
    int64_t dims[RN_MAX_RANK];
    int64_t strides[RN_MAX_RANK]; /* bytes */
    bool strided;                 /* not dense row-major (rn_tensor_wrap_strided) */
    void *data;
    size_t bytes;
    bool owned; /* data (and, for STRING, every string in it) is ours to free */
    /* Sequences and optionals (rn_value_kind): a SEQUENCE holds n_items
     * tensor handles (owned by it, whose buffers are owned or borrowed as
     * the sequence was made) and their descriptors for devices; a NONE is an
     * optional without a value, of a sequence when none_of_sequence; a MAP
     * holds two items, its keys and its values (1-D tensors), `type` being
     * the values'. */
    rn_value_kind kind;
    bool none_of_sequence;
    bool of_maps; /* a SEQUENCE whose items are MAP handles */
    size_t n_items;
    rn_tensor **items;
    graph_tensor *views;
    /* A remote tensor: the device's handle and vtable, and its context
     * (referenced); data is NULL. A host tensor of a context that allocates
     * host memory (alloc_host) holds the context too, to free it there. */
    rn_remote_context *context;
    const rn_remote_tensor_ops *remote_ops;
    rn_plugin_tensor *remote;
    bool context_host; /* data came from the context's alloc_host */
};

/* A remote context: the plugin's handle, on a device of a core (which it
 * keeps alive). A device's default context is owned by its plugin and
 * cached in the core while referenced. */
struct rn_remote_context {
    atomic_int refs;
    rn_core *core;
    const struct runtime_device *device;
    const rn_remote_context_ops *ops;
    rn_plugin_context *handle;
    bool is_default;
};

#define RUNTIME_MAX_DEVICES 32
#define RUNTIME_NAME_MAX    64

/* Where a device of a core stands. A device of the installed plugins file
 * is registered PENDING (its name and library path only) and started at
 * its first use (runtime_find_device); the others are READY from their
 * registration. FAILED is a pending device that could not start (its
 * reason is among the core's failures). READY and FAILED are final. */
typedef enum runtime_device_state {
    RUNTIME_DEVICE_READY,
    RUNTIME_DEVICE_PENDING,
    RUNTIME_DEVICE_FAILED,
} runtime_device_state;

/* A device registered in a core: its plugin, the plugin's context and, for
 * a plugin loaded from a shared object, the library handle. ops, plugin and
 * library are set once `state` reads READY (stored with release order by
 * the thread that started the device). */
typedef struct runtime_device {
    char name[RUNTIME_NAME_MAX];
    const rn_plugin_ops *ops;
    rn_plugin *plugin;
    void *library;    /* dlopen handle, NULL for built-in plugins */
    bool installed;   /* from the installed plugins file */
    atomic_int state; /* runtime_device_state */
    char *path;       /* PENDING: the library to load (malloc'ed) */
} runtime_device;

/* A device that could not be registered, and why. */
typedef struct runtime_failure {
    char name[RUNTIME_NAME_MAX];
    char reason[512];
} runtime_failure;

struct rn_core {
    atomic_int refs;      /* the user's, plus one per compiled model and context */
    pthread_mutex_t lock; /* guards the registry */
    /* Held while a pending device starts (dlopen, its create): one start at
     * a time, and a device is started once. Taken before `lock`, never
     * while holding it. */
    pthread_mutex_t start_lock;
    int n_devices;
    runtime_device devices[RUNTIME_MAX_DEVICES];
    int n_failures;
    runtime_failure failures[RUNTIME_MAX_DEVICES];
    char cache_dir[4096];      /* CACHE_DIR, "" when off */
    uint64_t max_tensor_bytes; /* MAX_TENSOR_BYTES, 0 for no limit (under lock) */
    /* Per device: its default context while referenced (under lock). */
    rn_remote_context *default_contexts[RUNTIME_MAX_DEVICES];
};

/* MAX_TENSOR_BYTES's default: 4 GiB. */
#define RUNTIME_DEFAULT_MAX_TENSOR_BYTES (UINT64_C(4) << 30)

/* Refuses a graph (of a model being read, or compiled after a reshape) in
 * which a value of static shape would need more bytes than the core's
 * MAX_TENSOR_BYTES: RN_INVALID_ARG naming `what`, the value, its shape and
 * both sizes. Values of dynamic shape are checked when they have one. */
rn_status runtime_check_tensor_sizes(rn_core *core, const graph *g, const char *what);

/* The registered device called `device` (any case), or NULL. A pending
 * device of that name (installed plugins file) is started first: NULL when
 * it cannot start, its reason then recorded as a failure. Never call it
 * holding core->lock. */
const runtime_device *runtime_find_device(const rn_core *core, const char *device);

/* Starts every pending device, in the order they were registered (what a
 * listing of the core's devices or failures needs to be complete). */
void runtime_start_all_devices(const rn_core *core);

/* Sets RN_NOT_FOUND "device '<device>' is not available", with the reason
 * recorded for `name` when that device failed to load or start. */
rn_status runtime_not_available(const rn_core *core, const char *device, const char *name);

/* Resolves a device name as the user writes it: "NAME", "NAME.ID" (one
 * of the device's devices, OpenVINO's "GPU.1": see runtime_device_id), or
 * "NAME:D1,D2" for a device that runs models on other devices (one that
 * answers MULTI_DEVICE_PRIORITIES; HETERO, AUTO), found by the registry.
 * *list is the text after the colon (NULL without one). RN_NOT_FOUND naming
 * an absent device, RN_INVALID_ARG for a list given to a device that takes
 * none. */
rn_status runtime_route_device(const rn_core *core, const char *device, const runtime_device **dev,
                               const char **list);

/* The ID of a name "NAME.ID" (the text after the first '.') when `device`
 * is not itself a registered device and NAME is; NULL otherwise. */
const char *runtime_device_id(const rn_core *core, const char *device);

/* `properties` with MULTI_DEVICE_PRIORITIES=list in front when list is not
 * NULL, and DEVICE_ID=id when id is not NULL (so that a key given
 * explicitly wins): *out is malloc'ed (the caller frees it) or `properties`
 * itself when both are NULL (*owned false). */
rn_status runtime_with_device_list(const char *list, const char *id, const rn_property *properties,
                                   size_t n, rn_property **out, size_t *n_out, bool *owned);

/* Registers a plugin under `name` (NULL: the plugin's own name): checks its
 * ABI version and name, creates it. On failure the device is recorded as
 * failed with the reason, and the error is returned. `library` is closed on
 * failure. */
rn_status runtime_register_plugin(rn_core *core, const char *name, const rn_plugin_ops *ops,
                                  void *library);

/* The plugins file installed beside libruntime.so, found from where this
 * code was loaded (dladdr, symlinks resolved): "NAME PATH" lines as in any
 * plugins file, relative paths taken from its folder (docs/plugins.md). */
#define RUNTIME_PLUGINS_FILE "runnel-plugins.txt"

/* Writes the installed plugins file's path into `path`; false where there
 * is none (the runtime linked into a program, or installed without it). */
bool runtime_installed_plugins_file(char *path, size_t size);

/* Registers the installed plugins file's devices in a new core, after
 * RUNNEL_PLUGINS, as PENDING: names and library paths only, each library
 * loaded and its plugin created at the device's first use (a device that
 * cannot start is then recorded with its reason). A device RUNNEL_PLUGINS
 * named (loaded or failed) is left as it is. Nothing where
 * RUNNEL_INSTALLED_PLUGINS is "0" (the test suite: its devices do not
 * depend on what else was built); where it is a path (it has a '/'), that
 * file is read in place of the one beside libruntime.so. */
void runtime_load_installed_plugins(rn_core *core);

/* Starts a pending device (see runtime_device_state); no-op otherwise. */
void runtime_start_device(rn_core *core, runtime_device *device);

struct rn_model {
    graph *g;
    /* Inputs and outputs given pre/post-processing (once each). */
    size_t n_processed;
    char **processed;
};

struct rn_compiled_model {
    atomic_int refs; /* the user's, plus one per infer request */
    rn_core *core;
    const runtime_device *device;
    const rn_compiled_model_ops *ops;
    rn_plugin_compiled *compiled;
    /* The context it was compiled in (referenced), or NULL: the device's
     * default one. */
    rn_remote_context *context;
    /* Ports copied from the model (names owned here). */
    size_t n_inputs, n_outputs;
    rn_port *inputs, *outputs;
    bool loaded_from_cache;
};

struct rn_infer_request {
    rn_compiled_model *compiled;
    rn_plugin_request *request;
    rn_tensor **inputs; /* bound tensors (owned when own_input) */
    bool *own_input;
    rn_tensor **outputs; /* views of the last results, or the caller's */
    bool *own_output;    /* the view object is the request's */
    bool *user_output;   /* bound by the caller */
    bool counted;        /* holds a reference on `compiled` */
    void **dense;        /* per input: dense copy of a strided tensor, or NULL */
    size_t *dense_bytes;
    bool ran; /* a run was started: outputs can be asked for */
};

/* Reference counts: a compiled model keeps its core (and so its device)
 * alive, a request keeps its compiled model alive, so the handles can be
 * freed in any order. */
void runtime_core_release(rn_core *core);
void runtime_compiled_release(rn_compiled_model *compiled);

/* Releases a reference to a context (the last one frees it, or uncaches a
 * default context). */
void runtime_context_release(rn_remote_context *context);

/* Whether a remote tensor's context is the one `compiled` runs in. */
bool runtime_context_matches(const rn_compiled_model *compiled, const rn_remote_context *context);

/* Closes a plugin library (NULL is a no-op). */
void runtime_close_library(void *library);

/* Checks a tensor's type and shape; *bytes is its dense size. */
rn_status runtime_tensor_check_shape(rn_element_type type, const int64_t *dims, size_t rank,
                                     size_t *bytes);
/* A tensor handle with dense strides and no buffer (NULL: out of memory). */
rn_tensor *runtime_tensor_new(rn_element_type type, const int64_t *dims, size_t rank);

/* A graph_tensor describing a tensor's buffer (borrowed). */
void runtime_tensor_view(const rn_tensor *tensor, graph_tensor *out);
/* Copies a strided tensor's elements densely (row-major) into dst, which
 * has rn_tensor_byte_size bytes. */
void runtime_tensor_densify(const rn_tensor *t, void *dst);

/* Points a request-owned tensor at a new borrowed buffer (a tensor, a
 * sequence of borrowed item buffers, or an optional without a value). */
rn_status runtime_tensor_rebind(rn_tensor *tensor, const graph_tensor *view);
/* The public kind of a graph value's kind. */
rn_port_kind runtime_port_kind(graph_kind kind);

/* Copies ports of a graph's inputs or outputs (names duplicated). */
rn_status runtime_ports_from_graph(graph_value *const *values, int n, rn_port **out);
void runtime_ports_free(rn_port *ports, size_t n);

#endif /* RUNNEL_RUNTIME_RUNTIME_H */
