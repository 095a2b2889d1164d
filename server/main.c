/* runnel-server: a KServe v2 / Open Inference Protocol model server on
 * runnel's public API (docs/serving.md).
 *
 *   runnel-server --model-repository DIR [--http-port 8000] [--http-address 0.0.0.0]
 *                 [--grpc-port N] [--grpc-port-file FILE] [--threads 4] [--device REF]
 *                 [--max-queue-size 64] [--max-body-bytes N] [--repository-poll-secs 0]
 *                 [--model-control-mode none|poll|explicit] [--load-model A,B|*]
 *                 [--drain-secs 5] [--port-file FILE] [--client-timeout-secs 15]
 *                 [--max-connections N] [--max-connections-per-client N]
 *                 [--max-buffered-bytes N]
 *
 * Every flag can also come from the environment (RUNNEL_MODEL_REPOSITORY,
 * RUNNEL_HTTP_PORT, ...: the flag's name in capitals with '_'); a flag
 * wins. SIGTERM or SIGINT turns readiness off, keeps serving for the drain
 * period, then stops accepting, answers every accepted call and exits 0.
 * gRPC (KServe v2's GRPCInferenceService) is served only with --grpc-port
 * (0: any free port), on the HTTP address. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runnel/runnel.h"
#include "server/grpc.h"
#include "server/http.h"
#include "server/limits.h"
#include "server/registry.h"

typedef struct options {
    const char *repository;
    const char *address;
    const char *device;
    const char *port_file;
    const char *grpc_port_file;
    const char *control;
    const char *load_models;
    long port, threads, max_queue_size, max_body, poll_secs, drain_secs;
    long client_timeout, max_connections, max_per_client, max_buffered;
    long grpc_port; /* -1: no gRPC */
} options;

/* X(flag, environment variable, field, is a number) */
#define SERVER_FLAG_MAP(X)                                                                         \
    X("--model-repository", "RUNNEL_MODEL_REPOSITORY", repository, 0)                              \
    X("--http-address", "RUNNEL_HTTP_ADDRESS", address, 0)                                         \
    X("--device", "RUNNEL_DEVICE", device, 0)                                                      \
    X("--port-file", "RUNNEL_PORT_FILE", port_file, 0)                                             \
    X("--grpc-port-file", "RUNNEL_GRPC_PORT_FILE", grpc_port_file, 0)                              \
    X("--model-control-mode", "RUNNEL_MODEL_CONTROL_MODE", control, 0)                             \
    X("--load-model", "RUNNEL_LOAD_MODEL", load_models, 0)                                         \
    X("--grpc-port", "RUNNEL_GRPC_PORT", grpc_port, 1)                                             \
    X("--http-port", "RUNNEL_HTTP_PORT", port, 1)                                                  \
    X("--threads", "RUNNEL_THREADS", threads, 1)                                                   \
    X("--max-queue-size", "RUNNEL_MAX_QUEUE_SIZE", max_queue_size, 1)                              \
    X("--max-body-bytes", "RUNNEL_MAX_BODY_BYTES", max_body, 1)                                    \
    X("--repository-poll-secs", "RUNNEL_REPOSITORY_POLL_SECS", poll_secs, 1)                       \
    X("--drain-secs", "RUNNEL_DRAIN_SECS", drain_secs, 1)                                          \
    X("--client-timeout-secs", "RUNNEL_CLIENT_TIMEOUT_SECS", client_timeout, 1)                    \
    X("--max-connections", "RUNNEL_MAX_CONNECTIONS", max_connections, 1)                           \
    X("--max-connections-per-client", "RUNNEL_MAX_CONNECTIONS_PER_CLIENT", max_per_client, 1)      \
    X("--max-buffered-bytes", "RUNNEL_MAX_BUFFERED_BYTES", max_buffered, 1)

static void usage(void)
{
    fprintf(stderr,
            "usage: runnel-server --model-repository DIR [--http-port 8000] "
            "[--http-address 0.0.0.0]\n"
            "                     [--grpc-port N] [--grpc-port-file FILE]\n"
            "                     [--threads 4] [--device DEVICE] [--max-queue-size 64]\n"
            "                     [--max-body-bytes 268435456] [--repository-poll-secs 0]\n"
            "                     [--model-control-mode none|poll|explicit] [--load-model A,B|*]\n"
            "                     [--drain-secs 5] [--port-file FILE] [--client-timeout-secs 15]\n"
            "                     [--max-connections N] [--max-connections-per-client N]\n"
            "                     [--max-buffered-bytes N]\n"
            "Each flag may also be set from the environment (RUNNEL_MODEL_REPOSITORY, ...).\n");
}

static int set_number(const char *flag, const char *text, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno != 0 || v < 0) {
        fprintf(stderr, "runnel-server: %s: '%s' is not a number >= 0\n", flag, text);
        return 0;
    }
    *out = v;
    return 1;
}

