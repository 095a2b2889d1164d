/* A light gRPC load client for bench/server/protocols: `concurrency`
 * threads over one channel, each sending the same ModelInfer message
 * (already serialized, read from a file) in a blocking loop for `seconds`,
 * on gRPC's C core, the library the server uses. The message is one slice
 * shared by every call (no copy per request) and the answers are only
 * checked for status OK, not decoded: what tritonclient's Python spends per
 * request (about 1 ms of CPU, serial with the server at concurrency 1) is
 * left out, as hey leaves it out for HTTP. Not a test.
 *
 *   grpc_load HOST:PORT MESSAGE_FILE CONCURRENCY SECONDS
 *
 * prints one JSON line: answers, errors, seconds, rate (answers/s), p50_ms,
 * p99_ms (of the OK answers), cpu_ms (this process's CPU per answer), and
 * the first error's status and message when there was one. */
#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct worker {
    grpc_channel *channel;
    grpc_slice message;
    double end; /* monotonic seconds */
    double *latencies_ms;
    size_t n, capacity;
    long errors;
    int first_status;
    char first_error[256];
    pthread_t thread;
} worker;

static double now_secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One unary ModelInfer; its status (GRPC_STATUS_OK on an answer). */
static grpc_status_code infer_once(worker *w, grpc_completion_queue *cq, grpc_slice method,
                                   char *details_out, size_t details_size)
{
    grpc_call *call =
        grpc_channel_create_call(w->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                 gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_byte_buffer *request = grpc_raw_byte_buffer_create(&w->message, 1);
    grpc_byte_buffer *response = NULL;
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = request;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &response;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    if (grpc_call_start_batch(call, ops, 6, call, NULL) == GRPC_CALL_OK)
        grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    else
        status = GRPC_STATUS_INTERNAL;
    if (status == GRPC_STATUS_OK && response == NULL)
        status = GRPC_STATUS_DATA_LOSS; /* OK without an answer */
    if (status != GRPC_STATUS_OK && details_out != NULL) {
        size_t n = GRPC_SLICE_LENGTH(details) < details_size - 1 ? GRPC_SLICE_LENGTH(details)
                                                                 : details_size - 1;
        memcpy(details_out, GRPC_SLICE_START_PTR(details), n);
        details_out[n] = '\0';
    }
    grpc_slice_unref(details);
    if (response != NULL)
        grpc_byte_buffer_destroy(response);
    grpc_byte_buffer_destroy(request);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_call_unref(call);
    return status;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice method = grpc_slice_from_static_string("/inference.GRPCInferenceService/ModelInfer");
    while (now_secs() < w->end) {
        double t0 = now_secs();
        char details[sizeof w->first_error];
        grpc_status_code status = infer_once(w, cq, method, details, sizeof details);
        if (status != GRPC_STATUS_OK) {
            if (w->errors++ == 0) {
                w->first_status = (int)status;
                snprintf(w->first_error, sizeof w->first_error, "%s", details);
            }
            continue;
        }
        if (w->n == w->capacity) {
            size_t capacity = w->capacity ? w->capacity * 2 : 1024;
            double *grown = realloc(w->latencies_ms, capacity * sizeof *grown);
            if (grown == NULL)
                break;
            w->latencies_ms = grown;
            w->capacity = capacity;
        }
        w->latencies_ms[w->n++] = (now_secs() - t0) * 1e3;
    }
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cpu_secs(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec * 1e-6 +
           (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: grpc_load HOST:PORT MESSAGE_FILE CONCURRENCY SECONDS\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) {
        fprintf(stderr, "grpc_load: cannot open %s\n", argv[2]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *bytes = malloc(size > 0 ? (size_t)size : 1);
    if (bytes == NULL || size <= 0 || fread(bytes, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "grpc_load: cannot read %s\n", argv[2]);
        return 1;
    }
    fclose(f);
    int concurrency = atoi(argv[3]);
    double seconds = atof(argv[4]);
    if (concurrency < 1 || seconds <= 0) {
        fprintf(stderr, "grpc_load: CONCURRENCY >= 1 and SECONDS > 0\n");
        return 2;
    }
    grpc_init();
    grpc_channel_credentials *credentials = grpc_insecure_credentials_create();
    /* As tritonclient's: messages of any size. */
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = -1}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = -1}},
    };
    grpc_channel_args channel_args = {sizeof args / sizeof *args, args};
    grpc_channel *channel = grpc_channel_create(argv[1], credentials, &channel_args);
    grpc_channel_credentials_release(credentials);
    grpc_slice message = grpc_slice_from_copied_buffer(bytes, (size_t)size);
    free(bytes);
    worker *workers = calloc((size_t)concurrency, sizeof *workers);
    double start = now_secs(), cpu0 = cpu_secs();
    for (int i = 0; i < concurrency; i++) {
        workers[i].channel = channel;
        workers[i].message = message;
        workers[i].end = start + seconds;
        pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
    }
    size_t n = 0;
    long errors = 0;
    for (int i = 0; i < concurrency; i++) {
        pthread_join(workers[i].thread, NULL);
        n += workers[i].n;
        errors += workers[i].errors;
    }
    double elapsed = now_secs() - start, cpu = cpu_secs() - cpu0;
    double *all = malloc((n ? n : 1) * sizeof *all);
    size_t k = 0;
    const worker *failed = NULL;
    for (int i = 0; i < concurrency; i++) {
        memcpy(all + k, workers[i].latencies_ms, workers[i].n * sizeof *all);
        k += workers[i].n;
        if (workers[i].errors && failed == NULL)
            failed = &workers[i];
    }
    qsort(all, n, sizeof *all, by_value);
    double p50 = n ? all[n / 2] : 0, p99 = n ? all[(size_t)((double)(n - 1) * 0.99)] : 0;
    printf("{\"answers\": %zu, \"errors\": %ld, \"seconds\": %.3f, \"rate\": %.3f, "
           "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"cpu_ms\": %.4f",
           n, errors, elapsed, (double)n / elapsed, p50, p99, n ? cpu * 1e3 / (double)n : 0.0);
    if (failed != NULL) {
        printf(", \"first_status\": %d, \"first_error\": \"", failed->first_status);
        for (const char *c = failed->first_error; *c; c++)
            if (*c != '"' && *c != '\\' && (unsigned char)*c >= 32)
                putchar(*c);
        printf("\"");
    }
    printf("}\n");
    for (int i = 0; i < concurrency; i++)
        free(workers[i].latencies_ms);
    free(workers);
    free(all);
    grpc_slice_unref(message);
    grpc_channel_destroy(channel);
    grpc_shutdown();
    return 0;
}
