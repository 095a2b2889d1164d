/* The model repository of runnel-server: REPO/<model>/<version>/model.onnx
 * plus an optional REPO/<model>/config.json, as Triton and OVMS lay it out.
 *
 * config.json (every key optional; an unknown key is an error naming it):
 *   {"device": "REF",
 *    "properties": {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": "2"},
 *    "max_queue_size": 64,
 *    "max_batch_size": 8, "max_queue_delay_us": 0, "preferred_batch_size": [4, 8],
 *    "default_timeout_us": 0,
 *    "pipeline": {...} (a model made of other models' steps: see pipeline.h),
 *    "version_policy": {"latest": {"num_versions": 1}} | {"all": {}}
 *                      | {"specific": {"versions": [1, 3]}}}
 * Pure functions over text and folders; loading is model.c's. */
#ifndef RUNNEL_SERVER_REPOSITORY_H
#define RUNNEL_SERVER_REPOSITORY_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/runnel.h"

typedef enum server_version_policy {
    SERVER_POLICY_LATEST = 0,
    SERVER_POLICY_ALL = 1,
    SERVER_POLICY_SPECIFIC = 2,
} server_version_policy;

typedef struct server_model_config {
    char *device; /* NULL: the server's default device */
    rn_property *properties;
    size_t n_properties;
    size_t max_queue_size;         /* requests waiting for a free infer request; more get 503 */
    size_t max_batch_size;         /* 0: no dynamic batching */
    uint64_t max_queue_delay_us;   /* longest a batch waits to fill (needs max_batch_size) */
    size_t *preferred_batch_sizes; /* ascending, each 1..max_batch_size */
    size_t n_preferred;
    uint64_t default_timeout_us; /* longest wait in the queue when a request names none; 0: none */
    server_version_policy policy;
    size_t num_versions; /* latest{n} */
    int64_t *versions;   /* specific */
    size_t n_versions;
    char *pipeline; /* the "pipeline" object as JSON text (pipeline.c reads it); NULL: a model */
    /* Stateful sequences ("sequence"; n_states == 0: not stateful): each
     * state output of a request is the state input of the next request of
     * its sequence (zeros at its start). */
    char **state_inputs, **state_outputs;
    size_t n_states;
    uint64_t sequence_idle_us; /* a sequence idle this long is reclaimed */
    size_t max_sequences;      /* active at once; one more start is refused (503) */
    uint64_t hash;             /* of config.json's text (0: none), so that a poll sees a change */
} server_model_config;

/* The default configuration: server's device, no properties, latest{1},
 * max_queue_size `queue_size`. */
void server_config_default(server_model_config *config, size_t queue_size);

/* Parses config.json text over the defaults in *config (which it then owns).
 * Malformed JSON, an unknown key or a value of the wrong type is
 * RN_INVALID_ARG naming it; *config is then unchanged. */
rn_status server_config_parse(const char *text, size_t size, server_model_config *config);

void server_config_clear(server_model_config *config);

/* Which of the versions on disk (any order) the policy serves: written to
 * `selected` (room for n) in ascending order; returns how many. */
size_t server_version_select(const server_model_config *config, const int64_t *on_disk, size_t n,
                             int64_t *selected);

/* A model folder of the repository. */
typedef struct server_repo_model {
    char *name;
    server_model_config config;
    int64_t *versions; /* the versions the policy serves, ascending */
    size_t n_versions;
} server_repo_model;

/* Scans a repository: every folder of `root` (hidden ones skipped) is a
 * model; its numeric sub-folders holding model.onnx are its versions (a
 * pipeline has version 1 and no model.onnx).
 * *models is malloc'ed (free with server_repo_free). A missing root, or a
 * model whose config.json is bad, is an error naming it. */
rn_status server_repo_scan(const char *root, size_t queue_size, server_repo_model **models,
                           size_t *n_models);

void server_repo_free(server_repo_model *models, size_t n_models);

#endif /* RUNNEL_SERVER_REPOSITORY_H */
