/* bench/latency: one request at a time under the LATENCY hint, run with
 * rn_infer_request_infer (sync, inline in the caller's thread) and with
 * rn_infer_request_start_async + rn_infer_request_wait (async, through the
 * request pipeline on the stream workers), side by side (not a test).
 *
 * Issue 30: async should take no longer than sync (within 5 %) on every
 * device. The peer of each async figure is the sync figure of the same
 * model on the same device in the same run. Per device and model: the model
 * is compiled with PERFORMANCE_HINT=LATENCY, one request is created, and
 * rounds of the two modes alternate (sync, async, async, sync, ...) so that
 * a change of machine load hits both alike; each round times requests one
 * by one for a fixed time after a warm-up and keeps their median. Each line
 * prints the median [min-max] of the rounds' medians in ms, and async/sync.
 *
 * By default (--order isolated) every round runs in a process of its own
 * (forked before anything of runnel exists): how a program that only uses
 * one of the two APIs runs. A process that runs both has two OpenMP
 * masters on the CPU device (the caller's thread for sync, the stream
 * worker for async), more OpenMP threads than cores, and then libgomp stops
 * spinning in every team of the process (docs/cpu.md, "Threads and
 * streams"): --order interleaved measures that case, both modes in one
 * process; sync-first and async-first run every round of one mode before
 * the other's, in one process.
 *
 * Beside the wall time, the CPU time every thread of the process spent
 * during the timed requests (/proc/self/task/TID/schedstat, ns on a CPU) and
 * its voluntary context switches (/proc/self/task/TID/status: it blocked,
 * in a futex wait or a sleep), per request, grouped by what the thread is:
 * the caller (the thread that calls infer / start_async + wait), unnamed
 * threads (named as the process: libgomp's pool of the caller, which runs
 * a sync request's primitives on the CPU device, or a device library's own
 * threads, PoCL's for GPU), the stream workers ("rn-sNwK"), their OpenMP
 * teams ("rn-sNtK"), the executors ("rn-callback", "rn-device-wait"), the
 * CPU device's idle pool ("rn-omp-idle", plugins/cpu/wait.c: while it is
 * held every OpenMP team of the process sleeps in its waits), device
 * libraries' own threads (named as the process and already there once the
 * devices started, before compiling: PoCL's; they are not the caller's
 * OpenMP pool), and others (threads named otherwise).
 * CPU time per request above the wall time means more than one thread was
 * busy: a team working in parallel, or threads spinning beside it.
 *
 *   bazel run //bench/latency:bench_latency -- [--devices CPU,REF,GPU,HETERO:CPU+REF,AUTO]
 *       [--models squeezenet,shufflenet,...] [--rounds N] [--seconds S] [--warmup N]
 *       [--order isolated|interleaved|sync-first|async-first] [--release-caller-team]
 *       [--callback] [--stamps DIR] [-p KEY=VALUE ...]
 *
 * Models are the light ONNX test models of onnx 1.22.0
 * (.cache/onnx-1.22.0/light/light_NAME.onnx, fetched by scripts/setup), or
 * paths to .onnx files. A meta device's list is written with '+' (HETERO:CPU+REF
 * for HETERO:CPU,REF), since --devices is a list at commas. --seconds is the time the timed
 * requests of one device and model take in all (both modes, every round). A device that is not
 * available is skipped with a line saying so. --callback sets a callback (one that does nothing)
 * on the request: an async run then ends with its callback stage on the callback executor's
 * thread ("rn-callback"), as in a program that uses callbacks (runnel-server), instead of on
 * the stream worker. --release-caller-team is an experiment: after
 * compiling, the caller's libgomp pool is released (omp_pause_resource_all). --stamps DIR
 * compiles with ENABLE_TRACE=YES and writes, for every round, the CLOCK_MONOTONIC instants each
 * timed request was started and returned (DIR/DEVICE-MODEL-MODE-PID.stamps: "t0_ns t1_ns" a
 * line) and the scheduler's trace of the round (DIR/...json, whose otherData.origin_ns is the
 * instant its ts count from); bench/latency/handoff.py DIR lines them up: where an async
 * request's time goes between start_async, the stream's first node, its last node and the
 * caller's return from wait. docs/performance.md ("sync and async under LATENCY") has the
 * numbers. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/common/host.h"
#include "bench/common/timing.h"
#include "runnel/runnel.h"

#define MAX_PROPERTIES 16
#define MAX_ROUNDS     101
#define MAX_LIST       32
#define MAX_THREADS    256
#define MAX_SAMPLES    5000

enum { MODE_SYNC, MODE_ASYNC, N_MODES };
static const char *const mode_names[N_MODES] = {"sync", "async"};

typedef enum order { ORDER_ISOLATED, ORDER_INTERLEAVED, ORDER_SYNC_FIRST, ORDER_ASYNC_FIRST } order;

typedef struct options {
    const char *devices[MAX_LIST];
    int n_devices;
    const char *models[MAX_LIST];
    int n_models;
    int rounds;
    int warmup;
    double seconds; /* timed per device and model, both modes and every round together */
    order order;
    bool release_caller_team;
    bool callback; /* async runs with a callback set: through the callback executor */
    rn_property properties[MAX_PROPERTIES];
    size_t n_properties;
} options;

