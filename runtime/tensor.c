/* rn_tensor: element type, shape and a dense row-major buffer; strings,
 * sequences of tensors or maps, maps, and optionals without a value. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* Bytes per element; a string element is its char*. */
static size_t elem_size(rn_element_type type)
{
    return type == RN_STRING ? sizeof(char *) : rn_element_type_size(type);
}

rn_status runtime_tensor_check_shape(rn_element_type type, const int64_t *dims, size_t rank,
                                     size_t *bytes)
{
    if (!rn_element_type_is_valid(type))
        return rn_set_error(RN_INVALID_ARG, "tensor: element type %d is not supported", (int)type);
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "tensor: rank %zu exceeds the maximum of %d", rank,
                            RN_MAX_RANK);
    if (rank > 0 && dims == NULL)
        return rn_set_error(RN_INVALID_ARG, "tensor: dims is NULL for rank %zu", rank);
    /* span, the product of the nonzero dims, bounds the strides even when a
     * zero dim makes the tensor empty. */
    size_t count = 1, span = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return rn_set_error(RN_INVALID_ARG, "tensor: dim %zu is negative (%lld)", i,
                                (long long)dims[i]);
        if (dims[i] != 0 && span > SIZE_MAX / 64 / (size_t)dims[i])
            return rn_set_error(RN_INVALID_ARG, "tensor: shape is too large");
        if (dims[i] != 0)
            span *= (size_t)dims[i];
        count *= (size_t)dims[i];
    }
    *bytes = count * elem_size(type);
    return RN_OK;
}

rn_tensor *runtime_tensor_new(rn_element_type type, const int64_t *dims, size_t rank)
{
    rn_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->type = type;
    t->rank = rank;
    if (rank)
        memcpy(t->dims, dims, rank * sizeof *dims);
    int64_t s = (int64_t)elem_size(type);
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
    rn_status st = runtime_tensor_check_shape(type, dims, rank, &bytes);
    if (st != RN_OK)
        return st;
    if ((rank > 0 && strides == NULL) || (data == NULL && bytes != 0))
        return rn_set_error(RN_INVALID_ARG, "tensor: strides and data must be set");
    int64_t elem = (int64_t)elem_size(type);
    for (size_t i = 0; i < rank; i++)
        if (strides[i] < 0 || (dims[i] > 1 && strides[i] < elem))
            return rn_set_error(RN_INVALID_ARG,
                                "tensor: stride %zu is %lld bytes, an element has %lld", i,
                                (long long)strides[i], (long long)elem);
    rn_tensor *t = runtime_tensor_new(type, dims, rank);
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
        gather(t, 0, t->data, &out, elem_size(t->type));
}

rn_status rn_tensor_create(rn_element_type type, const int64_t *dims, size_t rank, rn_tensor **out)
{
    size_t bytes;
    rn_status st = runtime_tensor_check_shape(type, dims, rank, &bytes);
    if (st != RN_OK)
        return st;
    rn_tensor *t = runtime_tensor_new(type, dims, rank);
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
    rn_status st = runtime_tensor_check_shape(type, dims, rank, &bytes);
    if (st != RN_OK)
        return st;
    if (bytes != byte_size)
        return rn_set_error(RN_INVALID_ARG, "tensor: the shape needs %zu bytes, the buffer has %zu",
                            bytes, byte_size);
    if (data == NULL && bytes != 0)
        return rn_set_error(RN_INVALID_ARG, "tensor: data is NULL");
    rn_tensor *t = runtime_tensor_new(type, dims, rank);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "tensor: out of memory");
    t->data = data;
    t->bytes = bytes;
    *out = t;
    return RN_OK;
}

/* Frees what the handle holds (buffer and strings when owned, a sequence's
 * items) and leaves it an empty tensor. */
