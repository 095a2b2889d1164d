/* The model repository: config.json, version policies and the scan (see
 * repository.h). */
#include "server/repository.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void server_config_default(server_model_config *config, size_t queue_size)
{
    memset(config, 0, sizeof *config);
    config->max_queue_size = queue_size;
    config->policy = SERVER_POLICY_LATEST;
    config->num_versions = 1;
    config->sequence_idle_us = 1000000; /* Triton's max_sequence_idle_microseconds */
    config->max_sequences = 1024;
}

void server_config_clear(server_model_config *config)
{
    if (config == NULL)
        return;
    for (size_t i = 0; i < config->n_properties; i++) {
        free((char *)config->properties[i].key);
        free((char *)config->properties[i].value);
    }
    free(config->properties);
    free(config->versions);
    free(config->device);
    free(config->preferred_batch_sizes);
    free(config->pipeline);
    for (size_t i = 0; i < config->n_states; i++) {
        free(config->state_inputs[i]);
        free(config->state_outputs[i]);
    }
    free(config->state_inputs);
    free(config->state_outputs);
    memset(config, 0, sizeof *config);
}

static rn_status parse_properties(const json_t *props, server_model_config *c)
{
    if (!json_is_object(props))
        return rn_set_error(RN_INVALID_ARG, "'properties' must be an object of strings");
    size_t n = json_object_size(props);
    if (n == 0)
        return RN_OK;
    if ((c->properties = calloc(n, sizeof *c->properties)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu properties", n);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)props, key, value)
    {
        char number[32];
        const char *text = json_string_value(value);
        if (json_is_integer(value)) { /* "NUM_STREAMS": 2 reads as well as "2" */
            snprintf(number, sizeof number, "%lld", (long long)json_integer_value(value));
            text = number;
        }
        if (text == NULL)
            return rn_set_error(RN_INVALID_ARG, "property '%s' must be a string or an integer",
                                key);
        rn_property *p = &c->properties[c->n_properties];
        p->key = strdup(key);
        p->value = strdup(text);
        c->n_properties++;
        if (p->key == NULL || p->value == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for property '%s'", key);
    }
    return RN_OK;
}

static rn_status parse_policy(const json_t *policy, server_model_config *c)
{
    if (!json_is_object(policy) || json_object_size(policy) != 1)
        return rn_set_error(RN_INVALID_ARG,
                            "'version_policy' must be one of {\"latest\": {\"num_versions\": N}}, "
                            "{\"all\": {}}, {\"specific\": {\"versions\": [...]}}");
    const json_t *v;
    if ((v = json_object_get(policy, "latest")) != NULL) {
        const json_t *n = json_object_get(v, "num_versions");
        if (!json_is_integer(n) || json_integer_value(n) < 1)
            return rn_set_error(RN_INVALID_ARG,
                                "version_policy latest: num_versions must be an integer >= 1");
        c->policy = SERVER_POLICY_LATEST;
        c->num_versions = (size_t)json_integer_value(n);
        return RN_OK;
    }
    if (json_object_get(policy, "all") != NULL) {
        c->policy = SERVER_POLICY_ALL;
        return RN_OK;
    }
    if ((v = json_object_get(policy, "specific")) != NULL) {
        const json_t *list = json_object_get(v, "versions");
        if (!json_is_array(list) || json_array_size(list) == 0)
            return rn_set_error(RN_INVALID_ARG,
                                "version_policy specific: versions must be a non-empty array");
        size_t n = json_array_size(list);
        if ((c->versions = calloc(n, sizeof *c->versions)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu versions", n);
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(list, i);
            if (!json_is_integer(x) || json_integer_value(x) < 0)
                return rn_set_error(RN_INVALID_ARG,
                                    "version_policy specific: version %zu is not an integer >= 0",
                                    i);
            c->versions[i] = json_integer_value(x);
        }
        c->n_versions = n;
        c->policy = SERVER_POLICY_SPECIFIC;
        return RN_OK;
    }
    return rn_set_error(RN_INVALID_ARG, "version_policy: unknown policy '%s'",
                        json_object_iter_key(json_object_iter((json_t *)policy)));
}

static int compare_sizes(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static rn_status parse_preferred(const json_t *list, server_model_config *c)
{
    if (!json_is_array(list) || json_array_size(list) == 0)
        return rn_set_error(RN_INVALID_ARG,
                            "'preferred_batch_size' must be a non-empty array of integers");
    size_t n = json_array_size(list);
    free(c->preferred_batch_sizes);
    c->n_preferred = 0;
    if ((c->preferred_batch_sizes = calloc(n, sizeof *c->preferred_batch_sizes)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu batch sizes", n);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(list, i);
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65536)
            return rn_set_error(RN_INVALID_ARG,
                                "'preferred_batch_size'[%zu] must be an integer from 1 to 65536",
                                i);
        c->preferred_batch_sizes[c->n_preferred++] = (size_t)json_integer_value(v);
    }
    qsort(c->preferred_batch_sizes, n, sizeof *c->preferred_batch_sizes, compare_sizes);
    return RN_OK;
}

/* What only the whole config can tell: batching keys agree with each other. */
/* "sequence": {"state": [{"input": I, "output": O}, ...], "max_idle_us": N,
 * "max_sequences": N}. */
static rn_status parse_sequence(const json_t *v, server_model_config *c)
{
    const json_t *state = json_object_get(v, "state");
    if (!json_is_object(v) || !json_is_array(state) || json_array_size(state) == 0)
        return rn_set_error(RN_INVALID_ARG, "'sequence' must be an object with a non-empty "
                                            "'state' array of {\"input\", \"output\"}");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        if (strcmp(key, "state") == 0)
            continue;
        json_int_t n = json_is_integer(value) ? json_integer_value(value) : -1;
        if (strcmp(key, "max_idle_us") == 0 && n > 0)
            c->sequence_idle_us = (uint64_t)n;
        else if (strcmp(key, "max_sequences") == 0 && n > 0)
            c->max_sequences = (size_t)n;
        else
            return rn_set_error(RN_INVALID_ARG,
                                "'sequence': '%s' must be max_idle_us or max_sequences, an "
                                "integer > 0",
                                key);
    }
    size_t n = json_array_size(state);
    c->state_inputs = calloc(n, sizeof *c->state_inputs);
    c->state_outputs = calloc(n, sizeof *c->state_outputs);
    if (c->state_inputs == NULL || c->state_outputs == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the sequence state");
    for (size_t i = 0; i < n; i++, c->n_states++) {
        const char *in = json_string_value(json_object_get(json_array_get(state, i), "input"));
        const char *out = json_string_value(json_object_get(json_array_get(state, i), "output"));
        if (in == NULL || out == NULL)
            return rn_set_error(RN_INVALID_ARG,
                                "'sequence': state %zu needs \"input\" and \"output\" strings", i);
        c->state_inputs[i] = strdup(in);
        c->state_outputs[i] = strdup(out);
        if (c->state_inputs[i] == NULL || c->state_outputs[i] == NULL) {
            c->n_states++;
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the sequence state");
        }
    }
    return RN_OK;
}

static rn_status check_batching(const server_model_config *c)
{
    if (c->max_batch_size == 0 && (c->max_queue_delay_us > 0 || c->n_preferred > 0))
        return rn_set_error(RN_INVALID_ARG, "'%s' needs dynamic batching ('max_batch_size' > 0)",
                            c->n_preferred ? "preferred_batch_size" : "max_queue_delay_us");
    for (size_t i = 0; i < c->n_preferred; i++)
        if (c->preferred_batch_sizes[i] > c->max_batch_size)
            return rn_set_error(RN_INVALID_ARG,
                                "'preferred_batch_size' %zu is larger than 'max_batch_size' %zu",
                                c->preferred_batch_sizes[i], c->max_batch_size);
    if (c->pipeline != NULL && c->n_states > 0)
        return rn_set_error(RN_INVALID_ARG, "a pipeline takes no 'sequence'");
    if (c->pipeline != NULL && (c->max_batch_size > 0 || c->device || c->n_properties))
        return rn_set_error(RN_INVALID_ARG, "a pipeline takes no 'max_batch_size', 'device' or "
                                            "'properties' (its steps' models have their own)");
    return RN_OK;
}

static rn_status parse_config(const json_t *root, server_model_config *c)
{
    if (!json_is_object(root))
        return rn_set_error(RN_INVALID_ARG, "config.json must hold a JSON object");
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)root, key, value)
    {
        rn_status st = RN_OK;
        if (strcmp(key, "device") == 0) {
            if (!json_is_string(value))
                return rn_set_error(RN_INVALID_ARG, "'device' must be a string");
            free(c->device);
            if ((c->device = strdup(json_string_value(value))) == NULL)
                return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the device");
        } else if (strcmp(key, "properties") == 0) {
            st = parse_properties(value, c);
        } else if (strcmp(key, "max_queue_size") == 0) {
            if (!json_is_integer(value) || json_integer_value(value) < 0)
                return rn_set_error(RN_INVALID_ARG, "'max_queue_size' must be an integer >= 0");
            c->max_queue_size = (size_t)json_integer_value(value);
        } else if (strcmp(key, "max_batch_size") == 0) {
            if (!json_is_integer(value) || json_integer_value(value) < 0 ||
                json_integer_value(value) > 65536)
                return rn_set_error(RN_INVALID_ARG,
                                    "'max_batch_size' must be an integer from 0 to 65536");
            c->max_batch_size = (size_t)json_integer_value(value);
        } else if (strcmp(key, "default_timeout_us") == 0) {
            if (!json_is_integer(value) || json_integer_value(value) < 0)
                return rn_set_error(RN_INVALID_ARG, "'default_timeout_us' must be an integer >= 0");
            c->default_timeout_us = (uint64_t)json_integer_value(value);
        } else if (strcmp(key, "max_queue_delay_us") == 0) {
            if (!json_is_integer(value) || json_integer_value(value) < 0 ||
                json_integer_value(value) > 60000000)
                return rn_set_error(RN_INVALID_ARG,
                                    "'max_queue_delay_us' must be an integer from 0 to 60000000");
            c->max_queue_delay_us = (uint64_t)json_integer_value(value);
        } else if (strcmp(key, "preferred_batch_size") == 0) {
            st = parse_preferred(value, c);
        } else if (strcmp(key, "pipeline") == 0) {
            if (!json_is_object(value))
                return rn_set_error(RN_INVALID_ARG, "'pipeline' must be an object");
            free(c->pipeline);
            if ((c->pipeline = json_dumps(value, JSON_COMPACT)) == NULL)
                return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the pipeline");
        } else if (strcmp(key, "version_policy") == 0) {
            st = parse_policy(value, c);
        } else if (strcmp(key, "sequence") == 0) {
            if (c->n_states > 0)
                return rn_set_error(RN_INVALID_ARG, "'sequence' is given twice");
            st = parse_sequence(value, c);
        } else {
            return rn_set_error(RN_INVALID_ARG,
                                "unknown key '%s' (known: device, properties, max_queue_size, "
                                "max_batch_size, max_queue_delay_us, preferred_batch_size, "
                                "default_timeout_us, version_policy, pipeline, sequence)",
                                key);
        }
        if (st != RN_OK)
            return st;
    }
    return check_batching(c);
}

/* Parses a loaded config over *config (see server_config_parse). */
static rn_status config_from_json(json_t *root, const json_error_t *error,
                                  server_model_config *config)
{
    if (root == NULL)
        return rn_set_error(RN_INVALID_ARG, "malformed JSON at line %d, column %d: %s", error->line,
                            error->column, error->text);
    server_model_config c = *config;
    c.device = config->device ? strdup(config->device) : NULL;
    c.properties = NULL;
    c.n_properties = 0;
    c.versions = NULL;
    c.n_versions = 0;
    c.preferred_batch_sizes = NULL;
    c.n_preferred = 0;
    c.pipeline = NULL;
    c.state_inputs = c.state_outputs = NULL;
    c.n_states = 0;
    rn_status st = parse_config(root, &c);
    json_decref(root);
    if (st != RN_OK) {
        server_config_clear(&c);
        return st;
    }
    server_config_clear(config);
    *config = c;
    return RN_OK;
}

rn_status server_config_parse(const char *text, size_t size, server_model_config *config)
{
    json_error_t error;
    return config_from_json(json_loadb(text, size, JSON_REJECT_DUPLICATES, &error), &error, config);
}

static int compare_versions(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t server_version_select(const server_model_config *config, const int64_t *on_disk, size_t n,
                             int64_t *selected)
{
    if (n == 0)
        return 0;
    memcpy(selected, on_disk, n * sizeof *on_disk);
    qsort(selected, n, sizeof *selected, compare_versions);
    if (config->policy == SERVER_POLICY_ALL)
        return n;
    if (config->policy == SERVER_POLICY_LATEST) {
        size_t keep = config->num_versions < n ? config->num_versions : n;
        memmove(selected, selected + (n - keep), keep * sizeof *selected);
        return keep;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < config->n_versions; j++)
            if (selected[i] == config->versions[j]) {
                selected[kept++] = selected[i];
                break;
            }
    return kept;
}

static int is_version_name(const char *name)
{
    if (*name == '\0' || strlen(name) > 18)
        return 0;
    for (const char *p = name; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* FNV-1a of a file's bytes (never 0 for a file read). */
static uint64_t file_hash(const char *path)
{
    uint64_t h = 1469598103934665603u;
    FILE *f = fopen(path, "rb");
    for (int c; f != NULL && (c = getc(f)) != EOF;)
        h = (h ^ (uint64_t)(unsigned char)c) * 1099511628211u;
    if (f != NULL)
        fclose(f);
    return h ? h : 1;
}

/* Reads one model folder: its config and the versions its policy serves. */
static rn_status scan_model(const char *root, const char *name, size_t queue_size,
                            server_repo_model *m)
{
    char path[4096];
    server_config_default(&m->config, queue_size);
    snprintf(path, sizeof path, "%s/%s/config.json", root, name);
    if (is_file(path)) {
        json_error_t error;
        rn_status st = config_from_json(json_load_file(path, JSON_REJECT_DUPLICATES, &error),
                                        &error, &m->config);
        if (st != RN_OK)
            return rn_wrap_error(st, "model '%s': %s: ", name, path);
        m->config.hash = file_hash(path);
    }
    if (m->config.pipeline != NULL) { /* no model.onnx: served as version 1 */
        if ((m->versions = malloc(sizeof *m->versions)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "model '%s': no memory", name);
        m->versions[0] = 1;
        m->n_versions = 1;
        return RN_OK;
    }
    snprintf(path, sizeof path, "%s/%s", root, name);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return rn_set_error(RN_IO_ERROR, "model '%s': %s: %s", name, path, strerror(errno));
    int64_t *found = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!is_version_name(e->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s/%s/model.onnx", root, name, e->d_name);
        if (!is_file(path))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            int64_t *grown = realloc(found, cap * sizeof *found);
            if (grown == NULL) {
                free(found);
                closedir(dir);
                return rn_set_error(RN_OUT_OF_MEMORY, "model '%s': no memory", name);
            }
            found = grown;
        }
        found[n++] = strtoll(e->d_name, NULL, 10);
    }
    closedir(dir);
    m->versions = malloc((n ? n : 1) * sizeof *m->versions);
    if (m->versions == NULL) {
        free(found);
        return rn_set_error(RN_OUT_OF_MEMORY, "model '%s': no memory", name);
    }
    m->n_versions = server_version_select(&m->config, found, n, m->versions);
    free(found);
    return RN_OK;
}

rn_status server_repo_scan(const char *root, size_t queue_size, server_repo_model **models,
                           size_t *n_models)
{
    DIR *dir = opendir(root);
    if (dir == NULL)
        return rn_set_error(RN_IO_ERROR, "model repository %s: %s", root, strerror(errno));
    server_repo_model *list = NULL;
    size_t n = 0, cap = 0;
    rn_status st = RN_OK;
    struct dirent *e;
    while (st == RN_OK && (e = readdir(dir)) != NULL) {
        char path[4096];
        struct stat info;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &info) != 0 || !S_ISDIR(info.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            server_repo_model *grown = realloc(list, cap * sizeof *list);
            if (grown == NULL) {
                st = rn_set_error(RN_OUT_OF_MEMORY, "model repository %s: no memory", root);
                break;
            }
            list = grown;
        }
        server_repo_model *m = &list[n++];
        memset(m, 0, sizeof *m);
        if ((m->name = strdup(e->d_name)) == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, "model repository %s: no memory", root);
        else
            st = scan_model(root, e->d_name, queue_size, m);
    }
    closedir(dir);
    if (st != RN_OK) {
        server_repo_free(list, n);
        return st;
    }
    *models = list;
    *n_models = n;
    return RN_OK;
}

void server_repo_free(server_repo_model *models, size_t n_models)
{
    for (size_t i = 0; i < n_models; i++) {
        free(models[i].name);
        free(models[i].versions);
        server_config_clear(&models[i].config);
    }
    free(models);
}
