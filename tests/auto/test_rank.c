/* AUTO's order of devices with no list (auto_rank_devices), on the devices
 * as the machines runnel meets describe themselves: their names, their
 * DEVICE_TYPE (plugins/gpu/opencl.c reads it from OpenCL; NVIDIA's
 * descriptor says "discrete"; CPU and REF answer none that AUTO reads) and
 * the order they registered in (built-ins first, then the installed
 * plugins file: NVIDIA before GPU). tools/bench's best device, and so
 * scripts/run-main's, is this order's first (tools/bench_cli.c). A device
 * that failed to start is not in the list at all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "plugins/auto/auto.h"

/* The order as "A,B,C". */
static const char *ranked(int n, const char *const *names, const char *const *types)
{
    static char out[256];
    int order[16];
    cr_assert_leq(n, 16);
    auto_rank_devices(n, names, types, order);
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < n; k++)
        used +=
            (size_t)snprintf(out + used, sizeof out - used, "%s%s", k ? "," : "", names[order[k]]);
    return out;
}

/* A machine with an NVIDIA GPU, cuDNN and NVIDIA's OpenCL driver: NVIDIA
 * and GPU are both discrete; NVIDIA registered first. */
Test(auto_rank, an_nvidia_machine_ranks_nvidia_first_then_its_opencl_gpu_then_cpu)
{
    const char *names[] = {"CPU", "REF", "NVIDIA", "GPU"};
    const char *types[] = {NULL, NULL, "discrete", "discrete"};
    cr_expect_str_eq(ranked(4, names, types), "NVIDIA,GPU,CPU,REF");
}

/* The same machine with no OpenCL driver for its GPU but PoCL installed:
 * GPU is PoCL's CPU-type device, below CPU. */
Test(auto_rank, nvidia_stays_first_when_gpu_is_pocls_cpu_device)
{
    const char *names[] = {"CPU", "REF", "NVIDIA", "GPU"};
    const char *types[] = {NULL, NULL, "discrete", "cpu"};
    cr_expect_str_eq(ranked(4, names, types), "NVIDIA,CPU,GPU,REF");
}

/* This build machine: NVIDIA failed to start (not listed), GPU is PoCL. */
Test(auto_rank, without_nvidia_an_opencl_cpu_device_ranks_below_cpu)
{
    const char *names[] = {"CPU", "REF", "GPU"};
    const char *types[] = {NULL, NULL, "cpu"};
    cr_expect_str_eq(ranked(3, names, types), "CPU,GPU,REF");
}

/* An integrated GPU or an accelerator above CPU; a device that answers no
 * DEVICE_TYPE (a plugin of someone else's) last. */
Test(auto_rank, integrated_above_cpu_and_an_unknown_kind_last)
{
    const char *names[] = {"CPU", "REF", "SLOWDEV", "GPU", "NPU"};
    const char *types[] = {NULL, NULL, NULL, "integrated", "accelerator"};
    cr_expect_str_eq(ranked(5, names, types), "GPU,NPU,CPU,REF,SLOWDEV");
}
