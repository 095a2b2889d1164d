/* The ONNX reader: ModelProto -> graph, TensorProto -> graph_tensor.
 *
 * What is read and what is refused is listed in docs/onnx.md. In short: a
 * model's main graph with its nodes, attributes (subgraphs included),
 * initializers (inline or in external files), Constant nodes (folded into
 * constant values) and declared types and shapes. Every read ends with
 * graph_sort, graph_validate and graph_infer_shapes, so a graph that comes out
 * is sorted, structurally valid and carries every shape known at compile time.
 *
 * Bad input never crashes and never leaves anything half-built: each function
 * returns a status, sets rn_last_error() to a message naming the file, node,
 * value or tensor at fault, and writes its out parameter only on success.
 */
#ifndef RUNNEL_GRAPH_ONNX_READER_H
#define RUNNEL_GRAPH_ONNX_READER_H

#include <stddef.h>

#include "graph/graph.h"
#include "runnel/status.h"

/* The generated protobuf-c type (third_party/onnx_proto/onnx.pb-c.h); only
 * onnx_tensor_from_proto needs it, so it is declared, not included. */
struct Onnx__TensorProto;

/* Reads the ModelProto at `path`. External data locations are resolved
 * relative to the folder holding the model. On success *out is a new graph
 * the caller frees with graph_free. A missing or unreadable file is
 * RN_IO_ERROR naming the path; a malformed model is RN_PARSE_ERROR; an op
 * the runtime does not know is RN_UNSUPPORTED naming the node, domain and op. */
rn_status onnx_read_file(const char *path, graph **out);

/* Reads a ModelProto from `size` bytes at `data` (not kept after the call).
 * `base_dir` is the folder external data paths are relative to; NULL means
 * the model may not use external data. Otherwise as onnx_read_file. */
rn_status onnx_read_memory(const void *data, size_t size, const char *base_dir, graph **out);

/* Reads a serialized TensorProto (the backend tests' input_N.pb and
 * output_N.pb) at `path` into *out, which then owns its data (release it with
 * graph_tensor_release). External data is resolved relative to the file's
 * folder. */
rn_status onnx_read_tensor_file(const char *path, graph_tensor *out);

/* As onnx_read_tensor_file, from `size` bytes at `data`; `base_dir` as in
 * onnx_read_memory. */
rn_status onnx_read_tensor_memory(const void *data, size_t size, const char *base_dir,
                                  graph_tensor *out);

/* Reads a serialized value of the kind the model declares for it (the
 * backend tests' .pb files): a TensorProto for a tensor, a SequenceProto for
 * a sequence, an OptionalProto for an optional (the files cannot tell which
 * message they hold, since each also parses as the others). *out then owns
 * what it holds (graph_tensor_release). A sequence's element type is its
 * items' (RN_UNDEFINED when it is empty); an optional with a value is that
 * value, one without is a descriptor of the optional kind with an undefined
 * element type. The caller fills in undefined element types from the
 * model's declaration. */
rn_status onnx_read_value_file(const char *path, graph_kind kind, graph_tensor *out);
rn_status onnx_read_value_memory(const void *data, size_t size, const char *base_dir,
                                 graph_kind kind, graph_tensor *out);

/* Converts one parsed TensorProto into an owned tensor: raw_data
 * (little-endian) or the typed field the ONNX spec assigns to the element
 * type, or external data (data_location EXTERNAL) read from a file relative
 * to `base_dir` (NULL refuses external data; absolute paths and paths that
 * leave base_dir are refused). The data length must match the dims. Errors
 * name the tensor by its name ("(unnamed)" when it has none). This is what the
 * model reader uses for initializers and TENSOR attributes. */
rn_status onnx_tensor_from_proto(const struct Onnx__TensorProto *proto, const char *base_dir,
                                 graph_tensor *out);

#endif /* RUNNEL_GRAPH_ONNX_READER_H */
