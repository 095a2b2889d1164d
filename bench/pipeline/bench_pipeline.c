/* bench/pipeline: how well async requests fill a device's pipeline (not a test).
 *
 * SLOWDEV simulates an accelerator whose four stages (upload, execute, wait,
 * download) each take a fixed time on their own engine. One request goes
 * through them one after the other, so with one request in flight the device
 * completes 1/sum(stages) runs per second; with enough requests in flight the
 * stages of different requests overlap and the slowest engine is the limit,
 * 1/max(stage): the ideal. For 1, 2, 4 and 8 requests in flight (each
 * callback restarts its request), this prints the measured runs per second
 * (median of several windows), the ideal and efficiency = measured / ideal.
 * The target is efficiency >= 0.9 from 4 requests in flight on.
 *
 * With --remote it measures the same points again with every input and
 * output in a remote tensor of the model's context (device memory): the
 * copy engines then have nothing to move, the pipeline is execute + wait,
 * and it prints runs/s against that pipeline's ideal and the ratio to the
 * host-tensor runs of the same point.
 *
 *   bazel run //bench/pipeline:bench_pipeline -- [--costs U,E,W,D] [--inflight 1,2,4,8]
 *       [--seconds S] [--runs N] [--streams N] [--plugin PATH] [--remote]
 *
 * The model is test_add (a 3x4x5 Add on REF's kernels), so the host's share
 * of a run is tiny next to the device stages.
 *
 * With --hetero U,E,W,D it loads SLOWDEV a second time as SLOWDEV2 with
 * those stage costs and runs a chain of two Adds as HETERO:SLOWDEV,SLOWDEV2
 * (MODEL_DISTRIBUTION_POLICY=PIPELINE_PARALLEL: one Add on each device, the
 * tensor between them a transfer node): a request goes through eight device
 * stages, and with enough requests in flight the slowest engine of either
 * device is the limit, which is the ideal printed. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/common/host.h"
#include "bench/overhead/chain_model.h"
#include "runnel/runnel.h"

#define ADD_MODEL     "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"
#define MAX_IN_FLIGHT 64
#define MAX_POINTS    16
#define MAX_RUNS      101

static const char *const cost_keys[4] = {"SLOWDEV_UPLOAD_US", "SLOWDEV_EXECUTE_US",
                                         "SLOWDEV_WAIT_US", "SLOWDEV_DOWNLOAD_US"};

typedef struct options {
    long costs_us[4];
    int inflight[MAX_POINTS];
    int n_points;
    double seconds; /* per measurement window */
    int runs;       /* windows per point: the median is printed */
    int streams;    /* NUM_STREAMS; 0: the device's default */
    const char *plugin;
    bool remote;        /* also measure with remote tensors */
    bool hetero;        /* HETERO:SLOWDEV,SLOWDEV2 */
    long costs2_us[4];  /* SLOWDEV2's stages */
    const char *device; /* a real device (not SLOWDEV), with the chain model */
    long chain[2];      /* its Adds and width */
    const char *trace;  /* --trace PATH */
    int trace_inflight;
} options;

/* What the requests' callbacks share. */
typedef struct pipeline {
    atomic_long completed;
    atomic_long errors;
    atomic_bool stop;
} pipeline;

