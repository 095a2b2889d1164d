/* The HTTP front of runnel-server (see http.h): routing, the v2 metadata
 * and health answers, infer calls with suspend/resume, /metrics. */
#include "server/http.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runnel/version.h"
#include "server/extension.h"
#include "server/metrics.h"
#include "server/route.h"

struct server_http {
    server_registry *registry;
    struct MHD_Daemon *daemon;
    size_t max_body;
    server_byte_budget *budget;
    unsigned timeout_secs;
    atomic_int ready;
    atomic_int stopping;   /* answers say "Connection: close" */
    atomic_long in_flight; /* infer calls submitted and not yet sent their answer */
};

/* One HTTP request, from its headers until MHD has sent the answer. */
typedef struct server_call {
    server_http *http;
    struct MHD_Connection *connection;
    server_route route;
    char *body;
    size_t size, cap;
    size_t reserved; /* of the byte budget, given back when the call ends */
    int too_large;
    int over_budget;    /* the server holds too many request bytes: 503 */
    size_t wanted;      /* what the budget refused */
    int answered_early; /* a 413 went out from the headers: nothing more to answer */
    uint64_t received_ns;
    server_model *model; /* acquired while its job is in flight */
    server_job job;
    atomic_int answered; /* the job's done has run */
} server_call;

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, char *body, size_t size,
                               const char *content_type, size_t header_size)
{
    if (body == NULL) { /* out of memory: an empty answer of the same status */
        body = malloc(1);
        size = 0;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(size, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    /* Stopping: each keep-alive connection closes after its answer, so the
     * drain ends with every request on it answered, not cut. */
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const server_http *h = info ? info->socket_context : NULL;
    if (h != NULL && atomic_load(&h->stopping))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE) /* a full queue or budget: worth a retry */
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (header_size > 0) {
        char text[32];
        snprintf(text, sizeof text, "%zu", header_size);
        MHD_add_response_header(r, "Inference-Header-Content-Length", text);
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_json(struct MHD_Connection *c, unsigned status, json_t *root)
{
    char *body = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return respond(c, status, body, body ? strlen(body) : 0, "application/json", 0);
}

static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned status, const char *fmt,
                                     ...) __attribute__((format(printf, 3, 4)));

static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned status, const char *fmt,
                                     ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    size_t size = 0;
    char *body = server_error_body(message, &size);
    return respond(c, status, body, size, "application/json", 0);
}

/* ---- metadata and health ---- */

static json_t *port_json(const rn_port *p)
{
    const char *dt = server_datatype_name(p->element_type);
    json_t *shape = json_array();
    for (int d = 0; d < p->shape.rank; d++)
        json_array_append_new(shape, json_integer(p->shape.dims[d]));
    if (p->shape.rank < 0)
        json_array_append_new(shape, json_integer(-1));
    return json_pack("{s:s, s:s, s:o}", "name", p->name, "datatype", dt ? dt : "UNSUPPORTED",
                     "shape", shape);
}

typedef struct versions_of {
    const char *name;
    json_t *list;
} versions_of;

static void add_version(server_model *m, void *user)
{
    versions_of *v = user;
    if (strcmp(server_model_name(m), v->name) == 0)
        json_array_append_new(v->list, json_string(server_model_version_text(m)));
}

static enum MHD_Result model_metadata(server_http *h, struct MHD_Connection *c, server_model *m)
{
    versions_of versions = {server_model_name(m), json_array()};
    server_registry_foreach(h->registry, add_version, &versions);
    json_t *inputs = json_array(), *outputs = json_array();
    rn_port port;
    for (size_t i = 0; i < server_model_input_count(m); i++)
        if (server_model_input(m, i, &port) == RN_OK)
            json_array_append_new(inputs, port_json(&port));
    for (size_t i = 0; i < server_model_output_count(m); i++)
        if (server_model_output(m, i, &port) == RN_OK)
            json_array_append_new(outputs, port_json(&port));
    /* a pipeline is Triton's "ensemble" */
    json_t *root =
        json_pack("{s:s, s:o, s:s, s:o, s:o}", "name", server_model_name(m), "versions",
                  versions.list, "platform", server_model_is_pipeline(m) ? "ensemble" : "onnx",
                  "inputs", inputs, "outputs", outputs);
    return respond_json(c, MHD_HTTP_OK, root);
}

static enum MHD_Result answer_get(server_call *call)
{
    server_http *h = call->http;
    struct MHD_Connection *c = call->connection;
    int ready = atomic_load(&h->ready);
    switch (call->route.kind) {
    case SERVER_ROUTE_SERVER_METADATA: {
        json_t *extensions = json_array();
#define SERVER_EXTENSION_(name) json_array_append_new(extensions, json_string(name));
        SERVER_EXTENSIONS(SERVER_EXTENSION_)
#undef SERVER_EXTENSION_
        return respond_json(c, MHD_HTTP_OK,
                            json_pack("{s:s, s:s, s:o}", "name", "runnel-server", "version",
                                      RN_VERSION_STRING, "extensions", extensions));
    }
    case SERVER_ROUTE_MODEL_STATS: {
        json_t *stats = server_statistics_json(h->registry, call->route.model, call->route.version);
        if (stats == NULL)
            return respond_error(c, MHD_HTTP_NOT_FOUND, "%s", rn_last_error());
        return respond_json(c, MHD_HTTP_OK, stats);
    }
    case SERVER_ROUTE_LIVE:
        return respond_json(c, MHD_HTTP_OK, json_pack("{s:b}", "live", 1));
    case SERVER_ROUTE_READY:
        return respond_json(c, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                            json_pack("{s:b}", "ready", ready));
    case SERVER_ROUTE_METRICS: {
        size_t size = 0;
        char *text = server_metrics_render(h->registry, &size);
        return respond(c, MHD_HTTP_OK, text, size, "text/plain; version=0.0.4", 0);
    }
    default:
        break;
    }
    server_model *m = server_registry_find(h->registry, call->route.model, call->route.version);
    if (m == NULL)
        return respond_error(c, MHD_HTTP_NOT_FOUND, "%s", rn_last_error());
    enum MHD_Result ret;
    if (call->route.kind == SERVER_ROUTE_MODEL_CONFIG)
        ret = respond_json(c, MHD_HTTP_OK, server_config_json(m));
    else if (call->route.kind == SERVER_ROUTE_MODEL_READY)
        ret = respond_json(c, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                           json_pack("{s:s, s:s, s:b}", "name", server_model_name(m), "version",
                                     server_model_version_text(m), "ready", ready));
    else
        ret = model_metadata(h, c, m);
    server_model_release(m);
    return ret;
}

/* ---- the repository extension ---- */

/* The HTTP status of a registry error. */
static unsigned http_status_of(rn_status st)
{
    switch (st) {
    case RN_NOT_FOUND:
        return MHD_HTTP_NOT_FOUND;
    case RN_OUT_OF_MEMORY:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    default:
        return MHD_HTTP_BAD_REQUEST; /* not allowed in this mode, or the model failed to load */
    }
}

static enum MHD_Result answer_repository(server_call *call)
{
    server_http *h = call->http;
    struct MHD_Connection *c = call->connection;
    json_t *body = NULL;
    if (call->size > 0) { /* optional: {"ready": bool} for the index, parameters for a load */
        json_error_t error;
        if ((body = json_loadb(call->body, call->size, 0, &error)) == NULL ||
            !json_is_object(body)) {
            json_decref(body);
            return respond_error(c, MHD_HTTP_BAD_REQUEST, "the body must be a JSON object");
        }
    }
    if (call->route.kind == SERVER_ROUTE_REPO_INDEX) {
        const json_t *ready = body ? json_object_get(body, "ready") : NULL;
        int ready_only = ready != NULL && json_is_true(ready);
        json_decref(body);
        return respond_json(c, MHD_HTTP_OK, server_index_json(h->registry, ready_only));
    }
    const json_t *params = body ? json_object_get(body, "parameters") : NULL;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)params, key, value)
    {
        if (call->route.kind == SERVER_ROUTE_REPO_UNLOAD && strcmp(key, "unload_dependents") == 0)
            continue; /* pipelines look their steps up per request: nothing depends */
        enum MHD_Result ret = respond_error(
            c, MHD_HTTP_BAD_REQUEST,
            "parameter '%s' is not supported (runnel-server loads from the repository)", key);
        json_decref(body);
        return ret;
    }
    json_decref(body);
    rn_status st = call->route.kind == SERVER_ROUTE_REPO_LOAD
                       ? server_registry_load(h->registry, call->route.model)
                       : server_registry_unload(h->registry, call->route.model);
    if (st != RN_OK)
        return respond_error(c, http_status_of(st), "%s", rn_last_error());
    return respond(c, MHD_HTTP_OK, strdup(""), 0, "application/json", 0);
}

