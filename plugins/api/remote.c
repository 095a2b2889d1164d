/* Host-memory remote contexts and their tensors (see remote.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/api/remote.h"

struct rn_plugin_context {
    const plugin_host_context_kind *kind;
    char device_id[16];
};

typedef struct rn_plugin_tensor {
    const plugin_host_context *context;
    graph_tensor t;
    bool owned; /* t.data is ours (not shared through MEM_HANDLE) */
} host_tensor;

static const char *const context_keys = "CONTEXT_TYPE DEVICE_ID SUPPORTED_PROPERTIES";

rn_status plugin_host_context_create(const plugin_host_context_kind *kind,
                                     const rn_property *params, size_t n_params,
                                     plugin_host_context **out)
{
    plugin_host_context *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory creating a context", kind->device);
    c->kind = kind;
    snprintf(c->device_id, sizeof c->device_id, "0");
    for (size_t i = 0; i < n_params; i++) {
        const char *key = params[i].key, *value = params[i].value;
        rn_status st = RN_OK;
        if (strcmp(key, "DEVICE_ID") != 0)
            st = rn_set_error(RN_INVALID_ARG,
                              "%s context: unknown parameter '%s' (accepted: DEVICE_ID)",
                              kind->device, key);
        else if (strcmp(value, "0") != 0)
            st = rn_set_error(RN_INVALID_ARG,
                              "%s context: DEVICE_ID '%s' does not exist (accepted: 0)",
                              kind->device, value);
        if (st != RN_OK) {
            free(c);
            return st;
        }
    }
    *out = c;
    return RN_OK;
}

void plugin_host_context_free(plugin_host_context *context)
{
    free(context);
}

static rn_status context_get_property(rn_plugin_context *context, const char *key, char *buf,
                                      size_t size)
{
    const plugin_host_context *c = context;
    if (strcmp(key, "CONTEXT_TYPE") == 0)
        return plugin_property_string(key, c->kind->context_type, buf, size);
    if (strcmp(key, "DEVICE_ID") == 0)
        return plugin_property_string(key, c->device_id, buf, size);
    if (strcmp(key, "SUPPORTED_PROPERTIES") == 0)
        return plugin_property_string(key, context_keys, buf, size);
    return rn_set_error(RN_NOT_FOUND, "%s context: unknown property '%s' (known: %s)",
                        c->kind->device, key, context_keys);
}

rn_status plugin_parse_handle(const char *what, const char *key, const char *value, void **out)
{
    errno = 0;
    char *end;
    uintmax_t v = strtoumax(value, &end, 0);
    if (value[0] == '\0' || *end != '\0' || errno != 0 || v == 0 || v > UINTPTR_MAX)
        return rn_set_error(RN_INVALID_ARG,
                            "%s: %s '%s' is not an address (accepted: a non-zero address, 0x... "
                            "or decimal)",
                            what, key, value);
    *out = (void *)(uintptr_t)v;
    return RN_OK;
}

static rn_status context_create_tensor(rn_plugin_context *context, rn_element_type type,
                                       const int64_t *dims, size_t rank, const rn_property *params,
                                       size_t n_params, const rn_remote_tensor_ops **ops,
                                       rn_plugin_tensor **tensor)
{
    const plugin_host_context *c = context;
    void *shared = NULL;
    for (size_t i = 0; i < n_params; i++) {
        rn_status st;
        if (strcmp(params[i].key, "MEM_HANDLE") == 0) {
            char what[64];
            snprintf(what, sizeof what, "%s tensor", c->kind->device);
            st = plugin_parse_handle(what, "MEM_HANDLE", params[i].value, &shared);
        } else
            st = rn_set_error(RN_INVALID_ARG,
                              "%s tensor: unknown parameter '%s' (accepted: MEM_HANDLE)",
                              c->kind->device, params[i].key);
        if (st != RN_OK)
            return st;
    }
    host_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory creating a tensor",
                            c->kind->device);
    t->context = c;
    t->t.kind = GRAPH_KIND_TENSOR;
    t->t.type = type;
    t->t.rank = (int)rank;
    memcpy(t->t.dims, dims, rank * sizeof *dims);
    t->t.nbytes = plugin_tensor_nbytes(type, graph_tensor_count(&t->t));
    if (shared != NULL) {
        t->t.data = shared;
    } else {
        /* 64-byte aligned like host tensors; a 0-byte tensor still gets a
         * valid pointer. */
        size_t bytes = (t->t.nbytes + 63) / 64 * 64;
        t->t.data = aligned_alloc(64, bytes ? bytes : 64);
        if (t->t.data == NULL) {
            size_t nbytes = t->t.nbytes;
            free(t);
            return rn_set_error(RN_OUT_OF_MEMORY, "%s: cannot allocate a tensor of %zu bytes",
                                c->kind->device, nbytes);
        }
        memset(t->t.data, 0, t->t.nbytes);
        t->owned = true;
    }
    *ops = &plugin_host_tensor_ops;
    *tensor = t;
    return RN_OK;
}

