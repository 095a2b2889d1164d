/* SequenceProto and OptionalProto -> graph_tensor values (the backend tests'
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
 *
 * with elem_type 0 UNDEFINED, 1 TENSOR, 2 SPARSE_TENSOR, 3 SEQUENCE, 4 MAP,
 * 5 OPTIONAL. Only what graph_tensor carries is accepted: sequences of
 * tensors, and optionals of a tensor or of such a sequence. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx/onnx_internal.h"
#include "graph/onnx/onnx_reader.h"

enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SEQUENCE = 3 };

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
        } else if (f.number >= 4 && f.number <= 7) {
            st = unsupported_elem("a sequence", f.number);
        }
        /* name (1) and unknown fields are skipped */
    }
    if (st == RN_OK && elem_type != ELEM_UNDEFINED && elem_type != ELEM_TENSOR)
        st = rn_set_error(RN_UNSUPPORTED,
                          "a sequence of element kind %llu is not supported (only of tensors)",
                          (unsigned long long)elem_type);
    if (st != RN_OK) {
        graph_tensor_release(&seq);
        return st;
    }
    *out = seq;
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
        return read_sequence(data, size, base_dir, out);
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
