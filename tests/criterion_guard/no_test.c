/* A Criterion binary whose tests were all compiled out: it must fail
 * (//third_party/criterion:criterion_main.c). */
#include <criterion/criterion.h>

#ifdef RN_NEVER_DEFINED
Test(guard, compiled_out)
{
    cr_assert(0);
}
#endif

/* ISO C forbids an empty translation unit. */
typedef int rn_no_test_unused;
