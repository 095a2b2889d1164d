/*
 * The work loop of a stream worker, waking and parking, and running work items on any runner
 * (stream worker, executor thread, or an outside thread completing a node).
 *
 * Waking protocol (after Tokio and Go's schedulers, on an event count per worker):
 *   - A stream counts its `searching` workers (spinning for work) and has a bitmask of workers
 *     that announced they will sleep.
 *   - A publisher pushes its item, then reads `searching`; only when nobody searches does it
 *     wake a sleeper, and it first claims a searcher slot (CAS 0 -> 1) on the sleeper's
 *     behalf, so that concurrent publishers do not wake a herd. External submissions publish
 *     with a seq_cst store and read with a seq_cst load (the StoreLoad they never skip).
 *     Pushes by a busy worker to its own deque skip the StoreLoad: a wake-up missed there
 *     loses parallelism for a moment, never the item, because the owner will take it.
 *   - A worker that gives up searching takes its own event count's snapshot, announces sleep
 *     (sets its bit), leaves `searching`, re-scans every queue it may take from, and only
 *     then waits on the snapshot. A waker clears the bit, then increments the event count; the
 *     worker sleeps only while its bit is set and the count is unchanged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/internal.h"

/* Edges released directly by one item; a node with more successors splits them in halves. */
#define RELEASE_GRAIN 8

/* Every this many items a worker looks at its stream's injection queue before its own deque,
 * so that external work is not starved by a worker that keeps feeding itself. */
#define INJECT_CHECK_PERIOD 64

static _Thread_local sched_runner *tl_runner;

sched_runner *sched_i_current_runner(void)
{
    return tl_runner;
}

void sched_i_set_current_runner(sched_runner *r)
{
    tl_runner = r;
}

int sched_current_stream(void)
{
    return tl_runner != NULL && tl_runner->worker != NULL ? (int)tl_runner->stream : -1;
}

bool sched_is_own_thread(const sched *s)
{
    return s != NULL && tl_runner != NULL && tl_runner->s == s &&
           (tl_runner->worker != NULL || tl_runner->exec != NULL);
}

static inline sched_item item_node(sched_instance *inst, uint32_t node)
{
    return (sched_item){.p = (uint64_t)(uintptr_t)inst | SCHED_ITEM_NODE, .x = node};
}

static inline sched_item item_range(sched_instance *inst, uint32_t lo, uint32_t hi)
{
    return (sched_item){.p = (uint64_t)(uintptr_t)inst | SCHED_ITEM_RANGE,
                        .x = ((uint64_t)lo << 32) | hi};
}

/* ------------------------------------------------------------------ waking */

static bool has_sleepers(const sched_stream *st)
{
    for (uint32_t w = 0; w < st->n_sleeper_words; w++)
        if (sched_atomic_load_u64(&st->sleepers[w], SCHED_SEQ_CST) != 0)
            return true;
    return false;
}

/* Wakes one sleeping worker of `st`, counting it as searching on its behalf. Returns true when
 * a worker was woken or one is already searching (it will find the work), false when the
 * stream has no sleeper to wake. */
static bool wake_one(sched *s, sched_stream *st, bool foreign)
{
    if (!has_sleepers(st))
        return false;
    uint32_t zero = 0;
    if (!sched_atomic_cas_u32(&st->searching, &zero, 1, SCHED_SEQ_CST))
        return true;
    for (uint32_t w = 0; w < st->n_sleeper_words; w++) {
        uint64_t m = sched_atomic_load_u64(&st->sleepers[w], SCHED_SEQ_CST);
        while (m != 0) {
            uint64_t bit = m & (~m + 1);
            uint64_t old = sched_atomic_fetch_and_u64(&st->sleepers[w], ~bit, SCHED_SEQ_CST);
            if (old & bit) {
                uint32_t local = w * 64 + (uint32_t)__builtin_ctzll(bit);
                sched_worker *wk = &s->workers[st->first_worker + local];
                if (foreign)
                    sched_atomic_store_u32(&wk->foreign, 1, SCHED_RELEASE);
                sched_ec_inc(&wk->ec);
                return true;
            }
            m = old & ~bit;
        }
    }
    sched_atomic_fetch_sub_u32(&st->searching, 1, SCHED_SEQ_CST);
    return false;
}

/* After publishing work to stream `st`: wake a worker if none is searching. `sc`: the
 * publication was a seq_cst store, and this check must be ordered after it. */
