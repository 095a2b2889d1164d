/* bench: benchmark_app for runnel. Reads (or imports) a model, compiles it
 * for a device with the performance settings asked for, keeps infer
 * requests busy until the limits are reached and reports latency and
 * throughput, optionally with per-layer counters, a JSON report, an HTML
 * page and a Chrome trace. Uses the public API only, so it works with every
 * device, dynamic plugins included. Flags and examples: docs/tools.md.
 *
 * Exit status: 0 on success, 1 when a step fails, 2 for bad flags. Every
 * error is one line on stderr starting with "[ ERROR ]". */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tools/bench_cli.h"
#include "tools/bench_report.h"
#include "tools/bench_run.h"
#include "tools/bench_shape.h"
#include "tools/bench_stats.h"
#include "tools/npy.h"

#define MAX_INPUT_FILES 64
#define STEPS           10

static const char usage_text[] =
    "usage: bench -m MODEL [-d DEVICE] [-hint throughput|latency|cumulative_throughput|none]\n"
    "             [-api sync|async] [-nireq N] [-nstreams N|AUTO] [-nthreads N]\n"
    "             [-niter N] [-t SECONDS] [-shape SHAPES] [-data_shape SHAPES]\n"
    "             [-i [NAME=]FILE.npy ...] [-infer_precision TYPE] [-cache_dir DIR]\n"
    "             [-pc] [-report_type none|average|detailed] [-json PATH] [-html PATH]\n"
    "             [-trace PATH] [-o DIR] [-plugins FILE] [-p KEY=VALUE ...]\n"
    "\n"
    "  -m MODEL          an ONNX model, or a blob written by compile\n"
    "  -d DEVICE         device (default: the best available; for a blob, its device)\n"
    "  -hint H           performance hint (default: throughput for async, latency for sync)\n"
    "  -api A            async (default: every request kept busy by callbacks) or sync\n"
    "  -nireq N          infer requests in async mode (0, the default: the device's\n"
    "                    OPTIMAL_NUMBER_OF_INFER_REQUESTS)\n"
    "  -nstreams N       NUM_STREAMS (a number or AUTO)\n"
    "  -nthreads N       INFERENCE_NUM_THREADS\n"
    "  -niter N          run at least N inferences\n"
    "  -t SECONDS        run at least this long (default 60 when neither -niter nor -t)\n"
    "  -shape S          reshape the model's inputs: [1,3,224,224] or a[1,3],b[?,4]\n"
    "  -data_shape S     the shape of the data fed to dynamic inputs (same syntax)\n"
    "  -i [NAME=]FILE    feed input NAME from a .npy file (others: generated data)\n"
    "  -infer_precision  INFERENCE_PRECISION_HINT (f32, f16, bf16, ...)\n"
    "  -cache_dir DIR    cache compiled models in DIR (CACHE_DIR)\n"
    "  -pc               print per-layer counters (ENABLE_PROFILING), sorted by time\n"
    "  -report_type T    counters: none, average (per layer over every inference) or\n"
    "                    detailed (also per request, and every latency sample in -json)\n"
    "  -json PATH        write everything printed as JSON\n"
    "  -html PATH        write a self-contained HTML page with charts\n"
    "  -trace PATH       write a Chrome trace of the run (ENABLE_TRACE)\n"
    "  -o DIR            write the first request's outputs as DIR/<name>.npy\n"
    "  -plugins FILE     load device plugins from FILE (also: $RUNNEL_PLUGINS)\n"
    "  -p KEY=VALUE      any other compile-time property (repeatable), e.g.\n"
    "                    -p CPU_DENORMALS_OPTIMIZATION=NO\n";

typedef struct options {
    const char *model, *device, *hint, *api, *nstreams, *nthreads, *infer_precision;
    const char *cache_dir, *report_type, *json, *html, *trace, *out_dir, *plugins;
    const char *shape_text, *data_shape_text;
    bench_shape_list shape, data_shape;
    long long nireq, niter; /* nireq -1: not given */
    double time_s;
    bool pc;
    const char *input_specs[MAX_INPUT_FILES];
    int n_input_specs;
    bench_cli_props user_props; /* -p KEY=VALUE */
} options;

/* Everything bench holds, freed in one place. */
typedef struct bench {
    options o;
    rn_core *core;
    rn_model *model;
    void *blob;
    size_t blob_size;
    rn_compiled_model *compiled;
    rn_infer_request **requests;
    size_t n_requests;
    rn_tensor **protos; /* per input: the data every request gets a copy of */
    rn_tensor **copies; /* n_requests * n_inputs */
    size_t n_inputs;
    rn_property props[8 + BENCH_CLI_MAX_PROPS]; /* the compile-time properties the flags ask for */
    size_t n_props;
    char num_requests[32];
    bench_report report;
    bench_run_result result;
    bench_counters merged;
} bench;

static void step(int n, const char *what)
{
    printf("[Step %d/%d] %s\n", n, STEPS, what);
}