/* ---- infer ---- */

static void job_done(server_job *job)
{
    server_call *call = job->user;
    atomic_store(&call->answered, 1);
    MHD_resume_connection(call->connection); /* call may be freed from here on */
}

/* Answers an infer call whose job is done (MHD calls back after resume). */
static enum MHD_Result answer_job(server_call *call)
{
    server_job *job = &call->job;
    if (job->http_status != 200)
        return respond_error(call->connection, (unsigned)job->http_status, "%s",
                             job->error ? job->error : "out of memory");
    server_response r = job->response;
    job->response.body = NULL; /* MHD owns it now */
    return respond(call->connection, MHD_HTTP_OK, r.body, r.size,
                   r.header_size ? "application/octet-stream" : "application/json", r.header_size);
}

/* Reserves the byte budget for `bytes` of the call's body in all; 0 when the
 * server holds too many request bytes already. */
static int reserve(server_call *call, size_t bytes)
{
    if (bytes <= call->reserved)
        return 1;
    if (!server_byte_budget_take(call->http->budget, bytes - call->reserved))
        return 0;
    call->reserved = bytes;
    return 1;
}

static enum MHD_Result respond_over_budget(server_call *call, size_t bytes)
{
    server_byte_budget *b = call->http->budget;
    return respond_error(call->connection, MHD_HTTP_SERVICE_UNAVAILABLE,
                         "the server is busy: it holds %zu bytes of requests, and %zu more would "
                         "pass its limit of %zu (--max-buffered-bytes); retry later",
                         atomic_load(&b->held), bytes, b->limit);
}

