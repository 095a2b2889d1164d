/* bench/server/grpc_load's client (grpc_load.h) against runnel-server's gRPC
 * front run in process on a real model (tests/tools/data/dynamic_add.onnx,
 * sum = x + y over [N,4], on REF): every answer is counted and checked, a
 * model the server does not have stops the load with the server's reason,
 * the request it builds is one the server's own decoder accepts, and the
 * checks refuse answers of the wrong size, datatype, shape or model. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/server/grpc_load.h"
#include "server/grpc.h"
#include "server/grpc_codec.h"
#include "server/kserve.pb-c.h"
#include "server/registry.h"

#define DYNAMIC_ADD "tests/tools/data/dynamic_add.onnx"

#if defined(__SANITIZE_THREAD__)
/* gRPC's C core and the absl and libstdc++ beneath it are Debian's, not
 * built for ThreadSanitizer: their own synchronization is invisible to it,
 * so what their code does through TSan's interceptors (memcpy, epoll_wait,
 * operator new) reads as races. Reports from modules not instrumented are
 * left out (TSan's ignore_noninstrumented_modules); runnel's own code
 * (server/grpc.c's queue thread against the model's callback thread, the
 * client's loop) stays checked. */
__attribute__((visibility("default"))) const char *__tsan_default_options(void);
__attribute__((visibility("default"))) const char *__tsan_default_options(void)
{
    return "ignore_noninstrumented_modules=1";
}
#endif

static char root[64];
static rn_core *core;
static server_registry *registry;
static server_grpc *grpc;
static char target[64];

/* A repository of model "add" (version 1) served over gRPC on a free port,
 * with `threads` completion-queue threads asked for. */
