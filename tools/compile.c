/* compile: compiles a model for a device with properties and exports the
 * compiled model as a blob (docs/export.md), which `bench -m BLOB` and
 * rn_core_import_model read back. Uses the public API only.
 *
 *   compile -m MODEL.onnx [-d DEVICE] [-o OUT.blob] [-hint H] [-nstreams N]
 *           [-nthreads N] [-infer_precision T] [-shape S] [-prop KEY=VALUE ...]
 *           [-plugins FILE]
 *
 * Exit status: 0 on success, 1 when a step fails, 2 for bad flags. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tools/bench_cli.h"
#include "tools/bench_run.h"
#include "tools/bench_shape.h"

#define MAX_PROPS 64

static const char usage_text[] =
    "usage: compile -m MODEL.onnx [-d DEVICE] [-o OUT.blob] [-hint H] [-nstreams N]\n"
    "               [-nthreads N] [-infer_precision T] [-shape S] [-prop KEY=VALUE ...]\n"
    "               [-plugins FILE]\n"
    "\n"
    "  -m MODEL         the ONNX model\n"
    "  -d DEVICE        device (default: the best available)\n"
    "  -o PATH          the blob (default: the model's name with .blob, here)\n"
    "  -hint H          PERFORMANCE_HINT: throughput, latency, cumulative_throughput, none\n"
    "  -nstreams N      NUM_STREAMS (a number or AUTO)\n"
    "  -nthreads N      INFERENCE_NUM_THREADS\n"
    "  -infer_precision INFERENCE_PRECISION_HINT\n"
    "  -shape S         reshape first: [1,3,224,224] or a[1,3],b[2,4]\n"
    "  -prop KEY=VALUE  any other compile-time property (repeatable)\n"
    "  -plugins FILE    load device plugins from FILE (also: $RUNNEL_PLUGINS)\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[ ERROR ] ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (compile -h lists the flags)\n");
    va_end(ap);
    return 2;
}

/* The default output: the model file's name with .blob instead of its
 * extension, in the working directory. */
static void default_output(const char *model, char *buf, size_t size)
{
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    snprintf(buf, size, "%.*s.blob", (int)len, base);
}

typedef struct options {
    const char *model, *device, *output, *plugins, *hint;
    bench_shape_list shape;
    rn_property props[MAX_PROPS];
    char *prop_storage[MAX_PROPS];
    size_t n_props;
} options;

static int add_prop(options *o, const char *key, const char *value)
{
    if (o->n_props == MAX_PROPS)
        return usage_error("more than %d properties", MAX_PROPS);
    o->props[o->n_props++] = (rn_property){key, value};
    return -1;
}

