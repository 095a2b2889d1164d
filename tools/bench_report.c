/* bench's counters, its text report and its JSON report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench_json.h"
#include "tools/bench_report.h"

const char *bench_node_status_name(rn_node_status status)
{
    switch (status) {
    case RN_NODE_EXECUTED:
        return "EXECUTED";
    case RN_NODE_OPTIMIZED_OUT:
        return "OPTIMIZED_OUT";
    default:
        return "NOT_RUN";
    }
}

/* ---- counters ---- */

static int counters_alloc(bench_counters *c, size_t n)
{
    c->n = n;
    c->names = calloc(n + 1, sizeof *c->names);
    c->types = calloc(n + 1, sizeof *c->types);
    c->impls = calloc(n + 1, sizeof *c->impls);
    c->status = calloc(n + 1, sizeof *c->status);
    c->sum_us = calloc(n + 1, sizeof *c->sum_us);
    if (!c->names || !c->types || !c->impls || !c->status || !c->sum_us) {
        bench_counters_free(c);
        return -1;
    }
    return 0;
}

void bench_counters_free(bench_counters *c)
{
    free(c->names);
    free(c->types);
    free(c->impls);
    free(c->status);
    free(c->sum_us);
    memset(c, 0, sizeof *c);
}

int bench_counters_add(bench_counters *c, const rn_profiling_info *info, size_t n)
{
    if (c->names == NULL) {
        if (counters_alloc(c, n) != 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            c->names[i] = info[i].node_name;
            c->types[i] = info[i].node_type;
            c->impls[i] = info[i].exec_type;
            c->status[i] = info[i].status;
        }
    } else if (n != c->n) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        c->sum_us[i] += (double)info[i].real_time_us;
        if (info[i].status == RN_NODE_EXECUTED)
            c->status[i] = RN_NODE_EXECUTED;
    }
    c->runs++;
    return 0;
}

int bench_counters_merge(const bench_counters *parts, size_t n_parts, bench_counters *out)
{
    for (size_t p = 0; p < n_parts; p++) {
        const bench_counters *c = &parts[p];
        if (c->names == NULL)
            continue;
        if (out->names == NULL) {
            if (counters_alloc(out, c->n) != 0)
                return -1;
            memcpy(out->names, c->names, c->n * sizeof *c->names);
            memcpy(out->types, c->types, c->n * sizeof *c->types);
            memcpy(out->impls, c->impls, c->n * sizeof *c->impls);
            memcpy(out->status, c->status, c->n * sizeof *c->status);
        } else if (c->n != out->n) {
            return -1;
        }
        for (size_t i = 0; i < c->n; i++) {
            out->sum_us[i] += c->sum_us[i];
            if (c->status[i] == RN_NODE_EXECUTED)
                out->status[i] = RN_NODE_EXECUTED;
        }
        out->runs += c->runs;
    }
    return 0;
}

/* ---- tables ---- */

static int by_time(const void *a, const void *b)
{
    double x = ((const bench_layer *)a)->avg_us, y = ((const bench_layer *)b)->avg_us;
    if (x != y)
        return (x < y) - (x > y);
    return strcmp(((const bench_layer *)a)->name, ((const bench_layer *)b)->name);
}

static int type_by_time(const void *a, const void *b)
{
    double x = ((const bench_layer_type *)a)->avg_us, y = ((const bench_layer_type *)b)->avg_us;
    if (x != y)
        return (x < y) - (x > y);
    return strcmp(((const bench_layer_type *)a)->type, ((const bench_layer_type *)b)->type);
}

void bench_layer_table_free(bench_layer_table *t)
{
    free(t->layers);
    free(t->stages);
    free(t->types);
    memset(t, 0, sizeof *t);
}