typedef struct request_slot {
    pipeline *p;
    rn_infer_request *request;
    rn_tensor *remote[3]; /* inputs and output in device memory, or NULL */
} request_slot;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Counts the run and restarts the request until told to stop. */
static void on_complete(rn_infer_request *r, rn_status status, void *user_data)
{
    request_slot *s = user_data;
    if (status != RN_OK) {
        if (atomic_fetch_add(&s->p->errors, 1) == 0)
            fprintf(stderr, "bench_pipeline: a run failed: %s: %s\n", rn_status_name(status),
                    rn_last_error());
    } else {
        atomic_fetch_add(&s->p->completed, 1);
    }
    if (!atomic_load(&s->p->stop) && rn_infer_request_start_async(r) != RN_OK &&
        atomic_fetch_add(&s->p->errors, 1) == 0)
        fprintf(stderr, "bench_pipeline: restart failed: %s\n", rn_last_error());
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Binds test_add's two inputs and its output to new remote tensors of
 * `context`. */
static rn_status bind_remote(request_slot *s, rn_remote_context *context)
{
    static const int64_t dims[] = {3, 4, 5};
    rn_status st = RN_OK;
    for (int k = 0; k < 3 && st == RN_OK; k++) {
        st = rn_remote_context_create_tensor(context, RN_F32, dims, 3, NULL, 0, &s->remote[k]);
        if (st == RN_OK)
            st = k < 2 ? rn_infer_request_set_input_tensor(s->request, (size_t)k, s->remote[k])
                       : rn_infer_request_set_output_tensor(s->request, 0, s->remote[k]);
    }
    return st;
}

/* Runs `n` requests in flight for o->runs windows of o->seconds each (after
 * a warm-up) and writes each window's runs per second into fps; with a
 * context, every input and output is a remote tensor of it. Returns 0, or
 * -1 after printing why. */
static int measure(rn_compiled_model *compiled, rn_remote_context *context, int n, const options *o,
                   double *fps)
{
    pipeline p = {0};
    request_slot slots[MAX_IN_FLIGHT] = {0};
    int created = 0, rc = 0;
    for (; created < n; created++) {
        slots[created].p = &p;
        if (rn_compiled_model_create_infer_request(compiled, &slots[created].request) != RN_OK ||
            rn_infer_request_set_callback(slots[created].request, on_complete, &slots[created]) !=
                RN_OK ||
            (context != NULL && bind_remote(&slots[created], context) != RN_OK)) {
            fprintf(stderr, "bench_pipeline: request %d: %s\n", created, rn_last_error());
            rn_infer_request_free(slots[created].request);
            for (int k = 0; k < 3; k++)
                rn_tensor_free(slots[created].remote[k]);
            rc = -1;
            break;
        }
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        if (rn_infer_request_start_async(slots[i].request) != RN_OK) {
            fprintf(stderr, "bench_pipeline: start_async: %s\n", rn_last_error());
            rc = -1;
        }
    }
    if (rc == 0) {
        sleep_s(o->seconds / 4 > 0.2 ? o->seconds / 4 : 0.2); /* warm-up: the pipeline fills */
        for (int k = 0; k < o->runs; k++) {
            long c0 = atomic_load(&p.completed);
            double t0 = now_s();
            sleep_s(o->seconds);
            long c1 = atomic_load(&p.completed);
            double t1 = now_s();
            fps[k] = (double)(c1 - c0) / (t1 - t0);
        }
    }
    atomic_store(&p.stop, true);
    for (int i = 0; i < created; i++) {
        rn_infer_request_wait(slots[i].request);
        rn_infer_request_free(slots[i].request);
        for (int k = 0; k < 3; k++)
            rn_tensor_free(slots[i].remote[k]);
    }
    if (atomic_load(&p.errors) != 0) {
        fprintf(stderr, "bench_pipeline: %ld runs failed\n", atomic_load(&p.errors));
        rc = -1;
    }
    return rc;
}

/* The median time nanosleep(us) really takes here (SLOWDEV's engines are
 * such sleeps): timer slack and the wake-up make it longer than asked, which
 * caps any runtime below the ideal. */
static double sleep_median_us(long us, int samples)
{
    double t[201];
    if (samples > 201)
        samples = 201;
    for (int i = 0; i < samples; i++) {
        double t0 = now_s();
        sleep_s((double)us * 1e-6);
        t[i] = (now_s() - t0) * 1e6;
    }
    qsort(t, (size_t)samples, sizeof t[0], cmp_double);
    return t[samples / 2];
}

static void print_header(const options *o, rn_compiled_model *compiled)
{
    char model[256];
    bench_cpu_model(model, sizeof model);
    struct utsname u;
    uname(&u);
    char streams[32] = "?", optimal[32] = "?";
    rn_compiled_model_get_property(compiled, "NUM_STREAMS", streams, sizeof streams);
    rn_compiled_model_get_property(compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", optimal,
                                   sizeof optimal);
    printf("# SLOWDEV pipeline: upload %ld us, execute %ld us, wait %ld us, download %ld us; "
           "NUM_STREAMS=%s, OPTIMAL_NUMBER_OF_INFER_REQUESTS=%s\n",
           o->costs_us[0], o->costs_us[1], o->costs_us[2], o->costs_us[3], streams, optimal);
    printf("# runs/s: median [min-max] of %d windows of %.1f s; ideal = 1/max(stage); "
           "bound = min(n/sum(stages), 1/max(stage))\n",
           o->runs, o->seconds);
    printf("# machine: %s, %ld online CPUs, %s %s\n", model, sysconf(_SC_NPROCESSORS_ONLN),
           u.sysname, u.release);
    bench_print_isa();
    bench_print_load("at start");
}

static int parse_list(const char *s, long *out, int max)
{
    int n = 0;
    while (*s != '\0') {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || n == max)
            return -1;
        out[n++] = v;
        if (*end == ',')
            end++;
        else if (*end != '\0')
            return -1;
        s = end;
    }
    return n;
}

