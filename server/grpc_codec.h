/* The gRPC form of KServe v2 (inference.GRPCInferenceService): infer
 * requests and responses as protobuf messages (server/kserve.proto, C from
 * protoc-c), to and from the same server_infer and server_output the REST
 * codec uses. Pure functions over buffers: no gRPC, no model; the Criterion
 * tests in tests/server/ drive them directly.
 *
 * Errors are rn_status with the detail in rn_last_error(), naming the input
 * or output and what was wrong; on error every out parameter is untouched
 * and what was allocated is freed. */
#ifndef RUNNEL_SERVER_GRPC_CODEC_H
#define RUNNEL_SERVER_GRPC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/runnel.h"
#include "server/codec.h"

/* A decoded ModelInferRequest. Each input given in raw_input_contents wraps
 * its bytes where the decoder copied them, once, from the message (`owned`,
 * 64-byte aligned), so `owned` lives as long as they. */
typedef struct server_grpc_infer {
    struct Inference__ModelInferRequest *message; /* owned; every field but raw_input_contents */
    const char *model;                            /* model_name, in message */
    const char *version;                          /* model_version ("" when none), in message */
    server_infer infer;
    struct ProtobufCBinaryData *raw; /* raw_input_contents: views into owned */
    uint8_t *owned;
} server_grpc_infer;

/* A message in pieces, as gRPC receives it (its slices, in order). */
typedef struct server_grpc_piece {
    const uint8_t *data;
    size_t size;
} server_grpc_piece;

/* Decodes a ModelInferRequest. Bytes that are not the message, an unknown
 * datatype, a shape whose element count does not match the contents, raw
 * contents of the wrong size, raw_input_contents beside typed contents, a
 * typed list that is not the datatype's, a value out of range, or an
 * unknown request parameter are RN_INVALID_ARG naming the input or key.
 * Parameters read: "timeout" (microseconds in the queue, Triton's). */
rn_status server_grpc_infer_decode(const uint8_t *data, size_t size, server_grpc_infer *out);

/* The same from a message in pieces, the tensors' bytes copied straight
 * from them (nothing of the pieces is kept: they may go when it returns). */
rn_status server_grpc_infer_decode_pieces(const server_grpc_piece *pieces, size_t n_pieces,
                                          server_grpc_infer *out);

/* Frees what a decode made (the struct itself is the caller's). */
void server_grpc_infer_clear(server_grpc_infer *request);

/* Encodes a ModelInferResponse (model_name, model_version, id when not
 * NULL, and each output's name, datatype, shape and raw_output_contents);
 * with `stream` set, inside a ModelStreamInferResponse. out->body is the
 * packed message, header_size 0. */
rn_status server_grpc_response_encode(const char *model, const char *version, const char *id,
                                      const server_output *outputs, size_t n_outputs, int stream,
                                      server_response *out);

/* A ModelStreamInferResponse that carries an error: error_message, and an
 * infer_response with the model, version and id (any may be NULL) so that
 * the client can tell which request failed. */
rn_status server_grpc_stream_error(const char *model, const char *version, const char *id,
                                   const char *message, server_response *out);

/* Packs any protobuf-c message into a malloc'ed out->body. */
struct ProtobufCMessage;
rn_status server_grpc_pack(const struct ProtobufCMessage *message, server_response *out);

/* The gRPC status code (grpc_status_code's values) of an HTTP status the
 * model layer answers with: 400 INVALID_ARGUMENT, 404 NOT_FOUND, 503
 * UNAVAILABLE, 500 and others INTERNAL, 200 OK. */
int server_grpc_status_of_http(int http_status);

#endif /* RUNNEL_SERVER_GRPC_CODEC_H */