static void serve_with(unsigned threads)
{
    strcpy(root, "/tmp/rn_grpc_loadXXXXXX");
    cr_assert_not_null(mkdtemp(root));
    char p[256], model[4096];
    snprintf(p, sizeof p, "%s/add", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/add/1", root);
    mkdir(p, 0755);
    cr_assert_not_null(realpath(DYNAMIC_ADD, model), "%s missing", DYNAMIC_ADD);
    snprintf(p, sizeof p, "%s/add/1/model.onnx", root);
    cr_assert_eq(symlink(model, p), 0);
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(server_registry_create(core, root, "REF", 64, &registry), RN_OK, "%s",
                 rn_last_error());
    server_grpc_config config = {
        .address = "127.0.0.1", .threads = threads, .max_message = 1 << 20};
    cr_assert_eq(server_grpc_start(registry, &config, &grpc), RN_OK, "%s", rn_last_error());
    server_grpc_set_ready(grpc, 1);
    snprintf(target, sizeof target, "127.0.0.1:%d", server_grpc_port(grpc));
}

static void serve(void)
{
    serve_with(1);
}

static void stop(void)
{
    server_grpc_stop(grpc);
    server_registry_free(registry);
    rn_core_free(core);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
}

/* `requests` calls of "add", 4 in flight: all answered, none wrong. */
static grpc_load_report load_all_right(size_t requests, uint64_t seed)
{
    grpc_load_config config = {
        .target = target, .model = "add", .concurrency = 4, .requests = requests, .seed = seed};
    grpc_load_report r;
    char why[512] = "";
    cr_assert_eq(grpc_load_run(&config, &r, why, sizeof why), 0, "%s", why);
    cr_assert_eq(r.errors, 0, "first error: %s", r.first_error);
    cr_assert_eq(r.answers, requests);
    return r;
}

Test(grpc_load, counts_and_checks_every_answer, .init = serve, .fini = stop)
{
    grpc_load_report r = load_all_right(40, 7);
    cr_assert_gt(r.rate, 0);
    cr_assert_gt(r.p50_ms, 0);
    cr_assert_geq(r.p99_ms, r.p50_ms);
    /* x and y of [1,4] FP32 raw: 16 bytes each, inside the message; sum's 16 in the answer. */
    cr_assert_gt(r.request_bytes, 32);
    cr_assert_gt(r.response_bytes, 16);
}

Test(grpc_load, an_unknown_model_stops_with_the_servers_reason, .init = serve, .fini = stop)
{
    grpc_load_config config = {.target = target, .model = "nope", .concurrency = 2, .requests = 4};
    grpc_load_report r;
    char why[512] = "";
    cr_assert_eq(grpc_load_run(&config, &r, why, sizeof why), -1);
    cr_assert_not_null(strstr(why, "ModelMetadata for 'nope'"), "%s", why);
    cr_assert_not_null(strstr(why, "status 5"), "not NOT_FOUND: %s",
                       why); /* GRPC_STATUS_NOT_FOUND */
}

Test(grpc_load, no_budget_is_refused)
{
    grpc_load_config config = {.target = "127.0.0.1:1", .model = "add", .concurrency = 1};
    grpc_load_report r;
    char why[512] = "";
    cr_assert_eq(grpc_load_run(&config, &r, why, sizeof why), -1);
    cr_assert_not_null(strstr(why, "would not end"), "%s", why);
}

/* A packed ModelMetadataResponse of model "add": inputs x and y, output sum,
 * FP32 [-1,4] each (what runnel-server answers for dynamic_add). */
static uint8_t *add_metadata(size_t *size)
{
    int64_t shape[] = {-1, 4};
    Inference__ModelMetadataResponse__TensorMetadata t[3];
    const char *names[] = {"x", "y", "sum"};
    for (int i = 0; i < 3; i++) {
        inference__model_metadata_response__tensor_metadata__init(&t[i]);
        t[i].name = (char *)names[i];
        t[i].datatype = "FP32";
        t[i].n_shape = 2;
        t[i].shape = shape;
    }
    Inference__ModelMetadataResponse__TensorMetadata *ins[] = {&t[0], &t[1]}, *outs[] = {&t[2]};
    Inference__ModelMetadataResponse m = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
    m.name = "add";
    m.n_inputs = 2;
    m.inputs = ins;
    m.n_outputs = 1;
    m.outputs = outs;
    *size = inference__model_metadata_response__get_packed_size(&m);
    uint8_t *b = malloc(*size);
    inference__model_metadata_response__pack(&m, b);
    return b;
}

/* A packed ModelInferResponse: one output `name` of `datatype`, shape
 * [d0,d1], `bytes` of raw contents. */
static uint8_t *answer(const char *model, const char *name, const char *datatype, int64_t d0,
                       int64_t d1, size_t bytes, size_t *size)
{
    int64_t shape[] = {d0, d1};
    uint8_t data[64] = {0};
    Inference__ModelInferResponse__InferOutputTensor t =
        INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
    t.name = (char *)name;
    t.datatype = (char *)datatype;
    t.n_shape = 2;
    t.shape = shape;
    Inference__ModelInferResponse__InferOutputTensor *outs[] = {&t};
    ProtobufCBinaryData raw = {bytes, data};
    Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    r.model_name = (char *)model;
    r.n_outputs = 1;
    r.outputs = outs;
    r.n_raw_output_contents = 1;
    r.raw_output_contents = &raw;
    *size = inference__model_infer_response__get_packed_size(&r);
    uint8_t *b = malloc(*size);
    inference__model_infer_response__pack(&r, b);
    return b;
}

static void expect_check(const grpc_load_expect *e, const char *model, const char *name,
                         const char *datatype, int64_t d0, int64_t d1, size_t bytes,
                         const char *reason)
{
    size_t size;
    uint8_t *b = answer(model, name, datatype, d0, d1, bytes, &size);
    char why[512] = "";
    int ok = grpc_load_check(e, "add", b, size, why, sizeof why);
    free(b);
    if (reason == NULL) {
        cr_assert_eq(ok, 1, "%s", why);
    } else {
        cr_assert_eq(ok, 0, "passed, expected: %s", reason);
        cr_assert_not_null(strstr(why, reason), "'%s' does not say '%s'", why, reason);
    }
}

Test(grpc_load, checks_refuse_wrong_answers)
{
    size_t size;
    uint8_t *meta = add_metadata(&size);
    char why[512] = "";
    grpc_load_expect *e = grpc_load_expect_create(meta, size, why, sizeof why);
    cr_assert_not_null(e, "%s", why);
    expect_check(e, "add", "sum", "FP32", 2, 4, 32, NULL);
    expect_check(e, "add", "sum", "FP32", 2, 4, 28, "28 bytes of raw_output_contents");
    expect_check(e, "add", "sum", "FP64", 2, 4, 64, "datatype FP64");
    expect_check(e, "add", "sum", "FP32", 2, 5, 40, "dim 1 is 5");
    expect_check(e, "add", "out", "FP32", 2, 4, 32, "'out' is not in the model's metadata");
    expect_check(e, "other", "sum", "FP32", 2, 4, 32, "for model 'other'");
    const uint8_t junk[] = {0xff, 0xff, 0xff};
    cr_assert_eq(grpc_load_check(e, "add", junk, sizeof junk, why, sizeof why), 0);
    cr_assert_not_null(strstr(why, "not a ModelInferResponse"), "%s", why);
    grpc_load_expect_free(e);
    free(meta);
}

/* The request grpc_load sends decodes with runnel-server's own decoder into
 * x and y of [1,4] FP32 with contents. */
Test(grpc_load, the_request_is_one_the_server_decodes)
{
    size_t meta_size, size;
    uint8_t *meta = add_metadata(&meta_size);
    char why[512] = "";
    uint8_t *request = grpc_load_request(meta, meta_size, "add", NULL, 3, &size, why, sizeof why);
    cr_assert_not_null(request, "%s", why);
    server_grpc_infer decoded;
    cr_assert_eq(server_grpc_infer_decode(request, size, &decoded), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(decoded.model, "add");
    cr_assert_eq(decoded.message->n_inputs, 2);
    for (size_t i = 0; i < 2; i++) {
        const Inference__ModelInferRequest__InferInputTensor *t = decoded.message->inputs[i];
        cr_assert_str_eq(t->datatype, "FP32");
        cr_assert_eq(t->n_shape, 2);
        cr_assert_eq(t->shape[0], 1); /* the dynamic dim */
        cr_assert_eq(t->shape[1], 4);
        cr_assert_eq(decoded.raw[i].len, 16);
        float v[4];
        memcpy(v, decoded.raw[i].data, sizeof v);
        for (int k = 0; k < 4; k++)
            cr_assert(v[k] >= 0 && v[k] < 1, "input %zu element %d: %g", i, k, (double)v[k]);
    }
    cr_assert_neq(memcmp(decoded.raw[0].data, decoded.raw[1].data, 16), 0, "x and y the same");
    server_grpc_infer_clear(&decoded);
    free(request);
    free(meta);
}

/* This process's threads named `name` (server/grpc.c names its queue threads). */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue; /* the thread ended */
        if (fgets(comm, sizeof comm, f) != NULL && strcmp(strtok(comm, "\n"), name) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* The load over `threads` queue threads asked for, on the CPUs this thread
 * may run on now: every answer right, and no more queue threads than those
 * CPUs (gRPC's poller hands polling between the threads on each wake-up). */
static void serve_on_cpus(unsigned threads, int expected)
{
    serve_with(threads);
    load_all_right(20, 3);
    cr_assert_eq(threads_named("rn-grpc-queue"), expected);
    cr_assert_eq(server_grpc_queue_threads(grpc), (unsigned)expected);
    stop();
}

Test(grpc_load, no_more_queue_threads_than_cpus_on_one_cpu)
{
    cpu_set_t all, one;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    serve_on_cpus(4, 1);
}

Test(grpc_load, queue_threads_as_asked_within_the_cpus)
{
    cpu_set_t all;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int cpus = CPU_COUNT(&all);
    serve_on_cpus(4, cpus < 4 ? cpus : 4);
    serve_on_cpus(1, 1);
}
