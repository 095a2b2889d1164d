/* Branch parallelism: a request's kernel tasks (chains of exec nodes,
 * plan_spec.c build_tasks) run by one DAG task that starts ready chains two
 * (or more) at a time on the threads of a device's fork.
 *
 * For a device whose stream computes with a team of threads (the CPU
 * device under LATENCY: one stream, an OpenMP team of every core), the
 * scheduler's one worker per stream runs one chain at a time and each
 * primitive forks the team. Independent branches (Inception's four,
 * SqueezeNet's expand 1x1 / 3x3, a downsample beside a residual block's
 * first convolution) can instead run side by side, each on one of the
 * team's threads: the device's branch_fork runs fn on `threads` threads
 * (an OpenMP parallel region of the worker's own team, whose primitives
 * then run single-threaded: oneDNN runs a primitive called inside a
 * parallel region on the calling thread), so the busy threads are the
 * team's, never more than its cores, and no thread is added to the
 * process.
 *
 * The runner (on the worker, or the user's thread for an inline run): while
 * one chain is ready it runs it there, its primitives on the whole team;
 * when two or more are ready it forks, and each thread of the fork takes
 * the costliest ready chain (the device's branch_work summed over its
 * nodes) until none is ready, and leaves when none is or the other thread
 * has left (what becomes ready then is the runner's again: one chain on the
 * whole team, two or more in a new fork). A fork pays when the ready chains
 * are comparable or small (fork_pays): when the costliest outweighs the
 * rest (Inception-v1's 3b 3x3 branch: 185 of 286 M multiply-adds), it runs
 * alone on the whole team first, and the others then side by side.
 *
 * A device whose kernels each run on one thread (REF) has no team: its
 * stream has two or more scheduler workers (LATENCY: one stream on every
 * core), and a fork hands the ready chains to the others (fork_on_workers:
 * one-off scheduler tasks, revoked when the runner is done before they
 * start). There the costs are the chains' measured run times (ns; in a
 * fork, the thread's CPU time), and what a fork costs is measured too: a
 * fork's thread that wakes on a busy core,
 * or on the runner's own core (a hypervisor's 2 vCPUs, the kernel's wake-up
 * placement), makes the fork slower than one chain after the other, and
 * then forks stop until the estimate decays back (fork_cost). Before this
 * REF's requests ran the chains as nodes of the scheduler's DAG: an async
 * request spread every branch over both workers, even SqueezeNet's 85 us
 * expand 1x1 chains, while sync ran them on the caller alone; both now run
 * this runner (bench/LOG.md, "Async REF: branches only where they pay").
 *
 * With tracing on, every chain's run is an event of category "branch"
 * (bench/latency/node_overlap.py measures how much of a request's time ran
 * two at once), appended to the plan's trace by plugin_plan_write_trace. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executors/executors.h"
#include "plugins/api/plan_internal.h"
#include "sched/atomic.h"

/* Whether to fork, from the ready chains' costs (the device's units; the
 * CPU device's: multiply-adds, about 50 per ns on a core with AVX2 f32):
 * side by side, each chain on one thread, they take the longest thread's
 * share when the costliest go first (LPT); on the whole team, each
 * primitive takes its cost over the team's speed-up (TEAM_SPEEDUP_NUM /
 * TEAM_SPEEDUP_DEN on 2 threads: 1.63-1.72 measured for whole models,
 * docs/performance.md) plus its fork and join (TEAM_FORK: about 20 us, the
 * CPU device's 2^20 multiply-adds, plugins/cpu/team.c). A fork itself costs
 * one TEAM_FORK. */
#define TEAM_SPEEDUP_NUM 17
#define TEAM_SPEEDUP_DEN 10
#define TEAM_FORK        (1ll << 20)
/* A chain a fork's thread runs beside another's even when fork_pays says
 * no: about 160 us on one core. */
#define SMALL_CHAIN (8 * TEAM_FORK)
/* At most this many chain events are kept per plan (about 16 MiB). */
#define TRACE_MAX_EVENTS (1u << 18)

