/* bench's measured run: sync loop, async callbacks that restart their
 * request, the limits and the progress display. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/bench_run.h"

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct bench_run bench_run;

/* One infer request and what it recorded. Only the thread running the
 * request's completion (or the sync loop) touches its samples and counters. */
typedef struct bench_slot {
    bench_run *run;
    rn_infer_request *request;
    double started_ms;
    bench_samples samples;
    bench_counters counters;
} bench_slot;

struct bench_run {
    const bench_run_config *config;
    bench_slot *slots;
    double t0_ms, deadline_ms; /* deadline 0: no time limit */
    atomic_llong claimed;      /* inferences started (for -niter) */
    atomic_ullong completed;
    atomic_bool stop;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    size_t finished; /* requests that will not start again */
    rn_status error;
    char error_message[1024];
    /* progress */
    int last_step;
};

/* Records the run's first error and stops every request after its current
 * inference. */
static void record_error(bench_run *run, rn_status status, const char *what)
{
    pthread_mutex_lock(&run->lock);
    if (run->error == RN_OK) {
        run->error = status;
        snprintf(run->error_message, sizeof run->error_message, "%s: %s", what, rn_last_error());
    }
    pthread_mutex_unlock(&run->lock);
    atomic_store(&run->stop, true);
}

/* Whether another inference is due: not stopped, and some limit not yet
 * reached (claims one of the -niter inferences). */
static bool claim_next(bench_run *run, double now)
{
    if (atomic_load(&run->stop))
        return false;
    const bench_run_config *c = run->config;
    if (c->niter > 0 && atomic_fetch_add(&run->claimed, 1) < c->niter)
        return true;
    return run->deadline_ms > 0 && now < run->deadline_ms;
}

/* Records a finished inference: its latency and its counters. */
static void record(bench_slot *s, double end_ms)
{
    bench_run *run = s->run;
    if (bench_samples_add(&s->samples, s->started_ms - run->t0_ms, end_ms - s->started_ms) != 0) {
        rn_set_error(RN_OUT_OF_MEMORY, "out of memory for latency samples");
        record_error(run, RN_OUT_OF_MEMORY, "bench");
    }
    if (run->config->counters) {
        const rn_profiling_info *info;
        size_t n;
        rn_status st = rn_infer_request_profiling_info(s->request, &info, &n);
        if (st != RN_OK)
            record_error(run, st, "profiling info");
        else if (bench_counters_add(&s->counters, info, n) != 0) {
            rn_set_error(RN_INTERNAL, "per-layer counters changed shape or ran out of memory");
            record_error(run, RN_INTERNAL, "bench");
        }
    }
    atomic_fetch_add(&run->completed, 1);
}

static void finish_slot(bench_run *run)
{
    pthread_mutex_lock(&run->lock);
    run->finished++;
    pthread_cond_broadcast(&run->changed);
    pthread_mutex_unlock(&run->lock);
}

/* The async completion: record, then start the request again while the
 * limits ask for more. */
static void on_complete(rn_infer_request *request, rn_status status, void *user_data)
{
    bench_slot *s = user_data;
    bench_run *run = s->run;
    double end = bench_now_ms();
    if (status != RN_OK) {
        record_error(run, status, "infer");
        finish_slot(run);
        return;
    }
    record(s, end);
    if (claim_next(run, end)) {
        s->started_ms = bench_now_ms();
        rn_status st = rn_infer_request_start_async(request);
        if (st == RN_OK)
            return;
        record_error(run, st, "start_async");
    }
    finish_slot(run);
}