/* Prints a one-line usage error and returns the exit status for it. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[ ERROR ] ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (bench -h lists the flags)\n");
    va_end(ap);
    return 2;
}

static bool one_of(const char *value, const char *const *names)
{
    for (; *names != NULL; names++)
        if (strcasecmp(value, *names) == 0)
            return true;
    return false;
}

/* Parses argv into o. Returns -1 to go on, else the exit status. */
static int parse_flags(int argc, char **argv, options *o)
{
    static const char *const hints[] = {"throughput", "latency", "cumulative_throughput", "none",
                                        NULL};
    static const char *const apis[] = {"sync", "async", NULL};
    static const char *const report_types[] = {"none", "average", "detailed", NULL};
    memset(o, 0, sizeof *o);
    o->nireq = -1;
    for (int i = 1; i < argc; i++) {
        const char *flag = bench_cli_flag(argv[i]);
        if (flag == NULL)
            return usage_error("unexpected argument '%s'", argv[i]);
        if (strcmp(flag, "h") == 0 || strcmp(flag, "help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(flag, "pc") == 0) {
            o->pc = true;
            continue;
        }
        static const char *const with_value[] = {
            "m",           "d",    "hint",  "api",        "nireq", "nstreams",        "nthreads",
            "niter",       "t",    "shape", "data_shape", "i",     "infer_precision", "cache_dir",
            "report_type", "json", "html",  "trace",      "o",     "plugins",         "p",
            NULL};
        if (!one_of(flag, with_value))
            return usage_error("unknown flag '%s'", argv[i]);
        if (i + 1 >= argc)
            return usage_error("flag '%s' needs a value", argv[i]);
        const char *v = argv[++i];
        long long n;
        if (strcmp(flag, "m") == 0)
            o->model = v;
        else if (strcmp(flag, "d") == 0)
            o->device = v;
        else if (strcmp(flag, "hint") == 0) {
            if (!one_of(v, hints))
                return usage_error("-hint '%s': expected throughput, latency, "
                                   "cumulative_throughput or none",
                                   v);
            o->hint = v;
        } else if (strcmp(flag, "api") == 0) {
            if (!one_of(v, apis))
                return usage_error("-api '%s': expected sync or async", v);
            o->api = v;
        } else if (strcmp(flag, "nireq") == 0) {
            if (!bench_cli_parse_ll(v, 0, 4096, &n))
                return usage_error("-nireq '%s': expected a whole number from 0 to 4096", v);
            o->nireq = n;
        } else if (strcmp(flag, "nstreams") == 0)
            o->nstreams = v; /* the device validates NUM_STREAMS */
        else if (strcmp(flag, "nthreads") == 0) {
            if (!bench_cli_parse_ll(v, 0, 4096, &n))
                return usage_error("-nthreads '%s': expected a whole number from 0 to 4096", v);
            o->nthreads = v;
        } else if (strcmp(flag, "niter") == 0) {
            if (!bench_cli_parse_ll(v, 1, (long long)1 << 50, &n))
                return usage_error("-niter '%s': expected a whole number >= 1", v);
            o->niter = n;
        } else if (strcmp(flag, "t") == 0) {
            if (!bench_cli_parse_positive(v, &o->time_s))
                return usage_error("-t '%s': expected a number of seconds > 0", v);
        } else if (strcmp(flag, "shape") == 0) {
            if (bench_shape_parse("-shape", v, &o->shape) != RN_OK)
                return usage_error("%s", rn_last_error());
            o->shape_text = v;
        } else if (strcmp(flag, "data_shape") == 0) {
            if (bench_shape_parse("-data_shape", v, &o->data_shape) != RN_OK)
                return usage_error("%s", rn_last_error());
            o->data_shape_text = v;
        } else if (strcmp(flag, "i") == 0) {
            if (o->n_input_specs == MAX_INPUT_FILES)
                return usage_error("more than %d -i flags", MAX_INPUT_FILES);
            o->input_specs[o->n_input_specs++] = v;
        } else if (strcmp(flag, "infer_precision") == 0)
            o->infer_precision = v;
        else if (strcmp(flag, "cache_dir") == 0)
            o->cache_dir = v;
        else if (strcmp(flag, "report_type") == 0) {
            if (!one_of(v, report_types))
                return usage_error("-report_type '%s': expected none, average or detailed", v);
            o->report_type = v;
        } else if (strcmp(flag, "json") == 0)
            o->json = v;
        else if (strcmp(flag, "html") == 0)
            o->html = v;
        else if (strcmp(flag, "trace") == 0)
            o->trace = v;
        else if (strcmp(flag, "o") == 0)
            o->out_dir = v;
        else if (strcmp(flag, "plugins") == 0)
            o->plugins = v;
        else if (strcmp(flag, "p") == 0 && bench_cli_add_property(&o->user_props, "-p", v) != RN_OK)
            return usage_error("%s", rn_last_error());
    }
    if (o->model == NULL)
        return usage_error("no model: give one with -m MODEL");
    if (o->api == NULL)
        o->api = "async";
    if (o->hint == NULL)
        o->hint = strcasecmp(o->api, "sync") == 0 ? "latency" : "throughput";
    if (o->report_type == NULL)
        o->report_type = o->pc ? "average" : "none";
    else if (o->pc && strcasecmp(o->report_type, "none") == 0)
        o->report_type = "average"; /* -pc needs the counters */
    if (o->niter == 0 && o->time_s == 0)
        o->time_s = 60;
    return -1;
}

static bool counters_wanted(const options *o)
{
    return strcasecmp(o->report_type, "none") != 0;
}

/* ---- inputs ---- */

/* The data bench feeds when no file is given: deterministic, so that two
 * runs (or a model and its compiled blob) see the same inputs. Floats
 * arange(n)/n, integers i mod 256 (mod 128 for bytes), booleans
 * alternating; the same as tools/run. */
static void fill_deterministic(rn_tensor *t)
{
    size_t n = rn_tensor_element_count(t);
    void *p = rn_tensor_data(t);
    for (size_t i = 0; i < n; i++) {
        double x = (double)i / (double)(n ? n : 1);
        switch (rn_tensor_element_type(t)) {
        case RN_F32:
            ((float *)p)[i] = (float)x;
            break;
        case RN_F64:
            ((double *)p)[i] = x;
            break;
        case RN_I64:
            ((int64_t *)p)[i] = (int64_t)(i % 256);
            break;
        case RN_I32:
            ((int32_t *)p)[i] = (int32_t)(i % 256);
            break;
        case RN_U8:
        case RN_I8:
            ((uint8_t *)p)[i] = (uint8_t)(i % 128);
            break;
        case RN_BOOL:
            ((uint8_t *)p)[i] = (uint8_t)(i & 1);
            break;
        default:
            break; /* other types stay zero */
        }
    }
}

/* The file given with -i for input `name` (or the unnamed one), or NULL. */
static const char *input_file(const options *o, const char *name, bool *named)
{
    const char *any = NULL;
    for (int k = 0; k < o->n_input_specs; k++) {
        const char *spec = o->input_specs[k];
        const char *eq = strchr(spec, '=');
        if (eq == NULL) {
            any = spec;
            continue;
        }
        if ((size_t)(eq - spec) == strlen(name) && strncmp(spec, name, strlen(name)) == 0) {
            *named = true;
            return eq + 1;
        }
    }
    *named = false;
    return any;
}

static void port_names(const rn_compiled_model *cm, const char **names, size_t max, char *list,
                       size_t list_size)
{
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < rn_compiled_model_input_count(cm) && i < max; i++) {
        rn_port p;
        rn_compiled_model_input(cm, i, &p);
        names[i] = p.name;
        if (used < list_size)
            used += (size_t)snprintf(list + used, list_size - used, "%s%s", i ? ", " : "", p.name);
    }
}

