/* The GPU's export blobs: the generic blob with the record of runnel's
 * program binary as a header entry (export.c). */
#ifndef RUNNEL_PLUGINS_GPU_EXPORT_H
#define RUNNEL_PLUGINS_GPU_EXPORT_H

#include "plugins/api/plan.h"
#include "plugins/api/properties.h"
#include "plugins/gpu/gpu.h"

/* plugin_export's blob with the program record (none where the driver
 * gives no binary). */
rn_status gpu_export_blob(gpu_device *d, const plugin_plan *plan, const char *device,
                          const char *arch, const plugin_properties *props, void **data,
                          size_t *size);

/* plugin_import, and the blob's program record (malloc'ed; NULL when it
 * has none). A record that is not intact fails the import. */
rn_status gpu_import_blob(const void *data, size_t size, const char *device, const char *arch,
                          const rn_property *overrides, size_t n_overrides,
                          plugin_properties *props, graph **g, uint8_t **record,
                          size_t *record_size);

#endif /* RUNNEL_PLUGINS_GPU_EXPORT_H */
