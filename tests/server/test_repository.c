/* runnel-server's routes, config.json, version policies and repository scan. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/repository.h"
#include "server/route.h"

Test(route, kserve_v2_paths)
{
    server_route r;
    cr_assert_eq(server_route_parse("GET", "/v2", &r), SERVER_ROUTE_SERVER_METADATA);
    cr_assert_eq(server_route_parse("GET", "/v2/health/live", &r), SERVER_ROUTE_LIVE);
    cr_assert_eq(server_route_parse("GET", "/v2/health/ready", &r), SERVER_ROUTE_READY);
    cr_assert_eq(server_route_parse("GET", "/metrics", &r), SERVER_ROUTE_METRICS);
    cr_assert_eq(server_route_parse("GET", "/v2/models/resnet", &r), SERVER_ROUTE_MODEL_METADATA);
    cr_assert_str_eq(r.model, "resnet");
    cr_assert_str_eq(r.version, "");
    cr_assert_eq(server_route_parse("GET", "/v2/models/resnet/versions/3/ready", &r),
                 SERVER_ROUTE_MODEL_READY);
    cr_assert_str_eq(r.version, "3");
    cr_assert(r.method_allowed);
    cr_assert_eq(server_route_parse("POST", "/v2/models/a.b-c/versions/12/infer", &r),
                 SERVER_ROUTE_INFER);
    cr_assert_str_eq(r.model, "a.b-c");
    cr_assert_str_eq(r.version, "12");
    cr_assert(r.method_allowed);
}

Test(route, statistics_configuration_and_repository_extensions)
{
    server_route r;
    cr_assert_eq(server_route_parse("GET", "/v2/models/stats", &r), SERVER_ROUTE_MODEL_STATS);
    cr_assert_str_eq(r.model, "");
    cr_assert_eq(server_route_parse("GET", "/v2/models/add/versions/2/stats", &r),
                 SERVER_ROUTE_MODEL_STATS);
    cr_assert_str_eq(r.model, "add");
    cr_assert_str_eq(r.version, "2");
    cr_assert_eq(server_route_parse("GET", "/v2/models/add/config", &r), SERVER_ROUTE_MODEL_CONFIG);
    cr_assert(r.method_allowed);
    cr_assert_eq(server_route_parse("POST", "/v2/repository/index", &r), SERVER_ROUTE_REPO_INDEX);
    cr_assert(r.method_allowed);
    cr_assert_eq(server_route_parse("POST", "/v2/repository/models/sq/load", &r),
                 SERVER_ROUTE_REPO_LOAD);
    cr_assert_str_eq(r.model, "sq");
    cr_assert_eq(server_route_parse("POST", "/v2/repository/models/sq/unload", &r),
                 SERVER_ROUTE_REPO_UNLOAD);
    cr_assert(r.method_allowed);
    cr_assert_eq(server_route_parse("GET", "/v2/repository/models/sq/load", &r),
                 SERVER_ROUTE_REPO_LOAD);
    cr_assert_not(r.method_allowed);
}

Test(route, wrong_methods_and_unknown_paths)
{
    server_route r;
    cr_assert_eq(server_route_parse("GET", "/v2/models/m/infer", &r), SERVER_ROUTE_INFER);
    cr_assert_not(r.method_allowed);
    cr_assert_eq(server_route_parse("POST", "/v2/health/ready", &r), SERVER_ROUTE_READY);
    cr_assert_not(r.method_allowed);
    const char *unknown[] = {"/",
                             "/v1/models/m",
                             "/v2/models/",
                             "/v2/models//infer",
                             "/v2/models/m/versions/",
                             "/v2/models/m/versions/1/statistics",
                             "/v2/repository/models/m",
                             "/v2/repository/models//load",
                             "/v2/models/m/extra/infer"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        cr_assert_eq(server_route_parse("GET", unknown[i], &r), SERVER_ROUTE_NOT_FOUND, "%s",
                     unknown[i]);
    char longname[400] = "/v2/models/";
    memset(longname + 11, 'a', 300);
    cr_assert_eq(server_route_parse("GET", longname, &r), SERVER_ROUTE_NOT_FOUND);
}

static rn_status parse(const char *text, server_model_config *c)
{
    server_config_default(c, 9);
    return server_config_parse(text, strlen(text), c);
}

Test(config, every_key)
{
    server_model_config c;
    cr_assert_eq(parse("{\"device\":\"REF\",\"properties\":{\"PERFORMANCE_HINT\":\"THROUGHPUT\","
                       "\"NUM_STREAMS\":2},\"max_queue_size\":3,\"max_batch_size\":8,"
                       "\"max_queue_delay_us\":500,\"preferred_batch_size\":[8,2,4],"
                       "\"version_policy\":{\"specific\":{\"versions\":[4,2]}}}",
                       &c),
                 RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(c.device, "REF");
    cr_assert_eq(c.n_properties, 2);
    cr_assert_str_eq(c.properties[0].key, "PERFORMANCE_HINT");
    cr_assert_str_eq(c.properties[1].value, "2");
    cr_assert_eq(c.max_queue_size, 3);
    cr_assert_eq(c.max_batch_size, 8);
    cr_assert_eq(c.max_queue_delay_us, 500);
    cr_assert_eq(c.n_preferred, 3);
    cr_assert_eq(c.preferred_batch_sizes[0], 2); /* sorted */
    cr_assert_eq(c.preferred_batch_sizes[2], 8);
    cr_assert_null(c.pipeline);
    cr_assert_eq(c.policy, SERVER_POLICY_SPECIFIC);
    cr_assert_eq(c.n_versions, 2);
    server_config_clear(&c);

    cr_assert_eq(parse("{}", &c), RN_OK);
    cr_assert_null(c.device);
    cr_assert_eq(c.max_queue_size, 9);
    cr_assert_eq(c.policy, SERVER_POLICY_LATEST);
    cr_assert_eq(c.num_versions, 1);
    server_config_clear(&c);
}

