/* bench/latency: one request at a time under the LATENCY hint, run with
 * rn_infer_request_infer (sync, inline in the caller's thread) and with
 * rn_infer_request_start_async + rn_infer_request_wait (async, through the
 * request pipeline on the stream workers), side by side (not a test).
 *
 * Issue 30: async should take no longer than sync (within 5 %) on every
 * device. The peer of each async figure is the sync figure of the same
 * request in the same run. Per device and model: the model is compiled with
 * PERFORMANCE_HINT=LATENCY, one request is created, and rounds alternate the
 * modes (sync, async, sync, async, ...; each round times `iters` requests
 * one by one after a warm-up, and keeps its median), so that a change of
 * machine load hits both alike. Each line prints the median [min-max] of
 * the rounds' medians in ms, and async/sync.
 *
 * Beside the wall time, the CPU time every thread of the process spent
 * during each mode (/proc/self/task/TID/schedstat, nanoseconds on a CPU),
 * per request, grouped by what the thread is: the caller (this thread), the
 * caller's OpenMP team (threads named as the process: libgomp's pool of the
 * caller, which runs sync requests' primitives), the stream workers
 * ("rn-sNwK"), their OpenMP teams ("rn-sNtK"), the executors ("rn-callback",
 * "rn-device-wait"), and others (a device's own threads). CPU time per
 * request above the wall time means more than one thread was busy: a team
 * working in parallel, or threads spinning beside it.
 *
 *   bazel run //bench/latency:bench_latency -- [--devices CPU,REF,GPU]
 *       [--models squeezenet,shufflenet,...] [--rounds N] [--seconds S]
 *       [--warmup N] [--order interleaved|sync-first|async-first] [-p KEY=VALUE ...]
 *
 * Models are the light ONNX test models of onnx 1.22.0
 * (.cache/onnx-1.22.0/light/light_NAME.onnx, fetched by scripts/setup), or
 * paths to .onnx files. `--order sync-first` runs every sync round before
 * any async one (a process that has never started an async request while
 * sync runs), `async-first` the reverse. A device that is not available is
 * skipped with a line saying so. docs/performance.md ("sync and async under
 * LATENCY") has the numbers. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/common/host.h"
#include "runnel/runnel.h"

#define MAX_PROPERTIES 16
#define MAX_ROUNDS     101
#define MAX_LIST       32
#define MAX_THREADS    256

enum { MODE_SYNC, MODE_ASYNC, N_MODES };
static const char *const mode_names[N_MODES] = {"sync", "async"};

typedef enum order { ORDER_INTERLEAVED, ORDER_SYNC_FIRST, ORDER_ASYNC_FIRST } order;

typedef struct options {
    const char *devices[MAX_LIST];
    int n_devices;
    const char *models[MAX_LIST];
    int n_models;
    int rounds;
    int warmup;
    double seconds; /* timed per device and model, both modes together */
    order order;
    bool only[N_MODES];       /* --modes: run only these (default both) */
    bool release_caller_team; /* --release-caller-team */
    rn_property properties[MAX_PROPERTIES];
    size_t n_properties;
} options;

/* What the threads of the process ran, by kind. */
enum {
    KIND_CALLER,
    KIND_CALLER_TEAM,
    KIND_WORKER,
    KIND_WORKER_TEAM,
    KIND_EXECUTOR,
    KIND_OTHER,
    N_KINDS
};
static const char *const kind_names[N_KINDS] = {"caller",       "caller-team", "workers",
                                                "worker-teams", "executors",   "other"};

typedef struct thread_time {
    long tid;
    uint64_t ns;
    uint64_t sleeps; /* voluntary context switches: the thread blocked (a futex wait, ...) */
    char comm[32];
} thread_time;

typedef struct snapshot {
    int n;
    thread_time t[MAX_THREADS];
} snapshot;

static char process_comm[32];
static long caller_tid;

static void die(const char *what)
{
    fprintf(stderr, "bench_latency: %s: %s\n", what, rn_last_error());
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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
        t->sleeps = 0;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            unsigned long long v;
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
                t->sleeps = v;
        }
        if (f != NULL)
            fclose(f);
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
    if (strcmp(c, process_comm) == 0)
        return KIND_CALLER_TEAM;
    return KIND_OTHER;
}

/* Adds each thread's CPU time between the snapshots to by_kind; counts the
 * threads that ran at least 1 % of the wall time in busy[kind]. */
