/* query: lists the devices runnel can use, every property each supports
 * with its value, read-only (RO) or read-write (RW), the devices whose
 * plugin failed to load and why, and the versions. Uses the public API
 * only.
 *
 *   query [-d DEVICE] [-json [PATH]] [-plugins FILE]
 *
 * RO or RW: a device's SUPPORTED_PROPERTIES lists keys without saying
 * which can be set, so query probes: a key is RW when the device accepts it
 * back with its current value. Probing changes nothing a user sees (query
 * owns its core), and it works for dynamic plugins too.
 *
 * Versions: the runtime's (RN_VERSION_STRING) and each plugin's own
 * (rn_core_get_version).
 *
 * Exit status: 0 on success, 1 when a step fails, 2 for bad flags. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runnel/runnel.h"
#include "tools/bench_cli.h"
#include "tools/bench_json.h"

static const char usage_text[] =
    "usage: query [-d DEVICE] [-json [PATH]] [-plugins FILE]\n"
    "\n"
    "  -d DEVICE      only this device\n"
    "  -json [PATH]   JSON instead of text, to PATH or stdout\n"
    "  -plugins FILE  load device plugins from FILE (also: $RUNNEL_PLUGINS)\n";

typedef struct property {
    char key[128];
    char *value; /* NULL when reading it failed */
    char error[256];
    int writable;
} property;

typedef struct device_info {
    const char *name;
    const char *version;
    property *props;
    size_t n_props;
    char error[512]; /* why SUPPORTED_PROPERTIES could not be read ("": it was) */
} device_info;

