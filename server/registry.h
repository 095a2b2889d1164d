/* The models runnel-server serves: every version the repository's policies
 * select, loaded at start; a poll reloads the repository while serving
 * (new versions are compiled before old ones leave, so a request for the
 * model never finds none). Lookups take a reference that keeps a version
 * alive until its job is answered, even after it left the table. */
#ifndef RUNNEL_SERVER_REGISTRY_H
#define RUNNEL_SERVER_REGISTRY_H

#include <stddef.h>

#include "runnel/runnel.h"
#include "server/model.h"

typedef struct server_registry server_registry;

/* Who loads and unloads models while serving, as Triton's
 * --model-control-mode: nobody (NONE), the repository poll (POLL), or
 * clients through the repository extension (EXPLICIT). */
typedef enum server_model_control {
    SERVER_CONTROL_NONE = 0,
    SERVER_CONTROL_POLL,
    SERVER_CONTROL_EXPLICIT,
} server_model_control;

/* The extensions of KServe v2 runnel-server speaks (/v2 and ServerMetadata). */
#define SERVER_EXTENSIONS(X)                                                                       \
    X("binary_tensor_data")                                                                        \
    X("model_configuration")                                                                       \
    X("model_repository")                                                                          \
    X("statistics")

/* Scans `root` and loads every selected version on `device` (unless a
 * model's config names another). Any model that fails to load is an error
 * naming it, and nothing is kept. */
rn_status server_registry_create(rn_core *core, const char *root, const char *device,
                                 size_t queue_size, server_registry **out);

/* As server_registry_create, with a control mode: under EXPLICIT only the
 * models named in `startup` (comma-separated; "*": every model; NULL or
 * "": none) load at start, and a name not in the repository is an error. */
rn_status server_registry_open(rn_core *core, const char *root, const char *device,
                               size_t queue_size, server_model_control control, const char *startup,
                               server_registry **out);

server_model_control server_registry_control(const server_registry *registry);

/* The repository extension (EXPLICIT mode only, else RN_NOT_IMPLEMENTED
 * saying so). Load reads model `name` from the repository again and loads
 * the versions its policy selects (a changed config.json reloads them, the
 * old ones serving until the new ones have compiled), then unloads its
 * versions no longer selected; a model not in the repository is
 * RN_NOT_FOUND, one that fails to load the loader's error (what loaded
 * before keeps serving). Unload takes every version of `name` out of the
 * table (requests holding one finish on it); a model not loaded is
 * RN_OK, as in Triton. */
rn_status server_registry_load(server_registry *registry, const char *name);
rn_status server_registry_unload(server_registry *registry, const char *name);

/* Calls fn for each entry of the repository index: every loaded version
 * (state "READY"), and every model of the repository with no version
 * loaded (version "", state "UNAVAILABLE", reason "unloaded"), ordered by
 * name. With ready_only, only the loaded versions. */
void server_registry_index(server_registry *registry, int ready_only,
                           void (*fn)(const char *name, const char *version, const char *state,
                                      const char *reason, void *user),
                           void *user);

/* Frees every model, waiting for their runs in flight. No lookup may be
 * held. NULL is a no-op. */
void server_registry_free(server_registry *registry);

/* The version `version` of model `name` ("" or NULL: its highest loaded
 * version), acquired: the caller calls server_model_release. NULL with
 * RN_NOT_FOUND naming the model or version when absent. */
server_model *server_registry_find(server_registry *registry, const char *name,
                                   const char *version);

/* Calls fn on every loaded version, ordered by name then version, under the
 * registry's read lock (fn must not call back into the registry). */
void server_registry_foreach(server_registry *registry, void (*fn)(server_model *, void *),
                             void *user);

/* Rescans the repository: loads versions that appeared (or that the policy
 * now selects), then unloads those that went away. A version that fails to
 * load is reported on stderr and skipped; the rest keep serving. Returns
 * how many versions were loaded and unloaded. */
size_t server_registry_poll(server_registry *registry);

#endif /* RUNNEL_SERVER_REGISTRY_H */
