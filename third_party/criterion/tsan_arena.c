/*
 * Lets Criterion start under ThreadSanitizer (part of //third_party/criterion, so linked into
 * every test binary; empty in other builds).
 *
 * Criterion's runner allocates an "inheritable arena" (BoxFort) at a random address between
 * 0x200000000000 and 0x600000000000, drawn with rand_r(), trying ten addresses. Under TSan on
 * x86-64 only [0x550000000000, 0x568000000000) of that range is application memory; the rest
 * is TSan's shadow or reserved, so about 95% of runs abort with "Could not initialize
 * inheritable arena" before any test runs (Criterion issue #274). This rand_r() is glibc's
 * algorithm folded into the offsets that land in that window, so BoxFort's draw always picks
 * application memory. The executable's definition takes precedence over libc's for the calls
 * from libcriterion. The one test that calls rand_r() itself (tests/graph:test_onnx_reader's
 * random bytes) gets, under TSan, this generator's values: a different deterministic sequence
 * per seed, still spread over every low bit it uses.
 */
#if defined(__SANITIZE_THREAD__) && defined(__x86_64__)
#include <stdlib.h>

/* BoxFort: base = 0x200000000000 + (rand_r() & 0x3fffff) * 2^24. */
#define ARENA_FIRST ((0x550000000000ul - 0x200000000000ul) >> 24) /* 0x350000 */
#define ARENA_COUNT ((0x568000000000ul - 0x550000000000ul) >> 24) /* 0x18000 */

int rand_r(unsigned int *seed)
{
    unsigned int next = *seed;
    unsigned int result;
    next = next * 1103515245u + 12345u;
    result = (next / 65536u) % 2048u;
    next = next * 1103515245u + 12345u;
    result = (result << 10) ^ ((next / 65536u) % 1024u);
    next = next * 1103515245u + 12345u;
    result = (result << 10) ^ ((next / 65536u) % 1024u);
    *seed = next;
    return (int)(ARENA_FIRST + result % ARENA_COUNT);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int rn_tsan_criterion_compat_unused;
#endif
