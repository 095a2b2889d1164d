/* runnel-server's model layer on a real model (the onnx wheel's light
 * SqueezeNet on REF): loading a repository, checking requests against the
 * model, async jobs answered from runnel's callback, and a bounded queue
 * that refuses at once when full. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/grpc_codec.h"
#include "server/kserve.pb-c.h"
#include "server/registry.h"

#define SQUEEZENET  ".cache/onnx-1.22.0/light/light_squeezenet.onnx"
#define DYNAMIC_ADD "tests/tools/data/dynamic_add.onnx" /* sum = x + y, [N,4] */

static char root[64];
static rn_core *core;

/* A repository of one model "sq" (version 1) made from `model`. */
static void make_repo_of(const char *model, const char *config)
{
    strcpy(root, "/tmp/rn_serverXXXXXX");
    cr_assert_not_null(mkdtemp(root));
    char p[256], target[4096];
    snprintf(p, sizeof p, "%s/sq", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/sq/1", root);
    mkdir(p, 0755);
    cr_assert_not_null(realpath(model, target), "%s missing (scripts/setup)", model);
    snprintf(p, sizeof p, "%s/sq/1/model.onnx", root);
    cr_assert_eq(symlink(target, p), 0);
    if (config != NULL) {
        snprintf(p, sizeof p, "%s/sq/config.json", root);
        FILE *f = fopen(p, "w");
        fputs(config, f);
        fclose(f);
    }
    cr_assert_eq(rn_core_create(&core), RN_OK);
}

static void make_repo(const char *config)
{
    make_repo_of(SQUEEZENET, config);
}

static void remove_repo(void)
{
    rn_core_free(core);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
}

static server_infer request(const char *name, const char *datatype, const char *shape, size_t n)
{
    size_t cap = 256 + 4 * n;
    char *json = malloc(cap);
    size_t used = (size_t)snprintf(json, cap,
                                   "{\"inputs\":[{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":%s,"
                                   "\"data\":[",
                                   name, datatype, shape);
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(json + used, cap - used, "%s1", i ? "," : "");
    snprintf(json + used, cap - used, "]}]}");
    server_infer infer;
    cr_assert_eq(server_infer_parse(json, strlen(json), SIZE_MAX, &infer), RN_OK, "%s",
                 rn_last_error());
    free(json);
    return infer;
}

Test(model, bind_checks_names_datatypes_and_shapes, .init = NULL)
{
    make_repo("{\"device\":\"REF\"}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 4, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", NULL);
    cr_assert_not_null(m, "%s", rn_last_error());
    cr_assert_eq(server_model_version(m), 1);
    cr_assert_null(server_registry_find(reg, "sq", "2"));
    cr_assert(strstr(rn_last_error(), "no version 2") != NULL, "%s", rn_last_error());
    cr_assert_null(server_registry_find(reg, "nope", ""));
    cr_assert(strstr(rn_last_error(), "no model 'nope'") != NULL, "%s", rn_last_error());

    server_infer in = request("data_0", "FP32", "[1,3,224,224]", 150528);
    cr_assert_eq(server_model_bind(m, &in), RN_OK, "%s", rn_last_error());
    server_infer_clear(&in);
    in = request("data_0", "FP32", "[1,3,224,2]", 1344);
    cr_assert_eq(server_model_bind(m, &in), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "shape [1,3,224,2], the model takes [1,3,224,224]"), "%s",
              rn_last_error());
    server_infer_clear(&in);
    in = request("data_0", "FP64", "[1,3,224,224]", 150528);
    cr_assert_eq(server_model_bind(m, &in), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "datatype FP64, the model takes FP32"), "%s",
              rn_last_error());
    server_infer_clear(&in);
    in = request("image", "FP32", "[1]", 1);
    cr_assert_eq(server_model_bind(m, &in), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "no input 'image'"), "%s", rn_last_error());
    server_infer_clear(&in);
    server_model_release(m);
    server_registry_free(reg);
    remove_repo();
}

/* Jobs that record their answer and signal the test. */
typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int answered;
    int ok;
} waiter;

static void on_done(server_job *job)
{
    waiter *w = job->user;
    pthread_mutex_lock(&w->lock);
    w->answered++;
    w->ok += job->http_status == 200;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

Test(model, jobs_are_answered_and_a_full_queue_refuses_at_once)
{
    make_repo("{\"device\":\"REF\",\"max_queue_size\":2}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 64, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", "1");
    cr_assert_not_null(m);
    size_t slots = server_model_requests(m);
    size_t n = slots + 2 + 3; /* the pool, the queue, and three too many */
    server_job *jobs = calloc(n, sizeof *jobs);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    size_t accepted = 0, refused = 0;
    for (size_t i = 0; i < n; i++) {
        jobs[i].infer = request("data_0", "FP32", "[1,3,224,224]", 150528);
        cr_assert_eq(server_model_bind(m, &jobs[i].infer), RN_OK);
    }
    for (size_t i = 0; i < n; i++) {
        jobs[i].done = on_done;
        jobs[i].user = &w;
        jobs[i].received_ns = server_now_ns();
        rn_status st = server_model_submit(m, &jobs[i]);
        if (st == RN_OK) {
            accepted++;
        } else {
            cr_assert_eq(st, RN_RESULT_NOT_READY);
            cr_assert(strstr(rn_last_error(), "queue is full"), "%s", rn_last_error());
            refused++;
        }
    }
    /* A REF SqueezeNet run takes tens of milliseconds: the submits above
     * all happen while the pool is busy. */
    cr_assert_eq(accepted, slots + 2, "accepted %zu with %zu requests", accepted, slots);
    cr_assert_eq(refused, 3);
    pthread_mutex_lock(&w.lock);
    while (w.answered < (int)accepted)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    cr_assert_eq(w.ok, (int)accepted);
    server_stats *s = server_model_stats(m);
    cr_assert_eq(atomic_load(&s->success), accepted);
    cr_assert_eq(atomic_load(&s->pending), 0);
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].http_status == 200) {
            cr_assert(jobs[i].response.header_size == 0);
            cr_assert(strstr(jobs[i].response.body, "\"name\":\"softmaxout_1\"") != NULL);
        }
        free(jobs[i].response.body);
        free(jobs[i].error);
        server_infer_clear(&jobs[i].infer);
    }
    free(jobs);
    server_model_release(m);
    server_registry_free(reg);
    remove_repo();
}

