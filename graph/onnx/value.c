/* SequenceProto, MapProto and OptionalProto -> graph_tensor values (the backend tests'
 * .pb files for sequence and optional inputs and outputs).
 *
 * Debian's onnx.proto lacks onnx-data.proto, where these two messages live,
 * so they are decoded here from the wire format; their tensors are ordinary
 * TensorProto messages that protobuf-c unpacks. The messages (onnx-data.proto):
 *
 *   SequenceProto { 1 name, 2 elem_type, 3 tensor_values (repeated TensorProto),
 *                   4 sparse_tensor_values, 5 sequence_values, 6 map_values,
 *                   7 optional_values }
 *   OptionalProto { 1 name, 2 elem_type, 3 tensor_value, 4 sparse_tensor_value,
 *                   5 sequence_value, 6 map_value, 7 optional_value }
 *   MapProto      { 1 name, 2 key_type, 3 keys (repeated int64),
 *                   4 string_keys (repeated bytes), 5 values (SequenceProto) }
 *
 * with elem_type 0 UNDEFINED, 1 TENSOR, 2 SPARSE_TENSOR, 3 SEQUENCE, 4 MAP,
 * 5 OPTIONAL. Only what graph_tensor carries is accepted: sequences of
 * tensors or of maps, maps with string or int64 keys whose values are a
 * sequence of one-element tensors (what onnx.numpy_helper.from_dict
 * writes), and optionals of a tensor or of a sequence of tensors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx/onnx_internal.h"
#include "graph/onnx/onnx_reader.h"

enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SEQUENCE = 3, ELEM_MAP = 4 };

/* One field of a message: its number, wire type, and for length-delimited
 * fields the bytes; for varints the value. */
typedef struct wire_field {
    uint32_t number;
    int wire_type;
    uint64_t varint;
    const uint8_t *bytes;
    size_t len;
} wire_field;