struct plan_branches {
    int n;           /* tasks */
    int *n_pred;     /* distinct predecessor tasks */
    int *succ_begin; /* task t's successors: succ[succ_begin[t] .. succ_begin[t+1]) */
    int *succ;
    int64_t *cost; /* the device's work estimate, summed over the task's nodes */
    int threads;
    /* Timed (branch_fork_ns > 0): the tasks' measured run times, ns, a
     * moving average over runs (0: not yet run), and what a fork costs
     * beyond its chains: at least fork_ns, more while forks are measured to
     * cost more (fork_cost). Relaxed: racing requests lose an update. */
    bool timed;
    int64_t fork_ns;
    _Atomic int64_t *measured;
    _Atomic int64_t fork_overhead;
};

typedef struct branch_event {
    char name[48];
    uint64_t request;
    uint64_t run;
    uint64_t start_ns, end_ns;
    int thread;
    bool forked; /* ran in a fork (else alone, on the whole team) */
} branch_event;

struct plan_branch_trace {
    pthread_mutex_t lock;
    branch_event *ev;
    size_t n, cap, dropped;
};

void plan_branches_free(plan_branches *b)
{
    if (b == NULL)
        return;
    free(b->n_pred);
    free(b->succ_begin);
    free(b->succ);
    free(b->cost);
    free(b->measured);
    free(b);
}

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory for the branch DAG");
}

rn_status plan_branches_build(plan_spec *s, const int *task_of)
{
    const plugin_plan_options *o = &s->plan->options;
    bool timed = o->branch_fork == NULL && o->branch_fork_ns > 0;
    if (o->branch_threads < 2 || (o->branch_fork == NULL && !timed) || s->n_tasks < 2 ||
        (timed && s->plan->pool == NULL))
        return RN_OK;
    int n = s->n_tasks;
    plan_branches *b = calloc(1, sizeof *b);
    if (b == NULL)
        return oom();
    b->n = n;
    b->threads = o->branch_threads;
    b->timed = timed;
    b->fork_ns = o->branch_fork_ns;
    atomic_init(&b->fork_overhead, o->branch_fork_ns);
    b->n_pred = calloc((size_t)n, sizeof *b->n_pred);
    b->succ_begin = calloc((size_t)n + 1, sizeof *b->succ_begin);
    b->cost = calloc((size_t)n, sizeof *b->cost);
    if (timed && (b->measured = calloc((size_t)n, sizeof *b->measured)) == NULL) {
        plan_branches_free(b);
        return oom();
    }
    for (int t = 0; timed && t < n; t++)
        atomic_init(&b->measured[t], 0);
    /* Edges: (producer task, consumer task), distinct, from the nodes:
     * only a chain's first node reads other chains (each later one has one
     * producer, its chain's previous node: build_tasks), so an edge is
     * distinct when its node has not added it already (seen[p]: the last
     * node that added an edge from task p). */
    size_t n_edges = 0, cap = 64;
    int(*edges)[2] = malloc(cap * sizeof *edges);
    int *seen = malloc((size_t)n * sizeof *seen);
    rn_status st = b->n_pred && b->succ_begin && b->cost && edges && seen ? RN_OK : oom();
    for (int t = 0; t < n && seen != NULL; t++)
        seen[t] = -1;
    for (int i = 0; i < s->n_nodes && st == RN_OK; i++) {
        const plan_node *nd = &s->nodes[i];
        if (o->branch_work != NULL && nd->node != NULL)
            b->cost[task_of[i]] += o->branch_work(nd->node);
        else
            b->cost[task_of[i]] += 1;
        for (int k = 0; k < nd->n_in + nd->n_implicit && st == RN_OK; k++) {
            int v = k < nd->n_in ? nd->in[k] : nd->implicit[k - nd->n_in];
            int p = v >= 0 ? s->values[v].producer : -1;
            if (p < 0 || task_of[p] == task_of[i] || seen[task_of[p]] == i)
                continue;
            seen[task_of[p]] = i;
            if (n_edges == cap) {
                void *more = realloc(edges, 2 * cap * sizeof *edges);
                if (more == NULL) {
                    st = oom();
                    break;
                }
                edges = more, cap *= 2;
            }
            edges[n_edges][0] = task_of[p], edges[n_edges][1] = task_of[i], n_edges++;
        }
    }
    if (st == RN_OK && (b->succ = malloc((n_edges + 1) * sizeof *b->succ)) == NULL)
        st = oom();
    if (st == RN_OK) {
        for (size_t e = 0; e < n_edges; e++) {
            b->succ_begin[edges[e][0] + 1]++;
            b->n_pred[edges[e][1]]++;
        }
        for (int t = 0; t < n; t++)
            b->succ_begin[t + 1] += b->succ_begin[t];
        int *fill = calloc((size_t)n, sizeof *fill);
        if (fill == NULL)
            st = oom();
        for (size_t e = 0; e < n_edges && st == RN_OK; e++)
            b->succ[b->succ_begin[edges[e][0]] + fill[edges[e][0]]++] = edges[e][1];
        free(fill);
    }
    free(edges);
    free(seen);
    if (st != RN_OK) {
        plan_branches_free(b);
        return st;
    }
    s->branches = b;
    return RN_OK;
}