/* Checks that -i, -shape and -data_shape name only inputs that exist, and
 * that an unnamed -i FILE is given for a model with one input. */
static rn_status check_input_names(bench *b)
{
    const options *o = &b->o;
    const rn_compiled_model *cm = b->compiled;
    size_t n = rn_compiled_model_input_count(cm);
    const char *names[BENCH_SHAPE_MAX_INPUTS];
    char list[1024];
    port_names(cm, names, BENCH_SHAPE_MAX_INPUTS, list, sizeof list);
    if (n > BENCH_SHAPE_MAX_INPUTS)
        n = BENCH_SHAPE_MAX_INPUTS;
    const char *bad = bench_shape_unknown_name(&o->data_shape, names, n);
    if (bad != NULL)
        return rn_set_error(RN_NOT_FOUND,
                            "-data_shape names input '%s', which the model does not have "
                            "(inputs: %s)",
                            bad, list);
    int unnamed = 0;
    for (int k = 0; k < o->n_input_specs; k++) {
        const char *spec = o->input_specs[k];
        const char *eq = strchr(spec, '=');
        if (eq == NULL) {
            unnamed++;
            continue;
        }
        size_t len = (size_t)(eq - spec), i = 0;
        while (i < n && !(strlen(names[i]) == len && strncmp(names[i], spec, len) == 0))
            i++;
        if (i == n)
            return rn_set_error(RN_NOT_FOUND, "-i %s: the model has no input '%.*s' (inputs: %s)",
                                spec, (int)len, spec, list);
    }
    if (unnamed > 1 || (unnamed == 1 && n != 1))
        return rn_set_error(RN_INVALID_ARG,
                            "-i FILE without NAME= needs a model with one input (inputs: %s)",
                            list);
    return RN_OK;
}

/* Builds the data of input i: from its file, or generated with its
 * -data_shape or its static shape. */
