/* rn_model: a graph read from a file, and the ports of models. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

void rn_model_free(rn_model *model)
{
    if (model == NULL)
        return;
    graph_free(model->g);
    free(model);
}

const char *rn_model_name(const rn_model *model)
{
    return model->g->name;
}

size_t rn_model_input_count(const rn_model *model)
{
    return (size_t)model->g->n_inputs;
}

size_t rn_model_output_count(const rn_model *model)
{
    return (size_t)model->g->n_outputs;
}

static void port_of(const graph_value *v, rn_port *out)
{
    out->name = v->name;
    out->element_type = v->type;
    out->shape = v->shape;
}

rn_status rn_model_input(const rn_model *model, size_t index, rn_port *out)
{
    if (index >= (size_t)model->g->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "model input %zu is out of range (%d inputs)", index,
                            model->g->n_inputs);
    port_of(model->g->inputs[index], out);
    return RN_OK;
}

rn_status rn_model_output(const rn_model *model, size_t index, rn_port *out)
{
    if (index >= (size_t)model->g->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "model output %zu is out of range (%d outputs)", index,
                            model->g->n_outputs);
    port_of(model->g->outputs[index], out);
    return RN_OK;
}

rn_status runtime_ports_from_graph(graph_value *const *values, int n, rn_port **out)
{
    rn_port *ports = calloc((size_t)n + 1, sizeof *ports);
    if (ports == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        port_of(values[i], &ports[i]);
        ports[i].name = strdup(values[i]->name);
        if (ports[i].name == NULL) {
            runtime_ports_free(ports, (size_t)i);
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
        }
    }
    *out = ports;
    return RN_OK;
}

void runtime_ports_free(rn_port *ports, size_t n)
{
    if (ports == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free((char *)ports[i].name);
    free(ports);
}