/* ---- trace ---- */

rn_status plan_branch_trace_new(plan_branch_trace **out)
{
    plan_branch_trace *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory for the branch trace");
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return RN_OK;
}

void plan_branch_trace_free(plan_branch_trace *t)
{
    if (t == NULL)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->ev);
    free(t);
}

static void trace_add(plan_branch_trace *t, const branch_event *e)
{
    pthread_mutex_lock(&t->lock);
    if (t->n == t->cap && t->cap < TRACE_MAX_EVENTS) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        branch_event *more = realloc(t->ev, cap * sizeof *more);
        if (more != NULL)
            t->ev = more, t->cap = cap;
    }
    if (t->n < t->cap)
        t->ev[t->n++] = *e;
    else
        t->dropped++;
    pthread_mutex_unlock(&t->lock);
}

rn_status plan_branch_trace_append(plan_branch_trace *t, const char *path, uint64_t origin_ns)
{
    if (t == NULL)
        return RN_OK;
    FILE *f = fopen(path, "r+");
    char tail[4];
    /* The plan's trace ends with "\n]}\n": the chains' events go before. */
    if (f == NULL || fseek(f, -4, SEEK_END) != 0 || fread(tail, 1, 4, f) != 4 ||
        memcmp(tail, "\n]}\n", 4) != 0 || fseek(f, -4, SEEK_END) != 0) {
        if (f != NULL)
            fclose(f);
        return rn_set_error(RN_IO_ERROR, "trace '%s': cannot append the branch events", path);
    }
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n; i++) {
        const branch_event *e = &t->ev[i];
        double ts = e->start_ns >= origin_ns ? (double)(e->start_ns - origin_ns) / 1000.0 : 0.0;
        fputs(",\n{\"name\":", f);
        sched_trace_put_string(f, e->name);
        fprintf(f,
                ",\"cat\":\"branch\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                "\"dur\":%.3f,\"args\":{\"instance\":%llu,\"run\":%llu,\"thread\":%d,"
                "\"forked\":%d}}",
                1000, e->thread, ts, (double)(e->end_ns - e->start_ns) / 1000.0,
                (unsigned long long)e->request, (unsigned long long)e->run, e->thread, e->forked);
    }
    if (t->dropped > 0)
        fprintf(f,
                ",\n{\"name\":\"branch events dropped\",\"ph\":\"M\",\"pid\":1000,"
                "\"args\":{\"dropped\":%zu}}",
                t->dropped);
    pthread_mutex_unlock(&t->lock);
    fputs(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1000,\"tid\":0,"
          "\"args\":{\"name\":\"branches\"}}",
          f);
    fputs("\n]}\n", f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        return rn_set_error(RN_IO_ERROR, "trace '%s': cannot append the branch events", path);
    return RN_OK;
}

/* ---- the runner ---- */

typedef struct branch_run {
    plugin_request *r;
    const plan_branches *b;
    plan_branch_trace *trace;
    uint64_t run;
    pthread_mutex_t lock;
    int *remaining; /* per task: predecessors not yet done */
    int *ready;
    int n_ready;
    int left; /* threads of the current fork that have left it */
    int busy; /* threads of the current fork running a chain */
    /* Timed: the measured costs of the chains the current fork took (their
     * sum and the largest), to measure what the fork cost beyond them. */
    int64_t fork_sum, fork_max;
} branch_run;

/* Task t's cost: its measured time (timed) or the device's estimate. */
static int64_t cost_of(const plan_branches *b, int t)
{
    return b->timed ? atomic_load_explicit(&b->measured[t], memory_order_relaxed) : b->cost[t];
}