int bench_layer_table_build(const bench_counters *c, bench_layer_table *out)
{
    memset(out, 0, sizeof *out);
    out->runs = c->runs;
    out->layers = calloc(c->n + 1, sizeof *out->layers);
    out->stages = calloc(c->n + 1, sizeof *out->stages);
    out->types = calloc(c->n + 1, sizeof *out->types);
    if (!out->layers || !out->stages || !out->types) {
        bench_layer_table_free(out);
        return -1;
    }
    double runs = c->runs ? (double)c->runs : 1.0;
    for (size_t i = 0; i < c->n; i++) {
        bench_layer row = {
            .name = c->names[i] ? c->names[i] : "",
            .type = c->types[i] ? c->types[i] : "",
            .impl = c->impls[i] ? c->impls[i] : "",
            .status = c->status[i],
            .avg_us = c->sum_us[i] / runs,
        };
        if (strcmp(row.type, "Stage") == 0) {
            out->stages[out->n_stages++] = row;
            continue;
        }
        out->layers[out->n_layers++] = row;
        out->total_us += row.avg_us;
        size_t k = 0;
        while (k < out->n_types && strcmp(out->types[k].type, row.type) != 0)
            k++;
        if (k == out->n_types)
            out->types[out->n_types++] = (bench_layer_type){.type = row.type};
        out->types[k].layers++;
        out->types[k].avg_us += row.avg_us;
    }
    qsort(out->layers, out->n_layers, sizeof *out->layers, by_time);
    qsort(out->types, out->n_types, sizeof *out->types, type_by_time);
    return 0;
}

/* ---- text ---- */

/* Milliseconds with the digits that matter: tiny models run in
 * microseconds, large ones in seconds. */
static void print_ms(FILE *out, const char *label, double ms)
{
    if (ms >= 10 || ms == 0)
        fprintf(out, "[ INFO ] %-20s %.2f ms\n", label, ms);
    else if (ms >= 1)
        fprintf(out, "[ INFO ] %-20s %.3f ms\n", label, ms);
    else
        fprintf(out, "[ INFO ] %-20s %.4g ms\n", label, ms);
}

void bench_report_print_results(const bench_report *r, FILE *out)
{
    const bench_latency *l = &r->latency;
    fprintf(out, "[ INFO ] %-20s %llu iterations\n", "Count:", (unsigned long long)l->count);
    print_ms(out, "Duration:", r->duration_ms);
    fprintf(out, "[ INFO ] Latency:\n");
    print_ms(out, "   Median:", l->median);
    print_ms(out, "   Average:", l->average);
    print_ms(out, "   Min:", l->min);
    print_ms(out, "   Max:", l->max);
    print_ms(out, "   p90:", l->p90);
    print_ms(out, "   p99:", l->p99);
    if (r->samples.stride > 1)
        fprintf(out,
                "[ INFO ]    (median and percentiles over %zu of the %llu samples, evenly "
                "spread)\n",
                r->samples.n, (unsigned long long)l->count);
    fprintf(out, "[ INFO ] %-20s %.2f FPS\n", "Throughput:", r->throughput_fps);
}

static double percent(double part, double total)
{
    return total > 0 ? 100.0 * part / total : 0.0;
}

void bench_report_print_table(const bench_layer_table *t, const char *title, FILE *out)
{
    fprintf(out, "\n%s (average per inference over %llu inferences, longest first)\n", title,
            (unsigned long long)t->runs);
    fprintf(out, "%-40s %-14s %-20s %-10s %14s %7s\n", "layer name", "status", "layer type", "impl",
            "real time (us)", "%");
    for (size_t i = 0; i < t->n_layers; i++) {
        const bench_layer *l = &t->layers[i];
        fprintf(out, "%-40.40s %-14s %-20.20s %-10.10s %14.1f %6.2f%%\n", l->name,
                bench_node_status_name(l->status), l->type, l->impl, l->avg_us,
                percent(l->avg_us, t->total_us));
    }
    fprintf(out, "Total time of the layers: %.1f us\n", t->total_us);
    if (t->n_stages > 0) {
        fprintf(out, "\nRequest stages\n%-40s %-14s %14s\n", "stage", "status", "real time (us)");
        for (size_t i = 0; i < t->n_stages; i++)
            fprintf(out, "%-40.40s %-14s %14.1f\n", t->stages[i].name,
                    bench_node_status_name(t->stages[i].status), t->stages[i].avg_us);
    }
    fprintf(out, "\nPer layer type\n%-24s %7s %14s %7s\n", "layer type", "layers", "real time (us)",
            "%");
    for (size_t i = 0; i < t->n_types; i++)
        fprintf(out, "%-24.24s %7zu %14.1f %6.2f%%\n", t->types[i].type, t->types[i].layers,
                t->types[i].avg_us, percent(t->types[i].avg_us, t->total_us));
}