static void tensor_clear(rn_tensor *t)
{
    if (t->owned && t->type == RN_STRING && t->data != NULL && t->kind == RN_VALUE_TENSOR) {
        char **s = t->data;
        size_t n = t->bytes / sizeof(char *);
        for (size_t i = 0; i < n; i++)
            free(s[i]);
    }
    if (t->context_host)
        t->context->ops->free_host(t->context->handle, t->data);
    else if (t->owned)
        free(t->data);
    if (t->remote != NULL)
        t->remote_ops->free(t->remote);
    if (t->context != NULL)
        runtime_context_release(t->context);
    t->context = NULL;
    t->remote = NULL;
    t->remote_ops = NULL;
    t->context_host = false;
    for (size_t i = 0; i < t->n_items; i++)
        rn_tensor_free(t->items[i]);
    free(t->items);
    free(t->views);
    t->data = NULL;
    t->bytes = 0;
    t->owned = false;
    t->kind = RN_VALUE_TENSOR;
    t->none_of_sequence = false;
    t->of_maps = false;
    t->n_items = 0;
    t->items = NULL;
    t->views = NULL;
}

void rn_tensor_free(rn_tensor *tensor)
{
    if (tensor == NULL)
        return;
    tensor_clear(tensor);
    free(tensor);
}

/* ---- strings ---- */

