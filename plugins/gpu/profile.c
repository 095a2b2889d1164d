/* Profiling from OpenCL event timestamps: every command a node enqueues
 * leaves its event in the run's arena (queues are created with
 * CL_QUEUE_PROFILING_ENABLE); when the run's wait stage completes, each
 * executed node's time becomes the device time of its commands:
 * CL_PROFILING_COMMAND_END - START of its kernels, and for a CLBlast call
 * (several kernels of its own, one event) the time from a marker enqueued
 * before it to the end of its event; for an upload or download (a
 * non-blocking copy, whose host time is its enqueueing) its copy
 * command's. The events are released there, or when the arena is
 * freed. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan.h"
#include "plugins/gpu/gpu.h"

static void record_in(gpu_arena *a, const char *node, cl_event first, cl_event last)
{
    gpu_event_log *log = &a->events;
    pthread_mutex_lock(&log->lock);
    if (log->n == log->cap) {
        int cap = log->cap > 0 ? 2 * log->cap : 64;
        gpu_event *items = realloc(log->items, (size_t)cap * sizeof *items);
        if (items != NULL) {
            log->items = items;
            log->cap = cap;
        }
    }
    bool kept = log->n < log->cap;
    if (kept)
        log->items[log->n++] = (gpu_event){node, first, last};
    pthread_mutex_unlock(&log->lock);
    if (!kept) { /* out of memory: the node keeps its host time */
        if (first != NULL)
            clReleaseEvent(first);
        clReleaseEvent(last);
    }
}

static void record(const gpu_node *g, const rn_kernel_args *args, cl_event first, cl_event last)
{
    record_in(gpu_run_arena(args), g->name, first, last);
}

void gpu_record_copy(gpu_arena *a, cl_event ev)
{
    const char *node = plugin_running_node();
    if (ev == NULL)
        return;
    if (node == NULL || a == NULL) {
        clReleaseEvent(ev);
        return;
    }
    record_in(a, node, NULL, ev);
}

void gpu_record_event(const gpu_node *g, const rn_kernel_args *args, cl_event ev)
{
    if (ev != NULL)
        record(g, args, NULL, ev);
}

cl_event gpu_span_begin(const rn_kernel_args *args)
{
    cl_event ev = NULL;
    if (clEnqueueMarkerWithWaitList(gpu_queue(args), 0, NULL, &ev) != CL_SUCCESS)
        return NULL;
    return ev;
}

void gpu_span_end(const gpu_node *g, const rn_kernel_args *args, cl_event begin, cl_event end)
{
    if (begin != NULL && end != NULL) {
        record(g, args, begin, end);
        return;
    }
    if (begin != NULL)
        clReleaseEvent(begin);
    if (end != NULL)
        clReleaseEvent(end);
}

uint64_t gpu_event_stamp(cl_event ev, cl_profiling_info what)
{
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(ev, what, sizeof t, &t, NULL) != CL_SUCCESS)
        return 0;
    return t;
}

void gpu_event_span(const gpu_event *e, uint64_t *start, uint64_t *end)
{
    *start = e->first != NULL ? gpu_event_stamp(e->first, CL_PROFILING_COMMAND_END)
                              : gpu_event_stamp(e->last, CL_PROFILING_COMMAND_START);
    *end = gpu_event_stamp(e->last, CL_PROFILING_COMMAND_END);
}

/* The device time of one entry in ns (0 when the timestamps are missing). */
static uint64_t event_ns(const gpu_event *e)
{
    uint64_t start, end;
    gpu_event_span(e, &start, &end);
    return end > start && start != 0 ? end - start : 0;
}

void gpu_events_apply(gpu_arena *a, rn_profiling_info *entries, size_t count)
{
    gpu_event_log *log = &a->events;
    pthread_mutex_lock(&log->lock);
    for (size_t i = 0; entries != NULL && i < count; i++) {
        rn_profiling_info *p = &entries[i];
        if (p->status != RN_NODE_EXECUTED || p->node_name == NULL)
            continue;
        uint64_t ns = 0;
        bool any = false;
        for (int k = 0; k < log->n; k++)
            if (strcmp(log->items[k].node, p->node_name) == 0) {
                ns += event_ns(&log->items[k]);
                any = true;
            }
        /* Microseconds, rounded up: a kernel that ran reads as > 0. */
        if (any)
            p->real_time_us = (ns + 999) / 1000;
    }
    pthread_mutex_unlock(&log->lock);
    gpu_events_release(a);
}

void gpu_events_release(gpu_arena *a)
{
    gpu_event_log *log = &a->events;
    pthread_mutex_lock(&log->lock);
    for (int k = 0; k < log->n; k++) {
        if (log->items[k].first != NULL)
            clReleaseEvent(log->items[k].first);
        clReleaseEvent(log->items[k].last);
    }
    log->n = 0;
    pthread_mutex_unlock(&log->lock);
}
