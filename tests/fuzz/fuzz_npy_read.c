/* Fuzz target: the .npy reader of the tools (tools/npy.c), from memory. */
#include "tests/fuzz/fuzz.h"
#include "tools/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen refuses an empty buffer */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (f == NULL)
        abort();
    rn_tensor *t = NULL;
    rn_clear_error();
    rn_status st = npy_read_stream(f, "input.npy", &t);
    if (st != RN_OK)
        fuzz_check_failure("npy_read_stream", st, t != NULL);
    rn_tensor_free(t);
    fclose(f);
    return 0;
}
