/* Element types and host tensors.
 *
 * An rn_tensor is an element type, a shape and a dense row-major buffer,
 * either owned (rn_tensor_create) or borrowed from the caller
 * (rn_tensor_wrap). Element type numbers are ONNX's TensorProto.DataType.
 *
 * Strings (RN_STRING): the buffer is an array of one `char *` per element,
 * each a NUL-terminated UTF-8 string. rn_tensor_create makes every entry
 * NULL (unset) and the tensor then owns the strings rn_tensor_set_string
 * copies in; a wrapped string tensor borrows the caller's array and strings.
 * A request refuses a string input with an unset entry. String results are
 * owned by the request, like other results.
 *
 * Sequences and optionals (ONNX's sequence and optional types): the same
 * handle can hold a sequence of tensors (rn_tensor_create_sequence) or an
 * optional without a value (rn_tensor_create_none); an optional with a value
 * is given and returned as that value. rn_tensor_kind tells which.
 *
 * Maps (ONNX's map type; ZipMap returns a sequence of them): a map handle
 * (rn_tensor_create_map) holds its keys, a 1-D tensor of strings or i64, and
 * its values, a 1-D tensor of as many elements; a sequence may hold maps. */
#ifndef RUNNEL_TENSOR_H
#define RUNNEL_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest rank a tensor or shape may have. */
#define RN_MAX_RANK 8

/* A dimension that is not known until the request runs. */
#define RN_DIM_DYNAMIC (-1)

/* X(NAME, onnx data type, short name, byte size) */
#define RN_ELEMENT_TYPE_MAP(X)                                                                     \
    X(UNDEFINED, 0, "undefined", 0)                                                                \
    X(F32, 1, "f32", 4)                                                                            \
    X(U8, 2, "u8", 1)                                                                              \
    X(I8, 3, "i8", 1)                                                                              \
    X(U16, 4, "u16", 2)                                                                            \
    X(I16, 5, "i16", 2)                                                                            \
    X(I32, 6, "i32", 4)                                                                            \
    X(I64, 7, "i64", 8)                                                                            \
    X(STRING, 8, "string", 0)                                                                      \
    X(BOOL, 9, "boolean", 1)                                                                       \
    X(F16, 10, "f16", 2)                                                                           \
    X(F64, 11, "f64", 8)                                                                           \
    X(U32, 12, "u32", 4)                                                                           \
    X(U64, 13, "u64", 8)                                                                           \
    X(BF16, 16, "bf16", 2)                                                                         \
    X(F8E4M3FN, 17, "f8e4m3fn", 1)                                                                 \
    X(F8E4M3FNUZ, 18, "f8e4m3fnuz", 1)                                                             \
    X(F8E5M2, 19, "f8e5m2", 1)                                                                     \
    X(F8E5M2FNUZ, 20, "f8e5m2fnuz", 1)

typedef enum rn_element_type {
#define RN_ELEMENT_TYPE_ENUM_(name, onnx, text, size) RN_##name = onnx,
    RN_ELEMENT_TYPE_MAP(RN_ELEMENT_TYPE_ENUM_)
#undef RN_ELEMENT_TYPE_ENUM_
} rn_element_type;

/* Bytes per element; 0 for UNDEFINED, STRING and numbers outside the table. */
RN_API size_t rn_element_type_size(rn_element_type type);

/* "f32", "i64", ...; "unknown" outside the table. Static string. */
RN_API const char *rn_element_type_name(rn_element_type type);

/* True for a value in the table other than UNDEFINED. */
RN_API int rn_element_type_is_valid(rn_element_type type);

/* A partial shape: rank -1 means the rank itself is unknown; a dim of
 * RN_DIM_DYNAMIC is known only when the request runs. */
typedef struct rn_partial_shape {
    int rank;
    int64_t dims[RN_MAX_RANK];
} rn_partial_shape;

typedef struct rn_tensor rn_tensor;

/* Allocates a zero-filled tensor that owns its buffer (64-byte aligned).
 * Every dim must be >= 0 and rank <= RN_MAX_RANK. */
RN_API rn_status rn_tensor_create(rn_element_type type, const int64_t *dims, size_t rank,
                                  rn_tensor **out);

/* Wraps a caller's buffer without copying. `byte_size` must equal the size the
 * shape and type call for. The caller keeps ownership of `data`, which must
 * outlive the tensor. */
RN_API rn_status rn_tensor_wrap(rn_element_type type, const int64_t *dims, size_t rank, void *data,
                                size_t byte_size, rn_tensor **out);

/* Wraps a region of a caller's larger buffer (a region of interest):
 * `strides` gives, per dim, the distance in bytes between consecutive
 * elements along it (each >= 0, and dims of extent > 1 need a stride of at
 * least the element size). The data is not copied; an infer request reads it
 * into a dense buffer of its own when it runs. */