static rn_status make_proto(bench *b, size_t i, bench_port_info *info)
{
    rn_port port;
    rn_status st = rn_compiled_model_input(b->compiled, i, &port);
    if (st != RN_OK)
        return st;
    bool named;
    const char *file = input_file(&b->o, port.name, &named);
    if (file != NULL) {
        if ((st = npy_read(file, &b->protos[i])) != RN_OK)
            return rn_wrap_error(st, "-i for input '%s': ", port.name);
        snprintf(info->source, sizeof info->source, "file %s", file);
        return RN_OK;
    }
    char have[128], want[128];
    bench_shape_format(&port.shape, have, sizeof have);
    const rn_partial_shape *shape = &port.shape;
    const rn_partial_shape *given = bench_shape_find(&b->o.data_shape, port.name);
    if (given != NULL) {
        bench_shape_format(given, want, sizeof want);
        if (!bench_shape_is_static(given))
            return rn_set_error(RN_INVALID_ARG,
                                "-data_shape for input '%s' is %s: every dim must be known",
                                port.name, want);
        bool fits = port.shape.rank < 0 || port.shape.rank == given->rank;
        for (int d = 0; fits && port.shape.rank >= 0 && d < given->rank; d++)
            fits = port.shape.dims[d] < 0 || port.shape.dims[d] == given->dims[d];
        if (!fits)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "-data_shape %s does not fit input '%s' of shape %s", want,
                                port.name, have);
        shape = given;
    } else if (!bench_shape_is_static(&port.shape)) {
        return rn_set_error(RN_INVALID_ARG,
                            "input '%s' has the dynamic shape %s: give the data's shape with "
                            "-data_shape %s[...] or a file with -i %s=FILE.npy",
                            port.name, have, port.name, port.name);
    }
    rn_element_type type = port.element_type == RN_UNDEFINED ? RN_F32 : port.element_type;
    if (rn_element_type_size(type) == 0)
        return rn_set_error(RN_UNSUPPORTED, "input '%s': bench cannot generate %s data", port.name,
                            rn_element_type_name(type));
    int64_t dims[RN_MAX_RANK];
    for (int d = 0; d < shape->rank; d++)
        dims[d] = shape->dims[d];
    if ((st = rn_tensor_create(type, dims, (size_t)shape->rank, &b->protos[i])) != RN_OK)
        return rn_wrap_error(st, "input '%s': ", port.name);
    fill_deterministic(b->protos[i]);
    snprintf(info->source, sizeof info->source, "generated (deterministic)");
    return RN_OK;
}

static void tensor_shape(const rn_tensor *t, char *buf, size_t size)
{
    rn_partial_shape s = {.rank = (int)rn_tensor_rank(t)};
    for (size_t d = 0; d < rn_tensor_rank(t) && d < RN_MAX_RANK; d++)
        s.dims[d] = rn_tensor_dims(t)[d];
    bench_shape_format(&s, buf, size);
}

/* Creates the requests and gives each its own copy of every input. */
static rn_status prepare_requests(bench *b)
{
    rn_status st;
    b->n_inputs = rn_compiled_model_input_count(b->compiled);
    b->protos = calloc(b->n_inputs + 1, sizeof *b->protos);
    b->report.inputs = calloc(b->n_inputs + 1, sizeof *b->report.inputs);
    b->requests = calloc(b->n_requests, sizeof *b->requests);
    b->copies = calloc(b->n_requests * b->n_inputs + 1, sizeof *b->copies);
    if (!b->protos || !b->report.inputs || !b->requests || !b->copies)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    if ((st = check_input_names(b)) != RN_OK)
        return st;
    for (size_t i = 0; i < b->n_inputs; i++) {
        bench_port_info *info = &b->report.inputs[i];
        if ((st = make_proto(b, i, info)) != RN_OK)
            return st;
        b->report.n_inputs = i + 1;
        rn_port port;
        rn_compiled_model_input(b->compiled, i, &port);
        snprintf(info->name, sizeof info->name, "%s", port.name);
        snprintf(info->type, sizeof info->type, "%s",
                 rn_element_type_name(rn_tensor_element_type(b->protos[i])));
        tensor_shape(b->protos[i], info->shape, sizeof info->shape);
        printf("[ INFO ] Input %s (%s) %s: %s\n", info->name, info->type, info->shape,
               info->source);
    }
    /* The batch is the first dim of a 4-D first input (NCHW or NHWC, as
     * benchmark_app assumes without layout information); 1 otherwise. */
    b->report.batch = 1;
    if (b->n_inputs > 0 && rn_tensor_rank(b->protos[0]) == 4 && rn_tensor_dims(b->protos[0])[0] > 0)
        b->report.batch = (int)rn_tensor_dims(b->protos[0])[0];
    for (size_t r = 0; r < b->n_requests; r++) {
        if ((st = rn_compiled_model_create_infer_request(b->compiled, &b->requests[r])) != RN_OK)
            return rn_wrap_error(st, "creating infer request %zu: ", r);
        for (size_t i = 0; i < b->n_inputs; i++) {
            const rn_tensor *p = b->protos[i];
            rn_tensor **copy = &b->copies[r * b->n_inputs + i];
            st = rn_tensor_create(rn_tensor_element_type(p), rn_tensor_dims(p), rn_tensor_rank(p),
                                  copy);
            if (st != RN_OK)
                return st;
            memcpy(rn_tensor_data(*copy), rn_tensor_data(p), rn_tensor_byte_size(p));
            if ((st = rn_infer_request_set_input_tensor(b->requests[r], i, *copy)) != RN_OK)
                return st;
        }
    }
    return RN_OK;
}

/* ---- steps ---- */

