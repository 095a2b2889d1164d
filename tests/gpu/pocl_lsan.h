/* LeakSanitizer (scripts/test asan) for test binaries that start the GPU
 * device on PoCL: PoCL's OpenCL C compiler (libpocl, libLLVM) keeps what it
 * allocates while building kernels to the end of the process; those leaks
 * are theirs, and only theirs are suppressed. Include it once per binary. */
#ifndef RUNNEL_TESTS_GPU_POCL_LSAN_H
#define RUNNEL_TESTS_GPU_POCL_LSAN_H

__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl.so\nleak:libLLVM\n";
}

#endif /* RUNNEL_TESTS_GPU_POCL_LSAN_H */
