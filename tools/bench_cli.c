/* Shared command-line helpers of the tools. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tools/bench_cli.h"

void bench_cli_enter_user_dir(void)
{
    const char *dir = getenv("BUILD_WORKING_DIRECTORY");
    if (dir != NULL && dir[0] != '\0' && chdir(dir) != 0)
        fprintf(stderr, "[ WARNING ] cannot enter %s: %s\n", dir, strerror(errno));
}

bool bench_cli_parse_ll(const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool bench_cli_parse_positive(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v <= 0)
        return false;
    *out = v;
    return true;
}

rn_status bench_cli_add_property(bench_cli_props *props, const char *flag, const char *text)
{
    const char *eq = strchr(text, '=');
    if (eq == NULL || eq == text || eq[1] == '\0')
        return rn_set_error(RN_INVALID_ARG, "%s '%s': expected KEY=VALUE", flag, text);
    if (props->n == BENCH_CLI_MAX_PROPS)
        return rn_set_error(RN_INVALID_ARG, "more than %d %s flags", BENCH_CLI_MAX_PROPS, flag);
    size_t klen = (size_t)(eq - text);
    char(*kv)[256] = props->kv[props->n];
    if (klen >= sizeof kv[0] || strlen(eq + 1) >= sizeof kv[1])
        return rn_set_error(RN_INVALID_ARG, "%s '%s': too long", flag, text);
    memcpy(kv[0], text, klen);
    kv[0][klen] = '\0';
    strcpy(kv[1], eq + 1);
    props->n++;
    return RN_OK;
}

const char *bench_cli_flag(const char *arg)
{
    if (arg[0] != '-' || arg[1] == '\0')
        return NULL;
    arg++;
    if (arg[0] == '-')
        arg++;
    return arg;
}

void bench_cli_command_line(int argc, char **argv, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && used < size; i++) {
        const char *a = argv[i];
        bool quote = a[0] == '\0' || strpbrk(a, " \t\"'") != NULL;
        used +=
            (size_t)snprintf(buf + used, size - used, quote ? "%s'%s'" : "%s%s", i ? " " : "", a);
    }
}

rn_status bench_cli_core(const char *plugins, rn_core **out)
{
    /* -plugins FILE is $RUNNEL_PLUGINS: the Core loads it before it
     * registers the installed plugins, so its entries win over theirs (a
     * file loaded after the Core exists could not replace an installed
     * device of the same name); its failures are listed, not fatal. */
    if (plugins != NULL) {
        if (access(plugins, R_OK) != 0)
            return rn_set_error(RN_IO_ERROR, "plugins file %s: %s", plugins, strerror(errno));
        if (setenv("RUNNEL_PLUGINS", plugins, 1) != 0)
            return rn_set_error(RN_OUT_OF_MEMORY, "plugins file %s: %s", plugins, strerror(errno));
    }
    return rn_core_create(out);
}

/* Whether `name` (a plain device name) is a device that starts. Asked of
 * the Core by name, not by listing: a listing starts every installed
 * plugin, and a run on CPU must not load NVIDIA's libraries. */
static bool has_device(const rn_core *core, const char *name)
{
    const char *version;
    if (strpbrk(name, ".:") != NULL || rn_core_get_version(core, name, &version) != RN_OK) {
        rn_clear_error();
        return false;
    }
    return true;
}

const char *bench_cli_best_device(const rn_core *core)
{
    /* AUTO's ranking (by what each device is: an NVIDIA or other discrete
     * GPU, then CPU above an OpenCL device of CPU type, then REF). */
    static char best[128];
    char order[512];
    if (rn_core_get_property(core, "AUTO", "DEFAULT_DEVICE_PRIORITIES", order, sizeof order) ==
            RN_OK &&
        order[0] != '\0') {
        snprintf(best, sizeof best, "%.*s", (int)strcspn(order, ","), order);
        return best;
    }
    rn_clear_error();
    return rn_core_device_count(core) > 0 ? rn_core_device_name(core, 0) : NULL;
}

rn_status bench_cli_check_device(const rn_core *core, const char *device)
{
    if (has_device(core, device))
        return RN_OK;
    /* "HETERO:D1,D2", "AUTO:D1,D2": the Core routes it (and says why not). */
    char name[256];
    if (strchr(device, ':') != NULL)
        return rn_core_get_property(core, device, "FULL_DEVICE_NAME", name, sizeof name);
    char available[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < rn_core_device_count(core) && used < sizeof available; i++)
        used += (size_t)snprintf(available + used, sizeof available - used, "%s%s", i ? ", " : "",
                                 rn_core_device_name(core, i));
    for (size_t i = 0; i < rn_core_failed_device_count(core); i++) {
        const char *name, *reason;
        if (rn_core_failed_device(core, i, &name, &reason) == RN_OK &&
            strcasecmp(name, device) == 0)
            return rn_set_error(RN_NOT_FOUND,
                                "device '%s' is not available: it failed to load: %s "
                                "(available: %s)",
                                device, reason, available[0] ? available : "none");
    }
    return rn_set_error(RN_NOT_FOUND, "device '%s' is not available (available: %s)", device,
                        available[0] ? available : "none");
}

rn_status bench_cli_read_file(const char *path, void **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t used = 0, cap = 0;
    for (;;) {
        if (used == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return rn_set_error(RN_OUT_OF_MEMORY, "%s: out of memory", path);
            }
            buf = grown;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        used += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return rn_set_error(RN_IO_ERROR, "%s: read error", path);
    }
    *data = buf;
    *size = used;
    return RN_OK;
}

rn_status bench_cli_write_file(const char *path, const void *data, size_t size)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return rn_set_error(RN_INVALID_ARG, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "cannot write %s: %s", path, strerror(errno));
    bool ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return rn_set_error(RN_IO_ERROR, "cannot write %s: %s", path, strerror(e));
    }
    return RN_OK;
}

bool bench_cli_is_blob_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    char magic[8];
    bool blob = fread(magic, 1, 8, f) == 8 && memcmp(magic, "RNNLBLOB", 8) == 0;
    fclose(f);
    return blob;
}

bool bench_cli_blob_device(const void *data, size_t size, char *buf, size_t buf_size)
{
    /* magic (8), format version (u32), device name (u32 length + bytes). */
    const unsigned char *p = data;
    if (size < 16 || memcmp(p, "RNNLBLOB", 8) != 0)
        return false;
    uint32_t len =
        (uint32_t)p[12] | (uint32_t)p[13] << 8 | (uint32_t)p[14] << 16 | (uint32_t)p[15] << 24;
    if (len == 0 || len >= buf_size || (size_t)len > size - 16)
        return false;
    memcpy(buf, p + 16, len);
    buf[len] = '\0';
    return true;
}
