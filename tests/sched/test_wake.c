/* Parking and waking: no lost wake-ups and no starvation. A lost wake-up leaves a task
 * unexecuted with every worker asleep; each wait below is bounded, so it fails, not hangs. */
#include "tests/sched/sched_test_util.h"

static int set_flag(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_store((atomic_int *)arg, 1);
    return SCHED_OK;
}

/* One submission at a time, after pauses long enough for the workers to park (spin_us is 2):
 * every single task must run, each within its own deadline. */
static void submit_after_idle(uint32_t streams, uint32_t workers)
{
    sched_config cfg = test_config(streams, workers, true);
    cfg.spin_us = 2;
    sched *s = test_sched_create(&cfg);
    uint64_t rng = 17;
    int rounds = 1500 / TEST_SCALE;
    for (int i = 0; i < rounds; i++) {
        uint64_t r = test_rand(&rng);
        /* Mostly right around the park transition, sometimes long after it. */
        test_sleep_us(r % 8 == 0 ? 300 : r % 40);
        atomic_int flag = 0;
        cr_assert_eq(sched_submit(s, (int)(r % streams), set_flag, &flag), 0);
        cr_assert(test_wait_flag(&flag, 5000), "task %d lost: no worker woke up", i);
    }
    sched_destroy(s);
}

Test(wake, submission_to_parked_workers_always_runs_one_stream, .timeout = 60)
{
    submit_after_idle(1, 2);
}

Test(wake, submission_to_parked_workers_always_runs_two_streams, .timeout = 60)
{
    submit_after_idle(2, 1);
}

/* Several external threads submit while the workers keep parking and waking. */
typedef struct storm {
    sched *s;
    atomic_uint done;
    int per_thread;
    uint64_t seed;
} storm;

static int storm_task(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add((atomic_uint *)arg, 1);
    return SCHED_OK;
}

static void *storm_submitter(void *arg)
{
    storm *st = arg;
    uint64_t rng = st->seed;
    for (int i = 0; i < st->per_thread; i++) {
        uint64_t r = test_rand(&rng);
        if (r % 3 == 0)
            test_sleep_us(r % 60);
        int rc;
        while ((rc = sched_submit(st->s, SCHED_STREAM_ANY, storm_task, &st->done)) == -EAGAIN)
            test_sleep_us(10);
        if (rc != 0)
            abort();
    }
    return NULL;
}

