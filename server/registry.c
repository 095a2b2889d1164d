/* The table of served model versions (see registry.h). */
#include "server/registry.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct server_registry {
    rn_core *core;
    char *root;
    char *device;
    size_t queue_size;
    pthread_rwlock_t lock; /* guards models */
    server_model **models; /* sorted by name, then version */
    size_t n_models;
    server_model **retired; /* unloaded, freed once no job holds them */
    size_t n_retired;
    pthread_mutex_t poll_lock; /* one poll or load at a time; guards retired */
    server_model_control control;
};

static int compare_models(const void *a, const void *b)
{
    const server_model *x = *(server_model *const *)a, *y = *(server_model *const *)b;
    int c = strcmp(server_model_name(x), server_model_name(y));
    if (c != 0)
        return c;
    return (server_model_version(x) > server_model_version(y)) -
           (server_model_version(x) < server_model_version(y));
}

static server_model *find_locked(server_registry *r, const char *name, int64_t version)
{
    for (size_t i = 0; i < r->n_models; i++)
        if (strcmp(server_model_name(r->models[i]), name) == 0 &&
            server_model_version(r->models[i]) == version)
            return r->models[i];
    return NULL;
}

static rn_status add_model(server_registry *r, server_model *m)
{
    pthread_rwlock_wrlock(&r->lock);
    server_model **grown = realloc(r->models, (r->n_models + 1) * sizeof *grown);
    if (grown != NULL) {
        grown[r->n_models++] = m;
        r->models = grown;
        qsort(r->models, r->n_models, sizeof *r->models, compare_models);
    }
    pthread_rwlock_unlock(&r->lock);
    return grown ? RN_OK : rn_set_error(RN_OUT_OF_MEMORY, "no memory for the model table");
}

/* Puts `m` in the table in place of `old` (same name and version), which
 * retires: it is freed once no job holds it. */
static rn_status replace_model(server_registry *r, server_model *old, server_model *m)
{
    server_model **grown = realloc(r->retired, (r->n_retired + 1) * sizeof *grown);
    if (grown == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the model table");
    r->retired = grown;
    pthread_rwlock_wrlock(&r->lock);
    for (size_t i = 0; i < r->n_models; i++)
        if (r->models[i] == old)
            r->models[i] = m;
    pthread_rwlock_unlock(&r->lock);
    r->retired[r->n_retired++] = old;
    return RN_OK;
}

/* Loads one version unless it is loaded with the same config: 1 when it
 * loaded, 0 when there was nothing to do or it failed (*status set). */
static int load_version(server_registry *r, const server_repo_model *repo, int64_t version,
                        rn_status *status)
{
    pthread_rwlock_rdlock(&r->lock);
    server_model *have = find_locked(r, repo->name, version);
    pthread_rwlock_unlock(&r->lock);
    if (have != NULL && server_model_config_hash(have) == repo->config.hash)
        return 0;
    server_model *m;
    rn_status st = repo->config.pipeline != NULL
                       ? server_model_load_pipeline(r, repo->name, &repo->config, &m)
                       : server_model_load(r->core, r->root, repo->name, version, &repo->config,
                                           r->device, &m);
    if (st == RN_OK && (st = have ? replace_model(r, have, m) : add_model(r, m)) != RN_OK)
        server_model_free(m);
    if (st != RN_OK) {
        fprintf(stderr, "runnel-server: %s\n", rn_last_error());
        *status = st;
        return 0;
    }
    fprintf(stderr, "runnel-server: %s model '%s' version %" PRId64 "\n",
            have ? "reloaded (config.json changed)" : "loaded", repo->name, version);
    return 1;
}

/* Loads what the scan selects and is not loaded yet, or was loaded with
 * another config.json (the old version keeps serving until the new one
 * has compiled, then retires). Models first, then pipelines, which look
 * their steps up. */
static size_t load_new(server_registry *r, const server_repo_model *repo, size_t n_repo,
                       int fail_fast, rn_status *status)
{
    size_t loaded = 0;
    *status = RN_OK;
    for (int pipelines = 0; pipelines < 2; pipelines++)
        for (size_t i = 0; i < n_repo; i++) {
            if ((repo[i].config.pipeline != NULL) != pipelines)
                continue;
            for (size_t v = 0; v < repo[i].n_versions; v++) {
                if (load_version(r, &repo[i], repo[i].versions[v], status))
                    loaded++;
                else if (*status != RN_OK && fail_fast)
                    return loaded;
            }
        }
    return loaded;
}

static int selected(const server_repo_model *repo, size_t n_repo, const server_model *m)
{
    for (size_t i = 0; i < n_repo; i++)
        if (strcmp(repo[i].name, server_model_name(m)) == 0)
            for (size_t v = 0; v < repo[i].n_versions; v++)
                if (repo[i].versions[v] == server_model_version(m))
                    return 1;
    return 0;
}

/* Moves what the scan no longer selects to the retired list (only versions
 * of model `only` when not NULL). */
static size_t unload_gone(server_registry *r, const server_repo_model *repo, size_t n_repo,
                          const char *only)
{
    size_t gone = 0;
    pthread_rwlock_wrlock(&r->lock);
    for (size_t i = 0; i < r->n_models;) {
        server_model *m = r->models[i];
        server_model **grown;
        if (selected(repo, n_repo, m) ||
            (only != NULL && strcmp(server_model_name(m), only) != 0) ||
            (grown = realloc(r->retired, (r->n_retired + 1) * sizeof *grown)) == NULL) {
            i++;
            continue;
        }
        r->retired = grown;
        r->retired[r->n_retired++] = m;
        memmove(&r->models[i], &r->models[i + 1], (r->n_models - i - 1) * sizeof *r->models);
        r->n_models--;
        fprintf(stderr, "runnel-server: unloading model '%s' version %s\n", server_model_name(m),
                server_model_version_text(m));
        gone++;
    }
    pthread_rwlock_unlock(&r->lock);
    return gone;
}

/* Frees retired versions that no job holds any more. */
static void free_retired(server_registry *r)
{
    for (size_t i = 0; i < r->n_retired;) {
        if (server_model_refs(r->retired[i]) != 0) {
            i++;
            continue;
        }
        server_model_free(r->retired[i]);
        r->retired[i] = r->retired[--r->n_retired];
    }
}

/* Whether `name` is in a comma-separated list ("*": every name). */
static int listed(const char *list, const char *name)
{
    if (list == NULL)
        return 0;
    if (strcmp(list, "*") == 0)
        return 1;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, name, n) == 0)
            return 1;
        p += n + (end ? 1 : 0);
    }
    return 0;
}

