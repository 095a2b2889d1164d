/* What the CPU device says about itself beyond the shared properties: the
 * processor and the ISA oneDNN dispatches to (FULL_DEVICE_NAME, CPU_ISA),
 * the precisions it runs natively (OPTIMIZATION_CAPABILITIES: BF16 only
 * with avx512_bf16 or AMX, as OpenVINO's CPU plugin says), and the pinned
 * threads (bind.c). */
#include <stdio.h>
#include <string.h>

#include "plugins/api/properties.h"
#include "plugins/cpu/bind.h"
#include "plugins/cpu/cpu.h"

const char *const cpu_ro_keys[] = {"CPU_ISA", NULL};

/* /proc/cpuinfo's "model name" ("AMD EPYC 7B13"), or "unknown CPU". */
static void processor_name(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *v = strchr(line, ':');
        if (v == NULL)
            break;
        v += strspn(v + 1, " \t") + 1;
        snprintf(buf, size, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}

rn_status cpu_get_property(const char *key, char *buf, size_t size)
{
    char text[512];
    if (strcmp(key, "CPU_ISA") == 0)
        return plugin_property_string(key, cpu_isa_name(), buf, size);
    if (strcmp(key, "OPTIMIZATION_CAPABILITIES") == 0)
        return plugin_property_string(
            key, cpu_has_bf16() ? "FP32 BF16 INT8 EXPORT_IMPORT" : "FP32 INT8 EXPORT_IMPORT", buf,
            size);
    if (strcmp(key, "FULL_DEVICE_NAME") == 0) {
        char cpu[256];
        processor_name(cpu, sizeof cpu);
        const dnnl_version_t *v = dnnl_version();
        snprintf(text, sizeof text, "runnel CPU device (oneDNN %d.%d.%d, %s) on %s", v->major,
                 v->minor, v->patch, cpu_isa_name(), cpu);
        return plugin_property_string(key, text, buf, size);
    }
    return cpu_bind_get_property(key, buf, size);
}