/* The costliest ready task (lock held), or -1. */
static int pop(branch_run *br)
{
    if (br->n_ready == 0)
        return -1;
    int best = 0;
    for (int k = 1; k < br->n_ready; k++)
        if (cost_of(br->b, br->ready[k]) > cost_of(br->b, br->ready[best]))
            best = k;
    int t = br->ready[best];
    br->ready[best] = br->ready[--br->n_ready];
    return t;
}

/* Lock held. */
static void complete(branch_run *br, int t)
{
    const plan_branches *b = br->b;
    for (int k = b->succ_begin[t]; k < b->succ_begin[t + 1]; k++)
        if (--br->remaining[b->succ[k]] == 0)
            br->ready[br->n_ready++] = b->succ[k];
}

/* Timed: a task's new time in its moving average (a quarter of the new
 * one), at least 1 ns so that a run task counts as measured. */
static void measure(const plan_branches *b, int t, uint64_t ns)
{
    int64_t d = ns > 0 ? (int64_t)ns : 1;
    int64_t old = atomic_load_explicit(&b->measured[t], memory_order_relaxed);
    atomic_store_explicit(&b->measured[t], old == 0 ? d : old + (d - old) / 4,
                          memory_order_relaxed);
}

/* The calling thread's CPU time, ns. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Timed: a chain run alone is measured by its time; one run in a fork by
 * its thread's CPU time, since a fork's thread that shares a core (with
 * the runner, or another process) runs its chain at a fraction of its
 * speed, and that time would make the chain look costlier and the fork,
 * measured against its chains' times, look free. */
static void run_task(branch_run *br, int t, int thread, bool forked)
{
    bool timed = br->b->timed;
    uint64_t t0 = br->trace != NULL || timed ? plugin_now_ns() : 0;
    uint64_t c0 = timed && forked ? thread_cpu_ns() : 0;
    plugin_run_task(br->r, t);
    if (br->trace == NULL && !timed)
        return;
    uint64_t t1 = plugin_now_ns();
    if (timed)
        measure(br->b, t, forked && c0 > 0 ? thread_cpu_ns() - c0 : t1 - t0);
    if (br->trace != NULL) {
        const plan_spec *s = br->r->rs->spec;
        branch_event e = {.request = (uint64_t)(uintptr_t)br->r,
                          .run = br->run,
                          .start_ns = t0,
                          .end_ns = t1,
                          .thread = thread,
                          .forked = forked};
        snprintf(e.name, sizeof e.name, "%s", s->nodes[s->task_nodes[s->task_begin[t]]].name);
        trace_add(br->trace, &e);
    }
}

/* The ready tasks' (lock held) time side by side, thread loads filled
 * costliest first (LPT), and their sum. */
static int64_t span_of_ready(const branch_run *br, int64_t *sum)
{
    const plan_branches *b = br->b;
    enum { MAX_LOADS = 16 };
    int threads = b->threads < MAX_LOADS ? b->threads : MAX_LOADS;
    int64_t load[MAX_LOADS] = {0};
    bool taken[64] = {false};
    int n = br->n_ready < 64 ? br->n_ready : 64;
    *sum = 0;
    for (int done = 0; done < n; done++) {
        int best = -1, least = 0;
        for (int k = 0; k < n; k++)
            if (!taken[k] && (best < 0 || cost_of(b, br->ready[k]) > cost_of(b, br->ready[best])))
                best = k;
        for (int q = 1; q < threads; q++)
            if (load[q] < load[least])
                least = q;
        taken[best] = true;
        load[least] += cost_of(b, br->ready[best]);
        *sum += cost_of(b, br->ready[best]);
    }
    int64_t span = 0;
    for (int q = 0; q < threads; q++)
        span = load[q] > span ? load[q] : span;
    return span;
}

/* Timed: what a fork costs now (at least fork_ns). */
static int64_t fork_cost(const plan_branches *b)
{
    return atomic_load_explicit(&((plan_branches *)b)->fork_overhead, memory_order_relaxed);
}

/* Whether the ready tasks (lock held) are worth a fork: two or more, and
 * side by side sooner than one after the other: on the whole team (a team
 * device), or on one thread (timed) by more than a fork costs. */