static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long list[MAX_POINTS];
        int n;
        if (v == NULL && strcmp(a, "--remote") != 0)
            return -1;
        if (strcmp(a, "--device") == 0) {
            o->device = v;
            i++;
            continue;
        }
        if (strcmp(a, "--trace") == 0) {
            o->trace = v;
            i++;
            continue;
        }
        if (strcmp(a, "--trace-inflight") == 0) {
            o->trace_inflight = atoi(v);
            if (o->trace_inflight < 1 || o->trace_inflight > MAX_IN_FLIGHT)
                return -1;
            i++;
            continue;
        }
        if (strcmp(a, "--chain") == 0) {
            if (parse_list(v, o->chain, 2) != 2 || o->chain[0] < 1 || o->chain[1] < 1 ||
                o->chain[1] > (1L << 26))
                return -1;
            i++;
            continue;
        }
        if (strcmp(a, "--costs") == 0 || strcmp(a, "--hetero") == 0) {
            if (parse_list(v, list, 4) != 4)
                return -1;
            o->hetero = o->hetero || strcmp(a, "--hetero") == 0;
            for (int k = 0; k < 4; k++)
                (strcmp(a, "--hetero") == 0 ? o->costs2_us : o->costs_us)[k] = list[k];
        } else if (strcmp(a, "--inflight") == 0) {
            if ((n = parse_list(v, list, MAX_POINTS)) <= 0)
                return -1;
            for (int k = 0; k < n; k++) {
                if (list[k] < 1 || list[k] > MAX_IN_FLIGHT)
                    return -1;
                o->inflight[k] = (int)list[k];
            }
            o->n_points = n;
        } else if (strcmp(a, "--seconds") == 0) {
            o->seconds = atof(v);
            if (!(o->seconds > 0))
                return -1;
        } else if (strcmp(a, "--runs") == 0) {
            o->runs = atoi(v);
            if (o->runs < 1 || o->runs > MAX_RUNS)
                return -1;
        } else if (strcmp(a, "--streams") == 0) {
            o->streams = atoi(v);
            if (o->streams < 0)
                return -1;
        } else if (strcmp(a, "--plugin") == 0) {
            o->plugin = v;
        } else if (strcmp(a, "--remote") == 0) {
            o->remote = true;
            continue; /* takes no value */
        } else {
            return -1;
        }
        i++;
    }
    return 0;
}

/* The --remote table: the same points with inputs and outputs in device
 * memory, against the execute + wait pipeline's ideal and the host runs. */
