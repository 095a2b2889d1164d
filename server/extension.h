/* The JSON answers of KServe v2's extensions over HTTP, in Triton's forms:
 * statistics (/v2/models[/{m}[/versions/{v}]]/stats), model configuration
 * (/v2/models/{m}/config) and the repository index (/v2/repository/index).
 * The gRPC front answers the same from the same registry (grpc.c). */
#ifndef RUNNEL_SERVER_EXTENSION_H
#define RUNNEL_SERVER_EXTENSION_H

#include <jansson.h>

#include "server/model.h"
#include "server/registry.h"

/* {"model_stats": [...]}: every loaded version of `model` ("": of every
 * model; `version` "": every version). A named model or version not loaded
 * is NULL with RN_NOT_FOUND naming it. */
json_t *server_statistics_json(server_registry *registry, const char *model, const char *version);

/* The model's configuration as Triton's model_config JSON: name, platform,
 * backend, max_batch_size, input and output (data_type, dims without the
 * batch dim when the server batches) and dynamic_batching. */
json_t *server_config_json(const server_model *model);

/* [{"name", "version", "state", "reason"}, ...] (server_registry_index). */
json_t *server_index_json(server_registry *registry, int ready_only);

/* Triton's config data_type of an element type ("TYPE_FP32", "TYPE_STRING"
 * for BYTES); "TYPE_INVALID" for one v2 has no name for. Static string. */
const char *server_config_type_name(rn_element_type type);

#endif /* RUNNEL_SERVER_EXTENSION_H */