rn_status rn_tensor_set_string(rn_tensor *t, size_t index, const char *s)
{
    if (t == NULL || s == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_string: tensor and string must be set");
    if (t->kind != RN_VALUE_TENSOR || t->type != RN_STRING)
        return rn_set_error(RN_INVALID_ARG, "set_string: the tensor holds %s, not strings",
                            t->kind != RN_VALUE_TENSOR ? "no tensor"
                                                       : rn_element_type_name(t->type));
    if (!t->owned)
        return rn_set_error(RN_INVALID_ARG,
                            "set_string: the tensor borrows its strings (set them in the array "
                            "it wraps)");
    size_t n = t->bytes / sizeof(char *);
    if (index >= n)
        return rn_set_error(RN_INVALID_ARG, "set_string: index %zu is out of range (%zu strings)",
                            index, n);
    char *copy = strdup(s);
    if (copy == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "set_string: out of memory");
    char **arr = t->data;
    free(arr[index]);
    arr[index] = copy;
    return RN_OK;
}

const char *rn_tensor_get_string(const rn_tensor *t, size_t index)
{
    if (t == NULL || t->kind != RN_VALUE_TENSOR || t->type != RN_STRING || t->data == NULL)
        return NULL;
    if (t->strided) {
        /* A region of a larger array: walk the strides. */
        size_t rest = index;
        const char *p = t->data;
        for (size_t d = t->rank; d-- > 0;) {
            size_t dim = (size_t)t->dims[d];
            if (dim == 0)
                return NULL;
            p += (rest % dim) * (size_t)t->strides[d];
            rest /= dim;
        }
        if (rest != 0)
            return NULL;
        return *(char *const *)p;
    }
    if (index >= t->bytes / sizeof(char *))
        return NULL;
    return ((char *const *)t->data)[index];
}

/* ---- sequences and optionals ---- */

rn_value_kind rn_tensor_kind(const rn_tensor *t)
{
    return t->kind;
}

/* An owned dense copy of a tensor (strings duplicated). */
static rn_status copy_tensor(const rn_tensor *src, rn_tensor **out)
{
    if (src->kind != RN_VALUE_TENSOR)
        return rn_set_error(RN_INVALID_ARG, "sequence: an item must be a tensor");
    rn_tensor *t;
    rn_status st = rn_tensor_create(src->type, src->dims, src->rank, &t);
    if (st != RN_OK)
        return st;
    if (src->type != RN_STRING) {
        runtime_tensor_densify(src, t->data);
        *out = t;
        return RN_OK;
    }
    char **dst = t->data;
    size_t n = t->bytes / sizeof(char *);
    for (size_t i = 0; i < n; i++) {
        const char *s = rn_tensor_get_string(src, i);
        if ((dst[i] = strdup(s != NULL ? s : "")) == NULL) {
            rn_tensor_free(t);
            return rn_set_error(RN_OUT_OF_MEMORY, "sequence: out of memory copying strings");
        }
    }
    *out = t;
    return RN_OK;
}

static rn_status copy_map(const rn_tensor *src, rn_tensor **out);

/* An owned copy of a sequence's item: a tensor or a map. */
static rn_status copy_item(const rn_tensor *src, rn_tensor **out)
{
    return src->kind == RN_VALUE_MAP ? copy_map(src, out) : copy_tensor(src, out);
}

/* Allocates the item arrays of a sequence (or a map) of n. */
static rn_status sequence_alloc(rn_tensor *t, size_t n)
{
    t->kind = RN_VALUE_SEQUENCE;
    t->items = calloc(n + 1, sizeof *t->items);
    t->views = calloc(n + 1, sizeof *t->views);
    if (t->items == NULL || t->views == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "sequence: out of memory");
    return RN_OK;
}

rn_status rn_tensor_create_sequence(rn_element_type type, rn_tensor *const *items, size_t count,
                                    rn_tensor **out)
{
    if (out == NULL || (items == NULL && count > 0))
        return rn_set_error(RN_INVALID_ARG, "create_sequence: items and out must be set");
    if (!rn_element_type_is_valid(type))
        return rn_set_error(RN_INVALID_ARG, "create_sequence: element type %d is not supported",
                            (int)type);
    /* Tensors, or maps of one key type (the first item says which). */
    rn_value_kind item_kind = count > 0 && items[0] != NULL ? items[0]->kind : RN_VALUE_TENSOR;
    if (item_kind != RN_VALUE_MAP)
        item_kind = RN_VALUE_TENSOR;
    for (size_t i = 0; i < count; i++)
        if (items[i] == NULL || items[i]->kind != item_kind || items[i]->type != type ||
            (item_kind == RN_VALUE_MAP && items[i]->items[0]->type != items[0]->items[0]->type))
            return rn_set_error(
                RN_INVALID_ARG, "create_sequence: item %zu is not a %s of element type %s%s%s", i,
                item_kind == RN_VALUE_MAP ? "map" : "tensor", rn_element_type_name(type),
                item_kind == RN_VALUE_MAP ? " with keys of type " : "",
                item_kind == RN_VALUE_MAP ? rn_element_type_name(items[0]->items[0]->type) : "");
    rn_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "create_sequence: out of memory");
    t->type = type;
    rn_status st = sequence_alloc(t, count);
    t->of_maps = item_kind == RN_VALUE_MAP;
    for (size_t i = 0; i < count && st == RN_OK; i++) {
        if ((st = copy_item(items[i], &t->items[i])) != RN_OK)
            break;
        t->n_items = i + 1;
        runtime_tensor_view(t->items[i], &t->views[i]);
    }
    if (st != RN_OK) {
        rn_tensor_free(t);
        return st;
    }
    *out = t;
    return RN_OK;
}

size_t rn_tensor_sequence_length(const rn_tensor *t)
{
    return t != NULL && t->kind == RN_VALUE_SEQUENCE ? t->n_items : 0;
}

rn_status rn_tensor_sequence_item(const rn_tensor *t, size_t index, rn_tensor **item)
{
    if (t == NULL || item == NULL || t->kind != RN_VALUE_SEQUENCE)
        return rn_set_error(RN_INVALID_ARG, "sequence_item: the tensor is not a sequence");
    if (index >= t->n_items)
        return rn_set_error(RN_INVALID_ARG, "sequence_item: index %zu is out of range (%zu items)",
                            index, t->n_items);
    *item = t->items[index];
    return RN_OK;
}

/* ---- maps ---- */

