/* Host memory that a run reads on every inference: the request's arena and
 * the constants a plan converts at compile time (a convolution's blocked
 * weights). On x86-64 Linux these are backed by transparent huge pages
 * where the kernel lends them (`/sys/kernel/mm/transparent_hugepage/enabled`
 * `always` or `madvise`): ResNet-50's weights are ~51 MB in bf16, 102 MB in
 * f32, read once an inference, which in 4 KiB pages is 12,500–25,000 TLB
 * entries an inference; in 2 MiB pages a few dozen. OpenVINO allocates in
 * 4 KiB pages. Measured on a Zen 4 (docs/performance.md, "Huge pages"):
 * 2–5 % off the LATENCY median of the weight-heavy CNNs, nothing on the light
 * ones. `RN_HUGE_PAGES=0` in the environment (read once per process) turns
 * the advice off (an A/B switch): arenas are then plain 64-byte-aligned
 * allocations, and constants are still packed into slab blocks, unadvised. */
#ifndef RUNNEL_PLUGINS_API_PAGES_H
#define RUNNEL_PLUGINS_API_PAGES_H

#include <stdbool.h>
#include <stddef.h>

/* The size of a transparent huge page (x86-64: 2 MiB). */
#define PLUGIN_HUGE_PAGE ((size_t)2 << 20)

/* Whether allocations here ask for huge pages: the kernel lends them
 * (not `never`) and RN_HUGE_PAGES is not 0. Read once per process. */
bool plugin_huge_pages_enabled(void);

/* `bytes` (at least 1) 64-byte aligned, freed with free(); NULL when out of
 * memory. From 2 MiB on, 2 MiB aligned, and its whole huge pages advised
 * (MADV_HUGEPAGE) when huge pages are enabled: no byte past `bytes` is
 * touched or advised, so the resident size is what 4 KiB pages would hold
 * plus at most the last partial huge page's rounding. */
void *plugin_pages_alloc(size_t bytes);

/* A slab list: many constants of one plan packed into few huge-page-backed
 * blocks, so that the ones under 2 MiB (most of a CNN's weights) are in huge
 * pages too. Not thread-safe (one plan spec is built by one thread); freed
 * all at once. An empty list is a NULL pointer. */
typedef struct plugin_slab plugin_slab;

/* `bytes` 64-byte aligned from the list's current block, or a new block of
 * at least 8 MiB (or `bytes`, rounded up to whole huge pages); NULL when out
 * of memory. */
void *plugin_slab_alloc(plugin_slab **list, size_t bytes);

/* Frees every block of the list (NULL: nothing). */
void plugin_slab_free(plugin_slab *list);

#endif /* RUNNEL_PLUGINS_API_PAGES_H */
