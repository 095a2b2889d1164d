/* The machine a benchmark ran on (see host.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/common/host.h"

void bench_print_load(const char *when)
{
    double l1 = 0, l5 = 0, l15 = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) != 3)
            l1 = l5 = l15 = 0;
        fclose(f);
    }
    printf("# load average %s: %.2f %.2f %.2f\n", when, l1, l5, l15);
}

/* The value of the first /proc/cpuinfo line starting with `key`. */
static void cpuinfo(const char *key, char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[8192];
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f) != NULL) {
        char *c = strchr(line, ':');
        if (c == NULL || strncmp(line, key, n) != 0)
            continue;
        snprintf(buf, size, "%s", c[1] == ' ' ? c + 2 : c + 1);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

void bench_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
    cpuinfo("model name", buf, size);
}

static bool has_flag(const char *flags, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = strstr(flags, name); s != NULL; s = strstr(s + 1, name))
        if ((s == flags || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\0'))
            return true;
    return false;
}

void bench_print_isa(void)
{
    char flags[8192] = "";
    cpuinfo("flags", flags, sizeof flags);
    printf("# isa: avx2=%s avx512f=%s avx512_bf16=%s amx=%s\n",
           has_flag(flags, "avx2") ? "yes" : "no", has_flag(flags, "avx512f") ? "yes" : "no",
           has_flag(flags, "avx512_bf16") ? "yes" : "no",
           has_flag(flags, "amx_tile") ? "yes" : "no");
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    if (cap == NULL || cap[0] == '\0')
        cap = getenv("DNNL_MAX_CPU_ISA");
    if (cap != NULL && cap[0] != '\0')
        printf("# capped: ONEDNN_MAX_CPU_ISA=%s (the ISA oneDNN dispatches to)\n", cap);
}
