/* Fuzz target: importing a compiled-model blob (rn_core_import_model on
 * REF): the export container's checks, the graph decoding and the plan built
 * from what they accept. Each input is imported twice: as it is, and with
 * its last 8 bytes replaced by the checksum of the rest (XXH64, seed 0;
 * docs/export.md), since almost every mutation breaks the checksum and
 * would otherwise never reach the decoder. */
#include <string.h>
#include <xxhash.h>

#include "runnel/runnel.h"
#include "tests/fuzz/fuzz.h"

/* One Core for the whole run. */
static rn_core *core(void)
{
    static rn_core *c;
    if (c == NULL && rn_core_create(&c) != RN_OK) {
        fprintf(stderr, "rn_core_create: %s\n", rn_last_error());
        abort();
    }
    return c;
}

static void import(const uint8_t *data, size_t size)
{
    rn_compiled_model *compiled = NULL;
    rn_clear_error();
    rn_status st = rn_core_import_model(core(), data, size, "REF", NULL, 0, &compiled);
    if (st != RN_OK)
        fuzz_check_failure("rn_core_import_model", st, compiled != NULL);
    rn_compiled_model_free(compiled);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    import(data, size);
    if (size < 8)
        return 0;
    uint8_t *sealed = malloc(size);
    if (sealed == NULL)
        abort();
    memcpy(sealed, data, size);
    uint64_t sum = XXH64(sealed, size - 8, 0);
    for (int i = 0; i < 8; i++) /* little-endian */
        sealed[size - 8 + (size_t)i] = (uint8_t)(sum >> (8 * i));
    import(sealed, size);
    free(sealed);
    return 0;
}
