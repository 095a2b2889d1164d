/* Internals shared by the files of graph serialization; not for use outside
 * graph/serialize_*.c. The byte layouts are described in docs/export.md:
 *
 *   serialize_bytes.c   writing and reading the fields every layout is made of
 *   serialize_encode.c  graph -> bytes (graph_serialize)
 *   serialize_decode.c  bytes -> graph (graph_deserialize)
 *   serialize_blob.c    the export container (graph_blob_write / graph_blob_read)
 *   serialize_cache.c   XXH64, cache keys (graph_hash) and cache files
 */
#ifndef RUNNEL_GRAPH_SERIALIZE_INTERNAL_H
#define RUNNEL_GRAPH_SERIALIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "graph/graph.h"
#include "graph/serialize.h"
#include "runnel/status.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "graph serialization copies tensor data as is: it needs a little-endian host"
#endif

/* The first 4 bytes of the graph encoding (the payload of a blob). */
#define GRAPH_SERIAL_TAG "RNGR"

/* ---- writing (serialize_bytes.c) ---- */

/* Where encoded bytes go. The encoder runs twice for a buffer: once with
 * data NULL to count the bytes, once to write them into an allocation of
 * exactly that size, so weights are copied once and never realloc'ed. For a
 * hash, the bytes stream into `hash` and are not kept. The first error
 * sticks: later puts do nothing. */
typedef struct serial_sink {
    uint8_t *data; /* NULL: count (and hash) only */
    size_t cap;
    size_t size;
    XXH64_state_t *hash;
    rn_status st;
} serial_sink;

/* Appends n bytes (copied, hashed and counted as the sink says). */
void serial_put(serial_sink *s, const void *p, size_t n);

static inline void serial_put_u8(serial_sink *s, uint8_t x)
{
    serial_put(s, &x, 1);
}

static inline void serial_put_u32(serial_sink *s, uint32_t x)
{
    serial_put(s, &x, 4); /* little-endian host */
}

static inline void serial_put_u64(serial_sink *s, uint64_t x)
{
    serial_put(s, &x, 8);
}

/* A string: u32 byte length, then the bytes without a terminator. NULL is "". */
void serial_put_str(serial_sink *s, const char *str);

/* ---- reading (serialize_bytes.c) ---- */

/* Bytes under decoding. `base` is the offset of data[0] in the caller's
 * buffer, so messages give offsets into the whole blob. The first error
 * sticks; the getters then return zeros and the callers unwind. */
typedef struct serial_reader {
    const uint8_t *data;
    size_t size;
    size_t pos;
    size_t base;
    const char *what; /* "serialized graph", "export blob" */
    int depth;
    rn_status st;
} serial_reader;

/* Minimum encoded sizes, used to refuse counts the remaining bytes cannot
 * hold before allocating anything for them. */
enum {
    SERIAL_MIN_VALUE = 13, /* name length, type, rank, flags */
    SERIAL_MIN_NODE = 32,  /* 3 string lengths, opset, 4 counts */
    SERIAL_MIN_ATTR = 8,   /* name length, type */
    SERIAL_MIN_TENSOR = 8, /* type, rank (a STRING scalar adds 4, others 8) */
    SERIAL_MIN_GRAPH = 32, /* name length, opset, ir_version, 5 counts */
    SERIAL_MIN_STRING = 4, /* length */
    SERIAL_MIN_PROP = 8,   /* two string lengths */
};

static inline uint64_t serial_load64(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t serial_load32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

static inline size_t serial_remaining(const serial_reader *r)
{
    return r->size - r->pos;
}

/* Records a decoding error at byte `at` of r (the first one wins: a later
 * call returns the recorded status and changes nothing). The message is
 * "<what>: <fmt ...> (at byte <base + at>)". */
__attribute__((format(printf, 4, 5))) rn_status serial_fail_at(serial_reader *r, size_t at,
                                                               rn_status st, const char *fmt, ...);

/* A malformed input at the current position. */
#define serial_fail(r, ...) serial_fail_at((r), (r)->pos, RN_PARSE_ERROR, __VA_ARGS__)

/* Points at n bytes to read, or NULL (and an error) when fewer remain. */
const uint8_t *serial_take(serial_reader *r, size_t n, const char *field);

/* Fixed-size fields; 0 after an error. */
uint8_t serial_get_u8(serial_reader *r, const char *field);
uint32_t serial_get_u32(serial_reader *r, const char *field);
uint64_t serial_get_u64(serial_reader *r, const char *field);

/* A presence byte: 0 or 1, anything else is corrupt. */
bool serial_get_flag(serial_reader *r, const char *field);

/* A count of entries that each take at least `min_bytes`: refused when the
 * remaining bytes cannot hold them, so a corrupt count never drives an
 * allocation. */
int serial_get_count(serial_reader *r, const char *field, size_t min_bytes);

/* A malloc'ed NUL-terminated copy of a string field, or NULL on error. */
char *serial_get_str(serial_reader *r, const char *field);

/* ---- the graph encoding (serialize_encode.c, serialize_decode.c) ---- */

/* An element type a value may declare: a known one, or none yet. */
static inline bool serial_type_ok(rn_element_type t)
{
    return t == RN_UNDEFINED || rn_element_type_is_valid(t);
}

/* Elements of a tensor of these dims (0 when a dim is 0); false when a dim is
 * negative or the count overflows. */
static inline bool serial_dims_count(int rank, const int64_t *dims, size_t *out)
{
    size_t n = 1;
    bool zero = false, overflow = false;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return false;
        zero |= dims[i] == 0;
        overflow |= __builtin_mul_overflow(n, (size_t)dims[i], &n);
    }
    *out = zero ? 0 : n;
    return zero || !overflow;
}

/* Writes the payload: tag, encoding version, top-level graph. Errors (a graph
 * that cannot be encoded faithfully) are recorded in s->st. */
void serial_encode_payload(serial_sink *s, const graph *g);

/* Decodes a payload (tag, version, graph) that must fill all of r, and
 * validates the graph. Returns NULL after recording an error in r->st. */
graph *serial_decode_payload(serial_reader *r);

#endif /* RUNNEL_GRAPH_SERIALIZE_INTERNAL_H */
