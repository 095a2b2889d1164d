/* Latency samples and their statistics for bench.
 *
 * Each infer request records its own samples (no lock on the hot path: a
 * request runs one inference at a time). Count, sum, min and max are exact
 * for every inference; the samples themselves are kept up to a limit, past
 * which every other kept sample is dropped and only every 2nd, 4th, ...
 * new one is kept, so that a long run of a tiny model stays in bounded
 * memory while the kept samples still spread evenly over the run. */
#ifndef RUNNEL_TOOLS_BENCH_STATS_H
#define RUNNEL_TOOLS_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* One measured inference: when it started, in ms since the measured run
 * began, and how long it took. */
typedef struct bench_sample {
    double start_ms;
    double latency_ms;
} bench_sample;

typedef struct bench_samples {
    bench_sample *items; /* the kept samples, in the order they were added */
    size_t n, capacity;
    size_t limit;    /* most samples kept */
    uint64_t stride; /* every stride-th added sample is kept */
    uint64_t count;  /* every sample added */
    double sum_ms, min_ms, max_ms;
    double end_ms; /* when the last inference ended (start + latency, max) */
} bench_samples;

/* Starts an empty set that keeps at most `limit` (>= 2) samples. */
void bench_samples_init(bench_samples *s, size_t limit);

/* Records one inference. -1 when out of memory (the exact counters are
 * still updated), 0 otherwise. */
int bench_samples_add(bench_samples *s, double start_ms, double latency_ms);

void bench_samples_free(bench_samples *s);

/* Merges the samples of several requests into `out` (initialised here),
 * sorted by start time. -1 when out of memory. */
int bench_samples_merge(const bench_samples *parts, size_t n_parts, bench_samples *out);

typedef struct bench_latency {
    uint64_t count;
    double median, average, min, max, p90, p99;
} bench_latency;

/* Statistics of a set of samples: count, average, min and max over every
 * inference; median and percentiles over the kept samples. All zero when
 * there is none. -1 when out of memory. */
int bench_latency_compute(const bench_samples *s, bench_latency *out);

/* The p-th percentile (0..100) of n ascending values, interpolating
 * linearly between the two closest ranks (NumPy's default), so the median
 * of an even count is the mean of the middle two. 0 when n is 0. */
double bench_percentile(const double *sorted, size_t n, double p);

#endif /* RUNNEL_TOOLS_BENCH_STATS_H */
