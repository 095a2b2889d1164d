/* The run object every request embeds (plugins/api/run.h), over a pipeline
 * of its own: REQUEST_BUSY while running, the first error kept with its
 * message, the callback called with the owner before waiters are released,
 * wait_for's RESULT_NOT_READY, cancel, a pending node completed from another
 * thread (async and inline), and a run with no pipeline (AUTO's). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executors/executors.h"
#include "executors/pipeline.h"
#include "plugins/api/run.h"

/* A request of the test: its run object, and what its tasks saw. */
typedef struct test_request {
    plugin_run run;
    plugin_run_instances instances;
    executors_pool *pool;
    executors_pipeline *pipeline;
    atomic_int tasks_run;
    atomic_bool pend;    /* the device stage pends until complete_node */
    atomic_bool reached; /* it has (an inline run: it waits) */
    rn_status fail_with; /* the task fails with this */
    atomic_int work_ms;  /* the task sleeps this long */
    atomic_int callbacks;
    rn_status callback_status;
    char callback_message[256];
    rn_status wait_in_callback; /* wait_for(0) from inside the callback */
    bool idle_in_callback;
} test_request;

static int task_nop(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return SCHED_OK;
}

static int task_work(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    test_request *r = ctx->user_arg;
    if (plugin_run_stopping(&r->run))
        return SCHED_OK;
    atomic_fetch_add(&r->tasks_run, 1);
    int ms = atomic_load(&r->work_ms);
    if (ms > 0) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (r->fail_with != RN_OK)
        plugin_run_record_error(&r->run,
                                rn_set_error(r->fail_with, "task 'work': the test made it fail"));
    return SCHED_OK;
}

static int stage_device(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    test_request *r = ctx->user_arg;
    if (!atomic_load(&r->pend))
        return SCHED_OK;
    if (r->run.inline_run) {
        plugin_run_expect(&r->run);
        atomic_store(&r->reached, true);
        rn_status st = plugin_run_await(&r->run, true);
        if (st != RN_OK)
            plugin_run_record_error(&r->run, rn_set_error(st, "device stage failed"));
        return SCHED_OK;
    }
    atomic_store(&r->reached, true);
    return SCHED_PENDING;
}

static int stage_callback(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    test_request *r = ctx->user_arg;
    plugin_run_finish(&r->run);
    return SCHED_OK;
}

static void on_done(rn_infer_request *owner, rn_status st, void *data)
{
    test_request *r = data;
    cr_expect_eq((void *)owner, (void *)r, "the callback gets the request's owner");
    r->callback_status = st;
    snprintf(r->callback_message, sizeof r->callback_message, "%s",
             st == RN_OK ? "" : rn_last_error());
    r->wait_in_callback = plugin_run_wait_for(&r->run, 0);
    r->idle_in_callback = !plugin_run_busy(&r->run);
    atomic_fetch_add(&r->callbacks, 1);
}

static void request_init(test_request *r)
{
    memset(r, 0, sizeof *r);
    plugin_run_init(&r->run, (rn_infer_request *)r);
    executors_config cfg = {.name = "test_run", .n_streams = 1, .threads_per_stream = 1};
    cr_assert_eq(executors_acquire(&cfg, &r->pool), RN_OK, "%s", rn_last_error());
    executors_pipeline_builder *b = NULL;
    cr_assert_eq(executors_pipeline_builder_create(r->pool, &b), RN_OK);
    cr_assert_eq(executors_pipeline_add_stage(b, EXECUTORS_STAGE_PREPROCESS, EXECUTORS_ON_STREAM,
                                              task_nop, NULL),
                 RN_OK);
    cr_assert_eq(executors_pipeline_add_task(b, "work", task_work, NULL, NULL), RN_OK);
    cr_assert_eq(executors_pipeline_add_stage(b, EXECUTORS_STAGE_WAIT, EXECUTORS_ON_DEVICE_WAIT,
                                              stage_device, NULL),
                 RN_OK);
    cr_assert_eq(executors_pipeline_add_stage(b, EXECUTORS_STAGE_POSTPROCESS, EXECUTORS_ON_STREAM,
                                              task_nop, NULL),
                 RN_OK);
    cr_assert_eq(executors_pipeline_add_stage(b, EXECUTORS_STAGE_CALLBACK, EXECUTORS_ON_CALLBACK,
                                              stage_callback, NULL),
                 RN_OK);
    cr_assert_eq(executors_pipeline_build(b, &r->pipeline), RN_OK, "%s", rn_last_error());
    executors_pipeline_builder_free(b);
    cr_assert_eq(plugin_run_instances_create(r->pipeline, r, &r->instances), RN_OK);
    cr_assert_eq(plugin_run_set_callback(&r->run, on_done, r), RN_OK);
}