Test(model, poll_loads_new_versions_and_unloads_removed_ones)
{
    make_repo("{\"device\":\"REF\"}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 4, &reg), RN_OK);
    char from[256], to[256];
    snprintf(from, sizeof from, "%s/sq/1", root);
    snprintf(to, sizeof to, "%s/sq/2", root);
    cr_assert_eq(rename(from, to), 0);
    server_model *held = server_registry_find(reg, "sq", "1"); /* a job in flight on v1 */
    cr_assert_not_null(held);
    cr_assert_eq(server_registry_poll(reg), 2); /* v2 loaded, v1 unloaded */
    server_model *m = server_registry_find(reg, "sq", "");
    cr_assert_not_null(m);
    cr_assert_eq(server_model_version(m), 2);
    cr_assert_null(server_registry_find(reg, "sq", "1"));
    cr_assert_str_eq(server_model_name(held), "sq"); /* still alive while held */
    server_model_release(held);
    server_model_release(m);
    cr_assert_eq(server_registry_poll(reg), 0);
    server_registry_free(reg);
    remove_repo();
}

/* Dynamic batching, made deterministic: one infer request (LATENCY hint),
 * and the follow-up jobs are submitted from the first job's done, which
 * runs before its request is handed on, so they all wait in the queue and
 * the freed request takes them in batches of at most max_batch_size. */

typedef struct batch_case {
    server_model *model;
    server_job *jobs; /* jobs[0] primes; the rest are submitted from its done */
    size_t n;
    waiter w;
} batch_case;

/* Frees the case's jobs, then the model, registry and repository. */
static void finish_case(batch_case *c, server_registry *reg)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->jobs[i].response.body);
        free(c->jobs[i].error);
        server_infer_clear(&c->jobs[i].infer);
    }
    free(c->jobs);
    server_model_release(c->model);
    server_registry_free(reg);
    remove_repo();
}

static void on_primer_done(server_job *job)
{
    batch_case *c = job->user;
    for (size_t i = 1; i < c->n; i++)
        cr_assert_eq(server_model_submit(c->model, &c->jobs[i]), RN_OK, "%s", rn_last_error());
}

/* A job of two FP32 inputs named `names` (dynamic_add: x, y) of `rows` rows:
 * the first base + e, the second 1, so dynamic_add sums base + e + 1;
 * outputs binary. */