static bool fork_pays(const branch_run *br)
{
    if (br->n_ready < 2)
        return false;
    const plan_branches *b = br->b;
    int64_t sum, span = span_of_ready(br, &sum);
    if (b->timed)
        return span + fork_cost(b) <= sum;
    const plan_spec *s = br->r->rs->spec;
    int64_t team = 0;
    int n = br->n_ready < 64 ? br->n_ready : 64;
    for (int k = 0; k < n; k++) {
        int t = br->ready[k];
        team += b->cost[t] * TEAM_SPEEDUP_DEN / (TEAM_SPEEDUP_NUM * (b->threads / 2)) +
                TEAM_FORK * (s->task_begin[t + 1] - s->task_begin[t]);
    }
    return span + TEAM_FORK <= team;
}

/* Timed, no fork (lock held): where the ready tasks would pay for a fork
 * at its base cost but not at the measured one, the estimate decays an
 * eighth of the way back to the base, so that a machine that was busy is
 * tried again after some such decisions (SqueezeNet has 8 a request). */
static void fork_cost_decay(const branch_run *br)
{
    const plan_branches *b = br->b;
    int64_t cost = fork_cost(b), sum;
    if (br->n_ready < 2 || cost <= b->fork_ns || span_of_ready(br, &sum) + b->fork_ns > sum)
        return;
    atomic_store_explicit(&((plan_branches *)b)->fork_overhead, cost - (cost - b->fork_ns) / 8,
                          memory_order_relaxed);
}

/* Timed, after a fork: what it cost beyond its chains (its time less their
 * measured times side by side: the largest, or their sum over the threads),
 * into the moving average (a quarter of the new one), never below fork_ns. */
static void fork_cost_update(const branch_run *br, uint64_t wall_ns)
{
    const plan_branches *b = br->b;
    int64_t ideal = br->fork_sum / b->threads;
    ideal = br->fork_max > ideal ? br->fork_max : ideal;
    int64_t over = (int64_t)wall_ns - ideal;
    over = over > b->fork_ns ? over : b->fork_ns;
    int64_t old = fork_cost(b);
    atomic_store_explicit(&((plan_branches *)b)->fork_overhead, old + (over - old) / 4,
                          memory_order_relaxed);
}

/* Whether a thread of the fork takes another ready chain (lock held):
 * while the ready ones are still worth a fork, or, beside another thread's
 * chain, a small one (up to SMALL_CHAIN; timed: any, since this thread is
 * awake and on its core already). Else it leaves, and the others after
 * their chain: a chain that outweighs the rest (or one alone) is the
 * runner's, on the whole team. A fork's thread that starts late (preempted
 * on a busy machine) finds the others' choices made. */
static bool stay(const branch_run *br)
{
    if (br->n_ready == 0)
        return false;
    if (fork_pays(br))
        return true;
    if (br->b->timed)
        return br->busy > 0;
    int64_t most = 0;
    for (int k = 0; k < br->n_ready; k++)
        most = br->b->cost[br->ready[k]] > most ? br->b->cost[br->ready[k]] : most;
    return br->busy > 0 && most <= SMALL_CHAIN;
}

/* One thread of a fork. */
static void branch_thread(void *arg, int thread)
{
    branch_run *br = arg;
    for (;;) {
        pthread_mutex_lock(&br->lock);
        int t = br->left == 0 && stay(br) ? pop(br) : -1;
        if (t < 0) {
            br->left++;
            pthread_mutex_unlock(&br->lock);
            return;
        }
        br->busy++;
        if (br->b->timed) {
            int64_t c = cost_of(br->b, t);
            br->fork_sum += c;
            br->fork_max = c > br->fork_max ? c : br->fork_max;
        }
        pthread_mutex_unlock(&br->lock);
        run_task(br, t, thread, true);
        pthread_mutex_lock(&br->lock);
        br->busy--;
        complete(br, t);
        pthread_mutex_unlock(&br->lock);
    }
}

/* ---- a fork on the stream's workers (timed devices) ---- */

/* A fork's thread k > 0 is a one-off task on the request's stream. The
 * runner, once it has left the fork, revokes each task that has not
 * started (it runs later as a no-op: the ticket outlives the fork, freed by
 * whichever of the two lets it go last) and waits for each that has: its
 * thread is running this fork's chains, which end. The runner never waits
 * for a task that has not started, so a stream whose other workers are busy
 * (two requests on a LATENCY stream) costs the fork nothing but the
 * ticket. */
enum { TICKET_PENDING, TICKET_RUNNING, TICKET_DONE, TICKET_REVOKED };

