/* Prometheus /metrics with Triton's names (see metrics.h). */
#include "server/metrics.h"

#include <stdio.h>
#include <stdlib.h>

/* X(name, type, help, field) */
#define SERVER_METRIC_MAP(X)                                                                       \
    X(nv_inference_request_success, "counter",                                                     \
      "Number of successful inference requests, all batch sizes", success)                         \
    X(nv_inference_request_failure, "counter",                                                     \
      "Number of failed inference requests, all batch sizes", failure)                             \
    X(nv_inference_count, "counter", "Number of inferences performed", inference_count)            \
    X(nv_inference_exec_count, "counter", "Number of model executions performed", exec_count)      \
    X(nv_inference_request_duration_us, "counter",                                                 \
      "Cumulative inference request duration in microseconds", request_us)                         \
    X(nv_inference_queue_duration_us, "counter",                                                   \
      "Cumulative inference queuing duration in microseconds", queue_us)                           \
    X(nv_inference_compute_input_duration_us, "counter",                                           \
      "Cumulative compute input duration in microseconds", input_us)                               \
    X(nv_inference_compute_infer_duration_us, "counter",                                           \
      "Cumulative compute inference duration in microseconds", infer_us)                           \
    X(nv_inference_compute_output_duration_us, "counter",                                          \
      "Cumulative inference compute output duration in microseconds", output_us)                   \
    X(nv_inference_pending_request_count, "gauge",                                                 \
      "Instantaneous number of pending requests awaiting execution per-model", pending)

typedef struct metric_pass {
    FILE *out;
    int which; /* the metric being written, in SERVER_METRIC_MAP's order */
} metric_pass;

/* Writes a label value with Prometheus's escapes (backslash, quote, newline). */
static void write_label(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', out);
        if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

static void write_sample(server_model *m, void *user)
{
    metric_pass *pass = user;
    server_stats *s = server_model_stats(m);
    long long value = 0;
    int i = 0;
#define SERVER_METRIC_VALUE_(name, type, help, field)                                              \
    if (pass->which == i++)                                                                        \
        value = (long long)atomic_load(&s->field);
    SERVER_METRIC_MAP(SERVER_METRIC_VALUE_)
#undef SERVER_METRIC_VALUE_
    fprintf(pass->out, "%s{model=\"",
            (const char *[]){
#define SERVER_METRIC_NAME_(name, type, help, field) #name,
                SERVER_METRIC_MAP(SERVER_METRIC_NAME_)
#undef SERVER_METRIC_NAME_
            }[pass->which]);
    write_label(pass->out, server_model_name(m));
    fprintf(pass->out, "\",version=\"%s\"} %lld\n", server_model_version_text(m), value);
}

char *server_metrics_render(server_registry *registry, size_t *size)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, size);
    if (out == NULL)
        return NULL;
    metric_pass pass = {out, 0};
#define SERVER_METRIC_WRITE_(name, type, help, field)                                              \
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", #name, help, #name, type);                        \
    server_registry_foreach(registry, write_sample, &pass);                                        \
    pass.which++;
    SERVER_METRIC_MAP(SERVER_METRIC_WRITE_)
#undef SERVER_METRIC_WRITE_
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