/* What the threads of the process are. */
enum {
    KIND_CALLER,
    KIND_CALLER_TEAM,
    KIND_WORKER,
    KIND_WORKER_TEAM,
    KIND_EXECUTOR,
    KIND_IDLE_POOL,
    KIND_DEVICE_LIBS,
    KIND_OTHER,
    N_KINDS
};
static const char *const kind_names[N_KINDS] = {"caller",       "caller-team", "workers",
                                                "worker-teams", "executors",   "idle-pool",
                                                "device-libs",  "other"};

typedef struct thread_time {
    long tid;
    uint64_t ns;
    uint64_t sleeps; /* voluntary context switches: the thread blocked */
    char comm[32];
} thread_time;

typedef struct snapshot {
    int n;
    thread_time t[MAX_THREADS];
} snapshot;

/* One device and model: every round of both modes, and what the threads did. */
typedef struct result {
    int rounds[N_MODES];
    double round_ms[N_MODES][MAX_ROUNDS];
    double cpu_ns[N_MODES][N_KINDS]; /* summed over every timed request */
    double sleeps[N_MODES][N_KINDS]; /* voluntary context switches, likewise */
    int busy_max[N_MODES][N_KINDS];  /* the most threads of a kind busy >1 % of a round */
    long requests[N_MODES];
    int pool_rounds[N_MODES];     /* rounds that ended with the idle pool held */
    int census_compiled[N_KINDS]; /* threads after compiling (the last process's) */
    int census_end[N_KINDS];      /* threads after the runs */
    char streams[32], threads[32];
} result;

/* Why a device and model could not be measured. */
typedef enum outcome { OUTCOME_OK, OUTCOME_SKIPPED, OUTCOME_FAILED } outcome;

static char process_comm[32];
static long caller_tid;
static const char *stamps_dir; /* --stamps DIR: each round's request instants and trace */

/* Threads named as the process that were there once the devices had
 * started, before compiling (a device library's own: PoCL's for GPU, which
 * rn_core_device_count starts): not the caller's OpenMP pool. */
#define MAX_DEVICE_THREADS 64
static long device_tids[MAX_DEVICE_THREADS];
static int n_device_tids;

/* ---------------------------------------------------------------- threads */

static void read_line(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fgets(buf, (int)size, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

static uint64_t voluntary_switches(const char *tid)
{
    char path[300], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    unsigned long long v = 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* Every thread's time on a CPU so far (schedstat's first field, ns). */
static void take_snapshot(snapshot *s)
{
    s->n = 0;
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && s->n < MAX_THREADS) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[128];
        thread_time *t = &s->t[s->n];
        t->tid = atol(e->d_name);
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        read_line(path, line, sizeof line);
        unsigned long long ns = 0;
        if (sscanf(line, "%llu", &ns) != 1)
            continue;
        t->ns = ns;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        read_line(path, t->comm, sizeof t->comm);
        t->sleeps = voluntary_switches(e->d_name);
        s->n++;
    }
    closedir(d);
}

