/* The Chase–Lev deque: edges, order, and exactly-once under one owner and several thieves. */
#include <criterion/criterion.h>

#include "tests/sched/deque_harness.h"

static sched_item item(uint64_t v)
{
    return (sched_item){.p = v, .x = v * 3u};
}

Test(deque, rejects_capacities_that_are_not_powers_of_two, .timeout = 10)
{
    sched_deque d;
    cr_expect_neq(sched_deque_init(&d, 0), 0);
    cr_expect_neq(sched_deque_init(&d, 1), 0);
    cr_expect_neq(sched_deque_init(&d, 3), 0);
    cr_expect_neq(sched_deque_init(&d, 1000), 0);
    cr_assert_eq(sched_deque_init(&d, 2), 0);
    sched_deque_fini(&d);
}

Test(deque, empty_deque_gives_nothing_to_owner_or_thief, .timeout = 10)
{
    sched_deque d;
    cr_assert_eq(sched_deque_init(&d, 2), 0);
    sched_item it;
    cr_expect_not(sched_deque_take(&d, &it));
    cr_expect_eq(sched_deque_steal(&d, &it), SCHED_STEAL_EMPTY);
    cr_expect_not(sched_deque_nonempty(&d));
    /* Empty again after a push and a take, and the indices stay consistent. */
    cr_assert(sched_deque_push(&d, item(7)));
    cr_assert(sched_deque_take(&d, &it));
    cr_expect_eq(it.p, 7);
    cr_expect_not(sched_deque_take(&d, &it));
    cr_expect_eq(sched_deque_steal(&d, &it), SCHED_STEAL_EMPTY);
    cr_expect_eq(sched_deque_size(&d), 0);
    sched_deque_fini(&d);
}

Test(deque, full_deque_refuses_push_at_exactly_its_capacity, .timeout = 10)
{
    for (size_t cap = 2; cap <= 1024; cap *= 2) {
        sched_deque d;
        cr_assert_eq(sched_deque_init(&d, cap), 0);
        for (int round = 0; round < 3; round++) {
            for (size_t i = 0; i < cap; i++)
                cr_assert(sched_deque_push(&d, item(i + 1)), "cap %zu: push %zu refused", cap, i);
            cr_expect_not(sched_deque_push(&d, item(999999)), "cap %zu: push past capacity", cap);
            cr_expect_eq(sched_deque_size(&d), cap);
            /* One steal frees exactly one slot. */
            sched_item it;
            cr_assert_eq(sched_deque_steal(&d, &it), SCHED_STEAL_OK);
            cr_expect_eq(it.p, 1);
            cr_expect(sched_deque_push(&d, item(cap + 1)));
            cr_expect_not(sched_deque_push(&d, item(999999)));
            size_t n = 0;
            while (sched_deque_take(&d, &it))
                n++;
            cr_expect_eq(n, cap, "cap %zu: drained %zu", cap, n);
        }
        sched_deque_fini(&d);
    }
}

Test(deque, owner_takes_lifo_and_thieves_steal_fifo, .timeout = 10)
{
    sched_deque d;
    cr_assert_eq(sched_deque_init(&d, 16), 0);
    for (uint64_t i = 1; i <= 10; i++)
        cr_assert(sched_deque_push(&d, item(i)));
    sched_item it;
    cr_assert_eq(sched_deque_steal(&d, &it), SCHED_STEAL_OK);
    cr_expect_eq(it.p, 1);
    cr_expect_eq(it.x, 3);
    cr_assert_eq(sched_deque_steal(&d, &it), SCHED_STEAL_OK);
    cr_expect_eq(it.p, 2);
    cr_assert(sched_deque_take(&d, &it));
    cr_expect_eq(it.p, 10);
    cr_assert(sched_deque_take(&d, &it));
    cr_expect_eq(it.p, 9);
    /* Wrap around the buffer many times. */
    for (uint64_t i = 100; i < 1100; i++) {
        cr_assert(sched_deque_push(&d, item(i)));
        cr_assert_eq(sched_deque_steal(&d, &it), SCHED_STEAL_OK);
    }
    cr_expect_eq(sched_deque_size(&d), 6);
    sched_deque_fini(&d);
}

Test(deque, every_item_consumed_exactly_once_under_thieves, .timeout = 120)
{
    /* Millions of mixed operations over every capacity from 2 to 1024. */
    uint64_t total_ops = 0;
    for (size_t cap = 2; cap <= 1024; cap *= 2) {
        for (int thieves = 1; thieves <= 3; thieves += 2) {
            harness_result res = {0};
            uint64_t n = 150000 / HARNESS_SCALE;
            cr_assert_eq(harness_run(cap, n, thieves, cap * 7919u + (uint64_t)thieves, &res), 0);
            cr_expect_eq(res.corrupt, 0, "cap %zu, %d thieves: indices crossed", cap, thieves);
            cr_expect_eq(res.duplicates, 0, "cap %zu, %d thieves: %llu duplicated", cap, thieves,
                         (unsigned long long)res.duplicates);
            cr_expect_eq(res.lost, 0, "cap %zu, %d thieves: %llu lost", cap, thieves,
                         (unsigned long long)res.lost);
            total_ops += res.operations;
        }
    }
    cr_expect_geq(total_ops, 4000000u / HARNESS_SCALE, "only %llu operations",
                  (unsigned long long)total_ops);
}
