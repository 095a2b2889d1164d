/* rn_tensor: element type, shape and a dense row-major buffer. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static rn_status check_shape(rn_element_type type, const int64_t *dims, size_t rank, size_t *bytes)
{
    if (!rn_element_type_is_valid(type) || type == RN_STRING)
        return rn_set_error(RN_INVALID_ARG, "tensor: element type %d is not supported", (int)type);
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "tensor: rank %zu exceeds the maximum of %d", rank,
                            RN_MAX_RANK);
    if (rank > 0 && dims == NULL)
        return rn_set_error(RN_INVALID_ARG, "tensor: dims is NULL for rank %zu", rank);
    size_t count = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return rn_set_error(RN_INVALID_ARG, "tensor: dim %zu is negative (%lld)", i,
                                (long long)dims[i]);
        if (dims[i] != 0 && count > SIZE_MAX / 64 / (size_t)dims[i])
            return rn_set_error(RN_INVALID_ARG, "tensor: shape is too large");
        count *= (size_t)dims[i];
    }
    *bytes = count * rn_element_type_size(type);
    return RN_OK;
}

static rn_tensor *tensor_new(rn_element_type type, const int64_t *dims, size_t rank)
{
    rn_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->type = type;
    t->rank = rank;
    if (rank)
        memcpy(t->dims, dims, rank * sizeof *dims);
    int64_t s = (int64_t)rn_element_type_size(type);
    for (size_t i = rank; i-- > 0;) {
        t->strides[i] = s;
        s *= dims[i];
    }
    return t;
}

rn_status rn_tensor_wrap_strided(rn_element_type type, const int64_t *dims, size_t rank,
                                 const int64_t *strides, void *data, rn_tensor **out)
{
    size_t bytes;
    rn_status st = check_shape(type, dims, rank, &bytes);
    if (st != RN_OK)
        return st;
    if ((rank > 0 && strides == NULL) || (data == NULL && bytes != 0))
        return rn_set_error(RN_INVALID_ARG, "tensor: strides and data must be set");
    int64_t elem = (int64_t)rn_element_type_size(type);
    for (size_t i = 0; i < rank; i++)
        if (strides[i] < 0 || (dims[i] > 1 && strides[i] < elem))
            return rn_set_error(RN_INVALID_ARG,
                                "tensor: stride %zu is %lld bytes, an element has %lld", i,
                                (long long)strides[i], (long long)elem);
    rn_tensor *t = tensor_new(type, dims, rank);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "tensor: out of memory");
    t->data = data;
    t->bytes = bytes;
    for (size_t i = 0; i < rank; i++) {
        t->strided |= dims[i] > 1 && strides[i] != t->strides[i];
        t->strides[i] = strides[i];
    }
    *out = t;
    return RN_OK;
}

const int64_t *rn_tensor_strides(const rn_tensor *tensor)
{
    return tensor->strides;
}

int rn_tensor_is_dense(const rn_tensor *tensor)
{
    return !tensor->strided;
}

/* Copies a strided tensor's elements into `dst` in row-major order. */
static void gather(const rn_tensor *t, size_t dim, const char *src, char **dst, size_t elem)
{
    if (dim == t->rank) {
        memcpy(*dst, src, elem);
        *dst += elem;
        return;
    }
    if (dim + 1 == t->rank && t->strides[dim] == (int64_t)elem) {
        size_t n = (size_t)t->dims[dim] * elem;
        memcpy(*dst, src, n);
        *dst += n;
        return;
    }
    for (int64_t i = 0; i < t->dims[dim]; i++)
        gather(t, dim + 1, src + i * t->strides[dim], dst, elem);
}

void runtime_tensor_densify(const rn_tensor *t, void *dst)
{
    char *out = dst;
    if (t->bytes > 0)
        gather(t, 0, t->data, &out, rn_element_type_size(t->type));
}

rn_status rn_tensor_create(rn_element_type type, const int64_t *dims, size_t rank, rn_tensor **out)
{
    size_t bytes;
    rn_status st = check_shape(type, dims, rank, &bytes);
    if (st != RN_OK)
        return st;
    rn_tensor *t = tensor_new(type, dims, rank);
    size_t alloc = (bytes + 63) / 64 * 64;
    void *data = t != NULL ? aligned_alloc(64, alloc ? alloc : 64) : NULL;
    if (data == NULL) {
        free(t);
        return rn_set_error(RN_OUT_OF_MEMORY, "tensor: cannot allocate %zu bytes", bytes);
    }
    memset(data, 0, alloc ? alloc : 64);
    t->data = data;
    t->bytes = bytes;
    t->owned = true;
    *out = t;
    return RN_OK;
}

rn_status rn_tensor_wrap(rn_element_type type, const int64_t *dims, size_t rank, void *data,
                         size_t byte_size, rn_tensor **out)
{
    size_t bytes;
    rn_status st = check_shape(type, dims, rank, &bytes);
    if (st != RN_OK)
        return st;
    if (bytes != byte_size)
        return rn_set_error(RN_INVALID_ARG, "tensor: the shape needs %zu bytes, the buffer has %zu",
                            bytes, byte_size);
    if (data == NULL && bytes != 0)
        return rn_set_error(RN_INVALID_ARG, "tensor: data is NULL");
    rn_tensor *t = tensor_new(type, dims, rank);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "tensor: out of memory");
    t->data = data;
    t->bytes = bytes;
    *out = t;
    return RN_OK;
}

void rn_tensor_free(rn_tensor *tensor)
{
    if (tensor == NULL)
        return;
    if (tensor->owned)
        free(tensor->data);
    free(tensor);
}

rn_element_type rn_tensor_element_type(const rn_tensor *tensor)
{
    return tensor->type;
}

size_t rn_tensor_rank(const rn_tensor *tensor)
{
    return tensor->rank;
}

const int64_t *rn_tensor_dims(const rn_tensor *tensor)
{
    return tensor->dims;
}

size_t rn_tensor_element_count(const rn_tensor *tensor)
{
    size_t n = 1;
    for (size_t i = 0; i < tensor->rank; i++)
        n *= (size_t)tensor->dims[i];
    return n;
}

size_t rn_tensor_byte_size(const rn_tensor *tensor)
{
    return tensor->bytes;
}

void *rn_tensor_data(const rn_tensor *tensor)
{
    return tensor->data;
}

void runtime_tensor_view(const rn_tensor *tensor, graph_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->type = tensor->type;
    out->rank = (int)tensor->rank;
    memcpy(out->dims, tensor->dims, tensor->rank * sizeof tensor->dims[0]);
    out->data = tensor->data;
    out->nbytes = tensor->bytes;
}

void runtime_tensor_rebind(rn_tensor *tensor, const graph_tensor *view)
{
    if (tensor->owned)
        free(tensor->data);
    tensor->owned = false;
    tensor->strided = false;
    tensor->type = view->type;
    tensor->rank = (size_t)view->rank;
    memcpy(tensor->dims, view->dims, (size_t)view->rank * sizeof view->dims[0]);
    tensor->data = view->data;
    tensor->bytes = view->nbytes;
    int64_t s = (int64_t)rn_element_type_size(view->type);
    for (int i = view->rank; i-- > 0;) {
        tensor->strides[i] = s;
        s *= view->dims[i];
    }
}
