/* The event count that workers park on: no lost wake-up between snapshot and wait. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>

#include "sched/ec.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SCALE 8
#else
#define SCALE 1
#endif

Test(ec, wait_returns_at_once_when_the_count_moved, .timeout = 10)
{
    sched_ec ec;
    sched_ec_init(&ec);
    uint32_t snap = sched_ec_value(&ec);
    cr_expect_eq(snap, 0);
    sched_ec_inc(&ec);
    cr_expect_eq(sched_ec_value(&ec), 1);
    cr_expect_eq(sched_ec_wait(&ec, snap, 0), 0);
}

Test(ec, wait_times_out_at_its_deadline, .timeout = 10)
{
    sched_ec ec;
    sched_ec_init(&ec);
    uint64_t t0 = sched_now_ns();
    cr_expect_eq(sched_ec_wait(&ec, sched_ec_value(&ec), t0 + 20000000u), -ETIMEDOUT);
    uint64_t waited = sched_now_ns() - t0;
    cr_expect_geq(waited, 19000000u, "returned after %llu ns", (unsigned long long)waited);
    cr_expect_lt(waited, 2000000000u);
}

/* Ping-pong: two threads hand a token back and forth through two event counts, each
 * sleeping on its own count. A lost wake-up stalls the game and trips the timeout. */
typedef struct pingpong {
    sched_ec ec[2];
    sched_atomic_u32 turn;
    int rounds;
} pingpong;

typedef struct player {
    pingpong *g;
    uint32_t me;
} player;

static void *play(void *arg)
{
    player *p = arg;
    pingpong *g = p->g;
    for (int i = 0; i < g->rounds; i++) {
        for (;;) {
            uint32_t snap = sched_ec_value(&g->ec[p->me]);
            if (sched_atomic_load_u32(&g->turn, SCHED_SEQ_CST) == p->me)
                break;
            sched_ec_wait(&g->ec[p->me], snap, 0);
        }
        sched_atomic_store_u32(&g->turn, 1 - p->me, SCHED_SEQ_CST);
        sched_ec_inc(&g->ec[1 - p->me]);
    }
    return NULL;
}

Test(ec, ping_pong_never_loses_a_wake_up, .timeout = 60)
{
    pingpong g;
    sched_ec_init(&g.ec[0]);
    sched_ec_init(&g.ec[1]);
    sched_atomic_init_u32(&g.turn, 0);
    g.rounds = 20000 / SCALE;
    player a = {&g, 0}, b = {&g, 1};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, play, &a);
    pthread_create(&tb, NULL, play, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_expect_eq(sched_atomic_load_u32(&g.turn, SCHED_SEQ_CST), 0);
}
