/* What runnel-server may hold open: file descriptors for connections, and
 * request bytes buffered in memory. Shared by the HTTP and gRPC fronts so
 * that slow or idle clients and bursts of large requests run into an
 * answer (a refused connection, a 503 / RESOURCE_EXHAUSTED naming the
 * limit), never into a server that stops answering. */
#ifndef RUNNEL_SERVER_LIMITS_H
#define RUNNEL_SERVER_LIMITS_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>

#include "runnel/runnel.h"

/* The process's file descriptors, after server_fd_budget_raise. */
typedef struct server_fd_budget {
    long before;      /* RLIMIT_NOFILE's soft limit as the server found it */
    long soft, hard;  /* the limits now (soft raised to hard where allowed) */
    long reserve;     /* kept out of the connection budget: model files,
                         the gRPC front, sockets being accepted, logs */
    long connections; /* what the HTTP front may hold open */
} server_fd_budget;

/* Raises RLIMIT_NOFILE's soft limit to the hard one and splits it: a
 * reserve of max(64, soft / 8) descriptors stays free, the rest is the HTTP
 * connection budget. A soft limit too small to keep the reserve and 16
 * connections is RN_IO_ERROR saying how many there are. */
rn_status server_fd_budget_raise(server_fd_budget *out);

/* Bytes of request bodies and messages held in memory at once, over both
 * fronts: a request reserves its size before it is buffered and gives it
 * back once answered. */
typedef struct server_byte_budget {
    size_t limit; /* 0: none */
    atomic_size_t held;
} server_byte_budget;

/* Reserves `bytes`; 0 (nothing reserved) when that would go past the limit. */
int server_byte_budget_take(server_byte_budget *budget, size_t bytes);

/* Gives back what a take reserved. */
void server_byte_budget_give(server_byte_budget *budget, size_t bytes);

/* The connections a front holds open, by client address, for a front that
 * accepts its own sockets (the gRPC one: gRPC's C core has no per-client
 * or total connection limit). A connection is known by its descriptor and
 * the socket's inode, so one whose descriptor its owner has closed since
 * (gRPC, when the client goes) is found gone, even when the number has been
 * reused, and forgotten, without a callback from the owner. One thread uses
 * a table (not thread-safe). */
typedef struct server_conn_table server_conn_table;

/* A table admitting at most `max_total` connections, `max_per_client` from
 * one address (each at least 1). RN_OUT_OF_MEMORY when it cannot be made. */
rn_status server_conn_table_create(size_t max_total, size_t max_per_client,
                                   server_conn_table **out);

/* NULL is a no-op; the descriptors are not closed. */
void server_conn_table_free(server_conn_table *table);

typedef enum server_conn_admit {
    SERVER_CONN_ADMITTED,
    SERVER_CONN_CLIENT_FULL, /* the address holds max_per_client already */
    SERVER_CONN_TABLE_FULL,  /* the table holds max_total already */
    SERVER_CONN_ERROR,       /* out of memory, or fd is not an open descriptor */
} server_conn_admit;

/* Records connection `fd` from `peer` (AF_INET or AF_INET6; other families
 * are one address together) unless that would pass a limit, counting only
 * the connections still open. The caller closes a refused one. */
server_conn_admit server_conn_table_admit(server_conn_table *table, int fd,
                                          const struct sockaddr *peer);

/* Forgets `fd` (closed by the caller before it was handed on). */
void server_conn_table_forget(server_conn_table *table, int fd);

/* The connections still open, all of them or (peer not NULL) from peer's
 * address; forgets those that have gone. */
size_t server_conn_table_count(server_conn_table *table, const struct sockaddr *peer);

#endif /* RUNNEL_SERVER_LIMITS_H */