static int measure_remote(rn_compiled_model *compiled, const options *o, const double *host_median)
{
    rn_remote_context *context;
    if (rn_compiled_model_get_context(compiled, &context) != RN_OK) {
        fprintf(stderr, "bench_pipeline: %s\n", rn_last_error());
        return 1;
    }
    long max_us = o->costs_us[1] > o->costs_us[2] ? o->costs_us[1] : o->costs_us[2];
    double ideal = max_us > 0 ? 1e6 / (double)max_us : 0;
    printf("# remote tensors: inputs and output in device memory, no upload or download; "
           "ideal = 1/max(execute, wait)\n");
    printf("%-9s %10s %17s %10s %10s %s\n", "in_flight", "runs/s", "[min-max]", "ideal", "vs_host",
           "efficiency");
    int rc = 0;
    for (int i = 0; i < o->n_points; i++) {
        double fps[MAX_RUNS];
        if (measure(compiled, context, o->inflight[i], o, fps) != 0) {
            rc = 1;
            break;
        }
        qsort(fps, (size_t)o->runs, sizeof fps[0], cmp_double);
        double median = fps[o->runs / 2];
        char range[32];
        snprintf(range, sizeof range, "[%.0f-%.0f]", fps[0], fps[o->runs - 1]);
        printf("%-9d %10.1f %17s %10.1f %10.2f efficiency=%.3f\n", o->inflight[i], median, range,
               ideal, host_median[i] > 0 ? median / host_median[i] : 0,
               ideal > 0 ? median / ideal : 0);
        fflush(stdout);
    }
    rn_remote_context_free(context);
    return rc;
}

/* Sets the four stage costs of `device` (a device property). */
static rn_status set_costs(rn_core *core, const char *device, const long *costs_us)
{
    char values[4][32];
    rn_property props[4];
    for (int k = 0; k < 4; k++) {
        snprintf(values[k], sizeof values[k], "%ld", costs_us[k]);
        props[k] = (rn_property){cost_keys[k], values[k]};
    }
    return rn_core_set_property(core, device, props, 4);
}

/* test_add on SLOWDEV with its costs. */
static rn_status compile_slowdev(rn_core *core, const options *o, rn_model *model,
                                 rn_compiled_model **out)
{
    char streams[32];
    snprintf(streams, sizeof streams, "%d", o->streams);
    rn_property p[] = {{"NUM_STREAMS", streams}};
    rn_status st = set_costs(core, "SLOWDEV", o->costs_us);
    return st != RN_OK
               ? st
               : rn_core_compile_model(core, model, "SLOWDEV", p, o->streams > 0 ? 1 : 0, out);
}

/* Two Adds as HETERO:SLOWDEV,SLOWDEV2, one on each. */
static rn_status compile_hetero(rn_core *core, const char *plugin, const options *o,
                                rn_model **model, rn_compiled_model **out)
{
    rn_status st = rn_core_load_plugin(core, "SLOWDEV2", plugin);
    if (st == RN_OK)
        st = set_costs(core, "SLOWDEV", o->costs_us);
    if (st == RN_OK)
        st = set_costs(core, "SLOWDEV2", o->costs2_us);
    size_t size;
    uint8_t *bytes = st == RN_OK ? chain_model_encode(2, 60, &size) : NULL;
    if (st == RN_OK && bytes == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "cannot build the model");
    if (st == RN_OK)
        st = rn_core_read_model_from_memory(core, bytes, size, NULL, model);
    free(bytes);
    char streams[32];
    snprintf(streams, sizeof streams, "%d", o->streams);
    rn_property p[] = {{"MODEL_DISTRIBUTION_POLICY", "PIPELINE_PARALLEL"},
                       {"NUM_STREAMS", streams}};
    if (st == RN_OK)
        st = rn_core_compile_model(core, *model, "HETERO:SLOWDEV,SLOWDEV2", p,
                                   o->streams > 0 ? 2 : 1, out);
    char parts[64];
    if (st == RN_OK &&
        rn_compiled_model_get_property(*out, "EXECUTION_DEVICES", parts, sizeof parts) == RN_OK)
        printf("# HETERO:SLOWDEV,SLOWDEV2: the parts run on %s; SLOWDEV2's stages %ld,%ld,%ld,%ld "
               "us\n",
               parts, o->costs2_us[0], o->costs2_us[1], o->costs2_us[2], o->costs2_us[3]);
    return st;
}

/* ---- a real device (--device) ---- */

static const char *const stage_names[3] = {"upload", "execute", "download"};

/* The stage a profiling entry's node belongs to: the plan's layout
 * conversions are named "reorder:<value>:<from>-><to>"; into the device
 * layout from plain is an upload, back to plain a download. */
