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

/* Scans `root` and loads every selected version on `device` (unless a
 * model's config names another). Any model that fails to load is an error
 * naming it, and nothing is kept. */
rn_status server_registry_create(rn_core *core, const char *root, const char *device,
                                 size_t queue_size, server_registry **out);

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
