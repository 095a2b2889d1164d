/* bench's -html report: one self-contained page (inline CSS and SVG, no
 * scripts, fonts or images from elsewhere) with the run's settings, its
 * results, the latency histogram, latency over time and time per layer
 * type. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench_report.h"

#define SVG_W  720.0
#define SVG_H  260.0
#define LEFT   64.0
#define RIGHT  16.0
#define TOP    16.0
#define BOTTOM 40.0

/* Text with &, <, > and quotes escaped. */
static void text(FILE *f, const char *s)
{
    for (; s != NULL && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void row(FILE *f, const char *key, const char *value)
{
    fputs("<tr><th>", f);
    text(f, key);
    fputs("</th><td>", f);
    text(f, value != NULL && value[0] ? value : "-");
    fputs("</td></tr>\n", f);
}

static void row_num(FILE *f, const char *key, const char *fmt, double value)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, value);
    row(f, key, buf);
}

static void svg_begin(FILE *f, const char *title, double height)
{
    fprintf(f, "<h2>");
    text(f, title);
    fprintf(f,
            "</h2>\n<svg width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n",
            SVG_W, height, SVG_W, height);
}

/* The plot area's axes: the x axis from x_min to x_max with five ticks,
 * the y axis from 0 to y_max, and their labels. */
static void axes(FILE *f, const char *x_label, double x_min, double x_max, const char *y_label,
                 double y_max)
{
    double x0 = LEFT, y0 = SVG_H - BOTTOM, x1 = SVG_W - RIGHT;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n",
            x0, y0, x1, y0, x0, y0, x0, TOP);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">%.4g</text>\n",
            x0 - 4, TOP + 10, y_max);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">0</text>\n", x0 - 4,
            y0);
    for (int i = 0; i <= 4; i++) {
        double x = x0 + (x1 - x0) * i / 4.0;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"%s\">%.4g</text>\n",
                x, y0, x, y0 + 4, x, y0 + 16,
                i == 0   ? "start"
                : i == 4 ? "end"
                         : "middle",
                x_min + (x_max - x_min) * i / 4.0);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"middle\">", (x0 + x1) / 2,
            SVG_H - 6);
    text(f, x_label);
    fprintf(f,
            "</text>\n<text x=\"12\" y=\"%.1f\" class=\"lbl\" transform=\"rotate(-90 12 %.1f)\" "
            "text-anchor=\"middle\">",
            (TOP + y0) / 2, (TOP + y0) / 2);
    text(f, y_label);
    fputs("</text>\n", f);
}

static void histogram(FILE *f, const bench_report *r)
{
    const bench_samples *s = &r->samples;
    svg_begin(f, "Latency histogram", SVG_H);
    if (s->n == 0) {
        fputs("<text x=\"20\" y=\"40\">no samples</text>\n</svg>\n", f);
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        lo = fmin(lo, s->items[i].latency_ms);
        hi = fmax(hi, s->items[i].latency_ms);
    }
    size_t bins = (size_t)ceil(sqrt((double)s->n));
    if (bins > 40)
        bins = 40;
    if (bins < 1 || hi <= lo)
        bins = 1;
    double width = hi > lo ? (hi - lo) / (double)bins : 1.0;
    size_t counts[40] = {0};
    size_t peak = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t b = (size_t)((s->items[i].latency_ms - lo) / width);
        if (b >= bins)
            b = bins - 1;
        if (++counts[b] > peak)
            peak = counts[b];
    }
    double plot_w = SVG_W - LEFT - RIGHT, plot_h = SVG_H - TOP - BOTTOM;
    double bar_w = plot_w / (double)bins;
    for (size_t b = 0; b < bins; b++) {
        double h = plot_h * (double)counts[b] / (double)peak;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"bar\">"
                "<title>%.4g to %.4g ms: %zu</title></rect>\n",
                LEFT + bar_w * (double)b + 1, TOP + plot_h - h, bar_w > 2 ? bar_w - 2 : bar_w, h,
                lo + width * (double)b, lo + width * (double)(b + 1), counts[b]);
    }
    /* Median, p90 and p99 as vertical marks. */
    const struct {
        const char *name;
        double v;
    } marks[] = {{"median", r->latency.median}, {"p90", r->latency.p90}, {"p99", r->latency.p99}};
    for (size_t m = 0; m < 3; m++) {
        double x = hi > lo ? LEFT + plot_w * (marks[m].v - lo) / (hi - lo) : LEFT + plot_w / 2;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"mark\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">%s</text>\n",
                x, TOP, x, TOP + plot_h, x + 3, TOP + 10 + 12.0 * (double)m, marks[m].name);
    }
    /* One bin when every latency is equal: centred on that value. */
    double pad = lo != 0 ? fabs(lo) * 0.01 : 1.0;
    axes(f, "latency (ms)", hi > lo ? lo : lo - pad, hi > lo ? hi : lo + pad, "inferences",
         (double)peak);
    fputs("</svg>\n", f);
}

