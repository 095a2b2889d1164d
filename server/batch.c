/* Joining and splitting batches along dim 0 (see batch.h). */
#include "server/batch.h"

#include <string.h>

#include "server/codec.h"

/* Elements in one row (every dim past 0). */
static size_t row_elements(const rn_tensor *t)
{
    size_t n = 1;
    for (size_t d = 1; d < rn_tensor_rank(t); d++)
        n *= (size_t)rn_tensor_dims(t)[d];
    return n;
}

static int same_rows(const rn_tensor *a, const rn_tensor *b)
{
    if (rn_tensor_element_type(a) != rn_tensor_element_type(b) ||
        rn_tensor_rank(a) != rn_tensor_rank(b) || rn_tensor_rank(a) == 0)
        return 0;
    for (size_t d = 1; d < rn_tensor_rank(a); d++)
        if (rn_tensor_dims(a)[d] != rn_tensor_dims(b)[d])
            return 0;
    return 1;
}

rn_status server_batch_concat(rn_tensor *const *parts, size_t n, rn_tensor **out)
{
    if (n == 0)
        return rn_set_error(RN_INVALID_ARG, "batch: nothing to join");
    int64_t dims[RN_MAX_RANK];
    size_t rank = rn_tensor_rank(parts[0]);
    if (rank == 0)
        return rn_set_error(RN_INVALID_ARG, "batch: a scalar has no batch dim");
    memcpy(dims, rn_tensor_dims(parts[0]), rank * sizeof *dims);
    dims[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!same_rows(parts[0], parts[i])) {
            char a[128], b[128];
            server_shape_text(rn_tensor_dims(parts[0]), rank, a, sizeof a);
            server_shape_text(rn_tensor_dims(parts[i]), rn_tensor_rank(parts[i]), b, sizeof b);
            return rn_set_error(RN_INVALID_ARG, "batch: part %zu has shape %s, part 0 %s", i, b, a);
        }
        dims[0] += rn_tensor_dims(parts[i])[0];
    }
    rn_element_type type = rn_tensor_element_type(parts[0]);
    rn_tensor *t;
    rn_status st = rn_tensor_create(type, dims, rank, &t);
    if (st != RN_OK)
        return st;
    size_t at = 0; /* elements written */
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        size_t count = rn_tensor_element_count(parts[i]);
        if (type == RN_STRING) {
            for (size_t e = 0; e < count && st == RN_OK; e++) {
                const char *v = rn_tensor_get_string(parts[i], e);
                st = rn_tensor_set_string(t, at + e, v ? v : "");
            }
        } else if (count > 0) {
            memcpy((char *)rn_tensor_data(t) + at * rn_element_type_size(type),
                   rn_tensor_data(parts[i]), rn_tensor_byte_size(parts[i]));
        }
        at += count;
    }
    if (st != RN_OK) {
        rn_tensor_free(t);
        return st;
    }
    *out = t;
    return RN_OK;
}

rn_status server_batch_slice(const rn_tensor *t, int64_t begin, int64_t count, rn_tensor **out)
{
    size_t rank = rn_tensor_rank(t);
    if (rank == 0 || begin < 0 || count < 0 || begin + count > rn_tensor_dims(t)[0])
        return rn_set_error(RN_INVALID_ARG,
                            "batch: rows [%lld, %lld) are not in an output of %lld rows",
                            (long long)begin, (long long)(begin + count),
                            rank ? (long long)rn_tensor_dims(t)[0] : 0LL);
    int64_t dims[RN_MAX_RANK];
    memcpy(dims, rn_tensor_dims(t), rank * sizeof *dims);
    dims[0] = count;
    rn_element_type type = rn_tensor_element_type(t);
    size_t row = row_elements(t), first = (size_t)begin * row, n = (size_t)count * row;
    if (type != RN_STRING) {
        size_t size = rn_element_type_size(type);
        return rn_tensor_wrap(type, dims, rank, (char *)rn_tensor_data(t) + first * size, n * size,
                              out);
    }
    rn_tensor *s = NULL;
    rn_status st = rn_tensor_create(type, dims, rank, &s);
    for (size_t e = 0; e < n && st == RN_OK; e++) {
        const char *v = rn_tensor_get_string(t, first + e);
        st = rn_tensor_set_string(s, e, v ? v : "");
    }
    if (st != RN_OK) {
        rn_tensor_free(s);
        return st;
    }
    *out = s;
    return RN_OK;
}
