/* Remote contexts for devices whose memory is host memory (REF, and
 * SLOWDEV, which simulates device memory with host memory): a context is a
 * memory space of its own, and its tensors are host buffers that the
 * generic request binds without a copy. A model compiled in one context
 * refuses the tensors of another, as an accelerator's would.
 *
 * Context parameters: DEVICE_ID ("0", the one device). Tensor parameters:
 * MEM_HANDLE (the address of caller memory of at least the tensor's size,
 * shared instead of allocated; "0x..." or decimal). Read back: context
 * CONTEXT_TYPE, DEVICE_ID, SUPPORTED_PROPERTIES; tensor SHARED_MEM_TYPE,
 * MEM_HANDLE. */
#ifndef RUNNEL_PLUGINS_API_REMOTE_H
#define RUNNEL_PLUGINS_API_REMOTE_H

#include <stdbool.h>

#include "base/kit.h"
#include "graph/graph.h"
#include "runnel/plugin.h"

/* A host context is the generic rn_plugin_context. */
typedef struct rn_plugin_context plugin_host_context;

/* What a device's host contexts are called. */
typedef struct plugin_host_context_kind {
    const char *device;       /* "REF" (in messages) */
    const char *context_type; /* CONTEXT_TYPE ("HOST") */
    const char *mem_type;     /* SHARED_MEM_TYPE of its tensors ("HOST_BUFFER") */
    /* (optional) Host memory the device copies fastest (NVIDIA's pinned
     * memory): rn_remote_context_create_host_tensor allocates with it.
     * Contexts of such a kind have plugin_host_pinned_context_ops. */
    rn_status (*alloc_host)(size_t size, void **data);
    void (*free_host)(void *data);
} plugin_host_context_kind;

/* Creates a context from parameters; `kind` must outlive it. */
rn_status plugin_host_context_create(const plugin_host_context_kind *kind,
                                     const rn_property *params, size_t n_params,
                                     plugin_host_context **out);
void plugin_host_context_free(plugin_host_context *context);

/* The vtables of host contexts and their tensors. */
extern const rn_remote_context_ops plugin_host_context_ops;
extern const rn_remote_context_ops plugin_host_pinned_context_ops;
/* The vtable of a kind's contexts: pinned when it allocates host memory. */
const rn_remote_context_ops *plugin_host_context_ops_of(const plugin_host_context_kind *kind);
extern const rn_remote_tensor_ops plugin_host_tensor_ops;

/* Describes remote tensor `tensor` (a handle of plugin_host_tensor_ops) as
 * a host buffer, when it belongs to `context`; RN_INVALID_ARG naming both
 * contexts otherwise. */
rn_status plugin_host_tensor_view(const rn_plugin_tensor *tensor,
                                  const plugin_host_context *context, graph_tensor *out);

/* Parses a handle parameter (MEM_HANDLE, OCL_CONTEXT, ...): an address,
 * "0x..." or decimal, not 0; RN_INVALID_ARG "<what>: <key> '<value>' is not
 * an address" otherwise. */
RN_KIT rn_status plugin_parse_handle(const char *what, const char *key, const char *value,
                                     void **out);

#endif /* RUNNEL_PLUGINS_API_REMOTE_H */