static rn_status read_model(bench *b)
{
    options *o = &b->o;
    bench_report *r = &b->report;
    double t0 = bench_now_ms();
    rn_status st;
    if (r->is_blob) {
        if ((st = bench_cli_read_file(o->model, &b->blob, &b->blob_size)) != RN_OK)
            return st;
        r->read_ms = bench_now_ms() - t0;
        printf("[ INFO ] Read compiled blob %s (%zu bytes) in %.2f ms\n", o->model, b->blob_size,
               r->read_ms);
        return RN_OK;
    }
    if ((st = rn_core_read_model(b->core, o->model, &b->model)) != RN_OK)
        return st;
    r->read_ms = bench_now_ms() - t0;
    printf("[ INFO ] Read model took %.2f ms\n", r->read_ms);
    printf("[ INFO ] Model %s: %zu inputs, %zu outputs\n", rn_model_name(b->model),
           rn_model_input_count(b->model), rn_model_output_count(b->model));
    for (size_t i = 0; i < rn_model_input_count(b->model); i++) {
        rn_port p;
        char s[128];
        rn_model_input(b->model, i, &p);
        bench_shape_format(&p.shape, s, sizeof s);
        printf("[ INFO ]    input  %s (%s) %s\n", p.name, rn_element_type_name(p.element_type), s);
    }
    for (size_t i = 0; i < rn_model_output_count(b->model); i++) {
        rn_port p;
        char s[128];
        rn_model_output(b->model, i, &p);
        bench_shape_format(&p.shape, s, sizeof s);
        printf("[ INFO ]    output %s (%s) %s\n", p.name, rn_element_type_name(p.element_type), s);
    }
    return RN_OK;
}

static rn_status reshape(bench *b)
{
    const options *o = &b->o;
    if (o->shape.n == 0) {
        printf("[ INFO ] No -shape: the model keeps its shapes\n");
        return RN_OK;
    }
    if (b->report.is_blob)
        return rn_set_error(RN_INVALID_ARG, "-shape applies to models, not to compiled blobs "
                                            "(give -shape to compile instead)");
    size_t n = rn_model_input_count(b->model);
    if (n > BENCH_SHAPE_MAX_INPUTS)
        n = BENCH_SHAPE_MAX_INPUTS;
    /* Copies: a reshape replaces the model's graph, and with it the port
     * names read before it. */
    static char storage[BENCH_SHAPE_MAX_INPUTS][256];
    const char *names[BENCH_SHAPE_MAX_INPUTS];
    char list[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        rn_port p;
        rn_model_input(b->model, i, &p);
        snprintf(storage[i], sizeof storage[i], "%s", p.name);
        names[i] = storage[i];
        used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%s",
                                 i ? ", " : "", p.name);
    }
    const char *bad = bench_shape_unknown_name(&o->shape, names, n);
    if (bad != NULL)
        return rn_set_error(RN_NOT_FOUND,
                            "-shape names input '%s', which the model does not have (inputs: %s)",
                            bad, list);
    for (size_t i = 0; i < n; i++) {
        const rn_partial_shape *s = bench_shape_find(&o->shape, names[i]);
        if (s == NULL)
            continue;
        char text[128];
        bench_shape_format(s, text, sizeof text);
        rn_status st = rn_model_reshape(b->model, names[i], s);
        if (st != RN_OK)
            return rn_wrap_error(st, "-shape %s for input '%s': ", text, names[i]);
        printf("[ INFO ] Reshaped input %s to %s\n", names[i], text);
    }
    return RN_OK;
}

/* The compile-time properties the flags ask for. */
static size_t compile_properties(const options *o, rn_property *props, char *num_requests,
                                 size_t num_requests_size)
{
    size_t n = 0;
    if (strcasecmp(o->hint, "none") != 0) {
        props[n++] = (rn_property){
            "PERFORMANCE_HINT", strcasecmp(o->hint, "latency") == 0      ? "LATENCY"
                                : strcasecmp(o->hint, "throughput") == 0 ? "THROUGHPUT"
                                                                         : "CUMULATIVE_THROUGHPUT"};
        if (o->nireq > 0 && strcasecmp(o->api, "async") == 0) {
            snprintf(num_requests, num_requests_size, "%lld", o->nireq);
            props[n++] = (rn_property){"PERFORMANCE_HINT_NUM_REQUESTS", num_requests};
        }
    }
    if (o->nstreams != NULL)
        props[n++] = (rn_property){"NUM_STREAMS", o->nstreams};
    if (o->nthreads != NULL)
        props[n++] = (rn_property){"INFERENCE_NUM_THREADS", o->nthreads};
    if (o->infer_precision != NULL)
        props[n++] = (rn_property){"INFERENCE_PRECISION_HINT", o->infer_precision};
    if (counters_wanted(o))
        props[n++] = (rn_property){"ENABLE_PROFILING", "YES"};
    if (o->trace != NULL)
        props[n++] = (rn_property){"ENABLE_TRACE", "YES"};
    for (int i = 0; i < o->user_props.n; i++)
        props[n++] = (rn_property){o->user_props.kv[i][0], o->user_props.kv[i][1]};
    return n;
}

/* Step 3: the compile-time properties, printed. */
static void configure(bench *b)
{
    b->n_props = compile_properties(&b->o, b->props, b->num_requests, sizeof b->num_requests);
    for (size_t i = 0; i < b->n_props; i++)
        printf("[ INFO ]    %s=%s\n", b->props[i].key, b->props[i].value);
    if (b->n_props == 0)
        printf("[ INFO ]    (the device's defaults)\n");
}

