/* Internals shared by the files of the ONNX reader; not for use outside
 * graph/onnx/. */
#ifndef RUNNEL_GRAPH_ONNX_INTERNAL_H
#define RUNNEL_GRAPH_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/graph.h"
#include "runnel/status.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

/* ---- files (file.c) ---- */

/* The bytes of a whole file, mapped read-only (or a heap buffer for an empty
 * file). A missing, unreadable or non-regular file is RN_IO_ERROR naming the
 * path. Release with onnx_file_unmap. */
typedef struct onnx_file {
    void *data;
    size_t size;
    bool mapped;
} onnx_file;

rn_status onnx_file_map(const char *path, onnx_file *out);
void onnx_file_unmap(onnx_file *f);

/* The folder part of `path` ("." when it has none), malloc'ed; NULL when out
 * of memory. */
char *onnx_dirname(const char *path);

/* ---- wire data (wire.c) ---- */

/* Reads the varint at p[*pos] (of len bytes) and moves *pos past it; false
 * when the data ends inside it or it is longer than 10 bytes. */
bool onnx_read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out);

/* Subgraphs nest this deep at most; deeper is refused before the C stack is. */
#define ONNX_MAX_DEPTH 64

/* Protobuf messages nest at most this deep in a model: 3 levels per subgraph
 * (graph, node, attribute) leave room for ONNX_MAX_DEPTH subgraphs. */
#define ONNX_MAX_MESSAGE_DEPTH 256

/* False when the wire data of a `desc` message nests messages deeper than
 * max_depth; true otherwise, malformed or not (protobuf-c judges the rest).
 * Run before protobuf-c's unpack, which recurses without a limit. */
bool onnx_wire_depth_ok(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
                        int max_depth);

/* An allocator for protobuf-c's unpack, which returns NULL both for malformed
 * bytes and for a failed allocation: `failed` tells them apart. Blocks come
 * from malloc, so free_unpacked(m, NULL) frees them. */
typedef struct onnx_unpack_allocator {
    ProtobufCAllocator base;
    bool failed;
} onnx_unpack_allocator;

/* Readies *a for one unpack; pass &a->base to it. */
void onnx_unpack_allocator_init(onnx_unpack_allocator *a);

/* ---- names (names.c) ---- */

/* A string -> pointer hash map that owns copies of its keys. Built per graph
 * while reading, so that name look-ups stay O(1) on graphs of many nodes. */
typedef struct onnx_name_map {
    size_t cap;   /* slots, a power of two (0 before the first insertion) */
    size_t count; /* keys present */
    char **keys;
    void **vals;
} onnx_name_map;

void onnx_name_map_free(onnx_name_map *m);
/* The value stored for `key`, or NULL. */
void *onnx_name_map_get(const onnx_name_map *m, const char *key);
bool onnx_name_map_has(const onnx_name_map *m, const char *key);
/* Inserts or replaces `key`. RN_OUT_OF_MEMORY is the only error. */
rn_status onnx_name_map_put(onnx_name_map *m, const char *key, void *val);

/* ---- element types and tensors (tensor.c) ---- */

/* Maps an ONNX TensorProto.DataType number to the runtime's element type.
 * `what` names the value or tensor in the error: RN_UNSUPPORTED for an ONNX
 * type the runtime lacks (complex, float8, 4-bit), RN_PARSE_ERROR for a number
 * ONNX does not define. UNDEFINED (0) is accepted only when `allow_undefined`. */
rn_status onnx_element_type(int32_t data_type, const char *what, bool allow_undefined,
                            rn_element_type *out);

/* As onnx_tensor_from_proto, but may take over the proto's raw_data buffer
 * instead of copying it (the proto then holds no raw_data), which halves the
 * peak memory of reading large initializers. */
rn_status onnx_tensor_take(Onnx__TensorProto *proto, const char *base_dir, graph_tensor *out);

/* ---- graphs (model.c, attr.c) ---- */

/* Reads a TypeProto (of the value named vname, for errors) into *out: its
 * kind, element type and shape, unknown parts left RN_UNDEFINED / rank -1;
 * *known is false when the proto says nothing (no type at all). Maps, sparse
 * tensors and nested sequences or optionals are RN_UNSUPPORTED. */
rn_status onnx_read_type(const Onnx__TypeProto *tp, const char *vname, graph_type *out,
                         bool *known);

/* Errors inside subgraphs are prefixed with where they happened ("node 'x'
 * (If): attribute 'then_branch': subgraph 'g': ") for this many levels; below
 * that the prefixes would push the cause out of the bounded message. */
#define ONNX_WRAP_DEPTH 8

/* The model-wide state a graph and its subgraphs are read with. */
typedef struct onnx_ctx {
    const char *base_dir; /* folder of external data; NULL refuses it */
    const Onnx__ModelProto *model;
    int default_opset;
    int ir_version;
    int depth; /* nesting level of the graph being read (0: the main graph) */
} onnx_ctx;

/* Reads one GraphProto into a new graph whose enclosing graph is `parent`
 * (NULL for the main graph); the result is sorted and validated but its
 * shapes are not inferred. The proto is not const because initializers may
 * give their raw_data buffers to the graph. */
rn_status onnx_read_graph(const onnx_ctx *ctx, Onnx__GraphProto *proto, graph *parent, graph **out);

/* Converts one AttributeProto of `node` (already added to g) into *out.
 * Subgraphs are read with g as their enclosing graph. */
rn_status onnx_read_attr(const onnx_ctx *ctx, graph *g, const graph_node *node,
                         Onnx__AttributeProto *proto, graph_attr *out);

/* Builds the constant tensor of a Constant node from its single attribute. */
rn_status onnx_constant_value(const onnx_ctx *ctx, const Onnx__NodeProto *node, const char *name,
                              graph_tensor *out);

/* ---- model-local functions (function.c) ---- */

/* The function of model m that `call` calls (its domain, op_type and
 * overload), or NULL. */
const Onnx__FunctionProto *onnx_find_function(const Onnx__ModelProto *m,
                                              const Onnx__NodeProto *call);

/* What inlining a graph's function calls allocated, and the node list it
 * replaced (put back by onnx_inlined_free). */
typedef struct onnx_inlined {
    Onnx__GraphProto *graph; /* NULL when nothing was inlined */
    Onnx__NodeProto **orig_nodes;
    size_t orig_n_nodes;
    size_t n_blocks, cap_blocks;
    void **blocks; /* node copies, name strings and arrays */
    size_t n_attrs, cap_attrs;
    Onnx__AttributeProto **attrs; /* unpacked attribute copies */
} onnx_inlined;

/* Replaces, in g's node list, every call of one of m's functions by the
 * function's body (nested calls too), renamed for the call; *out records
 * what to undo. Recursion is RN_UNSUPPORTED naming the function; on error
 * g is unchanged. Undo with onnx_inlined_free before g is freed. */
rn_status onnx_inline_functions(const Onnx__ModelProto *m, Onnx__GraphProto *g, onnx_inlined *out);
void onnx_inlined_free(onnx_inlined *x, Onnx__GraphProto *g);

#endif /* RUNNEL_GRAPH_ONNX_INTERNAL_H */
