/*
 * sched/ec.h — event counts and futexes for parking threads (private to sched/).
 *
 * An event count lets a thread sleep until "something happened since I last looked" without
 * a lock: the sleeper reads the count (a snapshot), re-checks its condition, and waits only
 * while the count still equals the snapshot; a waker changes the state, then increments the
 * count. The order matters: the snapshot is taken *before* the final check, so an increment
 * that races with the check makes the wait return at once instead of being lost.
 *
 * With the default ck_pr backend this is concurrencykit's ck_ec32 driven by the futex
 * wait/wake hooks defined in ec.c; the C11 backend (tsan build) has a small implementation of
 * the same protocol on sched/atomic.h, since ThreadSanitizer cannot see ck's inline assembly.
 * Increments are cheap when nobody sleeps (one locked add); the futex is only touched when the
 * count's "waiters" flag is set.
 */
#ifndef RN_SCHED_EC_H
#define RN_SCHED_EC_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/atomic.h"

#if defined(RN_ATOMIC_C11)
typedef struct sched_ec {
    sched_atomic_u32 word; /* bit 31: a thread may be sleeping; bits 0-30: the count */
} sched_ec;
#else
#include <ck_ec.h>
typedef struct sched_ec {
    ck_ec32_t ec;
} sched_ec;
#endif

/* Initializes the count to 0. */
void sched_ec_init(sched_ec *ec);

/* The current count (acquire): the snapshot to pass to sched_ec_wait. */
uint32_t sched_ec_value(const sched_ec *ec);

/* Increments the count (a full barrier) and wakes every thread waiting on it. */
void sched_ec_inc(sched_ec *ec);

/* Sleeps while the count equals `snapshot`, until `deadline_ns` on the CLOCK_MONOTONIC clock
 * (0: no deadline). Returns 0 when the count changed, -ETIMEDOUT at the deadline. May return 0
 * spuriously only if the count changed; callers re-check their condition anyway. */
int sched_ec_wait(sched_ec *ec, uint32_t snapshot, uint64_t deadline_ns);

/* Sleeps while the 32-bit word at `addr` equals `expected`, until `deadline_ns` on the
 * CLOCK_MONOTONIC clock (0: no deadline). May return early for any reason. */
void sched_futex_wait(const void *addr, uint32_t expected, uint64_t deadline_ns);

/* Wakes every thread sleeping in sched_futex_wait on `addr`. Safe to call on memory that was
 * freed since (the kernel reports a fault or wakes a stranger, which re-checks and sleeps). */
void sched_futex_wake_all(const void *addr);

/* Nanoseconds on the CLOCK_MONOTONIC clock. */
uint64_t sched_now_ns(void);

#endif /* RN_SCHED_EC_H */