static void request_fini(test_request *r)
{
    plugin_run_destroy(&r->run);
    plugin_run_instances_free(&r->instances);
    executors_pipeline_free(r->pipeline);
    executors_release(r->pool);
}

static rn_status start(test_request *r)
{
    rn_status st = plugin_run_begin(&r->run, "start_async");
    return st != RN_OK ? st : plugin_run_start(&r->run, r->pipeline, &r->instances);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};
    nanosleep(&ts, NULL);
}

/* Until the device stage has pended (10 s at most). */
static void wait_reached(test_request *r)
{
    for (int i = 0; i < 10000 && !atomic_load(&r->reached); i++)
        sleep_ms(1);
    cr_assert(atomic_load(&r->reached), "the device stage was never reached");
}

Test(run, an_async_run_calls_back_with_its_owner_before_waiters_are_released)
{
    test_request r;
    request_init(&r);
    cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(plugin_run_wait(&r.run), RN_OK, "%s", rn_last_error());
    cr_assert_eq(atomic_load(&r.callbacks), 1);
    cr_assert_eq(atomic_load(&r.tasks_run), 1);
    cr_assert_eq(r.callback_status, RN_OK);
    cr_assert_eq(r.wait_in_callback, RN_RESULT_NOT_READY,
                 "waiters are released after the callback returns");
    cr_assert(r.idle_in_callback, "the callback may start the request again");
    cr_assert(!plugin_run_busy(&r.run));
    request_fini(&r);
}

Test(run, a_pending_node_keeps_the_run_busy_until_completed)
{
    test_request r;
    request_init(&r);
    atomic_store(&r.pend, true);
    cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
    wait_reached(&r);
    cr_assert(plugin_run_busy(&r.run));
    cr_assert_eq(plugin_run_wait_for(&r.run, 10), RN_RESULT_NOT_READY);
    cr_assert(strstr(rn_last_error(), "still running") != NULL, "%s", rn_last_error());
    cr_assert_eq(plugin_run_begin(&r.run, "infer"), RN_REQUEST_BUSY);
    cr_assert(strstr(rn_last_error(), "infer: the infer request is running") != NULL, "%s",
              rn_last_error());
    cr_assert_eq(plugin_run_set_callback(&r.run, NULL, NULL), RN_REQUEST_BUSY);
    cr_assert_eq(plugin_run_wait_for(&r.run, -1), RN_INVALID_ARG);
    rn_set_error(RN_DEVICE_ERROR, "device stage 'wait' failed");
    plugin_run_complete_node(&r.run, true, EXECUTORS_STAGE_WAIT, RN_DEVICE_ERROR, r.pool);
    cr_assert_eq(plugin_run_wait(&r.run), RN_DEVICE_ERROR);
    cr_assert_str_eq(rn_last_error(), "device stage 'wait' failed");
    cr_assert_eq(r.callback_status, RN_DEVICE_ERROR);
    cr_assert_str_eq(r.callback_message, "device stage 'wait' failed");
    request_fini(&r);
}

