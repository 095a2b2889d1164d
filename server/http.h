/* The HTTP front of runnel-server: libmicrohttpd with its internal epoll
 * thread pool. An infer call's connection is suspended when its job is
 * submitted and resumed from the model's completion callback, so no HTTP
 * thread waits on inference. */
#ifndef RUNNEL_SERVER_HTTP_H
#define RUNNEL_SERVER_HTTP_H

#include <stddef.h>

#include "runnel/runnel.h"
#include "server/limits.h"
#include "server/registry.h"

typedef struct server_http_config {
    const char *address;        /* IPv4 address to bind ("0.0.0.0") */
    int port;                   /* 0: any free port (server_http_port tells which) */
    unsigned threads;           /* HTTP threads in the pool */
    size_t max_body;            /* larger request bodies get 413 */
    unsigned timeout_secs;      /* a connection silent this long is closed (0: never) */
    unsigned max_connections;   /* open at once; past it new ones wait in the backlog */
    unsigned max_per_client;    /* open at once from one address; past it refused (0: none) */
    server_byte_budget *budget; /* request bodies held (NULL: no limit); 503 past it */
} server_http_config;

typedef struct server_http server_http;

/* Starts serving `registry` (not ready until server_http_set_ready). A port
 * in use or a bad address is RN_IO_ERROR saying so. */
rn_status server_http_start(server_registry *registry, const server_http_config *config,
                            server_http **out);

/* The port bound. */
int server_http_port(const server_http *http);

/* Turns /v2/health/ready (and model readiness) on or off. */
void server_http_set_ready(server_http *http, int ready);

/* Infer calls accepted and not yet answered. */
long server_http_in_flight(server_http *http);

/* Stops accepting connections, waits until every accepted call has been
 * answered, and stops the threads. NULL is a no-op. */
void server_http_stop(server_http *http);

#endif /* RUNNEL_SERVER_HTTP_H */
