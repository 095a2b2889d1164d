/* The routes of runnel-server (see route.h). */
#include "server/route.h"

#include <string.h>

/* Copies the next path segment (up to '/' or the end) into buf; returns a
 * pointer past it, or NULL when it is empty or too long. */
static const char *segment(const char *p, char *buf, size_t size)
{
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= size)
        return NULL;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return p + n;
}

static server_route_kind model_route(const char *method, const char *p, server_route *out)
{
    if ((p = segment(p, out->model, sizeof out->model)) == NULL)
        return SERVER_ROUTE_NOT_FOUND;
    if (strncmp(p, "/versions/", 10) == 0) {
        if ((p = segment(p + 10, out->version, sizeof out->version)) == NULL)
            return SERVER_ROUTE_NOT_FOUND;
    }
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (*p == '\0' || strcmp(p, "/") == 0) {
        out->method_allowed = get;
        return out->kind = SERVER_ROUTE_MODEL_METADATA;
    }
    if (strcmp(p, "/ready") == 0) {
        out->method_allowed = get;
        return out->kind = SERVER_ROUTE_MODEL_READY;
    }
    if (strcmp(p, "/infer") == 0) {
        out->method_allowed = strcmp(method, "POST") == 0;
        return out->kind = SERVER_ROUTE_INFER;
    }
    if (strcmp(p, "/stats") == 0) {
        out->method_allowed = get;
        return out->kind = SERVER_ROUTE_MODEL_STATS;
    }
    if (strcmp(p, "/config") == 0) {
        out->method_allowed = get;
        return out->kind = SERVER_ROUTE_MODEL_CONFIG;
    }
    return SERVER_ROUTE_NOT_FOUND;
}

/* /v2/repository/...: the index, a model's load and unload (all POST). */
static server_route_kind repository_route(const char *method, const char *p, server_route *out)
{
    out->method_allowed = strcmp(method, "POST") == 0;
    if (strcmp(p, "index") == 0)
        return out->kind = SERVER_ROUTE_REPO_INDEX;
    if (strncmp(p, "models/", 7) != 0 ||
        (p = segment(p + 7, out->model, sizeof out->model)) == NULL)
        return SERVER_ROUTE_NOT_FOUND;
    if (strcmp(p, "/load") == 0)
        return out->kind = SERVER_ROUTE_REPO_LOAD;
    if (strcmp(p, "/unload") == 0)
        return out->kind = SERVER_ROUTE_REPO_UNLOAD;
    return SERVER_ROUTE_NOT_FOUND;
}

server_route_kind server_route_parse(const char *method, const char *path, server_route *out)
{
    memset(out, 0, sizeof *out);
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    out->method_allowed = get;
    if (strcmp(path, "/v2") == 0 || strcmp(path, "/v2/") == 0)
        return out->kind = SERVER_ROUTE_SERVER_METADATA;
    if (strcmp(path, "/v2/health/live") == 0)
        return out->kind = SERVER_ROUTE_LIVE;
    if (strcmp(path, "/v2/health/ready") == 0)
        return out->kind = SERVER_ROUTE_READY;
    if (strcmp(path, "/metrics") == 0)
        return out->kind = SERVER_ROUTE_METRICS;
    if (strcmp(path, "/v2/models/stats") == 0) /* as Triton: every model's */
        return out->kind = SERVER_ROUTE_MODEL_STATS;
    if (strncmp(path, "/v2/repository/", 15) == 0 && repository_route(method, path + 15, out) != 0)
        return out->kind;
    if (strncmp(path, "/v2/models/", 11) == 0 && model_route(method, path + 11, out) != 0)
        return out->kind;
    memset(out, 0, sizeof *out);
    return SERVER_ROUTE_NOT_FOUND;
}
