/* The REF device plugin: compiles a model into the generic plan with REF's
 * kernels and runs it with the generic sync request. This file, ref.h,
 * registry.c and kernels/ are everything a device plugin needs. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/api/plan.h"
#include "plugins/ref/ref.h"

typedef struct ref_plugin {
    plugin_kernel_registry *kernels;
} ref_plugin;

static rn_status ref_create(void **out)
{
    ref_plugin *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "REF: out of memory");
    rn_status st = plugin_kernel_registry_create(&p->kernels);
    if (st == RN_OK)
        st = ref_register_kernels(p->kernels);
    if (st != RN_OK) {
        plugin_kernel_registry_free(p->kernels);
        free(p);
        return st;
    }
    *out = p;
    return RN_OK;
}

static void ref_destroy(void *plugin)
{
    ref_plugin *p = plugin;
    if (p == NULL)
        return;
    plugin_kernel_registry_free(p->kernels);
    free(p);
}

/* "YES"/"NO" (OpenVINO's spelling), also "true"/"false" and "1"/"0". */
static rn_status parse_bool(const char *key, const char *value, bool *out)
{
    if (strcasecmp(value, "YES") == 0 || strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0)
        *out = true;
    else if (strcasecmp(value, "NO") == 0 || strcasecmp(value, "false") == 0 ||
             strcmp(value, "0") == 0)
        *out = false;
    else
        return rn_set_error(RN_INVALID_ARG, "property %s: bad value '%s' (accepted: YES, NO)", key,
                            value);
    return RN_OK;
}

static rn_status ref_compiled_get_property(void *compiled, const char *key, char *buf, size_t size)
{
    (void)compiled;
    const char *value = NULL;
    if (strcmp(key, "EXECUTION_DEVICES") == 0)
        value = "REF";
    if (value == NULL)
        return rn_set_error(RN_NOT_FOUND, "compiled model: unknown property '%s'", key);
    if (strlen(value) + 1 > size)
        return rn_set_error(RN_INVALID_ARG, "property %s: buffer too small", key);
    memcpy(buf, value, strlen(value) + 1);
    return RN_OK;
}

static rn_status ref_create_request(void *compiled, void **out)
{
    plugin_request *r;
    rn_status st = plugin_request_create(compiled, &r);
    if (st == RN_OK)
        *out = r;
    return st;
}

static void ref_compiled_free(void *compiled)
{
    plugin_plan_free(compiled);
}

static const rn_compiled_model_ops ref_compiled_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .create_request = ref_create_request,
    .request_ops = &plugin_generic_request_ops,
    .get_property = ref_compiled_get_property,
    .free = ref_compiled_free,
};

static rn_status ref_compile(void *plugin, const struct graph *model, const rn_property *properties,
                             size_t n_properties, const rn_compiled_model_ops **ops,
                             void **compiled)
{
    ref_plugin *p = plugin;
    plugin_plan_options options = {0};
    for (size_t i = 0; i < n_properties; i++) {
        const rn_property *prop = &properties[i];
        if (strcmp(prop->key, "ENABLE_PROFILING") == 0) {
            rn_status st = parse_bool(prop->key, prop->value, &options.profiling);
            if (st != RN_OK)
                return st;
        } else {
            return rn_set_error(RN_INVALID_ARG,
                                "REF: unknown property '%s' (supported: ENABLE_PROFILING)",
                                prop->key);
        }
    }
    plugin_plan *plan;
    rn_status st = plugin_plan_build(model, p->kernels, &options, &plan);
    if (st != RN_OK)
        return st;
    *ops = &ref_compiled_ops;
    *compiled = plan;
    return RN_OK;
}

const rn_plugin_ops ref_plugin_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = "REF",
    .create = ref_create,
    .destroy = ref_destroy,
    .compile_model = ref_compile,
};
