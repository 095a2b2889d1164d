/* Graph serialization, the export container and the compiled-model cache files.
 *
 * Three layers, each usable alone:
 *
 * - graph_serialize / graph_deserialize: a compact, versioned, little-endian
 *   binary encoding of a whole graph (values, constants, nodes, attributes,
 *   subgraphs, fused names, inputs, outputs, opset, IR version, name). The
 *   encoding of a graph is deterministic, so it doubles as the input of
 *   graph_hash. Decoding trusts nothing: every length is checked against the
 *   bytes that remain before anything is allocated, value references are
 *   checked, subgraph nesting is limited, and a malformed input is
 *   RN_PARSE_ERROR naming what is wrong and its byte offset.
 *
 * - graph_blob_write / graph_blob_read: the export container a compiled model
 *   is saved in: magic, format version, device name, device architecture,
 *   compile properties, the (transformed) graph with its weights, and a
 *   checksum of everything before it. Reading checks each and says which check
 *   failed. The layout is in docs/export.md.
 *
 * - graph_hash and graph_cache_*: cache keys and atomic cache files for
 *   CACHE_DIR.
 *
 * graph/ knows no devices: device and architecture are opaque strings the
 * plugin chooses. The encoding assumes a little-endian host (checked at
 * compile time), which is every host runnel builds on.
 */
#ifndef RUNNEL_GRAPH_SERIALIZE_H
#define RUNNEL_GRAPH_SERIALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kit.h"
#include "graph/graph.h"
#include "runnel/status.h"

/* A malloc'ed byte buffer handed to the caller. Release with
 * graph_buffer_release (free(data) is equivalent). */
typedef struct graph_buffer {
    uint8_t *data;
    size_t size;
} graph_buffer;

/* Frees the bytes and clears the buffer. NULL is a no-op. */
void graph_buffer_release(graph_buffer *b);

/* ---- graph encoding ---- */

/* Version of the graph encoding (the payload of a blob); bumped on any change
 * of layout or meaning. */
#define GRAPH_SERIAL_VERSION 1u

/* Subgraphs nested deeper than this are refused by both directions. */
#define GRAPH_SERIAL_MAX_DEPTH 64

/* Encodes g (with every subgraph) into *out, which the caller releases.
 * Node inputs that name values of enclosing graphs are encoded by name and
 * resolved by name when read. A graph that cannot be encoded faithfully (a
 * node reading a value of no enclosing scope, a NULL result, a constant whose
 * byte count disagrees with its dims) is RN_INVALID_ARG naming the node or
 * value. *out is written only on success. */
rn_status graph_serialize(const graph *g, graph_buffer *out);

/* Decodes `size` bytes at `data` (not kept) into a new graph the caller frees
 * with graph_free. The result is sorted (graph_sort) and validated
 * (graph_validate). Malformed bytes are RN_PARSE_ERROR with a message naming
 * the offending field and its byte offset; a node whose op this build does
 * not know is RN_UNSUPPORTED (from graph_validate). Nothing leaks on any
 * error and *out is written only on success. */
rn_status graph_deserialize(const void *data, size_t size, graph **out);

/* ---- the export container ---- */

#define GRAPH_BLOB_MAGIC          "RNNLBLOB" /* the first 8 bytes of every blob */
#define GRAPH_BLOB_FORMAT_VERSION 1u

/* The header of a blob. For graph_blob_write the caller fills device, arch
 * and the properties (format_version is ignored: a blob is always written in
 * GRAPH_BLOB_FORMAT_VERSION). graph_blob_read fills every field with copies
 * the caller releases with graph_blob_header_release. */
typedef struct graph_blob_header {
    uint32_t format_version;
    const char *device; /* device name, "REF" */
    const char *arch;   /* device architecture, plugin-defined ("x86_64", "sm_90") */
    size_t n_props;     /* compile properties the model was compiled with */
    const char *const *keys;
    const char *const *values;
} graph_blob_header;