static int set_string(const char *flag, const char *text, const char **out)
{
    (void)flag;
    *out = text;
    return 1;
}

#define SERVER_SET_(number, flag, text, field)                                                     \
    (number ? set_number(flag, text, (long *)(void *)&o->field)                                    \
            : set_string(flag, text, (const char **)(void *)&o->field))

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.address = "0.0.0.0",
                   .port = 8000,
                   .threads = 4,
                   .max_queue_size = 64,
                   .max_body = 256L << 20,
                   .drain_secs = 5,
                   .client_timeout = 15,
                   .max_connections = -1, /* -1: what the fd budget allows */
                   .max_per_client = -1,  /* -1: a quarter of max_connections */
                   .max_buffered = -1,    /* -1: 4x --max-body-bytes, at least 1 GiB */
                   .grpc_port = -1};
#define SERVER_FROM_ENV_(flag, env, field, number)                                                 \
    if (getenv(env) != NULL && !SERVER_SET_(number, env, getenv(env), field))                      \
        return 0;
    SERVER_FLAG_MAP(SERVER_FROM_ENV_)
#undef SERVER_FROM_ENV_
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        int known = 0;
#define SERVER_FROM_FLAG_(flag, env, field, number)                                                \
    if (!known && strlen(flag) == len && strncmp(arg, flag, len) == 0) {                           \
        known = 1;                                                                                 \
        if (value == NULL) {                                                                       \
            fprintf(stderr, "runnel-server: %s needs a value\n", flag);                            \
            return 0;                                                                              \
        }                                                                                          \
        if (!SERVER_SET_(number, flag, value, field))                                              \
            return 0;                                                                              \
        if (eq == NULL)                                                                            \
            i++;                                                                                   \
    }
        SERVER_FLAG_MAP(SERVER_FROM_FLAG_)
#undef SERVER_FROM_FLAG_
        if (!known) {
            fprintf(stderr, "runnel-server: unknown flag '%s'\n", arg);
            return 0;
        }
    }
    if (o->repository == NULL) {
        fprintf(stderr, "runnel-server: --model-repository is required\n");
        return 0;
    }
    if (o->client_timeout > 3600) {
        fprintf(stderr, "runnel-server: --client-timeout-secs %ld: at most 3600\n",
                o->client_timeout);
        return 0;
    }
    if (o->port > 65535 || o->grpc_port > 65535) {
        fprintf(stderr, "runnel-server: --%s-port %ld is not a port\n",
                o->port > 65535 ? "http" : "grpc", o->port > 65535 ? o->port : o->grpc_port);
        return 0;
    }
    return 1;
}

/* The model control mode: --model-control-mode, else poll when
 * --repository-poll-secs is set, else none. A poll period under another
 * mode, or --load-model outside explicit, is an error. */
static int control_mode(const options *o, server_model_control *out)
{
    const char *mode = o->control ? o->control : o->poll_secs > 0 ? "poll" : "none";
    if (strcmp(mode, "none") == 0)
        *out = SERVER_CONTROL_NONE;
    else if (strcmp(mode, "poll") == 0)
        *out = SERVER_CONTROL_POLL;
    else if (strcmp(mode, "explicit") == 0)
        *out = SERVER_CONTROL_EXPLICIT;
    else {
        fprintf(stderr, "runnel-server: --model-control-mode '%s': none, poll or explicit\n", mode);
        return 0;
    }
    if ((*out == SERVER_CONTROL_POLL) != (o->poll_secs > 0)) {
        fprintf(stderr, "runnel-server: --model-control-mode poll and --repository-poll-secs "
                        "go together\n");
        return 0;
    }
    if (o->load_models != NULL && *out != SERVER_CONTROL_EXPLICIT) {
        fprintf(stderr, "runnel-server: --load-model needs --model-control-mode explicit\n");
        return 0;
    }
    return 1;
}

static void write_port(const char *path, int port)
{
    if (path == NULL)
        return;
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%d\n", port);
        fclose(f);
    }
}

/* The default device: CPU when the core has it, else REF. */
static const char *default_device(const rn_core *core)
{
    const char *version; /* asked by name: a listing would start every plugin */
    if (rn_core_get_version(core, "CPU", &version) == RN_OK)
        return "CPU";
    rn_clear_error();
    return "REF";
}

/* Waits for SIGTERM/SIGINT, polling the repository meanwhile. */
static int wait_for_signal(const sigset_t *signals, server_registry *registry, long poll_secs)
{
    for (;;) {
        struct timespec timeout = {poll_secs > 0 ? poll_secs : 3600, 0};
        int sig = sigtimedwait(signals, NULL, &timeout);
        if (sig > 0)
            return sig;
        if (poll_secs > 0)
            server_registry_poll(registry);
    }
}

