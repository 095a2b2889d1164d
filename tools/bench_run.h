/* The measured part of bench: keeps infer requests busy until the limits
 * are reached and records every inference's latency (and, when asked, its
 * per-layer counters).
 *
 * Sync mode runs one request in the calling thread, back to back. Async
 * mode starts every request and gives each a callback that records the
 * finished inference and starts the request again, so every request stays
 * busy with no thread waiting on it; the calling thread only draws the
 * progress. The run ends when every given limit is reached (-niter
 * inferences started and -t seconds elapsed, as benchmark_app does). */
#ifndef RUNNEL_TOOLS_BENCH_RUN_H
#define RUNNEL_TOOLS_BENCH_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "runnel/runnel.h"
#include "tools/bench_report.h"
#include "tools/bench_stats.h"

typedef enum bench_progress {
    BENCH_PROGRESS_NONE,
    BENCH_PROGRESS_BAR,   /* a redrawn bar (stdout is a terminal) */
    BENCH_PROGRESS_LINES, /* a plain line every 10% */
} bench_progress;

typedef struct bench_run_config {
    rn_infer_request **requests; /* async: all of them; sync: the first */
    size_t n_requests;
    bool async;
    long long niter;     /* 0: no count limit */
    double time_s;       /* 0: no time limit */
    bool counters;       /* read the profiling info after every inference */
    size_t sample_limit; /* samples kept per request */
    bench_progress progress;
} bench_run_config;

/* Per request: its latency samples and its counters. */
typedef struct bench_run_result {
    size_t n;
    bench_samples *samples;
    bench_counters *counters;
} bench_run_result;

/* Runs the measurement. The requests must be idle with their inputs set.
 * On an inference error the run stops and the error is returned with its
 * message; *out is then left empty. */
rn_status bench_run_measure(const bench_run_config *config, bench_run_result *out);

void bench_run_result_free(bench_run_result *r);

/* Milliseconds on the monotonic clock. */
double bench_now_ms(void);

#endif /* RUNNEL_TOOLS_BENCH_RUN_H */