static int thread_kind(const thread_time *t)
{
    if (t->tid == caller_tid)
        return KIND_CALLER;
    const char *c = t->comm;
    unsigned a, b;
    char tail;
    if (sscanf(c, "rn-s%uw%u%c", &a, &b, &tail) == 2)
        return KIND_WORKER;
    if (sscanf(c, "rn-s%ut%u%c", &a, &b, &tail) == 2)
        return KIND_WORKER_TEAM;
    if (strcmp(c, "rn-callback") == 0 || strncmp(c, "rn-device-wa", 12) == 0)
        return KIND_EXECUTOR;
    /* The adaptive wait's idle pool (plugins/cpu/wait.c): its holder and the
     * pool threads it forked (named as their creator). While it is there,
     * every OpenMP team of the process sleeps in its waits. */
    if (strcmp(c, "rn-omp-idle") == 0)
        return KIND_IDLE_POOL;
    if (strcmp(c, process_comm) == 0) {
        for (int i = 0; i < n_device_tids; i++)
            if (device_tids[i] == t->tid)
                return KIND_DEVICE_LIBS;
        return KIND_CALLER_TEAM;
    }
    return KIND_OTHER;
}

static void note_device_threads(void)
{
    static snapshot now;
    take_snapshot(&now);
    n_device_tids = 0;
    for (int i = 0; i < now.n && n_device_tids < MAX_DEVICE_THREADS; i++)
        if (now.t[i].tid != caller_tid && strcmp(now.t[i].comm, process_comm) == 0)
            device_tids[n_device_tids++] = now.t[i].tid;
}

static void census(int out[N_KINDS])
{
    static snapshot now;
    take_snapshot(&now);
    memset(out, 0, sizeof(int) * N_KINDS);
    for (int i = 0; i < now.n; i++)
        out[thread_kind(&now.t[i])]++;
}

/* Adds each kind's CPU time and sleeps between the snapshots to the mode's
 * totals; notes how many threads of each kind ran >1 % of the wall time. */
static void add_threads(const snapshot *before, const snapshot *after, uint64_t wall_ns,
                        result *res, int mode)
{
    int busy[N_KINDS] = {0};
    for (int i = 0; i < after->n; i++) {
        uint64_t was = 0, slept = 0;
        for (int j = 0; j < before->n; j++)
            if (before->t[j].tid == after->t[i].tid) {
                was = before->t[j].ns;
                slept = before->t[j].sleeps;
            }
        uint64_t d = after->t[i].ns - was;
        int k = thread_kind(&after->t[i]);
        res->cpu_ns[mode][k] += (double)d;
        res->sleeps[mode][k] += (double)(after->t[i].sleeps - slept);
        if ((double)d > 0.01 * (double)wall_ns)
            busy[k]++;
    }
    for (int k = 0; k < N_KINDS; k++)
        if (busy[k] > res->busy_max[mode][k])
            res->busy_max[mode][k] = busy[k];
}

/* ---------------------------------------------------------------- a session */

typedef struct session {
    const char *device, *model;
    rn_core *core;
    rn_compiled_model *compiled;
    rn_infer_request *rq;
} session;

static rn_status run_mode(rn_infer_request *rq, int mode)
{
    if (mode == MODE_SYNC)
        return rn_infer_request_infer(rq);
    rn_status st = rn_infer_request_start_async(rq);
    return st == RN_OK ? rn_infer_request_wait(rq) : st;
}

static void model_path(const char *name, char *buf, size_t size)
{
    if (strchr(name, '/') != NULL || strstr(name, ".onnx") != NULL)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, ".cache/onnx-1.22.0/light/light_%s.onnx", name);
}

static const char *short_name(const char *model)
{
    const char *s = strrchr(model, '/');
    return s != NULL ? s + 1 : model;
}

