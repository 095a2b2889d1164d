/* Device discovery: a core created with no RUNNEL_PLUGINS finds the in-tree
 * plugins in the plugins file installed beside libruntime.so
 * (bazel-bin/runtime/runnel-plugins.txt here), each loaded at its device's
 * first use; one that cannot start is a
 * failed device with its reason; RUNNEL_PLUGINS's entries win; AUTO ranks
 * the devices by their DEVICE_TYPE. The test suite turns discovery off
 * (.bazelrc: RUNNEL_INSTALLED_PLUGINS=0); these cases turn it on. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tests/runtime/core_devices.h"
#include "tests/gpu/pocl_lsan.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* A core as a user gets it: no RUNNEL_PLUGINS, discovery on. */
static rn_core *discovering_core(void)
{
    unsetenv("RUNNEL_PLUGINS");
    unsetenv("RUNNEL_INSTALLED_PLUGINS");
    rn_core *core;
    OK(rn_core_create(&core));
    return core;
}

/* Skips, saying why, where the machine has no OpenCL device for GPU; any
 * other reason for GPU not to start fails. */
static void need_gpu(rn_core *core)
{
    if (has_device(core, "GPU"))
        return;
    const char *why = failure_of(core, "GPU");
    cr_assert_not_null(why, "GPU is neither a device nor a failed device: dropped silently");
    char reason[512];
    snprintf(reason, sizeof reason, "%s", why);
    rn_core_free(core);
    if (strstr(reason, "no OpenCL platform") != NULL ||
        strstr(reason, "have no GPU, CPU or accelerator device") != NULL)
        cr_skip_test("no OpenCL device here: %s", reason);
    cr_assert_fail("GPU failed to start, and not for want of an OpenCL device: %s", reason);
}

Test(discovery, a_core_lists_gpu_and_nvidia_with_no_environment_variable)
{
    rn_core *core = discovering_core();
    /* GPU: PoCL is installed on the machines that run this suite. */
    need_gpu(core);
    char type[32];
    OK(rn_core_get_property(core, "GPU", "DEVICE_TYPE", type, sizeof type));
    /* NVIDIA: a device where a driver and a GPU are present; otherwise a
     * failed device that says why, never a silent drop. */
    if (!has_device(core, "NVIDIA")) {
        const char *why = failure_of(core, "NVIDIA");
        cr_assert_not_null(why, "NVIDIA is neither a device nor a failed device");
        cr_assert(strstr(why, "device NVIDIA cannot start") != NULL, "%s", why);
        cr_assert(strstr(why, "CUDA") != NULL, "the CUDA error is named: %s", why);
    }
    /* The same library loaded again under its name is the device already
     * there, not a second one nor an error. */
    size_t n = rn_core_device_count(core);
    OK(rn_core_load_plugin(core, "GPU", "plugins/gpu/libgpu.so"));
    cr_assert_eq(rn_core_device_count(core), n);
    rn_core_free(core);
}

Test(discovery, a_cpu_compile_loads_neither_gpu_nor_nvidia)
{
    rn_core *core = discovering_core();
    rn_model *m;
    rn_compiled_model *cm;
    OK(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &m));
    OK(rn_core_compile_model(core, m, "CPU", NULL, 0, &cm));
    rn_compiled_model_free(cm);
    rn_model_free(m);
    cr_assert(!library_mapped("libgpu.so"), "a CPU compile loaded the GPU plugin");
    cr_assert(!library_mapped("libnvidia.so"), "a CPU compile loaded the NVIDIA plugin");
    /* GPU's first use loads its plugin: it is a device then, or a failed
     * device with its reason. */
    char type[32];
    if (rn_core_get_property(core, "GPU", "DEVICE_TYPE", type, sizeof type) == RN_OK)
        cr_assert(library_mapped("libgpu.so"), "GPU answered without its plugin loaded");
    else
        cr_assert_not_null(failure_of(core, "GPU"), "GPU failed with no reason: %s",
                           rn_last_error());
    cr_assert(!library_mapped("libnvidia.so"), "GPU's first use loaded the NVIDIA plugin");
    rn_core_free(core);
}

