/* Fuzz target: runnel-server's gRPC infer request decoder
 * (server/grpc_codec.c: a KServe v2 ModelInferRequest, typed contents and
 * raw_input_contents, to the server_infer the model layer takes). An input
 * is the message's bytes, handed over as gRPC does: in pieces (of 1 + size %
 * 61 bytes, or whole when size % 7 == 0), each in a block of its own so that
 * ASan sees a read past any of them. A request that decodes is encoded back as a
 * response (its inputs as the outputs; as a ModelInferResponse or, for
 * every other input, inside a ModelStreamInferResponse), and as a stream
 * error answer, which drives the encoders with whatever the decoder let
 * through. */
#include <string.h>

#include "server/grpc_codec.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t piece = size % 7 == 0 ? (size ? size : 1) : 1 + size % 61;
    size_t n = (size + piece - 1) / piece;
    server_grpc_piece *pieces = calloc(n ? n : 1, sizeof *pieces);
    if (pieces == NULL)
        abort();
    for (size_t i = 0; i < n; i++) {
        size_t len = size - i * piece < piece ? size - i * piece : piece;
        uint8_t *copy = malloc(len);
        if (copy == NULL)
            abort();
        memcpy(copy, data + i * piece, len);
        pieces[i] = (server_grpc_piece){copy, len};
    }
    server_grpc_infer request, untouched;
    memset(&request, 0xa5, sizeof request);
    untouched = request;
    rn_clear_error();
    rn_status st = server_grpc_infer_decode_pieces(pieces, n, &request);
    for (size_t i = 0; i < n; i++) /* the request keeps nothing of them */
        free((void *)pieces[i].data);
    free(pieces);
    if (st != RN_OK) {
        fuzz_check_failure("server_grpc_infer_decode_pieces", st,
                           memcmp(&request, &untouched, sizeof request));
        return 0;
    }
    const server_infer *infer = &request.infer;
    server_output *outs = calloc(infer->n_inputs + 1, sizeof *outs);
    if (outs == NULL)
        abort();
    for (size_t i = 0; i < infer->n_inputs; i++)
        outs[i] = (server_output){infer->inputs[i].name, infer->inputs[i].tensor, 1};
    server_response resp;
    memset(&resp, 0xa5, sizeof resp);
    server_response before = resp;
    rn_clear_error();
    st = server_grpc_response_encode(request.model, request.version, infer->id, outs,
                                     infer->n_inputs, (int)(size & 1), &resp);
    if (st != RN_OK)
        fuzz_check_failure("server_grpc_response_encode", st, memcmp(&resp, &before, sizeof resp));
    else
        free(resp.body);
    memset(&resp, 0xa5, sizeof resp);
    rn_clear_error();
    st = server_grpc_stream_error(request.model, request.version, infer->id, "fuzz", &resp);
    if (st != RN_OK)
        fuzz_check_failure("server_grpc_stream_error", st, memcmp(&resp, &before, sizeof resp));
    else
        free(resp.body);
    free(outs);
    server_grpc_infer_clear(&request);
    return 0;
}
