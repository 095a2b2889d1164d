/* An engine (plugins/api/plan.h, plugin_engine): device work runs on the
 * engine's own thread, one item at a time in the order queued, and its
 * status and message reach whoever waits for it. Stages queued on engines
 * and completed by them run in the behaviour suite (SLOWDEV's four engines:
 * tests/behavior, tests/hetero, tests/auto). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "plugins/api/plan.h"

typedef struct work_log {
    atomic_int in_flight, most_in_flight, runs;
    pthread_t engine_thread;
    atomic_bool other_thread; /* a work ran on a thread other than the first's */
    int order[64];
} work_log;

static work_log log_;

static rn_status record(plugin_request *r, void *arg)
{
    (void)r;
    int now = atomic_fetch_add(&log_.in_flight, 1) + 1;
    int most = atomic_load(&log_.most_in_flight);
    while (now > most && !atomic_compare_exchange_weak(&log_.most_in_flight, &most, now))
        ;
    int k = atomic_fetch_add(&log_.runs, 1);
    if (k == 0)
        log_.engine_thread = pthread_self();
    else if (!pthread_equal(log_.engine_thread, pthread_self()))
        atomic_store(&log_.other_thread, true);
    if (k < 64)
        log_.order[k] = (int)(intptr_t)arg;
    nanosleep(&(struct timespec){0, 200000}, NULL); /* busy a while: overlaps would show */
    atomic_fetch_sub(&log_.in_flight, 1);
    return RN_OK;
}

static rn_status fail(plugin_request *r, void *arg)
{
    (void)r, (void)arg;
    return rn_set_error(RN_DEVICE_ERROR, "the device lost its mind (test)");
}

Test(engine, a_call_runs_on_the_engines_thread_and_returns_its_status)
{
    plugin_engine *e;
    cr_assert_eq(plugin_engine_open("test", &e), RN_OK, "%s", rn_last_error());
    log_ = (work_log){0};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(plugin_engine_call(e, NULL, record, (void *)(intptr_t)i), RN_OK);
    cr_expect_eq(atomic_load(&log_.runs), 5);
    cr_expect(!pthread_equal(log_.engine_thread, pthread_self()),
              "the work ran on the caller's thread");
    cr_expect(!atomic_load(&log_.other_thread), "the work of one engine ran on two threads");
    for (int i = 0; i < 5; i++)
        cr_expect_eq(log_.order[i], i, "call %d ran as number %d", log_.order[i], i);
    rn_clear_error();
    cr_expect_eq(plugin_engine_call(e, NULL, fail, NULL), RN_DEVICE_ERROR);
    cr_expect(strstr(rn_last_error(), "lost its mind") != NULL, "message: '%s'", rn_last_error());
    plugin_engine_close(e);
}

static void *caller(void *arg)
{
    plugin_engine *e = arg;
    for (int i = 0; i < 8; i++)
        if (plugin_engine_call(e, NULL, record, NULL) != RN_OK)
            return (void *)1;
    return NULL;
}

/* Four threads calling at once: the engine still does one thing at a time. */
Test(engine, calls_from_several_threads_run_one_at_a_time)
{
    plugin_engine *e;
    cr_assert_eq(plugin_engine_open("test", &e), RN_OK, "%s", rn_last_error());
    log_ = (work_log){0};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, caller, e), 0);
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        cr_expect_null(rc, "a call failed");
    }
    cr_expect_eq(atomic_load(&log_.runs), 32);
    cr_expect_eq(atomic_load(&log_.most_in_flight), 1, "%d work items ran at once",
                 atomic_load(&log_.most_in_flight));
    cr_expect(!atomic_load(&log_.other_thread));
    plugin_engine_close(e);
}

Test(engine, closing_an_idle_engine_and_null_are_fine)
{
    for (int i = 0; i < 3; i++) {
        plugin_engine *e;
        cr_assert_eq(plugin_engine_open("test", &e), RN_OK, "%s", rn_last_error());
        plugin_engine_close(e);
    }
    plugin_engine_close(NULL);
}
