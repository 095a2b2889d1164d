/* The routes of runnel-server: KServe v2 REST paths and /metrics. */
#ifndef RUNNEL_SERVER_ROUTE_H
#define RUNNEL_SERVER_ROUTE_H

typedef enum server_route_kind {
    SERVER_ROUTE_NOT_FOUND = 0,
    SERVER_ROUTE_SERVER_METADATA, /* GET /v2 */
    SERVER_ROUTE_LIVE,            /* GET /v2/health/live */
    SERVER_ROUTE_READY,           /* GET /v2/health/ready */
    SERVER_ROUTE_MODEL_METADATA,  /* GET /v2/models/{m}[/versions/{v}] */
    SERVER_ROUTE_MODEL_READY,     /* GET /v2/models/{m}[/versions/{v}]/ready */
    SERVER_ROUTE_INFER,           /* POST /v2/models/{m}[/versions/{v}]/infer */
    SERVER_ROUTE_METRICS,         /* GET /metrics */
    SERVER_ROUTE_MODEL_STATS,     /* GET /v2/models[/{m}[/versions/{v}]]/stats (model "": all) */
    SERVER_ROUTE_MODEL_CONFIG,    /* GET /v2/models/{m}[/versions/{v}]/config */
    SERVER_ROUTE_REPO_INDEX,      /* POST /v2/repository/index */
    SERVER_ROUTE_REPO_LOAD,       /* POST /v2/repository/models/{m}/load */
    SERVER_ROUTE_REPO_UNLOAD,     /* POST /v2/repository/models/{m}/unload */
} server_route_kind;

typedef struct server_route {
    server_route_kind kind;
    int method_allowed; /* 0: the path exists but not for this method (405) */
    char model[256];
    char version[32]; /* "" when the path names none */
} server_route;

/* Parses a method and an (unescaped) path. An unknown path is
 * SERVER_ROUTE_NOT_FOUND; a model name or version too long for the struct
 * is too. Returns out->kind. */
server_route_kind server_route_parse(const char *method, const char *path, server_route *out);

#endif /* RUNNEL_SERVER_ROUTE_H */
