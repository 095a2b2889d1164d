/* The gRPC front's own accepts (see grpc_listen.h).
 *
 * One thread waits (epoll) on the listening socket, an eventfd that stops
 * it, and the accepted sockets still waiting for their preface (edge-
 * triggered: a partial preface is not reported again until more arrives).
 * Nothing here blocks: the listening socket and the accepted ones are
 * non-blocking, and the preface is only peeked at, left for gRPC to read. */
#include "server/grpc_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/limits.h"

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; /* RFC 9113, 3.4 */
#define PREFACE_SIZE      (sizeof PREFACE - 1)
#define FRAME_HEADER_SIZE 9
#define FRAME_SETTINGS    0x4
/* A client's first SETTINGS frame is a few 6-byte settings: one larger than
 * this is handed over once its header is in. */
#define PEEK_SIZE (PREFACE_SIZE + FRAME_HEADER_SIZE + 246)

typedef struct pending {
    int fd;
    double deadline; /* monotonic seconds */
} pending;

struct server_grpc_listener {
    int listen_fd, wake_fd, epoll_fd, port;
    unsigned timeout_secs;
    server_conn_table *table;
    grpc_server *server;
    grpc_server_credentials *credentials;
    pending *pending;
    size_t n_pending, pending_capacity;
    pthread_t thread;
    int started;
};

static double now_secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Closes pending connection i and forgets it. */
static void drop_pending(server_grpc_listener *l, size_t i, int hand_over)
{
    int fd = l->pending[i].fd;
    epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
    l->pending[i] = l->pending[--l->n_pending];
    if (hand_over) {
        /* gRPC owns fd from here, and closes it when the client goes (the
         * table finds it gone then). */
        grpc_server_add_channel_from_fd(l->server, fd, l->credentials);
        return;
    }
    server_conn_table_forget(l->table, fd);
    close(fd);
}

static void accept_all(server_grpc_listener *l)
{
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t size = sizeof peer;
        int fd =
            accept4(l->listen_fd, (struct sockaddr *)&peer, &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                usleep(10000); /* no room now: the connection waits in the backlog */
            return;            /* EAGAIN: none left; anything else: the next wakeup retries */
        }
        if (server_conn_table_admit(l->table, fd, (struct sockaddr *)&peer) !=
            SERVER_CONN_ADMITTED) {
            close(fd); /* over a limit: refused at once, as HTTP's are */
            continue;
        }
        if (l->n_pending == l->pending_capacity) {
            size_t capacity = l->pending_capacity ? l->pending_capacity * 2 : 64;
            pending *grown = realloc(l->pending, capacity * sizeof *grown);
            if (grown == NULL) {
                server_conn_table_forget(l->table, fd);
                close(fd);
                continue;
            }
            l->pending = grown;
            l->pending_capacity = capacity;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as gRPC's own accepts */
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.fd = fd};
        l->pending[l->n_pending++] = (pending){fd, now_secs() + l->timeout_secs};
        if (epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
            drop_pending(l, l->n_pending - 1, 0);
    }
}

/* Pending connection i has news: hands it to gRPC once its preface and the
 * SETTINGS frame that must follow it (RFC 9113, 3.4) are in, closes it if
 * it closed or sent something else, or leaves it waiting. */
