/* rn_compiled_model: a device's compiled plan and the ports it exposes. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

void rn_compiled_model_free(rn_compiled_model *compiled)
{
    if (compiled != NULL)
        runtime_compiled_release(compiled);
}

void runtime_compiled_release(rn_compiled_model *compiled)
{
    if (atomic_fetch_sub(&compiled->refs, 1) != 1)
        return;
    rn_core *core = compiled->core;
    compiled->ops->free(compiled->compiled);
    if (compiled->context != NULL)
        runtime_context_release(compiled->context);
    runtime_ports_free(compiled->inputs, compiled->n_inputs);
    runtime_ports_free(compiled->outputs, compiled->n_outputs);
    free(compiled);
    runtime_core_release(core);
}

const char *rn_compiled_model_device(const rn_compiled_model *compiled)
{
    return compiled->device->name;
}

size_t rn_compiled_model_input_count(const rn_compiled_model *compiled)
{
    return compiled->n_inputs;
}

size_t rn_compiled_model_output_count(const rn_compiled_model *compiled)
{
    return compiled->n_outputs;
}

rn_status rn_compiled_model_input(const rn_compiled_model *compiled, size_t index, rn_port *out)
{
    if (index >= compiled->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "compiled model input %zu is out of range (%zu inputs)",
                            index, compiled->n_inputs);
    *out = compiled->inputs[index];
    return RN_OK;
}

rn_status rn_compiled_model_output(const rn_compiled_model *compiled, size_t index, rn_port *out)
{
    if (index >= compiled->n_outputs)
        return rn_set_error(RN_INVALID_ARG,
                            "compiled model output %zu is out of range (%zu outputs)", index,
                            compiled->n_outputs);
    *out = compiled->outputs[index];
    return RN_OK;
}

rn_status rn_compiled_model_get_property(const rn_compiled_model *compiled, const char *key,
                                         char *buf, size_t size)
{
    if (key == NULL || buf == NULL)
        return rn_set_error(RN_INVALID_ARG, "get_property: key and buf must be set");
    if (strcmp(key, "LOADED_FROM_CACHE") == 0) {
        const char *v = compiled->loaded_from_cache ? "YES" : "NO";
        if (strlen(v) + 1 > size)
            return rn_set_error(RN_INVALID_ARG, "property %s: buffer too small", key);
        memcpy(buf, v, strlen(v) + 1);
        return RN_OK;
    }
    if (compiled->ops->get_property == NULL)
        return rn_set_error(RN_NOT_FOUND, "compiled model: unknown property '%s'", key);
    return compiled->ops->get_property(compiled->compiled, key, buf, size);
}

rn_status rn_compiled_model_runtime_model(rn_compiled_model *compiled,
                                          const rn_runtime_node **nodes, size_t *count)
{
    if (compiled == NULL || nodes == NULL || count == NULL)
        return rn_set_error(RN_INVALID_ARG, "runtime_model: compiled, nodes and count must be set");
    if (compiled->ops->get_runtime_model == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s reports no runtime model",
                            rn_compiled_model_device(compiled));
    return compiled->ops->get_runtime_model(compiled->compiled, nodes, count);
}

rn_status rn_compiled_model_set_property(rn_compiled_model *compiled, const rn_property *properties,
                                         size_t n_properties)
{
    if (compiled == NULL || (properties == NULL && n_properties > 0))
        return rn_set_error(RN_INVALID_ARG, "set_property: compiled and properties must be set");
    for (size_t i = 0; i < n_properties; i++)
        if (properties[i].key == NULL || properties[i].value == NULL)
            return rn_set_error(RN_INVALID_ARG, "property %zu: key and value must be set", i);
    if (compiled->ops->set_property == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED,
                            "device %s: compiled models take no properties after compiling",
                            compiled->device->name);
    return compiled->ops->set_property(compiled->compiled, properties, n_properties);
}

rn_status rn_compiled_model_pipeline(const rn_compiled_model *compiled,
                                     const rn_pipeline_stage **stages, size_t *count)
{
    if (compiled == NULL || stages == NULL || count == NULL)
        return rn_set_error(RN_INVALID_ARG, "pipeline: compiled, stages and count must be set");
    if (compiled->ops->get_pipeline == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "device %s does not describe its pipeline",
                            compiled->device->name);
    return compiled->ops->get_pipeline(compiled->compiled, stages, count);
}