Test(discovery, runnel_plugins_entries_win_and_extend)
{
    char path[] = "/tmp/runnel_discovery_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "GPU /nonexistent/libgpu.so\nTESTDEV tests/plugins/libtestdev.so\n");
    fclose(f);
    unsetenv("RUNNEL_INSTALLED_PLUGINS");
    setenv("RUNNEL_PLUGINS", path, 1);
    rn_core *core;
    OK(rn_core_create(&core));
    unsetenv("RUNNEL_PLUGINS");
    unlink(path);
    /* RUNNEL_PLUGINS's GPU failed: the installed GPU does not replace it. */
    cr_assert(!has_device(core, "GPU"));
    const char *why = failure_of(core, "GPU");
    cr_assert(why != NULL && strstr(why, "/nonexistent/libgpu.so") != NULL, "%s",
              why ? why : "(none)");
    /* Its other entries come in beside the installed ones. */
    cr_assert(has_device(core, "TESTDEV"));
    cr_assert(has_device(core, "NVIDIA") || failure_of(core, "NVIDIA") != NULL);
    rn_core_free(core);
}

/* The installed file lists NVIDIA before GPU: on an NVIDIA machine with
 * NVIDIA's OpenCL driver both are discrete, and AUTO (so tools/bench's best
 * device, scripts/run-main's) ranks a tie by registration
 * (tests/auto:test_rank). */
Test(discovery, the_installed_file_lists_nvidia_before_gpu)
{
    FILE *f = fopen("runtime/runnel-plugins.txt", "r");
    cr_assert_not_null(f, "runtime/runnel-plugins.txt is not beside libruntime.so");
    char line[512];
    int nvidia = -1, gpu = -1;
    for (int i = 0; fgets(line, sizeof line, f) != NULL; i++) {
        if (strncmp(line, "NVIDIA ", 7) == 0 && nvidia < 0)
            nvidia = i;
        if (strncmp(line, "GPU ", 4) == 0 && gpu < 0)
            gpu = i;
    }
    fclose(f);
    cr_assert(nvidia >= 0 && gpu >= 0, "NVIDIA at line %d, GPU at line %d", nvidia, gpu);
    cr_expect_lt(nvidia, gpu, "GPU (line %d) comes before NVIDIA (line %d)", gpu, nvidia);
}

Test(discovery, is_off_with_runnel_installed_plugins_0)
{
    unsetenv("RUNNEL_PLUGINS");
    setenv("RUNNEL_INSTALLED_PLUGINS", "0", 1);
    rn_core *core;
    OK(rn_core_create(&core));
    cr_assert(!has_device(core, "GPU") && failure_of(core, "GPU") == NULL);
    cr_assert(!has_device(core, "NVIDIA") && failure_of(core, "NVIDIA") == NULL);
    rn_core_free(core);
}

/* Position of `name` in the comma-separated `list`, or -1. */
static int position(const char *list, const char *name)
{
    int i = 0;
    for (const char *p = list; *p != '\0'; i++) {
        size_t len = strcspn(p, ",");
        if (len == strlen(name) && strncmp(p, name, len) == 0)
            return i;
        p += len + (p[len] == ',');
    }
    return -1;
}

Test(discovery, auto_ranks_an_opencl_device_of_cpu_type_below_cpu)
{
    rn_core *core = discovering_core();
    need_gpu(core);
    char order[512];
    OK(rn_core_get_property(core, "AUTO", "DEFAULT_DEVICE_PRIORITIES", order, sizeof order));
    int cpu = position(order, "CPU"), ref = position(order, "REF");
    cr_assert(cpu >= 0 && ref > cpu, "%s", order);
    /* Every device of the order is placed by what it is. */
    int checked = 0;
    for (size_t i = 0; i < rn_core_device_count(core); i++) {
        const char *name = rn_core_device_name(core, i);
        char type[32];
        if (strcmp(name, "CPU") == 0 || strcmp(name, "REF") == 0 ||
            rn_core_get_property(core, name, "DEVICE_TYPE", type, sizeof type) != RN_OK)
            continue;
        int at = position(order, name);
        if (strcmp(type, "cpu") == 0)
            cr_assert(at > cpu && at < ref, "%s (DEVICE_TYPE cpu) in %s", name, order);
        else
            cr_assert(at >= 0 && at < cpu, "%s (DEVICE_TYPE %s) in %s", name, type, order);
        checked++;
    }
    cr_assert_geq(checked, 1, "GPU's DEVICE_TYPE was not read");
    /* AUTO with no list compiles on its first (no startup fallback, so the
     * device that runs is the chosen one). */
    rn_model *m;
    rn_compiled_model *cm;
    OK(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &m));
    rn_property props[] = {{"PERFORMANCE_HINT", "LATENCY"}, {"ENABLE_STARTUP_FALLBACK", "NO"}};
    OK(rn_core_compile_model(core, m, "AUTO", props, 2, &cm));
    char ran[128];
    OK(rn_compiled_model_get_property(cm, "EXECUTION_DEVICES", ran, sizeof ran));
    cr_assert_eq(position(order, ran), 0, "AUTO ran on %s; its order is %s", ran, order);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    rn_core_free(core);
}