/* Whether keys i and j of a 1-D key tensor (strings set, or i64) are equal. */
static bool map_key_equal(const rn_tensor *keys, size_t i, size_t j)
{
    if (keys->type == RN_STRING)
        return strcmp(rn_tensor_get_string(keys, i), rn_tensor_get_string(keys, j)) == 0;
    int64_t a, b;
    memcpy(&a, (const char *)keys->data + i * (size_t)keys->strides[0], sizeof a);
    memcpy(&b, (const char *)keys->data + j * (size_t)keys->strides[0], sizeof b);
    return a == b;
}

/* A map of copies of keys and values, checked as rn_tensor_create_map says. */
static rn_status map_build(const rn_tensor *keys, const rn_tensor *values, rn_tensor **out)
{
    if (keys->kind != RN_VALUE_TENSOR || values->kind != RN_VALUE_TENSOR || keys->rank != 1 ||
        values->rank != 1)
        return rn_set_error(RN_INVALID_ARG, "create_map: keys and values must be 1-D tensors");
    if (keys->type != RN_STRING && keys->type != RN_I64)
        return rn_set_error(RN_INVALID_ARG,
                            "create_map: keys of element type %s are not supported (string or "
                            "i64)",
                            rn_element_type_name(keys->type));
    if (keys->dims[0] != values->dims[0])
        return rn_set_error(RN_INVALID_ARG, "create_map: %lld keys but %lld values",
                            (long long)keys->dims[0], (long long)values->dims[0]);
    size_t n = (size_t)keys->dims[0];
    for (size_t i = 0; i < n; i++) {
        if (keys->type == RN_STRING && rn_tensor_get_string(keys, i) == NULL)
            return rn_set_error(RN_INVALID_ARG, "create_map: key %zu is not set", i);
        for (size_t j = 0; j < i; j++)
            if (map_key_equal(keys, i, j))
                return rn_set_error(RN_INVALID_ARG, "create_map: key %zu repeats key %zu", i, j);
    }
    rn_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "create_map: out of memory");
    t->type = values->type;
    rn_status st = sequence_alloc(t, 2);
    t->kind = RN_VALUE_MAP;
    for (size_t i = 0; i < 2 && st == RN_OK; i++) {
        if ((st = copy_tensor(i == 0 ? keys : values, &t->items[i])) != RN_OK)
            break;
        t->n_items = i + 1;
        runtime_tensor_view(t->items[i], &t->views[i]);
    }
    if (st != RN_OK) {
        rn_tensor_free(t);
        return st;
    }
    *out = t;
    return RN_OK;
}

static rn_status copy_map(const rn_tensor *src, rn_tensor **out)
{
    return map_build(src->items[0], src->items[1], out);
}

rn_status rn_tensor_create_map(const rn_tensor *keys, const rn_tensor *values, rn_tensor **out)
{
    if (keys == NULL || values == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "create_map: keys, values and out must be set");
    return map_build(keys, values, out);
}

size_t rn_tensor_map_size(const rn_tensor *t)
{
    return t != NULL && t->kind == RN_VALUE_MAP ? (size_t)t->items[0]->dims[0] : 0;
}

rn_element_type rn_tensor_map_key_type(const rn_tensor *t)
{
    return t != NULL && t->kind == RN_VALUE_MAP ? t->items[0]->type : RN_UNDEFINED;
}

/* Item i (0 keys, 1 values) of a map. */
static rn_status map_part(const rn_tensor *t, size_t i, rn_tensor **out, const char *what)
{
    if (t == NULL || out == NULL || t->kind != RN_VALUE_MAP)
        return rn_set_error(RN_INVALID_ARG, "map_%s: the tensor is not a map", what);
    *out = t->items[i];
    return RN_OK;
}

rn_status rn_tensor_map_keys(const rn_tensor *t, rn_tensor **keys)
{
    return map_part(t, 0, keys, "keys");
}

rn_status rn_tensor_map_values(const rn_tensor *t, rn_tensor **values)
{
    return map_part(t, 1, values, "values");
}