static enum MHD_Result start_infer(server_call *call)
{
    server_http *h = call->http;
    struct MHD_Connection *c = call->connection;
    if (call->too_large)
        return respond_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
                             "the request body is larger than the server's limit of %zu bytes "
                             "(--max-body-bytes)",
                             h->max_body);
    server_model *m = server_registry_find(h->registry, call->route.model, call->route.version);
    if (m == NULL)
        return respond_error(c, MHD_HTTP_NOT_FOUND, "%s", rn_last_error());
    size_t header_size = SIZE_MAX;
    const char *text =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Inference-Header-Content-Length");
    if (text != NULL) {
        char *end;
        unsigned long long v = strtoull(text, &end, 10);
        if (*text == '\0' || *end != '\0') {
            server_model_count_failure(m, call->received_ns);
            server_model_release(m);
            return respond_error(c, MHD_HTTP_BAD_REQUEST,
                                 "Inference-Header-Content-Length '%s' is not a number", text);
        }
        header_size = (size_t)v;
    }
    server_job *job = &call->job;
    rn_status st =
        server_infer_parse(call->body ? call->body : "", call->size, header_size, &job->infer);
    if (st == RN_OK)
        st = server_model_bind(m, &job->infer);
    if (st != RN_OK) {
        server_model_count_failure(m, call->received_ns);
        server_model_release(m);
        return respond_error(c, MHD_HTTP_BAD_REQUEST, "%s", rn_last_error());
    }
    free(call->body); /* the inputs hold their own copies */
    call->body = NULL;
    job->done = job_done;
    job->user = call;
    job->received_ns = call->received_ns;
    call->model = m;
    atomic_fetch_add(&h->in_flight, 1);
    MHD_suspend_connection(c);
    if ((st = server_model_submit(m, job)) != RN_OK) {
        server_model_count_failure(m, call->received_ns);
        job->http_status = MHD_HTTP_SERVICE_UNAVAILABLE;
        job->error = strdup(rn_last_error());
        job_done(job);
    }
    return MHD_YES;
}

/* ---- libmicrohttpd callbacks ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **context)
{
    (void)version;
    server_http *h = cls;
    server_call *call = *context;
    if (call == NULL) { /* the headers are in: route, and refuse a body too large at once */
        if ((call = calloc(1, sizeof *call)) == NULL)
            return MHD_NO;
        call->http = h;
        call->connection = c;
        *context = call;
        server_route_parse(method, url, &call->route);
        const char *length =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length != NULL && strtoull(length, NULL, 10) > h->max_body) {
            call->too_large = 1;
            call->answered_early = 1;
            return respond_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
                                 "the request body (%s bytes) is larger than the server's limit "
                                 "of %zu bytes (--max-body-bytes)",
                                 length, h->max_body);
        }
        /* Over the byte budget the body is read and dropped, then answered
         * 503: a client that sends its body without waiting for 100
         * Continue would see a reset, not the answer, were it refused now. */
        if (length != NULL && !reserve(call, (size_t)strtoull(length, NULL, 10))) {
            call->over_budget = 1;
            call->wanted = (size_t)strtoull(length, NULL, 10);
        }
        return MHD_YES;
    }
    if (*upload_size > 0) { /* a piece of the body */
        size_t n = *upload_size;
        *upload_size = 0;
        if (call->too_large || call->over_budget || call->size + n > h->max_body) {
            call->too_large |= !call->over_budget;
            free(call->body);
            call->body = NULL;
            call->size = 0;
            return MHD_YES;
        }
        if (call->size + n > call->cap) {
            /* The whole body at once when its length was given: no more is
             * reserved than it needs. */
            size_t cap = call->cap ? call->cap : call->reserved > 0 ? call->reserved : 65536;
            while (cap < call->size + n)
                cap *= 2;
            if (!reserve(call, cap)) { /* answered 503 once the body is in */
                call->over_budget = 1;
                free(call->body);
                call->body = NULL;
                call->size = 0;
                call->wanted = cap;
                call->cap = 0;
                return MHD_YES;
            }
            char *grown = realloc(call->body, cap);
            if (grown == NULL)
                return MHD_NO;
            call->body = grown;
            call->cap = cap;
        }
        memcpy(call->body + call->size, upload, n);
        call->size += n;
        return MHD_YES;
    }
    if (atomic_load(&call->answered))
        return answer_job(call);
    if (call->answered_early)
        return MHD_YES;
    if (call->over_budget)
        return respond_over_budget(call, call->wanted);
    call->received_ns = server_now_ns();
    if (call->route.kind == SERVER_ROUTE_NOT_FOUND)
        return respond_error(c, MHD_HTTP_NOT_FOUND, "no route for %s %s", method, url);
    if (!call->route.method_allowed)
        return respond_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not allowed on %s", method,
                             url);
    if (call->route.kind == SERVER_ROUTE_INFER)
        return start_infer(call);
    if (call->route.kind >= SERVER_ROUTE_REPO_INDEX)
        return answer_repository(call);
    return answer_get(call);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **context,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    server_call *call = *context;
    if (call == NULL)
        return;
    *context = NULL;
    if (call->model != NULL) { /* an infer call that was submitted, now answered */
        server_model_release(call->model);
        atomic_fetch_sub(&call->http->in_flight, 1);
    }
    server_byte_budget_give(call->http->budget, call->reserved);
    server_infer_clear(&call->job.infer);
    free(call->job.response.body);
    free(call->job.error);
    free(call->body);
    free(call);
}