/* A started fork thread's end is awaited spinning this long, then asleep. */
#define JOIN_SPIN_NS 20000u
#define MAX_HELPERS  15
/* Tickets a request keeps: a revoked one is held until a worker has taken
 * its task (tens of microseconds), and the next fork may come sooner. */
#define TICKET_SLOTS 8

typedef struct fork_ticket {
    atomic_int state;
    atomic_int refs;     /* the runner's and the task's; 0: a request's slot is free */
    atomic_bool waiting; /* the runner sleeps on `done` */
    bool heap;           /* allocated for one fork (its slot was still held), freed at 0 */
    sched_job job;       /* fork_task on the ticket, posted without an allocation */
    pthread_mutex_t lock;
    pthread_cond_t done;
    void (*fn)(void *arg, int thread);
    void *arg;
    int thread;
} fork_ticket;

/* A request's runner state for one spec (request_spec.c): the runner's
 * arrays and a ticket per fork thread, so that a steady run allocates
 * nothing. */
struct plan_branch_state {
    int *mem; /* 2 x tasks: remaining predecessors, ready tasks */
    int n_slots;
    fork_ticket slots[TICKET_SLOTS];
};

static void ticket_init(fork_ticket *k, bool heap)
{
    atomic_init(&k->state, TICKET_REVOKED);
    atomic_init(&k->refs, 0);
    atomic_init(&k->waiting, false);
    k->heap = heap;
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->done, NULL);
}

static void ticket_destroy(fork_ticket *k)
{
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->done);
}

rn_status plan_branch_state_new(const plan_branches *b, plan_branch_state **out)
{
    plan_branch_state *st = calloc(1, sizeof *st);
    if (st == NULL || (st->mem = malloc(2 * (size_t)b->n * sizeof *st->mem)) == NULL) {
        free(st);
        return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
    }
    st->n_slots = b->timed ? TICKET_SLOTS : 0;
    for (int i = 0; i < st->n_slots; i++)
        ticket_init(&st->slots[i], false);
    *out = st;
    return RN_OK;
}

void plan_branch_state_free(plan_branch_state *st)
{
    if (st == NULL)
        return;
    /* A revoked fork thread's task may not have run yet: it still holds
     * its slot until a worker of the stream takes it, soon. */
    for (int i = 0; i < st->n_slots; i++) {
        while (atomic_load_explicit(&st->slots[i].refs, memory_order_acquire) != 0)
            sched_yield();
        ticket_destroy(&st->slots[i]);
    }
    free(st->mem);
    free(st);
}

/* Nothing of a slot's ticket is read after its last reference is let go:
 * the request's state may be freed at once (plan_branch_state_free). */
static void ticket_unref(fork_ticket *k)
{
    bool heap = k->heap;
    if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1 && heap) {
        ticket_destroy(k);
        free(k);
    }
}

static int fork_task(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    fork_ticket *k = arg;
    int pending = TICKET_PENDING;
    if (atomic_compare_exchange_strong(&k->state, &pending, TICKET_RUNNING)) {
        k->fn(k->arg, k->thread);
        /* seq_cst store, then load of `waiting`: the runner stores waiting,
         * then loads state; one of the two sees the other's store. */
        atomic_store(&k->state, TICKET_DONE);
        if (atomic_load(&k->waiting)) {
            pthread_mutex_lock(&k->lock);
            pthread_cond_broadcast(&k->done);
            pthread_mutex_unlock(&k->lock);
        }
    }
    ticket_unref(k);
    return SCHED_OK;
}

static void ticket_join(fork_ticket *k)
{
    int pending = TICKET_PENDING;
    if (!atomic_compare_exchange_strong(&k->state, &pending, TICKET_REVOKED)) {
        uint64_t until = plugin_now_ns() + JOIN_SPIN_NS;
        while (atomic_load_explicit(&k->state, memory_order_acquire) != TICKET_DONE &&
               plugin_now_ns() < until)
            sched_cpu_relax();
        if (atomic_load_explicit(&k->state, memory_order_acquire) != TICKET_DONE) {
            atomic_store(&k->waiting, true);
            pthread_mutex_lock(&k->lock);
            while (atomic_load(&k->state) != TICKET_DONE)
                pthread_cond_wait(&k->done, &k->lock);
            pthread_mutex_unlock(&k->lock);
        }
    }
    ticket_unref(k);
}

