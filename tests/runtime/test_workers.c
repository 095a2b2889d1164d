/* One runtime per process: the devices of dlopen'ed plugins (GPU on PoCL
 * here) link libruntime.so, so they take their workers from the process's
 * one set of executor pools, and HETERO and AUTO spreading requests over GPU
 * and a built-in device never keep more runnel worker threads busy than the
 * machine has cores.
 *
 * The threads are read from /proc/self/task: a runnel stream worker is named
 * rn-s<stream>w<k>, a CPU stream's compute team thread rn-s<stream>t<k>
 * (sched/worker.c, plugins/cpu/onednn.c); "busy" is the state R (running
 * or runnable) in /proc/self/task/TID/stat, sampled while requests run. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define MODEL ".cache/onnx-1.22.0/light/light_squeezenet.onnx"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

typedef struct census {
    int workers; /* rn-s<s>w<k> */
    int busy;    /* of the workers and team threads (rn-s<s>t<k>): in state R */
} census;

static census take_census(void)
{
    census c = {0};
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], stat[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue; /* the thread has exited */
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = '\0';
        /* "TID (comm) S ...": comm may hold spaces, so from the last ')'. */
        char *open = strchr(stat, '('), *close = strrchr(stat, ')');
        if (open == NULL || close == NULL || close[1] != ' ')
            continue;
        *close = '\0';
        unsigned s, k;
        char kind, tail;
        if (sscanf(open + 1, "rn-s%u%c%u%c", &s, &kind, &k, &tail) != 3 ||
            (kind != 'w' && kind != 't'))
            continue;
        c.workers += kind == 'w';
        c.busy += close[2] == 'R';
    }
    closedir(d);
    return c;
}

/* The stream workers once they have all named themselves (a new thread
 * bears the process's name until it does): the count that stayed the same
 * over 200 ms, read within 5 s. */
static int settled_workers(void)
{
    int last = take_census().workers, same = 0;
    for (int i = 0; i < 250 && same < 10; i++) {
        nanosleep(&(struct timespec){0, 20000000}, NULL);
        int now = take_census().workers;
        same = now == last ? same + 1 : 0;
        last = now;
    }
    return last;
}

static int cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* A core with GPU (skipping, saying why, where no OpenCL device exists). */
static rn_core *core_with_gpu(void)
{
    return gpu_core();
}

static rn_compiled_model *compile(rn_core *core, rn_model *m, const char *device,
                                  const rn_property *props, size_t n)
{
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, m, device, props, n, &cm));
    return cm;
}

Test(workers, a_plugin_device_takes_its_workers_from_the_runtimes_pools)
{
    rn_core *core = core_with_gpu();
    int before = settled_workers();
    rn_model *m;
    OK(rn_core_read_model(core, MODEL, &m));
    rn_property latency[] = {{"PERFORMANCE_HINT", "LATENCY"}};
    rn_compiled_model *ref = compile(core, m, "REF", latency, 1);
    int with_ref = settled_workers();
    rn_compiled_model *gpu = compile(core, m, "GPU", latency, 1);
    int with_both = settled_workers();
    cr_log_info("workers: %d before, %d with REF, %d with REF and GPU (%d cores)", before, with_ref,
                with_both, cores());
    cr_expect_leq(with_both - before, cores(),
                  "REF and GPU (a dlopen'ed plugin) started %d stream workers on %d cores",
                  with_both - before, cores());
    rn_compiled_model_free(gpu);
    rn_compiled_model_free(ref);
    rn_model_free(m);
    rn_core_free(core);
}

typedef struct load {
    rn_compiled_model *cm;
    atomic_bool stop;
    atomic_int max_busy, max_workers, samples;
} load;

static void *sample(void *arg)
{
    load *l = arg;
    while (!atomic_load(&l->stop)) {
        census c = take_census();
        if (c.busy > atomic_load(&l->max_busy))
            atomic_store(&l->max_busy, c.busy);
        if (c.workers > atomic_load(&l->max_workers))
            atomic_store(&l->max_workers, c.workers);
        atomic_fetch_add(&l->samples, 1);
        nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    return NULL;
}

/* Runs `rounds` rounds of `n` async requests on cm while a thread samples
 * the workers; returns the most busy at once. */
static void run_under_load(rn_compiled_model *cm, int n, int rounds)
{
    rn_infer_request *r[8];
    cr_assert_leq(n, 8);
    for (int i = 0; i < n; i++) {
        OK(rn_compiled_model_create_infer_request(cm, &r[i]));
        gpu_fill_inputs(cm, r[i]);
    }
    /* One request at a time first: each device's first runs (CLBlast
     * tunes and caches its kernels then, unsynchronised as TSan sees it)
     * are not what this measures. */
    for (int i = 0; i < n; i++) {
        OK(rn_infer_request_start_async(r[i]));
        OK(rn_infer_request_wait(r[i]));
    }
    load l = {.cm = cm};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, sample, &l), 0);
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < n; i++)
            OK(rn_infer_request_start_async(r[i]));
        for (int i = 0; i < n; i++)
            OK(rn_infer_request_wait(r[i]));
    }
    atomic_store(&l.stop, true);
    pthread_join(t, NULL);
    for (int i = 0; i < n; i++)
        rn_infer_request_free(r[i]);
    cr_log_info("%d samples: at most %d busy runnel threads, %d stream workers (%d cores)",
                atomic_load(&l.samples), atomic_load(&l.max_busy), atomic_load(&l.max_workers),
                cores());
    cr_expect_gt(atomic_load(&l.samples), 0);
    cr_expect_leq(atomic_load(&l.max_busy), cores(),
                  "%d runnel threads were busy at once on %d cores", atomic_load(&l.max_busy),
                  cores());
}

/* HETERO's own tasks (preprocess, starting parts, transfers) run on the
 * host workers its parts' plans run on (plugins/hetero/request.c), not on a
 * pool of its own (with one: 3 busy runnel threads on 2 cores). */
Test(workers, hetero_gpu_cpu_under_load_never_busies_more_threads_than_cores)
{
    rn_core *core = core_with_gpu();
    rn_model *m;
    OK(rn_core_read_model(core, MODEL, &m));
    rn_property p[] = {{"PERFORMANCE_HINT", "THROUGHPUT"}};
    rn_compiled_model *cm = compile(core, m, "HETERO:GPU,CPU", p, 1);
    run_under_load(cm, 4, 6);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}

Test(workers, auto_over_gpu_and_cpu_under_load_never_busies_more_threads_than_cores)
{
    rn_core *core = core_with_gpu();
    rn_model *m;
    OK(rn_core_read_model(core, MODEL, &m));
    rn_property p[] = {{"PERFORMANCE_HINT", "CUMULATIVE_THROUGHPUT"}};
    rn_compiled_model *cm = compile(core, m, "AUTO:GPU,CPU", p, 1);
    run_under_load(cm, 4, 6);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}
