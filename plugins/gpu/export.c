/* The GPU's export blobs: the generic blob (plugins/api/export.h) followed
 * by the record of runnel's program binary (program_cache.c), so that an
 * import on the same device and driver skips building from source:
 *
 *   generic blob | program record | u64 size of the generic blob | "RNGPUEND"
 *
 * A blob without the trailer (an older export) is a generic blob; a record
 * that does not fit the device is ignored (the program is built from
 * source), while the generic blob is checked as always. Where the driver
 * gives no binary the export is the generic blob alone. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/export.h"
#include "plugins/gpu/gpu.h"

#define TRAILER_MAGIC "RNGPUEND"

rn_status gpu_export_blob(gpu_device *d, const plugin_plan *plan, const char *device,
                          const char *arch, const plugin_properties *props, void **data,
                          size_t *size)
{
    uint8_t *record = NULL;
    size_t n_record = 0;
    if (gpu_device_program_record(d, &record, &n_record) != RN_OK) {
        /* No binary to carry (the driver gives none, the program does not
         * build): the generic blob alone, whose import builds from source. */
        rn_clear_error();
        return plugin_export(plan, device, arch, props, data, size);
    }
    rn_status st;
    void *blob = NULL;
    size_t n_blob = 0;
    st = plugin_export(plan, device, arch, props, &blob, &n_blob);
    uint8_t *out = NULL;
    if (st == RN_OK && (out = realloc(blob, n_blob + n_record + 16)) == NULL) {
        free(blob);
        st = rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory");
    }
    if (st == RN_OK) {
        memcpy(out + n_blob, record, n_record);
        uint64_t inner = n_blob;
        for (int i = 0; i < 8; i++)
            out[n_blob + n_record + (size_t)i] = (uint8_t)(inner >> (8 * i));
        memcpy(out + n_blob + n_record + 8, TRAILER_MAGIC, 8);
        *data = out;
        *size = n_blob + n_record + 16;
    }
    free(record);
    return st;
}

void gpu_blob_split(const void *data, size_t size, size_t *blob_size, const void **record,
                    size_t *record_size)
{
    const uint8_t *b = data;
    *blob_size = size;
    *record = NULL;
    *record_size = 0;
    if (b == NULL || size < 16 || memcmp(b + size - 8, TRAILER_MAGIC, 8) != 0)
        return;
    uint64_t inner = 0;
    for (int i = 7; i >= 0; i--)
        inner = inner << 8 | b[size - 16 + (size_t)i];
    if (inner == 0 || inner > size - 16)
        return; /* not ours after all: the generic checks will say what it is */
    *blob_size = (size_t)inner;
    *record = b + inner;
    *record_size = size - 16 - (size_t)inner;
}
