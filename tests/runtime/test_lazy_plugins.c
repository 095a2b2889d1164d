/* The installed plugins file is read when a core is created, but a plugin's
 * library is loaded (dlopen) and its plugin created only when its device is
 * first used (docs/plugins.md, "Device discovery"). Here the file is one the
 * test writes (RUNNEL_INSTALLED_PLUGINS=PATH) naming test plugins, and what
 * is loaded is read from /proc/self/maps. */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tests/runtime/core_devices.h"

#define PLUGINS  "tests/plugins/"
#define ADD_ONNX "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* A core whose installed plugins are TESTDEV (a working device) and
 * FAILING (one whose create fails), by absolute paths. */
static rn_core *core_with_installed_plugins(void)
{
    char good[PATH_MAX], failing[PATH_MAX], installed[] = "/tmp/runnel_installed_XXXXXX";
    cr_assert_not_null(realpath(PLUGINS "libtestdev.so", good));
    cr_assert_not_null(realpath(PLUGINS "libtestdev_failing.so", failing));
    int fd = mkstemp(installed);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# written by test_lazy_plugins\nTESTDEV %s\nFAILING %s\n", good, failing);
    fclose(f);
    unsetenv("RUNNEL_PLUGINS");
    setenv("RUNNEL_INSTALLED_PLUGINS", installed, 1);
    rn_core *core;
    OK(rn_core_create(&core));
    unlink(installed);
    setenv("RUNNEL_INSTALLED_PLUGINS", "0", 1);
    return core;
}

/* The number of failure records of `name`. */
static int failures_of(const rn_core *core, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < rn_core_failed_device_count(core); i++) {
        const char *dev, *reason;
        OK(rn_core_failed_device(core, i, &dev, &reason));
        n += strcmp(dev, name) == 0;
    }
    return n;
}

Test(lazy_plugins, a_cpu_compile_loads_no_installed_plugin)
{
    rn_core *core = core_with_installed_plugins();
    cr_assert(!library_mapped("libtestdev.so"), "TESTDEV was loaded by rn_core_create");
    cr_assert(!library_mapped("libtestdev_failing.so"), "FAILING was loaded by rn_core_create");
    rn_model *m;
    rn_compiled_model *cm;
    OK(rn_core_read_model(core, ADD_ONNX, &m));
    OK(rn_core_compile_model(core, m, "CPU", NULL, 0, &cm));
    char value[64];
    OK(rn_core_get_property(core, "CPU", "FULL_DEVICE_NAME", value, sizeof value));
    cr_assert(!library_mapped("libtestdev.so"), "a CPU compile loaded TESTDEV");
    cr_assert(!library_mapped("libtestdev_failing.so"), "a CPU compile loaded FAILING");
    rn_compiled_model_free(cm);
    /* First use of TESTDEV loads it, and it alone. */
    const char *version;
    OK(rn_core_get_version(core, "TESTDEV", &version));
    cr_assert_str_eq(version, "1.2.3-testdev");
    cr_assert(library_mapped("libtestdev.so"), "TESTDEV's first use did not load it");
    cr_assert(!library_mapped("libtestdev_failing.so"), "TESTDEV's first use loaded FAILING");
    OK(rn_core_compile_model(core, m, "TESTDEV", NULL, 0, &cm));
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}

Test(lazy_plugins, a_device_that_cannot_start_fails_at_first_use_with_its_reason)
{
    rn_core *core = core_with_installed_plugins();
    rn_model *m;
    rn_compiled_model *cm;
    OK(rn_core_read_model(core, ADD_ONNX, &m));
    cr_assert_eq(rn_core_compile_model(core, m, "FAILING", NULL, 0, &cm), RN_NOT_FOUND);
    const char *why = rn_last_error();
    cr_assert(strstr(why, "device 'FAILING' is not available") != NULL, "%s", why);
    cr_assert(strstr(why, "no TESTDEV accelerator is present") != NULL, "the reason: %s", why);
    /* Its library was loaded to try, and let go. */
    cr_assert(!library_mapped("libtestdev_failing.so"), "FAILING's library stays loaded");
    cr_assert(!library_mapped("libtestdev.so"), "FAILING's first use loaded TESTDEV");
    /* Recorded once, however often it is asked for. */
    cr_assert_eq(rn_core_get_version(core, "FAILING", &(const char *){NULL}), RN_NOT_FOUND);
    cr_assert_eq(failures_of(core, "FAILING"), 1);
    const char *reason = failure_of(core, "FAILING");
    cr_assert(reason != NULL && strstr(reason, "device FAILING cannot start") != NULL, "%s",
              reason ? reason : "(none)");
    rn_model_free(m);
    rn_core_free(core);
}