static void check_preface(server_grpc_listener *l, size_t i)
{
    unsigned char head[PEEK_SIZE];
    ssize_t n = recv(l->pending[i].fd, head, sizeof head, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    size_t got = n > 0 ? (size_t)n : 0;
    size_t compared = got < PREFACE_SIZE ? got : PREFACE_SIZE;
    if (n <= 0 || memcmp(head, PREFACE, compared) != 0) {
        drop_pending(l, i, 0); /* gone, or not HTTP/2 */
        return;
    }
    if (got < PREFACE_SIZE + FRAME_HEADER_SIZE)
        return;
    const unsigned char *frame = head + PREFACE_SIZE;
    size_t length = (size_t)frame[0] << 16 | (size_t)frame[1] << 8 | frame[2];
    if (frame[3] != FRAME_SETTINGS)
        drop_pending(l, i, 0); /* not what HTTP/2 requires next */
    else if (got >= PREFACE_SIZE + FRAME_HEADER_SIZE + length || got == sizeof head)
        drop_pending(l, i, 1);
}

static void *listen_main(void *arg)
{
    server_grpc_listener *l = arg;
    struct epoll_event events[64];
    for (;;) {
        int n = epoll_wait(l->epoll_fd, events, 64, 250);
        for (int e = 0; e < n; e++) {
            int fd = events[e].data.fd;
            if (fd == l->wake_fd)
                return NULL;
            if (fd == l->listen_fd) {
                accept_all(l);
                continue;
            }
            for (size_t i = 0; i < l->n_pending; i++)
                if (l->pending[i].fd == fd) {
                    check_preface(l, i);
                    break;
                }
        }
        double now = now_secs();
        for (size_t i = 0; i < l->n_pending;) {
            if (l->pending[i].deadline <= now)
                drop_pending(l, i, 0); /* no preface within the timeout */
            else
                i++;
        }
    }
}

static void free_listener(server_grpc_listener *l)
{
    for (size_t i = 0; i < l->n_pending; i++)
        close(l->pending[i].fd);
    free(l->pending);
    if (l->listen_fd >= 0)
        close(l->listen_fd);
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    if (l->epoll_fd >= 0)
        close(l->epoll_fd);
    if (l->credentials != NULL)
        grpc_server_credentials_release(l->credentials);
    server_conn_table_free(l->table);
    free(l);
}

rn_status server_grpc_listen(const server_grpc_listen_config *config, server_grpc_listener **out)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)config->port)};
    if (inet_pton(AF_INET, config->address, &addr.sin_addr) != 1)
        return rn_set_error(RN_IO_ERROR, "gRPC: '%s' is not an IPv4 address", config->address);
    server_grpc_listener *l = calloc(1, sizeof *l);
    if (l == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the gRPC listener");
    l->listen_fd = l->wake_fd = l->epoll_fd = -1;
    l->timeout_secs = config->timeout_secs ? config->timeout_secs : 120;
    size_t total = config->max_connections ? config->max_connections : SIZE_MAX;
    size_t per_client = config->max_per_client ? config->max_per_client : SIZE_MAX;
    if (server_conn_table_create(total, per_client, &l->table) != RN_OK) {
        free_listener(l);
        return RN_OUT_OF_MEMORY;
    }
    int one = 1;
    l->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->listen_fd < 0 ||
        setsockopt(l->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(l->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(l->listen_fd, 4096) != 0) {
        int err = errno;
        free_listener(l);
        return rn_set_error(RN_IO_ERROR, "gRPC: cannot listen on %s:%d (%s)", config->address,
                            config->port, strerror(err));
    }
    socklen_t size = sizeof addr;
    getsockname(l->listen_fd, (struct sockaddr *)&addr, &size);
    l->port = ntohs(addr.sin_port);
    l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event on_listen = {.events = EPOLLIN, .data.fd = l->listen_fd};
    struct epoll_event on_wake = {.events = EPOLLIN, .data.fd = l->wake_fd};
    if (l->wake_fd < 0 || l->epoll_fd < 0 ||
        epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->listen_fd, &on_listen) != 0 ||
        epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->wake_fd, &on_wake) != 0) {
        int err = errno;
        free_listener(l);
        return rn_set_error(RN_IO_ERROR, "gRPC: cannot wait on the listening socket (%s)",
                            strerror(err));
    }
    l->credentials = grpc_insecure_server_credentials_create();
    *out = l;
    return RN_OK;
}

int server_grpc_listener_port(const server_grpc_listener *l)
{
    return l->port;
}

rn_status server_grpc_listener_start(server_grpc_listener *l, grpc_server *server)
{
    l->server = server;
    if (pthread_create(&l->thread, NULL, listen_main, l) != 0)
        return rn_set_error(RN_INTERNAL, "gRPC: cannot start the accepting thread");
    l->started = 1;
    return RN_OK;
}

void server_grpc_listener_stop(server_grpc_listener *l)
{
    if (l == NULL)
        return;
    if (l->started) {
        uint64_t one = 1;
        while (write(l->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
        }
        pthread_join(l->thread, NULL);
    }
    free_listener(l);
}
