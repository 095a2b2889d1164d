/* File-descriptor and memory budgets of runnel-server (see limits.h). */
#include "server/limits.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

rn_status server_fd_budget_raise(server_fd_budget *out)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return rn_set_error(RN_IO_ERROR, "cannot read RLIMIT_NOFILE");
    server_fd_budget b = {.before = (long)r.rlim_cur};
    if (r.rlim_cur != r.rlim_max) {
        struct rlimit raised = {r.rlim_max, r.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            r = raised;
    }
    /* RLIM_INFINITY is not a number of descriptors: the kernel's ceiling
     * (fs.nr_open) is 2^20 by default. */
    const rlim_t ceiling = (rlim_t)1 << 20;
    b.soft = (long)(r.rlim_cur == RLIM_INFINITY || r.rlim_cur > ceiling ? ceiling : r.rlim_cur);
    b.hard = (long)(r.rlim_max == RLIM_INFINITY || r.rlim_max > ceiling ? ceiling : r.rlim_max);
    b.reserve = b.soft / 8 > 64 ? b.soft / 8 : 64;
    b.connections = b.soft - b.reserve;
    if (b.connections < 16)
        return rn_set_error(RN_IO_ERROR,
                            "only %ld file descriptors (RLIMIT_NOFILE, hard limit %ld): "
                            "runnel-server keeps %ld for itself and needs 16 for connections",
                            b.soft, b.hard, b.reserve);
    *out = b;
    return RN_OK;
}

int server_byte_budget_take(server_byte_budget *budget, size_t bytes)
{
    if (budget == NULL || budget->limit == 0)
        return 1;
    size_t held = atomic_load(&budget->held);
    do {
        if (bytes > budget->limit - held || held > budget->limit)
            return 0;
    } while (!atomic_compare_exchange_weak(&budget->held, &held, held + bytes));
    return 1;
}

void server_byte_budget_give(server_byte_budget *budget, size_t bytes)
{
    if (budget != NULL && budget->limit != 0)
        atomic_fetch_sub(&budget->held, bytes);
}

/* ---- connections by client address ---- */

typedef struct conn {
    int fd;
    dev_t dev;
    ino_t ino;
    uint8_t address[16]; /* IPv4 in the first 4 bytes, or IPv6 */
} conn;

struct server_conn_table {
    size_t max_total, max_per_client;
    conn *conns;
    size_t n, capacity;
};

static void address_of(const struct sockaddr *peer, uint8_t out[16])
{
    memset(out, 0, 16);
    if (peer == NULL)
        return;
    if (peer->sa_family == AF_INET)
        memcpy(out, &((const struct sockaddr_in *)(const void *)peer)->sin_addr, 4);
    else if (peer->sa_family == AF_INET6)
        memcpy(out, &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr, 16);
}

/* Whether conn's descriptor still names the socket it was recorded with. */
static int still_open(const conn *c)
{
    struct stat st;
    return fstat(c->fd, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino;
}

/* Drops the connections that have gone, of `address` only when not NULL. */
static void forget_gone(server_conn_table *t, const uint8_t *address)
{
    for (size_t i = 0; i < t->n;) {
        conn *c = &t->conns[i];
        if ((address == NULL || memcmp(c->address, address, 16) == 0) && !still_open(c))
            *c = t->conns[--t->n];
        else
            i++;
    }
}

static size_t count_of(const server_conn_table *t, const uint8_t *address)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += memcmp(t->conns[i].address, address, 16) == 0;
    return n;
}

rn_status server_conn_table_create(size_t max_total, size_t max_per_client, server_conn_table **out)
{
    server_conn_table *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the connection table");
    t->max_total = max_total ? max_total : 1;
    t->max_per_client = max_per_client ? max_per_client : 1;
    *out = t;
    return RN_OK;
}

void server_conn_table_free(server_conn_table *t)
{
    if (t == NULL)
        return;
    free(t->conns);
    free(t);
}

server_conn_admit server_conn_table_admit(server_conn_table *t, int fd, const struct sockaddr *peer)
{
    uint8_t address[16];
    address_of(peer, address);
    /* Checking the address's own connections first keeps an accept cheap:
     * the whole table is looked through only when it seems full. */
    if (count_of(t, address) >= t->max_per_client) {
        forget_gone(t, address);
        if (count_of(t, address) >= t->max_per_client)
            return SERVER_CONN_CLIENT_FULL;
    }
    if (t->n >= t->max_total) {
        forget_gone(t, NULL);
        if (t->n >= t->max_total)
            return SERVER_CONN_TABLE_FULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0)
        return SERVER_CONN_ERROR; /* not a descriptor: could not be told apart later */
    /* A descriptor number recorded before belongs to a connection closed
     * since (this one has it now). */
    for (size_t i = 0; i < t->n; i++)
        if (t->conns[i].fd == fd) {
            t->conns[i] = t->conns[--t->n];
            break;
        }
    if (t->n == t->capacity) {
        size_t capacity = t->capacity ? t->capacity * 2 : 64;
        conn *grown = realloc(t->conns, capacity * sizeof *grown);
        if (grown == NULL)
            return SERVER_CONN_ERROR;
        t->conns = grown;
        t->capacity = capacity;
    }
    conn *c = &t->conns[t->n++];
    c->fd = fd;
    c->dev = st.st_dev;
    c->ino = st.st_ino;
    memcpy(c->address, address, 16);
    return SERVER_CONN_ADMITTED;
}

void server_conn_table_forget(server_conn_table *t, int fd)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->conns[i].fd == fd) {
            t->conns[i] = t->conns[--t->n];
            return;
        }
}

size_t server_conn_table_count(server_conn_table *t, const struct sockaddr *peer)
{
    if (peer == NULL) {
        forget_gone(t, NULL);
        return t->n;
    }
    uint8_t address[16];
    address_of(peer, address);
    forget_gone(t, address);
    return count_of(t, address);
}