/* Under EXPLICIT: keeps the repository's models the startup list names
 * (moved to the front; returns how many), or fails naming one it lacks. */
static rn_status pick_startup(server_repo_model *repo, size_t n_repo, const char *startup,
                              size_t *kept)
{
    size_t n = 0;
    for (size_t i = 0; i < n_repo; i++)
        if (listed(startup, repo[i].name)) {
            server_repo_model tmp = repo[n];
            repo[n++] = repo[i];
            repo[i] = tmp;
        }
    for (const char *p = startup; p != NULL && *p && strcmp(startup, "*") != 0;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p), i = 0;
        while (i < n && !(strlen(repo[i].name) == len && strncmp(repo[i].name, p, len) == 0))
            i++;
        if (i == n)
            return rn_set_error(RN_NOT_FOUND, "--load-model: no model '%.*s' in the repository",
                                (int)len, p);
        p += len + (end ? 1 : 0);
    }
    *kept = n;
    return RN_OK;
}

rn_status server_registry_open(rn_core *core, const char *root, const char *device,
                               size_t queue_size, server_model_control control, const char *startup,
                               server_registry **out)
{
    server_registry *r = calloc(1, sizeof *r);
    if (r == NULL || (r->root = strdup(root)) == NULL || (r->device = strdup(device)) == NULL) {
        if (r)
            free(r->root);
        free(r);
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the registry");
    }
    r->core = core;
    r->queue_size = queue_size;
    r->control = control;
    pthread_rwlock_init(&r->lock, NULL);
    pthread_mutex_init(&r->poll_lock, NULL);
    server_repo_model *repo;
    size_t n_repo;
    rn_status st = server_repo_scan(root, queue_size, &repo, &n_repo);
    if (st == RN_OK) {
        size_t n_load = n_repo;
        if (control == SERVER_CONTROL_EXPLICIT)
            st = pick_startup(repo, n_repo, startup, &n_load);
        if (st == RN_OK)
            load_new(r, repo, n_load, 1, &st);
        server_repo_free(repo, n_repo);
    }
    if (st != RN_OK) {
        server_registry_free(r);
        return st;
    }
    *out = r;
    return RN_OK;
}

rn_status server_registry_create(rn_core *core, const char *root, const char *device,
                                 size_t queue_size, server_registry **out)
{
    return server_registry_open(core, root, device, queue_size, SERVER_CONTROL_NONE, NULL, out);
}

server_model_control server_registry_control(const server_registry *r)
{
    return r->control;
}

static rn_status check_explicit(const server_registry *r)
{
    if (r->control == SERVER_CONTROL_EXPLICIT)
        return RN_OK;
    return rn_set_error(RN_NOT_IMPLEMENTED,
                        "explicit model load and unload need --model-control-mode explicit "
                        "(this server runs '%s')",
                        r->control == SERVER_CONTROL_POLL ? "poll" : "none");
}