/* Reads a device property of any length (NULL device: the core's). */
static rn_status get_property(const rn_core *core, const char *device, const char *key, char **out)
{
    for (size_t size = 4096; size <= ((size_t)1 << 24); size *= 16) {
        char *buf = malloc(size);
        if (buf == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
        rn_status st = rn_core_get_property(core, device, key, buf, size);
        if (st == RN_OK) {
            *out = buf;
            return RN_OK;
        }
        free(buf);
        if (st != RN_INVALID_ARG)
            return st;
    }
    return rn_set_error(RN_INVALID_ARG, "property %s: the value is too long", key);
}

static void free_device(device_info *d)
{
    for (size_t i = 0; i < d->n_props; i++)
        free(d->props[i].value);
    free(d->props);
}

/* OpenVINO's common keys, probed on a device that does not answer
 * SUPPORTED_PROPERTIES. */
static const char common_keys[] =
    "AVAILABLE_DEVICES FULL_DEVICE_NAME DEVICE_ARCHITECTURE DEVICE_TYPE OPTIMIZATION_CAPABILITIES "
    "RANGE_FOR_ASYNC_INFER_REQUESTS RANGE_FOR_STREAMS EXECUTION_DEVICES CACHING_PROPERTIES "
    "DEVICE_ID ENABLE_PROFILING ENABLE_TRACE PERFORMANCE_HINT PERFORMANCE_HINT_NUM_REQUESTS "
    "NUM_STREAMS INFERENCE_NUM_THREADS INFERENCE_PRECISION_HINT EXECUTION_MODE_HINT "
    "MODEL_PRIORITY LOG_LEVEL DISABLE_TRANSFORMATIONS EXCLUSIVE_ASYNC_REQUESTS CACHE_DIR";

/* Reads SUPPORTED_PROPERTIES (or, when the device does not answer it,
 * probes the common keys), every value, then which are RW. */
static rn_status describe(rn_core *core, const char *device, device_info *d)
{
    memset(d, 0, sizeof *d);
    d->name = device;
    rn_status st = rn_core_get_version(core, device, &d->version);
    if (st != RN_OK)
        return st;
    char *keys;
    bool probing = false;
    if (get_property(core, device, "SUPPORTED_PROPERTIES", &keys) != RN_OK) {
        snprintf(d->error, sizeof d->error, "%s", rn_last_error());
        rn_clear_error();
        if ((keys = strdup(common_keys)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
        probing = true;
    }
    size_t cap = 16;
    d->props = calloc(cap, sizeof *d->props);
    if (d->props == NULL) {
        free(keys);
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    }
    /* Keys are separated by spaces or commas. */
    for (char *save = NULL, *k = strtok_r(keys, " ,\t\n", &save); k != NULL;
         k = strtok_r(NULL, " ,\t\n", &save)) {
        if (d->n_props == cap) {
            property *grown = realloc(d->props, 2 * cap * sizeof *grown);
            if (grown == NULL) {
                free(keys);
                return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
            }
            memset(grown + cap, 0, cap * sizeof *grown);
            d->props = grown;
            cap *= 2;
        }
        property *p = &d->props[d->n_props++];
        snprintf(p->key, sizeof p->key, "%s", k);
    }
    free(keys);
    for (size_t i = 0; i < d->n_props; i++) {
        property *p = &d->props[i];
        if (get_property(core, device, p->key, &p->value) != RN_OK)
            snprintf(p->error, sizeof p->error, "%s", rn_last_error());
    }
    if (probing) { /* keep the keys the device answered */
        size_t kept = 0;
        for (size_t i = 0; i < d->n_props; i++)
            if (d->props[i].value != NULL)
                d->props[kept++] = d->props[i];
        d->n_props = kept;
    }
    /* Probe after every value is read: setting one key may change what
     * another reads back. */
    for (size_t i = 0; i < d->n_props; i++) {
        property *p = &d->props[i];
        if (p->value == NULL)
            continue;
        rn_property same = {p->key, p->value};
        p->writable = rn_core_set_property(core, device, &same, 1) == RN_OK;
    }
    rn_clear_error();
    return RN_OK;
}

static void print_text(const char *version, const char *cache_dir, const device_info *devices,
                       size_t n, const rn_core *core, const char *only)
{
    printf("runnel %s\n\nCore properties\n    CACHE_DIR (RW): %s\n", version, cache_dir);
    printf("\nAvailable devices\n");
    for (size_t i = 0; i < n; i++) {
        const device_info *d = &devices[i];
        printf("%s\n    version: %s\n", d->name, d->version);
        if (d->error[0])
            printf("    (no SUPPORTED_PROPERTIES: %s; the common keys it answers follow)\n",
                   d->error);
        for (size_t k = 0; k < d->n_props; k++) {
            const property *p = &d->props[k];
            if (p->value != NULL)
                printf("    %s (%s): %s\n", p->key, p->writable ? "RW" : "RO", p->value);
            else
                printf("    %s: not readable: %s\n", p->key, p->error);
        }
    }
    if (n == 0)
        printf("    (none)\n");
    size_t failed = rn_core_failed_device_count(core);
    printf("\nDevices that failed to load\n");
    size_t shown = 0;
    for (size_t i = 0; i < failed; i++) {
        const char *name, *reason;
        if (rn_core_failed_device(core, i, &name, &reason) != RN_OK)
            continue;
        if (only != NULL && strcmp(only, name) != 0)
            continue;
        printf("    %s: %s\n", name, reason);
        shown++;
    }
    if (shown == 0)
        printf("    (none)\n");
}

static void print_json(FILE *f, const char *version, const char *cache_dir,
                       const device_info *devices, size_t n, const rn_core *core, const char *only)
{
    bench_json j;
    bench_json_init(&j, f);
    bench_json_begin_object(&j, NULL);
    bench_json_string(&j, "tool", "query");
    bench_json_string(&j, "runnel_version", version);
    bench_json_begin_array(&j, "core_properties");
    bench_json_begin_object(&j, NULL);
    bench_json_string(&j, "key", "CACHE_DIR");
    bench_json_string(&j, "value", cache_dir);
    bench_json_string(&j, "access", "RW");
    bench_json_end_object(&j);
    bench_json_end_array(&j);
    bench_json_begin_array(&j, "devices");
    for (size_t i = 0; i < n; i++) {
        const device_info *d = &devices[i];
        bench_json_begin_object(&j, NULL);
        bench_json_string(&j, "name", d->name);
        bench_json_string(&j, "version", d->version);
        bench_json_bool(&j, "supported_properties_reported", d->error[0] == '\0');
        if (d->error[0])
            bench_json_string(&j, "supported_properties_error", d->error);
        bench_json_begin_array(&j, "properties");
        for (size_t k = 0; k < d->n_props; k++) {
            const property *p = &d->props[k];
            bench_json_begin_object(&j, NULL);
            bench_json_string(&j, "key", p->key);
            bench_json_string(&j, "value", p->value);
            if (p->value != NULL)
                bench_json_string(&j, "access", p->writable ? "RW" : "RO");
            else
                bench_json_string(&j, "error", p->error);
            bench_json_end_object(&j);
        }
        bench_json_end_array(&j);
        bench_json_end_object(&j);
    }
    bench_json_end_array(&j);
    bench_json_begin_array(&j, "failed_devices");
    for (size_t i = 0; i < rn_core_failed_device_count(core); i++) {
        const char *name, *reason;
        if (rn_core_failed_device(core, i, &name, &reason) != RN_OK)
            continue;
        if (only != NULL && strcmp(only, name) != 0)
            continue;
        bench_json_begin_object(&j, NULL);
        bench_json_string(&j, "name", name);
        bench_json_string(&j, "reason", reason);
        bench_json_end_object(&j);
    }
    bench_json_end_array(&j);
    bench_json_end_object(&j);
}

int main(int argc, char **argv)
{
    const char *only = NULL, *plugins = NULL, *json_path = NULL;
    bool json = false;
    bench_cli_enter_user_dir();
    for (int i = 1; i < argc; i++) {
        const char *flag = bench_cli_flag(argv[i]);
        if (flag != NULL && (strcmp(flag, "h") == 0 || strcmp(flag, "help") == 0)) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (flag != NULL && strcmp(flag, "json") == 0) {
            json = true;
            if (i + 1 < argc && argv[i + 1][0] != '-')
                json_path = argv[++i];
        } else if (flag != NULL && (strcmp(flag, "d") == 0 || strcmp(flag, "plugins") == 0)) {
            if (i + 1 >= argc) {
                fprintf(stderr, "[ ERROR ] flag '%s' needs a value (query -h lists the flags)\n",
                        argv[i]);
                return 2;
            }
            *(strcmp(flag, "d") == 0 ? &only : &plugins) = argv[++i];
        } else {
            fprintf(stderr, "[ ERROR ] %s '%s' (query -h lists the flags)\n",
                    flag ? "unknown flag" : "unexpected argument", argv[i]);
            return 2;
        }
    }
    rn_core *core;
    rn_status st = bench_cli_core(plugins, &core);
    if (st != RN_OK) {
        fprintf(stderr, "[ ERROR ] %s\n", rn_last_error());
        return 1;
    }
    if (only != NULL && (st = bench_cli_check_device(core, only)) != RN_OK) {
        fprintf(stderr, "[ ERROR ] %s\n", rn_last_error());
        rn_core_free(core);
        return 1;
    }
    const char *version = RN_VERSION_STRING;
    char cache_dir[4096] = "";
    if (rn_core_get_property(core, NULL, "CACHE_DIR", cache_dir, sizeof cache_dir) != RN_OK)
        cache_dir[0] = '\0';
    size_t n = only != NULL ? 1 : rn_core_device_count(core);
    device_info *devices = calloc(n + 1, sizeof *devices);
    int rc = 1;
    if (devices == NULL) {
        fprintf(stderr, "[ ERROR ] out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = only;
        for (size_t k = 0; only != NULL && k < rn_core_device_count(core); k++)
            if (strcasecmp(rn_core_device_name(core, k), only) == 0)
                name = rn_core_device_name(core, k);
        if (only == NULL)
            name = rn_core_device_name(core, i);
        if ((st = describe(core, name, &devices[i])) != RN_OK) {
            fprintf(stderr, "[ ERROR ] device %s: %s\n", name, rn_last_error());
            goto done;
        }
    }
    if (json && json_path != NULL) {
        FILE *f = fopen(json_path, "w");
        if (f == NULL) {
            fprintf(stderr, "[ ERROR ] cannot write %s: %s\n", json_path, strerror(errno));
            goto done;
        }
        print_json(f, version, cache_dir, devices, n, core, only);
        if (fclose(f) != 0) {
            fprintf(stderr, "[ ERROR ] cannot write %s: %s\n", json_path, strerror(errno));
            goto done;
        }
    } else if (json) {
        print_json(stdout, version, cache_dir, devices, n, core, only);
    } else {
        print_text(version, cache_dir, devices, n, core, only);
    }
    rc = 0;
done:
    for (size_t i = 0; devices != NULL && i < n; i++)
        free_device(&devices[i]);
    free(devices);
    rn_core_free(core);
    return rc;
}