static void add_cpu(const snapshot *before, const snapshot *after, uint64_t wall_ns,
                    double by_kind[N_KINDS], double sleeps[N_KINDS], int busy[N_KINDS])
{
    for (int i = 0; i < after->n; i++) {
        uint64_t was = 0, slept = 0;
        for (int j = 0; j < before->n; j++)
            if (before->t[j].tid == after->t[i].tid) {
                was = before->t[j].ns;
                slept = before->t[j].sleeps;
            }
        uint64_t d = after->t[i].ns - was;
        int k = thread_kind(&after->t[i]);
        by_kind[k] += (double)d;
        sleeps[k] += (double)(after->t[i].sleeps - slept);
        if (busy != NULL && (double)d > 0.01 * (double)wall_ns)
            busy[k]++;
    }
}

/* ---------------------------------------------------------------- runs */

static rn_status run_mode(rn_infer_request *rq, int mode)
{
    if (mode == MODE_SYNC)
        return rn_infer_request_infer(rq);
    rn_status st = rn_infer_request_start_async(rq);
    return st == RN_OK ? rn_infer_request_wait(rq) : st;
}

typedef struct result {
    double round_ms[MAX_ROUNDS];
    double cpu_ns[N_KINDS]; /* summed over every timed request */
    double sleeps[N_KINDS]; /* voluntary context switches, summed likewise */
    int busy_max[N_KINDS];  /* the most threads of a kind busy in one round */
    long requests;
} result;

/* One round of a mode: warm-up, then `iters` requests timed one by one. */
static void time_round(rn_infer_request *rq, int mode, int warmup, int iters, double *samples,
                       result *res, int round)
{
    for (int i = 0; i < warmup; i++)
        if (run_mode(rq, mode) != RN_OK)
            die(mode_names[mode]);
    static snapshot before, after;
    take_snapshot(&before);
    uint64_t start = now_ns();
    for (int i = 0; i < iters; i++) {
        uint64_t t0 = now_ns();
        if (run_mode(rq, mode) != RN_OK)
            die(mode_names[mode]);
        samples[i] = (double)(now_ns() - t0) / 1e6;
    }
    uint64_t wall = now_ns() - start;
    take_snapshot(&after);
    int busy[N_KINDS] = {0};
    add_cpu(&before, &after, wall, res->cpu_ns, res->sleeps, busy);
    for (int k = 0; k < N_KINDS; k++)
        if (busy[k] > res->busy_max[k])
            res->busy_max[k] = busy[k];
    res->requests += iters;
    res->round_ms[round] = median(samples, iters);
}

/* Fills every input with values in [-1, 1) (a fixed sequence). */
static void fill_inputs(rn_compiled_model *compiled, rn_infer_request *rq)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < rn_compiled_model_input_count(compiled); i++) {
        rn_tensor *t;
        if (rn_infer_request_get_input_tensor(rq, i, &t) != RN_OK)
            die("get_input_tensor");
        if (rn_tensor_element_type(t) != RN_F32)
            continue; /* zeros */
        float *p = rn_tensor_data(t);
        for (size_t k = 0; k < rn_tensor_element_count(t); k++) {
            x = x * 1664525u + 1013904223u;
            p[k] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
        }
    }
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

static void print_range(const double *v, int n)
{
    double sorted[MAX_ROUNDS];
    memcpy(sorted, v, sizeof(double) * (size_t)n);
    double med = median(sorted, n);
    printf("%8.3f [%7.3f-%7.3f]", med, sorted[0], sorted[n - 1]);
}

static double med_of(const double *v, int n)
{
    double sorted[MAX_ROUNDS];
    memcpy(sorted, v, sizeof(double) * (size_t)n);
    return median(sorted, n);
}

/* Prints how many threads of each kind the process has. */
static void census(const char *device, const char *model, const char *when)
{
    static snapshot now;
    take_snapshot(&now);
    int n[N_KINDS] = {0};
    for (int i = 0; i < now.n; i++)
        n[thread_kind(&now.t[i])]++;
    printf("%-6s %-14s   threads %s:", device, short_name(model), when);
    for (int k = 0; k < N_KINDS; k++)
        printf(" %s=%d", kind_names[k], n[k]);
    printf("\n");
}

/* The experiment behind --release-caller-team: frees the calling thread's
 * OpenMP thread pool (libgomp, loaded by the CPU device's oneDNN), so that
 * its threads stop counting among the process's OpenMP threads. */
