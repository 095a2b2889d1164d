/* A served model version: its compiled model, a pool of infer requests (the
 * device's OPTIMAL_NUMBER_OF_INFER_REQUESTS), a bounded queue of jobs
 * waiting for one, and Triton's per-model counters. No HTTP here: a job is
 * submitted and its `done` is called once when its response is ready. */
#ifndef RUNNEL_SERVER_MODEL_H
#define RUNNEL_SERVER_MODEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "runnel/runnel.h"
#include "server/codec.h"
#include "server/repository.h"

typedef struct server_job server_job;

/* One infer call. The submitter fills `infer`, `done`, `user` and
 * `received_ns`; the model fills the rest before calling done. */
struct server_job {
    server_infer infer;
    void (*done)(server_job *job); /* once, from a runnel thread or from submit */
    void *user;
    int http_status;          /* 200, or the error's code */
    char *error;              /* malloc'ed message when http_status != 200 */
    server_response response; /* when http_status == 200 */
    uint64_t received_ns;     /* when the body was complete */
    uint64_t queued_ns;
    uint64_t deadline_ns; /* a job still queued then is answered 503; 0: none */
    server_job *next;     /* the model's queue */
    /* With keep_outputs set (a pipeline's step) the response is not encoded:
     * `outputs` gets a copy of every output of the model, in its order (the
     * job's, freed by server_job_clear_outputs). */
    int keep_outputs;
    rn_tensor **outputs;
    size_t n_outputs;
    /* (optional) Encodes the response from the outputs the job asked for
     * (every output of the model when it named none) into `out`; NULL: the
     * REST form (server_response_encode). The gRPC front sets its own. */
    rn_status (*encode)(const server_job *job, const char *model, const char *version,
                        const server_output *outputs, size_t n_outputs, server_response *out);
    int in_sequence; /* admitted to a stateful model's sequence (sequence.h) */
};

/* Encodes a job's response into job->response with its encoder. */
rn_status server_job_encode(server_job *job, const char *model, const char *version,
                            const server_output *outputs, size_t n_outputs);

/* Frees a job's kept outputs. */
void server_job_clear_outputs(server_job *job);

/* Triton's counters (microseconds and counts), labelled by model and version.
 * Queue and compute times are per request, as Triton's: a batch's run time
 * counts once for each request in it. */
typedef struct server_stats {
    atomic_uint_fast64_t success, failure, inference_count, exec_count;
    atomic_uint_fast64_t request_us, queue_us, input_us, infer_us, output_us;
    atomic_uint_fast64_t success_us; /* the part of request_us spent by successes */
    atomic_uint_fast64_t ran;        /* requests that reached a run: the count of queue_us, ... */
    atomic_uint_fast64_t last_ms;    /* the last request answered, ms since the epoch; 0: none */
    atomic_int_fast64_t pending;     /* accepted and not yet answered */
} server_stats;

typedef struct server_model server_model;

/* Reads REPO/<name>/<version>/model.onnx and compiles it for the config's
 * device (or `device`), with its properties. An unreadable model, an
 * unknown device or a property the device refuses is an error naming the
 * model and version. */
rn_status server_model_load(rn_core *core, const char *root, const char *name, int64_t version,
                            const server_model_config *config, const char *device,
                            server_model **out);

/* A pipeline (config->pipeline set) served as model `name` version 1: its
 * steps are models of `registry`, looked up when a request runs (pipeline.h). */
struct server_registry;
rn_status server_model_load_pipeline(struct server_registry *registry, const char *name,
                                     const server_model_config *config, server_model **out);

/* Waits for every run in flight and frees the model. Only when no job holds
 * it (server_model_refs == 0). NULL is a no-op. */
void server_model_free(server_model *model);

const char *server_model_name(const server_model *model);
int64_t server_model_version(const server_model *model);
const char *server_model_version_text(const server_model *model);
const rn_compiled_model *server_model_compiled(const server_model *model); /* NULL: pipeline */
int server_model_is_pipeline(const server_model *model);
uint64_t server_model_config_hash(const server_model *model); /* of the config it loaded with */

/* The model's (or pipeline's) inputs and outputs; names live as long as it. */
size_t server_model_input_count(const server_model *model);
size_t server_model_output_count(const server_model *model);
rn_status server_model_input(const server_model *model, size_t index, rn_port *out);
rn_status server_model_output(const server_model *model, size_t index, rn_port *out);
server_stats *server_model_stats(server_model *model);

/* The batching settings it loaded with (model_configuration): max_batch_size
 * (0: none), max_queue_delay_us, and the preferred batch sizes, ascending
 * (*n of them; the array lives as long as the model). */
size_t server_model_max_batch_size(const server_model *model);
uint64_t server_model_queue_delay_us(const server_model *model);
const size_t *server_model_preferred(const server_model *model, size_t *n);

/* The statistics extension's numbers for one version, as Triton reports
 * them: request counts, and cumulative durations in nanoseconds (queue and
 * compute durations per request that reached a run, `ran` of them). */
typedef struct server_statistics {
    uint64_t last_ms; /* the last request answered, ms since the epoch; 0: none */
    uint64_t inference_count, execution_count;
    uint64_t success_count, success_ns, fail_count, fail_ns;
    uint64_t ran, queue_ns, input_ns, infer_ns, output_ns;
} server_statistics;

void server_model_statistics(server_model *model, server_statistics *out);

/* A stateful model's active sequences (reclaiming idle ones first); 0 for
 * a model without "sequence". */
size_t server_model_sequences(server_model *model);
size_t server_model_requests(const server_model *model); /* infer requests in the pool */

/* References held by callers (lookups): a model is freed only at zero. */
void server_model_acquire(server_model *model);
void server_model_release(server_model *model);
long server_model_refs(server_model *model);

/* Checks a parsed request against the model (every input given once, known
 * names, datatypes and shapes that fit, known outputs) and puts the inputs
 * in the model's order. RN_INVALID_ARG naming the input or output. */
rn_status server_model_bind(const server_model *model, server_infer *infer);

/* Runs a bound job: at once on a free infer request, or after the jobs
 * queued before it (with max_queue_delay_us, once a batch has filled or
 * the first job waited that long; a batch timer thread per model). RN_OK: accepted, done will be
 * called. A full queue is RN_RESULT_NOT_READY (503) and done is not called. */
rn_status server_model_submit(server_model *model, server_job *job);

/* Counts and answers a job the model accepted (a pipeline's, from its last
 * step): success or failure by its http_status, then its done. */
void server_model_finish(server_model *model, server_job *job);

/* Counts a request answered with an error before it was submitted (bad
 * input, full queue) as Triton does: a failure, and its duration. */
void server_model_count_failure(server_model *model, uint64_t received_ns);

/* Monotonic nanoseconds. */
uint64_t server_now_ns(void);

#endif /* RUNNEL_SERVER_MODEL_H */