static int entry_stage(const rn_profiling_info *e)
{
    if (e->node_name != NULL && strncmp(e->node_name, "reorder:", 8) == 0) {
        if (strstr(e->node_name, ":plain->") != NULL)
            return 0;
        if (strstr(e->node_name, "->plain") != NULL)
            return 2;
    }
    return 1;
}

#define PROFILE_RUNS 15

/* Each stage's time for one request run alone: the least over
 * PROFILE_RUNS profiled runs (after two warm-up runs) of its nodes' summed
 * real_time_us. */
static int profile_stages(rn_compiled_model *compiled, double stage_us[3])
{
    rn_property on[] = {{"ENABLE_PROFILING", "YES"}}, off[] = {{"ENABLE_PROFILING", "NO"}};
    rn_infer_request *r = NULL;
    double t[3][PROFILE_RUNS];
    rn_status st = rn_compiled_model_set_property(compiled, on, 1);
    if (st == RN_OK)
        st = rn_compiled_model_create_infer_request(compiled, &r);
    for (int k = 0; st == RN_OK && k < PROFILE_RUNS + 2; k++) {
        const rn_profiling_info *info;
        size_t count;
        if ((st = rn_infer_request_infer(r)) != RN_OK ||
            (st = rn_infer_request_profiling_info(r, &info, &count)) != RN_OK || k < 2)
            continue;
        double sum[3] = {0};
        for (size_t i = 0; i < count; i++)
            if (info[i].status == RN_NODE_EXECUTED && info[i].node_type != NULL &&
                strcmp(info[i].node_type, "Stage") != 0)
                sum[entry_stage(&info[i])] += (double)info[i].real_time_us;
        for (int j = 0; j < 3; j++)
            t[j][k - 2] = sum[j];
    }
    rn_infer_request_free(r);
    if (st == RN_OK)
        st = rn_compiled_model_set_property(compiled, off, 1);
    if (st != RN_OK) {
        fprintf(stderr, "bench_pipeline: profiling one request: %s\n", rn_last_error());
        return -1;
    }
    for (int j = 0; j < 3; j++) {
        qsort(t[j], PROFILE_RUNS, sizeof t[j][0], cmp_double);
        stage_us[j] = t[j][0];
    }
    return 0;
}

/* The chain model on `device`, with NUM_STREAMS when given and `extra`. */
static rn_status compile_chain(rn_core *core, const options *o, const rn_property *extra,
                               size_t n_extra, rn_model **model, rn_compiled_model **out)
{
    size_t size;
    uint8_t *bytes = chain_model_encode((int)o->chain[0], (int)o->chain[1], &size);
    if (bytes == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "cannot build the model");
    rn_status st = rn_core_read_model_from_memory(core, bytes, size, NULL, model);
    free(bytes);
    char streams[32];
    snprintf(streams, sizeof streams, "%d", o->streams);
    rn_property p[4] = {{"NUM_STREAMS", streams}};
    size_t n = o->streams > 0 ? 1 : 0;
    for (size_t i = 0; i < n_extra && n < 4; i++)
        p[n++] = extra[i];
    if (st == RN_OK && (st = rn_core_compile_model(core, *model, o->device, p, n, out)) != RN_OK) {
        rn_model_free(*model);
        *model = NULL;
    }
    return st;
}

/* One window of o->trace_inflight requests on a model compiled with
 * ENABLE_TRACE=YES, then its trace written to o->trace. */
static int write_device_trace(rn_core *core, const options *o)
{
    rn_property t[] = {{"ENABLE_TRACE", "YES"}};
    rn_model *model;
    rn_compiled_model *compiled;
    if (compile_chain(core, o, t, 1, &model, &compiled) != RN_OK) {
        fprintf(stderr, "bench_pipeline: --trace: %s\n", rn_last_error());
        return 1;
    }
    options one = *o;
    one.runs = 1;
    double fps[1];
    int rc = measure(compiled, NULL, o->trace_inflight, &one, fps);
    if (rc == 0 && rn_compiled_model_write_trace(compiled, o->trace) != RN_OK) {
        fprintf(stderr, "bench_pipeline: --trace: %s\n", rn_last_error());
        rc = 1;
    }
    if (rc == 0)
        printf("# trace of %d requests in flight (%.1f runs/s) written to %s\n", o->trace_inflight,
               fps[0], o->trace);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    return rc;
}

