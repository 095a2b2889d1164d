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
 * With tracing on, every chain's run is an event of category "branch"
 * (bench/latency/node_overlap.py measures how much of a request's time ran
 * two at once), appended to the plan's trace by plugin_plan_write_trace. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan_internal.h"

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
    free(b);
}

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory for the branch DAG");
}

rn_status plan_branches_build(plan_spec *s, const int *task_of)
{
    const plugin_plan_options *o = &s->plan->options;
    if (o->branch_threads < 2 || o->branch_fork == NULL || s->n_tasks < 2)
        return RN_OK;
    int n = s->n_tasks;
    plan_branches *b = calloc(1, sizeof *b);
    if (b == NULL)
        return oom();
    b->n = n;
    b->threads = o->branch_threads;
    b->n_pred = calloc((size_t)n, sizeof *b->n_pred);
    b->succ_begin = calloc((size_t)n + 1, sizeof *b->succ_begin);
    b->cost = calloc((size_t)n, sizeof *b->cost);
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
} branch_run;

/* The costliest ready task (lock held), or -1. */
static int pop(branch_run *br)
{
    if (br->n_ready == 0)
        return -1;
    int best = 0;
    for (int k = 1; k < br->n_ready; k++)
        if (br->b->cost[br->ready[k]] > br->b->cost[br->ready[best]])
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

static void run_task(branch_run *br, int t, int thread, bool forked)
{
    uint64_t t0 = br->trace != NULL ? plugin_now_ns() : 0;
    plugin_run_task(br->r, t);
    if (br->trace != NULL) {
        const plan_spec *s = br->r->rs->spec;
        branch_event e = {.request = (uint64_t)(uintptr_t)br->r,
                          .run = br->run,
                          .start_ns = t0,
                          .end_ns = plugin_now_ns(),
                          .thread = thread,
                          .forked = forked};
        snprintf(e.name, sizeof e.name, "%s", s->nodes[s->task_nodes[s->task_begin[t]]].name);
        trace_add(br->trace, &e);
    }
}

/* Whether the ready tasks (lock held) are worth a fork: two or more, and
 * side by side (thread loads filled costliest first) sooner than one after
 * the other on the whole team. */
static bool fork_pays(const branch_run *br)
{
    if (br->n_ready < 2)
        return false;
    const plan_branches *b = br->b;
    const plan_spec *s = br->r->rs->spec;
    enum { MAX_LOADS = 16 };
    int threads = b->threads < MAX_LOADS ? b->threads : MAX_LOADS;
    int64_t load[MAX_LOADS] = {0}, team = 0;
    bool taken[64] = {false};
    int n = br->n_ready < 64 ? br->n_ready : 64;
    for (int k = 0; k < n; k++) {
        int t = br->ready[k];
        team += b->cost[t] * TEAM_SPEEDUP_DEN / (TEAM_SPEEDUP_NUM * (b->threads / 2)) +
                TEAM_FORK * (s->task_begin[t + 1] - s->task_begin[t]);
    }
    for (int done = 0; done < n; done++) {
        int best = -1, least = 0;
        for (int k = 0; k < n; k++)
            if (!taken[k] && (best < 0 || b->cost[br->ready[k]] > b->cost[br->ready[best]]))
                best = k;
        for (int q = 1; q < threads; q++)
            if (load[q] < load[least])
                least = q;
        taken[best] = true;
        load[least] += b->cost[br->ready[best]];
    }
    int64_t span = 0;
    for (int q = 0; q < threads; q++)
        span = load[q] > span ? load[q] : span;
    return span + TEAM_FORK <= team;
}

/* Whether a thread of the fork takes another ready chain (lock held):
 * while the ready ones are still worth a fork, or, beside another thread's
 * chain, a small one (up to SMALL_CHAIN). Else it leaves, and the others
 * after their chain: a chain that outweighs the rest (or one alone) is the
 * runner's, on the whole team. A fork's thread that starts late (preempted
 * on a busy machine) finds the others' choices made. */
static bool stay(const branch_run *br)
{
    if (br->n_ready == 0)
        return false;
    if (fork_pays(br))
        return true;
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
        pthread_mutex_unlock(&br->lock);
        run_task(br, t, thread, true);
        pthread_mutex_lock(&br->lock);
        br->busy--;
        complete(br, t);
        pthread_mutex_unlock(&br->lock);
    }
}

int plugin_task_branches(const sched_task_ctx *ctx, void *arg)
{
    (void)arg;
    plugin_request *r = ctx->user_arg;
    const plan_spec *s = r->rs->spec;
    const plan_branches *b = s->branches;
    const plugin_plan_options *o = &s->plan->options;
    int *mem = malloc(2 * (size_t)b->n * sizeof *mem);
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
    pthread_mutex_init(&br.lock, NULL);
    for (int t = 0; t < b->n; t++)
        if ((br.remaining[t] = b->n_pred[t]) == 0)
            br.ready[br.n_ready++] = t;
    for (;;) {
        pthread_mutex_lock(&br.lock);
        if (fork_pays(&br)) {
            br.left = 0;
            pthread_mutex_unlock(&br.lock);
            o->branch_fork(branch_thread, &br, b->threads);
            continue;
        }
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
    free(mem);
    return SCHED_OK;
}
