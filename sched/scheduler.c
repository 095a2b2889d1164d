/* The scheduler's lifetime: configuration, creation, destruction, one-off submissions. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/internal.h"

#define MAX_STREAMS  1024u
#define MAX_WORKERS  4096u
#define MAX_CAPACITY (1u << 24)

sched_config sched_config_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return (sched_config){
        .n_streams = 1,
        .workers_per_stream = n > 0 ? (uint32_t)n : 1,
        .steal_across_streams = true,
        .steal_idle_us = 20,
        .pin_cpus = false,
        .spin_us = 50,
        .trace = false,
        .injection_capacity = 4096,
        .deque_capacity = 1024,
    };
}

/* The CPUs the calling thread may run on (0: unknown). */
static int usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    return CPU_COUNT(&set);
}

static uint32_t round_up_pow2(uint32_t v)
{
    uint32_t p = 2;
    while (p < v)
        p *= 2;
    return p;
}

/* Frees what create built; workers [0, n_started) are running and are stopped first. */
/* Work nobody will run: sched_submit's task records are freed, sched_post's are their callers'. */
static void drop_item(sched_item it)
{
    if ((it.p & SCHED_ITEM_KIND_MASK) == SCHED_ITEM_TASK && it.x != SCHED_TASK_OWNED)
        free((void *)(uintptr_t)(it.p & ~(uint64_t)SCHED_ITEM_KIND_MASK));
}

static void teardown(sched *s, uint32_t n_started)
{
    sched_atomic_store_u32(&s->shutdown, 1, SCHED_SEQ_CST);
    if (s->workers != NULL)
        sched_i_wake_all(s);
    for (uint32_t i = 0; i < n_started; i++)
        pthread_join(s->workers[i].thread, NULL);
    sched_i_executors_stop(s);

    /* Drop the work nobody will run; sched_submit's task records are ours to free. */
    sched_item it;
    for (uint32_t i = 0; s->workers != NULL && i < s->n_workers; i++) {
        sched_worker *w = &s->workers[i];
        if (w->deque.slots == NULL)
            continue;
        while (sched_deque_take(&w->deque, &it))
            drop_item(it);
        sched_deque_fini(&w->deque);
        sched_i_trace_fini(&w->trace);
    }
    for (uint32_t i = 0; s->streams != NULL && i < s->n_streams; i++) {
        sched_stream *st = &s->streams[i];
        if (st->inject.cells != NULL) {
            while (sched_inject_pop(&st->inject, &it))
                drop_item(it);
            sched_inject_fini(&st->inject);
        }
        for (sched_overflow *o = st->overflow_head; o != NULL;) {
            sched_overflow *next = o->next;
            drop_item(o->item);
            free(o);
            o = next;
        }
        pthread_mutex_destroy(&st->overflow_lock);
        free(st->sleepers);
    }
    free(s->streams);
    free(s->workers);
    pthread_mutex_destroy(&s->exec_lock);
    free(s);
}

