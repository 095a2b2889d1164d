/* What every benchmark prints about the machine it ran on, so that its
 * numbers are read against the CPU, the ISA and the load of that run. */
#ifndef RUNNEL_BENCH_COMMON_HOST_H
#define RUNNEL_BENCH_COMMON_HOST_H

#include <stddef.h>

/* Prints "# load average <when>: 1.00 0.80 0.50" (/proc/loadavg). */
void bench_print_load(const char *when);

/* The CPU's model name ("unknown CPU" when /proc/cpuinfo does not say). */
void bench_cpu_model(char *buf, size_t size);

/* Prints "# isa: avx2=yes avx512f=yes avx512_bf16=yes amx=no", and "# capped:
 * ONEDNN_MAX_CPU_ISA=AVX2 ..." where that (or DNNL_MAX_CPU_ISA) caps oneDNN. */
void bench_print_isa(void);

#endif /* RUNNEL_BENCH_COMMON_HOST_H */