/* Every connection's socket context is its server, for respond(). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)c;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        *socket_context = cls;
}

rn_status server_http_start(server_registry *registry, const server_http_config *config,
                            server_http **out)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)config->port)};
    if (inet_pton(AF_INET, config->address, &addr.sin_addr) != 1)
        return rn_set_error(RN_INVALID_ARG, "--http-address '%s' is not an IPv4 address",
                            config->address);
    server_http *h = calloc(1, sizeof *h);
    if (h == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the HTTP server");
    h->registry = registry;
    h->max_body = config->max_body;
    h->budget = config->budget;
    h->timeout_secs = config->timeout_secs;
    /* The timeout closes a connection silent that long: half a header, a
     * body that stalls, an idle keep-alive (a suspended infer call is not
     * silent: MHD does not time it out). Past max_connections MHD stops
     * accepting until one closes; past max_per_client it accepts and closes
     * at once, so one address cannot take every connection. */
    unsigned threads = config->threads ? config->threads : 1;
    unsigned limit = config->max_connections > threads ? config->max_connections : threads;
    h->daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE,
        threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, h, MHD_OPTION_CONNECTION_TIMEOUT, config->timeout_secs,
        MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        config->max_per_client, MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    if (h->daemon == NULL) {
        free(h);
        return rn_set_error(RN_IO_ERROR, "cannot listen on %s:%d (in use, or not allowed)",
                            config->address, config->port);
    }
    *out = h;
    return RN_OK;
}

int server_http_port(const server_http *h)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? (int)info->port : -1;
}

void server_http_set_ready(server_http *h, int ready)
{
    atomic_store(&h->ready, ready);
}

long server_http_in_flight(server_http *h)
{
    return atomic_load(&h->in_flight);
}

void server_http_stop(server_http *h)
{
    if (h == NULL)
        return;
    int fd = MHD_quiesce_daemon(h->daemon); /* no new connections */
    /* A client that connects from now on is refused, not left in the backlog
     * to be reset at the end; the socket is closed only after
     * MHD_stop_daemon, as libmicrohttpd's threads may still hold it. */
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    atomic_store(&h->stopping, 1);
    /* Until every accepted infer call is answered, and then until the open
     * connections have closed (each does after its next answer) or sat
     * idle for a second (an idle keep-alive connection holds no request),
     * at most the client timeout: a request still arriving then would
     * have been closed by the timeout anyway. */
    uint64_t start = server_now_ns(), idle_since = 0, second = 1000000000ull;
    uint64_t limit = (uint64_t)(h->timeout_secs ? h->timeout_secs : 15) * second;
    for (;;) {
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        unsigned open = info ? info->num_connections : 0;
        uint64_t now = server_now_ns();
        if (atomic_load(&h->in_flight) > 0) {
            idle_since = 0;
        } else {
            if (open == 0 || now - start > limit)
                break;
            if (idle_since == 0)
                idle_since = now;
            else if (now - idle_since > second)
                break;
        }
        usleep(1000);
    }
    MHD_stop_daemon(h->daemon);
    if (fd >= 0)
        close(fd);
    free(h);
}