static void context_free(rn_plugin_context *context)
{
    plugin_host_context_free(context);
}

const rn_remote_context_ops plugin_host_context_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .get_property = context_get_property,
    .create_tensor = context_create_tensor,
    .free = context_free,
};

static rn_status context_alloc_host(rn_plugin_context *context, size_t size, void **data)
{
    const plugin_host_context *c = context;
    return c->kind->alloc_host(size, data);
}

static void context_free_host(rn_plugin_context *context, void *data)
{
    const plugin_host_context *c = context;
    c->kind->free_host(data);
}

const rn_remote_context_ops plugin_host_pinned_context_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .get_property = context_get_property,
    .create_tensor = context_create_tensor,
    .alloc_host = context_alloc_host,
    .free_host = context_free_host,
    .free = context_free,
};

const rn_remote_context_ops *plugin_host_context_ops_of(const plugin_host_context_kind *kind)
{
    return kind->alloc_host != NULL && kind->free_host != NULL ? &plugin_host_pinned_context_ops
                                                               : &plugin_host_context_ops;
}

static rn_status tensor_get_property(rn_plugin_tensor *tensor, const char *key, char *buf,
                                     size_t size)
{
    const host_tensor *t = tensor;
    if (strcmp(key, "SHARED_MEM_TYPE") == 0)
        return plugin_property_string(key, t->context->kind->mem_type, buf, size);
    if (strcmp(key, "MEM_HANDLE") == 0) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "0x%" PRIxPTR, (uintptr_t)t->t.data);
        return plugin_property_string(key, tmp, buf, size);
    }
    return rn_set_error(RN_NOT_FOUND,
                        "%s tensor: unknown property '%s' (known: SHARED_MEM_TYPE MEM_HANDLE)",
                        t->context->kind->device, key);
}

static rn_status check_size(const host_tensor *t, size_t size)
{
    if (size != t->t.nbytes)
        return rn_set_error(RN_INVALID_ARG, "%s tensor: a copy of %zu bytes into %zu bytes",
                            t->context->kind->device, size, t->t.nbytes);
    return RN_OK;
}

static rn_status tensor_copy_from_host(rn_plugin_tensor *tensor, const void *src, size_t size)
{
    host_tensor *t = tensor;
    rn_status st = check_size(t, size);
    if (st == RN_OK && size > 0)
        memcpy(t->t.data, src, size);
    return st;
}

static rn_status tensor_copy_to_host(rn_plugin_tensor *tensor, void *dst, size_t size)
{
    host_tensor *t = tensor;
    rn_status st = check_size(t, size);
    if (st == RN_OK && size > 0)
        memcpy(dst, t->t.data, size);
    return st;
}

static void tensor_free(rn_plugin_tensor *tensor)
{
    host_tensor *t = tensor;
    if (t == NULL)
        return;
    if (t->owned)
        free(t->t.data);
    free(t);
}

const rn_remote_tensor_ops plugin_host_tensor_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .get_property = tensor_get_property,
    .copy_from_host = tensor_copy_from_host,
    .copy_to_host = tensor_copy_to_host,
    .free = tensor_free,
};

rn_status plugin_host_tensor_view(const rn_plugin_tensor *tensor,
                                  const plugin_host_context *context, graph_tensor *out)
{
    const host_tensor *t = tensor;
    if (t->context != context)
        return rn_set_error(RN_INVALID_ARG,
                            "%s: the remote tensor belongs to another context than the one the "
                            "model was compiled in",
                            context->kind->device);
    *out = t->t;
    return RN_OK;
}