static void notify(sched *s, sched_stream *st, bool sc)
{
    if (sched_atomic_load_u32(&st->searching, sc ? SCHED_SEQ_CST : SCHED_RELAXED) != 0)
        return;
    if (wake_one(s, st, false))
        return;
    if (!s->cfg.steal_across_streams || s->n_streams == 1)
        return;
    /* Every worker of the stream is busy: an idle worker of another stream may help. */
    for (uint32_t i = 1; i < s->n_streams; i++) {
        sched_stream *o = &s->streams[(st->index + i) % s->n_streams];
        if (sched_atomic_load_u32(&o->searching, SCHED_RELAXED) == 0 && wake_one(s, o, true))
            return;
    }
}

void sched_i_wake_all(sched *s)
{
    for (uint32_t i = 0; i < s->n_workers; i++)
        sched_ec_inc(&s->workers[i].ec);
}

/* ------------------------------------------------------------------ queues */

static void overflow_push(sched_stream *st, sched_item it)
{
    sched_overflow *o = malloc(sizeof(*o));
    /* Out of memory on a path that must not fail: nothing sane is left to do. */
    if (o == NULL)
        abort();
    o->next = NULL;
    o->item = it;
    pthread_mutex_lock(&st->overflow_lock);
    if (st->overflow_tail != NULL)
        st->overflow_tail->next = o;
    else
        st->overflow_head = o;
    st->overflow_tail = o;
    sched_atomic_fetch_add_u32(&st->overflow_count, 1, SCHED_SEQ_CST);
    pthread_mutex_unlock(&st->overflow_lock);
}

static bool overflow_pop(sched_stream *st, sched_item *out)
{
    if (sched_atomic_load_u32(&st->overflow_count, SCHED_RELAXED) == 0)
        return false;
    pthread_mutex_lock(&st->overflow_lock);
    sched_overflow *o = st->overflow_head;
    if (o != NULL) {
        st->overflow_head = o->next;
        if (st->overflow_head == NULL)
            st->overflow_tail = NULL;
        sched_atomic_fetch_sub_u32(&st->overflow_count, 1, SCHED_RELAXED);
    }
    pthread_mutex_unlock(&st->overflow_lock);
    if (o == NULL)
        return false;
    *out = o->item;
    free(o);
    return true;
}

bool sched_i_push(sched *s, sched_runner *r, uint32_t stream, sched_item it, bool external)
{
    if (r != NULL && r->worker != NULL && r->s == s && (!external || r->stream == stream)) {
        /* A worker keeps the DAG work it produces, even for an instance of another stream it
         * stole from: cheap, and the instance's own stream may steal it back. */
        if (sched_deque_push(&r->worker->deque, it)) {
            notify(s, &s->streams[r->stream], false);
            return true;
        }
        stream = r->stream; /* the deque is full: spill to the worker's stream */
    }
    sched_stream *st = &s->streams[stream];
    if (!sched_inject_push(&st->inject, it)) {
        if (external)
            return false;
        overflow_push(st, it);
    }
    notify(s, st, true);
    return true;
}

/* ------------------------------------------------------------------ running items */

static inline bool runner_can_run(const sched_runner *r, uint32_t executor)
{
    if (executor == SCHED_EXECUTOR_STREAM)
        return r->worker != NULL;
    return r->exec != NULL && r->exec->id == executor;
}

static inline void sink_done(sched_instance *inst)
{
    /* A DAG with one sink (a pipeline, a chain) needs no count: its sink is the last node. */
    if (inst->dag->n_sinks == 1 ||
        sched_atomic_fetch_sub_u32(&inst->sinks_left, 1, SCHED_ACQ_REL) == 1)
        sched_i_instance_complete(inst);
}

/* Releases the DAG edges [lo, hi) of `inst`: decrements the join counters of their targets
 * and queues the targets that become ready. Returns one ready node that this runner should run
 * next (the continuation) when `allow_cont`, else SCHED_NONE. Once the last ready node is
 * queued this function touches neither `inst` nor its DAG: another thread may complete the
 * instance at any moment after that. */
static uint32_t release(sched_runner *r, sched_instance *inst, uint32_t lo, uint32_t hi,
                        bool allow_cont)
{
    const sched_dag *dag = inst->dag;
    sched *s = inst->s;
    uint32_t stream = inst->stream;
    while (hi - lo > RELEASE_GRAIN) {
        uint32_t mid = lo + (hi - lo) / 2;
        sched_i_push(s, r, stream, item_range(inst, mid, hi), false);
        hi = mid;
    }
    uint32_t ready[RELEASE_GRAIN];
    uint32_t n = 0;
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t v = dag->succ[e];
        /* One predecessor: no counter, the releaser owns the node. */
        if (dag->nodes[v].pred <= 1 ||
            sched_atomic_fetch_sub_u32(&inst->join[v], 1, SCHED_ACQ_REL) == 1)
            ready[n++] = v;
    }
    uint32_t cont = SCHED_NONE;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = ready[i];
        uint32_t ex = dag->nodes[v].executor;
        if (allow_cont && cont == SCHED_NONE && runner_can_run(r, ex)) {
            cont = v;
            continue;
        }
        if (ex != SCHED_EXECUTOR_STREAM)
            sched_i_executor_push(s->executors[ex], item_node(inst, v));
        else
            sched_i_push(s, r, stream, item_node(inst, v), false);
    }
    return cont;
}