/* Parses argv. Returns -1 to go on, else the exit status. */
static int parse_flags(int argc, char **argv, options *o)
{
    static const char *const hints[][2] = {{"throughput", "THROUGHPUT"},
                                           {"latency", "LATENCY"},
                                           {"cumulative_throughput", "CUMULATIVE_THROUGHPUT"},
                                           {"none", ""}};
    for (int i = 1; i < argc; i++) {
        const char *flag = bench_cli_flag(argv[i]);
        if (flag == NULL)
            return usage_error("unexpected argument '%s'", argv[i]);
        if (strcmp(flag, "h") == 0 || strcmp(flag, "help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        static const char *const known[] = {
            "m",     "d",    "o",       "hint", "nstreams", "nthreads", "infer_precision",
            "shape", "prop", "plugins", NULL};
        size_t k = 0;
        while (known[k] != NULL && strcmp(known[k], flag) != 0)
            k++;
        if (known[k] == NULL)
            return usage_error("unknown flag '%s'", argv[i]);
        if (i + 1 >= argc)
            return usage_error("flag '%s' needs a value", argv[i]);
        const char *v = argv[++i];
        int rc = -1;
        long long n;
        if (strcmp(flag, "m") == 0)
            o->model = v;
        else if (strcmp(flag, "d") == 0)
            o->device = v;
        else if (strcmp(flag, "o") == 0)
            o->output = v;
        else if (strcmp(flag, "plugins") == 0)
            o->plugins = v;
        else if (strcmp(flag, "hint") == 0) {
            size_t h = 0;
            while (h < 4 && strcasecmp(v, hints[h][0]) != 0)
                h++;
            if (h == 4)
                return usage_error("-hint '%s': expected throughput, latency, "
                                   "cumulative_throughput or none",
                                   v);
            rc = add_prop(o, "PERFORMANCE_HINT", hints[h][1]);
        } else if (strcmp(flag, "nstreams") == 0)
            rc = add_prop(o, "NUM_STREAMS", v);
        else if (strcmp(flag, "nthreads") == 0) {
            if (!bench_cli_parse_ll(v, 0, 4096, &n))
                return usage_error("-nthreads '%s': expected a whole number from 0 to 4096", v);
            rc = add_prop(o, "INFERENCE_NUM_THREADS", v);
        } else if (strcmp(flag, "infer_precision") == 0)
            rc = add_prop(o, "INFERENCE_PRECISION_HINT", v);
        else if (strcmp(flag, "shape") == 0) {
            if (bench_shape_parse("-shape", v, &o->shape) != RN_OK)
                return usage_error("%s", rn_last_error());
        } else if (strcmp(flag, "prop") == 0) {
            const char *eq = strchr(v, '=');
            if (eq == NULL || eq == v)
                return usage_error("-prop '%s': expected KEY=VALUE", v);
            char *key = strndup(v, (size_t)(eq - v));
            if (key == NULL)
                return usage_error("out of memory%s", "");
            o->prop_storage[o->n_props] = key;
            rc = add_prop(o, key, eq + 1);
        }
        if (rc >= 0)
            return rc;
    }
    if (o->model == NULL)
        return usage_error("no model: give one with -m MODEL");
    return -1;
}

static rn_status reshape(rn_model *model, const bench_shape_list *shape)
{
    size_t n = rn_model_input_count(model);
    if (n > BENCH_SHAPE_MAX_INPUTS)
        n = BENCH_SHAPE_MAX_INPUTS;
    /* Copies: a reshape replaces the model's graph, and with it the port
     * names read before it. */
    static char storage[BENCH_SHAPE_MAX_INPUTS][256];
    const char *names[BENCH_SHAPE_MAX_INPUTS];
    for (size_t i = 0; i < n; i++) {
        rn_port p;
        rn_model_input(model, i, &p);
        snprintf(storage[i], sizeof storage[i], "%s", p.name);
        names[i] = storage[i];
    }
    const char *bad = bench_shape_unknown_name(shape, names, n);
    if (bad != NULL)
        return rn_set_error(RN_NOT_FOUND, "-shape names input '%s', which the model does not have",
                            bad);
    for (size_t i = 0; i < n; i++) {
        const rn_partial_shape *s = bench_shape_find(shape, names[i]);
        if (s == NULL)
            continue;
        char text[128];
        bench_shape_format(s, text, sizeof text);
        rn_status st = rn_model_reshape(model, names[i], s);
        if (st != RN_OK)
            return rn_wrap_error(st, "-shape %s for input '%s': ", text, names[i]);
        printf("reshaped  %s to %s\n", names[i], text);
    }
    return RN_OK;
}

int main(int argc, char **argv)
{
    static options o;
    bench_cli_enter_user_dir();
    int rc = parse_flags(argc, argv, &o);
    rn_core *core = NULL;
    rn_model *model = NULL;
    rn_compiled_model *compiled = NULL;
    void *blob = NULL;
    size_t size = 0;
    if (rc >= 0)
        goto done;
    rc = 1;
    char output[4096];
    if (o.output == NULL)
        default_output(o.model, output, sizeof output);
    else
        snprintf(output, sizeof output, "%s", o.output);
    if (access(o.model, R_OK) != 0) {
        fprintf(stderr, "[ ERROR ] model %s: %s\n", o.model, strerror(errno));
        goto done;
    }
    rn_status st = bench_cli_core(o.plugins, &core);
    if (st == RN_OK && o.device == NULL) {
        o.device = bench_cli_best_device(core);
        if (o.device == NULL)
            st = rn_set_error(RN_NOT_FOUND, "no device is available");
    }
    if (st == RN_OK)
        st = bench_cli_check_device(core, o.device);
    double t0 = bench_now_ms(), t1 = t0, t2 = t0;
    if (st == RN_OK)
        st = rn_core_read_model(core, o.model, &model);
    if (st == RN_OK) {
        t1 = bench_now_ms();
        printf("model     %s\ndevice    %s\nread      %.2f ms\n", o.model, o.device, t1 - t0);
        for (size_t i = 0; i < o.n_props; i++)
            printf("property  %s=%s\n", o.props[i].key, o.props[i].value);
        if (o.shape.n > 0)
            st = reshape(model, &o.shape);
    }
    if (st == RN_OK) {
        t1 = bench_now_ms();
        st = rn_core_compile_model(core, model, o.device, o.props, o.n_props, &compiled);
    }
    if (st == RN_OK) {
        t2 = bench_now_ms();
        printf("compile   %.2f ms\n", t2 - t1);
        st = rn_compiled_model_export(compiled, &blob, &size);
        if (st != RN_OK)
            rn_wrap_error(st, "exporting: ");
    }
    if (st == RN_OK)
        st = bench_cli_write_file(output, blob, size);
    if (st == RN_OK) {
        printf("export    %.2f ms, %zu bytes\nwrote     %s\n", bench_now_ms() - t2, size, output);
        rc = 0;
    } else {
        fprintf(stderr, "[ ERROR ] %s\n", rn_last_error());
    }
done:
    free(blob);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
    for (size_t i = 0; i < o.n_props; i++)
        free(o.prop_storage[i]);
    return rc;
}
