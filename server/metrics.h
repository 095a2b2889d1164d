/* Prometheus text exposition (format 0.0.4) of Triton's per-model metrics. */
#ifndef RUNNEL_SERVER_METRICS_H
#define RUNNEL_SERVER_METRICS_H

#include <stddef.h>

#include "server/registry.h"

/* Renders every metric of every loaded version, labelled
 * {model="...",version="..."}. Malloc'ed text, its length in *size; NULL
 * when out of memory. */
char *server_metrics_render(server_registry *registry, size_t *size);

#endif /* RUNNEL_SERVER_METRICS_H */
