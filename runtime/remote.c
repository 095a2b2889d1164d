/* Remote contexts and remote tensors (runnel/remote.h): the Core's handles
 * over a plugin's contexts, reference-counted, and copies between host and
 * device memory. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* The index of `dev` in its core's device table. */
static size_t device_index(const rn_core *core, const runtime_device *dev)
{
    return (size_t)(dev - core->devices);
}

static rn_status no_contexts(const runtime_device *dev)
{
    return rn_set_error(RN_NOT_IMPLEMENTED, "device %s has no remote contexts", dev->name);
}

static rn_status check_params(const rn_property *params, size_t n, const char *what)
{
    if (n > 0 && params == NULL)
        return rn_set_error(RN_INVALID_ARG, "%s: params is NULL", what);
    for (size_t i = 0; i < n; i++)
        if (params[i].key == NULL || params[i].value == NULL)
            return rn_set_error(RN_INVALID_ARG, "%s: parameter %zu needs a key and a value", what,
                                i);
    return RN_OK;
}

static rn_remote_context *new_context(rn_core *core, const runtime_device *dev,
                                      const rn_remote_context_ops *ops, void *handle,
                                      bool is_default)
{
    rn_remote_context *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    atomic_init(&c->refs, 1);
    c->core = core;
    c->device = dev;
    c->ops = ops;
    c->handle = handle;
    c->is_default = is_default;
    atomic_fetch_add(&core->refs, 1);
    return c;
}

static rn_status check_context_abi(const runtime_device *dev, const rn_remote_context_ops *ops)
{
    if (ops == NULL || ops->abi_version != RN_PLUGIN_ABI_VERSION || ops->create_tensor == NULL)
        return rn_set_error(RN_INTERNAL, "device %s: a context vtable of ABI %u, expected %u",
                            dev->name, ops != NULL ? ops->abi_version : 0, RN_PLUGIN_ABI_VERSION);
    return RN_OK;
}

rn_status rn_core_create_context(rn_core *core, const char *device, const rn_property *params,
                                 size_t n_params, rn_remote_context **out)
{
    if (core == NULL || device == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "create_context: core, device and out must be set");
    rn_status st = check_params(params, n_params, "create_context");
    if (st != RN_OK)
        return st;
    const runtime_device *dev;
    const char *list;
    if ((st = runtime_route_device(core, device, &dev, &list)) != RN_OK)
        return st;
    if (list != NULL)
        return rn_set_error(RN_INVALID_ARG, "create_context: '%s' names several devices", device);
    if (dev->ops->create_context == NULL)
        return no_contexts(dev);
    const rn_remote_context_ops *ops = NULL;
    rn_plugin_context *handle = NULL;
    rn_property *all; /* "GPU.1": DEVICE_ID 1 */
    size_t n_all;
    bool owned;
    if ((st = runtime_with_device_list(NULL, runtime_device_id(core, device), params, n_params,
                                       &all, &n_all, &owned)) != RN_OK)
        return st;
    st = dev->ops->create_context(dev->plugin, all, n_all, &ops, &handle);
    if (owned)
        free(all);
    if (st != RN_OK)
        return rn_wrap_error(st, "device %s: ", dev->name);
    if ((st = check_context_abi(dev, ops)) != RN_OK) {
        if (ops != NULL && ops->free != NULL)
            ops->free(handle);
        return st;
    }
    rn_remote_context *c = new_context(core, dev, ops, handle, false);
    if (c == NULL) {
        ops->free(handle);
        return rn_set_error(RN_OUT_OF_MEMORY, "create_context: out of memory");
    }
    *out = c;
    return RN_OK;
}

/* The default context of `dev`, cached in the core while referenced: a new
 * reference. */
static rn_status default_context(rn_core *core, const runtime_device *dev, rn_remote_context **out)
{
    if (dev->ops->get_default_context == NULL)
        return no_contexts(dev);
    size_t i = device_index(core, dev);
    pthread_mutex_lock(&core->lock);
    rn_remote_context *c = core->default_contexts[i];
    if (c != NULL) {
        atomic_fetch_add(&c->refs, 1);
        pthread_mutex_unlock(&core->lock);
        *out = c;
        return RN_OK;
    }
    const rn_remote_context_ops *ops = NULL;
    rn_plugin_context *handle = NULL;
    rn_status st = dev->ops->get_default_context(dev->plugin, &ops, &handle);
    if (st == RN_OK)
        st = check_context_abi(dev, ops);
    if (st == RN_OK && (c = new_context(core, dev, ops, handle, true)) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "get_default_context: out of memory");
    if (st == RN_OK)
        core->default_contexts[i] = c;
    pthread_mutex_unlock(&core->lock);
    if (st == RN_OK)
        *out = c;
    return st;
}