static void pair_job(server_model *m, server_job *job, const char *const names[2], int rows,
                     int base, waiter *w)
{
    char json[2048];
    size_t used = (size_t)snprintf(json, sizeof json, "{\"inputs\":[");
    for (int in = 0; in < 2; in++) {
        used += (size_t)snprintf(json + used, sizeof json - used,
                                 "%s{\"name\":\"%s\",\"datatype\":\"FP32\",\"shape\":[%d,4],"
                                 "\"data\":[",
                                 in ? "," : "", names[in], rows);
        for (int e = 0; e < 4 * rows; e++)
            used += (size_t)snprintf(json + used, sizeof json - used, "%s%d", e ? "," : "",
                                     in ? 1 : base + e);
        used += (size_t)snprintf(json + used, sizeof json - used, "]}");
    }
    snprintf(json + used, sizeof json - used, "],\"parameters\":{\"binary_data_output\":true}}");
    cr_assert_eq(server_infer_parse(json, strlen(json), SIZE_MAX, &job->infer), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(server_model_bind(m, &job->infer), RN_OK, "%s", rn_last_error());
    job->done = on_done;
    job->user = w;
    job->received_ns = server_now_ns();
}

static void add_job(server_model *m, server_job *job, int rows, int base, waiter *w)
{
    static const char *const xy[2] = {"x", "y"};
    pair_job(m, job, xy, rows, base, w);
}

/* Checks an answered add_job's binary output (the binary section starts
 * anywhere: copied out): base + 1, base + 2, ... */
static void check_sum(const server_job *job, int rows, int base)
{
    cr_assert_eq(job->http_status, 200, "%s", job->error ? job->error : "");
    cr_assert_eq(job->response.size - job->response.header_size, 16u * (size_t)rows);
    float sum[64];
    memcpy(sum, job->response.body + job->response.header_size, 16u * (size_t)rows);
    for (int e = 0; e < 4 * rows; e++)
        cr_assert_eq(sum[e], (float)(base + e + 1), "[%d]", e);
}

static void wait_answers(waiter *w, int n)
{
    pthread_mutex_lock(&w->lock);
    while (w->answered < n)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

static int answered(waiter *w)
{
    pthread_mutex_lock(&w->lock);
    int n = w->answered;
    pthread_mutex_unlock(&w->lock);
    return n;
}

/* The success counter is bumped before done, the last job's finish may
 * still be running: wait for the counters to settle. */
static void wait_success(server_model *m, uint64_t n)
{
    while (atomic_load(&server_model_stats(m)->success) < n)
        usleep(1000);
}

/* How many plans the compiled model built for concrete shapes. */
static long shape_builds(server_model *m)
{
    char buf[32];
    cr_assert_eq(rn_compiled_model_get_property(server_model_compiled(m), "SHAPE_CACHE_BUILDS", buf,
                                                sizeof buf),
                 RN_OK, "%s", rn_last_error());
    return atol(buf);
}

static void free_jobs(server_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(jobs[i].response.body);
        free(jobs[i].error);
        server_infer_clear(&jobs[i].infer);
    }
}

/* Runs a primed case: jobs[i] of rows[i] rows (base 10 i), jobs[0] first
 * and the rest from its done; checks every answer. */
static void run_primed_case(batch_case *c, const int *rows)
{
    pthread_mutex_init(&c->w.lock, NULL);
    pthread_cond_init(&c->w.cond, NULL);
    c->jobs = calloc(c->n, sizeof *c->jobs);
    for (size_t i = 0; i < c->n; i++)
        add_job(c->model, &c->jobs[i], rows[i], 10 * (int)i, &c->w);
    c->jobs[0].done = on_primer_done;
    c->jobs[0].user = c;
    cr_assert_eq(server_model_submit(c->model, &c->jobs[0]), RN_OK);
    wait_answers(&c->w, (int)c->n - 1);
    for (size_t i = 0; i < c->n; i++)
        check_sum(&c->jobs[i], rows[i], 10 * (int)i);
    wait_success(c->model, c->n);
}

Test(model, batching_joins_queued_jobs_and_splits_their_outputs)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"max_batch_size\":4,\"properties\":{"
                              "\"PERFORMANCE_HINT\":\"LATENCY\"}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    batch_case c = {.model = server_registry_find(reg, "sq", NULL), .n = 6};
    cr_assert_not_null(c.model);
    cr_assert_eq(server_model_requests(c.model), 1);
    int batch[6] = {1, 1, 2, 3, 1, 2}; /* queued: {1,2} {3,1} {2} with max 4 */
    run_primed_case(&c, batch);
    server_stats *s = server_model_stats(c.model);
    cr_assert_eq(atomic_load(&s->exec_count), 4); /* the primer, then 3 batches */
    cr_assert_eq(atomic_load(&s->inference_count), 10);
    finish_case(&c, reg);
}

static void on_primer_done_then_wait(server_job *job)
{
    on_primer_done(job);
    usleep(5000); /* the queued jobs wait at least this long */
}

Test(model, a_queued_request_past_its_timeout_gets_503)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"properties\":{\"PERFORMANCE_HINT\":"
                              "\"LATENCY\"}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    batch_case c = {.model = server_registry_find(reg, "sq", NULL), .n = 3};
    pthread_mutex_init(&c.w.lock, NULL);
    pthread_cond_init(&c.w.cond, NULL);
    c.jobs = calloc(c.n, sizeof *c.jobs);
    const char *params[3] = {"", ",\"parameters\":{\"timeout\":1000}", ""};
    for (size_t i = 0; i < c.n; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                 "\"data\":[1,2,3,4]},{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                 "\"data\":[1,1,1,1]}]%s}",
                 params[i]);
        cr_assert_eq(server_infer_parse(json, strlen(json), SIZE_MAX, &c.jobs[i].infer), RN_OK,
                     "%s", rn_last_error());
        cr_assert_eq(server_model_bind(c.model, &c.jobs[i].infer), RN_OK);
        c.jobs[i].done = i == 0 ? on_primer_done_then_wait : on_done;
        c.jobs[i].user = i == 0 ? (void *)&c : (void *)&c.w;
        c.jobs[i].received_ns = server_now_ns();
    }
    cr_assert_eq(c.jobs[1].infer.timeout_us, 1000);
    cr_assert_eq(server_model_submit(c.model, &c.jobs[0]), RN_OK);
    pthread_mutex_lock(&c.w.lock);
    while (c.w.answered < 2)
        pthread_cond_wait(&c.w.cond, &c.w.lock);
    pthread_mutex_unlock(&c.w.lock);
    cr_assert_eq(c.jobs[1].http_status, 503);
    cr_assert(strstr(c.jobs[1].error, "request timed out: waited") &&
                  strstr(c.jobs[1].error, "past its timeout of 1000 us"),
              "%s", c.jobs[1].error);
    cr_assert_eq(c.jobs[2].http_status, 200, "%s", c.jobs[2].error ? c.jobs[2].error : "");
    finish_case(&c, reg);
}

Test(model, a_batch_waits_for_the_delay_and_runs_at_once_when_full)
{
    /* One infer request, batches of 4, a delay far longer than the test. */
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"max_batch_size\":4,"
                              "\"max_queue_delay_us\":30000000,"
                              "\"properties\":{\"PERFORMANCE_HINT\":\"LATENCY\"}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", NULL);
    cr_assert_not_null(m);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job jobs[3] = {0};
    int rows[3] = {1, 2, 1};
    for (int i = 0; i < 3; i++)
        add_job(m, &jobs[i], rows[i], 100 * i, &w);
    cr_assert_eq(server_model_submit(m, &jobs[0]), RN_OK);
    cr_assert_eq(server_model_submit(m, &jobs[1]), RN_OK);
    usleep(50000); /* the request is free, yet 3 rows wait for a 4th */
    cr_assert_eq(answered(&w), 0);
    cr_assert_eq(atomic_load(&server_model_stats(m)->exec_count), 0);
    cr_assert_eq(server_model_submit(m, &jobs[2]), RN_OK); /* 4 rows: full, runs now */
    wait_answers(&w, 3);
    for (int i = 0; i < 3; i++)
        check_sum(&jobs[i], rows[i], 100 * i);
    wait_success(m, 3);
    cr_assert_eq(atomic_load(&server_model_stats(m)->exec_count), 1);
    cr_assert_eq(atomic_load(&server_model_stats(m)->inference_count), 4);
    free_jobs(jobs, 3);
    server_model_release(m);
    server_registry_free(reg);
    remove_repo();
}

