/* The executor manager: pools shared by name and stream configuration,
 * released by their last user. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "executors/executors.h"

Test(executors, same_name_and_streams_share_a_pool)
{
    int before = executors_pool_count();
    executors_config ref = {.name = "REF", .n_streams = 2, .threads_per_stream = 1};
    executors_pool *a, *b, *c, *d;
    cr_assert_eq(executors_acquire(&ref, &a), RN_OK, "%s", rn_last_error());
    cr_assert_eq(executors_acquire(&ref, &b), RN_OK);
    cr_assert_eq(a, b, "one device's compiled models with the same streams share");
    executors_config other = ref;
    other.name = "SLOWDEV";
    cr_assert_eq(executors_acquire(&other, &c), RN_OK);
    cr_assert_neq(a, c, "another device gets its own threads");
    executors_config streams = ref;
    streams.n_streams = 1;
    cr_assert_eq(executors_acquire(&streams, &d), RN_OK);
    cr_assert_neq(a, d, "another stream configuration gets its own threads");
    cr_assert_eq(executors_pool_count(), before + 3);
    executors_release(a);
    cr_assert_eq(executors_pool_count(), before + 3, "b still uses it");
    executors_release(b);
    executors_release(c);
    executors_release(d);
    cr_assert_eq(executors_pool_count(), before, "the last user releases a pool");
}

Test(executors, unnamed_is_one_name_and_bad_configs_are_refused)
{
    executors_config unnamed = {.n_streams = 1, .threads_per_stream = 1};
    executors_config empty = {.name = "", .n_streams = 1, .threads_per_stream = 1};
    executors_pool *a, *b;
    cr_assert_eq(executors_acquire(&unnamed, &a), RN_OK);
    cr_assert_eq(executors_acquire(&empty, &b), RN_OK);
    cr_assert_eq(a, b);
    executors_release(a);
    executors_release(b);
    char long_name[100];
    memset(long_name, 'X', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    executors_config too_long = {.name = long_name, .n_streams = 1, .threads_per_stream = 1};
    cr_assert_eq(executors_acquire(&too_long, &a), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "too long") != NULL, "%s", rn_last_error());
    executors_config none = {.name = "REF", .n_streams = 0, .threads_per_stream = 1};
    cr_assert_eq(executors_acquire(&none, &a), RN_INVALID_ARG);
}

/* Threads of this process now (/proc/self/task). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

typedef struct last_release {
    executors_pool *pool;
    atomic_int done;
} last_release;

static int release_from_inside(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    last_release *r = arg;
    executors_release(r->pool);
    atomic_store(&r->done, 1);
    return SCHED_OK;
}

/* The last reference dropped on one of the pool's own threads (a device
 * completion its runtime ran on the thread that armed it) stops the pool
 * from another thread: it cannot join itself, and freeing the scheduler
 * under the running thread was a use-after-free (ASan, tests/behavior). The
 * pool's threads are gone afterwards. */
Test(executors, the_last_release_on_a_pool_thread_stops_the_pool_elsewhere, .timeout = 30)
{
    int pools = executors_pool_count(), threads = thread_count();
    executors_config cfg = {.name = "LASTREL", .n_streams = 1, .threads_per_stream = 2};
    last_release r = {.pool = NULL};
    cr_assert_eq(executors_acquire(&cfg, &r.pool), RN_OK, "%s", rn_last_error());
    cr_assert_gt(thread_count(), threads);
    cr_assert_eq(sched_submit(executors_sched(r.pool), SCHED_STREAM_ANY, release_from_inside, &r),
                 0);
    for (int i = 0; i < 5000 && !atomic_load(&r.done); i++)
        usleep(1000);
    cr_assert(atomic_load(&r.done), "the task did not run");
    cr_expect_eq(executors_pool_count(), pools);
    for (int i = 0; i < 10000 && thread_count() > threads; i++)
        usleep(1000);
    cr_expect_eq(thread_count(), threads, "the pool's threads are still there");
}
