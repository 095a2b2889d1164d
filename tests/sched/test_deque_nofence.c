/*
 * Negative control for test_deque.c: built with -DSCHED_DEQUE_NO_STORELOAD, the owner's take
 * publishes its claim on the bottom slot without the StoreLoad fence, and the exactly-once
 * harness must catch the duplicates (or losses) that follow. This proves that the harness can
 * fail; if it ever stopped detecting the race, the real test would prove nothing.
 *
 * The race needs two cores really running the owner and a thief at the same time, so the test
 * retries rounds for up to a time budget (on the 2-core CI machine it is caught in the first
 * rounds, well under a second). It skips, saying why, where the race cannot happen: on one
 * CPU, and under ThreadSanitizer, whose C11 backend makes the missing fence a legal relaxed
 * store (no data race to report) and whose scheduling serializes the threads.
 */
#include <criterion/criterion.h>
#include <time.h>
#include <unistd.h>

#include "tests/sched/deque_harness.h"

#if !defined(SCHED_DEQUE_NO_STORELOAD)
#error "build this test with -DSCHED_DEQUE_NO_STORELOAD"
#endif

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

Test(deque_nofence, exactly_once_harness_detects_missing_storeload, .timeout = 90)
{
#if defined(__SANITIZE_THREAD__)
    cr_skip_test("the negative control needs hardware reordering; ThreadSanitizer hides it");
#endif
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        cr_skip_test("the negative control needs two CPUs running owner and thief at once");
    double start = seconds_now();
    uint64_t duplicates = 0, lost = 0, corrupt = 0, rounds = 0;
    while (duplicates + lost + corrupt == 0 && seconds_now() - start < 60.0) {
        harness_result res = {0};
        size_t cap = (size_t)2 << (rounds % 3);
        cr_assert_eq(harness_run(cap, 200000, 1 + (int)(rounds % 2), rounds + 1, &res), 0);
        duplicates += res.duplicates;
        lost += res.lost;
        corrupt += res.corrupt;
        rounds++;
    }
    cr_log_info("no-StoreLoad deque: %llu duplicated, %llu lost, %llu corrupt rounds after %llu "
                "rounds (%.1f s)",
                (unsigned long long)duplicates, (unsigned long long)lost,
                (unsigned long long)corrupt, (unsigned long long)rounds, seconds_now() - start);
    cr_assert_gt(duplicates + lost + corrupt, 0,
                 "the harness did not detect the missing StoreLoad in %llu rounds",
                 (unsigned long long)rounds);
}