rn_status rn_core_get_default_context(rn_core *core, const char *device, rn_remote_context **out)
{
    if (core == NULL || device == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "get_default_context: core, device and out must be set");
    const runtime_device *dev = runtime_find_device(core, device);
    if (dev == NULL && runtime_device_id(core, device) != NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "get_default_context: '%s': a device has one default context (its "
                            "first device's); create one with DEVICE_ID for another",
                            device);
    if (dev == NULL)
        return runtime_not_available(core, device, device);
    return default_context(core, dev, out);
}

void runtime_context_release(rn_remote_context *c)
{
    rn_core *core = c->core;
    if (c->is_default) {
        /* Under the lock, so that a concurrent get_default_context either
         * takes a reference before the count reaches zero or finds the
         * cache empty. */
        pthread_mutex_lock(&core->lock);
        bool last = atomic_fetch_sub(&c->refs, 1) == 1;
        if (last)
            core->default_contexts[device_index(core, c->device)] = NULL;
        pthread_mutex_unlock(&core->lock);
        if (!last)
            return;
    } else {
        if (atomic_fetch_sub(&c->refs, 1) != 1)
            return;
        if (c->ops->free != NULL)
            c->ops->free(c->handle);
    }
    free(c);
    runtime_core_release(core);
}

void rn_remote_context_free(rn_remote_context *context)
{
    if (context != NULL)
        runtime_context_release(context);
}

const char *rn_remote_context_device(const rn_remote_context *context)
{
    return context != NULL ? context->device->name : NULL;
}

rn_status rn_remote_context_get_property(const rn_remote_context *context, const char *key,
                                         char *buf, size_t size)
{
    if (context == NULL || key == NULL || buf == NULL)
        return rn_set_error(RN_INVALID_ARG, "context get_property: context, key and buf must be "
                                            "set");
    if (context->ops->get_property == NULL)
        return rn_set_error(RN_NOT_FOUND, "%s context: unknown property '%s'",
                            context->device->name, key);
    return context->ops->get_property(context->handle, key, buf, size);
}

rn_status rn_remote_context_create_tensor(rn_remote_context *context, rn_element_type type,
                                          const int64_t *dims, size_t rank,
                                          const rn_property *params, size_t n_params,
                                          rn_tensor **out)
{
    if (context == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "create_tensor: context and out must be set");
    size_t bytes;
    rn_status st = runtime_tensor_check_shape(type, dims, rank, &bytes);
    if (st == RN_OK && type == RN_STRING)
        st = rn_set_error(RN_INVALID_ARG, "create_tensor: string tensors cannot be remote");
    if (st == RN_OK)
        st = check_params(params, n_params, "create_tensor");
    if (st != RN_OK)
        return st;
    rn_tensor *t = runtime_tensor_new(type, dims, rank);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "create_tensor: out of memory");
    const rn_remote_tensor_ops *ops = NULL;
    rn_plugin_tensor *handle = NULL;
    st = context->ops->create_tensor(context->handle, type, dims, rank, params, n_params, &ops,
                                     &handle);
    if (st == RN_OK && (ops == NULL || ops->abi_version != RN_PLUGIN_ABI_VERSION)) {
        if (ops != NULL && ops->free != NULL)
            ops->free(handle);
        st = rn_set_error(RN_INTERNAL, "device %s: a remote tensor vtable of ABI %u, expected %u",
                          context->device->name, ops != NULL ? ops->abi_version : 0,
                          RN_PLUGIN_ABI_VERSION);
    }
    if (st != RN_OK) {
        free(t);
        return st;
    }
    t->bytes = bytes;
    t->remote_ops = ops;
    t->remote = handle;
    t->context = context;
    atomic_fetch_add(&context->refs, 1);
    *out = t;
    return RN_OK;
}

rn_status rn_remote_context_create_host_tensor(rn_remote_context *context, rn_element_type type,
                                               const int64_t *dims, size_t rank, rn_tensor **out)
{
    if (context == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "create_host_tensor: context and out must be set");
    if (context->ops->alloc_host == NULL || context->ops->free_host == NULL)
        return rn_tensor_create(type, dims, rank, out);
    size_t bytes;
    rn_status st = runtime_tensor_check_shape(type, dims, rank, &bytes);
    if (st == RN_OK && type == RN_STRING)
        st = rn_set_error(RN_INVALID_ARG, "create_host_tensor: string tensors cannot be pinned");
    if (st != RN_OK)
        return st;
    rn_tensor *t = runtime_tensor_new(type, dims, rank);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "create_host_tensor: out of memory");
    void *data = NULL;
    if ((st = context->ops->alloc_host(context->handle, bytes, &data)) != RN_OK) {
        free(t);
        return st;
    }
    memset(data, 0, bytes);
    t->data = data;
    t->bytes = bytes;
    t->context = context;
    t->context_host = true;
    atomic_fetch_add(&context->refs, 1);
    *out = t;
    return RN_OK;
}