static uint32_t finish(sched_runner *r, sched_instance *inst, const sched_dag_node *n,
                       bool allow_cont)
{
    if (n->succ_begin == n->succ_end) {
        sink_done(inst);
        return SCHED_NONE;
    }
    return release(r, inst, n->succ_begin, n->succ_end, allow_cont);
}

void sched_i_finish_node(sched_runner *r, sched_instance *inst, uint32_t node)
{
    (void)finish(r, inst, &inst->dag->nodes[node], false);
}

/* Runs node `v` of `inst`, then its continuations, until a node has no continuation for this
 * runner or returns SCHED_PENDING. */
static void run_chain(sched_runner *r, sched_instance *inst, uint32_t v)
{
    const sched_dag *dag = inst->dag;
    for (;;) {
        const sched_dag_node *n = &dag->nodes[v];
        if (sched_atomic_load_u32(&inst->status, SCHED_RELAXED) == SCHED_OK) {
            sched_task_ctx ctx = {
                .sched = r->s,
                .instance = inst,
                .user_arg = inst->user_arg,
                .node = v,
                .stream = inst->stream,
                .worker = r->id,
                .executor = n->executor,
            };
            int rc;
            if (r->trace != NULL) {
                sched_trace_event *ev = sched_i_trace_begin(r->trace, dag->names[v], inst->id,
                                                            inst->run, v, inst->stream);
                rc = n->fn(&ctx, n->arg);
                sched_i_trace_end(r->trace, ev);
            } else {
                rc = n->fn(&ctx, n->arg);
            }
            /* Pending: whoever completes the node owns the rest; `inst` may already be gone. */
            if (rc == SCHED_PENDING)
                return;
            if (rc != SCHED_OK)
                sched_i_instance_fail(inst, rc);
        }
        v = finish(r, inst, n, true);
        if (v == SCHED_NONE)
            return;
    }
}

static void run_task(sched_runner *r, sched_task_rec *rec, bool owned)
{
    sched_task_fn fn = rec->fn;
    sched_task_ctx ctx = {
        .sched = r->s,
        .instance = NULL,
        .user_arg = rec->arg,
        .node = SCHED_NONE,
        .stream = rec->stream,
        .worker = r->id,
        .executor = r->exec != NULL ? r->exec->id : SCHED_EXECUTOR_STREAM,
    };
    if (!owned)
        free(rec); /* sched_post's record is its caller's: not touched again */
    if (r->trace != NULL) {
        sched_trace_event *ev = sched_i_trace_begin(r->trace, "task", 0, 0, SCHED_NONE, ctx.stream);
        (void)fn(&ctx, ctx.user_arg);
        sched_i_trace_end(r->trace, ev);
    } else {
        (void)fn(&ctx, ctx.user_arg);
    }
}

void sched_i_run_item(sched_runner *r, sched_item it)
{
    void *ptr = (void *)(uintptr_t)(it.p & ~(uint64_t)SCHED_ITEM_KIND_MASK);
    switch (it.p & SCHED_ITEM_KIND_MASK) {
    case SCHED_ITEM_NODE:
        run_chain(r, ptr, (uint32_t)it.x);
        break;
    case SCHED_ITEM_RANGE: {
        sched_instance *inst = ptr;
        uint32_t cont = release(r, inst, (uint32_t)(it.x >> 32), (uint32_t)it.x, true);
        if (cont != SCHED_NONE)
            run_chain(r, inst, cont);
        break;
    }
    default:
        run_task(r, ptr, it.x == SCHED_TASK_OWNED);
        break;
    }
}

/* ------------------------------------------------------------------ searching and parking */

static inline uint64_t next_random(sched_worker *w)
{
    /* xorshift64 */
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->rng = x;
    return x;
}

/* Tries every queue of stream `st` once: injection, the other workers' deques (from a random
 * victim), the overflow list. */
