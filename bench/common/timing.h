/* Timing helpers every benchmark needs: a monotonic clock and medians. */
#ifndef RUNNEL_BENCH_COMMON_TIMING_H
#define RUNNEL_BENCH_COMMON_TIMING_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* The median of v[0..n) (n >= 1); sorts v in place. */
double bench_median(double *v, int n);

#endif /* RUNNEL_BENCH_COMMON_TIMING_H */
