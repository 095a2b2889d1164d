/*
 * sched/inject.h — a stream's bounded multi-producer multi-consumer injection queue
 * (private to sched/).
 *
 * Work submitted from outside a stream's workers (an instance start, a one-off task, a node
 * completed by a device thread, a spilled deque push) enters here; the stream's workers, and
 * idle workers of other streams, dequeue it. The bound is admission control: an external
 * submission to a full queue fails with -EAGAIN instead of growing memory.
 *
 * The algorithm is Dmitry Vyukov's bounded MPMC queue: every cell carries a sequence number
 * that says whose turn it is, producers and consumers claim positions with a CAS and then
 * publish through the cell's sequence. It is FIFO, its usable capacity is exactly its size
 * (unlike ck_ring, whose usable capacity is size - 1), one producer never waits for another's
 * commit (unlike ck_ring's MPMC enqueue), and it has no ABA problem because positions only
 * grow. It is written on sched/atomic.h so that the tsan build sees every access.
 *
 * A consumer can see a claimed cell whose producer has not yet published; it then reports the
 * queue empty. That is safe: the producer notifies the workers after publishing.
 */
#ifndef RN_SCHED_INJECT_H
#define RN_SCHED_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched/atomic.h"
#include "sched/deque.h"

typedef struct sched_inject_cell {
    sched_atomic_u64 seq;
    sched_atomic_u64 p;
    sched_atomic_u64 x;
    uint64_t pad_;
} sched_inject_cell;

typedef struct sched_inject {
    SCHED_CACHE_ALIGNED sched_atomic_u64 head; /* next position to dequeue */
    SCHED_CACHE_ALIGNED sched_atomic_u64 tail; /* next position to enqueue */
    SCHED_CACHE_ALIGNED uint64_t mask;
    sched_inject_cell *cells;
} sched_inject;

/* Initializes an empty queue of `capacity` cells (a power of two, at least 2). Returns 0,
 * -EINVAL or -ENOMEM. Not thread-safe. */
static inline int sched_inject_init(sched_inject *q, size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
        return -22; /* EINVAL */
    q->cells = aligned_alloc(SCHED_CACHE_LINE, capacity * sizeof(*q->cells));
    if (q->cells == NULL)
        return -12; /* ENOMEM */
    q->mask = capacity - 1;
    for (size_t i = 0; i < capacity; i++) {
        sched_atomic_init_u64(&q->cells[i].seq, i);
        sched_atomic_init_u64(&q->cells[i].p, 0);
        sched_atomic_init_u64(&q->cells[i].x, 0);
        q->cells[i].pad_ = 0;
    }
    sched_atomic_init_u64(&q->head, 0);
    sched_atomic_init_u64(&q->tail, 0);
    return 0;
}

/* Frees the cells. Not thread-safe; the queue must no longer be used. */
static inline void sched_inject_fini(sched_inject *q)
{
    free(q->cells);
    q->cells = NULL;
}

static inline size_t sched_inject_capacity(const sched_inject *q)
{
    return (size_t)q->mask + 1;
}

/* Any thread. Appends `it`; returns false when the queue is full. The publishing store is
 * seq_cst, so a seq_cst load of the sleepers' state that follows cannot pass it (the
 * StoreLoad that external submissions never skip). */
static inline bool sched_inject_push(sched_inject *q, sched_item it)
{
    uint64_t pos = sched_atomic_load_u64(&q->tail, SCHED_RELAXED);
    sched_inject_cell *c;
    for (;;) {
        c = &q->cells[pos & q->mask];
        uint64_t seq = sched_atomic_load_u64(&c->seq, SCHED_ACQUIRE);
        int64_t dif = (int64_t)(seq - pos);
        if (dif == 0) {
            if (sched_atomic_cas_u64(&q->tail, &pos, pos + 1, SCHED_RELAXED))
                break;
        } else if (dif < 0) {
            return false;
        } else {
            pos = sched_atomic_load_u64(&q->tail, SCHED_RELAXED);
        }
    }
    sched_atomic_store_u64(&c->p, it.p, SCHED_RELAXED);
    sched_atomic_store_u64(&c->x, it.x, SCHED_RELAXED);
    sched_atomic_store_u64(&c->seq, pos + 1, SCHED_SEQ_CST);
    return true;
}

/* Any thread. Removes the oldest published item; returns false when there is none. */
static inline bool sched_inject_pop(sched_inject *q, sched_item *out)
{
    uint64_t pos = sched_atomic_load_u64(&q->head, SCHED_RELAXED);
    sched_inject_cell *c;
    for (;;) {
        c = &q->cells[pos & q->mask];
        uint64_t seq = sched_atomic_load_u64(&c->seq, SCHED_ACQUIRE);
        int64_t dif = (int64_t)(seq - (pos + 1));
        if (dif == 0) {
            if (sched_atomic_cas_u64(&q->head, &pos, pos + 1, SCHED_RELAXED))
                break;
        } else if (dif < 0) {
            return false;
        } else {
            pos = sched_atomic_load_u64(&q->head, SCHED_RELAXED);
        }
    }
    out->p = sched_atomic_load_u64(&c->p, SCHED_RELAXED);
    out->x = sched_atomic_load_u64(&c->x, SCHED_RELAXED);
    sched_atomic_store_u64(&c->seq, pos + q->mask + 1, SCHED_RELEASE);
    return true;
}

/* Any thread. True when the next cell to dequeue holds a published item at the time of the
 * (seq_cst) loads; used by a worker's last scan before it parks. */
static inline bool sched_inject_nonempty(const sched_inject *q)
{
    uint64_t pos = sched_atomic_load_u64(&q->head, SCHED_SEQ_CST);
    uint64_t seq = sched_atomic_load_u64(&q->cells[pos & q->mask].seq, SCHED_SEQ_CST);
    return seq == pos + 1;
}

#endif /* RN_SCHED_INJECT_H */
