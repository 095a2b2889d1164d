/* Export/import of generic plans through graph/serialize.h's container. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/export.h"

rn_status plugin_export(const plugin_plan *plan, const char *device, const char *arch,
                        const plugin_properties *props, void **data, size_t *size)
{
    /* Every read-write property goes into the header as a string. */
    size_t n = 0;
    while (plugin_rw_property_keys[n] != NULL)
        n++;
    char(*values)[64] = calloc(n + 1, sizeof *values);
    const char **value_ptrs = calloc(n + 1, sizeof *value_ptrs);
    if (values == NULL || value_ptrs == NULL) {
        free(values);
        free(value_ptrs);
        return rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory");
    }
    rn_status st = RN_OK;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        st = plugin_properties_get(props, plugin_rw_property_keys[i], values[i], sizeof values[i]);
        value_ptrs[i] = values[i];
    }
    graph_buffer out = {0};
    if (st == RN_OK) {
        graph_blob_header hdr = {
            .format_version = GRAPH_BLOB_FORMAT_VERSION,
            .device = device,
            .arch = arch,
            .n_props = n,
            .keys = plugin_rw_property_keys,
            .values = value_ptrs,
        };
        st = graph_blob_write(&hdr, plugin_plan_graph(plan), &out);
    }
    free(values);
    free(value_ptrs);
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
    if (data == NULL || size == 0)
        return rn_set_error(RN_INVALID_ARG, "import: the blob is empty");
    graph_blob_expect expect = {.device = device, .arch = arch};
    graph_blob_header hdr = {0};
    graph *read = NULL;
    rn_status st = graph_blob_read(data, size, &expect, &hdr, &read);
    if (st != RN_OK)
        return rn_wrap_error(st, "import: ");
    plugin_properties tmp = *props;
    for (size_t i = 0; i < hdr.n_props && st == RN_OK; i++)
        st = plugin_properties_set(&tmp, hdr.keys[i], hdr.values[i]);
    if (st == RN_OK)
        st = plugin_properties_apply(&tmp, overrides, n_overrides);
    graph_blob_header_release(&hdr);
    if (st != RN_OK) {
        graph_free(read);
        return rn_wrap_error(st, "import: ");
    }
    *props = tmp;
    *g = read;
    return RN_OK;
}