static void over_time(FILE *f, const bench_report *r)
{
    const bench_samples *s = &r->samples;
    svg_begin(f, "Latency over time", SVG_H);
    if (s->n == 0) {
        fputs("<text x=\"20\" y=\"40\">no samples</text>\n</svg>\n", f);
        return;
    }
    double t_max = 0, y_max = 0;
    for (size_t i = 0; i < s->n; i++) {
        t_max = fmax(t_max, s->items[i].start_ms);
        y_max = fmax(y_max, s->items[i].latency_ms);
    }
    if (t_max <= 0)
        t_max = 1;
    if (y_max <= 0)
        y_max = 1;
    double plot_w = SVG_W - LEFT - RIGHT, plot_h = SVG_H - TOP - BOTTOM;
#define PX(t) (LEFT + plot_w * (t) / t_max)
#define PY(v) (TOP + plot_h - plot_h * (v) / y_max)
    if (s->n <= 2000) {
        for (size_t i = 0; i < s->n; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.6\" class=\"dot\"/>\n",
                    PX(s->items[i].start_ms), PY(s->items[i].latency_ms));
    } else {
        /* Too many points for a light page: the mean and the max of each
         * of 500 time buckets. */
        enum { BUCKETS = 500 };
        double sum[BUCKETS] = {0}, max[BUCKETS] = {0};
        size_t count[BUCKETS] = {0};
        for (size_t i = 0; i < s->n; i++) {
            size_t b = (size_t)(s->items[i].start_ms / t_max * (BUCKETS - 1));
            sum[b] += s->items[i].latency_ms;
            max[b] = fmax(max[b], s->items[i].latency_ms);
            count[b]++;
        }
        for (int pass = 0; pass < 2; pass++) {
            fprintf(f, "<polyline class=\"%s\" points=\"", pass ? "mean" : "max");
            for (size_t b = 0; b < BUCKETS; b++)
                if (count[b] > 0)
                    fprintf(f, "%.1f,%.1f ", PX(t_max * (double)b / (BUCKETS - 1)),
                            PY(pass ? sum[b] / (double)count[b] : max[b]));
            fputs("\"/>\n", f);
        }
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">mean (dark) and max (light) per "
                "bucket</text>\n",
                LEFT + 8, TOP + 10);
    }
#undef PX
#undef PY
    axes(f, "time since the run began (ms)", 0, t_max, "latency (ms)", y_max);
    fputs("</svg>\n", f);
}

static void type_bars(FILE *f, const bench_report *r)
{
    if (!r->have_counters || r->table.n_types == 0) {
        fputs("<h2>Time per layer type</h2>\n<p>No per-layer counters: run bench with -pc (or "
              "-report_type average|detailed).</p>\n",
              f);
        return;
    }
    const bench_layer_table *t = &r->table;
    double row_h = 20, height = TOP + row_h * (double)t->n_types + 8;
    svg_begin(f, "Time per layer type (average per inference)", height);
    double peak = t->types[0].avg_us > 0 ? t->types[0].avg_us : 1;
    double label_w = 180, plot_w = SVG_W - label_w - 210;
    for (size_t i = 0; i < t->n_types; i++) {
        double y = TOP + row_h * (double)i;
        double w = plot_w * t->types[i].avg_us / peak;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">", label_w - 6,
                y + 13);
        text(f, t->types[i].type);
        fprintf(f,
                "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "class=\"bar\"/><text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">%.1f us (%.1f%%, %zu "
                "layers)</text>\n",
                label_w, y + 2, w > 0.5 ? w : 0.5, row_h - 4, label_w + w + 6, y + 13,
                t->types[i].avg_us, t->total_us > 0 ? 100 * t->types[i].avg_us / t->total_us : 0,
                t->types[i].layers);
    }
    fputs("</svg>\n", f);
}

static void top_layers(FILE *f, const bench_report *r)
{
    if (!r->have_counters || r->table.n_layers == 0)
        return;
    const bench_layer_table *t = &r->table;
    size_t n = t->n_layers < 20 ? t->n_layers : 20;
    fprintf(f,
            "<h2>Longest layers (%zu of %zu)</h2>\n<table>\n<tr><th>layer</th><th>status</th>"
            "<th>type</th><th>impl</th><th>real time (us)</th></tr>\n",
            n, t->n_layers);
    for (size_t i = 0; i < n; i++) {
        fputs("<tr><td>", f);
        text(f, t->layers[i].name);
        fputs("</td><td>", f);
        text(f, bench_node_status_name(t->layers[i].status));
        fputs("</td><td>", f);
        text(f, t->layers[i].type);
        fputs("</td><td>", f);
        text(f, t->layers[i].impl);
        fprintf(f, "</td><td class=\"num\">%.1f</td></tr>\n", t->layers[i].avg_us);
    }
    fputs("</table>\n", f);
}

