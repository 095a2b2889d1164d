/*
 * Task tracing: per-thread event buffers and the Chrome trace-event JSON writer.
 *
 * Each runner thread appends to its own list of blocks and publishes an event by a release
 * store of the block's count after the task has ended; the writer reads only published
 * events, so it can run while tasks run. Timestamps are microseconds since sched_create.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/internal.h"

void sched_i_trace_init(sched_trace_buf *t, uint32_t pid, uint32_t tid)
{
    t->pid = pid;
    t->tid = tid;
    t->head = t->tail = calloc(1, sizeof(*t->head));
    if (t->head != NULL) {
        sched_atomic_init_ptr(&t->head->next, NULL);
        sched_atomic_init_u32(&t->head->count, 0);
    }
}

void sched_i_trace_fini(sched_trace_buf *t)
{
    sched_trace_block *b = t->head;
    while (b != NULL) {
        sched_trace_block *next = sched_atomic_load_ptr(&b->next, SCHED_RELAXED);
        free(b);
        b = next;
    }
    t->head = t->tail = NULL;
}

sched_trace_event *sched_i_trace_begin(sched_trace_buf *t, const char *name, uint64_t instance,
                                       uint32_t run, uint32_t node, uint32_t stream)
{
    sched_trace_block *b = t->tail;
    uint32_t n = sched_atomic_load_u32(&b->count, SCHED_RELAXED);
    if (n == SCHED_TRACE_BLOCK_EVENTS) {
        sched_trace_block *nb = calloc(1, sizeof(*nb));
        if (nb == NULL)
            return NULL; /* out of memory: this task goes unrecorded */
        sched_atomic_init_ptr(&nb->next, NULL);
        sched_atomic_init_u32(&nb->count, 0);
        sched_atomic_store_ptr(&b->next, nb, SCHED_RELEASE);
        t->tail = b = nb;
        n = 0;
    }
    sched_trace_event *e = &b->ev[n];
    size_t len = strlen(name);
    if (len >= sizeof(e->name))
        len = sizeof(e->name) - 1;
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->instance = instance;
    e->run = run;
    e->node = node;
    e->stream = stream;
    e->start_ns = sched_now_ns();
    return e;
}

void sched_i_trace_end(sched_trace_buf *t, sched_trace_event *e)
{
    if (e == NULL)
        return;
    e->end_ns = sched_now_ns();
    sched_trace_block *b = t->tail;
    sched_atomic_store_u32(&b->count, sched_atomic_load_u32(&b->count, SCHED_RELAXED) + 1,
                           SCHED_RELEASE);
}

/* Calls fn for every thread's trace buffer. */
static void for_each_buf(sched *s, void (*fn)(sched_trace_buf *t, void *arg), void *arg)
{
    for (uint32_t i = 0; i < s->n_workers; i++)
        fn(&s->workers[i].trace, arg);
    pthread_mutex_lock(&s->exec_lock);
    uint32_t n = sched_atomic_load_u32(&s->n_executors, SCHED_ACQUIRE);
    for (uint32_t id = 1; id <= n; id++)
        for (uint32_t k = 0; k < s->executors[id]->n_threads; k++)
            fn(&s->executors[id]->threads[k].trace, arg);
    pthread_mutex_unlock(&s->exec_lock);
}

static void count_buf(sched_trace_buf *t, void *arg)
{
    size_t *n = arg;
    for (sched_trace_block *b = t->head; b != NULL;
         b = sched_atomic_load_ptr(&b->next, SCHED_ACQUIRE))
        *n += sched_atomic_load_u32(&b->count, SCHED_ACQUIRE);
}

size_t sched_trace_event_count(sched *s)
{
    size_t n = 0;
    if (s != NULL && s->cfg.trace)
        for_each_buf(s, count_buf, &n);
    return n;
}

uint64_t sched_trace_origin_ns(const sched *s)
{
    return s != NULL ? s->t0_ns : 0;
}

typedef struct json_writer {
    FILE *f;
    uint64_t t0;
    bool first;
} json_writer;

static void put_sep(json_writer *j)
{
    fputs(j->first ? "\n" : ",\n", j->f);
    j->first = false;
}

void sched_trace_put_string(FILE *f, const char *str)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static double to_us(uint64_t ns, uint64_t t0)
{
    return ns >= t0 ? (double)(ns - t0) / 1000.0 : 0.0;
}

static void write_buf(sched_trace_buf *t, void *arg)
{
    json_writer *j = arg;
    for (sched_trace_block *b = t->head; b != NULL;
         b = sched_atomic_load_ptr(&b->next, SCHED_ACQUIRE)) {
        uint32_t n = sched_atomic_load_u32(&b->count, SCHED_ACQUIRE);
        for (uint32_t i = 0; i < n; i++) {
            const sched_trace_event *e = &b->ev[i];
            put_sep(j);
            fputs("{\"name\":", j->f);
            sched_trace_put_string(j->f, e->name);
            fprintf(j->f,
                    ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f,"
                    "\"dur\":%.3f,\"args\":{\"instance\":%llu,\"run\":%u,\"node\":%lld,"
                    "\"stream\":%u}}",
                    e->instance ? "node" : "task", t->pid, t->tid, to_us(e->start_ns, j->t0),
                    (double)(e->end_ns - e->start_ns) / 1000.0, (unsigned long long)e->instance,
                    e->run, e->node == SCHED_NONE ? -1LL : (long long)e->node, e->stream);
        }
    }
}

static void put_meta(json_writer *j, const char *what, uint32_t pid, uint32_t tid,
                     const char *prefix, const char *name, uint32_t index)
{
    char buf[96];
    if (name != NULL)
        snprintf(buf, sizeof(buf), "%s%s", prefix, name);
    else
        snprintf(buf, sizeof(buf), "%s%u", prefix, index);
    put_sep(j);
    fprintf(j->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":", what,
            pid, tid);
    sched_trace_put_string(j->f, buf);
    fputs("}}", j->f);
}

int sched_trace_write_json(sched *s, const char *path)
{
    if (s == NULL || path == NULL || !s->cfg.trace)
        return -EINVAL;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    json_writer j = {.f = f, .t0 = s->t0_ns, .first = true};
    /* otherData.origin_ns: the CLOCK_MONOTONIC instant the events' ts count from, so that a
     * program's own instants (bench/latency --stamps) line up with them. */
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"origin_ns\":%llu},\"traceEvents\":[",
            (unsigned long long)s->t0_ns);
    for (uint32_t i = 0; i < s->n_streams; i++)
        put_meta(&j, "process_name", i, 0, "stream ", NULL, i);
    for (uint32_t i = 0; i < s->n_workers; i++)
        put_meta(&j, "thread_name", s->workers[i].trace.pid, i, "worker ", NULL, i);
    pthread_mutex_lock(&s->exec_lock);
    uint32_t n = sched_atomic_load_u32(&s->n_executors, SCHED_ACQUIRE);
    for (uint32_t id = 1; id <= n; id++) {
        const sched_executor *e = s->executors[id];
        put_meta(&j, "process_name", s->n_streams + id - 1, 0, "executor ", e->name, 0);
        for (uint32_t k = 0; k < e->n_threads; k++)
            put_meta(&j, "thread_name", e->threads[k].trace.pid, e->threads[k].trace.tid, "thread ",
                     NULL, e->threads[k].trace.tid);
    }
    pthread_mutex_unlock(&s->exec_lock);
    for_each_buf(s, write_buf, &j);
    fputs("\n]}\n", f);
    int rc = ferror(f) ? -EIO : 0;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}
