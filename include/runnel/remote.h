/* Remote contexts and remote tensors (OpenVINO's RemoteContext and
 * RemoteTensor).
 *
 * A remote context is a device's memory space and queue: an accelerator's
 * context (an OpenCL context and queue, a CUDA context and stream), or for a
 * host device its host memory. A model compiled with a context runs its
 * requests there, and a remote tensor made by that context can be bound to
 * them without a copy: an accelerator then skips the upload of an input or
 * the download of an output that already lives in its memory.
 *
 * Every device that supports contexts has a default one (what a compile
 * without a context uses); rn_core_create_context makes others from
 * device-specific parameters. Contexts, compiled models and tensors are
 * reference-counted: a compiled model keeps its context alive, a remote
 * tensor keeps its context alive, a context keeps its core alive. */
#ifndef RUNNEL_REMOTE_H
#define RUNNEL_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/compiled_model.h"
#include "runnel/core.h"
#include "runnel/model.h"
#include "runnel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rn_remote_context rn_remote_context;

/* Creates a context on `device` from parameters (the device's own names;
 * see docs/api.md). RN_NOT_IMPLEMENTED for a device without contexts; an
 * unknown parameter or a bad value is RN_INVALID_ARG naming it. */
RN_API rn_status rn_core_create_context(rn_core *core, const char *device,
                                        const rn_property *params, size_t n_params,
                                        rn_remote_context **out);

/* The device's default context: every call returns the same context, with
 * a new reference the caller releases with rn_remote_context_free. */
RN_API rn_status rn_core_get_default_context(rn_core *core, const char *device,
                                             rn_remote_context **out);

/* Releases a reference. NULL is a no-op. */
RN_API void rn_remote_context_free(rn_remote_context *context);

/* The device the context belongs to ("REF"). */
RN_API const char *rn_remote_context_device(const rn_remote_context *context);

/* Reads a context parameter (CONTEXT_TYPE, DEVICE_ID, SUPPORTED_PROPERTIES,
 * ...) into buf, NUL-terminated. RN_NOT_FOUND names an unknown key. */
RN_API rn_status rn_remote_context_get_property(const rn_remote_context *context, const char *key,
                                                char *buf, size_t size);

/* Creates a tensor in the context's memory (a remote tensor: its data is
 * not host-addressable through rn_tensor_data, which returns NULL; copy with
 * rn_tensor_copy). `params` are the device's (e.g. MEM_HANDLE to share
 * memory the caller allocated in that context). STRING tensors cannot be
 * remote. */
RN_API rn_status rn_remote_context_create_tensor(rn_remote_context *context, rn_element_type type,
                                                 const int64_t *dims, size_t rank,
                                                 const rn_property *params, size_t n_params,
                                                 rn_tensor **out);

/* Creates a host tensor in memory the context's device reads and writes
 * fastest (pinned memory on accelerators), zero-filled; an ordinary host
 * tensor otherwise. */
RN_API rn_status rn_remote_context_create_host_tensor(rn_remote_context *context,
                                                      rn_element_type type, const int64_t *dims,
                                                      size_t rank, rn_tensor **out);

/* Compiles `model` for the context's device, in that context. */
RN_API rn_status rn_core_compile_model_with_context(rn_core *core, const rn_model *model,
                                                    rn_remote_context *context,
                                                    const rn_property *properties,
                                                    size_t n_properties, rn_compiled_model **out);

/* Imports a blob (rn_compiled_model_export) into the context's device, in
 * that context. */
RN_API rn_status rn_core_import_model_with_context(rn_core *core, const void *data, size_t size,
                                                   rn_remote_context *context,
                                                   const rn_property *properties,
                                                   size_t n_properties, rn_compiled_model **out);

/* The context a compiled model runs in (its device's default one when it
 * was compiled without): a new reference. RN_NOT_IMPLEMENTED for a device
 * without contexts. */
RN_API rn_status rn_compiled_model_get_context(const rn_compiled_model *compiled,
                                               rn_remote_context **out);

/* True for a tensor made by rn_remote_context_create_tensor. */
RN_API int rn_tensor_is_remote(const rn_tensor *tensor);

/* The context of a remote tensor (borrowed, valid while the tensor lives),
 * NULL for a host tensor. */
RN_API rn_remote_context *rn_tensor_context(const rn_tensor *tensor);

/* Reads a parameter of a remote tensor (SHARED_MEM_TYPE, MEM_HANDLE, ...).
 * RN_INVALID_ARG for a host tensor. */
RN_API rn_status rn_remote_tensor_get_property(const rn_tensor *tensor, const char *key, char *buf,
                                               size_t size);

/* Copies the elements of src into dst, which must have the same element
 * type and shape: host to host (src may be strided), host to remote, remote
 * to host and remote to remote. Strings, sequences and optionals are not
 * copied (RN_INVALID_ARG). */
RN_API rn_status rn_tensor_copy(const rn_tensor *src, rn_tensor *dst);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_REMOTE_H */
