/* The GPU's export blobs: the generic blob (plugins/api/export.h) with the
 * record of runnel's program binary (program_cache.c) as one more header
 * entry, GPU_PROGRAM_RECORD (hexadecimal: header values are strings), so
 * that an import on the same device and driver skips building from source.
 * The blob stays a generic blob, sealed by its checksum and readable by
 * every device's checks; a blob without the entry (an older export) imports
 * as before. An intact record of another device or driver is ignored and
 * the program built from source. Where the driver gives no binary the
 * export has no entry. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/export.h"
#include "plugins/gpu/export.h"

#define RECORD_KEY "GPU_PROGRAM_RECORD"

rn_status gpu_export_blob(gpu_device *d, const plugin_plan *plan, const char *device,
                          const char *arch, const plugin_properties *props, void **data,
                          size_t *size)
{
    uint8_t *record = NULL;
    size_t n = 0;
    if (gpu_device_program_record(d, &record, &n) != RN_OK) {
        rn_clear_error();
        return plugin_export(plan, device, arch, props, data, size);
    }
    char *hex = malloc(2 * n + 1);
    if (hex == NULL) {
        free(record);
        return rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory");
    }
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[record[i] >> 4];
        hex[2 * i + 1] = digits[record[i] & 15];
    }
    hex[2 * n] = '\0';
    free(record);
    rn_status st = plugin_export_extra(plan, device, arch, props, RECORD_KEY, hex, data, size);
    free(hex);
    return st;
}

static int nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

rn_status gpu_import_blob(const void *data, size_t size, const char *device, const char *arch,
                          const rn_property *overrides, size_t n_overrides,
                          plugin_properties *props, graph **g, uint8_t **record,
                          size_t *record_size)
{
    char *hex = NULL;
    *record = NULL;
    *record_size = 0;
    rn_status st = plugin_import_extra(data, size, device, arch, overrides, n_overrides, props, g,
                                       RECORD_KEY, &hex);
    if (st != RN_OK || hex == NULL)
        return st;
    size_t len = strlen(hex);
    uint8_t *r = len % 2 == 0 && len > 0 ? malloc(len / 2) : NULL;
    for (size_t i = 0; r != NULL && i < len / 2; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(r);
            r = NULL;
        } else {
            r[i] = (uint8_t)(hi << 4 | lo);
        }
    }
    free(hex);
    /* A malformed entry in a sealed blob: the blob is not one of ours. */
    if (r == NULL || (st = gpu_program_record_check(r, len / 2)) != RN_OK) {
        if (r == NULL)
            st = rn_set_error(RN_PARSE_ERROR, "the header entry %s is not hexadecimal bytes",
                              RECORD_KEY);
        free(r);
        graph_free(*g);
        *g = NULL;
        return rn_wrap_error(st, "import: ");
    }
    *record = r;
    *record_size = len / 2;
    return RN_OK;
}
