/* What the CPU device's tests share: the light models' paths and one run
 * of a compiled model on a deterministic input. */
#ifndef RUNNEL_TESTS_CPU_CPU_TESTING_H
#define RUNNEL_TESTS_CPU_CPU_TESTING_H

#include <stddef.h>

#include "runnel/runnel.h"

/* The path of light_<name>.onnx in the checkout's .cache (scripts/setup)
 * in buf; skips the test, saying so, when it is missing. */
const char *cpu_testing_light(const char *name, char *buf, size_t size);

/* A request of the compiled model run once with input 0 filled with the
 * deterministic pattern x[i] = ((i * 7919) % 1000) / 500 - 1 (to free).
 * Fails the test on any error. */
rn_infer_request *cpu_testing_infer(rn_compiled_model *cm);

/* Runs the compiled model once with input 0 filled with a deterministic
 * pattern in [-1, 1); returns a malloc'ed copy of output 0 (f32) and its
 * element count. Fails the test on any error. */
float *cpu_testing_run_once(rn_compiled_model *cm, size_t *count);

/* A model compiled for the CPU device under the LATENCY hint
 * (cpu_testing_compile_latency), and a request the test may create;
 * cpu_testing_free frees what is there. */
typedef struct cpu_testing_compiled {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm;
    rn_infer_request *rq;
} cpu_testing_compiled;

void cpu_testing_compile_latency(const char *path, cpu_testing_compiled *c);
/* The major version of the oneDNN the CPU device runs (its
 * FULL_DEVICE_NAME, "runnel CPU device (oneDNN 2.6.3, avx2) on ..."): the
 * tests that assert a version's measured kernel picks ask it. */
int cpu_testing_onednn_major(rn_core *core);
void cpu_testing_free(cpu_testing_compiled *c);

/* The compiled model's runtime nodes whose implementation is a Winograd
 * kernel (plugins/cpu/conv.c). */
int cpu_testing_winograd_nodes(rn_compiled_model *cm);

/* Skips the test, saying why, where the CPU device's LATENCY stream has no
 * OpenMP team: under ThreadSanitizer (cpu_enter) or on one CPU. */
void cpu_testing_skip_without_teams(void);

/* Which threads the process has (/proc/self/task): the caller's libgomp
 * pool (threads named as the process, the calling thread left out) and the
 * stream workers' OpenMP team threads (named rn-s<stream>t<k>). */
typedef struct cpu_testing_census {
    int caller_team;
    int worker_team;
} cpu_testing_census;

cpu_testing_census cpu_testing_take_census(void);

#endif /* RUNNEL_TESTS_CPU_CPU_TESTING_H */
