/* The KServe v2 (Open Inference Protocol) tensor codec of runnel-server:
 * datatypes, the infer request's JSON header and binary tensor data, and the
 * infer response. Pure functions over buffers and rn_tensors: no HTTP, no
 * model; the Criterion tests in tests/server/ drive them directly.
 *
 * Errors are rn_status with the detail in rn_last_error(), naming the input
 * or output and what was wrong ("input 'x': expected 12 values for shape
 * [3,4], got 11"). Nothing is half-built: on error every out parameter is
 * untouched and what was allocated is freed. */
#ifndef RUNNEL_SERVER_CODEC_H
#define RUNNEL_SERVER_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/runnel.h"

/* The v2 datatype of an element type ("FP32", "BYTES" for strings); NULL for
 * a type the protocol has no name for. Static string. */
const char *server_datatype_name(rn_element_type type);

/* The element type of a v2 datatype name; RN_UNDEFINED for an unknown one. */
rn_element_type server_datatype_parse(const char *name);

/* IEEE half precision <-> float (round to nearest even; NaN and infinities kept). */
uint16_t server_f32_to_f16(float value);
float server_f16_to_f32(uint16_t half);

/* Writes a shape as text ("[3,4]") for messages, truncated to `size`. */
void server_shape_text(const int64_t *dims, size_t rank, char *buf, size_t size);

/* Counts the elements of a shape. A negative dim, a rank over RN_MAX_RANK
 * or a count too large to allocate is RN_INVALID_ARG saying which. */
rn_status server_shape_count(const int64_t *dims, size_t rank, size_t *count);

/* Stores integer v as element i of `data`, an array of `type` (an integer
 * datatype; UINT64 takes 0..2^63-1 here). A value out of the datatype's
 * range is RN_INVALID_ARG naming it and the index. */
rn_status server_store_integer(rn_element_type type, long long v, void *data, size_t i);

/* Binary tensor data, as the binary extension and gRPC's raw contents carry
 * it: the tensor's bytes, row-major; a string tensor as each element's
 * 4-byte little-endian length, then its bytes. */

/* Fills string tensor `t` from `size` bytes holding its `count` elements.
 * Lengths that run past the end, bytes left over or a NUL inside an element
 * are RN_INVALID_ARG naming the element. */
rn_status server_bytes_read(rn_tensor *t, const unsigned char *p, size_t size, size_t count);

/* The bytes tensor `t` takes in that form. */
size_t server_bytes_size(const rn_tensor *t);

/* Writes tensor `t` in that form to p (server_bytes_size(t) bytes). */
void server_bytes_write(const rn_tensor *t, unsigned char *p);

/* One input of an infer request, with its data. */
typedef struct server_input {
    char *name;
    rn_tensor *tensor; /* owned; dense, or a string tensor that owns its strings */
} server_input;

/* One output the request asks for. */
typedef struct server_requested_output {
    char *name;
    int binary; /* 1: in the binary section; 0: as JSON "data" */
} server_requested_output;

/* A parsed infer request. */
typedef struct server_infer {
    char *id; /* NULL when the request has none */
    server_input *inputs;
    size_t n_inputs;
    server_requested_output *outputs; /* n_outputs == 0: every output of the model */
    size_t n_outputs;
    int binary_output;   /* parameters.binary_data_output: default for outputs not listed */
    uint64_t timeout_us; /* parameters.timeout (Triton's): longest wait in the queue; 0: none */
    /* Stateful sequences (Triton's parameters): sequence_id (0: none), and
     * whether this request starts or ends its sequence. */
    uint64_t sequence_id;
    int sequence_start, sequence_end;
} server_infer;

/* Parses an infer request body. `header_size` is the value of the
 * Inference-Header-Content-Length header, or SIZE_MAX when absent (the whole
 * body is JSON). The rest of the body is the binary tensor data of the inputs
 * that carry parameters.binary_data_size, in order. Malformed JSON, an
 * unknown datatype, a shape whose element count does not match the data, a
 * value out of range for its datatype or binary sizes that do not add up are
 * RN_INVALID_ARG naming the input. */
rn_status server_infer_parse(const char *body, size_t size, size_t header_size, server_infer *out);

/* Frees what a parse made (the struct itself is the caller's). */
void server_infer_clear(server_infer *infer);

/* One output of a response. */
typedef struct server_output {
    const char *name;
    const rn_tensor *tensor;
    int binary;
} server_output;

/* An encoded response: the body, and when some output is binary the size of
 * its JSON part (the Inference-Header-Content-Length to send). */
typedef struct server_response {
    char *body; /* malloc'ed; the caller frees */
    size_t size;
    size_t header_size; /* 0: the body is JSON only */
} server_response;

/* Encodes an infer response: model_name, model_version, id (when not NULL)
 * and the outputs, each as JSON data or in the binary section. A string that
 * is not UTF-8 cannot go in JSON: RN_INVALID_ARG naming the output. */
rn_status server_response_encode(const char *model, const char *version, const char *id,
                                 const server_output *outputs, size_t n_outputs,
                                 server_response *out);

/* The body of an error response: {"error": message}, malloc'ed, its length in
 * *size. NULL only when out of memory. */
char *server_error_body(const char *message, size_t *size);

#endif /* RUNNEL_SERVER_CODEC_H */
