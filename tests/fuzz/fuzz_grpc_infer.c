/* Fuzz target: runnel-server's gRPC infer request decoder
 * (server/grpc_codec.c: a KServe v2 ModelInferRequest, typed contents and
 * raw_input_contents, to the server_infer the model layer takes). An input
 * is the message's bytes. A request that decodes is encoded back as a
 * response (its inputs as the outputs; as a ModelInferResponse or, for
 * every other input, inside a ModelStreamInferResponse), and as a stream
 * error answer, which drives the encoders with whatever the decoder let
 * through. */
#include <string.h>

#include "server/grpc_codec.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1); /* a copy: ASan sees reads past it */
    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    server_grpc_infer request, untouched;
    memset(&request, 0xa5, sizeof request);
    untouched = request;
    rn_clear_error();
    rn_status st = server_grpc_infer_decode_view(copy, size, &request); /* copy outlives it */
    if (st != RN_OK) {
        fuzz_check_failure("server_grpc_infer_decode", st,
                           memcmp(&request, &untouched, sizeof request));
        free(copy);
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
    free(copy);
    return 0;
}
