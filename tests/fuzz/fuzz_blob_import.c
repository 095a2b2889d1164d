/* Fuzz target: importing a compiled-model blob (rn_core_import_model on
 * REF): the export container's checks, the graph decoding and the plan built
 * from what they accept. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rn_compiled_model *compiled = NULL;
    rn_clear_error();
    rn_status st = rn_core_import_model(core(), data, size, "REF", NULL, 0, &compiled);
    if (st != RN_OK)
        fuzz_check_failure("rn_core_import_model", st, compiled != NULL);
    rn_compiled_model_free(compiled);
    return 0;
}
