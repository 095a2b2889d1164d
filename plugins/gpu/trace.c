/* The device's side of the trace (ENABLE_TRACE): the commands each request
 * ran on the OpenCL device, from their event timestamps.
 *
 * The plan's trace (sched) shows host tasks: an upload or download is a
 * blocking copy whose host time includes waiting for the commands before
 * it, and a kernel node only enqueues. What the device did, and whether the
 * upload, kernels and download of different requests overlapped there, is
 * in the events of the run's commands (profile.c keeps them in the arena
 * until the wait stage). When the compiled model traces, the wait stage
 * copies each command's start and end into the compiled model's gpu_trace,
 * on the host's CLOCK_MONOTONIC axis (each arena measures its queue's clock
 * offset once, with markers), and write_trace appends them to the plan's
 * trace as one more process, "GPU device", one row per request arena:
 * events {"cat":"device", "args":{"request":k, "stage":"upload"|"execute"|
 * "download"}} (bench/pipeline/trace_overlap.py measures the overlap). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/gpu/gpu.h"
#include "sched/sched.h"

/* At most this many device events are kept (about 40 MiB); later ones are
 * counted as dropped. */
#define GPU_TRACE_MAX_EVENTS (1u << 19)

typedef struct gpu_trace_event {
    char node[48]; /* the node's name, truncated (a specialised plan that
                    * named it may be gone when the trace is written) */
    uint32_t request;
    uint8_t stage;
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
} gpu_trace_event;

struct gpu_trace {
    pthread_mutex_t lock;
    gpu_trace_event *ev;
    size_t n, cap, dropped;
    atomic_uint next_request;
};

static const char *const stage_names[] = {"upload", "execute", "download"};

static uint64_t host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

rn_status gpu_trace_new(gpu_trace **out)
{
    gpu_trace *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return RN_OK;
}

void gpu_trace_free(gpu_trace *t)
{
    if (t == NULL)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->ev);
    free(t);
}

/* One reading of host − device clock: a marker's QUEUED timestamp is taken
 * when it is enqueued, between the two host readings; the narrower they
 * are, the better. False when the queue has no timestamps. */
static bool clock_offset(cl_command_queue queue, int64_t *offset, uint64_t *window)
{
    cl_event ev = NULL;
    uint64_t h0 = host_now_ns();
    cl_int err = clEnqueueMarkerWithWaitList(queue, 0, NULL, &ev);
    uint64_t h1 = host_now_ns();
    if (err != CL_SUCCESS)
        return false;
    uint64_t queued = 0;
    if (clWaitForEvents(1, &ev) == CL_SUCCESS)
        queued = gpu_event_stamp(ev, CL_PROFILING_COMMAND_QUEUED);
    clReleaseEvent(ev);
    *offset = (int64_t)(h0 / 2 + h1 / 2) - (int64_t)queued;
    *window = h1 - h0;
    return queued != 0;
}

void gpu_trace_attach(gpu_trace *t, gpu_arena *a)
{
    a->trace_id = atomic_fetch_add(&t->next_request, 1);
    a->clock_offset_ns = 0;
    a->traced = false;
    /* The narrowest of a few readings (a loaded machine can preempt the
     * enqueue). */
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 5; k++) {
        int64_t offset;
        uint64_t window;
        if (!clock_offset(a->queue, &offset, &window))
            return;
        if (window < best) {
            best = window;
            a->clock_offset_ns = offset;
            a->traced = true;
        }
    }
}

/* upload, execute or download, from the node's name: the plan names its
 * layout conversions "reorder:<value>:<from>-><to>". */
static uint8_t stage_of(const char *node)
{
    if (strncmp(node, "reorder:", 8) != 0)
        return 1;
    if (strstr(node, ":plain->") != NULL)
        return 0;
    return strstr(node, "->plain") != NULL ? 2 : 1;
}

void gpu_trace_record(gpu_trace *t, gpu_arena *a)
{
    if (t == NULL || !a->traced)
        return;
    gpu_event_log *log = &a->events;
    pthread_mutex_lock(&log->lock);
    pthread_mutex_lock(&t->lock);
    for (int k = 0; k < log->n; k++) {
        const gpu_event *e = &log->items[k];
        uint64_t start, end;
        gpu_event_span(e, &start, &end);
        if (start == 0 || end < start)
            continue;
        if (t->n == t->cap && t->cap < GPU_TRACE_MAX_EVENTS) {
            size_t cap = t->cap > 0 ? 2 * t->cap : 4096;
            gpu_trace_event *ev = realloc(t->ev, cap * sizeof *ev);
            if (ev != NULL) {
                t->ev = ev;
                t->cap = cap;
            }
        }
        if (t->n == t->cap) {
            t->dropped++;
            continue;
        }
        gpu_trace_event *ev = &t->ev[t->n++];
        snprintf(ev->node, sizeof ev->node, "%s", e->node);
        ev->request = a->trace_id;
        ev->stage = stage_of(e->node);
        ev->start_ns = (uint64_t)((int64_t)start + a->clock_offset_ns);
        ev->end_ns = (uint64_t)((int64_t)end + a->clock_offset_ns);
    }
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_unlock(&log->lock);
}

rn_status gpu_trace_append(gpu_trace *t, const char *path, uint64_t origin_ns, int pid)
{
    FILE *f = fopen(path, "r+");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR,
                            "GPU: trace '%s': cannot reopen it to add the device's "
                            "events",
                            path);
    /* The plan's trace ends with "\n]}\n": the device's events go before. */
    char tail[4];
    if (fseek(f, -4, SEEK_END) != 0 || fread(tail, 1, 4, f) != 4 ||
        memcmp(tail, "\n]}\n", 4) != 0 || fseek(f, -4, SEEK_END) != 0) {
        fclose(f);
        return rn_set_error(RN_IO_ERROR, "GPU: trace '%s': not the plan's trace-event JSON", path);
    }
    pthread_mutex_lock(&t->lock);
    fprintf(f,
            ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":"
            "\"GPU device (OpenCL event timestamps)\"}}",
            pid);
    uint32_t n_requests = atomic_load(&t->next_request);
    for (uint32_t k = 0; k < n_requests; k++)
        fprintf(f,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{"
                "\"name\":\"request arena %u\"}}",
                pid, k, k);
    for (size_t i = 0; i < t->n; i++) {
        const gpu_trace_event *e = &t->ev[i];
        double ts = e->start_ns >= origin_ns ? (double)(e->start_ns - origin_ns) / 1000.0 : 0.0;
        fputs(",\n{\"name\":", f);
        sched_trace_put_string(f, e->node);
        fprintf(f,
                ",\"cat\":\"device\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"request\":%u,\"stage\":\"%s\"}}",
                pid, e->request, ts, (double)(e->end_ns - e->start_ns) / 1000.0, e->request,
                stage_names[e->stage]);
    }
    size_t dropped = t->dropped;
    pthread_mutex_unlock(&t->lock);
    if (dropped > 0)
        fprintf(f,
                ",\n{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{"
                "\"labels\":\"%zu device events dropped\"}}",
                pid, dropped);
    fputs("\n]}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return rn_set_error(RN_IO_ERROR, "GPU: trace '%s': writing the device's events failed",
                            path);
    return RN_OK;
}
