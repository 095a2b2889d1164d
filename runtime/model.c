/* rn_model: a graph read from a file, and the ports of models. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "transforms/transforms.h"
#include "runtime/runtime.h"

void rn_model_free(rn_model *model)
{
    if (model == NULL)
        return;
    for (size_t i = 0; i < model->n_processed; i++)
        free(model->processed[i]);
    free(model->processed);
    graph_free(model->g);
    free(model);
}

const char *rn_model_name(const rn_model *model)
{
    return model->g->name;
}

size_t rn_model_warning_count(const rn_model *model)
{
    return (size_t)model->g->n_warnings;
}

const char *rn_model_warning(const rn_model *model, size_t index)
{
    return index < (size_t)model->g->n_warnings ? model->g->warnings[index] : NULL;
}

size_t rn_model_input_count(const rn_model *model)
{
    return (size_t)model->g->n_inputs;
}

size_t rn_model_output_count(const rn_model *model)
{
    return (size_t)model->g->n_outputs;
}

rn_port_kind runtime_port_kind(graph_kind kind)
{
    switch (kind) {
    case GRAPH_KIND_SEQUENCE:
        return RN_PORT_SEQUENCE;
    case GRAPH_KIND_OPTIONAL:
        return RN_PORT_OPTIONAL_TENSOR;
    case GRAPH_KIND_OPTIONAL_SEQUENCE:
        return RN_PORT_OPTIONAL_SEQUENCE;
    case GRAPH_KIND_MAP:
        return RN_PORT_MAP;
    case GRAPH_KIND_SEQUENCE_MAP:
        return RN_PORT_SEQUENCE_MAP;
    default:
        return RN_PORT_TENSOR;
    }
}

static void port_of(const graph_value *v, rn_port *out)
{
    out->name = v->name;
    out->element_type = v->type;
    out->shape = v->shape;
    out->kind = runtime_port_kind(v->kind);
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

rn_status rn_model_reshape(rn_model *model, const char *name, const rn_partial_shape *shape)
{
    if (model == NULL || name == NULL || shape == NULL)
        return rn_set_error(RN_INVALID_ARG, "reshape: model, name and shape must be set");
    if (shape->rank < 0 || shape->rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "reshape: input '%s': rank %d", name, shape->rank);
    int index = -1;
    for (int i = 0; i < model->g->n_inputs; i++)
        if (strcmp(model->g->inputs[i]->name, name) == 0)
            index = i;
    if (index < 0)
        return rn_set_error(RN_NOT_FOUND, "reshape: the model has no input '%s'", name);
    /* Work on a clone whose inferred shapes are reset to what the file
     * declared for inputs, so that a failure leaves the model unchanged. */
    graph *g;
    rn_status st = graph_clone(model->g, &g);
    if (st != RN_OK)
        return st;
    graph_value *in = g->inputs[index];
    const graph_shape *old = &in->shape;
    if (old->rank >= 0 && old->rank != shape->rank) {
        int rank = old->rank;
        graph_free(g);
        return rn_set_error(RN_SHAPE_MISMATCH, "reshape: input '%s' has rank %d, not %d", name,
                            rank, shape->rank);
    }
    for (int d = 0; d < shape->rank; d++)
        if (shape->dims[d] < RN_DIM_DYNAMIC) {
            graph_free(g);
            return rn_set_error(RN_INVALID_ARG, "reshape: input '%s': dim %d is %lld", name, d,
                                (long long)shape->dims[d]);
        }
    in->shape = *shape;
    /* Values produced by nodes are re-inferred from the new input shape. */
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v]->producer != NULL)
            g->values[v]->shape.rank = -1;
    st = graph_infer_shapes(g);
    if (st != RN_OK) {
        graph_free(g);
        return rn_wrap_error(st, "reshape of input '%s': ", name);
    }
    graph_free(model->g);
    model->g = g;
    return RN_OK;
}

/* Runs the preprocessing pass on a clone of the model's graph and keeps the
 * clone on success, so that a failure leaves the model unchanged. */
static rn_status apply_preprocess(rn_model *model, const transforms_preprocess *pp)
{
    graph *g;
    rn_status st = graph_clone(model->g, &g);
    if (st != RN_OK)
        return st;
    int changes = 0;
    st = transforms_add_preprocessing(g, (void *)pp, &changes);
    if (st == RN_OK)
        st = graph_sort(g);
    if (st == RN_OK)
        st = graph_infer_shapes(g);
    if (st != RN_OK) {
        graph_free(g);
        return st;
    }
    graph_free(model->g);
    model->g = g;
    return RN_OK;
}

/* Whether `name` was already given pre/post-processing; records it if not. */
static rn_status mark_processed(rn_model *model, const char *name)
{
    for (size_t i = 0; i < model->n_processed; i++)
        if (strcmp(model->processed[i], name) == 0)
            return rn_set_error(RN_INVALID_ARG, "'%s' already has pre/post-processing", name);
    char **p = realloc(model->processed, (model->n_processed + 1) * sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "model: out of memory");
    model->processed = p;
    if ((p[model->n_processed] = strdup(name)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "model: out of memory");
    model->n_processed++;
    return RN_OK;
}

rn_status rn_model_set_input_preprocess(rn_model *model, const char *name,
                                        const rn_input_preprocess *pp)
{
    if (model == NULL || name == NULL || pp == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_input_preprocess: model, name and pp must be set");
    if (pp->n_mean > 4096 || pp->n_scale > 4096)
        return rn_set_error(RN_INVALID_ARG, "input '%s': too many mean or scale values", name);
    for (size_t i = 0; i < model->n_processed; i++)
        if (strcmp(model->processed[i], name) == 0)
            return rn_set_error(RN_INVALID_ARG, "input '%s' already has preprocessing", name);
    transforms_input_preprocess in = {
        .name = name,
        .type = pp->element_type,
        .layout = pp->layout,
        .model_layout = pp->model_layout,
        .n_mean = (int)pp->n_mean,
        .mean = pp->mean,
        .n_scale = (int)pp->n_scale,
        .scale = pp->scale,
    };
    transforms_preprocess desc = {.n_inputs = 1, .inputs = &in};
    rn_status st = apply_preprocess(model, &desc);
    if (st == RN_OK)
        st = mark_processed(model, name);
    return st;
}

rn_status rn_model_set_output_element_type(rn_model *model, const char *name, rn_element_type type)
{
    if (model == NULL || name == NULL)
        return rn_set_error(RN_INVALID_ARG, "set_output_element_type: model and name must be set");
    for (size_t i = 0; i < model->n_processed; i++)
        if (strcmp(model->processed[i], name) == 0)
            return rn_set_error(RN_INVALID_ARG, "output '%s' already has postprocessing", name);
    transforms_output_postprocess out = {.name = name, .type = type};
    transforms_preprocess desc = {.n_outputs = 1, .outputs = &out};
    rn_status st = apply_preprocess(model, &desc);
    if (st == RN_OK)
        st = mark_processed(model, name);
    return st;
}
