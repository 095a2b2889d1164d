/* Event counts and futexes: see sched/ec.h. */
#include "sched/ec.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t sched_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec timespec_from_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    return ts;
}

/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, which is what both the event
 * count and the instance waits carry. */
static void futex_wait_abs(const void *addr, uint32_t expected, const struct timespec *deadline)
{
    syscall(SYS_futex, addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, deadline, NULL,
            FUTEX_BITSET_MATCH_ANY);
}

void sched_futex_wait(const void *addr, uint32_t expected, uint64_t deadline_ns)
{
    if (deadline_ns == 0) {
        futex_wait_abs(addr, expected, NULL);
    } else {
        struct timespec ts = timespec_from_ns(deadline_ns);
        futex_wait_abs(addr, expected, &ts);
    }
}

void sched_futex_wake_all(const void *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

#if defined(RN_ATOMIC_C11)

#define EC_FLAG 0x80000000u
#define EC_MASK 0x7fffffffu

void sched_ec_init(sched_ec *ec)
{
    sched_atomic_init_u32(&ec->word, 0);
}

uint32_t sched_ec_value(const sched_ec *ec)
{
    return sched_atomic_load_u32(&ec->word, SCHED_ACQUIRE) & EC_MASK;
}

void sched_ec_inc(sched_ec *ec)
{
    uint32_t old = sched_atomic_load_u32(&ec->word, SCHED_RELAXED);
    while (!sched_atomic_cas_u32(&ec->word, &old, ((old & EC_MASK) + 1) & EC_MASK, SCHED_SEQ_CST)) {
    }
    if (old & EC_FLAG)
        sched_futex_wake_all(&ec->word);
}

int sched_ec_wait(sched_ec *ec, uint32_t snapshot, uint64_t deadline_ns)
{
    for (;;) {
        uint32_t w = sched_atomic_load_u32(&ec->word, SCHED_ACQUIRE);
        if ((w & EC_MASK) != (snapshot & EC_MASK))
            return 0;
        if (!(w & EC_FLAG)) {
            /* Announce a sleeper so that the next increment takes the futex path. */
            if (!sched_atomic_cas_u32(&ec->word, &w, w | EC_FLAG, SCHED_SEQ_CST))
                continue;
            w |= EC_FLAG;
        }
        if (deadline_ns != 0 && sched_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
        sched_futex_wait(&ec->word, w, deadline_ns);
    }
}

#else /* ck_ec32 backend */

static int ec_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
    (void)ops;
    return clock_gettime(CLOCK_MONOTONIC, out);
}

static void ec_wait32(const struct ck_ec_wait_state *state, const uint32_t *addr, uint32_t expected,
                      const struct timespec *deadline)
{
    (void)state;
    futex_wait_abs(addr, expected, deadline);
}

static void ec_wait64(const struct ck_ec_wait_state *state, const uint64_t *addr, uint64_t expected,
                      const struct timespec *deadline)
{
    /* Little-endian: the futex word is the low half. ck_ec64 is not used by runnel. */
    (void)state;
    futex_wait_abs(addr, (uint32_t)expected, deadline);
}

static void ec_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
    (void)ops;
    sched_futex_wake_all(addr);
}

static void ec_wake64(const struct ck_ec_ops *ops, const uint64_t *addr)
{
    (void)ops;
    sched_futex_wake_all(addr);
}

/* The scheduler spins on its own before it parks, so ck_ec's busy loop is kept short, and its
 * exponential back-off (2 ms, 16 ms, ... of periodic wake-ups) is replaced by one long sleep. */
static const struct ck_ec_ops ec_ops = {
    .gettime = ec_gettime,
    .wait32 = ec_wait32,
    .wait64 = ec_wait64,
    .wake32 = ec_wake32,
    .wake64 = ec_wake64,
    .busy_loop_iter = 1,
    .initial_wait_ns = 1000000000u,
};

static const struct ck_ec_mode ec_mode = {
    .ops = &ec_ops,
    .single_producer = false,
};

void sched_ec_init(sched_ec *ec)
{
    ck_ec32_init(&ec->ec, 0);
}

uint32_t sched_ec_value(const sched_ec *ec)
{
    return ck_ec32_value(&ec->ec);
}

void sched_ec_inc(sched_ec *ec)
{
    ck_ec32_inc(&ec->ec, &ec_mode);
}

int sched_ec_wait(sched_ec *ec, uint32_t snapshot, uint64_t deadline_ns)
{
    if (deadline_ns == 0)
        return ck_ec32_wait(&ec->ec, &ec_mode, snapshot, NULL) == 0 ? 0 : -ETIMEDOUT;
    struct timespec ts = timespec_from_ns(deadline_ns);
    return ck_ec32_wait(&ec->ec, &ec_mode, snapshot, &ts) == 0 ? 0 : -ETIMEDOUT;
}

#endif