/* Fills every f32 input with values in [-1, 1) (a fixed sequence). */
static rn_status fill_inputs(session *s)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < rn_compiled_model_input_count(s->compiled); i++) {
        rn_tensor *t;
        rn_status st = rn_infer_request_get_input_tensor(s->rq, i, &t);
        if (st != RN_OK)
            return st;
        if (rn_tensor_element_type(t) != RN_F32)
            continue; /* zeros */
        float *p = rn_tensor_data(t);
        for (size_t k = 0; k < rn_tensor_element_count(t); k++) {
            x = x * 1664525u + 1013904223u;
            p[k] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
        }
    }
    return RN_OK;
}

/* The experiment behind --release-caller-team: frees the calling thread's
 * OpenMP thread pool (libgomp, loaded by the CPU device's oneDNN), so that
 * its threads stop counting among the process's OpenMP threads. */
static void release_caller_team(void)
{
    int (*pause_all)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "omp_pause_resource_all");
    if (pause_all == NULL || pause_all(1 /* omp_pause_soft */) != 0)
        fprintf(stderr, "bench_latency: omp_pause_resource_all is not available or failed\n");
}

static void session_close(session *s)
{
    rn_infer_request_free(s->rq);
    rn_compiled_model_free(s->compiled);
    rn_core_free(s->core);
    memset(s, 0, sizeof *s);
}

/* --callback: a callback that does nothing, so that an async run's last stage runs on the
 * callback executor ("rn-callback") as a program's (runnel-server's) does; wait returns after
 * it. Without one the run completes on the stream worker (pipeline_direct). */
static void on_done(rn_infer_request *request, rn_status status, void *user_data)
{
    (void)request;
    (void)status;
    (void)user_data;
}

/* Creates a core, compiles the model for the device under LATENCY and
 * creates a request with its inputs filled. */
static outcome session_open(session *s, const char *device, const char *model, const options *o,
                            result *res, char *why, size_t why_size)
{
    memset(s, 0, sizeof *s);
    s->device = device;
    s->model = model;
    if (rn_core_create(&s->core) != RN_OK) {
        snprintf(why, why_size, "rn_core_create: %s", rn_last_error());
        return OUTCOME_FAILED;
    }
    /* HETERO:CPU+REF is HETERO:CPU,REF (--devices is a list at commas); the
     * device itself is the part before the colon. */
    char name[256];
    snprintf(name, sizeof name, "%s", device);
    for (char *c = name; *c != '\0'; c++)
        if (*c == '+')
            *c = ',';
    size_t len = strcspn(name, ":");
    bool found = false;
    for (size_t i = 0; i < rn_core_device_count(s->core); i++) {
        const char *d = rn_core_device_name(s->core, i);
        found = found || (strlen(d) == len && strncmp(d, name, len) == 0);
    }
    if (!found) {
        snprintf(why, why_size, "the device is not available here");
        session_close(s);
        return OUTCOME_SKIPPED;
    }
    note_device_threads();
    char path[1024];
    model_path(model, path, sizeof path);
    rn_model *m;
    if (rn_core_read_model(s->core, path, &m) != RN_OK) {
        snprintf(why, why_size, "cannot read %s: %s", path, rn_last_error());
        session_close(s);
        return OUTCOME_SKIPPED;
    }
    rn_property props[MAX_PROPERTIES + 1];
    size_t n = 0;
    props[n++] = (rn_property){.key = "PERFORMANCE_HINT", .value = "LATENCY"};
    for (size_t i = 0; i < o->n_properties; i++)
        props[n++] = o->properties[i];
    rn_status st = rn_core_compile_model(s->core, m, name, props, n, &s->compiled);
    rn_model_free(m);
    if (st != RN_OK) {
        snprintf(why, why_size, "compile failed: %s", rn_last_error());
        session_close(s);
        return OUTCOME_FAILED;
    }
    census(res->census_compiled);
    if (o->release_caller_team)
        release_caller_team();
    if ((st = rn_compiled_model_create_infer_request(s->compiled, &s->rq)) != RN_OK ||
        (st = fill_inputs(s)) != RN_OK) {
        snprintf(why, why_size, "creating the request: %s", rn_last_error());
        session_close(s);
        return OUTCOME_FAILED;
    }
    if (o->callback && rn_infer_request_set_callback(s->rq, on_done, NULL) != RN_OK) {
        snprintf(why, why_size, "set_callback: %s", rn_last_error());
        session_close(s);
        return OUTCOME_FAILED;
    }
    rn_compiled_model_get_property(s->compiled, "NUM_STREAMS", res->streams, sizeof res->streams);
    rn_compiled_model_get_property(s->compiled, "INFERENCE_NUM_THREADS", res->threads,
                                   sizeof res->threads);
    return OUTCOME_OK;
}

