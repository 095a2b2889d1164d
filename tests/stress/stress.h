/* Shared set-up of the stress tests: how many runs, the devices, test_add's
 * inputs and expected outputs, and failure records that threads other than
 * the test's own can write (Criterion's asserts may only fail on the test's
 * thread, so callbacks record and the test asserts at the end). */
#ifndef RUNNEL_TESTS_STRESS_STRESS_H
#define RUNNEL_TESTS_STRESS_STRESS_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runnel/runnel.h"

#define STRESS_ADD_MODEL  "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"
#define STRESS_SLOWDEV_SO "tests/slowdev/libslowdev.so"

/* The sanitizers slow runs down (here TSan about 4x, ASan about 1.5x, and
 * CI runs both builds on top of the plain one): their default counts shrink
 * so that each test stays well within its budget there. */
#if defined(__SANITIZE_THREAD__)
#define STRESS_BUILD      "TSan"
#define STRESS_SCALE_DOWN 4
#elif defined(__SANITIZE_ADDRESS__)
#define STRESS_BUILD      "ASan"
#define STRESS_SCALE_DOWN 2
#else
#define STRESS_BUILD      "plain"
#define STRESS_SCALE_DOWN 1
#endif

/* The number of runs: RUNNEL_STRESS_RUNS when set (used as is, in every
 * build), else `plain_default` divided by the sanitizer's scale. Says which
 * on stderr, so that the test log tells what was run. */
static inline long stress_runs(const char *test, long plain_default)
{
    const char *env = getenv("RUNNEL_STRESS_RUNS");
    if (env != NULL && *env != '\0') {
        char *end;
        long n = strtol(env, &end, 10);
        cr_assert(*end == '\0' && n > 0, "RUNNEL_STRESS_RUNS='%s' is not a positive count", env);
        fprintf(stderr, "stress %s: %ld runs (RUNNEL_STRESS_RUNS, %s build)\n", test, n,
                STRESS_BUILD);
        return n;
    }
    long n = plain_default / STRESS_SCALE_DOWN;
    if (STRESS_SCALE_DOWN > 1)
        fprintf(stderr,
                "stress %s: %ld runs (default %ld scaled down 1/%d under %s; set "
                "RUNNEL_STRESS_RUNS to change)\n",
                test, n, plain_default, STRESS_SCALE_DOWN, STRESS_BUILD);
    else
        fprintf(stderr, "stress %s: %ld runs (default; set RUNNEL_STRESS_RUNS to change)\n", test,
                n);
    return n;
}

static inline double stress_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: a cheap per-thread random stream. */
static inline uint32_t stress_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* The first failure seen by any thread, and how many there were. */
typedef struct stress_failures {
    atomic_long count;
    pthread_mutex_t lock;
    char first[512];
} stress_failures;

static inline void stress_failures_init(stress_failures *f)
{
    atomic_init(&f->count, 0);
    pthread_mutex_init(&f->lock, NULL);
    f->first[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static inline void stress_fail(stress_failures *f,
                                                                     const char *fmt, ...)
{
    if (atomic_fetch_add(&f->count, 1) != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&f->lock);
    vsnprintf(f->first, sizeof f->first, fmt, ap);
    pthread_mutex_unlock(&f->lock);
    va_end(ap);
}

static inline void stress_assert_no_failures(stress_failures *f)
{
    pthread_mutex_lock(&f->lock);
    long n = atomic_load(&f->count);
    cr_assert_eq(n, 0, "%ld failures; the first: %s", n, f->first);
    pthread_mutex_unlock(&f->lock);
    pthread_mutex_destroy(&f->lock);
}

/* A core with `device` available: SLOWDEV is loaded from its shared object
 * with short stage costs (the stress is in the hand-offs, not the waits). */
static inline rn_core *stress_core(const char *device)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    if (strcmp(device, "SLOWDEV") == 0) {
        cr_assert_eq(rn_core_load_plugin(core, NULL, STRESS_SLOWDEV_SO), RN_OK, "%s",
                     rn_last_error());
        rn_property costs[] = {{"SLOWDEV_UPLOAD_US", "0"},
                               {"SLOWDEV_EXECUTE_US", "20"},
                               {"SLOWDEV_WAIT_US", "0"},
                               {"SLOWDEV_DOWNLOAD_US", "10"}};
        cr_assert_eq(rn_core_set_property(core, "SLOWDEV", costs, 4), RN_OK, "%s", rn_last_error());
    }
    return core;
}

/* test_add's inputs for run `gen` of request `id`: small integers, so that
 * every sum is exact in f32 and each run's expected output is distinct. */
static inline void stress_fill_inputs(float *x, float *y, size_t n, uint32_t id, uint32_t gen)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((gen * 61u + (uint32_t)i * 7u) % 4096u);
        y[i] = (float)(id * 1000u + gen % 997u);
    }
}

/* Index of the first element of z that is not x + y, or -1. */
static inline long stress_check_sum(const float *x, const float *y, const float *z, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (z[i] != x[i] + y[i])
            return (long)i;
    return -1;
}

#endif /* RUNNEL_TESTS_STRESS_STRESS_H */
