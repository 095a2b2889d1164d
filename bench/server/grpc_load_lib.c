/* grpc_load's client (see grpc_load.h): the request built from the model's
 * metadata, the answers' checks, and the closed loop of `concurrency` calls
 * on one completion queue. */
#include "bench/server/grpc_load.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "server/kserve.pb-c.h"

#define SERVICE "/inference.GRPCInferenceService/"

static void say(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* Bytes per element of a KServe v2 datatype; 0 for BYTES or an unknown one. */
static size_t element_size(const char *datatype)
{
    static const struct {
        const char *name;
        size_t size;
    } types[] = {{"BOOL", 1},  {"INT8", 1},   {"UINT8", 1}, {"INT16", 2},  {"UINT16", 2},
                 {"FP16", 2},  {"BF16", 2},   {"INT32", 4}, {"UINT32", 4}, {"FP32", 4},
                 {"INT64", 8}, {"UINT64", 8}, {"FP64", 8}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strcmp(datatype, types[i].name) == 0)
            return types[i].size;
    return 0;
}

static Inference__ModelMetadataResponse *unpack_metadata(const uint8_t *data, size_t size,
                                                         char *why, size_t why_size)
{
    Inference__ModelMetadataResponse *meta =
        inference__model_metadata_response__unpack(NULL, size, data);
    if (meta == NULL)
        say(why, why_size, "the ModelMetadata answer is not a ModelMetadataResponse");
    return meta;
}

/* ---- the request ---- */

static uint64_t next_random(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* `n` elements of `datatype` in [0, 1) for the float types, 0..9 for the
 * integers, 0/1 for BOOL: values every model's input accepts. */
static void fill(uint8_t *out, const char *datatype, size_t size, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_random(seed);
        uint8_t *p = out + i * size;
        if (strcmp(datatype, "FP32") == 0) {
            float v = (float)(r >> 40) * (1.0f / 16777216.0f);
            memcpy(p, &v, 4);
        } else if (strcmp(datatype, "FP64") == 0) {
            double v = (double)(r >> 11) * (1.0 / 9007199254740992.0);
            memcpy(p, &v, 8);
        } else if (strcmp(datatype, "FP16") == 0) {
            uint16_t v = (uint16_t)((14u << 10) | (r & 0x3ffu)); /* [0.5, 1) */
            memcpy(p, &v, 2);
        } else if (strcmp(datatype, "BF16") == 0) {
            uint16_t v = (uint16_t)((126u << 7) | (r & 0x7fu)); /* [0.5, 1) */
            memcpy(p, &v, 2);
        } else {
            uint64_t v = strcmp(datatype, "BOOL") == 0 ? (r & 1) : r % 10;
            for (size_t b = 0; b < size; b++) /* little-endian */
                p[b] = (uint8_t)(v >> (8 * b));
        }
    }
}

uint8_t *grpc_load_request(const uint8_t *metadata, size_t metadata_size, const char *model,
                           const char *version, uint64_t seed, size_t *size, char *why,
                           size_t why_size)
{
    Inference__ModelMetadataResponse *meta =
        unpack_metadata(metadata, metadata_size, why, why_size);
    if (meta == NULL)
        return NULL;
    size_t n = meta->n_inputs;
    Inference__ModelInferRequest__InferInputTensor *tensors = calloc(n + 1, sizeof *tensors);
    Inference__ModelInferRequest__InferInputTensor **list = calloc(n + 1, sizeof *list);
    ProtobufCBinaryData *raw = calloc(n + 1, sizeof *raw);
    int64_t **shapes = calloc(n + 1, sizeof *shapes);
    uint8_t *packed = NULL;
    int ok = tensors && list && raw && shapes;
    if (!ok)
        say(why, why_size, "no memory for the request");
    if (ok && n == 0) {
        say(why, why_size, "model '%s' has no inputs in its metadata", model);
        ok = 0;
    }
    for (size_t i = 0; ok && i < n; i++) {
        const Inference__ModelMetadataResponse__TensorMetadata *t = meta->inputs[i];
        size_t esize = element_size(t->datatype), count = 1;
        if (esize == 0) {
            say(why, why_size,
                "input '%s': datatype '%s' has no fixed size (grpc_load fills "
                "numeric and BOOL inputs only)",
                t->name, t->datatype);
            ok = 0;
            break;
        }
        if ((shapes[i] = calloc(t->n_shape + 1, sizeof **shapes)) == NULL) {
            say(why, why_size, "no memory for the request");
            ok = 0;
            break;
        }
        for (size_t d = 0; d < t->n_shape; d++) {
            shapes[i][d] = t->shape[d] < 0 ? 1 : t->shape[d]; /* a dynamic dim: 1 */
            count *= (size_t)shapes[i][d];
        }
        raw[i].len = count * esize;
        if ((raw[i].data = malloc(raw[i].len ? raw[i].len : 1)) == NULL) {
            say(why, why_size, "no memory for input '%s' (%zu bytes)", t->name, raw[i].len);
            ok = 0;
            break;
        }
        fill(raw[i].data, t->datatype, esize, count, &seed);
        inference__model_infer_request__infer_input_tensor__init(&tensors[i]);
        tensors[i].name = t->name;
        tensors[i].datatype = t->datatype;
        tensors[i].n_shape = t->n_shape;
        tensors[i].shape = shapes[i];
        list[i] = &tensors[i];
    }
    if (ok) {
        Inference__ModelInferRequest request = INFERENCE__MODEL_INFER_REQUEST__INIT;
        request.model_name = (char *)model;
        if (version != NULL)
            request.model_version = (char *)version;
        request.n_inputs = n;
        request.inputs = list;
        request.n_raw_input_contents = n;
        request.raw_input_contents = raw;
        *size = inference__model_infer_request__get_packed_size(&request);
        if ((packed = malloc(*size ? *size : 1)) == NULL)
            say(why, why_size, "no memory for the request (%zu bytes)", *size);
        else
            inference__model_infer_request__pack(&request, packed);
    }
    for (size_t i = 0; raw != NULL && shapes != NULL && i < n; i++) {
        free(raw[i].data);
        free(shapes[i]);
    }
    free(tensors);
    free(list);
    free(raw);
    free(shapes);
    inference__model_metadata_response__free_unpacked(meta, NULL);
    return packed;
}

/* ---- the answers' checks ---- */

struct grpc_load_expect {
    Inference__ModelMetadataResponse *meta;
};

grpc_load_expect *grpc_load_expect_create(const uint8_t *metadata, size_t size, char *why,
                                          size_t why_size)
{
    Inference__ModelMetadataResponse *meta = unpack_metadata(metadata, size, why, why_size);
    if (meta == NULL)
        return NULL;
    for (size_t i = 0; i < meta->n_outputs; i++)
        if (element_size(meta->outputs[i]->datatype) == 0) {
            say(why, why_size, "output '%s': datatype '%s' has no fixed size to check",
                meta->outputs[i]->name, meta->outputs[i]->datatype);
            inference__model_metadata_response__free_unpacked(meta, NULL);
            return NULL;
        }
    grpc_load_expect *e = malloc(sizeof *e);
    if (e == NULL) {
        say(why, why_size, "no memory");
        inference__model_metadata_response__free_unpacked(meta, NULL);
        return NULL;
    }
    e->meta = meta;
    return e;
}

void grpc_load_expect_free(grpc_load_expect *expect)
{
    if (expect == NULL)
        return;
    inference__model_metadata_response__free_unpacked(expect->meta, NULL);
    free(expect);
}

static int check_output(const Inference__ModelMetadataResponse__TensorMetadata *want,
                        const Inference__ModelInferResponse__InferOutputTensor *got,
                        const ProtobufCBinaryData *raw, char *why, size_t why_size)
{
    if (strcmp(got->datatype, want->datatype) != 0) {
        say(why, why_size, "output '%s': datatype %s, the metadata says %s", got->name,
            got->datatype, want->datatype);
        return 0;
    }
    if (got->n_shape != want->n_shape) {
        say(why, why_size, "output '%s': %zu dims, the metadata says %zu", got->name, got->n_shape,
            want->n_shape);
        return 0;
    }
    size_t count = 1;
    for (size_t d = 0; d < got->n_shape; d++) {
        if (got->shape[d] < 0 || (want->shape[d] >= 0 && got->shape[d] != want->shape[d])) {
            say(why, why_size, "output '%s': dim %zu is %lld, the metadata says %lld", got->name, d,
                (long long)got->shape[d], (long long)want->shape[d]);
            return 0;
        }
        count *= (size_t)got->shape[d];
    }
    size_t bytes = count * element_size(want->datatype);
    if (raw->len != bytes) {
        say(why, why_size,
            "output '%s': %zu bytes of raw_output_contents, its shape and %s "
            "take %zu",
            got->name, raw->len, want->datatype, bytes);
        return 0;
    }
    return 1;
}

int grpc_load_check(const grpc_load_expect *expect, const char *model, const uint8_t *response,
                    size_t size, char *why, size_t why_size)
{
    Inference__ModelInferResponse *r =
        inference__model_infer_response__unpack(NULL, size, response);
    if (r == NULL) {
        say(why, why_size, "the answer (%zu bytes) is not a ModelInferResponse", size);
        return 0;
    }
    const Inference__ModelMetadataResponse *meta = expect->meta;
    int ok = 0;
    if (strcmp(r->model_name, model) != 0)
        say(why, why_size, "the answer is for model '%s', not '%s'", r->model_name, model);
    else if (r->n_outputs != meta->n_outputs)
        say(why, why_size, "%zu outputs, the metadata has %zu", r->n_outputs, meta->n_outputs);
    else if (r->n_raw_output_contents != r->n_outputs)
        say(why, why_size, "%zu raw_output_contents for %zu outputs", r->n_raw_output_contents,
            r->n_outputs);
    else
        ok = 1;
    for (size_t i = 0; ok && i < r->n_outputs; i++) {
        const Inference__ModelMetadataResponse__TensorMetadata *want = NULL;
        for (size_t j = 0; j < meta->n_outputs && want == NULL; j++)
            if (strcmp(meta->outputs[j]->name, r->outputs[i]->name) == 0)
                want = meta->outputs[j];
        if (want == NULL) {
            say(why, why_size, "output '%s' is not in the model's metadata", r->outputs[i]->name);
            ok = 0;
        } else {
            ok = check_output(want, r->outputs[i], &r->raw_output_contents[i], why, why_size);
        }
    }
    inference__model_infer_response__free_unpacked(r, NULL);
    return ok;
}

/* ---- the calls ---- */

static double now_secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_secs(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec * 1e-6 +
           (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec * 1e-6;
}

static gpr_timespec deadline_in(double ms)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                        gpr_time_from_micros((int64_t)(ms * 1e3), GPR_TIMESPAN));
}