bool runtime_context_matches(const rn_compiled_model *compiled, const rn_remote_context *context)
{
    if (compiled->context != NULL)
        return compiled->context == context;
    return context->is_default && context->device == compiled->device &&
           context->core == compiled->core;
}

rn_status rn_compiled_model_get_context(const rn_compiled_model *compiled, rn_remote_context **out)
{
    if (compiled == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_context: compiled and out must be set");
    if (compiled->context != NULL) {
        atomic_fetch_add(&compiled->context->refs, 1);
        *out = compiled->context;
        return RN_OK;
    }
    return default_context(compiled->core, compiled->device, out);
}

int rn_tensor_is_remote(const rn_tensor *tensor)
{
    return tensor != NULL && tensor->remote != NULL;
}

rn_remote_context *rn_tensor_context(const rn_tensor *tensor)
{
    return tensor != NULL && tensor->remote != NULL ? tensor->context : NULL;
}

rn_status rn_remote_tensor_get_property(const rn_tensor *tensor, const char *key, char *buf,
                                        size_t size)
{
    if (tensor == NULL || key == NULL || buf == NULL)
        return rn_set_error(RN_INVALID_ARG, "tensor get_property: tensor, key and buf must be set");
    if (tensor->remote == NULL)
        return rn_set_error(RN_INVALID_ARG, "tensor get_property: a host tensor has no '%s'", key);
    if (tensor->remote_ops->get_property == NULL)
        return rn_set_error(RN_NOT_FOUND, "%s tensor: unknown property '%s'",
                            tensor->context->device->name, key);
    return tensor->remote_ops->get_property(tensor->remote, key, buf, size);
}

/* Checks that two tensors can be copied one into the other. */
static rn_status check_copy(const rn_tensor *src, const rn_tensor *dst)
{
    if (src->kind != RN_VALUE_TENSOR || dst->kind != RN_VALUE_TENSOR || src->type == RN_STRING ||
        dst->type == RN_STRING)
        return rn_set_error(RN_INVALID_ARG,
                            "tensor_copy: only numeric tensors are copied (not strings, "
                            "sequences or optionals)");
    if (src->type != dst->type)
        return rn_set_error(RN_TYPE_MISMATCH, "tensor_copy: element type %s into %s",
                            rn_element_type_name(src->type), rn_element_type_name(dst->type));
    bool same = src->rank == dst->rank;
    for (size_t d = 0; same && d < src->rank; d++)
        same = src->dims[d] == dst->dims[d];
    if (!same)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "tensor_copy: shapes differ (rank %zu into rank "
                            "%zu, or a dim)",
                            src->rank, dst->rank);
    if (dst->strided)
        return rn_set_error(RN_INVALID_ARG, "tensor_copy: the destination must be dense");
    return RN_OK;
}

rn_status rn_tensor_copy(const rn_tensor *src, rn_tensor *dst)
{
    if (src == NULL || dst == NULL)
        return rn_set_error(RN_INVALID_ARG, "tensor_copy: src and dst must be set");
    rn_status st = check_copy(src, dst);
    if (st != RN_OK || src->bytes == 0)
        return st;
    if (src->remote == NULL && dst->remote == NULL) {
        if (src->strided)
            runtime_tensor_densify(src, dst->data);
        else
            memmove(dst->data, src->data, src->bytes);
        return RN_OK;
    }
    /* Through host memory: a strided host source is densified first, and
     * remote to remote goes through a staging buffer. */
    void *staging = NULL;
    const void *host = src->data;
    if (src->remote != NULL || src->strided) {
        if ((staging = malloc(src->bytes)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "tensor_copy: cannot stage %zu bytes",
                                src->bytes);
        if (src->remote != NULL)
            st = src->remote_ops->copy_to_host(src->remote, staging, src->bytes);
        else
            runtime_tensor_densify(src, staging);
        host = staging;
    }
    if (st == RN_OK) {
        if (dst->remote != NULL)
            st = dst->remote_ops->copy_from_host(dst->remote, host, src->bytes);
        else
            memcpy(dst->data, host, src->bytes);
    }
    free(staging);
    return st;
}