Test(model, a_partial_batch_runs_when_the_delay_has_passed)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"max_batch_size\":8,"
                              "\"max_queue_delay_us\":20000,"
                              "\"properties\":{\"PERFORMANCE_HINT\":\"LATENCY\"}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", NULL);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job jobs[2] = {0};
    add_job(m, &jobs[0], 1, 0, &w);
    add_job(m, &jobs[1], 3, 50, &w);
    uint64_t t0 = server_now_ns();
    cr_assert_eq(server_model_submit(m, &jobs[0]), RN_OK);
    cr_assert_eq(server_model_submit(m, &jobs[1]), RN_OK);
    wait_answers(&w, 2);
    uint64_t waited_us = (server_now_ns() - t0) / 1000;
    cr_assert_geq(waited_us, 20000, "answered after %llu us, before the delay",
                  (unsigned long long)waited_us);
    check_sum(&jobs[0], 1, 0);
    check_sum(&jobs[1], 3, 50);
    wait_success(m, 2);
    cr_assert_eq(atomic_load(&server_model_stats(m)->exec_count), 1); /* 4 rows, one run */
    cr_assert_geq(atomic_load(&server_model_stats(m)->queue_us), 20000);
    free_jobs(jobs, 2);
    server_model_release(m);
    server_registry_free(reg);
    remove_repo();
}

Test(model, preferred_batch_sizes_take_the_largest_that_forms)
{
    /* Without delay: while the primer runs, 1+1+1+1+1+2 rows queue. Max 8
     * would take all 7 in one run; preferred {2, 4} takes 4 (the largest
     * preferred prefix), then 3 rows = 1 + 2 (no preferred prefix: all). */
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"max_batch_size\":8,"
                              "\"preferred_batch_size\":[4,2],"
                              "\"properties\":{\"PERFORMANCE_HINT\":\"LATENCY\"}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    batch_case c = {.model = server_registry_find(reg, "sq", NULL), .n = 7};
    long warmed = shape_builds(c.model); /* batches of 2, 4 and 8 were planned at load */
    cr_assert_geq(warmed, 3);
    int rows[7] = {1, 1, 1, 1, 1, 1, 2};
    run_primed_case(&c, rows);
    cr_assert_eq(atomic_load(&server_model_stats(c.model)->exec_count), 3);
    cr_assert_eq(atomic_load(&server_model_stats(c.model)->inference_count), 8);
    cr_assert_eq(shape_builds(c.model), warmed + 2); /* 1 and 3 are new; 4 was warm */

    /* With a long delay a preferred size runs at once: 2 rows, not 8. */
    server_model_release(c.model);
    server_registry_free(reg);
    char path[256];
    snprintf(path, sizeof path, "%s/sq/config.json", root);
    FILE *f = fopen(path, "w");
    fputs("{\"device\":\"REF\",\"max_batch_size\":8,\"preferred_batch_size\":[2],"
          "\"max_queue_delay_us\":30000000,\"properties\":{\"PERFORMANCE_HINT\":\"LATENCY\"}}",
          f);
    fclose(f);
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", NULL);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job jobs[2] = {0};
    add_job(m, &jobs[0], 1, 0, &w);
    add_job(m, &jobs[1], 1, 7, &w);
    cr_assert_eq(server_model_submit(m, &jobs[0]), RN_OK);
    cr_assert_eq(server_model_submit(m, &jobs[1]), RN_OK);
    wait_answers(&w, 2);
    check_sum(&jobs[0], 1, 0);
    check_sum(&jobs[1], 1, 7);
    free_jobs(jobs, 2);
    server_model_release(m);
    free_jobs(c.jobs, c.n);
    free(c.jobs);
    server_registry_free(reg);
    remove_repo();
}

/* ---- config reload and pipelines ---- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* Adds model folder `name` to the repository: version 1 of dynamic_add
 * when `with_model`, and config.json. */
static void add_folder(const char *name, int with_model, const char *config)
{
    char p[512], target[4096];
    snprintf(p, sizeof p, "%s/%s", root, name);
    mkdir(p, 0755);
    if (with_model) {
        snprintf(p, sizeof p, "%s/%s/1", root, name);
        mkdir(p, 0755);
        cr_assert_not_null(realpath(DYNAMIC_ADD, target));
        snprintf(p, sizeof p, "%s/%s/1/model.onnx", root, name);
        cr_assert_eq(symlink(target, p), 0);
    }
    snprintf(p, sizeof p, "%s/%s/config.json", root, name);
    write_file(p, config);
}

