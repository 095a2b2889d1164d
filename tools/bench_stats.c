/* Latency samples with bounded memory, and percentiles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench_stats.h"

void bench_samples_init(bench_samples *s, size_t limit)
{
    memset(s, 0, sizeof *s);
    s->limit = limit < 2 ? 2 : limit;
    s->stride = 1;
    s->min_ms = INFINITY;
    s->max_ms = -INFINITY;
}

void bench_samples_free(bench_samples *s)
{
    free(s->items);
    s->items = NULL;
    s->n = s->capacity = 0;
}

/* Keeps every other kept sample: the kept ones are then exactly the added
 * samples whose index is a multiple of the doubled stride. */
static void halve(bench_samples *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i += 2)
        s->items[k++] = s->items[i];
    s->n = k;
    s->stride *= 2;
}

int bench_samples_add(bench_samples *s, double start_ms, double latency_ms)
{
    uint64_t index = s->count++;
    s->sum_ms += latency_ms;
    if (latency_ms < s->min_ms)
        s->min_ms = latency_ms;
    if (latency_ms > s->max_ms)
        s->max_ms = latency_ms;
    if (start_ms + latency_ms > s->end_ms)
        s->end_ms = start_ms + latency_ms;
    if (index % s->stride != 0)
        return 0;
    if (s->n == s->limit) {
        halve(s);
        if (index % s->stride != 0)
            return 0;
    }
    if (s->n == s->capacity) {
        size_t cap = s->capacity ? 2 * s->capacity : 1024;
        if (cap > s->limit)
            cap = s->limit;
        bench_sample *items = realloc(s->items, cap * sizeof *items);
        if (items == NULL)
            return -1;
        s->items = items;
        s->capacity = cap;
    }
    s->items[s->n++] = (bench_sample){start_ms, latency_ms};
    return 0;
}

static int by_start(const void *a, const void *b)
{
    double x = ((const bench_sample *)a)->start_ms, y = ((const bench_sample *)b)->start_ms;
    return (x > y) - (x < y);
}

int bench_samples_merge(const bench_samples *parts, size_t n_parts, bench_samples *out)
{
    size_t total = 0, limit = 0;
    for (size_t i = 0; i < n_parts; i++) {
        total += parts[i].n;
        limit += parts[i].limit;
    }
    bench_samples_init(out, limit);
    out->items = malloc((total ? total : 1) * sizeof *out->items);
    if (out->items == NULL)
        return -1;
    out->capacity = total ? total : 1;
    for (size_t i = 0; i < n_parts; i++) {
        const bench_samples *p = &parts[i];
        if (p->n > 0)
            memcpy(out->items + out->n, p->items, p->n * sizeof *p->items);
        out->n += p->n;
        out->count += p->count;
        out->sum_ms += p->sum_ms;
        if (p->min_ms < out->min_ms)
            out->min_ms = p->min_ms;
        if (p->max_ms > out->max_ms)
            out->max_ms = p->max_ms;
        if (p->end_ms > out->end_ms)
            out->end_ms = p->end_ms;
        if (p->stride > out->stride)
            out->stride = p->stride;
    }
    qsort(out->items, out->n, sizeof *out->items, by_start);
    return 0;
}

double bench_percentile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    if (p <= 0)
        return sorted[0];
    if (p >= 100)
        return sorted[n - 1];
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(rank);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = rank - (double)lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_latency_compute(const bench_samples *s, bench_latency *out)
{
    memset(out, 0, sizeof *out);
    if (s->count == 0)
        return 0;
    out->count = s->count;
    out->average = s->sum_ms / (double)s->count;
    out->min = s->min_ms;
    out->max = s->max_ms;
    if (s->n == 0)
        return 0;
    double *v = malloc(s->n * sizeof *v);
    if (v == NULL)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        v[i] = s->items[i].latency_ms;
    qsort(v, s->n, sizeof *v, by_value);
    out->median = bench_percentile(v, s->n, 50);
    out->p90 = bench_percentile(v, s->n, 90);
    out->p99 = bench_percentile(v, s->n, 99);
    free(v);
    return 0;
}