int main(int argc, char **argv)
{
    /* Before any thread starts, so that only sigtimedwait sees the signals. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A request's buffers (its body, a gRPC message: 600 KB for one
     * 224x224 image) are allocated and freed once per request. glibc maps
     * such blocks anew, or trims the heap after them, so each request paid
     * a page fault per 4 KB touched (~150 for that image); keeping them in
     * the heap reuses warm pages. The byte budget still bounds what is
     * held at once; freed memory is kept up to 128 MiB per heap. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);

    options o;
    server_model_control control;
    if (!parse_options(argc, argv, &o) || !control_mode(&o, &control)) {
        usage();
        return 2;
    }
    rn_core *core;
    if (rn_core_create(&core) != RN_OK) {
        fprintf(stderr, "runnel-server: %s\n", rn_last_error());
        return 1;
    }
    const char *device = o.device ? o.device : default_device(core);
    server_registry *registry = NULL;
    server_http *http = NULL;
    server_grpc *grpc = NULL;
    server_fd_budget fds;
    rn_status st = server_fd_budget_raise(&fds);
    if (st != RN_OK) {
        fprintf(stderr, "runnel-server: %s\n", rn_last_error());
        rn_core_free(core);
        return 1;
    }
    /* With gRPC on, each front may hold half of the connection budget:
     * together they cannot use the reserve. */
    long room = o.grpc_port >= 0 ? fds.connections / 2 : fds.connections;
    if (o.max_connections < 0 || o.max_connections > room)
        o.max_connections = room > 65536 ? 65536 : room;
    if (o.max_per_client < 0)
        o.max_per_client = o.max_connections / 4;
    server_byte_budget budget = {.limit = (size_t)(o.max_buffered >= 0       ? o.max_buffered
                                                   : o.max_body > (1L << 28) ? o.max_body * 4
                                                                             : 1L << 30)};
    fprintf(stderr,
            "runnel-server: file descriptors: %ld (RLIMIT_NOFILE, was %ld, hard %ld), %ld kept "
            "free; HTTP connections at most %ld, %ld per client address%s; client timeout %ld s; "
            "request bytes held at most %zu\n",
            fds.soft, fds.before, fds.hard, fds.reserve, o.max_connections, o.max_per_client,
            o.grpc_port >= 0 ? " (and as many gRPC ones)" : "", o.client_timeout, budget.limit);
    server_http_config config = {o.address,
                                 (int)o.port,
                                 (unsigned)o.threads,
                                 (size_t)o.max_body,
                                 (unsigned)o.client_timeout,
                                 (unsigned)o.max_connections,
                                 (unsigned)o.max_per_client,
                                 &budget};
    server_grpc_config grpc_config = {.address = o.address,
                                      .port = (int)o.grpc_port,
                                      .threads = (unsigned)o.threads,
                                      .max_message = (size_t)o.max_body,
                                      .timeout_secs = (unsigned)o.client_timeout,
                                      .max_connections = (size_t)o.max_connections,
                                      .max_per_client = (size_t)o.max_per_client,
                                      .budget = &budget};
    st = server_registry_open(core, o.repository, device, (size_t)o.max_queue_size, control,
                              o.load_models, &registry);
    if (st == RN_OK)
        st = server_http_start(registry, &config, &http);
    if (st == RN_OK && o.grpc_port >= 0)
        st = server_grpc_start(registry, &grpc_config, &grpc);
    if (st != RN_OK) {
        fprintf(stderr, "runnel-server: %s\n", rn_last_error());
        server_http_stop(http);
        server_registry_free(registry);
        rn_core_free(core);
        return 1;
    }
    int port = server_http_port(http);
    write_port(o.port_file, port);
    if (grpc != NULL) {
        write_port(o.grpc_port_file, server_grpc_port(grpc));
        server_grpc_set_ready(grpc, 1);
    }
    server_http_set_ready(http, 1);
    fprintf(stderr, "runnel-server: serving %s on %s:%d (device %s, %ld HTTP threads)\n",
            o.repository, o.address, port, device, o.threads);
    if (grpc != NULL)
        fprintf(stderr, "runnel-server: gRPC on %s:%d (completion-queue threads: %u)\n", o.address,
                server_grpc_port(grpc), server_grpc_queue_threads(grpc));

    int sig = wait_for_signal(&signals, registry, o.poll_secs);
    server_http_set_ready(http, 0);
    if (grpc != NULL)
        server_grpc_set_ready(grpc, 0);
    fprintf(stderr, "runnel-server: %s: not ready; draining for %ld s (%ld calls in flight)\n",
            strsignal(sig), o.drain_secs,
            server_http_in_flight(http) + (grpc ? server_grpc_in_flight(grpc) : 0));
    struct timespec drain = {o.drain_secs, 0};
    while (nanosleep(&drain, &drain) != 0 && errno == EINTR) {
    }
    server_grpc_stop(grpc);
    server_http_stop(http);
    server_registry_free(registry);
    rn_core_free(core);
    fprintf(stderr, "runnel-server: stopped\n");
    return 0;
}