static bool steal_from(sched_worker *w, sched_stream *st, sched_item *out)
{
    sched *s = w->runner.s;
    if (sched_inject_pop(&st->inject, out))
        return true;
    uint32_t n = st->n_workers;
    uint32_t start = (uint32_t)(next_random(w) % n);
    for (uint32_t k = 0; k < n; k++) {
        sched_worker *v = &s->workers[st->first_worker + (start + k) % n];
        if (v == w)
            continue;
        for (int tries = 0; tries < 4; tries++) {
            sched_steal_result res = sched_deque_steal(&v->deque, out);
            if (res == SCHED_STEAL_OK)
                return true;
            if (res == SCHED_STEAL_EMPTY)
                break;
        }
    }
    return overflow_pop(st, out);
}

static inline bool may_steal_across(const sched_worker *w, uint64_t now_ns)
{
    const sched *s = w->runner.s;
    return s->cfg.steal_across_streams && s->n_streams > 1 &&
           now_ns - w->idle_since_ns >= (uint64_t)s->cfg.steal_idle_us * 1000u;
}

static bool steal_any(sched_worker *w, sched_item *out, uint64_t now_ns)
{
    sched *s = w->runner.s;
    sched_stream *own = &s->streams[w->runner.stream];
    if (steal_from(w, own, out))
        return true;
    if (!may_steal_across(w, now_ns))
        return false;
    for (uint32_t i = 1; i < s->n_streams; i++) {
        sched_stream *o = &s->streams[(own->index + i) % s->n_streams];
        if (steal_from(w, o, out))
            return true;
    }
    return false;
}

static bool stream_has_work(const sched *s, const sched_stream *st)
{
    if (sched_inject_nonempty(&st->inject))
        return true;
    if (sched_atomic_load_u32(&st->overflow_count, SCHED_SEQ_CST) != 0)
        return true;
    for (uint32_t i = 0; i < st->n_workers; i++)
        if (sched_deque_nonempty(&s->workers[st->first_worker + i].deque))
            return true;
    return false;
}

/* The last scan before sleeping: every queue this worker may take from. */
static bool work_visible(const sched_worker *w)
{
    const sched *s = w->runner.s;
    const sched_stream *own = &s->streams[w->runner.stream];
    if (stream_has_work(s, own))
        return true;
    if (!s->cfg.steal_across_streams)
        return false;
    for (uint32_t i = 1; i < s->n_streams; i++)
        if (stream_has_work(s, &s->streams[(own->index + i) % s->n_streams]))
            return true;
    return false;
}

/* Parks a searching worker until it is woken. Returns with the worker searching again (counted
 * in `searching`), or false when the scheduler shuts down. */
static bool park(sched_worker *w)
{
    sched *s = w->runner.s;
    sched_stream *st = &s->streams[w->runner.stream];
    uint32_t word = w->local / 64;
    uint64_t bit = 1ull << (w->local % 64);

    sched_atomic_fetch_or_u64(&st->sleepers[word], bit, SCHED_SEQ_CST);
    w->searching = false;
    sched_atomic_fetch_sub_u32(&st->searching, 1, SCHED_SEQ_CST);

    if (work_visible(w) || sched_atomic_load_u32(&s->shutdown, SCHED_SEQ_CST)) {
        /* Withdraw the announcement; if a waker was faster, it counted us as searching. */
        if (sched_atomic_fetch_and_u64(&st->sleepers[word], ~bit, SCHED_SEQ_CST) & bit)
            sched_atomic_fetch_add_u32(&st->searching, 1, SCHED_SEQ_CST);
        w->searching = true;
        return !sched_atomic_load_u32(&s->shutdown, SCHED_RELAXED);
    }
    for (;;) {
        /* Snapshot first, then check: a wake-up between the two makes the wait return. */
        uint32_t snap = sched_ec_value(&w->ec);
        if (!(sched_atomic_load_u64(&st->sleepers[word], SCHED_SEQ_CST) & bit))
            break;
        if (sched_atomic_load_u32(&s->shutdown, SCHED_SEQ_CST))
            return false;
        sched_ec_wait(&w->ec, snap, 0);
    }
    w->searching = true; /* the waker counted us */
    if (sched_atomic_exchange_u32(&w->foreign, 0, SCHED_ACQUIRE))
        w->idle_since_ns = 0; /* woken for another stream's work: may steal it at once */
    return !sched_atomic_load_u32(&s->shutdown, SCHED_SEQ_CST);
}

/* A searching worker found work. If it was the last searcher and more work is visible, it
 * hands the search on to a sleeper: a publisher that saw it searching did not wake anyone.
 * (Decrement, then scan: the mirror image of publish, then check.) */
