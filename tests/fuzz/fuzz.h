/* What the fuzz targets share.
 *
 * Each target defines LLVMFuzzerTestOneInput. Built with --config=fuzz
 * (clang, -fsanitize=fuzzer,address,undefined) it is a libFuzzer binary
 * (scripts/fuzz runs it); in every other build it links replay_main.c and
 * runs as a Bazel test over its seed corpus and the crash inputs found so far
 * (tests/fuzz/regressions/<target>/).
 *
 * Beyond "no crash, no leak", a target checks the contract every reader
 * keeps: a call that fails returns a status with a message and writes
 * nothing to its out parameter. A broken contract aborts, which libFuzzer
 * reports as a crash. */
#ifndef RUNNEL_TESTS_FUZZ_FUZZ_H
#define RUNNEL_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "runnel/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts unless a failed call left a message (rn_last_error) and its out
 * parameter untouched (`out_written` false). */
static inline void fuzz_check_failure(const char *call, rn_status st, int out_written)
{
    const char *message = rn_last_error();
    if (message == NULL || message[0] == '\0') {
        fprintf(stderr, "%s failed (%s) without a message\n", call, rn_status_name(st));
        abort();
    }
    if (out_written) {
        fprintf(stderr, "%s failed (%s: %s) but wrote its out parameter\n", call,
                rn_status_name(st), message);
        abort();
    }
}

#endif /* RUNNEL_TESTS_FUZZ_FUZZ_H */