static void release_caller_team(void)
{
    int (*pause_all)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "omp_pause_resource_all");
    if (pause_all == NULL || pause_all(1 /* omp_pause_soft */) != 0)
        printf("# --release-caller-team: omp_pause_resource_all is not available or failed\n");
}

static bool bench_one(rn_core *core, const char *device, const char *model, const options *o)
{
    char path[1024];
    model_path(model, path, sizeof path);
    rn_model *m;
    if (rn_core_read_model(core, path, &m) != RN_OK) {
        printf("%-6s %-14s skipped: cannot read %s: %s\n", device, short_name(model), path,
               rn_last_error());
        return false;
    }
    rn_property props[MAX_PROPERTIES + 1];
    size_t n = 0;
    props[n++] = (rn_property){.key = "PERFORMANCE_HINT", .value = "LATENCY"};
    for (size_t i = 0; i < o->n_properties; i++)
        props[n++] = o->properties[i];
    rn_compiled_model *compiled;
    rn_status st = rn_core_compile_model(core, m, device, props, n, &compiled);
    rn_model_free(m);
    if (st != RN_OK) {
        printf("%-6s %-14s skipped: compile failed: %s\n", device, short_name(model),
               rn_last_error());
        return false;
    }
    census(device, model, "after compile");
    if (o->release_caller_team)
        release_caller_team();
    rn_infer_request *rq;
    if (rn_compiled_model_create_infer_request(compiled, &rq) != RN_OK)
        die("create_infer_request");
    fill_inputs(compiled, rq);

    /* A first request, and the latency that sizes the rounds, in the mode
     * that runs first (sync-first: no async request before the sync ones). */
    int first = o->order == ORDER_ASYNC_FIRST || !o->only[MODE_SYNC] ? MODE_ASYNC : MODE_SYNC;
    if (run_mode(rq, first) != RN_OK)
        die("first request");
    double one_s = 1e9;
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = now_ns();
        if (run_mode(rq, first) != RN_OK)
            die(mode_names[first]);
        double s = (double)(now_ns() - t0) / 1e9;
        one_s = s < one_s ? s : one_s;
    }
    int iters = (int)(o->seconds / (2.0 * o->rounds * (one_s > 1e-6 ? one_s : 1e-6)));
    iters = iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
    int warmup = o->warmup < iters ? o->warmup : iters;

    static result res[N_MODES];
    memset(res, 0, sizeof res);
    double *samples = malloc(sizeof(double) * (size_t)iters);
    if (samples == NULL)
        die("out of memory");
    for (int pass = 0; pass < (o->order == ORDER_INTERLEAVED ? 1 : 2); pass++)
        for (int r = 0; r < o->rounds; r++)
            for (int k = 0; k < N_MODES; k++) {
                int mode = o->order == ORDER_INTERLEAVED  ? (r % 2 ? N_MODES - 1 - k : k)
                           : o->order == ORDER_SYNC_FIRST ? pass
                                                          : N_MODES - 1 - pass;
                if ((o->order != ORDER_INTERLEAVED && k > 0) || !o->only[mode])
                    continue;
                time_round(rq, mode, warmup, iters, samples, &res[mode], r);
            }
    free(samples);

    census(device, model, "after the runs");
    char threads[32] = "?", streams[32] = "?";
    rn_compiled_model_get_property(compiled, "INFERENCE_NUM_THREADS", threads, sizeof threads);
    rn_compiled_model_get_property(compiled, "NUM_STREAMS", streams, sizeof streams);
    double med[N_MODES];
    for (int k = 0; k < N_MODES; k++) {
        if (!o->only[k])
            continue;
        med[k] = med_of(res[k].round_ms, o->rounds);
        printf("%-6s %-14s %-5s ", device, short_name(model), mode_names[k]);
        print_range(res[k].round_ms, o->rounds);
        if (k == MODE_ASYNC && o->only[MODE_SYNC])
            printf("  async/sync=%.3f", med[MODE_ASYNC] / med[MODE_SYNC]);
        else
            printf("  %17s", "");
        printf("  cpu ms/req:");
        double total = 0;
        for (int c = 0; c < N_KINDS; c++) {
            double ms = res[k].cpu_ns[c] / 1e6 / (double)res[k].requests;
            total += ms;
            if (ms >= 0.005 || c == KIND_CALLER)
                printf(" %s=%.3f(%d)", kind_names[c], ms, res[k].busy_max[c]);
        }
        printf(" total=%.3f  sleeps/req:", total);
        for (int c = 0; c < N_KINDS; c++) {
            double n_sleeps = res[k].sleeps[c] / (double)res[k].requests;
            if (n_sleeps >= 0.05)
                printf(" %s=%.1f", kind_names[c], n_sleeps);
        }
        printf("\n");
    }
    printf("%-6s %-14s   (NUM_STREAMS=%s INFERENCE_NUM_THREADS=%s; %d rounds x %d requests per "
           "mode)\n",
           device, short_name(model), streams, threads, o->rounds, iters);
    fflush(stdout);
    rn_infer_request_free(rq);
    rn_compiled_model_free(compiled);
    return true;
}