static void stop_searching(sched_worker *w)
{
    sched *s = w->runner.s;
    sched_stream *st = &s->streams[w->runner.stream];
    w->searching = false;
    if (sched_atomic_fetch_sub_u32(&st->searching, 1, SCHED_SEQ_CST) == 1 && stream_has_work(s, st))
        (void)wake_one(s, st, false);
}

/* A searching worker spins for the full spin_us only while it holds one of its stream's
 * spinner slots (Go and Tokio keep at most half the workers spinning the same way); the
 * others give up after a few passes. Parking is the same for both, so this changes how much
 * CPU idle workers burn, never whether work is found. */
static bool acquire_spinner(sched_stream *st)
{
    uint32_t n = sched_atomic_load_u32(&st->spinners, SCHED_RELAXED);
    while (n < st->max_spinners)
        if (sched_atomic_cas_u32(&st->spinners, &n, n + 1, SCHED_RELAXED))
            return true;
    return false;
}

static void release_spinner(sched_worker *w)
{
    if (w->spinner) {
        w->spinner = false;
        sched_atomic_fetch_sub_u32(&w->runner.s->streams[w->runner.stream].spinners, 1,
                                   SCHED_RELAXED);
    }
}

/* How long a searcher spins before parking: spin_us with a spinner slot, else a few passes. */
#define SHORT_SPIN_NS 2000u

static bool search(sched_worker *w, sched_item *out)
{
    sched *s = w->runner.s;
    sched_stream *st = &s->streams[w->runner.stream];
    uint64_t now = sched_now_ns();
    if (!w->searching) {
        w->searching = true;
        sched_atomic_fetch_add_u32(&st->searching, 1, SCHED_SEQ_CST);
        w->idle_since_ns = now;
    }
    uint64_t spin_ns = (uint64_t)s->cfg.spin_us * 1000u;
    w->spinner = acquire_spinner(st);
    uint64_t deadline = now + (w->spinner || spin_ns < SHORT_SPIN_NS ? spin_ns : SHORT_SPIN_NS);
    uint64_t yield_after = now + spin_ns / 2;
    for (uint32_t i = 1;; i++) {
        if (steal_any(w, out, now)) {
            release_spinner(w);
            stop_searching(w);
            return true;
        }
        if (sched_atomic_load_u32(&s->shutdown, SCHED_RELAXED)) {
            release_spinner(w);
            return false;
        }
        /* The clock every 8 passes while spinning, after every pass once yielding: a
         * sched_yield lasts as long as another thread's turn on the CPU, and 8 of them
         * kept an idle worker yielding for milliseconds past spin_us on a CPU it shares
         * with runnel-server's gRPC threads (about 20 sched_yields per request at
         * concurrency 1, each a switch to the worker and back: now 4-5). */
        if ((i & 7) == 0 || now >= yield_after) {
            now = sched_now_ns();
            if (now >= deadline) {
                release_spinner(w);
                if (!park(w))
                    return false;
                now = sched_now_ns();
                w->spinner = acquire_spinner(st);
                deadline = now + (w->spinner || spin_ns < SHORT_SPIN_NS ? spin_ns : SHORT_SPIN_NS);
                yield_after = now + spin_ns / 2;
                continue;
            }
        }
        if (now < yield_after) {
            for (int k = 0; k < 8; k++)
                sched_cpu_relax();
        } else {
            /* Idle for a while: let any other runnable thread have this CPU (the machine may
             * be oversubscribed); returns at once otherwise. */
            sched_yield();
        }
    }
}

static bool find_work(sched_worker *w, sched_item *out)
{
    sched_stream *st = &w->runner.s->streams[w->runner.stream];
    if (++w->tick % INJECT_CHECK_PERIOD == 0 &&
        (sched_inject_pop(&st->inject, out) || overflow_pop(st, out)))
        return true;
    if (sched_deque_take(&w->deque, out))
        return true;
    return search(w, out);
}

static void pin_to_cpu(uint32_t id)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(id % (uint32_t)n), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void sched_i_worker_name(const sched_worker *w)
{
    /* Named for perf, top -H and /proc/PID/task/TID/comm ("rn-s0w1": stream 0, worker 1). */
    char name[16];
    snprintf(name, sizeof name, "rn-s%uw%u", w->runner.stream % 1000u, w->local % 1000u);
    (void)pthread_setname_np(w->thread, name);
}

void *sched_i_worker_main(void *arg)
{
    sched_worker *w = arg;
    sched_i_set_current_runner(&w->runner);
    if (w->runner.s->cfg.pin_cpus)
        pin_to_cpu(w->runner.id);
    sched_item it;
    while (find_work(w, &it)) {
        sched_i_run_item(&w->runner, it);
    }
    return NULL;
}