/* --stamps: the round's request instants and its trace, for handoff.py. */
static void write_stamps(const session *s, int mode, const uint64_t (*stamps)[2], int n)
{
    char base[1024], path[1100];
    char name[256];
    snprintf(name, sizeof name, "%s", short_name(s->model));
    name[strcspn(name, ".")] = '\0';
    snprintf(base, sizeof base, "%s/%s-%s-%s-%d", stamps_dir, s->device, name, mode_names[mode],
             (int)getpid());
    snprintf(path, sizeof path, "%s.stamps", base);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "bench_latency: cannot write %s\n", path);
        return;
    }
    for (int i = 0; i < n; i++)
        fprintf(f, "%llu %llu\n", (unsigned long long)stamps[i][0],
                (unsigned long long)stamps[i][1]);
    fclose(f);
    snprintf(path, sizeof path, "%s.json", base);
    if (rn_compiled_model_write_trace(s->compiled, path) != RN_OK)
        fprintf(stderr, "bench_latency: %s: %s\n", path, rn_last_error());
}

/* One round of a mode: the warm-up, then requests timed one by one for
 * `seconds` (at least 3). Adds the round's median to res. */
static outcome measure_round(session *s, int mode, int warmup, double seconds, result *res,
                             char *why, size_t why_size)
{
    static double samples[MAX_SAMPLES];
    static uint64_t stamps[MAX_SAMPLES][2];
    bool marks = getenv("RUNNEL_OMP_WAIT_LOG") != NULL; /* rounds in the wait log (wait.c) */
    if (marks)
        fprintf(stderr, "bench_latency: %d %s warm-up from t %.3f\n", (int)getpid(),
                mode_names[mode], (double)bench_now_ns() / 1e6);
    for (int i = 0; i < warmup; i++)
        if (run_mode(s->rq, mode) != RN_OK)
            goto failed;
    static snapshot before, after;
    take_snapshot(&before);
    uint64_t start = bench_now_ns(), budget = (uint64_t)(seconds * 1e9);
    if (marks)
        fprintf(stderr, "bench_latency: %d %s timed from t %.3f\n", (int)getpid(), mode_names[mode],
                (double)start / 1e6);
    int n = 0;
    while (n < MAX_SAMPLES && (n < 3 || bench_now_ns() - start < budget)) {
        uint64_t t0 = bench_now_ns();
        if (run_mode(s->rq, mode) != RN_OK)
            goto failed;
        uint64_t t1 = bench_now_ns();
        stamps[n][0] = t0;
        stamps[n][1] = t1;
        samples[n++] = (double)(t1 - t0) / 1e6;
    }
    uint64_t wall = bench_now_ns() - start;
    if (marks)
        fprintf(stderr, "bench_latency: %d %s timed to t %.3f, %d requests, median %.3f ms\n",
                (int)getpid(), mode_names[mode], (double)(start + wall) / 1e6, n,
                bench_median(samples, n));
    take_snapshot(&after);
    add_threads(&before, &after, wall, res, mode);
    if (stamps_dir != NULL)
        write_stamps(s, mode, (const uint64_t(*)[2])stamps, n);
    int now[N_KINDS];
    census(now);
    res->pool_rounds[mode] += now[KIND_IDLE_POOL] > 0;
    res->requests[mode] += n;
    res->round_ms[mode][res->rounds[mode]++] = bench_median(samples, n);
    return OUTCOME_OK;
failed:
    snprintf(why, why_size, "%s request failed: %s", mode_names[mode], rn_last_error());
    return OUTCOME_FAILED;
}

/* The mode of the k-th run of round r: sync, async, async, sync, ... */
static int interleaved_mode(int r, int k)
{
    return r % 2 ? N_MODES - 1 - k : k;
}

