/* run: read a model, compile it for a device, run it once and report.
 *
 *   bazel run //tools:run -- -m MODEL.onnx [-d REF] [-i NAME=FILE.npy ...] [-o DIR]
 *                            [-niter N] [-nthreads N] [-pc]
 *                            [-infer_precision TYPE] [-p KEY=VALUE ...]
 *
 * Inputs not given with -i are filled deterministically (floats with
 * arange(n)/n, integers with i mod 256, booleans alternating). Prints each
 * output's shape and, for float outputs, the top-5 indices; with -o writes
 * every output as DIR/<name>.npy. -infer_precision and -p set compile-time
 * properties as tools/bench does (INFERENCE_PRECISION_HINT, any KEY=VALUE),
 * so that one model can be checked at f32 and at bf16. Uses the public API
 * only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runnel/runnel.h"
#include "tools/bench_cli.h"
#include "tools/npy.h"

#define MAX_INPUT_FILES 64

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int fail(const char *what, rn_status st)
{
    fprintf(stderr, "run: %s: %s: %s\n", what, rn_status_name(st), rn_last_error());
    return 1;
}

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

static void shape_str(const rn_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < rn_tensor_rank(t) && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "," : "",
                                 (long long)rn_tensor_dims(t)[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

static void print_top5(const rn_tensor *t)
{
    if (rn_tensor_element_type(t) != RN_F32)
        return;
    const float *x = rn_tensor_data(t);
    size_t n = rn_tensor_element_count(t);
    size_t top[5];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pos = k < 5 ? k++ : 5;
        if (pos == 5) {
            if (x[i] <= x[top[4]])
                continue;
            pos = 4;
        }
        while (pos > 0 && x[top[pos - 1]] < x[i]) {
            top[pos] = top[pos - 1];
            pos--;
        }
        top[pos] = i;
    }
    printf("  top-%zu:", k);
    for (size_t i = 0; i < k; i++)
        printf(" %zu (%.6g)", top[i], (double)x[top[i]]);
    printf("\n");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool has_property(const bench_cli_props *props, const char *key)
{
    for (int k = 0; k < props->n; k++)
        if (strcmp(props->kv[k][0], key) == 0)
            return true;
    return false;
}

static void usage(void)
{
    fprintf(stderr, "usage: run -m MODEL.onnx [-d DEVICE] [-i NAME=FILE.npy ...] [-o DIR] "
                    "[-niter N] [-nthreads N] [-pc]\n"
                    "           [-infer_precision TYPE] [-p KEY=VALUE ...]\n"
                    "  -infer_precision  INFERENCE_PRECISION_HINT (f32, bf16, f16, ...)\n"
                    "  -p KEY=VALUE      any compile-time property (repeatable)\n");
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *device = "REF", *out_dir = NULL;
    const char *input_specs[MAX_INPUT_FILES];
    int n_input_specs = 0, niter = 1;
    const char *nthreads = NULL;
    int profile = 0;
    bench_cli_props user_props = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-m") == 0 && i + 1 < argc)
            model_path = argv[++i];
        else if (strcmp(a, "-d") == 0 && i + 1 < argc)
            device = argv[++i];
        else if (strcmp(a, "-o") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else if (strcmp(a, "-niter") == 0 && i + 1 < argc)
            niter = atoi(argv[++i]);
        else if (strcmp(a, "-nthreads") == 0 && i + 1 < argc)
            nthreads = argv[++i];
        else if (strcmp(a, "-pc") == 0)
            profile = 1;
        else if (strcmp(a, "-i") == 0 && i + 1 < argc && n_input_specs < MAX_INPUT_FILES)
            input_specs[n_input_specs++] = argv[++i];
        else if (strcmp(a, "-infer_precision") == 0 && i + 1 < argc) {
            if (argv[i + 1][0] == '\0') {
                fprintf(stderr, "run: -infer_precision: expected a precision (f32, bf16, ...)\n");
                return 2;
            }
            char kv[300];
            snprintf(kv, sizeof kv, "INFERENCE_PRECISION_HINT=%s", argv[++i]);
            if (bench_cli_add_property(&user_props, "-infer_precision", kv) != RN_OK) {
                fprintf(stderr, "run: %s\n", rn_last_error());
                return 2;
            }
        } else if (strcmp(a, "-p") == 0 && i + 1 < argc) {
            if (bench_cli_add_property(&user_props, "-p", argv[++i]) != RN_OK) {
                fprintf(stderr, "run: %s\n", rn_last_error());
                usage();
                return 2;
            }
        } else {
            fprintf(stderr, "run: unknown or incomplete flag '%s'\n", a);
            usage();
            return 2;
        }
    }
    if (model_path == NULL || niter < 1) {
        usage();
        return 2;
    }
    rn_core *core;
    rn_model *model = NULL;
    rn_compiled_model *cm = NULL;
    rn_infer_request *req = NULL;
    rn_tensor *loaded[MAX_INPUT_FILES] = {0};
    double *times = NULL;
    int rc = 1;
    rn_status st = rn_core_create(&core);
    if (st != RN_OK)
        return fail("core", st);
    double t0 = now_ms();
    if ((st = rn_core_read_model(core, model_path, &model)) != RN_OK) {
        rc = fail("read", st);
        goto done;
    }
    for (size_t i = 0; i < rn_model_warning_count(model); i++)
        fprintf(stderr, "warning: %s\n", rn_model_warning(model, i));
    double t1 = now_ms();
    /* run's own settings, then -infer_precision and -p in order: a key given
     * with -p replaces run's setting of it */
    rn_property props[2 + BENCH_CLI_MAX_PROPS];
    size_t n_props = 0;
    if (!has_property(&user_props, "ENABLE_PROFILING"))
        props[n_props++] = (rn_property){"ENABLE_PROFILING", profile ? "YES" : "NO"};
    if (!has_property(&user_props, "INFERENCE_NUM_THREADS"))
        props[n_props++] = (rn_property){"INFERENCE_NUM_THREADS", nthreads ? nthreads : "0"};
    for (int k = 0; k < user_props.n; k++)
        props[n_props++] = (rn_property){user_props.kv[k][0], user_props.kv[k][1]};
    if ((st = rn_core_compile_model(core, model, device, props, n_props, &cm)) != RN_OK) {
        rc = fail("compile", st);
        goto done;
    }
    double t2 = now_ms();
    char profiling[8];
    if (rn_compiled_model_get_property(cm, "ENABLE_PROFILING", profiling, sizeof profiling) ==
            RN_OK &&
        strcmp(profiling, "YES") == 0)
        profile = 1; /* -p ENABLE_PROFILING=YES as -pc */
    if ((st = rn_compiled_model_create_infer_request(cm, &req)) != RN_OK) {
        rc = fail("infer request", st);
        goto done;
    }
    printf("model   %s (%zu inputs, %zu outputs)\n", model_path, rn_compiled_model_input_count(cm),
           rn_compiled_model_output_count(cm));
    printf("device  %s\n", rn_compiled_model_device(cm));
    for (int k = 0; k < user_props.n; k++)
        printf("property %s=%s\n", user_props.kv[k][0], user_props.kv[k][1]);
    char precision[64];
    if (rn_compiled_model_get_property(cm, "INFERENCE_PRECISION_HINT", precision,
                                       sizeof precision) == RN_OK)
        printf("precision %s\n", precision);
    printf("read    %.1f ms\ncompile %.1f ms\n", t1 - t0, t2 - t1);
    for (int k = 0; k < n_input_specs; k++) {
        char name[512];
        const char *eq = strchr(input_specs[k], '=');
        if (eq == NULL || eq == input_specs[k] || (size_t)(eq - input_specs[k]) >= sizeof name) {
            fprintf(stderr, "run: -i expects NAME=FILE.npy, got '%s'\n", input_specs[k]);
            rc = 2;
            goto done;
        }
        snprintf(name, sizeof name, "%.*s", (int)(eq - input_specs[k]), input_specs[k]);
        if ((st = npy_read(eq + 1, &loaded[k])) != RN_OK) {
            rc = fail("input file", st);
            goto done;
        }
        if ((st = rn_infer_request_set_tensor(req, name, loaded[k])) != RN_OK) {
            rc = fail("set input", st);
            goto done;
        }
    }
    for (size_t i = 0; i < rn_compiled_model_input_count(cm); i++) {
        rn_port port;
        rn_compiled_model_input(cm, i, &port);
        int given = 0;
        for (int k = 0; k < n_input_specs; k++)
            given |= strncmp(input_specs[k], port.name, strlen(port.name)) == 0 &&
                     input_specs[k][strlen(port.name)] == '=';
        rn_tensor *t;
        rn_infer_request_get_input_tensor(req, i, &t);
        if (!given)
            fill_deterministic(t);
        char s[128];
        shape_str(t, s, sizeof s);
        printf("input   %s %s %s%s\n", port.name, rn_element_type_name(rn_tensor_element_type(t)),
               s, given ? "" : " (filled: arange(n)/n)");
    }
    times = malloc((size_t)niter * sizeof *times);
    if (times == NULL) {
        fprintf(stderr, "run: out of memory\n");
        goto done;
    }
    double total = 0;
    for (int it = 0; it < niter; it++) {
        double a = now_ms();
        if ((st = rn_infer_request_infer(req)) != RN_OK) {
            rc = fail("infer", st);
            goto done;
        }
        times[it] = now_ms() - a;
        total += times[it];
    }
    qsort(times, (size_t)niter, sizeof *times, cmp_double);
    printf("infer   %.1f ms", total / niter);
    if (niter > 1)
        printf(" average over %d, median %.2f ms, best %.1f ms", niter, times[niter / 2], times[0]);
    printf("\n");
    if (out_dir != NULL && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "run: cannot create %s: %s\n", out_dir, strerror(errno));
        goto done;
    }
    for (size_t o = 0; o < rn_compiled_model_output_count(cm); o++) {
        rn_port port;
        rn_compiled_model_output(cm, o, &port);
        rn_tensor *t;
        rn_infer_request_get_output_tensor(req, o, &t);
        char s[128];
        shape_str(t, s, sizeof s);
        printf("output  %s %s %s\n", port.name, rn_element_type_name(rn_tensor_element_type(t)), s);
        print_top5(t);
        if (out_dir != NULL) {
            char path[4096], safe[512];
            snprintf(safe, sizeof safe, "%s", port.name);
            for (char *c = safe; *c; c++)
                if (*c == '/' || *c == ':')
                    *c = '_';
            snprintf(path, sizeof path, "%s/%s.npy", out_dir, safe);
            if ((st = npy_write(path, t)) != RN_OK) {
                rc = fail("write output", st);
                goto done;
            }
            printf("  wrote %s\n", path);
        }
    }
    if (profile) {
        const rn_profiling_info *info;
        size_t n;
        if (rn_infer_request_profiling_info(req, &info, &n) == RN_OK) {
            printf("\n%-40s %-20s %-8s %10s\n", "node", "type", "impl", "time (us)");
            for (size_t i = 0; i < n; i++)
                printf("%-40.40s %-20s %-8s %10llu\n", info[i].node_name, info[i].node_type,
                       info[i].exec_type, (unsigned long long)info[i].real_time_us);
        }
    }
    rc = 0;
done:
    free(times);
    rn_infer_request_free(req);
    for (int k = 0; k < n_input_specs; k++)
        rn_tensor_free(loaded[k]);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    return rc;
}
