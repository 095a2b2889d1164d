/* Pipelines of runnel-server: a model made of other models' steps, like
 * OVMS DAGs and Triton ensembles. config.json:
 *
 *   {"pipeline": {
 *      "inputs": ["a", "b"], "outputs": ["z"],
 *      "steps": [
 *        {"model": "add", "inputs": {"x": "a", "y": "b"}, "outputs": {"sum": "t"}},
 *        {"model": "mul", "version": 2, "inputs": {"x": "t", "y": "b"},
 *         "outputs": {"product": "z"}}]}}
 *
 * Tensor names are the pipeline's: its inputs, and what a step's "outputs"
 * maps its model's outputs to. A step's "inputs" maps every input of its
 * model to a tensor the pipeline has by then (a pipeline input or an
 * earlier step's output). A request runs as one task DAG of jobs, one per
 * step: the steps that take only pipeline inputs are submitted at once, and
 * every other step from the completion callback of the last step it takes
 * outputs from (no thread waits; independent steps run side by side); the
 * last step to finish answers the request. A failed step (the first, when
 * several fail; steps not started by then are skipped)
 * answers with its status and a message naming the step. The steps' models
 * are looked up by name for every request, so their versions reload freely;
 * at load they must be there, and the pipeline's metadata comes from them. */
#ifndef RUNNEL_SERVER_PIPELINE_H
#define RUNNEL_SERVER_PIPELINE_H

#include <stddef.h>

#include "runnel/runnel.h"
#include "server/model.h"

typedef struct server_pipeline server_pipeline;
struct server_registry;

/* Reads the "pipeline" object (JSON text) and checks it against the
 * registry's models: unknown keys, models or ports, a tensor used before any
 * step makes it, or an output no step makes are RN_INVALID_ARG naming it. */
rn_status server_pipeline_create(struct server_registry *registry, const char *name,
                                 const char *json, server_pipeline **out);

void server_pipeline_free(server_pipeline *pipeline); /* NULL is a no-op */

/* The pipeline's inputs (typed as the first step that takes them) and
 * outputs (as the step that makes them). */
size_t server_pipeline_input_count(const server_pipeline *pipeline);
size_t server_pipeline_output_count(const server_pipeline *pipeline);
rn_status server_pipeline_input(const server_pipeline *pipeline, size_t index, rn_port *out);
rn_status server_pipeline_output(const server_pipeline *pipeline, size_t index, rn_port *out);

/* Runs a bound job of pipeline model `model`; server_model_finish(model,
 * job) answers it once, from the last step's callback (or at once when the
 * first step cannot start). */
void server_pipeline_run(server_pipeline *pipeline, server_model *model, server_job *job);

#endif /* RUNNEL_SERVER_PIPELINE_H */
