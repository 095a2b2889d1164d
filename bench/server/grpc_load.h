/* grpc_load: a lean KServe v2 gRPC load client (bench/server/protocols,
 * bench/server/front_profile), in C on gRPC's C core and protobuf-c, the
 * libraries and messages (server/kserve.proto) runnel-server itself uses,
 * so that on a small machine the load generator's own CPU is a small part
 * of what is measured (tritonclient's Python spends ~1 ms a request;
 * Triton's perf_analyzer is C++ for the same reason).
 *
 * It asks the server for the model's metadata (ModelMetadata), builds one
 * real ModelInferRequest from it (each input's name, datatype and shape, a
 * dynamic dim taken as 1, and pseudo-random contents of the datatype in
 * raw_input_contents), and keeps `concurrency` ModelInfer calls in flight
 * from one thread on one completion queue: as one is answered the next
 * starts. Every answer is decoded and checked: status OK, the model's name,
 * one output per output of the metadata with its datatype, a shape that
 * fits the metadata's, and raw_output_contents of exactly the bytes that
 * shape and datatype take. An answer that fails a check counts as an
 * error, with the first error's reason kept. */
#ifndef RUNNEL_BENCH_GRPC_LOAD_H
#define RUNNEL_BENCH_GRPC_LOAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct grpc_load_config {
    const char *target;  /* HOST:PORT */
    const char *model;   /* model_name */
    const char *version; /* model_version (NULL or "": the server's choice) */
    unsigned concurrency;
    double seconds;    /* start no call after this long (0: `requests` only) */
    size_t requests;   /* start no call after this many (0: `seconds` only) */
    double timeout_ms; /* each call's deadline (0: 60 s) */
    uint64_t seed;     /* of the input contents */
} grpc_load_config;

typedef struct grpc_load_report {
    size_t answers;        /* OK and every check passed */
    size_t errors;         /* another status, or an answer that failed a check */
    double seconds;        /* from the first call to the last answer */
    double rate;           /* answers per second */
    double p50_ms, p99_ms; /* latency of the answers (start to completion) */
    double cpu_ms;         /* this process's CPU (user + system) per answer */
    size_t request_bytes;  /* the packed ModelInferRequest */
    size_t response_bytes; /* the last answer's message */
    int first_status;      /* of the first error (grpc_status_code; 0: a failed check) */
    char first_error[512]; /* its reason ("" when no error) */
} grpc_load_report;

/* Runs the load. 0 with *report filled (errors among the calls are in it);
 * -1 when no load could start (no channel, the metadata call failed, a
 * datatype it cannot fill), the reason in `why`. */
int grpc_load_run(const grpc_load_config *config, grpc_load_report *report, char *why,
                  size_t why_size);

/* What an answer must be: the outputs of a model's ModelMetadataResponse. */
typedef struct grpc_load_expect grpc_load_expect;

/* From a packed ModelMetadataResponse; NULL with the reason in `why` when it
 * is not one or names a datatype without a fixed size (BYTES). */
grpc_load_expect *grpc_load_expect_create(const uint8_t *metadata, size_t size, char *why,
                                          size_t why_size);
void grpc_load_expect_free(grpc_load_expect *expect);

/* Checks a packed ModelInferResponse for `model` against `expect`: 1 when it
 * passes, else 0 with the reason in `why`. */
int grpc_load_check(const grpc_load_expect *expect, const char *model, const uint8_t *response,
                    size_t size, char *why, size_t why_size);

/* A packed ModelInferRequest for `model` (version may be NULL) with the
 * inputs of a packed ModelMetadataResponse and contents from `seed`;
 * malloc'ed (*size set), or NULL with the reason in `why`. */
uint8_t *grpc_load_request(const uint8_t *metadata, size_t metadata_size, const char *model,
                           const char *version, uint64_t seed, size_t *size, char *why,
                           size_t why_size);

#endif /* RUNNEL_BENCH_GRPC_LOAD_H */