rn_status server_registry_load(server_registry *r, const char *name)
{
    rn_status st = check_explicit(r);
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&r->poll_lock);
    server_repo_model *repo;
    size_t n_repo, i = 0;
    if ((st = server_repo_scan(r->root, r->queue_size, &repo, &n_repo)) != RN_OK) {
        pthread_mutex_unlock(&r->poll_lock);
        return rn_wrap_error(st, "loading model '%s': ", name);
    }
    while (i < n_repo && strcmp(repo[i].name, name) != 0)
        i++;
    if (i == n_repo) {
        st = rn_set_error(RN_NOT_FOUND, "no model '%s' in the repository %s", name, r->root);
    } else {
        load_new(r, &repo[i], 1, 1, &st);
        if (st == RN_OK)
            unload_gone(r, &repo[i], 1, name);
    }
    server_repo_free(repo, n_repo);
    free_retired(r);
    pthread_mutex_unlock(&r->poll_lock);
    return st;
}

rn_status server_registry_unload(server_registry *r, const char *name)
{
    rn_status st = check_explicit(r);
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&r->poll_lock);
    unload_gone(r, NULL, 0, name);
    free_retired(r);
    pthread_mutex_unlock(&r->poll_lock);
    return RN_OK;
}

static int compare_repo_names(const void *a, const void *b)
{
    return strcmp(((const server_repo_model *)a)->name, ((const server_repo_model *)b)->name);
}

void server_registry_index(server_registry *r, int ready_only,
                           void (*fn)(const char *, const char *, const char *, const char *,
                                      void *),
                           void *user)
{
    server_repo_model *repo = NULL;
    size_t n_repo = 0;
    if (ready_only || server_repo_scan(r->root, r->queue_size, &repo, &n_repo) != RN_OK)
        n_repo = 0; /* an unreadable repository: what is loaded */
    if (n_repo > 0)
        qsort(repo, n_repo, sizeof *repo, compare_repo_names);
    pthread_rwlock_rdlock(&r->lock);
    size_t m = 0;
    for (size_t i = 0; i <= n_repo; i++) {
        /* loaded versions that sort before repo[i] (or all the rest after the last) */
        while (m < r->n_models &&
               (i == n_repo || strcmp(server_model_name(r->models[m]), repo[i].name) <= 0)) {
            fn(server_model_name(r->models[m]), server_model_version_text(r->models[m]), "READY",
               "", user);
            m++;
        }
        if (i == n_repo)
            break;
        int loaded = m > 0 && strcmp(server_model_name(r->models[m - 1]), repo[i].name) == 0;
        if (!loaded)
            fn(repo[i].name, "", "UNAVAILABLE", "unloaded", user);
    }
    pthread_rwlock_unlock(&r->lock);
    server_repo_free(repo, n_repo);
}

void server_registry_free(server_registry *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_models; i++)
        server_model_free(r->models[i]);
    for (size_t i = 0; i < r->n_retired; i++) {
        while (server_model_refs(r->retired[i]) != 0)
            usleep(1000);
        server_model_free(r->retired[i]);
    }
    free(r->models);
    free(r->retired);
    pthread_rwlock_destroy(&r->lock);
    pthread_mutex_destroy(&r->poll_lock);
    free(r->device);
    free(r->root);
    free(r);
}

server_model *server_registry_find(server_registry *r, const char *name, const char *version)
{
    int64_t want = -1;
    if (version != NULL && *version != '\0') {
        char *end;
        want = strtoll(version, &end, 10);
        if (*end != '\0' || want < 0) {
            rn_set_error(RN_NOT_FOUND, "model '%s' has no version '%s' (versions are numbers)",
                         name, version);
            return NULL;
        }
    }
    server_model *found = NULL;
    int known = 0;
    pthread_rwlock_rdlock(&r->lock);
    for (size_t i = 0; i < r->n_models; i++) {
        if (strcmp(server_model_name(r->models[i]), name) != 0)
            continue;
        known = 1;
        if (want < 0 || server_model_version(r->models[i]) == want)
            found = r->models[i]; /* sorted: the last match is the highest version */
    }
    if (found != NULL)
        server_model_acquire(found);
    pthread_rwlock_unlock(&r->lock);
    if (found == NULL && known)
        rn_set_error(RN_NOT_FOUND, "model '%s' has no version %s loaded", name, version);
    else if (found == NULL)
        rn_set_error(RN_NOT_FOUND, "no model '%s' is loaded", name);
    return found;
}

void server_registry_foreach(server_registry *r, void (*fn)(server_model *, void *), void *user)
{
    pthread_rwlock_rdlock(&r->lock);
    for (size_t i = 0; i < r->n_models; i++)
        fn(r->models[i], user);
    pthread_rwlock_unlock(&r->lock);
}

size_t server_registry_poll(server_registry *r)
{
    pthread_mutex_lock(&r->poll_lock);
    size_t changed = 0;
    server_repo_model *repo;
    size_t n_repo;
    if (server_repo_scan(r->root, r->queue_size, &repo, &n_repo) != RN_OK) {
        fprintf(stderr, "runnel-server: repository poll: %s\n", rn_last_error());
    } else {
        rn_status st;
        changed += load_new(r, repo, n_repo, 0, &st);
        changed += unload_gone(r, repo, n_repo, NULL);
        server_repo_free(repo, n_repo);
    }
    free_retired(r);
    pthread_mutex_unlock(&r->poll_lock);
    return changed;
}
