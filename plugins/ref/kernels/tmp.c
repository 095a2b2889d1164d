/* The per-thread cache of REF kernels' temporary buffers (see tmp.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/tmp.h"

/* Under a sanitizer every block is the sanitizer's own allocation, so that
 * overflows inside a block and use after free stay visible. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TMP_PASS_THROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TMP_PASS_THROUGH 1
#endif
#endif

#define ALIGN     64
#define MIN_SHIFT 6  /* 64-byte blocks */
#define N_CLASSES 40 /* up to 2^45 bytes */

/* Every block starts with this header (one alignment unit), then the
 * caller's bytes. */
typedef struct block {
    struct block *next; /* in a cache's free list */
    unsigned cls;       /* size class: 2^(cls + MIN_SHIFT) bytes of payload */
} block;

typedef struct cache {
    block *free[N_CLASSES];
    size_t kept; /* payload bytes held in the free lists */
} cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_release(void *arg)
{
    cache *c = arg;
    for (unsigned k = 0; k < N_CLASSES; k++)
        while (c->free[k] != NULL) {
            block *b = c->free[k];
            c->free[k] = b->next;
            free(b);
        }
    free(c);
}

static void cache_key_init(void)
{
    (void)pthread_key_create(&cache_key, cache_release);
}

/* This thread's cache, made on first use (NULL when out of memory). */
static cache *thread_cache(void)
{
    pthread_once(&cache_once, cache_key_init);
    cache *c = pthread_getspecific(cache_key);
    if (c == NULL && (c = calloc(1, sizeof *c)) != NULL && pthread_setspecific(cache_key, c) != 0) {
        free(c);
        c = NULL;
    }
    return c;
}

static unsigned size_class(size_t bytes)
{
    unsigned k = 0;
    while (k < N_CLASSES - 1 && ((size_t)1 << (k + MIN_SHIFT)) < bytes)
        k++;
    return k;
}

void *ref_tmp_alloc(size_t bytes)
{
#ifdef TMP_PASS_THROUGH
    return malloc(bytes ? bytes : 1);
#endif
    unsigned k = size_class(bytes ? bytes : 1);
    size_t payload = (size_t)1 << (k + MIN_SHIFT);
    if (payload < bytes)
        return NULL;
    cache *c = thread_cache();
    block *b = c != NULL ? c->free[k] : NULL;
    if (b != NULL) {
        c->free[k] = b->next;
        c->kept -= payload;
    } else {
        b = aligned_alloc(ALIGN, ALIGN + payload);
        if (b == NULL)
            return NULL;
        b->cls = k;
    }
    b->next = NULL;
    return (unsigned char *)b + ALIGN;
}

void *ref_tmp_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = ref_tmp_alloc(n * size);
    if (p != NULL)
        memset(p, 0, n * size);
    return p;
}

void ref_tmp_free(void *p)
{
#ifdef TMP_PASS_THROUGH
    free(p);
    return;
#endif
    if (p == NULL)
        return;
    block *b = (block *)((unsigned char *)p - ALIGN);
    size_t payload = (size_t)1 << (b->cls + MIN_SHIFT);
    cache *c = thread_cache();
    if (c == NULL || c->kept + payload > REF_TMP_KEEP_BYTES) {
        free(b);
        return;
    }
    b->next = c->free[b->cls];
    c->free[b->cls] = b;
    c->kept += payload;
}
