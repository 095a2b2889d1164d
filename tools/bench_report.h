/* What bench measured and printed, in one place, so that the text report,
 * the JSON (-json) and the HTML page (-html) say the same things.
 *
 * Strings that point into the compiled model (layer names, types,
 * implementations) are valid while it lives: the reports are written
 * before bench frees it. */
#ifndef RUNNEL_TOOLS_BENCH_REPORT_H
#define RUNNEL_TOOLS_BENCH_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "runnel/runnel.h"
#include "tools/bench_stats.h"

/* Per-layer counters summed over many inferences of one compiled model
 * (the profiling entries of its requests come in the same order). */
typedef struct bench_counters {
    size_t n;
    const char **names, **types, **impls; /* owned by the compiled model */
    rn_node_status *status;               /* EXECUTED if any run executed it */
    double *sum_us;
    uint64_t runs;
} bench_counters;

/* Adds one inference's profiling entries (the first call sizes the
 * counters). -1 when out of memory or when the entries do not match the
 * earlier ones. */
int bench_counters_add(bench_counters *c, const rn_profiling_info *info, size_t n);

/* Sums several requests' counters into `out` (zeroed by the caller). */
int bench_counters_merge(const bench_counters *parts, size_t n_parts, bench_counters *out);

void bench_counters_free(bench_counters *c);

/* One row of the per-layer table: its average time per inference. */
typedef struct bench_layer {
    const char *name, *type, *impl;
    rn_node_status status;
    double avg_us;
} bench_layer;

typedef struct bench_layer_type {
    const char *type;
    size_t layers;
    double avg_us;
} bench_layer_type;

/* Counters turned into tables: layers sorted by time (longest first), the
 * request stages (entries of type "Stage", which the generic request of
 * plugins/api reports before the layers and which contain the layers'
 * time, so they stay out of the totals), and totals per layer type. */
typedef struct bench_layer_table {
    uint64_t runs;
    bench_layer *layers;
    size_t n_layers;
    bench_layer *stages;
    size_t n_stages;
    bench_layer_type *types;
    size_t n_types;
    double total_us; /* the layers' sum */
} bench_layer_table;

int bench_layer_table_build(const bench_counters *c, bench_layer_table *out);
void bench_layer_table_free(bench_layer_table *t);

const char *bench_node_status_name(rn_node_status status);

typedef struct bench_kv {
    char key[64];
    char value[512];
} bench_kv;

typedef struct bench_port_info {
    char name[256];
    char type[16];
    char shape[128];
    char source[320]; /* inputs: where the data comes from */
} bench_port_info;

/* One request's share, for -report_type detailed. */
typedef struct bench_request_report {
    bench_latency latency;
    bench_layer_table table;
} bench_request_report;

#define BENCH_MAX_PROPS 24

typedef struct bench_report {
    /* settings (the flags, after defaults) */
    char command_line[2048];
    const char *model_path, *device, *api, *hint, *report_type;
    const char *nstreams, *nthreads, *infer_precision, *cache_dir, *shape, *data_shape;
    const char *json_path, *html_path, *trace_path, *output_dir;
    long long niter; /* 0: not given */
    double time_s;   /* 0: not given */
    int nireq;       /* after 0 → OPTIMAL_NUMBER_OF_INFER_REQUESTS */
    bool pc, is_blob;
    /* steps */
    char version[32];
    char full_device_name[256];
    double read_ms, compile_ms;
    char loaded_from_cache[8]; /* "YES", "NO" or "" when not reported */
    bench_kv props[BENCH_MAX_PROPS];
    size_t n_props;
    bench_port_info *inputs, *outputs;
    size_t n_inputs, n_outputs;
    double first_infer_ms;
    /* results */
    int batch;
    double duration_ms, throughput_fps;
    bench_latency latency;
    bench_samples samples; /* every request's, merged by start time */
    bool have_counters;
    bench_layer_table table;
    bench_request_report *requests; /* -report_type detailed */
    size_t n_requests;
} bench_report;

/* Count, Duration, Latency and Throughput as bench prints them. */
void bench_report_print_results(const bench_report *r, FILE *out);

/* The per-layer table (sorted by time), the stages and the per-type
 * totals. `title` heads it. */
void bench_report_print_table(const bench_layer_table *t, const char *title, FILE *out);

/* Writes the JSON report; RN_IO_ERROR naming the path when it cannot. */
rn_status bench_report_write_json(const bench_report *r, const char *path);

/* Writes the self-contained HTML page (inline SVG, no external assets). */
rn_status bench_report_write_html(const bench_report *r, const char *path);

#endif /* RUNNEL_TOOLS_BENCH_REPORT_H */
