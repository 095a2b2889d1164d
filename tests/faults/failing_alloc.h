/* An allocator that fails the N-th allocation (tests/faults).
 *
 * failing_alloc.c interposes malloc, calloc, realloc, reallocarray,
 * aligned_alloc, posix_memalign, memalign and free in the test binary (glibc
 * lets a program replace its allocator; the program's definitions take
 * precedence for every shared object, libruntime.so and libc included) and
 * forwards them to the next definition: glibc's, or the sanitizer's in ASan
 * and TSan builds, which so keep tracking every block (LeakSanitizer then
 * reports what a failure path forgot to free). */
#ifndef RUNNEL_TESTS_FAULTS_FAILING_ALLOC_H
#define RUNNEL_TESTS_FAULTS_FAILING_ALLOC_H

#include <stdbool.h>

/* From now on, counting allocations from every thread, the n-th one (n >= 1)
 * returns NULL (ENOMEM); the others succeed. n = 0 only counts. */
void failing_alloc_arm(long n);

/* Stops counting; returns how many allocations were seen since arming. */
long failing_alloc_disarm(void);

/* Whether the armed failure happened. */
bool failing_alloc_fired(void);

/* Allocations whose caller (the code that called malloc, calloc, ...) is in
 * a shared object whose path contains `library` ("libdnnl") are neither
 * counted nor failed from now on: for libraries that do not survive their
 * own failed allocations (docs/reliability.md says which and why). At most
 * four. */
void failing_alloc_spare(const char *library);

/* How many allocations of spared libraries were seen since arming. */
long failing_alloc_spared(void);

#endif /* RUNNEL_TESTS_FAULTS_FAILING_ALLOC_H */
