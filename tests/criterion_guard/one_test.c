/* A Criterion binary with one test, which must run in every compilation mode
 * (-c opt links with --gc-sections; //third_party/criterion keeps the test
 * registration sections). */
#include <criterion/criterion.h>

Test(guard, runs)
{
    cr_assert_eq(1 + 1, 2);
}