/* ---- JSON ---- */

static void json_latency(bench_json *j, const char *key, const bench_latency *l)
{
    bench_json_begin_object(j, key);
    bench_json_int(j, "count", (long long)l->count);
    bench_json_number(j, "median_ms", l->median);
    bench_json_number(j, "average_ms", l->average);
    bench_json_number(j, "min_ms", l->min);
    bench_json_number(j, "max_ms", l->max);
    bench_json_number(j, "p90_ms", l->p90);
    bench_json_number(j, "p99_ms", l->p99);
    bench_json_end_object(j);
}

static void json_rows(bench_json *j, const char *key, const bench_layer *rows, size_t n)
{
    bench_json_begin_array(j, key);
    for (size_t i = 0; i < n; i++) {
        bench_json_begin_object(j, NULL);
        bench_json_string(j, "name", rows[i].name);
        bench_json_string(j, "status", bench_node_status_name(rows[i].status));
        bench_json_string(j, "layer_type", rows[i].type);
        bench_json_string(j, "impl", rows[i].impl);
        bench_json_number(j, "real_time_us", rows[i].avg_us);
        bench_json_end_object(j);
    }
    bench_json_end_array(j);
}

static void json_table(bench_json *j, const char *key, const bench_layer_table *t)
{
    bench_json_begin_object(j, key);
    bench_json_int(j, "inferences", (long long)t->runs);
    bench_json_number(j, "total_us", t->total_us);
    json_rows(j, "layers", t->layers, t->n_layers);
    json_rows(j, "stages", t->stages, t->n_stages);
    bench_json_begin_array(j, "layer_types");
    for (size_t i = 0; i < t->n_types; i++) {
        bench_json_begin_object(j, NULL);
        bench_json_string(j, "layer_type", t->types[i].type);
        bench_json_int(j, "layers", (long long)t->types[i].layers);
        bench_json_number(j, "real_time_us", t->types[i].avg_us);
        bench_json_end_object(j);
    }
    bench_json_end_array(j);
    bench_json_end_object(j);
}

static void json_ports(bench_json *j, const char *key, const bench_port_info *p, size_t n,
                       bool with_source)
{
    bench_json_begin_array(j, key);
    for (size_t i = 0; i < n; i++) {
        bench_json_begin_object(j, NULL);
        bench_json_string(j, "name", p[i].name);
        bench_json_string(j, "element_type", p[i].type);
        bench_json_string(j, "shape", p[i].shape);
        if (with_source)
            bench_json_string(j, "data", p[i].source);
        bench_json_end_object(j);
    }
    bench_json_end_array(j);
}

static void json_optional(bench_json *j, const char *key, const char *value)
{
    if (value != NULL)
        bench_json_string(j, key, value);
    else
        bench_json_null(j, key);
}