Test(model, poll_reloads_a_changed_config_while_the_old_one_serves)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\"}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 4, &reg), RN_OK, "%s", rn_last_error());
    server_model *held = server_registry_find(reg, "sq", "1"); /* a request in flight */
    cr_assert_eq(server_registry_poll(reg), 0);                /* nothing changed */
    add_folder("sq", 0, "{\"device\":\"REF\",\"max_batch_size\":2}");
    cr_assert_eq(server_registry_poll(reg), 1);
    server_model *m = server_registry_find(reg, "sq", "1");
    cr_assert(m != NULL && m != held);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job jobs[2] = {0};
    add_job(held, &jobs[0], 3, 5, &w); /* the old config: any batch */
    cr_assert_eq(server_model_submit(held, &jobs[0]), RN_OK);
    wait_answers(&w, 1);
    check_sum(&jobs[0], 3, 5);
    const char *three = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[3,4],"
                        "\"data\":[1,2,3,4,5,6,7,8,9,10,11,12]},{\"name\":\"y\",\"datatype\":"
                        "\"FP32\",\"shape\":[3,4],\"data\":[1,2,3,4,5,6,7,8,9,10,11,12]}]}";
    server_infer in;
    cr_assert_eq(server_infer_parse(three, strlen(three), SIZE_MAX, &in), RN_OK);
    cr_assert_eq(server_model_bind(m, &in), RN_INVALID_ARG); /* the new one: max 2 */
    cr_assert(strstr(rn_last_error(), "batch size 3 is not in 1..2"), "%s", rn_last_error());
    server_infer_clear(&in);
    add_job(m, &jobs[1], 2, 9, &w);
    cr_assert_eq(server_model_submit(m, &jobs[1]), RN_OK);
    wait_answers(&w, 2);
    check_sum(&jobs[1], 2, 9);
    wait_success(m, 1);
    wait_success(held, 1);
    free_jobs(jobs, 2);
    server_model_release(held);
    server_model_release(m);
    cr_assert_eq(server_registry_poll(reg), 0); /* frees the retired one */
    server_registry_free(reg);
    remove_repo();
}

static const char *const AB[2] = {"a", "b"};

/* sq and one (max_batch_size 1) are dynamic_add; twice runs sq twice,
 * z = (a + b) + b; bad runs sq then one; diamond runs t = a + b and
 * u = b + b side by side, then z = t + u. */
static void make_pipeline_repo(void)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\"}");
    add_folder("one", 1, "{\"device\":\"REF\",\"max_batch_size\":1}");
    add_folder(
        "twice", 0,
        "{\"pipeline\":{\"inputs\":[\"a\",\"b\"],\"outputs\":[\"z\"],\"steps\":["
        "{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"b\"},\"outputs\":{\"sum\":\"t\"}},"
        "{\"model\":\"sq\",\"version\":1,\"inputs\":{\"x\":\"t\",\"y\":\"b\"},"
        "\"outputs\":{\"sum\":\"z\"}}]}}");
    add_folder(
        "bad", 0,
        "{\"pipeline\":{\"inputs\":[\"a\",\"b\"],\"outputs\":[\"z\"],\"steps\":["
        "{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"b\"},\"outputs\":{\"sum\":\"t\"}},"
        "{\"model\":\"one\",\"inputs\":{\"x\":\"t\",\"y\":\"b\"},"
        "\"outputs\":{\"sum\":\"z\"}}]}}");
    add_folder(
        "diamond", 0,
        "{\"pipeline\":{\"inputs\":[\"a\",\"b\"],\"outputs\":[\"z\",\"u\"],\"steps\":["
        "{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"b\"},\"outputs\":{\"sum\":\"t\"}},"
        "{\"model\":\"sq\",\"inputs\":{\"x\":\"b\",\"y\":\"b\"},\"outputs\":{\"sum\":\"u\"}},"
        "{\"model\":\"sq\",\"inputs\":{\"x\":\"t\",\"y\":\"u\"},"
        "\"outputs\":{\"sum\":\"z\"}}]}}");
}

