/* The CPU device's export blobs (blob.c): the generic blob with the
 * weights as the primitives chose them, so that an import converts none.
 * docs/export.md, docs/cpu.md ("Export and import"). */
#ifndef RUNNEL_PLUGINS_CPU_BLOB_H
#define RUNNEL_PLUGINS_CPU_BLOB_H

#include "plugins/cpu/cpu.h"
#include "plugins/api/device.h"

/* plugin_device_iface.export_blob / import_blob / import_done of the CPU
 * device. */
rn_status cpu_export_blob(plugin_compiled *c, const plugin_properties *props, void **data,
                          size_t *size);
rn_status cpu_import_blob(plugin_compiled *c, const void *data, size_t size,
                          const rn_property *overrides, size_t n_overrides, graph **g,
                          void **pending);
void cpu_import_done(void *pending);

/* For layout_convert (onednn.c): while an import builds its plan in this
 * thread, writes the stored bytes of a plain constant `src` converted from
 * smd to dmd into dst and returns true (once per stored weight; matched by
 * both descriptors and the XXH64 of src's bytes). */
bool cpu_blob_restore(const rn_kernel_tensor *src, const cpu_md *smd, const cpu_md *dmd,
                      rn_kernel_tensor *dst);
/* Counts a reorder layout_convert ran. */
void cpu_blob_count_reorder(void);
/* Process-wide counters: weights an import copied from its blob, and
 * reorders layout_convert ran (weights at compile, activations at run). */
void cpu_blob_counters(uint64_t *restored, uint64_t *reordered);

/* The descriptors layout_convert uses to convert src into dst. */
rn_status cpu_convert_mds(const rn_kernel_tensor *src, const rn_kernel_tensor *dst, cpu_md *smd,
                          cpu_md *dmd);

#endif /* RUNNEL_PLUGINS_CPU_BLOB_H */
