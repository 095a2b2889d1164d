/* The GPU's export blobs: the generic blob plus the record of runnel's
 * program binary (export.c). */
#ifndef RUNNEL_PLUGINS_GPU_EXPORT_H
#define RUNNEL_PLUGINS_GPU_EXPORT_H

#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/gpu/gpu.h"

/* plugin_export's blob with the program record and the trailer appended. */
rn_status gpu_export_blob(gpu_device *d, const plugin_plan *plan, const char *device,
                          const char *arch, const plugin_properties *props, void **data,
                          size_t *size);

/* The generic blob's size in `data` and the program record after it (NULL
 * when the bytes have no GPU trailer). */
void gpu_blob_split(const void *data, size_t size, size_t *blob_size, const void **record,
                    size_t *record_size);

#endif /* RUNNEL_PLUGINS_GPU_EXPORT_H */