static void settings(FILE *f, const bench_report *r)
{
    char buf[64];
    fputs("<h2>Settings</h2>\n<table>\n", f);
    row(f, "command line", r->command_line);
    row(f, "model", r->model_path);
    row(f, "device", r->device);
    row(f, "device name", r->full_device_name);
    row(f, "api", r->api);
    row(f, "hint", r->hint);
    snprintf(buf, sizeof buf, "%d", r->nireq);
    row(f, "infer requests", buf);
    row(f, "nstreams", r->nstreams);
    row(f, "nthreads", r->nthreads);
    if (r->niter > 0) {
        snprintf(buf, sizeof buf, "%lld", r->niter);
        row(f, "niter", buf);
    }
    if (r->time_s > 0)
        row_num(f, "time limit (s)", "%g", r->time_s);
    row(f, "shape", r->shape);
    row(f, "data shape", r->data_shape);
    row(f, "inference precision", r->infer_precision);
    row(f, "cache dir", r->cache_dir);
    row(f, "report type", r->report_type);
    row_num(f, "read (ms)", "%.2f", r->read_ms);
    row_num(f, r->is_blob ? "import (ms)" : "compile (ms)", "%.2f", r->compile_ms);
    row(f, "loaded from cache", r->loaded_from_cache);
    row_num(f, "first inference (ms)", "%.3f", r->first_infer_ms);
    for (size_t i = 0; i < r->n_props; i++)
        row(f, r->props[i].key, r->props[i].value);
    fputs("</table>\n<h2>Inputs</h2>\n<table>\n<tr><th>name</th><th>type</th><th>shape</th>"
          "<th>data</th></tr>\n",
          f);
    for (size_t i = 0; i < r->n_inputs; i++) {
        const bench_port_info *p = &r->inputs[i];
        fputs("<tr><td>", f);
        text(f, p->name);
        fputs("</td><td>", f);
        text(f, p->type);
        fputs("</td><td>", f);
        text(f, p->shape);
        fputs("</td><td>", f);
        text(f, p->source);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

rn_status bench_report_write_html(const bench_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "cannot write %s: %s", path, strerror(errno));
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>runnel "
          "bench: ",
          f);
    text(f, r->model_path);
    fputs(" on ", f);
    text(f, r->device);
    fputs("</title>\n<style>\n"
          "body{font-family:sans-serif;margin:24px;color:#222;max-width:980px}\n"
          "table{border-collapse:collapse;margin-bottom:16px}\n"
          "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}\n"
          "th{background:#f3f3f3}td.num{text-align:right}\n"
          "svg{border:1px solid #ddd;background:#fff}\n"
          ".axis{stroke:#444;stroke-width:1}.bar{fill:#4a7fb5}.dot{fill:#4a7fb5;opacity:.6}\n"
          ".mark{stroke:#c0392b;stroke-dasharray:4 3}.lbl{font-size:11px;fill:#333}\n"
          ".mean{fill:none;stroke:#1f4e79;stroke-width:1.2}"
          ".max{fill:none;stroke:#9dc3e6;stroke-width:1}\n"
          ".big{font-size:20px;font-weight:bold}\n"
          "</style>\n</head>\n<body>\n<h1>runnel bench</h1>\n",
          f);
    fprintf(f, "<p class=\"big\">%.2f FPS</p>\n", r->throughput_fps);
    fputs("<table>\n", f);
    char buf[64];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)r->latency.count);
    row(f, "count (iterations)", buf);
    row_num(f, "duration (ms)", "%.2f", r->duration_ms);
    row_num(f, "latency median (ms)", "%.3f", r->latency.median);
    row_num(f, "latency average (ms)", "%.3f", r->latency.average);
    row_num(f, "latency min (ms)", "%.3f", r->latency.min);
    row_num(f, "latency max (ms)", "%.3f", r->latency.max);
    row_num(f, "latency p90 (ms)", "%.3f", r->latency.p90);
    row_num(f, "latency p99 (ms)", "%.3f", r->latency.p99);
    row_num(f, "throughput (FPS)", "%.2f", r->throughput_fps);
    fputs("</table>\n", f);
    histogram(f, r);
    over_time(f, r);
    type_bars(f, r);
    top_layers(f, r);
    settings(f, r);
    fprintf(f, "<p>runnel %s</p>\n</body>\n</html>\n", r->version);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return rn_set_error(RN_IO_ERROR, "cannot write %s: %s", path, strerror(errno));
    return RN_OK;
}
