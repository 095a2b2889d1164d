/* The injection queue: exact capacity, FIFO, and exactly-once under many producers and
 * consumers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>

#include "sched/inject.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SCALE 8
#else
#define SCALE 1
#endif

static sched_item item(uint64_t v)
{
    return (sched_item){.p = v, .x = ~v};
}

Test(inject, holds_exactly_its_capacity_in_fifo_order, .timeout = 10)
{
    for (size_t cap = 2; cap <= 512; cap *= 4) {
        sched_inject q;
        cr_assert_eq(sched_inject_init(&q, cap), 0);
        sched_item it;
        cr_expect_not(sched_inject_pop(&q, &it));
        cr_expect_not(sched_inject_nonempty(&q));
        for (int round = 0; round < 3; round++) {
            for (size_t i = 0; i < cap; i++)
                cr_assert(sched_inject_push(&q, item(i + 1)), "cap %zu: push %zu refused", cap, i);
            cr_expect_not(sched_inject_push(&q, item(999)), "cap %zu: usable past capacity", cap);
            cr_expect(sched_inject_nonempty(&q));
            for (size_t i = 0; i < cap; i++) {
                cr_assert(sched_inject_pop(&q, &it));
                cr_assert_eq(it.p, i + 1, "not FIFO");
                cr_assert_eq(it.x, ~(uint64_t)(i + 1));
            }
            cr_expect_not(sched_inject_pop(&q, &it));
        }
        sched_inject_fini(&q);
    }
    sched_inject q;
    cr_expect_neq(sched_inject_init(&q, 3), 0);
    cr_expect_neq(sched_inject_init(&q, 1), 0);
}

enum { PRODUCERS = 3, CONSUMERS = 3 };

typedef struct mpmc {
    sched_inject q;
    uint64_t per_producer;
    sched_atomic_u32 producers_left;
    sched_atomic_u32 *count; /* per id: times dequeued; [0] counts torn or reordered items */
} mpmc;

typedef struct worker_arg {
    mpmc *m;
    uint64_t index;
} worker_arg;

static void *producer(void *arg)
{
    worker_arg *w = arg;
    mpmc *m = w->m;
    for (uint64_t i = 0; i < m->per_producer; i++) {
        uint64_t id = 1 + w->index * m->per_producer + i;
        while (!sched_inject_push(&m->q, item(id)))
            sched_yield(); /* six threads share two cores here: let a consumer run */
    }
    sched_atomic_fetch_sub_u32(&m->producers_left, 1, SCHED_RELEASE);
    return NULL;
}

static void *consumer(void *arg)
{
    worker_arg *w = arg;
    mpmc *m = w->m;
    uint64_t last[PRODUCERS] = {0};
    for (;;) {
        sched_item it;
        if (sched_inject_pop(&m->q, &it)) {
            if (it.x != ~it.p || it.p == 0 || it.p > PRODUCERS * m->per_producer) {
                sched_atomic_fetch_add_u32(&m->count[0], 1, SCHED_RELAXED);
                continue;
            }
            sched_atomic_fetch_add_u32(&m->count[it.p], 1, SCHED_RELAXED);
            /* Each producer's items leave in the order they entered. */
            uint64_t p = (it.p - 1) / m->per_producer;
            if (it.p <= last[p])
                sched_atomic_fetch_add_u32(&m->count[0], 1, SCHED_RELAXED);
            last[p] = it.p;
        } else if (sched_atomic_load_u32(&m->producers_left, SCHED_ACQUIRE) == 0 &&
                   !sched_inject_nonempty(&m->q)) {
            break;
        } else {
            sched_yield();
        }
    }
    return NULL;
}

Test(inject, every_item_dequeued_exactly_once_under_contention, .timeout = 60)
{
    for (size_t cap = 2; cap <= 1024; cap *= 8) {
        mpmc m;
        cr_assert_eq(sched_inject_init(&m.q, cap), 0);
        m.per_producer = 60000 / SCALE;
        uint64_t n = PRODUCERS * m.per_producer;
        sched_atomic_init_u32(&m.producers_left, PRODUCERS);
        m.count = calloc(n + 1, sizeof(*m.count));
        pthread_t t[PRODUCERS + CONSUMERS];
        worker_arg args[PRODUCERS + CONSUMERS];
        for (int i = 0; i < PRODUCERS + CONSUMERS; i++) {
            args[i] = (worker_arg){.m = &m, .index = (uint64_t)(i % PRODUCERS)};
            pthread_create(&t[i], NULL, i < PRODUCERS ? producer : consumer, &args[i]);
        }
        for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
            pthread_join(t[i], NULL);
        cr_expect_eq(sched_atomic_load_u32(&m.count[0], SCHED_RELAXED), 0,
                     "cap %zu: torn or reordered items", cap);
        uint64_t bad = 0;
        for (uint64_t id = 1; id <= n; id++)
            bad += sched_atomic_load_u32(&m.count[id], SCHED_RELAXED) != 1;
        cr_expect_eq(bad, 0, "cap %zu: %llu ids not dequeued exactly once", cap,
                     (unsigned long long)bad);
        free(m.count);
        sched_inject_fini(&m.q);
    }
}