/* Reads the field at *pos; false with an error set when malformed. */
static bool next_field(const uint8_t *p, size_t len, size_t *pos, const char *what, wire_field *f)
{
    uint64_t key, n;
    size_t at = *pos;
    if (!onnx_read_varint(p, len, pos, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
        goto bad;
    memset(f, 0, sizeof *f);
    f->number = (uint32_t)(key >> 3);
    f->wire_type = (int)(key & 7);
    switch (f->wire_type) {
    case 0:
        if (!onnx_read_varint(p, len, pos, &f->varint))
            goto bad;
        return true;
    case 1:
        if (len - *pos < 8)
            goto bad;
        *pos += 8;
        return true;
    case 5:
        if (len - *pos < 4)
            goto bad;
        *pos += 4;
        return true;
    case 2:
        if (!onnx_read_varint(p, len, pos, &n) || n > len - *pos)
            goto bad;
        f->bytes = p + *pos;
        f->len = (size_t)n;
        *pos += (size_t)n;
        return true;
    default:
        break;
    }
bad:
    rn_set_error(RN_PARSE_ERROR, "not a valid %s: malformed field at byte %zu", what, at);
    return false;
}

/* Unpacks one TensorProto message into an owned tensor. */
static rn_status read_tensor(const uint8_t *bytes, size_t len, const char *base_dir,
                             graph_tensor *out)
{
    if (!onnx_wire_depth_ok(&onnx__tensor_proto__descriptor, bytes, len, ONNX_MAX_MESSAGE_DEPTH))
        return rn_set_error(RN_PARSE_ERROR, "a tensor's messages nest too deep");
    onnx_unpack_allocator alloc;
    onnx_unpack_allocator_init(&alloc);
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(&alloc.base, len, bytes);
    if (p == NULL && alloc.failed)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory unpacking a TensorProto (%zu bytes)",
                            len);
    if (p == NULL)
        return rn_set_error(RN_PARSE_ERROR, "not a valid TensorProto (%zu bytes)", len);
    rn_status st = onnx_tensor_take(p, base_dir, out);
    onnx__tensor_proto__free_unpacked(p, NULL);
    return st;
}

static rn_status unsupported_elem(const char *what, uint32_t field)
{
    static const char *const names[] = {"",          "",     "",         "", "sparse tensors",
                                        "sequences", "maps", "optionals"};
    return rn_set_error(RN_UNSUPPORTED, "%s holding %s is not supported", what,
                        field < 8 ? names[field] : "unknown values");
}

static rn_status read_map(const uint8_t *p, size_t len, const char *base_dir, graph_tensor *out);

static rn_status read_sequence(const uint8_t *p, size_t len, const char *base_dir,
                               graph_tensor *out)
{
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE};
    uint64_t elem_type = ELEM_UNDEFINED;
    size_t pos = 0;
    rn_status st = RN_OK;
    while (pos < len && st == RN_OK) {
        wire_field f;
        if (!next_field(p, len, &pos, "SequenceProto", &f)) {
            st = RN_PARSE_ERROR;
            break;
        }
        if (f.number == 2 && f.wire_type == 0) {
            elem_type = f.varint;
        } else if (f.number == 3 && f.wire_type == 2) {
            graph_tensor item;
            if (seq.kind == GRAPH_KIND_SEQUENCE_MAP) {
                st = rn_set_error(RN_PARSE_ERROR,
                                  "sequence item %zu is a tensor, the items "
                                  "before it maps",
                                  seq.n_items);
                break;
            }
            if ((st = read_tensor(f.bytes, f.len, base_dir, &item)) != RN_OK) {
                st = rn_wrap_error(st, "sequence item %zu: ", seq.n_items);
                break;
            }
            if (seq.n_items > 0 && item.type != seq.type) {
                st = rn_set_error(RN_TYPE_MISMATCH,
                                  "sequence item %zu is %s, the items before it %s", seq.n_items,
                                  rn_element_type_name(item.type), rn_element_type_name(seq.type));
                graph_tensor_release(&item);
                break;
            }
            seq.type = item.type;
            if ((st = graph_sequence_append(&seq, &item)) != RN_OK)
                graph_tensor_release(&item);
        } else if (f.number == 6 && f.wire_type == 2) {
            graph_tensor item;
            if (seq.n_items > 0 && seq.kind != GRAPH_KIND_SEQUENCE_MAP) {
                st = rn_set_error(RN_PARSE_ERROR,
                                  "sequence item %zu is a map, the items before "
                                  "it tensors",
                                  seq.n_items);
                break;
            }
            if ((st = read_map(f.bytes, f.len, base_dir, &item)) != RN_OK) {
                st = rn_wrap_error(st, "sequence item %zu: ", seq.n_items);
                break;
            }
            if (seq.n_items > 0 &&
                (item.type != seq.type || item.items[0].type != seq.items[0].items[0].type)) {
                st = rn_set_error(RN_TYPE_MISMATCH,
                                  "sequence item %zu is a map of %s to %s, the items before it of "
                                  "%s to %s",
                                  seq.n_items, rn_element_type_name(item.items[0].type),
                                  rn_element_type_name(item.type),
                                  rn_element_type_name(seq.items[0].items[0].type),
                                  rn_element_type_name(seq.type));
                graph_tensor_release(&item);
                break;
            }
            seq.type = item.type;
            seq.kind = GRAPH_KIND_SEQUENCE_MAP;
            if ((st = graph_sequence_append(&seq, &item)) != RN_OK)
                graph_tensor_release(&item);
        } else if (f.number >= 4 && f.number <= 7) {
            st = unsupported_elem("a sequence", f.number);
        }
        /* name (1) and unknown fields are skipped */
    }
    if (st == RN_OK && elem_type != ELEM_UNDEFINED && elem_type != ELEM_TENSOR &&
        elem_type != ELEM_MAP)
        st = rn_set_error(RN_UNSUPPORTED,
                          "a sequence of element kind %llu is not supported (only of tensors "
                          "and maps)",
                          (unsigned long long)elem_type);
    if (st == RN_OK &&
        ((elem_type == ELEM_MAP && seq.kind != GRAPH_KIND_SEQUENCE_MAP && seq.n_items > 0) ||
         (elem_type == ELEM_TENSOR && seq.kind == GRAPH_KIND_SEQUENCE_MAP)))
        st = rn_set_error(RN_PARSE_ERROR, "a sequence's items do not match its elem_type");
    if (st == RN_OK && elem_type == ELEM_MAP)
        seq.kind = GRAPH_KIND_SEQUENCE_MAP;
    if (st != RN_OK) {
        graph_tensor_release(&seq);
        return st;
    }
    *out = seq;
    return RN_OK;
}