static rn_status compile(bench *b)
{
    const options *o = &b->o;
    bench_report *r = &b->report;
    rn_status st;
    step(5, "Resizing model");
    if ((st = reshape(b)) != RN_OK)
        return st;
    step(6, r->is_blob ? "Importing the compiled blob" : "Compiling the model for the device");
    double t0 = bench_now_ms();
    if (r->is_blob) {
        st = rn_core_import_model(b->core, b->blob, b->blob_size, o->device, b->props, b->n_props,
                                  &b->compiled);
        if (st != RN_OK)
            return rn_wrap_error(st, "importing %s on %s: ", o->model, o->device);
        r->compile_ms = bench_now_ms() - t0;
        printf("[ INFO ] Import model took %.2f ms\n", r->compile_ms);
    } else {
        st =
            rn_core_compile_model(b->core, b->model, o->device, b->props, b->n_props, &b->compiled);
        if (st != RN_OK)
            return st;
        r->compile_ms = bench_now_ms() - t0;
        printf("[ INFO ] Compile model took %.2f ms\n", r->compile_ms);
    }
    if (rn_compiled_model_get_property(b->compiled, "LOADED_FROM_CACHE", r->loaded_from_cache,
                                       sizeof r->loaded_from_cache) == RN_OK)
        printf("[ INFO ] LOADED_FROM_CACHE: %s\n", r->loaded_from_cache);
    else
        r->loaded_from_cache[0] = '\0';
    rn_clear_error();
    return RN_OK;
}