Test(run, the_first_error_is_kept_with_its_message_and_the_next_run_starts_clean)
{
    test_request r;
    request_init(&r);
    r.fail_with = RN_OUT_OF_MEMORY;
    cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(plugin_run_wait(&r.run), RN_OUT_OF_MEMORY);
    cr_assert_str_eq(rn_last_error(), "task 'work': the test made it fail");
    r.fail_with = RN_OK;
    cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(plugin_run_wait(&r.run), RN_OK, "%s", rn_last_error());
    cr_assert_eq(atomic_load(&r.callbacks), 2);
    request_fini(&r);
}

Test(run, a_cancelled_run_skips_what_has_not_started_and_says_so)
{
    test_request r;
    request_init(&r);
    atomic_store(&r.pend, true);
    cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
    wait_reached(&r);
    cr_assert(plugin_run_cancel(&r.run), "a run was in flight");
    plugin_run_complete_node(&r.run, true, EXECUTORS_STAGE_WAIT, RN_OK, r.pool);
    cr_assert_eq(plugin_run_wait(&r.run), RN_CANCELLED);
    cr_assert_str_eq(rn_last_error(), "the infer request was cancelled");
    cr_assert(!plugin_run_cancel(&r.run), "nothing to cancel once idle");
    /* Cancelled before its task started: the task skips. */
    atomic_store(&r.pend, false);
    atomic_store(&r.tasks_run, 0);
    cr_assert_eq(plugin_run_begin(&r.run, "infer"), RN_OK);
    cr_assert(plugin_run_cancel(&r.run));
    cr_assert_eq(plugin_run_inline(&r.run, r.pipeline, &r), RN_CANCELLED);
    cr_assert_eq(atomic_load(&r.tasks_run), 0);
    cr_assert_eq(atomic_load(&r.callbacks), 1, "inline runs call no callback");
    request_fini(&r);
}

static void *complete_later(void *arg)
{
    test_request *r = arg;
    wait_reached(r);
    rn_set_error(RN_DEVICE_ERROR, "the device lost it");
    plugin_run_complete_node(&r->run, true, EXECUTORS_STAGE_WAIT, RN_DEVICE_ERROR, r->pool);
    return NULL;
}

Test(run, an_inline_run_waits_for_a_pending_node_in_the_callers_thread)
{
    test_request r;
    request_init(&r);
    atomic_store(&r.pend, true);
    cr_assert_eq(plugin_run_begin(&r.run, "infer"), RN_OK);
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &r);
    cr_assert_eq(plugin_run_inline(&r.run, r.pipeline, &r), RN_DEVICE_ERROR);
    cr_assert_str_eq(rn_last_error(), "device stage failed");
    pthread_join(t, NULL);
    cr_assert(!plugin_run_busy(&r.run));
    cr_assert_eq(atomic_load(&r.callbacks), 0);
    request_fini(&r);
}

static void *finish_later(void *arg)
{
    test_request *r = arg;
    sleep_ms(20);
    rn_set_error(RN_DEVICE_ERROR, "the other device failed");
    plugin_run_record_error(&r->run, RN_DEVICE_ERROR);
    plugin_run_finish(&r->run);
    return NULL;
}

Test(run, a_run_with_no_pipeline_of_its_own_finishes_from_its_work)
{
    test_request r;
    request_init(&r);
    cr_assert_eq(plugin_run_begin(&r.run, "start_async"), RN_OK);
    plugin_run_start_external(&r.run);
    pthread_t t;
    pthread_create(&t, NULL, finish_later, &r);
    cr_assert_eq(plugin_run_wait(&r.run), RN_DEVICE_ERROR);
    cr_assert_str_eq(rn_last_error(), "the other device failed");
    pthread_join(t, NULL);
    cr_assert_eq(r.callback_status, RN_DEVICE_ERROR);
    cr_assert_eq(r.wait_in_callback, RN_RESULT_NOT_READY);
    /* A start that fails is not counted: wait returns the last run's. */
    cr_assert_eq(plugin_run_begin(&r.run, "start_async"), RN_OK);
    plugin_run_start_external(&r.run);
    cr_assert_eq(plugin_run_start_failed(&r.run, RN_INVALID_ARG), RN_INVALID_ARG);
    cr_assert(!plugin_run_busy(&r.run));
    cr_assert_eq(plugin_run_wait_for(&r.run, 0), RN_DEVICE_ERROR);
    request_fini(&r);
}

