/* Fuzz target: runnel-server's infer request parser (server/codec.c: the
 * KServe v2 JSON header and the binary tensor data extension). An input is
 * a 4-byte little-endian header size (the Inference-Header-Content-Length;
 * 0xffffffff: absent, the whole body is JSON), then the body. A request
 * that parses is encoded back as a response (its inputs as the outputs,
 * alternately as JSON and binary), which drives the encoder with whatever
 * values the parser let through. */
#include <string.h>

#include "server/codec.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t h = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                 (uint32_t)data[3] << 24;
    size_t header = h == UINT32_MAX ? SIZE_MAX : (size_t)h;
    size_t body_size = size - 4;
    char *body = malloc(body_size ? body_size : 1); /* a copy: ASan sees reads past it */
    if (body == NULL)
        abort();
    memcpy(body, data + 4, body_size);
    server_infer infer, untouched;
    memset(&infer, 0xa5, sizeof infer);
    untouched = infer;
    rn_clear_error();
    rn_status st = server_infer_parse(body, body_size, header, &infer);
    if (st != RN_OK) {
        fuzz_check_failure("server_infer_parse", st, memcmp(&infer, &untouched, sizeof infer));
        free(body);
        return 0;
    }
    server_output *outs = calloc(infer.n_inputs + 1, sizeof *outs);
    if (outs == NULL)
        abort();
    for (size_t i = 0; i < infer.n_inputs; i++)
        outs[i] = (server_output){infer.inputs[i].name, infer.inputs[i].tensor, (int)(i & 1)};
    server_response resp;
    memset(&resp, 0xa5, sizeof resp);
    server_response before = resp;
    rn_clear_error();
    st = server_response_encode("fuzz", "1", infer.id, outs, infer.n_inputs, &resp);
    if (st != RN_OK)
        fuzz_check_failure("server_response_encode", st, memcmp(&resp, &before, sizeof resp));
    else
        free(resp.body);
    free(outs);
    server_infer_clear(&infer);
    free(body);
    return 0;
}