/* The bench on a real device: stage costs measured, then the points. */
static int run_device(rn_core *core, const options *o)
{
    rn_model *model;
    rn_compiled_model *compiled;
    if (compile_chain(core, o, NULL, 0, &model, &compiled) != RN_OK) {
        fprintf(stderr, "bench_pipeline: %s: %s\n", o->device, rn_last_error());
        return 1;
    }
    double stage_us[3];
    int rc = profile_stages(compiled, stage_us);
    if (rc != 0) {
        rn_compiled_model_free(compiled);
        rn_model_free(model);
        return 1;
    }
    char streams[32] = "?", optimal[32] = "?", full[256] = "?";
    rn_compiled_model_get_property(compiled, "NUM_STREAMS", streams, sizeof streams);
    rn_compiled_model_get_property(compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", optimal,
                                   sizeof optimal);
    rn_core_get_property(core, o->device, "FULL_DEVICE_NAME", full, sizeof full);
    double max_us = 0, sum_us = 0;
    for (int j = 0; j < 3; j++) {
        sum_us += stage_us[j];
        if (stage_us[j] > max_us)
            max_us = stage_us[j];
    }
    char model_name[256];
    bench_cpu_model(model_name, sizeof model_name);
    printf("# %s (%s): a chain of %ld Adds on %ld floats; NUM_STREAMS=%s, "
           "OPTIMAL_NUMBER_OF_INFER_REQUESTS=%s\n",
           o->device, full, o->chain[0], o->chain[1], streams, optimal);
    printf(
        "# one request alone, profiled (fastest of %d runs): %s %.0f us, %s %.0f us, %s %.0f us; "
        "serial 1/sum = %.1f runs/s\n",
        PROFILE_RUNS, stage_names[0], stage_us[0], stage_names[1], stage_us[1], stage_names[2],
        stage_us[2], sum_us > 0 ? 1e6 / sum_us : 0);
    printf("# runs/s: median [min-max] of %d windows of %.1f s; ideal = 1/max(stage) as if each "
           "stage had its own engine; bound = min(n/sum(stages), ideal)\n",
           o->runs, o->seconds);
    printf("# machine: %s, %ld online CPUs\n", model_name, sysconf(_SC_NPROCESSORS_ONLN));
    bench_print_load("at start");
    double ideal = max_us > 0 ? 1e6 / max_us : 0;
    printf("%-9s %10s %17s %10s %10s %s\n", "in_flight", "runs/s", "[min-max]", "ideal", "bound",
           "efficiency");
    for (int i = 0; rc == 0 && i < o->n_points; i++) {
        int n = o->inflight[i];
        double fps[MAX_RUNS];
        if ((rc = measure(compiled, NULL, n, o, fps)) != 0)
            break;
        qsort(fps, (size_t)o->runs, sizeof fps[0], cmp_double);
        double median = fps[o->runs / 2];
        double bound = sum_us > 0 ? 1e6 * n / sum_us : 0;
        if (bound > ideal)
            bound = ideal;
        char range[32];
        snprintf(range, sizeof range, "[%.0f-%.0f]", fps[0], fps[o->runs - 1]);
        printf("%-9d %10.1f %17s %10.1f %10.1f efficiency=%.3f\n", n, median, range, ideal, bound,
               ideal > 0 ? median / ideal : 0);
        fflush(stdout);
    }
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    if (rc == 0 && o->trace != NULL)
        rc = write_device_trace(core, o);
    bench_print_load("at end");
    return rc != 0;
}

/* The SLOWDEV shared object: --plugin, else where `bazel run` puts it (the
 * runfiles), else where `bazel build` does, seen from the repository root. */