/* One call in flight and what its batch fills. */
typedef struct slot {
    grpc_call *call;
    grpc_byte_buffer *request, *response;
    grpc_metadata_array initial, trailing;
    grpc_status_code status;
    grpc_slice details;
    double started;
} slot;

static int start_call(grpc_channel *channel, grpc_completion_queue *cq, grpc_slice method,
                      grpc_slice message, double timeout_ms, slot *s)
{
    memset(s, 0, sizeof *s);
    s->call = grpc_channel_create_call(channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                       deadline_in(timeout_ms), NULL);
    s->request = grpc_raw_byte_buffer_create(&message, 1); /* a reference, no copy */
    grpc_metadata_array_init(&s->initial);
    grpc_metadata_array_init(&s->trailing);
    s->status = GRPC_STATUS_UNKNOWN;
    s->details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->request;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &s->response;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &s->trailing;
    ops[5].data.recv_status_on_client.status = &s->status;
    ops[5].data.recv_status_on_client.status_details = &s->details;
    s->started = now_secs();
    return grpc_call_start_batch(s->call, ops, 6, s, NULL) == GRPC_CALL_OK;
}

static void end_call(slot *s)
{
    grpc_slice_unref(s->details);
    if (s->response != NULL)
        grpc_byte_buffer_destroy(s->response);
    grpc_byte_buffer_destroy(s->request);
    grpc_metadata_array_destroy(&s->initial);
    grpc_metadata_array_destroy(&s->trailing);
    grpc_call_unref(s->call);
    s->call = NULL;
}

