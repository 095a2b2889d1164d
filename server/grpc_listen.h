/* The gRPC front's listening socket (server/grpc.c). runnel-server accepts
 * gRPC connections itself rather than through grpc_server_add_http2_port,
 * because gRPC's C core has no limit on connections, in total or per
 * client: it admits each accepted socket into a server_conn_table
 * (limits.h), closes at once one that passes a limit (as libmicrohttpd does
 * on the HTTP side), waits (at most the client timeout) for the client's
 * HTTP/2 connection preface and first SETTINGS frame, and only then hands
 * the socket to gRPC (grpc_server_add_channel_from_fd), which owns and
 * closes it from there. A socket handed over before would wait for gRPC's
 * keepalive or idle timeout (minutes): waiting here keeps the handshake
 * deadline that grpc_server_add_http2_port applies (preface and settings). */
#ifndef RUNNEL_SERVER_GRPC_LISTEN_H
#define RUNNEL_SERVER_GRPC_LISTEN_H

#include <grpc/grpc.h>
#include <stddef.h>

#include "runnel/runnel.h"

typedef struct server_grpc_listen_config {
    const char *address;   /* IPv4 address to bind */
    int port;              /* 0: any free port */
    unsigned timeout_secs; /* for the preface (0: 120 s, gRPC's handshake default) */
    size_t max_connections, max_per_client; /* 0: no limit */
} server_grpc_listen_config;

typedef struct server_grpc_listener server_grpc_listener;

/* Binds and listens (nothing is accepted before server_grpc_listener_start).
 * A bad address, or a port in use, is RN_IO_ERROR saying so. */
rn_status server_grpc_listen(const server_grpc_listen_config *config, server_grpc_listener **out);

/* The port bound. */
int server_grpc_listener_port(const server_grpc_listener *listener);

/* Starts the thread that accepts and hands connections to `server`, which
 * has been started (grpc_server_start). RN_INTERNAL when no thread. */
rn_status server_grpc_listener_start(server_grpc_listener *listener, grpc_server *server);

/* Stops accepting (the socket is closed: new clients are refused), closes
 * the connections not yet handed to gRPC and frees the listener; those
 * handed over are gRPC's. NULL is a no-op. */
void server_grpc_listener_stop(server_grpc_listener *listener);

#endif /* RUNNEL_SERVER_GRPC_LISTEN_H */