static const char *find_plugin(const options *o)
{
    if (o->plugin != NULL)
        return o->plugin;
    static const char *const paths[] = {"tests/slowdev/libslowdev.so",
                                        "bazel-bin/tests/slowdev/libslowdev.so"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], R_OK) == 0)
            return paths[i];
    return paths[0];
}

int main(int argc, char **argv)
{
    options o = {.costs_us = {1000, 1000, 1000, 1000},
                 .inflight = {1, 2, 4, 8},
                 .n_points = 4,
                 .seconds = 1.0,
                 .runs = 7,
                 .chain = {4, 1L << 20},
                 .trace_inflight = 4};
    if (parse_args(argc, argv, &o) != 0 ||
        (o.device != NULL && strcmp(o.device, "SLOWDEV") != 0 && o.plugin == NULL)) {
        fprintf(stderr,
                "usage: %s [--costs U,E,W,D (us)] [--inflight 1,2,4,8] [--seconds S] "
                "[--runs N] [--streams N] [--plugin libslowdev.so] [--remote] "
                "[--hetero U,E,W,D (SLOWDEV2's us)] [--device NAME [--chain N,W] "
                "[--trace PATH] [--trace-inflight N]] (--device needs --plugin)\n",
                argv[0]);
        return 2;
    }
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
    if (rn_core_create(&core) != RN_OK) {
        fprintf(stderr, "bench_pipeline: %s\n", rn_last_error());
        return 1;
    }
    const char *plugin = find_plugin(&o);
    if (rn_core_load_plugin(core, NULL, plugin) != RN_OK) {
        fprintf(stderr, "bench_pipeline: loading the plugin %s: %s\n", plugin, rn_last_error());
        return 1;
    }
    if (o.device != NULL && strcmp(o.device, "SLOWDEV") != 0) {
        int rc = run_device(core, &o);
        rn_core_free(core);
        return rc;
    }
    if (o.hetero ? compile_hetero(core, plugin, &o, &model, &compiled) != RN_OK
                 : (rn_core_read_model(core, ADD_MODEL, &model) != RN_OK ||
                    compile_slowdev(core, &o, model, &compiled) != RN_OK)) {
        fprintf(stderr, "bench_pipeline: %s\n", rn_last_error());
        return 1;
    }
    print_header(&o, compiled);

    long max_us = 0, sum_us = 0;
    for (int k = 0; k < 8; k++) {
        long us = k < 4 ? o.costs_us[k] : o.hetero ? o.costs2_us[k - 4] : 0;
        sum_us += us;
        if (us > max_us)
            max_us = us;
    }
    double ideal = max_us > 0 ? 1e6 / (double)max_us : 0;
    if (max_us > 0) {
        double real_us = sleep_median_us(max_us, 101);
        printf("# the slowest engine: nanosleep(%ld us) lasts %.0f us here (median of 101), "
               "which caps efficiency at %.3f whatever the runtime does\n",
               max_us, real_us, (double)max_us / real_us);
    }
    printf("%-9s %10s %17s %10s %10s %s\n", "in_flight", "runs/s", "[min-max]", "ideal", "bound",
           "efficiency");
    int rc = 0;
    double host_median[MAX_POINTS] = {0};
    for (int i = 0; i < o.n_points; i++) {
        int n = o.inflight[i];
        double fps[MAX_RUNS];
        if (measure(compiled, NULL, n, &o, fps) != 0) {
            rc = 1;
            break;
        }
        qsort(fps, (size_t)o.runs, sizeof fps[0], cmp_double);
        double median = fps[o.runs / 2];
        host_median[i] = median;
        double bound = sum_us > 0 ? 1e6 * n / (double)sum_us : 0;
        if (bound > ideal)
            bound = ideal;
        char range[32];
        snprintf(range, sizeof range, "[%.0f-%.0f]", fps[0], fps[o.runs - 1]);
        printf("%-9d %10.1f %17s %10.1f %10.1f efficiency=%.3f\n", n, median, range, ideal, bound,
               ideal > 0 ? median / ideal : 0);
        fflush(stdout);
    }
    if (rc == 0 && o.remote)
        rc = measure_remote(compiled, &o, host_median);
    bench_print_load("at end");
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
    return rc;
}
