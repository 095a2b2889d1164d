/* Fuzz target: the ONNX reader (ModelProto bytes -> graph), without external
 * data (base_dir NULL). */
#include "graph/onnx/onnx_reader.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    graph *g = NULL;
    rn_clear_error();
    rn_status st = onnx_read_memory(data, size, NULL, &g);
    if (st != RN_OK)
        fuzz_check_failure("onnx_read_memory", st, g != NULL);
    graph_free(g);
    return 0;
}
