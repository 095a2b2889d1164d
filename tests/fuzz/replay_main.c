/* Runs a fuzz target over files, outside libFuzzer: the seed corpus and the
 * crash inputs of tests/fuzz/regressions/ as a plain Bazel test (also under
 * ASan and UBSan), so that every crash the fuzzer found stays fixed in every
 * build.
 *
 *   replay PATH...   each PATH a file or a folder (walked recursively)
 *
 * A crash or a broken contract aborts (fuzz.h). Finding no input at all is a
 * failure: a test that checked nothing must not pass. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz.h"

static size_t n_inputs;

static int replay_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    size_t cap = 1 << 16, size = 0;
    uint8_t *data = malloc(cap);
    size_t n;
    while (data != NULL && (n = fread(data + size, 1, cap - size, f)) > 0) {
        size += n;
        if (size == cap) {
            uint8_t *grown = realloc(data, cap * 2);
            if (grown == NULL)
                free(data);
            data = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (data == NULL) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    n_inputs++;
    return 0;
}

int main(int argc, char *argv[])
{
    for (int i = 1; i < argc; i++)
        if (nftw(argv[i], replay_file, 16, 0) != 0) {
            fprintf(stderr, "%s: cannot walk\n", argv[i]);
            return 1;
        }
    if (n_inputs == 0) {
        fprintf(stderr, "%s: no input replayed\n", argv[0]);
        return 1;
    }
    printf("%zu inputs replayed without a crash\n", n_inputs);
    return 0;
}