/* Whether a waiter spins first (run.c): only when the run is expected to end
 * within the spin (30 us), as long after its start as the last run took. */
Test(run, a_waiter_spins_only_when_the_run_should_end_within_the_spin)
{
    const uint64_t us = 1000;
    cr_expect(plugin_run_wait_spins(0, 0, 5 * us), "no run has completed yet: spin");
    cr_expect(plugin_run_wait_spins(100 * us, 20 * us, 105 * us), "a 20 us run: spin");
    cr_expect(!plugin_run_wait_spins(100 * us, 1000 * us, 110 * us),
              "a 1 ms run, 10 us after its start: sleep at once");
    cr_expect(plugin_run_wait_spins(100 * us, 1000 * us, 1080 * us),
              "20 us before a 1 ms run should end: spin");
    cr_expect(plugin_run_wait_spins(100 * us, 1000 * us, 1500 * us),
              "a run past its expected end: spin");
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* A waiter for a run that takes longer than the spin sleeps at once: a
 * waiter that spun its 30 us first kept a core from the threads that ran
 * the request (the CPU device's stream worker and team fill both cores of a
 * 2-core machine under LATENCY: every async request started 30 us late,
 * issue 30). The spin's CPU time is what tells: the least over a few waits
 * of a 5 ms run, of the waiter's own CPU time in wait, is far below 30 us
 * when it sleeps at once (a lock, a futex wait and its wake-up). */
Test(run, a_waiter_sleeps_at_once_for_a_run_longer_than_the_spin)
{
    test_request r;
    request_init(&r);
    atomic_store(&r.work_ms, 5);
    cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(plugin_run_wait(&r.run), RN_OK, "%s", rn_last_error());
    int64_t least = INT64_MAX;
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(start(&r), RN_OK, "%s", rn_last_error());
        int64_t cpu0 = thread_cpu_ns();
        cr_assert_eq(plugin_run_wait(&r.run), RN_OK, "%s", rn_last_error());
        int64_t cpu = thread_cpu_ns() - cpu0;
        least = cpu < least ? cpu : least;
    }
    cr_expect_lt(least, 20000, "the waiter spent %lld ns of CPU in each wait, at least",
                 (long long)least);
    request_fini(&r);
}

static void *finish_now(void *arg)
{
    plugin_run_finish(arg);
    return NULL;
}

/* plugin_run_finish broadcasts to the waiters after it unlocks (a waiter it
 * wakes then takes the lock at once instead of blocking on it): the run may
 * be destroyed and freed as soon as its waiter returns, and the finishing
 * thread must not touch it after that. Freed at once, over many runs, so
 * that ASan (heap-use-after-free) and TSan (a race with the destroy) see a
 * finisher that did. */
Test(run, a_run_freed_as_soon_as_its_wait_returns_is_not_touched_after)
{
    for (int i = 0; i < 300; i++) {
        plugin_run *run = malloc(sizeof *run);
        cr_assert_not_null(run);
        memset(run, 0, sizeof *run);
        plugin_run_init(run, NULL);
        cr_assert_eq(plugin_run_begin(run, "start_async"), RN_OK);
        plugin_run_start_external(run);
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, finish_now, run), 0);
        cr_assert_eq(plugin_run_wait(run), RN_OK, "%s", rn_last_error());
        plugin_run_destroy(run);
        free(run);
        pthread_join(t, NULL);
    }
}
