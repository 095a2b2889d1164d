/* Huge-page-backed host memory for arenas and converted constants (pages.h). */
#include "plugins/api/pages.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SLAB_BLOCK ((size_t)8 << 20)

static bool huge_enabled;
static pthread_once_t huge_once = PTHREAD_ONCE_INIT;

static void huge_probe(void)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const char *env = getenv("RN_HUGE_PAGES");
    if (env != NULL && strcmp(env, "0") == 0)
        return;
    /* "always [madvise] never": the bracketed word is the mode. */
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL)
        return;
    char line[128] = {0};
    if (fgets(line, sizeof line, f) != NULL)
        huge_enabled = strstr(line, "[never]") == NULL;
    fclose(f);
#endif
}

bool plugin_huge_pages_enabled(void)
{
    pthread_once(&huge_once, huge_probe);
    return huge_enabled;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* Advises [p, p + bytes) (p huge-page aligned, bytes whole pages); a refusal
 * (a kernel without THP) only leaves 4 KiB pages. */
static void advise(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes > 0)
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}

void *plugin_pages_alloc(size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    if (bytes < PLUGIN_HUGE_PAGE || !plugin_huge_pages_enabled())
        return aligned_alloc(64, round_up(bytes, 64));
    /* posix_memalign: C's aligned_alloc may refuse a size that is not a
     * multiple of the alignment (AddressSanitizer's does). */
    void *p;
    if (posix_memalign(&p, PLUGIN_HUGE_PAGE, round_up(bytes, 64)) != 0)
        return NULL;
    advise(p, bytes / PLUGIN_HUGE_PAGE * PLUGIN_HUGE_PAGE);
    return p;
}

struct plugin_slab {
    plugin_slab *next; /* the older blocks */
    unsigned char *base;
    size_t size;    /* whole huge pages */
    size_t used;    /* bytes handed out, from base */
    size_t decided; /* the huge pages below this offset were advised or not */
    size_t total;   /* bytes handed out by the list, this block and older */
};

void *plugin_slab_alloc(plugin_slab **list, size_t bytes)
{
    bytes = round_up(bytes ? bytes : 1, 64);
    plugin_slab *b = *list;
    if (b == NULL || b->size - b->used < bytes) {
        plugin_slab *n = calloc(1, sizeof *n);
        size_t size = round_up(bytes > SLAB_BLOCK ? bytes : SLAB_BLOCK, PLUGIN_HUGE_PAGE);
        if (n == NULL ||
            (n->base = aligned_alloc(PLUGIN_HUGE_PAGE, size)) == NULL) { /* size: whole pages */
            free(n);
            return NULL;
        }
        n->size = size;
        n->total = b != NULL ? b->total : 0;
        n->next = b;
        *list = b = n;
    }
    void *p = b->base + b->used;
    b->used += bytes;
    b->total += bytes;
    /* A huge page is decided when the first constant reaches into it: advised
     * once the plan's constants come to a huge page or more, so that a small
     * model's few kilobytes stay in small pages (a huge page is resident
     * whole once touched). */
    size_t end = round_up(b->used, PLUGIN_HUGE_PAGE);
    if (end > b->decided) {
        if (b->total >= PLUGIN_HUGE_PAGE && plugin_huge_pages_enabled())
            advise(b->base + b->decided, end - b->decided);
        b->decided = end;
    }
    return p;
}

void plugin_slab_free(plugin_slab *list)
{
    while (list != NULL) {
        plugin_slab *next = list->next;
        free(list->base);
        free(list);
        list = next;
    }
}