/* Frees what graph_blob_read put into *h and clears it. NULL is a no-op. */
void graph_blob_header_release(graph_blob_header *h);

/* What graph_blob_read requires of a blob. */
typedef struct graph_blob_expect {
    const char *device; /* NULL: any device */
    const char *arch;   /* NULL: any architecture */
    /* Skip the checksum check. Only for tools and tests: the decoder's own
     * checks still hold, so a corrupt blob is still an error or a valid graph. */
    bool skip_checksum;
} graph_blob_expect;

/* Writes a blob of g with the header's device, arch and properties into
 * *out (released by the caller). Strings must be non-NULL (arch may be "").
 * *out is written only on success. */
rn_status graph_blob_write(const graph_blob_header *hdr, const graph *g, graph_buffer *out);

/* Reads a blob. The checks, in order, each with its own message:
 *   - length and magic          RN_PARSE_ERROR "not a runnel export blob" / "truncated"
 *   - format version            RN_UNSUPPORTED "format version X, this build reads Y"
 *   - checksum (unless skipped) RN_PARSE_ERROR "checksum mismatch"
 *   - device (when expected)    RN_UNSUPPORTED "blob is for device X, not Y"
 *   - architecture (when expected) RN_UNSUPPORTED
 *                               "blob is for device architecture 'X', not 'Y'"
 *   - header fields and payload RN_PARSE_ERROR naming the field and byte offset
 * `expect` may be NULL (check nothing but the format). On success *hdr_out
 * (when non-NULL) receives the header and *g_out (when non-NULL) the graph,
 * sorted and validated; with g_out NULL the payload is not decoded. Nothing
 * is written on failure. */
rn_status graph_blob_read(const void *data, size_t size, const graph_blob_expect *expect,
                          graph_blob_header *hdr_out, graph **g_out);

/* ---- hashing and the cache ---- */

/* XXH64 of `size` bytes with `seed` (the checksum of blobs). Stable across
 * hosts and builds. */
RN_KIT uint64_t graph_hash_bytes(const void *data, size_t size, uint64_t seed);

/* A stable 64-bit cache key for compiling g for (device, arch) with the
 * given properties: a hash of g's encoding, the device, the architecture
 * (NULL counts as "") and the key/value pairs, the latter independent of
 * their order. The caller passes only the properties that change what
 * compile produces. Fails where graph_serialize would, or on a NULL key or
 * value. */
rn_status graph_hash(const graph *g, size_t n_props, const char *const *keys,
                     const char *const *values, const char *device, const char *arch,
                     uint64_t *out);

/* Writes "<dir>/<key as 16 hex digits>.rnblob" into buf. RN_INVALID_ARG when
 * it does not fit in `size` bytes. */
rn_status graph_cache_path(const char *dir, uint64_t key, char *buf, size_t size);

/* Stores `size` bytes as the cache entry for key, atomically: the bytes go to
 * a temporary file in `dir` (a hidden name that is never an entry), are
 * fsync'ed, and the file is renamed over the entry, so a reader sees the old
 * entry, no entry or the whole new one, never a part. `dir` is created when
 * missing (with its parents). An existing entry is replaced. Errors are
 * RN_IO_ERROR naming the path and the system's reason; no temporary file is
 * left behind. */
RN_KIT rn_status graph_cache_store(const char *dir, uint64_t key, const void *bytes, size_t size);

/* Reads the cache entry for key into *bytes (malloc'ed, the caller frees) and
 * *size. No entry is RN_NOT_FOUND; a read failure RN_IO_ERROR. Whether the
 * bytes are a usable blob is for graph_blob_read to say; on a bad or stale
 * entry the caller recompiles and stores again. */
RN_KIT rn_status graph_cache_load(const char *dir, uint64_t key, void **bytes, size_t *size);

#endif /* RUNNEL_GRAPH_SERIALIZE_H */