Test(pipeline, steps_run_as_a_dag_of_callbacks_and_errors_name_the_step)
{
    make_pipeline_repo();
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 4, &reg), RN_OK, "%s", rn_last_error());
    server_model *p = server_registry_find(reg, "twice", NULL);
    cr_assert_not_null(p, "%s", rn_last_error());
    cr_assert(server_model_is_pipeline(p));
    cr_assert_null(server_model_compiled(p));
    cr_assert_eq(server_model_version(p), 1);
    cr_assert_eq(server_model_input_count(p), 2);
    cr_assert_eq(server_model_output_count(p), 1);
    rn_port port;
    cr_assert_eq(server_model_input(p, 1, &port), RN_OK);
    cr_assert_str_eq(port.name, "b");
    cr_assert_eq(port.element_type, RN_F32);
    cr_assert_eq(port.shape.rank, 2);
    cr_assert_eq(port.shape.dims[1], 4);
    cr_assert_eq(server_model_output(p, 0, &port), RN_OK);
    cr_assert_str_eq(port.name, "z");

    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job jobs[3] = {0};
    pair_job(p, &jobs[0], AB, 3, 20, &w);
    cr_assert_eq(server_model_submit(p, &jobs[0]), RN_OK);
    wait_answers(&w, 1);
    check_sum(&jobs[0], 3, 21); /* (a + 1) + 1 */
    cr_assert(strstr(jobs[0].response.body, "\"model_name\":\"twice\""), "%.*s",
              (int)jobs[0].response.header_size, jobs[0].response.body);
    server_model *sq = server_registry_find(reg, "sq", NULL);
    cr_assert_eq(atomic_load(&server_model_stats(sq)->exec_count), 2); /* both steps ran on sq */
    server_model_release(sq);
    wait_success(p, 1);

    server_model *bad = server_registry_find(reg, "bad", NULL);
    pair_job(bad, &jobs[1], AB, 2, 0, &w); /* step 2's model takes batches of 1 */
    cr_assert_eq(server_model_submit(bad, &jobs[1]), RN_OK);
    pair_job(bad, &jobs[2], AB, 1, 0, &w);
    cr_assert_eq(server_model_submit(bad, &jobs[2]), RN_OK);
    wait_answers(&w, 3);
    cr_assert_eq(jobs[1].http_status, 400);
    cr_assert(strstr(jobs[1].error, "pipeline 'bad' step 2 (model 'one'): input 'x': batch size 2"),
              "%s", jobs[1].error);
    check_sum(&jobs[2], 1, 1);
    wait_success(bad, 1);
    cr_assert_eq(atomic_load(&server_model_stats(bad)->failure), 1);
    cr_assert_eq(atomic_load(&server_model_stats(bad)->pending), 0);
    free_jobs(jobs, 3);

    /* A DAG: steps 1 and 2 start together, step 3 from the later of their
     * callbacks; z = (a + b) + (b + b), u = 2 (outputs in the config's order). */
    server_model *diamond = server_registry_find(reg, "diamond", NULL);
    cr_assert_eq(server_model_output_count(diamond), 2);
    for (int round = 0; round < 8; round++) {
        server_job job = {0};
        waiter w1 = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
        pair_job(diamond, &job, AB, 2, 10 * round, &w1);
        cr_assert_eq(server_model_submit(diamond, &job), RN_OK);
        wait_answers(&w1, 1);
        cr_assert_eq(job.http_status, 200, "%s", job.error ? job.error : "");
        float out[16]; /* z then u, 8 floats each */
        cr_assert_eq(job.response.size - job.response.header_size, sizeof out);
        memcpy(out, job.response.body + job.response.header_size, sizeof out);
        for (int e = 0; e < 8; e++) {
            cr_assert_eq(out[e], (float)(10 * round + e + 3), "z[%d]", e);
            cr_assert_eq(out[8 + e], 2.0f, "u[%d]", e);
        }
        free_jobs(&job, 1);
    }
    wait_success(diamond, 8);
    cr_assert_eq(atomic_load(&server_model_stats(diamond)->pending), 0);
    server_model_release(diamond);
    server_model_release(bad);
    server_model_release(p);
    server_registry_free(reg);
    remove_repo();
}

Test(pipeline, a_bad_pipeline_fails_the_load_naming_the_problem)
{
    struct {
        const char *steps, *needle;
    } cases[] = {
        {"{\"model\":\"nope\",\"inputs\":{},\"outputs\":{}}",
         "pipeline 'p': step 1 (model 'nope'): no model 'nope' is loaded"},
        {"{\"model\":\"sq\",\"inputs\":{\"x\":\"a\"},\"outputs\":{\"sum\":\"z\"}}",
         "step 1 (model 'sq'): model 'sq' input 'y' is not mapped"},
        {"{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"t\"},\"outputs\":{\"sum\":\"z\"}}",
         "input 'y' takes tensor 't', which is neither a pipeline input nor an output of an "
         "earlier step"},
        {"{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"a\"},\"outputs\":{\"total\":\"z\"}}",
         "model 'sq' has no output 'total'"},
        {"{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"a\"},\"outputs\":{\"sum\":\"w\"}}",
         "output 'z' is made by no step"},
        {"{\"model\":\"sq\",\"inputs\":{\"x\":\"a\",\"y\":\"a\"},\"outputs\":{\"sum\":\"z\"},"
         "\"when\":1}",
         "step 1 (model 'sq'): unknown key 'when'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\"}");
        char config[512];
        snprintf(config, sizeof config,
                 "{\"pipeline\":{\"inputs\":[\"a\"],\"outputs\":[\"z\"],\"steps\":[%s]}}",
                 cases[i].steps);
        add_folder("p", 0, config);
        server_registry *reg = NULL;
        cr_assert_eq(server_registry_create(core, root, "REF", 4, &reg), RN_INVALID_ARG, "%s",
                     cases[i].steps);
        cr_assert(strstr(rn_last_error(), cases[i].needle), "'%s' lacks '%s'", rn_last_error(),
                  cases[i].needle);
        cr_assert_null(reg);
        remove_repo();
    }
}

/* Collects repository index entries as "name:version:state:reason;". */
static void index_line(const char *name, const char *version, const char *state, const char *reason,
                       void *user)
{
    char *text = user;
    size_t used = strlen(text);
    snprintf(text + used, 512 - used, "%s:%s:%s:%s;", name, version, state, reason);
}

static const char *index_of(server_registry *reg, int ready_only)
{
    static char text[512];
    text[0] = '\0';
    server_registry_index(reg, ready_only, index_line, text);
    return text;
}