/* The message of an answer, joined into one slice (unref'd by the caller). */
static grpc_slice joined(grpc_byte_buffer *b)
{
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, b))
        return grpc_empty_slice();
    grpc_slice s = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    return s;
}

/* A unary call of `method` with `message`, waited for: its status, the
 * answer in *answer (unref'd by the caller) when OK, else the details. */
static grpc_status_code unary(grpc_channel *channel, const char *method, const uint8_t *message,
                              size_t size, double timeout_ms, grpc_slice *answer, char *details,
                              size_t details_size)
{
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice m = grpc_slice_from_copied_buffer((const char *)message, size);
    slot s;
    grpc_status_code status = GRPC_STATUS_INTERNAL;
    *answer = grpc_empty_slice();
    snprintf(details, details_size, "the call could not start");
    if (start_call(channel, cq, grpc_slice_from_static_string(method), m, timeout_ms, &s)) {
        grpc_completion_queue_pluck(cq, &s, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        status = s.status;
        snprintf(details, details_size, "%.*s", (int)GRPC_SLICE_LENGTH(s.details),
                 (const char *)GRPC_SLICE_START_PTR(s.details));
        if (status == GRPC_STATUS_OK && s.response != NULL)
            *answer = joined(s.response);
    }
    if (s.call != NULL)
        end_call(&s);
    grpc_slice_unref(m);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    return status;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The closed loop: `slots` calls in flight until the budget is spent, each
 * answer checked. 0, or -1 with `why` when no call could start. */
static int closed_loop(const grpc_load_config *config, grpc_channel *channel,
                       const grpc_load_expect *expect, grpc_slice message, grpc_load_report *rep,
                       char *why, size_t why_size)
{
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    grpc_slice method = grpc_slice_from_static_string(SERVICE "ModelInfer");
    unsigned n_slots = config->concurrency ? config->concurrency : 1;
    slot *slots = calloc(n_slots, sizeof *slots);
    size_t capacity = 4096, n_lat = 0, started = 0, in_flight = 0;
    double *latencies = malloc(capacity * sizeof *latencies);
    double timeout = config->timeout_ms > 0 ? config->timeout_ms : 60000;
    int rc = 0;
    if (slots == NULL || latencies == NULL) {
        say(why, why_size, "no memory");
        rc = -1;
    }
    double start = now_secs(), cpu0 = cpu_secs(), last = start;
    double end = config->seconds > 0 ? start + config->seconds : 0;
#define MORE()                                                                                     \
    ((config->requests == 0 || started < config->requests) && (end == 0 || now_secs() < end))
    for (unsigned i = 0; rc == 0 && i < n_slots && MORE(); i++) {
        if (!start_call(channel, cq, method, message, timeout, &slots[i])) {
            end_call(&slots[i]);
            say(why, why_size, "grpc_call_start_batch refused a ModelInfer call");
            rc = -1;
            break;
        }
        started++;
        in_flight++;
    }
    while (in_flight > 0) {
        grpc_event e = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (e.type != GRPC_OP_COMPLETE)
            continue;
        slot *s = e.tag;
        double done = now_secs();
        last = done;
        char reason[sizeof rep->first_error] = "";
        int status = (int)s->status;
        if (s->status != GRPC_STATUS_OK) {
            snprintf(reason, sizeof reason, "status %d: %.*s", status,
                     (int)GRPC_SLICE_LENGTH(s->details),
                     (const char *)GRPC_SLICE_START_PTR(s->details));
        } else if (s->response == NULL) {
            status = 0;
            snprintf(reason, sizeof reason, "status OK without an answer");
        } else {
            grpc_slice answer = joined(s->response);
            rep->response_bytes = GRPC_SLICE_LENGTH(answer);
            if (!grpc_load_check(expect, config->model, GRPC_SLICE_START_PTR(answer),
                                 GRPC_SLICE_LENGTH(answer), reason, sizeof reason))
                status = 0;
            else
                reason[0] = '\0';
            grpc_slice_unref(answer);
        }
        if (reason[0] != '\0') {
            if (rep->errors++ == 0) {
                rep->first_status = status;
                snprintf(rep->first_error, sizeof rep->first_error, "%s", reason);
            }
        } else {
            if (n_lat == capacity) {
                double *grown = realloc(latencies, 2 * capacity * sizeof *grown);
                if (grown != NULL) {
                    latencies = grown;
                    capacity *= 2;
                }
            }
            if (n_lat < capacity)
                latencies[n_lat++] = (done - s->started) * 1e3;
            rep->answers++;
        }
        end_call(s);
        in_flight--;
        if (MORE()) {
            if (start_call(channel, cq, method, message, timeout, s)) {
                started++;
                in_flight++;
            } else {
                end_call(s);
            }
        }
    }
#undef MORE
    rep->seconds = last - start;
    if (rep->seconds <= 0)
        rep->seconds = 1e-9;
    rep->rate = (double)rep->answers / rep->seconds;
    rep->cpu_ms = rep->answers ? (cpu_secs() - cpu0) * 1e3 / (double)rep->answers : 0;
    if (n_lat > 0) {
        qsort(latencies, n_lat, sizeof *latencies, by_value);
        rep->p50_ms = latencies[n_lat / 2];
        rep->p99_ms = latencies[(size_t)((double)(n_lat - 1) * 0.99)];
    }
    free(latencies);
    free(slots);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    return rc;
}

int grpc_load_run(const grpc_load_config *config, grpc_load_report *report, char *why,
                  size_t why_size)
{
    grpc_load_report rep;
    memset(&rep, 0, sizeof rep);
    if (config->seconds <= 0 && config->requests == 0) {
        say(why, why_size, "neither seconds nor requests: the load would not end");
        return -1;
    }
    grpc_init();
    grpc_channel_credentials *credentials = grpc_insecure_credentials_create();
    /* As tritonclient's: messages of any size. */
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = -1}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = -1}},
    };
    grpc_channel_args channel_args = {sizeof args / sizeof *args, args};
    grpc_channel *channel = grpc_channel_create(config->target, credentials, &channel_args);
    grpc_channel_credentials_release(credentials);
    double timeout = config->timeout_ms > 0 ? config->timeout_ms : 60000;
    int rc = -1;
    grpc_load_expect *expect = NULL;
    uint8_t *request = NULL;
    size_t request_size = 0;
    grpc_slice metadata = grpc_empty_slice();

    /* The model's metadata: what to send and what to expect back. */
    Inference__ModelMetadataRequest mreq = INFERENCE__MODEL_METADATA_REQUEST__INIT;
    mreq.name = (char *)config->model;
    if (config->version != NULL)
        mreq.version = (char *)config->version;
    uint8_t mbuf[1024];
    size_t msize = inference__model_metadata_request__get_packed_size(&mreq);
    char details[256];
    if (msize > sizeof mbuf) {
        say(why, why_size, "model name too long");
        goto out;
    }
    inference__model_metadata_request__pack(&mreq, mbuf);
    grpc_status_code st = unary(channel, SERVICE "ModelMetadata", mbuf, msize, timeout, &metadata,
                                details, sizeof details);
    if (st != GRPC_STATUS_OK) {
        say(why, why_size, "ModelMetadata for '%s' at %s: status %d: %s", config->model,
            config->target, (int)st, details);
        goto out;
    }
    const uint8_t *md = GRPC_SLICE_START_PTR(metadata);
    size_t md_size = GRPC_SLICE_LENGTH(metadata);
    if ((expect = grpc_load_expect_create(md, md_size, why, why_size)) == NULL ||
        (request = grpc_load_request(md, md_size, config->model, config->version, config->seed,
                                     &request_size, why, why_size)) == NULL)
        goto out;
    grpc_slice message = grpc_slice_new(request, request_size, free); /* takes request */
    request = NULL;
    rep.request_bytes = request_size;
    rc = closed_loop(config, channel, expect, message, &rep, why, why_size);
    grpc_slice_unref(message);
    if (rc == 0)
        *report = rep;
out:
    free(request);
    grpc_load_expect_free(expect);
    grpc_slice_unref(metadata);
    grpc_channel_destroy(channel);
    grpc_shutdown();
    return rc;
}
