/* Export/import of generic plans through graph/serialize.h's container. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/export.h"

rn_status plugin_export(const plugin_plan *plan, const char *device, const char *arch,
                        const plugin_properties *props, void **data, size_t *size)
{
    return plugin_export_extra(plan, device, arch, props, NULL, NULL, data, size);
}

rn_status plugin_export_extra(const plugin_plan *plan, const char *device, const char *arch,
                              const plugin_properties *props, const char *extra_key,
                              const char *extra_value, void **data, size_t *size)
{
    return plugin_export_graph(plugin_plan_graph(plan), device, arch, props, extra_key, extra_value,
                               data, size);
}

rn_status plugin_export_graph(const graph *g, const char *device, const char *arch,
                              const plugin_properties *props, const char *extra_key,
                              const char *extra_value, void **data, size_t *size)
{
    /* Every read-write property goes into the header as a string. */
    size_t n = 0;
    while (plugin_rw_property_keys[n] != NULL)
        n++;
    char(*values)[64] = calloc(n + 1, sizeof *values);
    const char **value_ptrs = calloc(n + 2, sizeof *value_ptrs);
    const char **keys = calloc(n + 2, sizeof *keys);
    if (values == NULL || value_ptrs == NULL || keys == NULL) {
        free(values);
        free(value_ptrs);
        free(keys);
        return rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory");
    }
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        st = plugin_properties_get(props, plugin_rw_property_keys[i], values[i], sizeof values[i]);
        keys[i] = plugin_rw_property_keys[i];
        value_ptrs[i] = values[i];
    }
    if (extra_key != NULL) {
        keys[n] = extra_key;
        value_ptrs[n++] = extra_value;
    }
    graph_buffer out = {0};
    if (st == RN_OK) {
        graph_blob_header hdr = {
            .format_version = GRAPH_BLOB_FORMAT_VERSION,
            .device = device,
            .arch = arch,
            .n_props = n,
            .keys = keys,
            .values = value_ptrs,
        };
        st = graph_blob_write(&hdr, g, &out);
    }
    free(values);
    free(value_ptrs);
    free(keys);
    if (st != RN_OK)
        return rn_wrap_error(st, "export: ");
    *data = out.data;
    *size = out.size;
    return RN_OK;
}

rn_status plugin_import(const void *data, size_t size, const char *device, const char *arch,
                        const rn_property *overrides, size_t n_overrides, plugin_properties *props,
                        graph **g)
{
    return plugin_import_extra(data, size, device, arch, overrides, n_overrides, props, g, NULL,
                               NULL);
}

rn_status plugin_import_extra(const void *data, size_t size, const char *device, const char *arch,
                              const rn_property *overrides, size_t n_overrides,
                              plugin_properties *props, graph **g, const char *extra_key,
                              char **extra_value)
{
    if (extra_value != NULL)
        *extra_value = NULL;
    if (data == NULL || size == 0)
        return rn_set_error(RN_INVALID_ARG, "import: the blob is empty");
    graph_blob_expect expect = {.device = device, .arch = arch};
    graph_blob_header hdr = {0};
    graph *read = NULL;
    rn_status st = graph_blob_read(data, size, &expect, &hdr, &read);
    if (st != RN_OK)
        return rn_wrap_error(st, "import: ");
    plugin_properties tmp = *props;
    char *extra = NULL;
    for (size_t i = 0; i < hdr.n_props && st == RN_OK; i++) {
        if (extra_key != NULL && strcmp(hdr.keys[i], extra_key) == 0) {
            free(extra);
            if ((extra = strdup(hdr.values[i])) == NULL)
                st = rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
            continue;
        }
        st = plugin_properties_set(&tmp, hdr.keys[i], hdr.values[i]);
    }
    if (st == RN_OK)
        st = plugin_properties_apply(&tmp, overrides, n_overrides);
    graph_blob_header_release(&hdr);
    if (st != RN_OK) {
        free(extra);
        graph_free(read);
        return rn_wrap_error(st, "import: ");
    }
    if (extra_value != NULL)
        *extra_value = extra;
    else
        free(extra);
    *props = tmp;
    *g = read;
    return RN_OK;
}