Test(config, bad_configs_name_the_key_and_change_nothing)
{
    struct {
        const char *text, *needle;
    } cases[] = {
        {"{\"max_batch\":4}", "unknown key 'max_batch'"},
        {"{\"device\":3}", "'device' must be a string"},
        {"{\"max_queue_delay_us\":100}", "'max_queue_delay_us' needs dynamic batching"},
        {"{\"max_queue_delay_us\":-1}", "'max_queue_delay_us' must be an integer"},
        {"{\"max_batch_size\":4,\"preferred_batch_size\":[2,8]}",
         "'preferred_batch_size' 8 is larger than 'max_batch_size' 4"},
        {"{\"max_batch_size\":4,\"preferred_batch_size\":[]}", "non-empty array"},
        {"{\"max_batch_size\":4,\"preferred_batch_size\":[0]}", "'preferred_batch_size'[0]"},
        {"{\"pipeline\":[]}", "'pipeline' must be an object"},
        {"{\"pipeline\":{},\"max_batch_size\":2}", "a pipeline takes no 'max_batch_size'"},
        {"{\"max_batch_size\":-2}", "'max_batch_size' must be an integer"},
        {"{\"max_queue_size\":-1}", "max_queue_size"},
        {"{\"properties\":{\"NUM_STREAMS\":[1]}}", "property 'NUM_STREAMS'"},
        {"{\"version_policy\":{\"latest\":{\"num_versions\":0}}}", "num_versions"},
        {"{\"version_policy\":{\"newest\":{}}}", "unknown policy 'newest'"},
        {"{\"version_policy\":{\"specific\":{\"versions\":[]}}}", "non-empty"},
        {"{\"device\":\"REF\"", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        server_model_config c;
        cr_assert_eq(parse(cases[i].text, &c), RN_INVALID_ARG, "%s", cases[i].text);
        cr_assert(strstr(rn_last_error(), cases[i].needle) != NULL, "'%s' lacks '%s'",
                  rn_last_error(), cases[i].needle);
        cr_assert_null(c.device);
        cr_assert_eq(c.n_properties, 0);
        cr_assert_eq(c.max_queue_size, 9);
        server_config_clear(&c);
    }
}

Test(config, version_policies)
{
    int64_t disk[] = {3, 10, 1, 7};
    int64_t out[4];
    server_model_config c;
    server_config_default(&c, 1);
    cr_assert_eq(server_version_select(&c, disk, 4, out), 1);
    cr_assert_eq(out[0], 10);
    c.num_versions = 2;
    cr_assert_eq(server_version_select(&c, disk, 4, out), 2);
    cr_assert(out[0] == 7 && out[1] == 10);
    c.num_versions = 9;
    cr_assert_eq(server_version_select(&c, disk, 4, out), 4);
    c.policy = SERVER_POLICY_ALL;
    cr_assert_eq(server_version_select(&c, disk, 4, out), 4);
    cr_assert(out[0] == 1 && out[3] == 10);
    int64_t want[] = {3, 5};
    c.policy = SERVER_POLICY_SPECIFIC;
    c.versions = want;
    c.n_versions = 2;
    cr_assert_eq(server_version_select(&c, disk, 4, out), 1);
    cr_assert_eq(out[0], 3);
    cr_assert_eq(server_version_select(&c, disk, 0, out), 0);
}

static void touch(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

Test(repository, scan_finds_models_versions_and_configs)
{
    char root[] = "/tmp/rn_repoXXXXXX";
    cr_assert_not_null(mkdtemp(root));
    char p[512];
#define PATH(...) (snprintf(p, sizeof p, __VA_ARGS__), p)
    mkdir(PATH("%s/a", root), 0755);
    mkdir(PATH("%s/a/1", root), 0755);
    mkdir(PATH("%s/a/2", root), 0755);
    mkdir(PATH("%s/a/notes", root), 0755);
    mkdir(PATH("%s/a/3", root), 0755); /* no model.onnx: not a version */
    touch(PATH("%s/a/1/model.onnx", root), "x");
    touch(PATH("%s/a/2/model.onnx", root), "x");
    touch(PATH("%s/a/config.json", root), "{\"version_policy\":{\"all\":{}}}");
    mkdir(PATH("%s/.hidden", root), 0755);
    mkdir(PATH("%s/b", root), 0755);
    server_repo_model *models;
    size_t n;
    cr_assert_eq(server_repo_scan(root, 5, &models, &n), RN_OK, "%s", rn_last_error());
    cr_assert_eq(n, 2);
    server_repo_model *a = strcmp(models[0].name, "a") == 0 ? &models[0] : &models[1];
    server_repo_model *b = a == &models[0] ? &models[1] : &models[0];
    cr_assert_eq(a->n_versions, 2);
    cr_assert(a->versions[0] == 1 && a->versions[1] == 2);
    cr_assert_eq(a->config.max_queue_size, 5);
    cr_assert_str_eq(b->name, "b");
    cr_assert_eq(b->n_versions, 0);
    cr_assert_neq(a->config.hash, 0); /* a poll tells a changed config.json by it */
    cr_assert_eq(b->config.hash, 0);
    uint64_t hash = a->config.hash;
    server_repo_free(models, n);

    touch(PATH("%s/a/config.json", root), "{\"version_policy\":{\"all\":{}}} ");
    mkdir(PATH("%s/c", root), 0755); /* a pipeline: version 1 without model.onnx */
    touch(PATH("%s/c/config.json", root), "{\"pipeline\":{\"steps\":[]}}");
    cr_assert_eq(server_repo_scan(root, 5, &models, &n), RN_OK, "%s", rn_last_error());
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(models[i].name, "a") == 0)
            cr_assert_neq(models[i].config.hash, hash);
        if (strcmp(models[i].name, "c") == 0) {
            cr_assert_eq(models[i].n_versions, 1);
            cr_assert_eq(models[i].versions[0], 1);
            cr_assert_str_eq(models[i].config.pipeline, "{\"steps\":[]}");
        }
    }
    server_repo_free(models, n);

    touch(PATH("%s/b/config.json", root), "{\"devise\":\"REF\"}");
    cr_assert_eq(server_repo_scan(root, 5, &models, &n), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "model 'b'") && strstr(rn_last_error(), "'devise'"), "%s",
              rn_last_error());
    cr_assert_eq(server_repo_scan(PATH("%s/none", root), 5, &models, &n), RN_IO_ERROR);
    cr_assert(strstr(rn_last_error(), "/none") != NULL, "%s", rn_last_error());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
#undef PATH
}