int sched_create(const sched_config *cfg, sched **out)
{
    if (cfg == NULL || out == NULL || cfg->n_streams == 0 || cfg->workers_per_stream == 0 ||
        cfg->n_streams > MAX_STREAMS || cfg->workers_per_stream > MAX_WORKERS ||
        cfg->n_streams * cfg->workers_per_stream > MAX_WORKERS ||
        cfg->injection_capacity > MAX_CAPACITY || cfg->deque_capacity > MAX_CAPACITY)
        return -EINVAL;
    sched *s = aligned_alloc(SCHED_CACHE_LINE, sizeof(*s));
    if (s == NULL)
        return -ENOMEM;
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    /* Spinning on the one CPU the process may run on only delays the thread that would make
     * the work or the completion spun for (a server pinned to a CPU: its network threads, the
     * callback executor), and a sched_yield hands that CPU over no sooner than a park: idle
     * workers and waiters go straight to sleep there. The workers inherit the creator's
     * affinity. */
    if (usable_cpus() == 1)
        s->cfg.spin_us = 0;
    s->cfg.injection_capacity = round_up_pow2(cfg->injection_capacity);
    s->cfg.deque_capacity = round_up_pow2(cfg->deque_capacity);
    s->n_streams = cfg->n_streams;
    s->n_workers = cfg->n_streams * cfg->workers_per_stream;
    s->t0_ns = sched_now_ns();
    sched_atomic_init_u32(&s->shutdown, 0);
    sched_atomic_init_u32(&s->rr_stream, 0);
    sched_atomic_init_u32(&s->n_executors, 0);
    pthread_mutex_init(&s->exec_lock, NULL);

    s->streams = calloc(s->n_streams, sizeof(*s->streams));
    s->workers = aligned_alloc(SCHED_CACHE_LINE, s->n_workers * sizeof(*s->workers));
    /* Zeroed before any teardown, which reads every worker. */
    if (s->workers != NULL)
        memset(s->workers, 0, s->n_workers * sizeof(*s->workers));
    if (s->streams == NULL || s->workers == NULL) {
        teardown(s, 0);
        return -ENOMEM;
    }

    for (uint32_t i = 0; i < s->n_streams; i++)
        pthread_mutex_init(&s->streams[i].overflow_lock, NULL);
    int rc = 0;
    for (uint32_t i = 0; i < s->n_streams; i++) {
        sched_stream *st = &s->streams[i];
        st->index = i;
        st->first_worker = i * cfg->workers_per_stream;
        st->n_workers = cfg->workers_per_stream;
        st->n_sleeper_words = (st->n_workers + 63) / 64;
        sched_atomic_init_u32(&st->searching, 0);
        sched_atomic_init_u32(&st->spinners, 0);
        st->max_spinners = st->n_workers / 2 > 0 ? st->n_workers / 2 : 1;
        sched_atomic_init_u32(&st->overflow_count, 0);
        st->sleepers = calloc(st->n_sleeper_words, sizeof(*st->sleepers));
        if (st->sleepers == NULL) {
            rc = -ENOMEM;
            break;
        }
        for (uint32_t k = 0; k < st->n_sleeper_words; k++)
            sched_atomic_init_u64(&st->sleepers[k], 0);
        if ((rc = sched_inject_init(&st->inject, s->cfg.injection_capacity)) != 0)
            break;
    }
    for (uint32_t i = 0; rc == 0 && i < s->n_workers; i++) {
        sched_worker *w = &s->workers[i];
        uint32_t stream = i / cfg->workers_per_stream;
        if ((rc = sched_deque_init(&w->deque, s->cfg.deque_capacity)) != 0)
            break;
        sched_ec_init(&w->ec);
        sched_atomic_init_u32(&w->foreign, 0);
        w->local = i % cfg->workers_per_stream;
        w->rng = 0x9e3779b97f4a7c15ull * (i + 1);
        if (cfg->trace) {
            sched_i_trace_init(&w->trace, stream, i);
            if (w->trace.head == NULL)
                rc = -ENOMEM;
        }
        w->runner = (sched_runner){
            .s = s,
            .worker = w,
            .id = i,
            .stream = stream,
            .trace = cfg->trace ? &w->trace : NULL,
        };
    }
    if (rc != 0) {
        teardown(s, 0);
        return rc;
    }
    uint32_t started = 0;
    for (; started < s->n_workers; started++) {
        if (pthread_create(&s->workers[started].thread, NULL, sched_i_worker_main,
                           &s->workers[started]) != 0)
            break;
        sched_i_worker_name(&s->workers[started]);
    }
    if (started < s->n_workers) {
        teardown(s, started);
        return -EAGAIN;
    }
    *out = s;
    return 0;
}

void sched_destroy(sched *s)
{
    if (s == NULL)
        return;
    teardown(s, s->n_workers);
}

const sched_config *sched_get_config(const sched *s)
{
    return s != NULL ? &s->cfg : NULL;
}

uint32_t sched_stream_count(const sched *s)
{
    return s != NULL ? s->n_streams : 0;
}

uint32_t sched_worker_count(const sched *s)
{
    return s != NULL ? s->n_workers : 0;
}

int sched_i_choose_stream(sched *s, int stream, uint32_t *out)
{
    if (stream == SCHED_STREAM_ANY) {
        sched_runner *r = sched_i_current_runner();
        if (r != NULL && r->s == s && r->worker != NULL)
            *out = r->stream;
        else
            *out = sched_atomic_fetch_add_u32(&s->rr_stream, 1, SCHED_RELAXED) % s->n_streams;
        return 0;
    }
    if (stream < 0 || (uint32_t)stream >= s->n_streams)
        return -EINVAL;
    *out = (uint32_t)stream;
    return 0;
}

int sched_submit(sched *s, int stream, sched_task_fn fn, void *arg)
{
    if (s == NULL || fn == NULL)
        return -EINVAL;
    uint32_t st;
    if (sched_i_choose_stream(s, stream, &st) != 0)
        return -EINVAL;
    sched_task_rec *rec = malloc(sizeof(*rec));
    if (rec == NULL)
        return -ENOMEM;
    rec->fn = fn;
    rec->arg = arg;
    rec->stream = st;
    sched_item it = {.p = (uint64_t)(uintptr_t)rec | SCHED_ITEM_TASK, .x = 0};
    if (!sched_i_push(s, sched_i_current_runner(), st, it, true)) {
        free(rec);
        return -EAGAIN;
    }
    return 0;
}

int sched_post(sched *s, int stream, sched_job *job)
{
    if (s == NULL || job == NULL || job->fn == NULL)
        return -EINVAL;
    uint32_t st;
    if (sched_i_choose_stream(s, stream, &st) != 0)
        return -EINVAL;
    job->stream = st;
    sched_item it = {.p = (uint64_t)(uintptr_t)job | SCHED_ITEM_TASK, .x = SCHED_TASK_OWNED};
    return sched_i_push(s, sched_i_current_runner(), st, it, true) ? 0 : -EAGAIN;
}