/* Reads back the compiled model's properties and settles nireq. */
static rn_status query_compiled(bench *b)
{
    static const char *const keys[] = {
        "NETWORK_NAME",          "EXECUTION_DEVICES",
        "NUM_STREAMS",           "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
        "PERFORMANCE_HINT",      "PERFORMANCE_HINT_NUM_REQUESTS",
        "INFERENCE_NUM_THREADS", "INFERENCE_PRECISION_HINT",
        "ENABLE_PROFILING",      "ENABLE_TRACE",
    };
    bench_report *r = &b->report;
    long long optimal = 0;
    printf("[ INFO ] Compiled model properties:\n");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && r->n_props < BENCH_MAX_PROPS; i++) {
        bench_kv *kv = &r->props[r->n_props];
        if (rn_compiled_model_get_property(b->compiled, keys[i], kv->value, sizeof kv->value) !=
            RN_OK)
            continue; /* a device need not report every key */
        snprintf(kv->key, sizeof kv->key, "%s", keys[i]);
        printf("[ INFO ]    %-34s %s\n", kv->key, kv->value);
        if (strcmp(keys[i], "OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 0)
            bench_cli_parse_ll(kv->value, 1, 4096, &optimal);
        r->n_props++;
    }
    rn_clear_error();
    const options *o = &b->o;
    bool async = strcasecmp(o->api, "async") == 0;
    if (!async) {
        if (o->nireq > 1)
            printf("[ WARNING ] -nireq %lld is ignored with -api sync: one request runs\n",
                   o->nireq);
        b->n_requests = 1;
    } else if (o->nireq > 0) {
        b->n_requests = (size_t)o->nireq;
    } else {
        b->n_requests = optimal > 0 ? (size_t)optimal : 1;
        printf("[ INFO ] -nireq 0: using OPTIMAL_NUMBER_OF_INFER_REQUESTS = %zu\n", b->n_requests);
    }
    r->nireq = (int)b->n_requests;
    return RN_OK;
}

static rn_status first_inference(bench *b)
{
    double t0 = bench_now_ms();
    rn_status st;
    if (strcasecmp(b->o.api, "async") == 0) {
        st = rn_infer_request_start_async(b->requests[0]);
        if (st == RN_OK)
            st = rn_infer_request_wait(b->requests[0]);
    } else {
        st = rn_infer_request_infer(b->requests[0]);
    }
    if (st != RN_OK)
        return rn_wrap_error(st, "first inference: ");
    b->report.first_infer_ms = bench_now_ms() - t0;
    printf("[ INFO ] First inference took %.2f ms (not counted)\n", b->report.first_infer_ms);
    return RN_OK;
}

static void limits_text(const options *o, char *buf, size_t size)
{
    if (o->niter > 0 && o->time_s > 0)
        snprintf(buf, size, "%lld iterations and %g s", o->niter, o->time_s);
    else if (o->niter > 0)
        snprintf(buf, size, "%lld iterations", o->niter);
    else
        snprintf(buf, size, "%g s", o->time_s);
}

static rn_status measure(bench *b)
{
    const options *o = &b->o;
    bool async = strcasecmp(o->api, "async") == 0;
    char limits[96], title[256];
    limits_text(o, limits, sizeof limits);
    snprintf(title, sizeof title, "Measuring performance (%s, %zu inference request%s, limits: %s)",
             async ? "inference started asynchronously" : "inference run synchronously",
             b->n_requests, b->n_requests == 1 ? "" : "s", limits);
    step(9, title);
    rn_status st = first_inference(b);
    if (st != RN_OK)
        return st;
    bench_run_config config = {
        .requests = b->requests,
        .n_requests = b->n_requests,
        .async = async,
        .niter = o->niter,
        .time_s = o->time_s,
        .counters = counters_wanted(o),
        .sample_limit = ((size_t)1 << 20) / b->n_requests,
        .progress = isatty(STDOUT_FILENO) ? BENCH_PROGRESS_BAR : BENCH_PROGRESS_LINES,
    };
    if (config.sample_limit < 4096)
        config.sample_limit = 4096;
    return bench_run_measure(&config, &b->result);
}

static rn_status summarize(bench *b)
{
    bench_report *r = &b->report;
    bench_run_result *res = &b->result;
    if (bench_samples_merge(res->samples, res->n, &r->samples) != 0 ||
        bench_latency_compute(&r->samples, &r->latency) != 0)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory for the statistics");
    r->duration_ms = r->samples.end_ms;
    r->throughput_fps =
        r->duration_ms > 0 ? (double)r->latency.count * (double)r->batch * 1e3 / r->duration_ms : 0;
    if (counters_wanted(&b->o)) {
        if (bench_counters_merge(res->counters, res->n, &b->merged) != 0 ||
            bench_layer_table_build(&b->merged, &r->table) != 0)
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory for the counters");
        r->have_counters = true;
    }
    if (strcasecmp(b->o.report_type, "detailed") == 0) {
        r->requests = calloc(res->n + 1, sizeof *r->requests);
        if (r->requests == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "out of memory for the report");
        r->n_requests = res->n;
        for (size_t i = 0; i < res->n; i++)
            if (bench_latency_compute(&res->samples[i], &r->requests[i].latency) != 0 ||
                bench_layer_table_build(&res->counters[i], &r->requests[i].table) != 0)
                return rn_set_error(RN_OUT_OF_MEMORY, "out of memory for the report");
    }
    return RN_OK;
}

static rn_status write_outputs(bench *b)
{
    const char *dir = b->o.out_dir;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return rn_set_error(RN_IO_ERROR, "-o %s: %s", dir, strerror(errno));
    for (size_t i = 0; i < rn_compiled_model_output_count(b->compiled); i++) {
        rn_port port;
        rn_tensor *t;
        rn_status st = rn_compiled_model_output(b->compiled, i, &port);
        if (st == RN_OK)
            st = rn_infer_request_get_output_tensor(b->requests[0], i, &t);
        if (st != RN_OK)
            return st;
        char safe[512], path[4096];
        snprintf(safe, sizeof safe, "%s", port.name);
        for (char *c = safe; *c; c++)
            if (*c == '/' || *c == ':' || *c == '\\')
                *c = '_';
        snprintf(path, sizeof path, "%s/%s.npy", dir, safe);
        if ((st = npy_write(path, t)) != RN_OK)
            return st;
        printf("[ INFO ] Output %s written to %s\n", port.name, path);
    }
    return RN_OK;
}

static void collect_outputs(bench *b)
{
    bench_report *r = &b->report;
    size_t n = rn_compiled_model_output_count(b->compiled);
    r->outputs = calloc(n + 1, sizeof *r->outputs);
    if (r->outputs == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        rn_port port;
        rn_tensor *t;
        if (rn_compiled_model_output(b->compiled, i, &port) != RN_OK)
            continue;
        bench_port_info *info = &r->outputs[r->n_outputs++];
        snprintf(info->name, sizeof info->name, "%s", port.name);
        snprintf(info->type, sizeof info->type, "%s", rn_element_type_name(port.element_type));
        if (rn_infer_request_get_output_tensor(b->requests[0], i, &t) == RN_OK)
            tensor_shape(t, info->shape, sizeof info->shape);
        else
            bench_shape_format(&port.shape, info->shape, sizeof info->shape);
    }
    rn_clear_error();
}

static rn_status report(bench *b)
{
    bench_report *r = &b->report;
    const options *o = &b->o;
    step(10, "Dumping statistics report");
    bench_report_print_results(r, stdout);
    if (r->have_counters && o->pc) {
        bench_report_print_table(&r->table, "Performance counters", stdout);
        for (size_t i = 0; i < r->n_requests; i++) {
            char title[64];
            snprintf(title, sizeof title, "Performance counters of request %zu", i);
            bench_report_print_table(&r->requests[i].table, title, stdout);
        }
    }
    collect_outputs(b);
    rn_status st;
    if (o->out_dir != NULL && (st = write_outputs(b)) != RN_OK)
        return st;
    if (o->trace != NULL) {
        if ((st = rn_compiled_model_write_trace(b->compiled, o->trace)) != RN_OK)
            return rn_wrap_error(st, "-trace %s: ", o->trace);
        printf("[ INFO ] Trace written to %s (open it in Perfetto or chrome://tracing)\n",
               o->trace);
    }
    if (o->json != NULL) {
        if ((st = bench_report_write_json(r, o->json)) != RN_OK)
            return rn_wrap_error(st, "-json: ");
        printf("[ INFO ] JSON report written to %s\n", o->json);
    }
    if (o->html != NULL) {
        if ((st = bench_report_write_html(r, o->html)) != RN_OK)
            return rn_wrap_error(st, "-html: ");
        printf("[ INFO ] HTML report written to %s\n", o->html);
    }
    return RN_OK;
}

static void fill_settings(bench *b, int argc, char **argv)
{
    const options *o = &b->o;
    bench_report *r = &b->report;
    bench_cli_command_line(argc, argv, r->command_line, sizeof r->command_line);
    snprintf(r->version, sizeof r->version, "%s", RN_VERSION_STRING);
    r->model_path = o->model;
    r->device = o->device;
    r->api = o->api;
    r->hint = o->hint;
    r->report_type = o->report_type;
    r->nstreams = o->nstreams;
    r->nthreads = o->nthreads;
    r->infer_precision = o->infer_precision;
    r->cache_dir = o->cache_dir;
    r->shape = o->shape_text;
    r->data_shape = o->data_shape_text;
    r->json_path = o->json;
    r->html_path = o->html;
    r->trace_path = o->trace;
    r->output_dir = o->out_dir;
    r->niter = o->niter;
    r->time_s = o->time_s;
    r->pc = o->pc;
}

/* Picks the device and checks it, and sets the core's CACHE_DIR. */
static rn_status setup_device(bench *b)
{
    options *o = &b->o;
    bench_report *r = &b->report;
    static char blob_device[64];
    if (o->device == NULL && r->is_blob) {
        /* The blob names its device in its header. */
        unsigned char head[256];
        FILE *f = fopen(o->model, "rb");
        size_t size = f != NULL ? fread(head, 1, sizeof head, f) : 0;
        if (f != NULL)
            fclose(f);
        if (bench_cli_blob_device(head, size, blob_device, sizeof blob_device))
            o->device = blob_device;
    }
    if (o->device == NULL) {
        o->device = bench_cli_best_device(b->core);
        if (o->device == NULL)
            return rn_set_error(RN_NOT_FOUND, "no device is available");
        printf("[ INFO ] No -d: using the best available device, %s\n", o->device);
    }
    rn_status st = bench_cli_check_device(b->core, o->device);
    if (st != RN_OK)
        return st;
    r->device = o->device;
    if (rn_core_get_property(b->core, o->device, "FULL_DEVICE_NAME", r->full_device_name,
                             sizeof r->full_device_name) != RN_OK)
        r->full_device_name[0] = '\0';
    rn_clear_error();
    printf("[ INFO ] Device %s%s%s\n", o->device, r->full_device_name[0] ? ": " : "",
           r->full_device_name);
    if (o->cache_dir != NULL) {
        rn_property cache = {"CACHE_DIR", o->cache_dir};
        if ((st = rn_core_set_property(b->core, NULL, &cache, 1)) != RN_OK)
            return rn_wrap_error(st, "-cache_dir: ");
    }
    return RN_OK;
}

static void bench_free(bench *b)
{
    for (size_t r = 0; b->requests != NULL && r < b->n_requests; r++)
        rn_infer_request_free(b->requests[r]);
    for (size_t i = 0; b->copies != NULL && i < b->n_requests * b->n_inputs; i++)
        rn_tensor_free(b->copies[i]);
    for (size_t i = 0; b->protos != NULL && i < b->n_inputs; i++)
        rn_tensor_free(b->protos[i]);
    free(b->requests);
    free(b->copies);
    free(b->protos);
    bench_run_result_free(&b->result);
    bench_counters_free(&b->merged);
    bench_layer_table_free(&b->report.table);
    for (size_t i = 0; b->report.requests != NULL && i < b->report.n_requests; i++)
        bench_layer_table_free(&b->report.requests[i].table);
    free(b->report.requests);
    bench_samples_free(&b->report.samples);
    free(b->report.inputs);
    free(b->report.outputs);
    rn_compiled_model_free(b->compiled);
    rn_model_free(b->model);
    free(b->blob);
    rn_core_free(b->core);
}

int main(int argc, char **argv)
{
    static bench b;
    bench_cli_enter_user_dir();
    int rc = parse_flags(argc, argv, &b.o);
    if (rc >= 0)
        return rc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    step(1, "Parsing and validating input arguments");
    fill_settings(&b, argc, argv);
    if (access(b.o.model, R_OK) != 0) {
        fprintf(stderr, "[ ERROR ] model %s: %s\n", b.o.model, strerror(errno));
        return 1;
    }
    b.report.is_blob = bench_cli_is_blob_file(b.o.model);
    step(2, "Loading runnel");
    printf("[ INFO ] runnel %s\n", b.report.version);
    rn_status st = bench_cli_core(b.o.plugins, &b.core);
    if (st == RN_OK)
        st = setup_device(&b);
    if (st == RN_OK) {
        step(3, "Setting device configuration");
        configure(&b);
        step(4, b.report.is_blob ? "Reading the compiled blob" : "Reading the model");
        st = read_model(&b);
    }
    if (st == RN_OK)
        st = compile(&b);
    if (st == RN_OK) {
        step(7, "Querying optimal runtime parameters");
        st = query_compiled(&b);
    }
    if (st == RN_OK) {
        step(8, "Creating infer requests and preparing input tensors");
        st = prepare_requests(&b);
    }
    if (st == RN_OK)
        st = measure(&b);
    if (st == RN_OK)
        st = summarize(&b);
    if (st == RN_OK)
        st = report(&b);
    if (st != RN_OK) {
        fflush(stdout);
        fprintf(stderr, "[ ERROR ] %s\n",
                rn_last_error()[0] ? rn_last_error() : rn_status_message(st));
    }
    bench_free(&b);
    return st == RN_OK ? 0 : 1;
}
