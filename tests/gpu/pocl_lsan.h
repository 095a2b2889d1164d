/* LeakSanitizer (scripts/test asan) for test binaries that start the GPU
 * device on PoCL. Include it once per binary.
 *
 * - PoCL's OpenCL C compiler (libpocl, libLLVM) keeps what it allocates
 *   while building kernels to the end of the process; those leaks are
 *   theirs, and only theirs are suppressed.
 * - intercept_tls_get_addr=0: LeakSanitizer does not track the dynamic TLS
 *   blocks of dlopen'ed libraries (PoCL's). GCC 12's libsanitizer guesses
 *   such a block's bounds with a glibc 2.19 heuristic: a block that glibc
 *   >= 2.25 malloc'ed at an address 16 bytes past a 4 KiB boundary is taken
 *   for a 2.19 block and its "header" read from ASan's chunk header, giving
 *   a range such as {0x913, size 0x800001102}; the exit check's tracer then
 *   scans it and takes SIGSEGV ("Tracer caught signal 11: addr=0x918",
 *   "LeakSanitizer has encountered a fatal error"). Where the block lands
 *   depends on the heap's layout, so it showed in one binary after one case
 *   (tests/gpu:test_gpu after test_add_bcast) and in others on other
 *   machines. Upstream: google/sanitizers#1322, fixed in LLVM by "Fix
 *   tls_get_addr handling for glibc >=2.25" (D147459, 2023), which GCC 12's
 *   copy predates. With the interception off, LeakSanitizer's exit check
 *   stays on in every PoCL binary; only pointers held solely in PoCL's
 *   dynamic TLS are no longer roots (PoCL's own leaks are suppressed). */
#ifndef RUNNEL_TESTS_GPU_POCL_LSAN_H
#define RUNNEL_TESTS_GPU_POCL_LSAN_H

__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl.so\nleak:libLLVM\n";
}

#if defined(__SANITIZE_ADDRESS__)
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "intercept_tls_get_addr=0";
}
#endif

#endif /* RUNNEL_TESTS_GPU_POCL_LSAN_H */