Test(lazy_plugins, listing_devices_starts_every_installed_plugin)
{
    rn_core *core = core_with_installed_plugins();
    cr_assert(has_device(core, "TESTDEV"));
    cr_assert(!has_device(core, "FAILING"));
    cr_assert(library_mapped("libtestdev.so"), "a listing that names TESTDEV did not load it");
    cr_assert_not_null(failure_of(core, "FAILING"), "the listing did not try FAILING");
    /* The listing is stable: built-in devices first, then the installed
     * ones in the file's order; indexes past the end are NULL. */
    size_t n = rn_core_device_count(core);
    cr_assert_str_eq(rn_core_device_name(core, n - 1), "TESTDEV");
    cr_assert_null(rn_core_device_name(core, n));
    /* The installed library loaded again under its name is the device
     * already there. */
    OK(rn_core_load_plugin(core, "TESTDEV", PLUGINS "libtestdev.so"));
    cr_assert_eq(rn_core_device_count(core), n);
    rn_core_free(core);
}

Test(lazy_plugins, loading_the_installed_library_again_before_first_use_is_the_same_device)
{
    rn_core *core = core_with_installed_plugins();
    OK(rn_core_load_plugin(core, NULL, PLUGINS "libtestdev.so"));
    size_t n = rn_core_device_count(core);
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        seen += strcmp(rn_core_device_name(core, i), "TESTDEV") == 0;
    cr_assert_eq(seen, 1, "TESTDEV is listed %d times", seen);
    rn_core_free(core);
}

/* Threads that all use the installed devices for the first time at once. */
enum { N_THREADS = 6 };

typedef struct first_use {
    rn_core *core;
    int index;
    rn_status testdev, failing;
    char type[64];
} first_use;

static void *use_devices(void *arg)
{
    first_use *u = arg;
    if (u->index == 0) { /* one thread lists, the others use by name */
        u->testdev = rn_core_device_count(u->core) > 0 ? RN_OK : RN_INTERNAL;
        u->failing = rn_core_failed_device_count(u->core) > 0 ? RN_NOT_FOUND : RN_OK;
        snprintf(u->type, sizeof u->type, "TESTDEV");
        return NULL;
    }
    const char *version;
    u->testdev = rn_core_get_version(u->core, "TESTDEV", &version);
    if (u->testdev == RN_OK)
        snprintf(u->type, sizeof u->type, "%s", version);
    u->failing = rn_core_get_version(u->core, "FAILING", &version);
    return NULL;
}

Test(lazy_plugins, first_use_from_several_threads_starts_each_device_once)
{
    rn_core *core = core_with_installed_plugins();
    pthread_t threads[N_THREADS];
    first_use uses[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        uses[i] = (first_use){.core = core, .index = i};
        cr_assert_eq(pthread_create(&threads[i], NULL, use_devices, &uses[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_eq(uses[i].testdev, RN_OK, "thread %d: TESTDEV", i);
        cr_assert_eq(uses[i].failing, RN_NOT_FOUND, "thread %d: FAILING", i);
        if (i > 0)
            cr_assert_str_eq(uses[i].type, "1.2.3-testdev");
    }
    int seen = 0;
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        seen += strcmp(rn_core_device_name(core, i), "TESTDEV") == 0;
    cr_assert_eq(seen, 1, "TESTDEV is listed %d times", seen);
    cr_assert_eq(failures_of(core, "FAILING"), 1, "FAILING was tried more than once");
    rn_core_free(core);
}
