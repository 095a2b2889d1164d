/* Huge pages for the memory a run reads every inference (plugins/api/pages.h):
 * an arena of 2 MiB or more and a plan's converted constants, once they come
 * to a huge page, are in mappings the kernel may back with transparent huge
 * pages (smaps' THPeligible), and a small plan's constants are not (a huge
 * page is resident whole once touched). Where the kernel lends no huge pages
 * (`never`, or RN_HUGE_PAGES=0) the cases that need them skip, saying so;
 * the allocations' alignment and contents are checked either way. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/pages.h"

/* smaps' THPeligible of the mapping that holds p: 1 or 0, -1 when the field
 * or the mapping is not found. */
static int thp_eligible(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL)
        return -1;
    uintptr_t a = (uintptr_t)p;
    char line[512];
    bool inside = false;
    int eligible = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        char dash;
        if (sscanf(line, "%lx%c%lx", &lo, &dash, &hi) == 3 && dash == '-') {
            inside = a >= lo && a < hi;
            continue;
        }
        int v;
        if (inside && sscanf(line, "THPeligible: %d", &v) == 1) {
            eligible = v;
            break;
        }
    }
    fclose(f);
    return eligible;
}

static void skip_without_huge_pages(void)
{
    if (!plugin_huge_pages_enabled())
        cr_skip("transparent huge pages are off here (THP 'never', not Linux, or "
                "RN_HUGE_PAGES=0): nothing to advise");
}

/* THP `always`: every anonymous mapping is eligible, advised or not. */
static bool thp_always(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = {0};
    bool always = f != NULL && fgets(line, sizeof line, f) != NULL && strstr(line, "[always]");
    if (f != NULL)
        fclose(f);
    return always;
}

Test(pages, small_allocations_are_aligned_and_whole)
{
    for (size_t n = 1; n < 3000; n = n * 3 + 1) {
        unsigned char *p = plugin_pages_alloc(n);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 64, 0, "%zu bytes at %p", n, (void *)p);
        memset(p, 0xa5, n);
        cr_assert_eq(p[n - 1], 0xa5);
        free(p);
    }
}

Test(pages, an_arena_of_huge_pages_is_advised_and_aligned)
{
    skip_without_huge_pages();
    size_t n = PLUGIN_HUGE_PAGE * 3 + 4096;
    unsigned char *p = plugin_pages_alloc(n);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % PLUGIN_HUGE_PAGE, 0, "%p is not on a huge page", (void *)p);
    memset(p, 1, n);
    int e = thp_eligible(p + PLUGIN_HUGE_PAGE);
    if (e < 0)
        cr_skip("this kernel's /proc/self/smaps has no THPeligible field");
    cr_expect_eq(e, 1, "the arena's second huge page is not THP-eligible");
    cr_expect_eq(p[n - 1], 1);
    free(p);
}

Test(pages, slab_constants_do_not_overlap)
{
    plugin_slab *slab = NULL;
    enum { N = 300 };
    unsigned char *at[N];
    size_t size[N];
    for (int i = 0; i < N; i++) {
        size[i] = (size_t)(i * 7919 % 40000) + 1; /* 1 B to 40 kB, 6 MB in all */
        at[i] = plugin_slab_alloc(&slab, size[i]);
        cr_assert_not_null(at[i]);
        cr_assert_eq((uintptr_t)at[i] % 64, 0);
        memset(at[i], i & 0xff, size[i]);
    }
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < size[i]; k += 97)
            cr_assert_eq(at[i][k], i & 0xff, "constant %d was overwritten at byte %zu", i, k);
    plugin_slab_free(slab);
    plugin_slab_free(NULL);
}

Test(pages, a_plans_constants_go_to_huge_pages_once_they_fill_one)
{
    skip_without_huge_pages();
    plugin_slab *slab = NULL;
    unsigned char *first = plugin_slab_alloc(&slab, 100000);
    cr_assert_not_null(first);
    unsigned char *big = plugin_slab_alloc(&slab, 5 * PLUGIN_HUGE_PAGE / 2);
    cr_assert_not_null(big);
    memset(first, 2, 100000);
    memset(big, 3, 5 * PLUGIN_HUGE_PAGE / 2);
    /* The huge page past the first one is wholly the big constant's. */
    uintptr_t second = ((uintptr_t)big + PLUGIN_HUGE_PAGE) & ~(uintptr_t)(PLUGIN_HUGE_PAGE - 1);
    int e = thp_eligible((void *)second);
    if (e < 0)
        cr_skip("this kernel's /proc/self/smaps has no THPeligible field");
    cr_expect_eq(e, 1, "a constant past the plan's first huge page is not THP-eligible");
    /* A constant bigger than a block gets a block of its own. */
    unsigned char *huge = plugin_slab_alloc(&slab, 9 << 20);
    cr_assert_not_null(huge);
    memset(huge, 4, 9 << 20);
    cr_expect_eq(thp_eligible(huge + PLUGIN_HUGE_PAGE), 1);
    cr_expect_eq(first[99999], 2);
    plugin_slab_free(slab);
}

Test(pages, a_small_plans_constants_stay_in_small_pages)
{
    skip_without_huge_pages();
    if (thp_always())
        cr_skip("THP is 'always' here: every mapping is eligible, advised or not");
    plugin_slab *slab = NULL;
    unsigned char *p = plugin_slab_alloc(&slab, 64000);
    cr_assert_not_null(p);
    memset(p, 5, 64000);
    int e = thp_eligible(p);
    if (e < 0)
        cr_skip("this kernel's /proc/self/smaps has no THPeligible field");
    cr_expect_eq(e, 0, "64 kB of constants were advised into a huge page");
    plugin_slab_free(slab);
}