Test(wake, concurrent_submitters_lose_no_task, .timeout = 60)
{
    sched_config cfg = test_config(2, 2, true);
    cfg.spin_us = 3;
    sched *s = test_sched_create(&cfg);
    enum { THREADS = 4 };
    storm st[THREADS];
    pthread_t t[THREADS];
    atomic_uint *done[THREADS];
    for (int i = 0; i < THREADS; i++) {
        st[i] = (storm){.s = s, .per_thread = 5000 / TEST_SCALE, .seed = 1000u + (uint64_t)i};
        atomic_init(&st[i].done, 0);
        done[i] = &st[i].done;
        cr_assert_eq(pthread_create(&t[i], NULL, storm_submitter, &st[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t end = test_now_ns() + 10ull * 1000000000u;
    for (int i = 0; i < THREADS; i++) {
        while (atomic_load(done[i]) < (unsigned)st[i].per_thread && test_now_ns() < end)
            test_sleep_us(100);
        cr_assert_eq(atomic_load(done[i]), (unsigned)st[i].per_thread,
                     "submitter %d: %u of %d tasks ran", i, atomic_load(done[i]), st[i].per_thread);
    }
    sched_destroy(s);
}

/* Instances started after idle periods, from several threads: every run completes. */
static int tiny_task(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return SCHED_OK;
}

typedef struct starter {
    sched *s;
    sched_dag *dag;
    int rounds;
    uint64_t seed;
    atomic_int failures;
} starter;

static void *starter_main(void *arg)
{
    starter *st = arg;
    sched_instance *inst;
    if (sched_instance_create(st->dag, NULL, &inst) != 0)
        abort();
    uint64_t rng = st->seed;
    for (int i = 0; i < st->rounds; i++) {
        uint64_t r = test_rand(&rng);
        test_sleep_us(r % 5 == 0 ? 200 : r % 30);
        if (sched_instance_start(st->s, inst, SCHED_STREAM_ANY, NULL, NULL) != 0 ||
            sched_instance_wait_for(inst, 5ull * 1000000000u) != 0) {
            atomic_fetch_add(&st->failures, 1);
            break;
        }
    }
    sched_instance_free(inst);
    return NULL;
}

Test(wake, instances_started_after_idle_periods_complete, .timeout = 60)
{
    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    for (uint32_t i = 0; i < 6; i++) {
        cr_assert_eq(sched_dag_add_node(b, NULL, tiny_task, NULL, 0, NULL), 0);
        if (i > 0)
            cr_assert_eq(sched_dag_add_edge(b, i / 2, i), 0);
    }
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    sched_config cfg = test_config(2, 1, true);
    cfg.spin_us = 2;
    sched *s = test_sched_create(&cfg);
    enum { THREADS = 3 };
    starter st[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        st[i] = (starter){.s = s, .dag = dag, .rounds = 800 / TEST_SCALE, .seed = 7u + (uint64_t)i};
        atomic_init(&st[i].failures, 0);
        cr_assert_eq(pthread_create(&t[i], NULL, starter_main, &st[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(atomic_load(&st[i].failures), 0, "starter %d: a run never completed", i);
    }
    sched_destroy(s);
    sched_dag_free(dag);
}

/* A task that keeps resubmitting itself to its own worker's deque until told to stop. */
typedef struct feeder {
    sched *s;
    atomic_int stop;
    atomic_uint spins;
} feeder;

static int feed_task(const sched_task_ctx *ctx, void *arg)
{
    feeder *f = arg;
    atomic_fetch_add(&f->spins, 1);
    if (!atomic_load(&f->stop))
        (void)sched_submit(ctx->sched, SCHED_STREAM_ANY, feed_task, f);
    return SCHED_OK;
}

static int stop_feeder(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_store(&((feeder *)arg)->stop, 1);
    return SCHED_OK;
}

Test(wake, injected_work_is_not_starved_by_a_self_feeding_worker, .timeout = 30)
{
    sched_config cfg = test_config(1, 1, true);
    sched *s = test_sched_create(&cfg);
    feeder f = {.s = s};
    atomic_init(&f.stop, 0);
    atomic_init(&f.spins, 0);
    cr_assert_eq(sched_submit(s, 0, feed_task, &f), 0);
    while (atomic_load(&f.spins) < 1000)
        test_sleep_us(100);
    /* The only worker is busy feeding itself; the injected task must still get its turn. */
    cr_assert_eq(sched_submit(s, 0, stop_feeder, &f), 0);
    atomic_int *stop = &f.stop;
    cr_assert(test_wait_flag(stop, 5000), "injected task starved");
    sched_destroy(s);
}

Test(wake, destroy_returns_with_parked_and_spinning_workers, .timeout = 30)
{
    for (int i = 0; i < 50 / TEST_SCALE + 5; i++) {
        sched_config cfg = test_config(1 + (uint32_t)i % 3, 1 + (uint32_t)i % 2, true);
        cfg.spin_us = (uint32_t)i % 4 == 0 ? 0 : 50;
        sched *s = test_sched_create(&cfg);
        if (i % 2)
            test_sleep_us(200); /* let them park */
        sched_destroy(s);
    }
}

typedef struct hold {
    atomic_int running;
    atomic_int release;
} hold;

static int hold_task(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    hold *h = arg;
    atomic_store(&h->running, 1);
    while (!atomic_load(&h->release))
        test_sleep_us(50);
    return SCHED_OK;
}

Test(wake, full_injection_queue_refuses_then_recovers, .timeout = 30)
{
    sched_config cfg = test_config(1, 1, true);
    cfg.injection_capacity = 4;
    sched *s = test_sched_create(&cfg);
    cr_expect_eq(sched_get_config(s)->injection_capacity, 4);
    hold h;
    atomic_init(&h.running, 0);
    atomic_init(&h.release, 0);
    cr_assert_eq(sched_submit(s, 0, hold_task, &h), 0);
    cr_assert(test_wait_flag(&h.running, 5000));
    /* The only worker is held: the queue takes exactly its capacity, then refuses. */
    atomic_uint ran = 0;
    int accepted = 0;
    while (sched_submit(s, 0, storm_task, &ran) == 0)
        cr_assert_lt(++accepted, 100, "the injection queue is unbounded");
    cr_expect_eq(accepted, 4);
    cr_expect_eq(sched_submit(s, 0, storm_task, &ran), -EAGAIN);
    atomic_store(&h.release, 1);
    uint64_t end = test_now_ns() + 5000000000ull;
    while (atomic_load(&ran) < (unsigned)accepted && test_now_ns() < end)
        test_sleep_us(100);
    cr_expect_eq(atomic_load(&ran), (unsigned)accepted);
    /* Admission resumes once the queue drains. */
    atomic_int flag = 0;
    cr_expect_eq(sched_submit(s, 0, set_flag, &flag), 0);
    cr_expect(test_wait_flag(&flag, 5000));
    sched_destroy(s);
}
