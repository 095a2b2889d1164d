/* Export and import of compiled models for plugins built on the generic plan:
 * the container of graph/serialize.h holding the transformed graph with its
 * weights, the device name and architecture, and the compile properties. */
#ifndef RUNNEL_PLUGINS_API_EXPORT_H
#define RUNNEL_PLUGINS_API_EXPORT_H

#include "base/kit.h"
#include "graph/serialize.h"
#include "plugins/api/plan.h"
#include "plugins/api/properties.h"

/* Writes the plan's graph and `props` into a malloc'ed blob (*data, *size),
 * which the caller frees with free(). */
RN_KIT rn_status plugin_export(const plugin_plan *plan, const char *device, const char *arch,
                               const plugin_properties *props, void **data, size_t *size);
/* The same with one more header entry of the plugin's own (`extra_key`, a
 * name no read-write property has; `extra_value` a string), which
 * plugin_import_extra hands back. */
RN_KIT rn_status plugin_export_extra(const plugin_plan *plan, const char *device, const char *arch,
                                     const plugin_properties *props, const char *extra_key,
                                     const char *extra_value, void **data, size_t *size);
/* The same for a graph of the caller's (the plan's graph with what the
 * device adds to it: docs/cpu.md, "Export and import"). */
rn_status plugin_export_graph(const graph *g, const char *device, const char *arch,
                              const plugin_properties *props, const char *extra_key,
                              const char *extra_value, void **data, size_t *size);

/* Reads a blob for `device`/`arch`: each container check (magic, format
 * version, checksum, device, architecture) fails with its own message. On
 * success *g is the stored graph (the caller's) and the stored properties
 * are applied to *props, then `overrides` on top. */
rn_status plugin_import(const void *data, size_t size, const char *device, const char *arch,
                        const rn_property *overrides, size_t n_overrides, plugin_properties *props,
                        graph **g);
/* The same, handing back the header entry `extra_key` (a malloc'ed copy
 * in *extra_value, NULL when the blob has none) instead of applying it. */
RN_KIT rn_status plugin_import_extra(const void *data, size_t size, const char *device,
                                     const char *arch, const rn_property *overrides,
                                     size_t n_overrides, plugin_properties *props, graph **g,
                                     const char *extra_key, char **extra_value);

#endif /* RUNNEL_PLUGINS_API_EXPORT_H */