/* A ticket: a free slot of the request's state, else one for this fork
 * alone (NULL when out of memory). Only the runner takes slots. */
static fork_ticket *ticket_take(plan_branch_state *st)
{
    fork_ticket *k = NULL;
    for (int i = 0; st != NULL && i < st->n_slots && k == NULL; i++)
        if (atomic_load_explicit(&st->slots[i].refs, memory_order_acquire) == 0)
            k = &st->slots[i];
    if (k == NULL && (k = malloc(sizeof *k)) != NULL)
        ticket_init(k, true);
    if (k != NULL) {
        atomic_store_explicit(&k->state, TICKET_PENDING, memory_order_relaxed);
        atomic_store_explicit(&k->waiting, false, memory_order_relaxed);
        atomic_store_explicit(&k->refs, 2, memory_order_relaxed);
    }
    return k;
}

static void fork_on_workers(plan_branch_state *st, sched *s, int stream,
                            void (*fn)(void *arg, int thread), void *arg, int threads)
{
    fork_ticket *k[MAX_HELPERS];
    int n = 0;
    for (int thread = 1; thread < threads && n < MAX_HELPERS; thread++) {
        fork_ticket *t = ticket_take(st);
        if (t == NULL)
            break;
        t->fn = fn, t->arg = arg, t->thread = thread;
        /* The post publishes the ticket (the queue's release). */
        t->job = (sched_job){.fn = fork_task, .arg = t};
        if (sched_post(s, stream, &t->job) != 0) {
            atomic_store_explicit(&t->refs, 0, memory_order_release);
            if (t->heap) {
                ticket_destroy(t);
                free(t);
            }
            break; /* the injection queue is full: fewer threads */
        }
        k[n++] = t;
    }
    fn(arg, 0);
    for (int i = 0; i < n; i++)
        ticket_join(k[i]);
}

int plugin_task_branches(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    plugin_request *r = ctx->user_arg;
    const plan_spec *s = r->rs->spec;
    const plan_branches *b = s->branches;
    const plugin_plan_options *o = &s->plan->options;
    plan_branch_state *state = r->rs->branch;
    int *mem = state != NULL ? state->mem : malloc(2 * (size_t)b->n * sizeof *mem);
    if (mem == NULL) {
        /* No runner state: the tasks in order, on this thread. */
        for (int t = 0; t < s->n_tasks; t++)
            plugin_run_task(r, t);
        return SCHED_OK;
    }
    branch_run br = {
        .r = r, .b = b, .trace = s->plan->branch_trace, .remaining = mem, .ready = mem + b->n};
    /* Trace events: instance the request, run a process-wide count (an
     * inline run counts no runs of its request). */
    static atomic_uint_fast64_t runs;
    if (br.trace != NULL)
        br.run = atomic_fetch_add(&runs, 1) + 1;
    /* A timed fork's threads: workers of the request's stream (an inline
     * run, sync, has no scheduler context: any stream of the plan's pool). */
    sched *sc = ctx->sched != NULL ? ctx->sched : executors_sched(s->plan->pool);
    int stream = ctx->sched != NULL ? (int)ctx->stream : SCHED_STREAM_ANY;
    pthread_mutex_init(&br.lock, NULL);
    for (int t = 0; t < b->n; t++)
        if ((br.remaining[t] = b->n_pred[t]) == 0)
            br.ready[br.n_ready++] = t;
    for (;;) {
        pthread_mutex_lock(&br.lock);
        if (fork_pays(&br)) {
            br.left = 0;
            br.fork_sum = br.fork_max = 0;
            pthread_mutex_unlock(&br.lock);
            if (b->timed) {
                uint64_t t0 = plugin_now_ns();
                fork_on_workers(state, sc, stream, branch_thread, &br, b->threads);
                fork_cost_update(&br, plugin_now_ns() - t0);
            } else {
                o->branch_fork(branch_thread, &br, b->threads);
            }
            continue;
        }
        if (b->timed)
            fork_cost_decay(&br);
        int t = pop(&br);
        pthread_mutex_unlock(&br.lock);
        if (t < 0)
            break;
        run_task(&br, t, 0, false);
        pthread_mutex_lock(&br.lock);
        complete(&br, t);
        pthread_mutex_unlock(&br.lock);
    }
    pthread_mutex_destroy(&br.lock);
    if (state == NULL)
        free(mem);
    return SCHED_OK;
}