/* The fraction of the limits reached: with both limits, the smaller. */
static double progress_fraction(const bench_run *run, double now)
{
    const bench_run_config *c = run->config;
    double f = 1.0;
    if (c->niter > 0) {
        double k = (double)atomic_load(&run->completed) / (double)c->niter;
        f = k < f ? k : f;
    }
    if (c->time_s > 0) {
        double k = (now - run->t0_ms) / (c->time_s * 1e3);
        f = k < f ? k : f;
    }
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

static void progress(bench_run *run, double now, bool last)
{
    const bench_run_config *c = run->config;
    if (c->progress == BENCH_PROGRESS_NONE)
        return;
    double f = last ? 1.0 : progress_fraction(run, now);
    unsigned long long done = atomic_load(&run->completed);
    double elapsed = (now - run->t0_ms) / 1e3;
    if (c->progress == BENCH_PROGRESS_BAR) {
        enum { WIDTH = 40 };
        char bar[WIDTH + 1];
        int filled = (int)(f * WIDTH);
        for (int i = 0; i < WIDTH; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[WIDTH] = '\0';
        printf("\r[%s] %3d%%  %llu iterations  %.1f s", bar, (int)(f * 100), done, elapsed);
        if (last)
            printf("\n");
        fflush(stdout);
        return;
    }
    int step = (int)(f * 10);
    if (step > run->last_step) {
        run->last_step = step;
        printf("[ INFO ] Progress %3d%%: %llu iterations in %.1f s\n", step * 10, done, elapsed);
        fflush(stdout);
    }
}

static rn_status run_sync(bench_run *run)
{
    bench_slot *s = &run->slots[0];
    double next_draw = run->t0_ms;
    double now = bench_now_ms();
    while (claim_next(run, now)) {
        s->started_ms = bench_now_ms();
        rn_status st = rn_infer_request_infer(s->request);
        now = bench_now_ms();
        if (st != RN_OK) {
            record_error(run, st, "infer");
            break;
        }
        record(s, now);
        if (now >= next_draw) {
            progress(run, now, false);
            next_draw = now + 100;
        }
    }
    return run->error;
}

static rn_status run_async(bench_run *run)
{
    size_t n = run->config->n_requests;
    for (size_t i = 0; i < n; i++) {
        rn_status st =
            rn_infer_request_set_callback(run->slots[i].request, on_complete, &run->slots[i]);
        if (st != RN_OK) {
            for (size_t k = 0; k < i; k++)
                rn_infer_request_set_callback(run->slots[k].request, NULL, NULL);
            return rn_wrap_error(st, "set_callback: ");
        }
    }
    size_t started = 0;
    for (size_t i = 0; i < n; i++) {
        bench_slot *s = &run->slots[i];
        if (!claim_next(run, bench_now_ms())) {
            finish_slot(run);
            continue;
        }
        s->started_ms = bench_now_ms();
        rn_status st = rn_infer_request_start_async(s->request);
        if (st != RN_OK) {
            record_error(run, st, "start_async");
            finish_slot(run);
            continue;
        }
        started++;
    }
    pthread_mutex_lock(&run->lock);
    while (run->finished < n) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&run->changed, &run->lock, &ts);
        pthread_mutex_unlock(&run->lock);
        progress(run, bench_now_ms(), false);
        pthread_mutex_lock(&run->lock);
    }
    pthread_mutex_unlock(&run->lock);
    /* Every request has stopped restarting; wait until each callback has
     * returned before anything is read or freed. */
    for (size_t i = 0; i < n; i++) {
        rn_infer_request_wait(run->slots[i].request);
        rn_infer_request_set_callback(run->slots[i].request, NULL, NULL);
    }
    (void)started;
    return run->error;
}

rn_status bench_run_measure(const bench_run_config *config, bench_run_result *out)
{
    memset(out, 0, sizeof *out);
    size_t n = config->async ? config->n_requests : 1;
    bench_run run = {.config = config};
    run.slots = calloc(n, sizeof *run.slots);
    if (run.slots == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "bench: out of memory");
    for (size_t i = 0; i < n; i++) {
        run.slots[i].run = &run;
        run.slots[i].request = config->requests[i];
        bench_samples_init(&run.slots[i].samples, config->sample_limit);
    }
    pthread_mutex_init(&run.lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&run.changed, &attr);
    pthread_condattr_destroy(&attr);
    run.t0_ms = bench_now_ms();
    run.deadline_ms = config->time_s > 0 ? run.t0_ms + config->time_s * 1e3 : 0;
    rn_status st = config->async ? run_async(&run) : run_sync(&run);
    if (st == RN_OK)
        progress(&run, bench_now_ms(), true);
    else if (config->progress == BENCH_PROGRESS_BAR)
        printf("\n");
    pthread_cond_destroy(&run.changed);
    pthread_mutex_destroy(&run.lock);
    if (st != RN_OK) {
        for (size_t i = 0; i < n; i++) {
            bench_samples_free(&run.slots[i].samples);
            bench_counters_free(&run.slots[i].counters);
        }
        free(run.slots);
        return rn_set_error(st, "%s", run.error_message);
    }
    out->n = n;
    out->samples = calloc(n, sizeof *out->samples);
    out->counters = calloc(n, sizeof *out->counters);
    if (out->samples == NULL || out->counters == NULL) {
        for (size_t i = 0; i < n; i++) {
            bench_samples_free(&run.slots[i].samples);
            bench_counters_free(&run.slots[i].counters);
        }
        free(out->samples);
        free(out->counters);
        free(run.slots);
        memset(out, 0, sizeof *out);
        return rn_set_error(RN_OUT_OF_MEMORY, "bench: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        out->samples[i] = run.slots[i].samples;
        out->counters[i] = run.slots[i].counters;
    }
    free(run.slots);
    return RN_OK;
}

void bench_run_result_free(bench_run_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        bench_samples_free(&r->samples[i]);
        bench_counters_free(&r->counters[i]);
    }
    free(r->samples);
    free(r->counters);
    memset(r, 0, sizeof *r);
}
