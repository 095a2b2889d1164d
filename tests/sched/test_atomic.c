/* sched/atomic.h: each operation's result, under whichever backend this build selected. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "sched/atomic.h"

Test(atomic, operations_return_the_previous_value, .timeout = 10)
{
    cr_log_info("backend: %s", SCHED_ATOMIC_BACKEND);
    sched_atomic_u32 a;
    sched_atomic_init_u32(&a, 5);
    cr_expect_eq(sched_atomic_load_u32(&a, SCHED_SEQ_CST), 5);
    sched_atomic_store_u32(&a, 7, SCHED_RELEASE);
    cr_expect_eq(sched_atomic_load_u32(&a, SCHED_ACQUIRE), 7);
    sched_atomic_store_u32(&a, 8, SCHED_SEQ_CST);
    cr_expect_eq(sched_atomic_exchange_u32(&a, 9, SCHED_ACQ_REL), 8);
    cr_expect_eq(sched_atomic_fetch_add_u32(&a, 3, SCHED_RELAXED), 9);
    cr_expect_eq(sched_atomic_fetch_sub_u32(&a, 2, SCHED_SEQ_CST), 12);
    cr_expect_eq(sched_atomic_fetch_or_u32(&a, 0x100, SCHED_SEQ_CST), 10);
    cr_expect_eq(sched_atomic_fetch_and_u32(&a, 0xff, SCHED_SEQ_CST), 0x10a);
    cr_expect_eq(sched_atomic_load_u32(&a, SCHED_RELAXED), 10);
    uint32_t expected = 3;
    cr_expect_not(sched_atomic_cas_u32(&a, &expected, 4, SCHED_SEQ_CST));
    cr_expect_eq(expected, 10, "a failed CAS reports the current value");
    cr_expect(sched_atomic_cas_u32(&a, &expected, 4, SCHED_ACQ_REL));
    cr_expect_eq(sched_atomic_load_u32(&a, SCHED_RELAXED), 4);
    /* Wrap-around is modular. */
    sched_atomic_store_u32(&a, 0, SCHED_RELAXED);
    cr_expect_eq(sched_atomic_fetch_sub_u32(&a, 1, SCHED_SEQ_CST), 0);
    cr_expect_eq(sched_atomic_load_u32(&a, SCHED_RELAXED), UINT32_MAX);

    sched_atomic_u64 b;
    sched_atomic_init_u64(&b, UINT64_C(1) << 40);
    cr_expect_eq(sched_atomic_fetch_add_u64(&b, 1, SCHED_SEQ_CST), UINT64_C(1) << 40);
    cr_expect_eq(sched_atomic_exchange_u64(&b, 3, SCHED_SEQ_CST), (UINT64_C(1) << 40) + 1);
    cr_expect_eq(sched_atomic_fetch_or_u64(&b, UINT64_C(1) << 63, SCHED_SEQ_CST), 3);
    cr_expect_eq(sched_atomic_fetch_and_u64(&b, ~(uint64_t)1, SCHED_SEQ_CST),
                 (UINT64_C(1) << 63) | 3);
    uint64_t e64 = (UINT64_C(1) << 63) | 2;
    cr_expect(sched_atomic_cas_u64(&b, &e64, 0, SCHED_SEQ_CST));

    int x, y;
    sched_atomic_ptr p;
    sched_atomic_init_ptr(&p, &x);
    cr_expect_eq(sched_atomic_load_ptr(&p, SCHED_ACQUIRE), &x);
    cr_expect_eq(sched_atomic_exchange_ptr(&p, &y, SCHED_SEQ_CST), &x);
    void *ep = &x;
    cr_expect_not(sched_atomic_cas_ptr(&p, &ep, NULL, SCHED_SEQ_CST));
    cr_expect_eq(ep, &y);
    sched_atomic_store_ptr(&p, NULL, SCHED_SEQ_CST);
    cr_expect_null(sched_atomic_load_ptr(&p, SCHED_RELAXED));
}

typedef struct shared {
    sched_atomic_u64 counter;
    sched_atomic_u32 bits;
    sched_atomic_u64 flag;
    uint64_t payload; /* plain memory, published through `flag` */
    uint64_t seen;
} shared;

static void *adder(void *arg)
{
    shared *s = arg;
    for (int i = 0; i < 100000; i++) {
        sched_atomic_fetch_add_u64(&s->counter, 1, SCHED_RELAXED);
        uint64_t v = sched_atomic_load_u64(&s->counter, SCHED_RELAXED);
        while (!sched_atomic_cas_u64(&s->counter, &v, v + 1, SCHED_ACQ_REL)) {
        }
    }
    return NULL;
}

static void *setter(void *arg)
{
    shared *s = arg;
    for (uint32_t bit = 0; bit < 32; bit += 2)
        sched_atomic_fetch_or_u32(&s->bits, 1u << bit, SCHED_SEQ_CST);
    return NULL;
}

static void *consumer(void *arg)
{
    shared *s = arg;
    while (sched_atomic_load_u64(&s->flag, SCHED_ACQUIRE) == 0)
        sched_cpu_relax();
    s->seen = s->payload;
    return NULL;
}

Test(atomic, concurrent_updates_are_not_lost_and_release_publishes, .timeout = 30)
{
    shared s = {0};
    sched_atomic_init_u64(&s.counter, 0);
    sched_atomic_init_u32(&s.bits, 0);
    sched_atomic_init_u64(&s.flag, 0);
    pthread_t t[4];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, adder, &s);
    pthread_create(&t[3], NULL, setter, &s);
    for (uint32_t bit = 1; bit < 32; bit += 2)
        sched_atomic_fetch_or_u32(&s.bits, 1u << bit, SCHED_SEQ_CST);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_expect_eq(sched_atomic_load_u64(&s.counter, SCHED_SEQ_CST), 600000);
    cr_expect_eq(sched_atomic_load_u32(&s.bits, SCHED_SEQ_CST), UINT32_MAX);

    pthread_t c;
    pthread_create(&c, NULL, consumer, &s);
    s.payload = 42;
    sched_atomic_store_u64(&s.flag, 1, SCHED_RELEASE);
    pthread_join(c, NULL);
    cr_expect_eq(s.seen, 42);
}