rn_status rn_tensor_create_none(rn_element_type type, int of_sequence, rn_tensor **out)
{
    if (out == NULL)
        return rn_set_error(RN_INVALID_ARG, "create_none: out must be set");
    if (!rn_element_type_is_valid(type))
        return rn_set_error(RN_INVALID_ARG, "create_none: element type %d is not supported",
                            (int)type);
    rn_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "create_none: out of memory");
    t->type = type;
    t->kind = RN_VALUE_NONE;
    t->none_of_sequence = of_sequence != 0;
    *out = t;
    return RN_OK;
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
    if (tensor->kind != RN_VALUE_TENSOR)
        return 0;
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
    if (tensor->kind == RN_VALUE_SEQUENCE || tensor->kind == RN_VALUE_MAP) {
        out->kind = tensor->kind == RN_VALUE_MAP ? GRAPH_KIND_MAP
                    : tensor->of_maps            ? GRAPH_KIND_SEQUENCE_MAP
                                                 : GRAPH_KIND_SEQUENCE;
        out->n_items = tensor->n_items;
        out->items = tensor->views;
        return;
    }
    if (tensor->kind == RN_VALUE_NONE) {
        out->kind = tensor->none_of_sequence ? GRAPH_KIND_OPTIONAL_SEQUENCE : GRAPH_KIND_OPTIONAL;
        return;
    }
    out->rank = (int)tensor->rank;
    memcpy(out->dims, tensor->dims, tensor->rank * sizeof tensor->dims[0]);
    out->data = tensor->data;
    out->nbytes = tensor->bytes;
}

/* Points t (an empty handle) at the dense buffer a view describes. */
static void rebind_dense(rn_tensor *t, const graph_tensor *view)
{
    t->type = view->type;
    t->rank = (size_t)view->rank;
    memcpy(t->dims, view->dims, (size_t)view->rank * sizeof view->dims[0]);
    t->data = view->data;
    t->bytes = view->nbytes;
    int64_t s = (int64_t)elem_size(view->type);
    for (int i = view->rank; i-- > 0;) {
        t->strides[i] = s;
        s *= view->dims[i];
    }
}

rn_status runtime_tensor_rebind(rn_tensor *tensor, const graph_tensor *view)
{
    tensor_clear(tensor);
    tensor->strided = false;
    tensor->type = view->type;
    tensor->rank = 0;
    if (view->kind == GRAPH_KIND_OPTIONAL || view->kind == GRAPH_KIND_OPTIONAL_SEQUENCE) {
        tensor->kind = RN_VALUE_NONE;
        tensor->none_of_sequence = view->kind == GRAPH_KIND_OPTIONAL_SEQUENCE;
        return RN_OK;
    }
    if (view->kind == GRAPH_KIND_TENSOR) {
        rebind_dense(tensor, view);
        return RN_OK;
    }
    /* A sequence (of tensors or of maps) or a map: items rebound in turn. */
    rn_status st = sequence_alloc(tensor, view->n_items);
    tensor->kind = view->kind == GRAPH_KIND_MAP ? RN_VALUE_MAP : RN_VALUE_SEQUENCE;
    tensor->of_maps = view->kind == GRAPH_KIND_SEQUENCE_MAP;
    for (size_t i = 0; i < view->n_items && st == RN_OK; i++) {
        rn_tensor *item = calloc(1, sizeof *item);
        if (item == NULL) {
            st = rn_set_error(RN_OUT_OF_MEMORY, "output sequence: out of memory");
            break;
        }
        if (view->items[i].kind == GRAPH_KIND_TENSOR)
            rebind_dense(item, &view->items[i]);
        else if ((st = runtime_tensor_rebind(item, &view->items[i])) != RN_OK) {
            rn_tensor_free(item);
            break;
        }
        tensor->items[i] = item;
        tensor->n_items = i + 1;
        runtime_tensor_view(item, &tensor->views[i]);
    }
    if (st != RN_OK)
        tensor_clear(tensor);
    return st;
}