RN_API rn_status rn_tensor_wrap_strided(rn_element_type type, const int64_t *dims, size_t rank,
                                        const int64_t *strides, void *data, rn_tensor **out);

/* Byte strides of the tensor (dense row-major unless made with
 * rn_tensor_wrap_strided), borrowed like the dims. */
RN_API const int64_t *rn_tensor_strides(const rn_tensor *tensor);

/* True when the elements are contiguous in row-major order. */
RN_API int rn_tensor_is_dense(const rn_tensor *tensor);

/* Frees the tensor (and its buffer when owned; for a sequence, its items).
 * NULL is a no-op. */
RN_API void rn_tensor_free(rn_tensor *tensor);

/* ---- strings ---- */

/* Copies `s` into element `index` of an owned string tensor (made by
 * rn_tensor_create), freeing what it held. RN_INVALID_ARG for another type,
 * a borrowed tensor or an index out of range. */
RN_API rn_status rn_tensor_set_string(rn_tensor *tensor, size_t index, const char *s);

/* Element `index` of a string tensor (borrowed, valid while the tensor and
 * its entry are unchanged); NULL when unset, out of range or not a string
 * tensor. */
RN_API const char *rn_tensor_get_string(const rn_tensor *tensor, size_t index);

/* ---- sequences and optionals ---- */

typedef enum rn_value_kind {
    RN_VALUE_TENSOR = 0,   /* a dense tensor (what every other call makes) */
    RN_VALUE_SEQUENCE = 1, /* a sequence of tensors of one element type */
    RN_VALUE_NONE = 2,     /* an optional without a value */
    RN_VALUE_MAP = 3,      /* a map: keys and values (rn_tensor_map_keys / _values) */
} rn_value_kind;

RN_API rn_value_kind rn_tensor_kind(const rn_tensor *tensor);

/* Creates a sequence of `count` tensors of element type `type`, holding
 * copies of items[0..count) (each a tensor of that type; strings are
 * copied too), or of `count` maps whose values are of element type `type`
 * (all with one key type). A sequence has rank 0, no data and 0 bytes; its
 * element type is `type`. */
RN_API rn_status rn_tensor_create_sequence(rn_element_type type, rn_tensor *const *items,
                                           size_t count, rn_tensor **out);

/* The number of tensors in a sequence (0 for other kinds). */
RN_API size_t rn_tensor_sequence_length(const rn_tensor *tensor);

/* Tensor `index` of a sequence (borrowed: owned by the sequence, valid while
 * it lives). RN_INVALID_ARG when not a sequence or out of range. */
RN_API rn_status rn_tensor_sequence_item(const rn_tensor *tensor, size_t index, rn_tensor **item);

/* Creates a map from copies of `keys` (a 1-D tensor of RN_STRING or RN_I64,
 * no key twice) and `values` (a 1-D tensor of as many elements, of any
 * element type, which becomes the map's element type). */
RN_API rn_status rn_tensor_create_map(const rn_tensor *keys, const rn_tensor *values,
                                      rn_tensor **out);

/* The number of entries of a map (0 for other kinds). */
RN_API size_t rn_tensor_map_size(const rn_tensor *tensor);

/* The key type of a map (RN_STRING or RN_I64); RN_UNDEFINED for other kinds. */
RN_API rn_element_type rn_tensor_map_key_type(const rn_tensor *tensor);

/* The keys (a 1-D tensor of the key type) and the values (a 1-D tensor of
 * the map's element type) of a map, entry i mapping keys[i] to values[i];
 * borrowed: owned by the map, valid while it lives. RN_INVALID_ARG when
 * not a map. */
RN_API rn_status rn_tensor_map_keys(const rn_tensor *tensor, rn_tensor **keys);
RN_API rn_status rn_tensor_map_values(const rn_tensor *tensor, rn_tensor **values);

/* Creates an optional without a value, of tensors (of_sequence 0) or of
 * sequences (1) of element type `type`. */
RN_API rn_status rn_tensor_create_none(rn_element_type type, int of_sequence, rn_tensor **out);

RN_API rn_element_type rn_tensor_element_type(const rn_tensor *tensor);
RN_API size_t rn_tensor_rank(const rn_tensor *tensor);
/* Borrowed pointer to rank dims, valid while the tensor lives. */
RN_API const int64_t *rn_tensor_dims(const rn_tensor *tensor);
/* Elements of a tensor (0 for a sequence, a map or an optional without a
 * value). */
RN_API size_t rn_tensor_element_count(const rn_tensor *tensor);
RN_API size_t rn_tensor_byte_size(const rn_tensor *tensor);
/* The buffer (owned by the tensor or the caller who wrapped it). */
RN_API void *rn_tensor_data(const rn_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_TENSOR_H */
