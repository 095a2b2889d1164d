/* Profiling on the GPU device from OpenCL event timestamps
 * (plugins/gpu/profile.c): with ENABLE_PROFILING=YES every executed node
 * that runs device commands reports a time > 0, taken from its commands'
 * CL_PROFILING_COMMAND_START/END, and the node times add up to no more than
 * the wall time of the run (the queue is in order: the commands do not
 * overlap). Skips, saying why, where the GPU device cannot start. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "runnel/runnel.h"

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

typedef struct prof_case {
    char name[64];
    char op[32]; /* the op whose node must be listed */
} prof_case;

ParameterizedTestParameters(gpu_profiling, node_times_come_from_the_device)
{
    static prof_case cases[] = {
        /* im2col, a CLBlast GEMM (a span), bias */
        {"test_conv_with_strides_and_asymmetric_padding", "Conv"},
        /* CLBlast GEMM, then a broadcasting kernel for C */
        {"test_gemm_all_attributes", "Gemm"},
        {"test_sigmoid", "Sigmoid"},
        {"test_softmax_axis_1", "Softmax"},
    };
    return cr_make_param_array(prof_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(prof_case *c, gpu_profiling, node_times_come_from_the_device)
{
    rn_core *core = gpu_core();
    char path[512];
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, c->name);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s", rn_last_error());
    rn_property prof = {"ENABLE_PROFILING", "YES"};
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", &prof, 1, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    gpu_fill_inputs(cm, r);
    /* Twice: the second run's times are its own (the first's events are
     * gone), and the kernels are already generated. */
    for (int run = 0; run < 2; run++) {
        uint64_t t0 = now_us();
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
        uint64_t wall = now_us() - t0;
        const rn_profiling_info *info;
        size_t n;
        cr_assert_eq(rn_infer_request_profiling_info(r, &info, &n), RN_OK, "%s", rn_last_error());
        uint64_t sum = 0;
        int kernels = 0, listed = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(info[i].node_type, "Stage") == 0)
                continue; /* the pipeline's stages, host-timed, overlap the nodes */
            listed += strcmp(info[i].node_type, c->op) == 0;
            if (info[i].status != RN_NODE_EXECUTED)
                continue;
            sum += info[i].real_time_us;
            /* Uploads and downloads (Reorder) report their copy command's
             * time, which may round to 0 for a few bytes; every other
             * executed node ran kernels. */
            if (strcmp(info[i].node_type, "Reorder") == 0)
                continue;
            kernels++;
            cr_expect_gt(info[i].real_time_us, 0, "%s: node '%s' (%s) ran but reports 0 us",
                         c->name, info[i].node_name, info[i].node_type);
        }
        cr_assert_eq(listed, 1, "%s: the %s node is listed once", c->name, c->op);
        cr_assert_gt(kernels, 0, "%s: no executed device node", c->name);
        cr_assert_leq(sum, wall, "%s: the nodes' times add up to %llu us, the run took %llu us",
                      c->name, (unsigned long long)sum, (unsigned long long)wall);
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(gpu_profiling, profiling_off_reads_as_an_error_and_runs_still_work)
{
    rn_core *core = gpu_core();
    char path[512];
    snprintf(path, sizeof path, "%s/test_sigmoid/model.onnx", NODE_DIR);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s", rn_last_error());
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    gpu_fill_inputs(cm, r);
    for (int run = 0; run < 3; run++)
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    const rn_profiling_info *info;
    size_t n;
    cr_assert_neq(rn_infer_request_profiling_info(r, &info, &n), RN_OK);
    cr_assert(strstr(rn_last_error(), "ENABLE_PROFILING") != NULL, "%s", rn_last_error());
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

/* The "ts" of every event of category `cat` in a trace file's text:
 * their count, and the least start and greatest end (ts + dur). */
static int scan_events(const char *text, const char *cat, double *first, double *last)
{
    char key[64];
    snprintf(key, sizeof key, "\"cat\":\"%s\"", cat);
    int n = 0;
    *first = 1e300;
    *last = -1e300;
    for (const char *p = strstr(text, key); p != NULL; p = strstr(p + 1, key)) {
        double ts, dur;
        const char *t = strstr(p, "\"ts\":"), *d = strstr(p, "\"dur\":");
        cr_assert(t != NULL && d != NULL && sscanf(t, "\"ts\":%lf", &ts) == 1 &&
                      sscanf(d, "\"dur\":%lf", &dur) == 1,
                  "an event of category %s without ts or dur", cat);
        cr_assert_geq(dur, 0.0);
        *first = ts < *first ? ts : *first;
        *last = ts + dur > *last ? ts + dur : *last;
        n++;
    }
    return n;
}

/* With ENABLE_TRACE, the trace holds the device's commands after the host
 * tasks: for each run of each request, test_add's two uploads, its Add and
 * its download, tagged with the request's arena and the stage, on the
 * trace's own time axis (within the span of the host tasks that enqueued
 * and waited for them). */
Test(gpu_profiling, the_trace_holds_the_devices_commands)
{
    rn_core *core = gpu_core();
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &model), RN_OK, "%s",
                 rn_last_error());
    rn_property trace = {"ENABLE_TRACE", "YES"};
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "GPU", &trace, 1, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *r[2];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r[k]), RN_OK);
        gpu_fill_inputs(cm, r[k]);
    }
    for (int run = 0; run < 3; run++) {
        for (int k = 0; k < 2; k++)
            cr_assert_eq(rn_infer_request_start_async(r[k]), RN_OK, "%s", rn_last_error());
        for (int k = 0; k < 2; k++)
            cr_assert_eq(rn_infer_request_wait(r[k]), RN_OK, "%s", rn_last_error());
    }
    char path[] = "/tmp/gpu_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(rn_compiled_model_write_trace(cm, path), RN_OK, "%s", rn_last_error());
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *text = calloc((size_t)size + 1, 1);
    cr_assert_eq(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    unlink(path);
    cr_assert(strstr(text, "\"GPU device (OpenCL event timestamps)\"") != NULL);
    cr_assert(size > 4 && strcmp(text + size - 4, "\n]}\n") == 0, "the JSON is not closed");
    double host_first, host_last, dev_first, dev_last;
    int n_host = scan_events(text, "node", &host_first, &host_last);
    int n_dev = scan_events(text, "device", &dev_first, &dev_last);
    cr_assert_gt(n_host, 0);
    cr_assert_eq(n_dev, 2 * 3 * 4, "%d device commands", n_dev);
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 3; s++) {
            static const char *const stages[] = {"upload", "execute", "download"};
            char want[64];
            snprintf(want, sizeof want, "\"request\":%d,\"stage\":\"%s\"", k, stages[s]);
            cr_assert(strstr(text, want) != NULL, "no %s", want);
        }
    /* The device's clock moved onto the trace's: its commands ran while the
     * host tasks of the runs did (10 ms of slack for the offset's
     * measurement on a loaded machine; an unconverted device clock would be
     * off by the process's age or more). */
    double first_ok = host_first - 10000.0, last_ok = host_last + 10000.0;
    free(text);
    cr_assert_geq(dev_first, first_ok, "device %.1f, host %.1f", dev_first, first_ok);
    cr_assert_leq(dev_last, last_ok, "device %.1f, host %.1f", dev_last, last_ok);
    for (int k = 0; k < 2; k++)
        rn_infer_request_free(r[k]);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}
