/* The allocator of failing_alloc.h. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/faults/failing_alloc.h"

/* Not instrumented: a sanitizer's runtime calls these before its shadow
 * memory exists. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

/* Exported: the definitions every shared object binds to. */
#define HOOK NO_SANITIZE __attribute__((visibility("default")))

/* Whether this thread runs its own code yet. A sanitizer's runtime starts
 * each thread with bookkeeping of its own that allocates through libc
 * (pthread_getattr_np) and aborts when that fails: not runnel's to handle, so
 * a thread's allocations count only once its start routine runs
 * (pthread_create below), and the arming thread's from arming on. */
static _Thread_local bool thread_running;

static atomic_bool armed;
static atomic_long seen, target, spared_seen;
static atomic_bool fired;

/* Libraries whose own allocations are neither counted nor failed. */
#define MAX_SPARED 4
static const char *spared[MAX_SPARED];
static int n_spared;

void failing_alloc_spare(const char *library)
{
    if (n_spared < MAX_SPARED)
        spared[n_spared++] = library;
}

long failing_alloc_spared(void)
{
    return atomic_load(&spared_seen);
}

/* Whether `caller` (the return address of an allocation) is code of a
 * spared library. dladdr takes the loader's lock and allocates nothing. */
static NO_SANITIZE bool spared_caller(const void *caller)
{
    Dl_info info;
    if (n_spared == 0 || dladdr(caller, &info) == 0 || info.dli_fname == NULL)
        return false;
    for (int i = 0; i < n_spared; i++)
        if (strstr(info.dli_fname, spared[i]) != NULL)
            return true;
    return false;
}

void failing_alloc_arm(long n)
{
    thread_running = true;
    atomic_store(&seen, 0);
    atomic_store(&spared_seen, 0);
    atomic_store(&fired, false);
    atomic_store(&target, n);
    atomic_store(&armed, true);
}

long failing_alloc_disarm(void)
{
    atomic_store(&armed, false);
    return atomic_load(&seen);
}

bool failing_alloc_fired(void)
{
    return atomic_load(&fired);
}

/* Whether this allocation, made from `caller`, is the one to fail. */
static NO_SANITIZE bool fail_now(const void *caller)
{
    if (!atomic_load_explicit(&armed, memory_order_acquire) || !thread_running)
        return false;
    if (spared_caller(caller)) {
        atomic_fetch_add(&spared_seen, 1);
        return false;
    }
    long n = atomic_fetch_add(&seen, 1) + 1;
    if (n != atomic_load(&target))
        return false;
    atomic_store(&fired, true);
    return true;
}

/* ---- the next allocator ---- */

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void *(*next_memalign)(size_t, size_t);
static int (*next_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static void (*next_free)(void *);

/* dlsym may allocate before the lookups are done: those calls get memory
 * from here, which is never freed. */
static _Alignas(max_align_t) unsigned char bootstrap[8192];
static atomic_size_t bootstrap_used;
static _Thread_local bool resolving;

static NO_SANITIZE void *bootstrap_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add(&bootstrap_used, size);
    if (at + size > sizeof bootstrap)
        return NULL;
    return bootstrap + at;
}

static NO_SANITIZE bool from_bootstrap(const void *p)
{
    return (const unsigned char *)p >= bootstrap &&
           (const unsigned char *)p < bootstrap + sizeof bootstrap;
}

static NO_SANITIZE void resolve(void)
{
    if (next_free != NULL)
        return;
    resolving = true;
    next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    next_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    next_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                   void *))dlsym(RTLD_NEXT, "pthread_create");
    void (*f)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    resolving = false;
    atomic_thread_fence(memory_order_release);
    next_free = f;
}

HOOK void *malloc(size_t size)
{
    if (resolving)
        return bootstrap_alloc(size);
    resolve();
    if (fail_now(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return next_malloc(size);
}

HOOK void *calloc(size_t n, size_t size)
{
    if (resolving)
        return bootstrap_alloc(n * size); /* zeroed: static storage */
    resolve();
    if (fail_now(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return next_calloc(n, size);
}

/* realloc on behalf of `caller`. */
static NO_SANITIZE void *realloc_from(void *p, size_t size, const void *caller)
{
    resolve();
    if (from_bootstrap(p)) {
        void *q = malloc(size);
        size_t left = (size_t)(bootstrap + sizeof bootstrap - (unsigned char *)p);
        if (q != NULL)
            memcpy(q, p, size < left ? size : left);
        return q;
    }
    if (fail_now(caller)) {
        errno = ENOMEM;
        return NULL;
    }
    return next_realloc(p, size);
}

HOOK void *realloc(void *p, size_t size)
{
    return realloc_from(p, size, __builtin_return_address(0));
}

HOOK void *reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_from(p, bytes, __builtin_return_address(0));
}

/* memalign on behalf of `caller`. */
static NO_SANITIZE void *memalign_from(size_t alignment, size_t size, const void *caller)
{
    resolve();
    if (fail_now(caller)) {
        errno = ENOMEM;
        return NULL;
    }
    return next_memalign(alignment, size);
}

HOOK void *memalign(size_t alignment, size_t size)
{
    return memalign_from(alignment, size, __builtin_return_address(0));
}

HOOK void *aligned_alloc(size_t alignment, size_t size)
{
    return memalign_from(alignment, size, __builtin_return_address(0));
}

HOOK int posix_memalign(void **out, size_t alignment, size_t size)
{
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    void *p = memalign_from(alignment, size, __builtin_return_address(0));
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

HOOK void free(void *p)
{
    if (p == NULL || from_bootstrap(p))
        return;
    resolve();
    next_free(p);
}

/* ---- threads ---- */

typedef struct thread_start {
    void *(*fn)(void *);
    void *arg;
} thread_start;

static NO_SANITIZE void *thread_trampoline(void *p)
{
    thread_start start = *(thread_start *)p;
    free(p);
    thread_running = true;
    return start.fn(start.arg);
}

HOOK int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                        void *arg)
{
    resolve();
    thread_start *start = malloc(sizeof *start);
    if (start == NULL)
        return EAGAIN;
    start->fn = fn;
    start->arg = arg;
    int rc = next_pthread_create(thread, attr, thread_trampoline, start);
    if (rc != 0)
        free(start);
    return rc;
}
