/* A steady-state run allocates nothing (DESIGN.md, "The kernel boundary and
 * memory"): for each of the onnx wheel's light models on REF, after
 * warm-up runs, five more runs call no allocator function from any thread.
 *
 * The plan itself allocates nothing per run (arenas, prebuilt arguments,
 * DAG instances are made with the request). REF's kernels take their
 * temporaries from a cache per thread (plugins/ref/kernels/tmp.h), which a
 * thread fills the first time it runs a kernel. So the steady state is
 * reached after one run on one worker, but with several workers only once
 * each worker has run each kernel, which depends on how the scheduler
 * spreads the tasks, or (LATENCY on two workers: plugins/api/branch.c)
 * which chains a fork hands to the second worker, sync and async alike.
 * Built twice (tests/plan/BUILD):
 * - test_steady_allocs (CI): sync runs, async runs without a callback
 *   (start_async + wait) and with one, on one worker
 *   (INFERENCE_NUM_THREADS=1): deterministic after three warm-up runs;
 * - with STEADY_ALLOCS_ASYNC (manual): sync and async runs on the default
 *   workers after 30 warm-up runs, which is not deterministic.
 *
 * The binary interposes malloc, calloc, realloc, free, aligned_alloc,
 * posix_memalign, memalign, valloc, pvalloc and reallocarray (glibc
 * supports replacing its allocator this way) and forwards them to glibc's
 * __libc_* entry points, counting calls while a window is open. The first
 * few calls in a window keep their backtrace, printed when a test fails,
 * so that the failure names the call sites.
 *
 * Under AddressSanitizer or ThreadSanitizer the sanitizer owns the
 * allocator and the interposition would fight it: the tests skip, saying
 * so. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define SANITIZER_ALLOCATOR 1
#endif
#endif

#define LIGHT_DIR ".cache/onnx-1.22.0/light"
#ifdef STEADY_ALLOCS_ASYNC
#define WARMUP 30
#else
#define WARMUP 3
#endif
#define COUNTED 5

#ifndef SANITIZER_ALLOCATOR

/* ---- the counting allocator ---- */

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t alignment, size_t size);

/* Exported: the copies glibc and every shared object call. */
#define HOOK __attribute__((visibility("default")))

#define MAX_SITES  6
#define SITE_DEPTH 24

static atomic_bool counting;
static atomic_long allocs, frees, recorded;
static void *sites[MAX_SITES][SITE_DEPTH];
static int site_depth[MAX_SITES];
static char site_kind[MAX_SITES][16];
static _Thread_local int in_hook; /* backtrace() may allocate: not counted */

static void note(const char *kind, bool is_free)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed) || in_hook)
        return;
    atomic_fetch_add(is_free ? &frees : &allocs, 1);
    long k = atomic_fetch_add(&recorded, 1);
    if (k < MAX_SITES) {
        in_hook = 1;
        snprintf(site_kind[k], sizeof site_kind[k], "%s", kind);
        site_depth[k] = backtrace(sites[k], SITE_DEPTH);
        in_hook = 0;
    }
}

HOOK void *malloc(size_t size)
{
    note("malloc", false);
    return __libc_malloc(size);
}

HOOK void *calloc(size_t n, size_t size)
{
    note("calloc", false);
    return __libc_calloc(n, size);
}

HOOK void *realloc(void *p, size_t size)
{
    note("realloc", false);
    return __libc_realloc(p, size);
}

HOOK void free(void *p)
{
    if (p != NULL)
        note("free", true);
    __libc_free(p);
}

HOOK void *aligned_alloc(size_t alignment, size_t size)
{
    note("aligned_alloc", false);
    return __libc_memalign(alignment, size);
}

HOOK void *memalign(size_t alignment, size_t size)
{
    note("memalign", false);
    return __libc_memalign(alignment, size);
}

HOOK int posix_memalign(void **out, size_t alignment, size_t size)
{
    note("posix_memalign", false);
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

HOOK void *valloc(size_t size)
{
    note("valloc", false);
    return __libc_memalign((size_t)getpagesize(), size);
}

HOOK void *pvalloc(size_t size)
{
    note("pvalloc", false);
    size_t page = (size_t)getpagesize();
    return __libc_memalign(page, (size + page - 1) / page * page);
}

HOOK void *reallocarray(void *p, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * size);
}