rn_status bench_report_write_json(const bench_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "cannot write %s: %s", path, strerror(errno));
    bench_json j;
    bench_json_init(&j, f);
    bench_json_begin_object(&j, NULL);
    bench_json_string(&j, "tool", "bench");
    bench_json_string(&j, "runnel_version", r->version);
    bench_json_string(&j, "command_line", r->command_line);

    bench_json_begin_object(&j, "settings");
    bench_json_string(&j, "model", r->model_path);
    bench_json_bool(&j, "model_is_blob", r->is_blob);
    bench_json_string(&j, "device", r->device);
    bench_json_string(&j, "api", r->api);
    bench_json_string(&j, "hint", r->hint);
    bench_json_int(&j, "nireq", r->nireq);
    json_optional(&j, "nstreams", r->nstreams);
    json_optional(&j, "nthreads", r->nthreads);
    if (r->niter > 0)
        bench_json_int(&j, "niter", r->niter);
    else
        bench_json_null(&j, "niter");
    if (r->time_s > 0)
        bench_json_number(&j, "time_s", r->time_s);
    else
        bench_json_null(&j, "time_s");
    json_optional(&j, "shape", r->shape);
    json_optional(&j, "data_shape", r->data_shape);
    json_optional(&j, "infer_precision", r->infer_precision);
    json_optional(&j, "cache_dir", r->cache_dir);
    bench_json_bool(&j, "pc", r->pc);
    bench_json_string(&j, "report_type", r->report_type);
    json_optional(&j, "json", r->json_path);
    json_optional(&j, "html", r->html_path);
    json_optional(&j, "trace", r->trace_path);
    json_optional(&j, "output_dir", r->output_dir);
    bench_json_end_object(&j);

    bench_json_begin_object(&j, "steps");
    bench_json_string(&j, "full_device_name", r->full_device_name);
    bench_json_number(&j, "read_ms", r->read_ms);
    bench_json_number(&j, "compile_ms", r->compile_ms);
    json_optional(&j, "loaded_from_cache", r->loaded_from_cache[0] ? r->loaded_from_cache : NULL);
    bench_json_number(&j, "first_inference_ms", r->first_infer_ms);
    bench_json_end_object(&j);

    bench_json_begin_object(&j, "compiled_model_properties");
    for (size_t i = 0; i < r->n_props; i++)
        bench_json_string(&j, r->props[i].key, r->props[i].value);
    bench_json_end_object(&j);
    json_ports(&j, "inputs", r->inputs, r->n_inputs, true);
    json_ports(&j, "outputs", r->outputs, r->n_outputs, false);

    bench_json_begin_object(&j, "results");
    bench_json_int(&j, "count", (long long)r->latency.count);
    bench_json_number(&j, "duration_ms", r->duration_ms);
    json_latency(&j, "latency", &r->latency);
    bench_json_int(&j, "batch", r->batch);
    bench_json_number(&j, "throughput_fps", r->throughput_fps);
    bench_json_int(&j, "latency_samples_kept", (long long)r->samples.n);
    bench_json_end_object(&j);

    if (r->have_counters)
        json_table(&j, "performance_counters", &r->table);
    else
        bench_json_null(&j, "performance_counters");
    if (r->requests != NULL) {
        bench_json_begin_array(&j, "requests");
        for (size_t i = 0; i < r->n_requests; i++) {
            bench_json_begin_object(&j, NULL);
            bench_json_int(&j, "index", (long long)i);
            json_latency(&j, "latency", &r->requests[i].latency);
            if (r->have_counters)
                json_table(&j, "performance_counters", &r->requests[i].table);
            bench_json_end_object(&j);
        }
        bench_json_end_array(&j);
        /* Every kept sample: [start ms since the run began, latency ms]. */
        bench_json_begin_array(&j, "latency_samples");
        for (size_t i = 0; i < r->samples.n; i++) {
            bench_json_begin_array(&j, NULL);
            bench_json_number(&j, NULL, r->samples.items[i].start_ms);
            bench_json_number(&j, NULL, r->samples.items[i].latency_ms);
            bench_json_end_array(&j);
        }
        bench_json_end_array(&j);
    }
    bench_json_end_object(&j);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return rn_set_error(RN_IO_ERROR, "cannot write %s: %s", path, strerror(errno));
    return RN_OK;
}