Test(repository, explicit_control_loads_and_unloads_on_request)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\"}");
    server_registry *reg;
    cr_assert_eq(server_registry_open(core, root, "REF", 4, SERVER_CONTROL_EXPLICIT, NULL, &reg),
                 RN_OK, "%s", rn_last_error());
    cr_assert_null(server_registry_find(reg, "sq", NULL)); /* nothing loads at start */
    cr_assert_str_eq(index_of(reg, 0), "sq::UNAVAILABLE:unloaded;");
    cr_assert_str_eq(index_of(reg, 1), "");
    cr_assert_eq(server_registry_load(reg, "nope"), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "no model 'nope' in the repository"), "%s", rn_last_error());
    cr_assert_eq(server_registry_load(reg, "sq"), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(index_of(reg, 0), "sq:1:READY:;");

    /* A version held by a request keeps serving after the unload. */
    server_model *m = server_registry_find(reg, "sq", NULL);
    cr_assert_not_null(m, "%s", rn_last_error());
    cr_assert_eq(server_registry_unload(reg, "sq"), RN_OK);
    cr_assert_null(server_registry_find(reg, "sq", NULL));
    cr_assert_str_eq(index_of(reg, 0), "sq::UNAVAILABLE:unloaded;");
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job job = {0};
    add_job(m, &job, 1, 10, &w);
    cr_assert_eq(server_model_submit(m, &job), RN_OK, "%s", rn_last_error());
    wait_answers(&w, 1);
    check_sum(&job, 1, 10);
    wait_success(m, 1);
    server_statistics s;
    server_model_statistics(m, &s);
    cr_assert_eq(s.success_count, 1);
    cr_assert_eq(s.fail_count, 0);
    cr_assert_eq(s.ran, 1);
    cr_assert_eq(s.inference_count, 1);
    cr_assert_eq(s.execution_count, 1);
    cr_assert_gt(s.success_ns, 0);
    cr_assert_gt(s.last_ms, 1700000000000u); /* ms since the epoch */
    free_jobs(&job, 1);
    server_model_release(m);
    cr_assert_eq(server_registry_unload(reg, "never-loaded"), RN_OK); /* as Triton */
    server_registry_free(reg);

    /* Other modes refuse; a startup list names models that must exist. */
    cr_assert_eq(server_registry_create(core, root, "REF", 4, &reg), RN_OK, "%s", rn_last_error());
    cr_assert_eq(server_registry_load(reg, "sq"), RN_NOT_IMPLEMENTED);
    cr_assert(strstr(rn_last_error(), "need --model-control-mode explicit"), "%s", rn_last_error());
    cr_assert_eq(server_registry_unload(reg, "sq"), RN_NOT_IMPLEMENTED);
    server_registry_free(reg);
    cr_assert_eq(server_registry_open(core, root, "REF", 4, SERVER_CONTROL_EXPLICIT, "sq", &reg),
                 RN_OK, "%s", rn_last_error());
    server_model *held = server_registry_find(reg, "sq", "1");
    cr_assert_not_null(held);
    server_model_release(held);
    server_registry_free(reg);
    cr_assert_eq(server_registry_open(core, root, "REF", 4, SERVER_CONTROL_EXPLICIT, "sq,zz", &reg),
                 RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "--load-model: no model 'zz'"), "%s", rn_last_error());
    remove_repo();
}

/* The gRPC front's encoder, as a job carries it. */
static rn_status encode_grpc(const server_job *job, const char *model, const char *version,
                             const server_output *outputs, size_t n, server_response *out)
{
    return server_grpc_response_encode(model, version, job->infer.id, outputs, n, 0, out);
}

Test(model, a_job_with_its_own_encoder_gets_a_protobuf_answer_in_a_batch)
{
    make_repo_of(DYNAMIC_ADD,
                 "{\"device\":\"REF\",\"max_batch_size\":8,\"max_queue_delay_us\":30000000,"
                 "\"preferred_batch_size\":[3],\"properties\":{\"PERFORMANCE_HINT\":\"LATENCY\"}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", NULL);
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    server_job jobs[2] = {0};
    add_job(m, &jobs[0], 1, 0, &w); /* REST */
    add_job(m, &jobs[1], 2, 100, &w);
    jobs[1].encode = encode_grpc; /* gRPC, in the same batch of 3 rows */
    for (int i = 0; i < 2; i++)
        cr_assert_eq(server_model_submit(m, &jobs[i]), RN_OK, "%s", rn_last_error());
    wait_answers(&w, 2);
    check_sum(&jobs[0], 1, 0);
    cr_assert_eq(jobs[1].http_status, 200, "%s", jobs[1].error ? jobs[1].error : "");
    cr_assert_eq(jobs[1].response.header_size, 0);
    Inference__ModelInferResponse *r = inference__model_infer_response__unpack(
        NULL, jobs[1].response.size, (uint8_t *)jobs[1].response.body);
    cr_assert_not_null(r);
    cr_assert_str_eq(r->model_name, "sq");
    cr_assert_eq(r->n_outputs, 1);
    cr_assert_eq(r->outputs[0]->n_shape, 2);
    cr_assert_eq(r->outputs[0]->shape[0], 2); /* its own rows of the batch */
    cr_assert_eq(r->raw_output_contents[0].len, 32);
    float sum[8];
    memcpy(sum, r->raw_output_contents[0].data, sizeof sum);
    for (int e = 0; e < 8; e++)
        cr_assert_eq(sum[e], (float)(100 + e + 1), "[%d]", e);
    inference__model_infer_response__free_unpacked(r, NULL);
    wait_success(m, 2);
    cr_assert_eq(atomic_load(&server_model_stats(m)->exec_count), 1);
    free_jobs(jobs, 2);
    server_model_release(m);
    server_registry_free(reg);
    remove_repo();
}

/* A request of sequence `id` to dynamic_add served as an accumulator (state
 * y <- sum): x is one row of `value`s, so its answer is the sum of its
 * sequence's x so far. */