static void count_begin(void)
{
    atomic_store(&allocs, 0);
    atomic_store(&frees, 0);
    atomic_store(&recorded, 0);
    atomic_store(&counting, true);
}

/* Closes the window; prints the call sites of what it counted. */
static long count_end(const char *what)
{
    atomic_store(&counting, false);
    long n = atomic_load(&allocs) + atomic_load(&frees);
    long kept = atomic_load(&recorded) < MAX_SITES ? atomic_load(&recorded) : MAX_SITES;
    if (n > 0) {
        fprintf(stderr, "%s: %ld allocations, %ld frees; the first %ld:\n", what,
                atomic_load(&allocs), atomic_load(&frees), kept);
        for (long k = 0; k < kept; k++) {
            fprintf(stderr, "  -- %s\n", site_kind[k]);
            fflush(stderr);
            backtrace_symbols_fd(sites[k], site_depth[k], STDERR_FILENO);
        }
    }
    return n;
}

static void hook_init(void)
{
    void *frames[4];
    backtrace(frames, 4); /* loads the unwinder before any window opens */
}

#define SKIP_UNDER_SANITIZER() ((void)0)

#else /* SANITIZER_ALLOCATOR */

static void count_begin(void) {}

static long count_end(const char *what)
{
    (void)what;
    return 0;
}

static void hook_init(void) {}

/* Criterion prints a skip's reason only with --verbose: say it in the log. */
#define SANITIZER_SKIP_REASON                                                                      \
    "built with AddressSanitizer or ThreadSanitizer: the sanitizer replaces the allocator, so "    \
    "this binary cannot interpose malloc to count calls"
#define SKIP_UNDER_SANITIZER()                                                                     \
    do {                                                                                           \
        fprintf(stderr, "skipped: %s\n", SANITIZER_SKIP_REASON);                                   \
        cr_skip_test(SANITIZER_SKIP_REASON);                                                       \
    } while (0)

#endif /* SANITIZER_ALLOCATOR */

/* ---- the control: the hook sees every thread ---- */

static atomic_int go, done;
static void *volatile kept_block;

static void *allocate_on_signal(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        ;
    kept_block = malloc(24);
    atomic_store(&done, 1);
    return NULL;
}

Test(steady_allocs, hook_counts_allocations_of_other_threads)
{
    SKIP_UNDER_SANITIZER();
    hook_init();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, allocate_on_signal, NULL), 0);
    count_begin();
    atomic_store(&go, 1);
    while (!atomic_load(&done))
        ;
    long n = count_end("control");
    pthread_join(t, NULL);
    free(kept_block);
    cr_assert_eq(n, 1, "counted %ld calls, expected the other thread's one malloc", n);
}

/* Allocations inside the runtime (libruntime.so) are seen too. */
Test(steady_allocs, hook_counts_allocations_of_the_runtime)
{
    SKIP_UNDER_SANITIZER();
    hook_init();
    int64_t dims[2] = {3, 5};
    rn_tensor *t = NULL;
    count_begin();
    rn_status st = rn_tensor_create(RN_F32, dims, 2, &t);
    long n = count_end("control: rn_tensor_create");
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    rn_tensor_free(t);
    cr_assert_geq(n, 2,
                  "rn_tensor_create made %ld allocator calls; it allocates its handle and "
                  "its buffer",
                  n);
}

/* ---- the light models ---- */

typedef struct light_model {
    char name[32];
} light_model;

static struct criterion_test_params light_models(void)
{
    static light_model models[] = {
        {"light_bvlc_alexnet"}, {"light_densenet121"}, {"light_inception_v1"},
        {"light_inception_v2"}, {"light_resnet50"},    {"light_shufflenet"},
        {"light_squeezenet"},   {"light_vgg19"},       {"light_zfnet512"},
    };
    return cr_make_param_array(light_model, models, sizeof models / sizeof models[0]);
}

static atomic_int callbacks;

static void on_done(rn_infer_request *request, rn_status status, void *user_data)
{
    (void)request;
    (void)user_data;
    if (status == RN_OK)
        atomic_fetch_add(&callbacks, 1);
}

typedef enum run_mode { RUN_SYNC, RUN_ASYNC, RUN_CALLBACK } run_mode;

static const char *const mode_names[] = {"sync", "async (no callback)", "async (callback)"};

