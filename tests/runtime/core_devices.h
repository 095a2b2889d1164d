/* Test helpers over a core's device lists (the public API only) and over
 * which plugin libraries are loaded, shared by the plugin-loading, lazy
 * loading and discovery tests. */
#ifndef RUNNEL_TESTS_RUNTIME_CORE_DEVICES_H
#define RUNNEL_TESTS_RUNTIME_CORE_DEVICES_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runnel/runnel.h"

/* Whether `name` is one of the core's devices. */
static inline bool has_device(const rn_core *core, const char *name)
{
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        if (strcmp(rn_core_device_name(core, i), name) == 0)
            return true;
    return false;
}

/* The reason recorded for a device that failed to load, or NULL. */
static inline const char *failure_of(const rn_core *core, const char *name)
{
    for (size_t i = 0; i < rn_core_failed_device_count(core); i++) {
        const char *n, *reason;
        rn_status st = rn_core_failed_device(core, i, &n, &reason);
        cr_assert_eq(st, RN_OK, "rn_core_failed_device(%zu): %s", i, rn_last_error());
        if (strcmp(n, name) == 0)
            return reason;
    }
    return NULL;
}

/* Whether a shared object called `file` is mapped into this process. */
static inline bool library_mapped(const char *file)
{
    char want[256];
    snprintf(want, sizeof want, "/%s\n", file);
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f, "/proc/self/maps cannot be read");
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        const char *slash = strrchr(line, '/');
        found = slash != NULL && strcmp(slash, want) == 0;
    }
    fclose(f);
    return found;
}

#endif