/* ---------------------------------------------------------------- main */

static int split(char *list, const char **out)
{
    int n = 0;
    for (char *tok = strtok(list, ","); tok != NULL && n < MAX_LIST; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

static int parse_options(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL && strcmp(a, "--release-caller-team") != 0)
            goto usage;
        if (strcmp(a, "--devices") == 0)
            o->n_devices = split(v, o->devices);
        else if (strcmp(a, "--models") == 0)
            o->n_models = split(v, o->models);
        else if (strcmp(a, "--modes") == 0 && (strcmp(v, "sync") == 0 || strcmp(v, "async") == 0))
            o->only[strcmp(v, "sync") == 0 ? MODE_ASYNC : MODE_SYNC] = false;
        else if (strcmp(a, "--release-caller-team") == 0) {
            o->release_caller_team = true;
            continue;
        } else if (strcmp(a, "--rounds") == 0)
            o->rounds = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            o->warmup = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            o->seconds = atof(v);
        else if (strcmp(a, "--order") == 0 && strcmp(v, "interleaved") == 0)
            o->order = ORDER_INTERLEAVED;
        else if (strcmp(a, "--order") == 0 && strcmp(v, "sync-first") == 0)
            o->order = ORDER_SYNC_FIRST;
        else if (strcmp(a, "--order") == 0 && strcmp(v, "async-first") == 0)
            o->order = ORDER_ASYNC_FIRST;
        else if (strcmp(a, "-p") == 0 && o->n_properties < MAX_PROPERTIES && strchr(v, '=')) {
            char *eq = strchr(v, '=');
            *eq = '\0';
            o->properties[o->n_properties++] = (rn_property){.key = v, .value = eq + 1};
        } else
            goto usage;
        i++;
    }
    if (o->rounds >= 1 && o->rounds <= MAX_ROUNDS && o->warmup >= 0 && o->seconds > 0)
        return 0;
usage:
    fprintf(stderr,
            "usage: bench_latency [--devices CPU,REF,GPU] [--models squeezenet,shufflenet,...] "
            "[--rounds N (1-%d)] [--seconds S] [--warmup N] "
            "[--order interleaved|sync-first|async-first] [--modes sync|async] "
            "[-p KEY=VALUE ...]\n",
            MAX_ROUNDS);
    return -1;
}

static bool has_device(rn_core *core, const char *name)
{
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        if (strcmp(rn_core_device_name(core, i), name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    static char default_devices[] = "CPU,REF,GPU";
    static char default_models[] = "squeezenet,shufflenet,inception_v1,resnet50,densenet121";
    options o = {.rounds = 9, .warmup = 3, .seconds = 6, .only = {true, true}};
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
           "rounds' medians; order %s\n",
           o.order == ORDER_INTERLEAVED  ? "interleaved (sync, async, async, sync, ...)"
           : o.order == ORDER_SYNC_FIRST ? "sync-first (every sync round, then every async one)"
                                         : "async-first (every async round, then every sync one)");
    printf("# cpu ms/req: CPU time of each kind of thread per request (in parentheses: the most "
           "threads of that kind busy >1%% of a round); sleeps/req: their voluntary context "
           "switches (blocking waits) per request\n");

    rn_core *core;
    if (rn_core_create(&core) != RN_OK)
        die("rn_core_create");
    for (int d = 0; d < o.n_devices; d++) {
        if (!has_device(core, o.devices[d])) {
            printf("%-6s skipped: the device is not available here\n", o.devices[d]);
            continue;
        }
        for (int i = 0; i < o.n_models; i++)
            bench_one(core, o.devices[d], o.models[i], &o);
    }
    bench_print_load("at end");
    rn_core_free(core);
    return 0;
}
