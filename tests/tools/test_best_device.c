/* scripts/run-main's device: tools/bench with no -d runs on AUTO's first
 * device by rank (bench_cli_best_device: DEFAULT_DEVICE_PRIORITIES), which on
 * a machine with an NVIDIA GPU must be NVIDIA — a device of DEVICE_TYPE
 * "discrete" that the installed plugins file registers and AUTO's ranking
 * starts. This machine has no GPU, so a stand-in of NVIDIA's kind plays it:
 * SLOWDEV built to answer DEVICE_TYPE "discrete" (libslowdev_discrete.so),
 * named DGPU in a plugins file that stands in for the installed one
 * (RUNNEL_INSTALLED_PLUGINS), listed after an "integrated" SLOWDEV (IGPU),
 * so that neither the order of the file nor the built-in devices' (CPU
 * first) can pick it: only the ranking by DEVICE_TYPE does. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "tests/tools/tool_util.h"

#define DISCRETE_LIB "tests/slowdev/libslowdev_discrete.so"

/* A plugins file in a folder of the test's own, as the installed one: IGPU
 * (SLOWDEV, "integrated") first, then `second` as DGPU (NULL: none). */
static void installed_file(char *path, size_t size, const char *second)
{
    char dir[512], igpu[PATH_MAX], dgpu[PATH_MAX];
    tool_temp_dir(dir, sizeof dir);
    snprintf(path, size, "%s/runnel-plugins.txt", dir);
    cr_assert_not_null(realpath(SLOWDEV_LIB, igpu), "%s is not built", SLOWDEV_LIB);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fprintf(f, "IGPU %s\n", igpu);
    if (second != NULL) {
        cr_assert_not_null(realpath(second, dgpu), "%s is not built", second);
        fprintf(f, "DGPU %s\n", dgpu);
    }
    fclose(f);
}

/* AUTO's order with `file` as the installed plugins file. */
static void default_order(const char *file, char *order, size_t size)
{
    unsetenv("RUNNEL_PLUGINS");
    setenv("RUNNEL_INSTALLED_PLUGINS", file, 1);
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    rn_status st = rn_core_get_property(core, "AUTO", "DEFAULT_DEVICE_PRIORITIES", order, size);
    cr_assert_eq(st, RN_OK, "DEFAULT_DEVICE_PRIORITIES: %s", rn_last_error());
    rn_core_free(core);
}

/* The device bench ran on, with `file` as the installed plugins file and no
 * -d, from its JSON report. */
static char *bench_device(const char *file)
{
    char dir[512], report[600], env[700];
    tool_temp_dir(dir, sizeof dir);
    snprintf(report, sizeof report, "%s/report.json", dir);
    snprintf(env, sizeof env, "RUNNEL_INSTALLED_PLUGINS=%s", file);
    const char *envs[] = {env, NULL};
    const char *args[] = {"-m", ADD_MODEL, "-niter", "3", "-json", report, NULL};
    tool_run r = tool_exec("bench", args, envs);
    cr_assert_eq(r.status, 0, "bench failed (%d): %s\n%s", r.status, r.err, r.out);
    tool_run_free(&r);
    char *text = tool_read_file(report, NULL);
    cr_assert_not_null(text, "no JSON report at %s", report);
    char error[256];
    json_value *root = json_parse(text, error, sizeof error);
    cr_assert_not_null(root, "the JSON report does not parse: %s", error);
    free(text);
    const json_value *device = json_at(root, "settings.device");
    cr_assert(device != NULL && device->type == JSON_STRING, "no settings.device in the report");
    char *name = strdup(device->string);
    json_free(root);
    return name;
}

static void expect_bench_runs_on(const char *file, const char *expected)
{
    char *device = bench_device(file);
    cr_expect_str_eq(device, expected);
    free(device);
}

Test(best_device, auto_ranks_a_discrete_device_of_the_installed_file_above_the_others)
{
    char file[600], order[256];
    installed_file(file, sizeof file, DISCRETE_LIB);
    default_order(file, order, sizeof order);
    /* Discrete, then integrated, then the host devices; HETERO and AUTO
     * are not candidates. */
    cr_expect_str_eq(order, "DGPU,IGPU,CPU,REF");
}

Test(best_device, bench_with_no_device_runs_on_the_discrete_one)
{
    char file[600];
    installed_file(file, sizeof file, DISCRETE_LIB);
    expect_bench_runs_on(file, "DGPU");
}

/* The controls: the pick follows the devices present. With no discrete
 * device the integrated one wins over CPU; a discrete device that cannot
 * start (a driver missing: NVIDIA on a machine without a GPU) is a failed
 * device and not a candidate. */
Test(best_device, without_a_discrete_device_bench_takes_the_next_by_rank)
{
    char file[600];
    installed_file(file, sizeof file, NULL);
    expect_bench_runs_on(file, "IGPU");
    installed_file(file, sizeof file, FAILING_LIB);
    char order[256];
    default_order(file, order, sizeof order);
    cr_expect_str_eq(order, "IGPU,CPU,REF");
    expect_bench_runs_on(file, "IGPU");
}
