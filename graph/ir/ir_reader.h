/* The OpenVINO IR reader: an IR v10/v11 model (.xml with its weights in a .bin
 * beside it) -> graph.
 *
 * The XML's layers become graph nodes of the ONNX ops runnel implements (the
 * mapping of each OpenVINO op is listed in docs/ir.md), its edges become
 * values, Const layers become constants read from the .bin with bounds
 * checks, Parameter and Result layers become the graph's inputs and outputs.
 * A node keeps its layer's name and the fused names of its rt_info. Every read
 * ends with graph_sort, graph_validate and graph_infer_shapes; the dims and
 * precisions the XML declares on output ports are the values' declared
 * shapes and types, so inference refuses ports that contradict their op
 * (RN_SHAPE_MISMATCH, RN_TYPE_MISMATCH).
 *
 * Bad input never crashes and never leaves anything half-built: each function
 * returns a status, sets rn_last_error() to a message naming the file, layer,
 * port or edge at fault, and writes its out parameter only on success.
 */
#ifndef RUNNEL_GRAPH_IR_READER_H
#define RUNNEL_GRAPH_IR_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/graph.h"
#include "runnel/status.h"

/* Whether the `size` bytes at `data` (the first bytes of a file) look like an
 * XML document: an optional UTF-8 byte-order mark and white space, then '<'.
 * ONNX files (protobuf) never start so. */
bool ir_looks_like_xml(const void *data, size_t size);

/* Reads the IR at `xml_path`; its weights are the file of the same name with
 * the extension .bin (a model with no Const layer needs no .bin). On success
 * *out is a new graph the caller frees with graph_free. A missing or
 * unreadable file is RN_IO_ERROR naming the path; malformed XML, a broken
 * edge or a constant outside the .bin is RN_PARSE_ERROR; an op or precision
 * runnel does not implement is RN_UNSUPPORTED naming the layer. */
rn_status ir_read_file(const char *xml_path, graph **out);

/* As ir_read_file, from memory: `xml` (`xml_size` bytes) and the weights
 * `bin` (`bin_size` bytes; NULL with 0 when there are none), neither kept
 * after the call. `name` names the model in errors. */
rn_status ir_read_memory(const char *xml, size_t xml_size, const void *bin, size_t bin_size,
                         const char *name, graph **out);

#endif /* RUNNEL_GRAPH_IR_READER_H */