/* Appends the keys of field 3 (int64, packed or not) to an array. */
static rn_status add_int_keys(const wire_field *f, int64_t **keys, size_t *n, size_t *cap)
{
    const uint8_t *p = f->bytes;
    size_t len = f->len, pos = 0;
    uint64_t one = f->varint;
    bool packed = f->wire_type == 2;
    if (!packed && f->wire_type != 0)
        return rn_set_error(RN_PARSE_ERROR, "a MapProto's keys are malformed");
    do {
        if (packed && !onnx_read_varint(p, len, &pos, &one))
            return rn_set_error(RN_PARSE_ERROR, "a MapProto's packed keys are malformed");
        if (*n == *cap) {
            size_t c = *cap ? 2 * *cap : 8;
            int64_t *q = realloc(*keys, c * sizeof *q);
            if (q == NULL)
                return rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map's keys");
            *keys = q;
            *cap = c;
        }
        (*keys)[(*n)++] = (int64_t)one;
    } while (packed && pos < len);
    return RN_OK;
}

/* The values of a map: a sequence of one-element tensors, made one 1-D tensor. */
static rn_status flatten_values(const graph_tensor *seq, graph_tensor *out)
{
    size_t n = seq->n_items, esize = rn_element_type_size(seq->type);
    if (seq->kind != GRAPH_KIND_SEQUENCE || (n > 0 && seq->type != RN_STRING && esize == 0))
        return rn_set_error(RN_UNSUPPORTED, "a map's values must be tensors of a numeric or "
                                            "string type");
    graph_tensor v = {.type = seq->type, .rank = 1, .dims = {(int64_t)n}};
    size_t bytes = n * (seq->type == RN_STRING ? sizeof(char *) : esize);
    v.nbytes = bytes;
    if ((v.data = calloc(1, bytes ? bytes : 1)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map's values");
    for (size_t i = 0; i < n; i++) {
        const graph_tensor *it = &seq->items[i];
        if (graph_tensor_count(it) != 1) {
            graph_tensor_release(&v);
            return rn_set_error(RN_PARSE_ERROR, "map value %zu has %zu elements, expected one", i,
                                graph_tensor_count(it));
        }
        if (seq->type != RN_STRING) {
            memcpy((char *)v.data + i * esize, it->data, esize);
        } else if ((((char **)v.data)[i] =
                        strdup(*(char *const *)it->data != NULL ? *(char *const *)it->data : "")) ==
                   NULL) {
            graph_tensor_release(&v);
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map's values");
        }
    }
    *out = v;
    return RN_OK;
}

static rn_status read_map(const uint8_t *p, size_t len, const char *base_dir, graph_tensor *out)
{
    uint64_t key_type = 0;
    int64_t *ints = NULL;
    char **strs = NULL;
    size_t n_ints = 0, cap_ints = 0, n_strs = 0, cap_strs = 0;
    graph_tensor values = {0};
    bool has_values = false;
    size_t pos = 0;
    rn_status st = RN_OK;
    while (pos < len && st == RN_OK) {
        wire_field f;
        if (!next_field(p, len, &pos, "MapProto", &f)) {
            st = RN_PARSE_ERROR;
            break;
        }
        if (f.number == 2 && f.wire_type == 0) {
            key_type = f.varint;
        } else if (f.number == 3) {
            st = add_int_keys(&f, &ints, &n_ints, &cap_ints);
        } else if (f.number == 4 && f.wire_type == 2) {
            if (n_strs == cap_strs) {
                size_t c = cap_strs ? 2 * cap_strs : 8;
                char **q = realloc(strs, c * sizeof *q);
                if (q == NULL) {
                    st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map's keys");
                    break;
                }
                strs = q;
                cap_strs = c;
            }
            if ((strs[n_strs] = strndup((const char *)f.bytes, f.len)) == NULL)
                st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map's keys");
            else
                n_strs++;
        } else if (f.number == 5 && f.wire_type == 2) {
            graph_tensor_release(&values);
            st = read_sequence(f.bytes, f.len, base_dir, &values);
            has_values = st == RN_OK;
        }
    }
    graph_tensor map = {.kind = GRAPH_KIND_MAP};
    if (st == RN_OK && key_type != RN_STRING && key_type != RN_I64)
        st = rn_set_error(RN_UNSUPPORTED,
                          "a map with keys of element type %llu is not supported (only string "
                          "and int64 keys)",
                          (unsigned long long)key_type);
    if (st == RN_OK &&
        ((key_type == RN_STRING && n_ints > 0) || (key_type == RN_I64 && n_strs > 0)))
        st = rn_set_error(RN_PARSE_ERROR, "a map's keys are in the field of another key type");
    size_t n_keys = key_type == RN_STRING ? n_strs : n_ints;
    if (st == RN_OK && (map.items = calloc(2, sizeof *map.items)) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map");
    if (st == RN_OK) {
        map.n_items = 2;
        graph_tensor *k = &map.items[0];
        *k =
            (graph_tensor){.type = (rn_element_type)key_type, .rank = 1, .dims = {(int64_t)n_keys}};
        if (key_type == RN_STRING) {
            k->data = strs != NULL ? (void *)strs : calloc(1, 1);
            k->nbytes = n_strs * sizeof(char *);
            strs = NULL;
            n_strs = 0;
        } else {
            k->data = ints != NULL ? (void *)ints : calloc(1, 1);
            k->nbytes = n_ints * sizeof(int64_t);
            ints = NULL;
        }
        if (k->data == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading a map");
    }
    if (st == RN_OK && has_values)
        st = flatten_values(&values, &map.items[1]);
    else if (st == RN_OK)
        map.items[1] = (graph_tensor){.type = RN_F32, .rank = 1, .data = calloc(1, 1)};
    if (st == RN_OK && map.items[1].dims[0] != (int64_t)n_keys)
        st = rn_set_error(RN_PARSE_ERROR, "a map has %zu keys and %lld values", n_keys,
                          (long long)map.items[1].dims[0]);
    map.type = map.items != NULL ? map.items[1].type : RN_UNDEFINED;
    char why[160];
    if (st == RN_OK && !graph_map_check(&map, why, sizeof why))
        st = rn_set_error(RN_PARSE_ERROR, "%s", why);
    for (size_t i = 0; i < n_strs; i++)
        free(strs[i]);
    free(strs);
    free(ints);
    graph_tensor_release(&values);
    if (st != RN_OK) {
        graph_tensor_release(&map);
        return st;
    }
    *out = map;
    return RN_OK;
}

static rn_status read_optional(const uint8_t *p, size_t len, const char *base_dir,
                               graph_tensor *out)
{
    graph_tensor value = {0};
    bool has_value = false;
    uint64_t elem_type = ELEM_UNDEFINED;
    size_t pos = 0;
    rn_status st = RN_OK;
    while (pos < len && st == RN_OK) {
        wire_field f;
        if (!next_field(p, len, &pos, "OptionalProto", &f)) {
            st = RN_PARSE_ERROR;
            break;
        }
        if (f.number == 2 && f.wire_type == 0) {
            elem_type = f.varint;
        } else if ((f.number == 3 || f.number == 5) && f.wire_type == 2) {
            graph_tensor_release(&value); /* a repeated field: the last one wins */
            st = f.number == 3 ? read_tensor(f.bytes, f.len, base_dir, &value)
                               : read_sequence(f.bytes, f.len, base_dir, &value);
            has_value = st == RN_OK;
        } else if (f.number == 4 || f.number == 6 || f.number == 7) {
            st = unsupported_elem("an optional", f.number);
        }
    }
    if (st == RN_OK && elem_type != ELEM_UNDEFINED && elem_type != ELEM_TENSOR &&
        elem_type != ELEM_SEQUENCE)
        st = rn_set_error(RN_UNSUPPORTED,
                          "an optional of element kind %llu is not supported (only of tensors "
                          "and sequences)",
                          (unsigned long long)elem_type);
    if (st == RN_OK && has_value &&
        ((elem_type == ELEM_TENSOR && value.kind != GRAPH_KIND_TENSOR) ||
         (elem_type == ELEM_SEQUENCE && value.kind != GRAPH_KIND_SEQUENCE)))
        st = rn_set_error(RN_PARSE_ERROR, "an optional's value does not match its elem_type");
    if (st != RN_OK) {
        graph_tensor_release(&value);
        return st;
    }
    if (!has_value) {
        /* No value: the optional itself, of the kind elem_type names. */
        memset(&value, 0, sizeof value);
        value.kind =
            elem_type == ELEM_SEQUENCE ? GRAPH_KIND_OPTIONAL_SEQUENCE : GRAPH_KIND_OPTIONAL;
    }
    *out = value;
    return RN_OK;
}

rn_status onnx_read_value_memory(const void *data, size_t size, const char *base_dir,
                                 graph_kind kind, graph_tensor *out)
{
    if (data == NULL && size > 0)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_value_memory: data is NULL");
    if (out == NULL)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_value_memory: out is NULL");
    switch (kind) {
    case GRAPH_KIND_TENSOR:
        return onnx_read_tensor_memory(data, size, base_dir, out);
    case GRAPH_KIND_SEQUENCE:
    case GRAPH_KIND_SEQUENCE_MAP: {
        graph_tensor v;
        rn_status st = read_sequence(data, size, base_dir, &v);
        if (st != RN_OK)
            return st;
        if (v.n_items == 0 && kind == GRAPH_KIND_SEQUENCE_MAP)
            v.kind = kind; /* an empty sequence is what it is declared */
        if (v.kind != kind) {
            graph_tensor_release(&v);
            return rn_set_error(RN_TYPE_MISMATCH, "the value is a %s, expected a %s",
                                graph_kind_name(v.kind), graph_kind_name(kind));
        }
        *out = v;
        return RN_OK;
    }
    case GRAPH_KIND_MAP:
        return read_map(data, size, base_dir, out);
    case GRAPH_KIND_OPTIONAL:
    case GRAPH_KIND_OPTIONAL_SEQUENCE: {
        graph_tensor v;
        rn_status st = read_optional(data, size, base_dir, &v);
        if (st != RN_OK)
            return st;
        /* The optional's own declaration decides what an absent one is, and
         * what a present one may hold. */
        graph_kind elem = graph_kind_element(kind);
        if (graph_kind_is_optional(v.kind)) {
            v.kind = kind;
        } else if (v.kind != elem) {
            graph_tensor_release(&v);
            return rn_set_error(RN_TYPE_MISMATCH, "the optional holds a %s, expected a %s",
                                graph_kind_name(v.kind), graph_kind_name(elem));
        }
        *out = v;
        return RN_OK;
    }
    }
    return rn_set_error(RN_INVALID_ARG, "onnx_read_value_memory: unknown kind %d", (int)kind);
}

rn_status onnx_read_value_file(const char *path, graph_kind kind, graph_tensor *out)
{
    if (path == NULL)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_value_file: path is NULL");
    onnx_file f;
    rn_status st = onnx_file_map(path, &f);
    if (st != RN_OK)
        return st;
    char *dir = onnx_dirname(path);
    if (dir == NULL) {
        onnx_file_unmap(&f);
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    }
    st = onnx_read_value_memory(f.data, f.size, dir, kind, out);
    onnx_file_unmap(&f);
    free(dir);
    if (st != RN_OK)
        return rn_wrap_error(st, "'%s': ", path);
    return RN_OK;
}