static void run_once(rn_infer_request *r, run_mode mode)
{
    if (mode == RUN_SYNC) {
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
        return;
    }
    cr_assert_eq(rn_infer_request_start_async(r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_wait(r), RN_OK, "%s", rn_last_error());
}

/* Compiles model m on REF (on one worker when one_worker), fills its
 * inputs, runs WARMUP times in `mode` and expects the next COUNTED runs to
 * call no allocator function. */
static void expect_steady(const light_model *m, run_mode mode, bool one_worker)
{
    SKIP_UNDER_SANITIZER();
    char path[256];
    snprintf(path, sizeof path, "%s/%s.onnx", LIGHT_DIR, m->name);
    if (access(path, R_OK) != 0)
        cr_skip_test("%s is missing: run scripts/setup", path);
    hook_init();
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
    rn_infer_request *r;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s", rn_last_error());
    rn_property one[] = {{"INFERENCE_NUM_THREADS", "1"}};
    cr_assert_eq(rn_core_compile_model(core, model, "REF", one_worker ? one : NULL,
                                       one_worker ? 1 : 0, &compiled),
                 RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &r), RN_OK, "%s",
                 rn_last_error());
    for (size_t i = 0; i < rn_compiled_model_input_count(compiled); i++) {
        rn_tensor *t;
        cr_assert_eq(rn_infer_request_get_input_tensor(r, i, &t), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_tensor_element_type(t), RN_F32, "%s: input %zu is not f32", m->name, i);
        float *x = rn_tensor_data(t);
        for (size_t e = 0; e < rn_tensor_element_count(t); e++)
            x[e] = (float)(e % 255) / 255.0f;
    }
    if (mode == RUN_CALLBACK)
        cr_assert_eq(rn_infer_request_set_callback(r, on_done, NULL), RN_OK, "%s", rn_last_error());
    atomic_store(&callbacks, 0);
    for (int k = 0; k < WARMUP; k++)
        run_once(r, mode);
    char what[128];
    snprintf(what, sizeof what, "%s, %s runs", m->name, mode_names[mode]);
    count_begin();
    for (int k = 0; k < COUNTED; k++)
        run_once(r, mode);
    long n = count_end(what);
    if (mode == RUN_CALLBACK)
        cr_expect_eq(atomic_load(&callbacks), WARMUP + COUNTED, "%d callbacks",
                     atomic_load(&callbacks));
    cr_expect_eq(n, 0, "%s: %d %s runs after %d warm-up runs made %ld allocator calls", m->name,
                 COUNTED, mode_names[mode], WARMUP, n);
    rn_infer_request_free(r);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
}

#ifndef STEADY_ALLOCS_ASYNC

ParameterizedTestParameters(steady_allocs, sync)
{
    return light_models();
}

ParameterizedTest(light_model *m, steady_allocs, sync, .timeout = 240)
{
    expect_steady(m, RUN_SYNC, true);
}

ParameterizedTestParameters(steady_allocs, async_one_worker)
{
    return light_models();
}

ParameterizedTest(light_model *m, steady_allocs, async_one_worker, .timeout = 240)
{
    expect_steady(m, RUN_ASYNC, true);
}

ParameterizedTestParameters(steady_allocs, async_with_callback_one_worker)
{
    return light_models();
}

ParameterizedTest(light_model *m, steady_allocs, async_with_callback_one_worker, .timeout = 240)
{
    expect_steady(m, RUN_CALLBACK, true);
}

#else /* STEADY_ALLOCS_ASYNC: runs on the default workers (see BUILD) */

ParameterizedTestParameters(steady_allocs, sync_default_workers)
{
    return light_models();
}

ParameterizedTest(light_model *m, steady_allocs, sync_default_workers, .timeout = 240)
{
    expect_steady(m, RUN_SYNC, false);
}

ParameterizedTestParameters(steady_allocs, async)
{
    return light_models();
}

ParameterizedTest(light_model *m, steady_allocs, async, .timeout = 240)
{
    expect_steady(m, RUN_ASYNC, false);
}

ParameterizedTestParameters(steady_allocs, async_with_callback)
{
    return light_models();
}

ParameterizedTest(light_model *m, steady_allocs, async_with_callback, .timeout = 240)
{
    expect_steady(m, RUN_CALLBACK, false);
}

#endif /* STEADY_ALLOCS_ASYNC */