/* Every round in this process (orders other than isolated). */
static outcome measure_in_process(const char *device, const char *model, const options *o,
                                  result *res, char *why, size_t why_size)
{
    session s;
    outcome out = session_open(&s, device, model, o, res, why, why_size);
    if (out != OUTCOME_OK)
        return out;
    double round_s = o->seconds / (2.0 * o->rounds);
    for (int pass = 0; pass < (o->order == ORDER_INTERLEAVED ? 1 : N_MODES); pass++)
        for (int r = 0; r < o->rounds && out == OUTCOME_OK; r++)
            for (int k = 0; k < (o->order == ORDER_INTERLEAVED ? N_MODES : 1); k++) {
                int mode = o->order == ORDER_INTERLEAVED  ? interleaved_mode(r, k)
                           : o->order == ORDER_SYNC_FIRST ? pass
                                                          : N_MODES - 1 - pass;
                if (out == OUTCOME_OK)
                    out = measure_round(&s, mode, o->warmup, round_s, res, why, why_size);
            }
    census(res->census_end);
    session_close(&s);
    return out;
}

/* What a round's process sends back. */
typedef struct round_report {
    outcome out;
    char why[1600];
    result res;
} round_report;

/* Every round in a process of its own: forked from this one, which holds no
 * thread and nothing of runnel. */
static outcome measure_isolated(const char *device, const char *model, const options *o,
                                result *res, char *why, size_t why_size)
{
    double round_s = o->seconds / (2.0 * o->rounds);
    for (int r = 0; r < o->rounds; r++)
        for (int k = 0; k < N_MODES; k++) {
            int mode = interleaved_mode(r, k);
            int fd[2];
            if (pipe(fd) != 0) {
                snprintf(why, why_size, "pipe failed");
                return OUTCOME_FAILED;
            }
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                close(fd[0]);
                static round_report rep;
                memset(&rep, 0, sizeof rep);
                caller_tid = (long)syscall(SYS_gettid);
                session s;
                rep.out = session_open(&s, device, model, o, &rep.res, rep.why, sizeof rep.why);
                if (rep.out == OUTCOME_OK) {
                    rep.out = measure_round(&s, mode, o->warmup + 2, round_s, &rep.res, rep.why,
                                            sizeof rep.why);
                    census(rep.res.census_end);
                    session_close(&s);
                }
                const char *p = (const char *)&rep;
                size_t left = sizeof rep;
                while (left > 0) {
                    ssize_t w = write(fd[1], p, left);
                    if (w <= 0)
                        _exit(1);
                    p += w;
                    left -= (size_t)w;
                }
                _exit(0);
            }
            close(fd[1]);
            static round_report rep;
            memset(&rep, 0, sizeof rep);
            char *p = (char *)&rep;
            size_t got = 0;
            ssize_t n;
            while (pid > 0 && got < sizeof rep && (n = read(fd[0], p + got, sizeof rep - got)) > 0)
                got += (size_t)n;
            close(fd[0]);
            int status = 0;
            if (pid > 0)
                waitpid(pid, &status, 0);
            if (got != sizeof rep) {
                snprintf(why, why_size, "the process of round %d (%s) died (status %d)", r,
                         mode_names[mode], status);
                return OUTCOME_FAILED;
            }
            if (rep.out != OUTCOME_OK) {
                snprintf(why, why_size, "%s", rep.why);
                return rep.out;
            }
            const result *c = &rep.res;
            res->round_ms[mode][res->rounds[mode]++] = c->round_ms[mode][0];
            res->requests[mode] += c->requests[mode];
            res->pool_rounds[mode] += c->pool_rounds[mode];
            for (int q = 0; q < N_KINDS; q++) {
                res->cpu_ns[mode][q] += c->cpu_ns[mode][q];
                res->sleeps[mode][q] += c->sleeps[mode][q];
                if (c->busy_max[mode][q] > res->busy_max[mode][q])
                    res->busy_max[mode][q] = c->busy_max[mode][q];
            }
            memcpy(res->census_compiled, c->census_compiled, sizeof res->census_compiled);
            memcpy(res->census_end, c->census_end, sizeof res->census_end);
            memcpy(res->streams, c->streams, sizeof res->streams);
            memcpy(res->threads, c->threads, sizeof res->threads);
        }
    return OUTCOME_OK;
}

