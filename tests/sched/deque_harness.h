/*
 * The exactly-once harness for the Chase–Lev deque, shared by test_deque.c and its negative
 * control test_deque_nofence.c (which compiles sched/deque.h without the StoreLoad fence).
 *
 * One owner pushes the ids 1..n and interleaves takes so that the deque hovers around a few
 * items (where the owner and the thieves race for the last one); several thieves steal
 * without pause. Every consumer logs what it got; afterwards each id must have been consumed
 * exactly once.
 */
#ifndef RN_TESTS_SCHED_DEQUE_HARNESS_H
#define RN_TESTS_SCHED_DEQUE_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/atomic.h"
#include "sched/deque.h"

/* Sanitizers make every atomic a call: scale the work down under them. */
#if defined(__SANITIZE_THREAD__)
#define HARNESS_SCALE 8
#elif defined(__SANITIZE_ADDRESS__)
#define HARNESS_SCALE 4
#else
#define HARNESS_SCALE 1
#endif

#define HARNESS_MAX_THIEVES 8

typedef struct harness_log {
    uint64_t *ids;
    size_t n;
} harness_log;

typedef struct harness {
    sched_deque d;
    uint64_t n_items;
    int n_thieves;
    uint64_t seed;
    sched_atomic_u32 done;
    sched_atomic_u32 ready;
    harness_log owner_log;
    harness_log thief_log[HARNESS_MAX_THIEVES];
    uint64_t pushes;
    uint64_t takes;
    bool corrupt;         /* the indices crossed: push refused while take found nothing */
    uint64_t last_pushed; /* the highest id pushed */
} harness;

typedef struct harness_result {
    uint64_t corrupt; /* rounds whose deque indices became inconsistent */
    uint64_t duplicates;
    uint64_t lost;
    uint64_t operations;
} harness_result;

typedef struct harness_thief {
    harness *h;
    int index;
} harness_thief;

static inline uint64_t harness_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static void harness_record(harness_log *log, sched_item it)
{
    log->ids[log->n++] = it.p;
}

static void *harness_thief_main(void *arg)
{
    harness_thief *t = arg;
    harness *h = t->h;
    harness_log *log = &h->thief_log[t->index];
    sched_atomic_fetch_add_u32(&h->ready, 1, SCHED_SEQ_CST);
    for (;;) {
        sched_item it;
        sched_steal_result r = sched_deque_steal(&h->d, &it);
        if (r == SCHED_STEAL_OK) {
            if (it.x != it.p * 3u) /* a torn item is a failure too: count it as lost */
                it.p = 0;
            harness_record(log, it);
        } else if (r == SCHED_STEAL_EMPTY && sched_atomic_load_u32(&h->done, SCHED_ACQUIRE)) {
            break;
        }
    }
    return NULL;
}

static void harness_owner(harness *h)
{
    uint64_t next = 1;
    uint64_t rng = h->seed | 1;
    sched_item it;
    while (next <= h->n_items) {
        uint64_t r = harness_rand(&rng);
        int pushes = 1 + (int)(r & 3);
        int takes = (int)((r >> 2) & 3);
        for (int i = 0; i < pushes && next <= h->n_items; i++) {
            sched_item in = {.p = next, .x = next * 3u};
            if (sched_deque_push(&h->d, in)) {
                next++;
                h->pushes++;
            } else if (sched_deque_take(&h->d, &it)) {
                h->takes++;
                harness_record(&h->owner_log, it);
            } else if ((int64_t)(sched_atomic_load_u64(&h->d.bottom, SCHED_RELAXED) -
                                 sched_atomic_load_u64(&h->d.top, SCHED_ACQUIRE)) < 0) {
                /* top passed bottom while the owner is outside take: a correct deque never
                 * gets here, and a broken one would refuse every push from now on. */
                h->corrupt = true;
                next = h->n_items + 1;
                break;
            }
        }
        for (int i = 0; i < takes; i++) {
            h->takes++;
            if (sched_deque_take(&h->d, &it))
                harness_record(&h->owner_log, it);
        }
    }
    h->last_pushed = h->corrupt ? h->pushes : h->n_items;
    while (!h->corrupt && sched_deque_take(&h->d, &it))
        harness_record(&h->owner_log, it);
    sched_atomic_store_u32(&h->done, 1, SCHED_RELEASE);
}

/* Runs one round and counts duplicated and lost ids. Returns -1 when setup fails. */
static int harness_run(size_t capacity, uint64_t n_items, int n_thieves, uint64_t seed,
                       harness_result *res)
{
    harness *h = calloc(1, sizeof(*h));
    if (h == NULL || sched_deque_init(&h->d, capacity) != 0)
        return -1;
    h->n_items = n_items;
    h->n_thieves = n_thieves;
    h->seed = seed;
    sched_atomic_init_u32(&h->done, 0);
    sched_atomic_init_u32(&h->ready, 0);
    /* Room for every id twice: a broken deque may hand out duplicates. */
    h->owner_log.ids = malloc((2 * n_items + 16) * sizeof(uint64_t));
    for (int i = 0; i < n_thieves; i++)
        h->thief_log[i].ids = malloc((2 * n_items + 16) * sizeof(uint64_t));

    pthread_t threads[HARNESS_MAX_THIEVES];
    harness_thief thieves[HARNESS_MAX_THIEVES];
    for (int i = 0; i < n_thieves; i++) {
        thieves[i] = (harness_thief){.h = h, .index = i};
        pthread_create(&threads[i], NULL, harness_thief_main, &thieves[i]);
    }
    while (sched_atomic_load_u32(&h->ready, SCHED_ACQUIRE) < (uint32_t)n_thieves)
        sched_cpu_relax();
    harness_owner(h);
    for (int i = 0; i < n_thieves; i++)
        pthread_join(threads[i], NULL);

    uint8_t *count = calloc(n_items + 1, 1);
    *res = (harness_result){.operations = h->pushes + h->takes, .corrupt = h->corrupt};
    harness_log *logs[HARNESS_MAX_THIEVES + 1];
    int n_logs = 0;
    logs[n_logs++] = &h->owner_log;
    for (int i = 0; i < n_thieves; i++)
        logs[n_logs++] = &h->thief_log[i];
    for (int l = 0; l < n_logs; l++) {
        res->operations += l > 0 ? logs[l]->n : 0;
        for (size_t i = 0; i < logs[l]->n; i++) {
            uint64_t id = logs[l]->ids[i];
            if (id == 0 || id > n_items)
                continue;
            if (count[id] < 255)
                count[id]++;
        }
    }
    /* A corrupt deque strands the items it still holds; they are not counted as lost. */
    for (uint64_t id = 1; id <= h->last_pushed; id++) {
        if (count[id] == 0 && !h->corrupt)
            res->lost++;
        else if (count[id] > 1)
            res->duplicates += count[id] - 1u;
    }
    free(count);
    for (int l = 0; l < n_logs; l++)
        free(logs[l]->ids);
    sched_deque_fini(&h->d);
    free(h);
    return 0;
}

#endif /* RN_TESTS_SCHED_DEQUE_HARNESS_H */