static rn_status sequence_job(server_model *m, server_job *job, uint64_t id, int start, int end,
                              int value, waiter *w)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[%d,%d,"
             "%d,%d]}],\"parameters\":{\"binary_data_output\":true,\"sequence_id\":%llu,"
             "\"sequence_start\":%s,\"sequence_end\":%s}}",
             value, value, value, value, (unsigned long long)id, start ? "true" : "false",
             end ? "true" : "false");
    cr_assert_eq(server_infer_parse(json, strlen(json), SIZE_MAX, &job->infer), RN_OK, "%s",
                 rn_last_error());
    job->done = on_done;
    job->user = w;
    job->received_ns = server_now_ns();
    return server_model_bind(m, &job->infer);
}

static float answer_of(const server_job *job)
{
    cr_assert_eq(job->http_status, 200, "%s", job->error ? job->error : "");
    float sum[4];
    cr_assert_eq(job->response.size - job->response.header_size, sizeof sum);
    memcpy(sum, job->response.body + job->response.header_size, sizeof sum);
    for (int e = 1; e < 4; e++)
        cr_assert_eq(sum[e], sum[0]);
    return sum[0];
}

Test(sequence, interleaved_sequences_keep_their_own_state_in_order)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"max_batch_size\":8,"
                              "\"sequence\":{\"state\":[{\"input\":\"y\",\"output\":\"sum\"}],"
                              "\"max_idle_us\":2000000}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_OK, "%s", rn_last_error());
    server_model *m = server_registry_find(reg, "sq", NULL);
    cr_assert_not_null(m);
    /* Two sequences of 5 requests, submitted interleaved and at once: each
     * waits behind its sequence's request in flight. */
    enum { N = 10 };
    server_job jobs[N] = {0};
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    for (int i = 0; i < N; i++) {
        uint64_t id = 100 + (uint64_t)(i % 2);
        int step = i / 2;
        cr_assert_eq(sequence_job(m, &jobs[i], id, step == 0, step == 4, (int)id * 10 + step, &w),
                     RN_OK, "%s", rn_last_error());
        cr_assert_eq(server_model_submit(m, &jobs[i]), RN_OK, "%s", rn_last_error());
    }
    wait_answers(&w, N);
    for (int s = 0; s < 2; s++) { /* each alone: x summed in order */
        float want = 0;
        for (int step = 0; step < 5; step++) {
            want += (float)((100 + s) * 10 + step);
            cr_assert_eq(answer_of(&jobs[2 * step + s]), want, "sequence %d step %d", s, step);
        }
    }
    wait_success(m, N);
    cr_assert_eq(server_model_sequences(m), 0); /* both ended */
    free_jobs(jobs, N);

    /* Bad requests, named. */
    server_job bad = {0};
    cr_assert_eq(sequence_job(m, &bad, 0, 0, 0, 1, &w), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "is stateful: a request needs parameters.sequence_id"), "%s",
              rn_last_error());
    free_jobs(&bad, 1);
    memset(&bad, 0, sizeof bad);
    cr_assert_eq(sequence_job(m, &bad, 100, 0, 0, 1, &w), RN_INVALID_ARG); /* it ended */
    cr_assert(strstr(rn_last_error(), "sequence 100 of model 'sq' is not active"), "%s",
              rn_last_error());
    free_jobs(&bad, 1);
    memset(&bad, 0, sizeof bad);
    const char *with_state = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                             "\"data\":[1,1,1,1]},{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":"
                             "[1,4],\"data\":[1,1,1,1]}],\"parameters\":{\"sequence_id\":5,"
                             "\"sequence_start\":true}}";
    cr_assert_eq(server_infer_parse(with_state, strlen(with_state), SIZE_MAX, &bad.infer), RN_OK);
    cr_assert_eq(server_model_bind(m, &bad.infer), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "input 'y' is the sequence state of model 'sq'"), "%s",
              rn_last_error());
    free_jobs(&bad, 1);

    /* An idle sequence is reclaimed; continuing it is refused. */
    server_job idle[2] = {0};
    waiter w2 = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    cr_assert_eq(sequence_job(m, &idle[0], 7, 1, 0, 3, &w2), RN_OK, "%s", rn_last_error());
    cr_assert_eq(server_model_submit(m, &idle[0]), RN_OK);
    wait_answers(&w2, 1);
    cr_assert_eq(answer_of(&idle[0]), 3);
    cr_assert_eq(server_model_sequences(m), 1);
    /* Past max_idle_us (2 s: long enough that a slow sanitizer run on a busy
     * machine never idles a sequence between two of its requests above). */
    usleep(2300000);
    cr_assert_eq(server_model_sequences(m), 0);
    cr_assert_eq(sequence_job(m, &idle[1], 7, 0, 0, 3, &w2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "is not active: start it with sequence_start"), "%s",
              rn_last_error());
    free_jobs(idle, 2);
    server_model_release(m);
    server_registry_free(reg);
    remove_repo();
}

Test(sequence, state_pairs_are_checked_at_load)
{
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\",\"max_batch_size\":8,"
                              "\"sequence\":{\"state\":[{\"input\":\"y\",\"output\":\"nope\"}]}}");
    server_registry *reg;
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'sequence': the model has no output 'nope'"), "%s",
              rn_last_error());
    remove_repo();
    /* Without batching dynamic_add's dims are [N,4]: a state needs static dims. */
    make_repo_of(DYNAMIC_ADD, "{\"device\":\"REF\","
                              "\"sequence\":{\"state\":[{\"input\":\"y\",\"output\":\"sum\"}]}}");
    cr_assert_eq(server_registry_create(core, root, "REF", 16, &reg), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "need the same datatype and the same static dims"), "%s",
              rn_last_error());
    remove_repo();
}