/* ---------------------------------------------------------------- report */

static double sorted_median(const double *v, int n, double *lo, double *hi)
{
    double sorted[MAX_ROUNDS];
    memcpy(sorted, v, sizeof(double) * (size_t)n);
    double m = bench_median(sorted, n);
    *lo = sorted[0];
    *hi = sorted[n - 1];
    return m;
}

static void print_census(const char *device, const char *model, const char *when,
                         const int n[N_KINDS])
{
    printf("%-6s %-14s   threads %s:", device, short_name(model), when);
    for (int k = 0; k < N_KINDS; k++)
        printf(" %s=%d", kind_names[k], n[k]);
    printf("\n");
}

static void print_result(const char *device, const char *model, const result *res)
{
    double med[N_MODES];
    for (int k = 0; k < N_MODES; k++) {
        double lo, hi;
        med[k] = sorted_median(res->round_ms[k], res->rounds[k], &lo, &hi);
        printf("%-6s %-14s %-5s %8.3f [%7.3f-%7.3f]", device, short_name(model), mode_names[k],
               med[k], lo, hi);
        if (k == MODE_ASYNC)
            printf("  async/sync=%.3f", med[MODE_ASYNC] / med[MODE_SYNC]);
        else
            printf("  %16s", "");
        double requests = (double)res->requests[k];
        printf("  cpu ms/req:");
        double total = 0;
        for (int c = 0; c < N_KINDS; c++) {
            double ms = res->cpu_ns[k][c] / 1e6 / requests;
            total += ms;
            if (ms >= 0.005 || c == KIND_CALLER)
                printf(" %s=%.3f(%d)", kind_names[c], ms, res->busy_max[k][c]);
        }
        printf(" total=%.3f  sleeps/req:", total);
        for (int c = 0; c < N_KINDS; c++)
            if (res->sleeps[k][c] / requests >= 0.05)
                printf(" %s=%.1f", kind_names[c], res->sleeps[k][c] / requests);
        printf("\n");
    }
    print_census(device, model, "after compiling", res->census_compiled);
    print_census(device, model, "after the runs", res->census_end);
    printf("%-6s %-14s   NUM_STREAMS=%s INFERENCE_NUM_THREADS=%s; %d rounds per mode, %ld sync "
           "and %ld async requests timed; rounds that ended with the idle pool held (teams "
           "sleeping): sync %d, async %d\n",
           device, short_name(model), res->streams, res->threads, res->rounds[MODE_SYNC],
           res->requests[MODE_SYNC], res->requests[MODE_ASYNC], res->pool_rounds[MODE_SYNC],
           res->pool_rounds[MODE_ASYNC]);
    fflush(stdout);
}

/* ---------------------------------------------------------------- main */

static int split(char *list, const char **out)
{
    int n = 0;
    for (char *tok = strtok(list, ","); tok != NULL && n < MAX_LIST; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

static bool parse_order(const char *v, order *out)
{
    static const char *const names[] = {"isolated", "interleaved", "sync-first", "async-first"};
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = (order)i;
            return true;
        }
    return false;
}

static int parse_options(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--release-caller-team") == 0) {
            o->release_caller_team = true;
            continue;
        }
        if (strcmp(a, "--callback") == 0) {
            o->callback = true;
            continue;
        }
        char *v = i + 1 < argc ? argv[++i] : NULL;
        if (v == NULL)
            goto usage;
        if (strcmp(a, "--devices") == 0)
            o->n_devices = split(v, o->devices);
        else if (strcmp(a, "--stamps") == 0 && o->n_properties < MAX_PROPERTIES) {
            stamps_dir = v;
            o->properties[o->n_properties++] = (rn_property){.key = "ENABLE_TRACE", .value = "YES"};
        } else if (strcmp(a, "--models") == 0)
            o->n_models = split(v, o->models);
        else if (strcmp(a, "--rounds") == 0)
            o->rounds = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            o->warmup = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            o->seconds = atof(v);
        else if (strcmp(a, "--order") == 0 && parse_order(v, &o->order))
            continue;
        else if (strcmp(a, "-p") == 0 && o->n_properties < MAX_PROPERTIES && strchr(v, '=')) {
            char *eq = strchr(v, '=');
            *eq = '\0';
            o->properties[o->n_properties++] = (rn_property){.key = v, .value = eq + 1};
        } else
            goto usage;
    }
    if (o->rounds >= 1 && o->rounds <= MAX_ROUNDS && o->warmup >= 0 && o->seconds > 0)
        return 0;
