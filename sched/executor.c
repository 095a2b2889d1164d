/*
 * Named executors: groups of threads outside the streams ("callback", "device-wait") that run
 * the DAG nodes routed to them, in FIFO order.
 *
 * Their queue is a growable ring under a mutex with a condition variable. Executor nodes are
 * pipeline stages (a callback, a blocking device wait), orders of magnitude rarer and longer
 * than kernel tasks, and their threads must sleep without spinning; a mutex makes the queue
 * unbounded (a worker releasing a node must never fail or block for long) and plainly correct.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sched/internal.h"

void sched_i_executor_push(sched_executor *e, sched_item it)
{
    pthread_mutex_lock(&e->lock);
    if (e->count == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        sched_item *ring = malloc(cap * sizeof(*ring));
        /* Out of memory on a path that must not fail: nothing sane is left to do. */
        if (ring == NULL)
            abort();
        for (size_t i = 0; i < e->count; i++)
            ring[i] = e->ring[(e->head + i) % e->cap];
        free(e->ring);
        e->ring = ring;
        e->cap = cap;
        e->head = 0;
    }
    e->ring[(e->head + e->count) % e->cap] = it;
    e->count++;
    pthread_mutex_unlock(&e->lock);
    /* Signalled after the unlock: a thread woken under the lock runs at once where it shares
     * the pusher's CPU (a stream worker finishing a request, and the callback thread), finds
     * the mutex held and sleeps on it again: two more switches before the callback runs. The
     * waiter rechecks the count under the lock, so nothing is lost. */
    pthread_cond_signal(&e->cond);
}

/* "rn-callback", "rn-device-wait" (cut to 15 bytes). Set by the creator
 * right after pthread_create, so no thread is seen under the process's
 * name once sched_executor_create returns (tests count threads by name). */
static void name_thread(const sched_executor *e, pthread_t thread)
{
    char name[16] = "rn-";
    size_t n = strlen(e->name) < sizeof name - 4 ? strlen(e->name) : sizeof name - 4;
    memcpy(name + 3, e->name, n);
    name[3 + n] = '\0';
    (void)pthread_setname_np(thread, name);
}

static void *executor_main(void *arg)
{
    sched_exec_thread *t = arg;
    sched_executor *e = t->exec;
    sched_i_set_current_runner(&t->runner);
    for (;;) {
        pthread_mutex_lock(&e->lock);
        while (e->count == 0 && !e->stop)
            pthread_cond_wait(&e->cond, &e->lock);
        if (e->count == 0) {
            pthread_mutex_unlock(&e->lock);
            break;
        }
        sched_item it = e->ring[e->head];
        e->head = (e->head + 1) % e->cap;
        e->count--;
        pthread_mutex_unlock(&e->lock);
        sched_i_run_item(&t->runner, it);
    }
    return NULL;
}

static void executor_free(sched_executor *e)
{
    for (uint32_t i = 0; e->threads != NULL && i < e->n_threads; i++)
        sched_i_trace_fini(&e->threads[i].trace);
    free(e->threads);
    free(e->ring);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
}

/* Stops `e` after its queue drains and joins its first `n` threads. */
static void executor_join(sched_executor *e, uint32_t n)
{
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    for (uint32_t i = 0; i < n; i++)
        pthread_join(e->threads[i].thread, NULL);
}

int sched_find_executor(const sched *s, const char *name, uint32_t *out_id)
{
    if (s == NULL || name == NULL)
        return -EINVAL;
    uint32_t n = sched_atomic_load_u32(&s->n_executors, SCHED_ACQUIRE);
    for (uint32_t id = 1; id <= n; id++) {
        if (strcmp(s->executors[id]->name, name) == 0) {
            if (out_id != NULL)
                *out_id = id;
            return 0;
        }
    }
    return -ENOENT;
}

int sched_add_executor(sched *s, const char *name, uint32_t n_threads, uint32_t *out_id)
{
    if (s == NULL || name == NULL || name[0] == '\0' || n_threads == 0 || n_threads > 1024)
        return -EINVAL;
    sched_executor *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    if (strlen(name) >= sizeof(e->name)) {
        free(e);
        return -EINVAL;
    }
    strcpy(e->name, name);
    e->s = s;
    e->n_threads = n_threads;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    e->threads = calloc(n_threads, sizeof(*e->threads));
    if (e->threads == NULL) {
        executor_free(e);
        return -ENOMEM;
    }

    pthread_mutex_lock(&s->exec_lock);
    uint32_t n = sched_atomic_load_u32(&s->n_executors, SCHED_RELAXED);
    int rc = 0;
    if (sched_find_executor(s, name, NULL) == 0)
        rc = -EEXIST;
    else if (n >= SCHED_MAX_EXECUTORS)
        rc = -ENOSPC;
    if (rc != 0) {
        pthread_mutex_unlock(&s->exec_lock);
        executor_free(e);
        return rc;
    }
    e->id = n + 1;
    uint32_t first_id = s->n_workers + s->n_exec_threads;
    uint32_t started = 0;
    for (; started < n_threads; started++) {
        sched_exec_thread *t = &e->threads[started];
        t->exec = e;
        t->runner = (sched_runner){
            .s = s,
            .exec = e,
            .id = first_id + started,
            .stream = SCHED_NONE,
            .trace = s->cfg.trace ? &t->trace : NULL,
        };
        sched_i_trace_init(&t->trace, s->n_streams + e->id - 1, first_id + started);
        if (s->cfg.trace && t->trace.head == NULL)
            break;
        if (pthread_create(&t->thread, NULL, executor_main, t) != 0) {
            sched_i_trace_fini(&t->trace);
            break;
        }
        name_thread(e, t->thread);
    }
    if (started < n_threads) {
        pthread_mutex_unlock(&s->exec_lock);
        executor_join(e, started);
        executor_free(e);
        return -EAGAIN;
    }
    s->executors[e->id] = e;
    s->n_exec_threads += n_threads;
    sched_atomic_store_u32(&s->n_executors, e->id, SCHED_RELEASE);
    pthread_mutex_unlock(&s->exec_lock);
    if (out_id != NULL)
        *out_id = e->id;
    return 0;
}

void sched_i_executors_stop(sched *s)
{
    uint32_t n = sched_atomic_load_u32(&s->n_executors, SCHED_ACQUIRE);
    for (uint32_t id = 1; id <= n; id++) {
        executor_join(s->executors[id], s->executors[id]->n_threads);
        executor_free(s->executors[id]);
        s->executors[id] = NULL;
    }
}
