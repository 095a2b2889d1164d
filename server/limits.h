/* What runnel-server may hold open: file descriptors for connections, and
 * request bytes buffered in memory. Shared by the HTTP and gRPC fronts so
 * that slow or idle clients and bursts of large requests run into an
 * answer (a refused connection, a 503 / RESOURCE_EXHAUSTED naming the
 * limit), never into a server that stops answering. */
#ifndef RUNNEL_SERVER_LIMITS_H
#define RUNNEL_SERVER_LIMITS_H

#include <stdatomic.h>
#include <stddef.h>

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

#endif /* RUNNEL_SERVER_LIMITS_H */
