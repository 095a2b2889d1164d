/* The gRPC front of runnel-server: KServe v2's inference.GRPCInferenceService
 * over gRPC's C core (Debian's libgrpc-dev), beside the HTTP front and over
 * the same registry, queues and batcher. Completion-queue threads receive
 * calls and decode them; an infer call's job is submitted like an HTTP one
 * and answered from the model's completion callback, so no gRPC thread
 * waits on inference. ModelStreamInfer answers each request of a stream as
 * it completes. */
#ifndef RUNNEL_SERVER_GRPC_H
#define RUNNEL_SERVER_GRPC_H

#include <stddef.h>

#include "runnel/runnel.h"
#include "server/limits.h"
#include "server/registry.h"

typedef struct server_grpc_config {
    const char *address;        /* IPv4 address to bind ("0.0.0.0") */
    int port;                   /* 0: any free port (server_grpc_port tells which) */
    unsigned threads;           /* completion-queue threads */
    size_t max_message;         /* larger request messages are refused (RESOURCE_EXHAUSTED) */
    unsigned timeout_secs;      /* a connection that has not sent its HTTP/2 preface and
                                   SETTINGS by then is closed (0: gRPC's default, 120 s) */
    size_t max_connections;     /* open at once; more are closed when accepted (0: no limit) */
    size_t max_per_client;      /* open at once from one client address (0: no limit) */
    server_byte_budget *budget; /* request messages held (NULL: no limit); RESOURCE_EXHAUSTED */
} server_grpc_config;

typedef struct server_grpc server_grpc;

/* Starts serving `registry` (not ready until server_grpc_set_ready). A port
 * in use or a bad address is RN_IO_ERROR saying so. */
rn_status server_grpc_start(server_registry *registry, const server_grpc_config *config,
                            server_grpc **out);

/* The port bound. */
int server_grpc_port(const server_grpc *grpc);

/* The completion-queue threads running: config.threads, at most the CPUs
 * the process may run on. */
unsigned server_grpc_queue_threads(const server_grpc *grpc);

/* Turns ServerReady (and ModelReady) on or off. */
void server_grpc_set_ready(server_grpc *grpc, int ready);

/* Infer requests accepted and not yet answered. */
long server_grpc_in_flight(server_grpc *grpc);

/* Stops accepting calls, waits until every accepted infer request has been
 * answered, cancels streams still open, and stops the threads. NULL is a
 * no-op. */
void server_grpc_stop(server_grpc *grpc);

#endif /* RUNNEL_SERVER_GRPC_H */
