/*
 * sched/deque.h — a bounded Chase–Lev work-stealing deque (private to sched/).
 *
 * After Lê, Pop, Cohen and Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak
 * Memory Models" (PPoPP 2013), without the resizing: the buffer has a fixed power-of-two
 * capacity and a full deque refuses the push (the scheduler then spills to its stream's
 * injection queue). One thread, the owner, pushes and takes at the bottom; any number of
 * thieves steal at the top.
 *
 * The fence that matters on x86 is the StoreLoad in the owner's take, between publishing the
 * decremented bottom and reading top: without it the owner and a thief can both take the last
 * item. It is a seq_cst store of bottom (one `xchg`). Building with
 * -DSCHED_DEQUE_NO_STORELOAD makes that store relaxed: the negative control of
 * tests/sched/test_deque_nofence.c, which must detect the duplicates that follow.
 *
 * Items are two 64-bit words; a word `p` of 0 is never a valid item. The functions are static
 * inline: the owner's push and take are on the scheduler's hottest path.
 */
#ifndef RN_SCHED_DEQUE_H
#define RN_SCHED_DEQUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched/atomic.h"

/* One unit of work: `p` tags what it is (non-zero), `x` carries its payload. */
typedef struct sched_item {
    uint64_t p;
    uint64_t x;
} sched_item;

/* A buffer slot. Both words are atomics because a thief may read a slot that the owner is
 * overwriting; such a read is discarded when the thief's CAS on top fails. */
typedef struct sched_deque_slot {
    sched_atomic_u64 p;
    sched_atomic_u64 x;
} sched_deque_slot;

typedef struct sched_deque {
    SCHED_CACHE_ALIGNED sched_atomic_u64 top;    /* next index to steal; only ever grows */
    SCHED_CACHE_ALIGNED sched_atomic_u64 bottom; /* next index to push; written by the owner */
    uint64_t mask;                               /* capacity - 1 */
    sched_deque_slot *slots;
} sched_deque;

/* The outcome of a steal: an item, nothing to steal, or a lost race (worth retrying). */
typedef enum sched_steal_result {
    SCHED_STEAL_EMPTY = 0,
    SCHED_STEAL_OK = 1,
    SCHED_STEAL_ABORT = 2,
} sched_steal_result;

/* Initializes an empty deque of `capacity` items (a power of two, at least 2).
 * Returns 0, -EINVAL for a bad capacity or -ENOMEM. Not thread-safe. */
static inline int sched_deque_init(sched_deque *d, size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
        return -22; /* EINVAL, without pulling <errno.h> into every includer */
    d->slots = calloc(capacity, sizeof(*d->slots));
    if (d->slots == NULL)
        return -12; /* ENOMEM */
    d->mask = capacity - 1;
    /* Indices start at 1 so that bottom - 1 never wraps below top when the deque is empty. */
    sched_atomic_init_u64(&d->top, 1);
    sched_atomic_init_u64(&d->bottom, 1);
    for (size_t i = 0; i < capacity; i++) {
        sched_atomic_init_u64(&d->slots[i].p, 0);
        sched_atomic_init_u64(&d->slots[i].x, 0);
    }
    return 0;
}

/* Frees the buffer. Not thread-safe; the deque must no longer be used. */
static inline void sched_deque_fini(sched_deque *d)
{
    free(d->slots);
    d->slots = NULL;
}

/* The capacity given to sched_deque_init. */
static inline size_t sched_deque_capacity(const sched_deque *d)
{
    return (size_t)d->mask + 1;
}

/* Owner only. Pushes `it` at the bottom with a release store of bottom, so a thief that sees
 * the new bottom sees the item. Returns false, pushing nothing, when the deque is full.
 * No StoreLoad: a caller that must not lose a wake-up orders the push itself before checking
 * for sleepers (see sched_deque_push_sc). */
static inline bool sched_deque_push(sched_deque *d, sched_item it)
{
    uint64_t b = sched_atomic_load_u64(&d->bottom, SCHED_RELAXED);
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_ACQUIRE);
    if (b - t > d->mask)
        return false;
    sched_deque_slot *s = &d->slots[b & d->mask];
    sched_atomic_store_u64(&s->p, it.p, SCHED_RELAXED);
    sched_atomic_store_u64(&s->x, it.x, SCHED_RELAXED);
    sched_atomic_store_u64(&d->bottom, b + 1, SCHED_RELEASE);
    return true;
}