usage:
    fprintf(stderr,
            "usage: bench_latency [--devices CPU,REF,GPU] [--models squeezenet,shufflenet,...] "
            "[--rounds N (1-%d)] [--seconds S] [--warmup N] "
            "[--order isolated|interleaved|sync-first|async-first] [--release-caller-team] "
            "[--callback] [--stamps DIR] [-p KEY=VALUE ...]\n",
            MAX_ROUNDS);
    return -1;
}

static const char *order_text(order o)
{
    switch (o) {
    case ORDER_ISOLATED:
        return "isolated (each round in a process of its own; sync, async, async, sync, ...)";
    case ORDER_INTERLEAVED:
        return "interleaved in one process (sync, async, async, sync, ...)";
    case ORDER_SYNC_FIRST:
        return "sync-first in one process (every sync round, then every async one)";
    default:
        return "async-first in one process (every async round, then every sync one)";
    }
}

int main(int argc, char **argv)
{
    static char default_devices[] = "CPU,REF,GPU";
    static char default_models[] = "squeezenet,shufflenet,inception_v1,resnet50,densenet121";
    options o = {.rounds = 7, .warmup = 3, .seconds = 6};
    o.n_devices = split(default_devices, o.devices);
    o.n_models = split(default_models, o.models);
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    const char *ws = getenv("BUILD_WORKSPACE_DIRECTORY"); /* bazel run: the models' root */
    if (ws != NULL && chdir(ws) != 0)
        perror("bench_latency: entering the workspace");
    caller_tid = (long)syscall(SYS_gettid);
    read_line("/proc/self/comm", process_comm, sizeof process_comm);

    char cpu[256];
    bench_cpu_model(cpu, sizeof cpu);
    struct utsname u;
    uname(&u);
    printf("# machine: %s, %ld online CPUs, %s %s\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
           u.release);
    bench_print_isa();
    bench_print_load("at start");
    printf("# one request, PERFORMANCE_HINT=LATENCY; ms per request: median [min-max] of the "
           "rounds' medians; order %s%s%s\n",
           order_text(o.order),
           o.release_caller_team ? "; the caller's OpenMP pool released after compiling" : "",
           o.callback ? "; async runs with a callback set (its stage on rn-callback)" : "");
    printf("# cpu ms/req: each kind of thread's CPU time per timed request (in parentheses: the "
           "most threads of that kind busy >1%% of a round); sleeps/req: their voluntary context "
           "switches (blocking waits) per request\n");

    int failures = 0;
    for (int d = 0; d < o.n_devices; d++)
        for (int i = 0; i < o.n_models; i++) {
            static result res;
            memset(&res, 0, sizeof res);
            char why[1600] = "";
            outcome out =
                o.order == ORDER_ISOLATED
                    ? measure_isolated(o.devices[d], o.models[i], &o, &res, why, sizeof why)
                    : measure_in_process(o.devices[d], o.models[i], &o, &res, why, sizeof why);
            if (out == OUTCOME_OK) {
                print_result(o.devices[d], o.models[i], &res);
                continue;
            }
            printf("%-6s %-14s %s: %s\n", o.devices[d], short_name(o.models[i]),
                   out == OUTCOME_SKIPPED ? "skipped" : "FAILED", why);
            failures += out == OUTCOME_FAILED;
            if (strcmp(why, "the device is not available here") == 0)
                break; /* the other models would say the same */
        }
    bench_print_load("at end");
    return failures > 0;
}