/* Owner only. Like sched_deque_push, but the store of bottom is seq_cst: a seq_cst load that
 * follows it (a check for sleeping workers) cannot be ordered before the push. */
static inline bool sched_deque_push_sc(sched_deque *d, sched_item it)
{
    uint64_t b = sched_atomic_load_u64(&d->bottom, SCHED_RELAXED);
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_ACQUIRE);
    if (b - t > d->mask)
        return false;
    sched_deque_slot *s = &d->slots[b & d->mask];
    sched_atomic_store_u64(&s->p, it.p, SCHED_RELAXED);
    sched_atomic_store_u64(&s->x, it.x, SCHED_RELAXED);
    sched_atomic_store_u64(&d->bottom, b + 1, SCHED_SEQ_CST);
    return true;
}

/* Owner only. Takes the most recently pushed item (LIFO). Returns false when empty. */
static inline bool sched_deque_take(sched_deque *d, sched_item *out)
{
    uint64_t b = sched_atomic_load_u64(&d->bottom, SCHED_RELAXED) - 1;
#if defined(SCHED_DEQUE_NO_STORELOAD)
    /* Negative control: the load of top below may now be satisfied before this store is
     * visible to thieves, and the last item can be taken twice. */
    sched_atomic_store_u64(&d->bottom, b, SCHED_RELAXED);
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_RELAXED);
#else
    /* StoreLoad: publish the claim on slot b before reading top. */
    sched_atomic_store_u64(&d->bottom, b, SCHED_SEQ_CST);
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_SEQ_CST);
#endif
    if ((int64_t)(b - t) < 0) {
        /* Empty: restore bottom. */
        sched_atomic_store_u64(&d->bottom, b + 1, SCHED_RELAXED);
        return false;
    }
    sched_deque_slot *s = &d->slots[b & d->mask];
    sched_item it = {
        .p = sched_atomic_load_u64(&s->p, SCHED_RELAXED),
        .x = sched_atomic_load_u64(&s->x, SCHED_RELAXED),
    };
    if (b != t) {
        /* More than one item: no thief can reach slot b. */
        *out = it;
        return true;
    }
    /* The last item: race the thieves for it on top. */
    bool won = sched_atomic_cas_u64(&d->top, &t, t + 1, SCHED_SEQ_CST);
    sched_atomic_store_u64(&d->bottom, b + 1, SCHED_RELAXED);
    if (won)
        *out = it;
    return won;
}

/* Any thread. Steals the oldest item (FIFO). SCHED_STEAL_ABORT means another thread won the
 * race for it; the deque may still hold items. */
static inline sched_steal_result sched_deque_steal(sched_deque *d, sched_item *out)
{
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_SEQ_CST);
    uint64_t b = sched_atomic_load_u64(&d->bottom, SCHED_SEQ_CST);
    if ((int64_t)(b - t) <= 0)
        return SCHED_STEAL_EMPTY;
    sched_deque_slot *s = &d->slots[t & d->mask];
    sched_item it = {
        .p = sched_atomic_load_u64(&s->p, SCHED_RELAXED),
        .x = sched_atomic_load_u64(&s->x, SCHED_RELAXED),
    };
    if (!sched_atomic_cas_u64(&d->top, &t, t + 1, SCHED_SEQ_CST))
        return SCHED_STEAL_ABORT;
    *out = it;
    return SCHED_STEAL_OK;
}

/* Any thread. True when the deque looked non-empty at the time of the (seq_cst) loads; used by
 * a worker's last scan before it parks. */
static inline bool sched_deque_nonempty(const sched_deque *d)
{
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_SEQ_CST);
    uint64_t b = sched_atomic_load_u64(&d->bottom, SCHED_SEQ_CST);
    return (int64_t)(b - t) > 0;
}

/* Any thread. An estimate of the number of items. */
static inline size_t sched_deque_size(const sched_deque *d)
{
    uint64_t t = sched_atomic_load_u64(&d->top, SCHED_RELAXED);
    uint64_t b = sched_atomic_load_u64(&d->bottom, SCHED_RELAXED);
    return (int64_t)(b - t) > 0 ? (size_t)(b - t) : 0;
}

#endif /* RN_SCHED_DEQUE_H */
