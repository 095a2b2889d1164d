/* bench/gpu: what a remote input saves (not a test).
 *
 * Compiles a model on GPU in a context over an OpenCL context and queue of
 * this program's own (CONTEXT_TYPE=OCL, OCL_CONTEXT, OCL_QUEUE) and times a
 * synchronous infer (the median of --runs) three ways on the same compiled
 * model and request, interleaved run by run: every input in a host tensor
 * (uploaded by the run), in the program's cl_mem (a remote tensor: one
 * device-to-device copy), and inputs and outputs both in cl_mem. The peer
 * is the host-tensor run, in the same process; it prints the medians, the
 * ratios and the bytes the compiled model's GPU_BYTES_UPLOADED counted per
 * run.
 *
 *   bazel run //bench/gpu:bench_remote -- MODEL.onnx [--runs N]
 */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runnel/runnel.h"

#define GPU_SO "plugins/gpu/libgpu.so"
#define MAX_IO 8

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_remote: %s: %s\n", what, rn_last_error());
    exit(1);
}

static unsigned long long counter(const rn_compiled_model *cm)
{
    char buf[64];
    if (rn_compiled_model_get_property(cm, "GPU_BYTES_UPLOADED", buf, sizeof buf) != RN_OK)
        die("GPU_BYTES_UPLOADED");
    return strtoull(buf, NULL, 10);
}

typedef struct bindings {
    size_t n_in, n_out;
    rn_tensor **in, **out; /* out NULL: the request's own outputs */
} bindings;

static void bind(rn_infer_request *r, const bindings *b, rn_tensor **own_out)
{
    for (size_t i = 0; i < b->n_in; i++)
        if (rn_infer_request_set_input_tensor(r, i, b->in[i]) != RN_OK)
            die("set_input_tensor");
    for (size_t o = 0; o < b->n_out; o++)
        if (rn_infer_request_set_output_tensor(r, o, b->out != NULL ? b->out[o] : own_out[o]) !=
            RN_OK)
            die("set_output_tensor");
}

/* One timed infer (ms) with bindings b; *uploaded += the bytes it uploaded. */
static double time_run(rn_infer_request *r, const rn_compiled_model *cm, const bindings *b,
                       rn_tensor **own_out, unsigned long long *uploaded)
{
    bind(r, b, own_out);
    unsigned long long up0 = counter(cm);
    double t0 = now_s();
    if (rn_infer_request_infer(r) != RN_OK)
        die("infer");
    double ms = (now_s() - t0) * 1e3;
    *uploaded += counter(cm) - up0;
    return ms;
}

/* A remote tensor over a new cl_mem of the port's size, or NULL. */
static rn_tensor *remote_port(rn_remote_context *ctx, cl_context cl, const rn_port *p, cl_mem *mem)
{
    size_t n = 4;
    for (int d = 0; d < p->shape.rank; d++)
        n *= (size_t)p->shape.dims[d];
    cl_int err;
    *mem = clCreateBuffer(cl, CL_MEM_READ_WRITE, n, NULL, &err);
    char h[32];
    snprintf(h, sizeof h, "%p", (void *)*mem);
    rn_property params[] = {{"SHARED_MEM_TYPE", "OCL_BUFFER"}, {"MEM_HANDLE", h}};
    rn_tensor *t;
    if (*mem == NULL ||
        rn_remote_context_create_tensor(ctx, p->element_type, p->shape.dims, (size_t)p->shape.rank,
                                        params, 2, &t) != RN_OK)
        die("a remote tensor");
    return t;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int runs = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else
            path = argv[i];
    }
    if (path == NULL || runs < 1) {
        fprintf(stderr, "usage: bench_remote MODEL.onnx [--runs N]\n");
        return 2;
    }
    rn_core *core;
    if (rn_core_create(&core) != RN_OK || rn_core_load_plugin(core, NULL, GPU_SO) != RN_OK)
        die("the GPU device");
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS)
        die("OpenCL");
    cl_context cl = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(cl, device, 0, &err);
    char ch[32], qh[32], name[256] = "";
    snprintf(ch, sizeof ch, "%p", (void *)cl);
    snprintf(qh, sizeof qh, "%p", (void *)queue);
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    rn_property params[] = {{"CONTEXT_TYPE", "OCL"}, {"OCL_CONTEXT", ch}, {"OCL_QUEUE", qh}};
    rn_remote_context *ctx;
    rn_model *model;
    rn_compiled_model *cm;
    rn_infer_request *r;
    if (rn_core_create_context(core, "GPU", params, 3, &ctx) != RN_OK)
        die("create_context");
    if (rn_core_read_model(core, path, &model) != RN_OK)
        die(path);
    if (rn_core_compile_model_with_context(core, model, ctx, NULL, 0, &cm) != RN_OK)
        die("compile");
    if (rn_compiled_model_create_infer_request(cm, &r) != RN_OK)
        die("create_infer_request");
    size_t n_in = rn_compiled_model_input_count(cm), n_out = rn_compiled_model_output_count(cm);
    if (n_in > MAX_IO || n_out > MAX_IO)
        die("too many inputs or outputs");
    rn_tensor *host_in[MAX_IO], *in[MAX_IO], *out[MAX_IO];
    cl_mem in_mem[MAX_IO], out_mem[MAX_IO];
    for (size_t i = 0; i < n_in; i++) {
        rn_port p;
        rn_compiled_model_input(cm, i, &p);
        if (rn_tensor_create(p.element_type, p.shape.dims, (size_t)p.shape.rank, &host_in[i]) !=
            RN_OK)
            die("a host input");
        in[i] = remote_port(ctx, cl, &p, &in_mem[i]);
        rn_tensor_copy(host_in[i], in[i]);
    }
    for (size_t o = 0; o < n_out; o++) {
        rn_port p;
        rn_compiled_model_output(cm, o, &p);
        out[o] = remote_port(ctx, cl, &p, &out_mem[o]);
    }
    /* The three ways interleaved run by run, so that a machine shared with
     * other work slows them alike. */
    rn_tensor *own_out[MAX_IO];
    for (size_t o = 0; o < n_out; o++) {
        rn_port p;
        rn_compiled_model_output(cm, o, &p);
        if (rn_tensor_create(p.element_type, p.shape.dims, (size_t)p.shape.rank, &own_out[o]) !=
            RN_OK)
            die("a host output");
    }
    const bindings ways[3] = {
        {n_in, n_out, host_in, NULL}, {n_in, n_out, in, NULL}, {n_in, n_out, in, out}};
    static const char *const names[3] = {
        "host inputs (peer):     ", "remote inputs:          ", "remote inputs + outputs:"};
    double *t[3];
    unsigned long long up[3] = {0, 0, 0}, warm = 0;
    for (int w = 0; w < 3; w++) {
        t[w] = malloc((size_t)runs * sizeof *t[w]);
        time_run(r, cm, &ways[w], own_out, &warm); /* warm-up */
    }
    for (int i = 0; i < runs; i++)
        for (int w = 0; w < 3; w++)
            t[w][i] = time_run(r, cm, &ways[w], own_out, &up[w]);
    printf("%s on GPU (%s), median of %d sync runs of each, interleaved\n", path, name, runs);
    double median[3];
    for (int w = 0; w < 3; w++) {
        qsort(t[w], (size_t)runs, sizeof *t[w], cmp_double);
        median[w] = t[w][runs / 2];
        printf("  %s %9.3f ms  uploaded %llu bytes/run  ratio to the peer %.3f\n", names[w],
               median[w], up[w] / (unsigned long long)runs, median[w] / median[0]);
        free(t[w]);
    }
    rn_infer_request_free(r);
    for (size_t i = 0; i < n_in; i++) {
        rn_tensor_free(in[i]);
        rn_tensor_free(host_in[i]);
        clReleaseMemObject(in_mem[i]);
    }
    for (size_t o = 0; o < n_out; o++) {
        rn_tensor_free(out[o]);
        rn_tensor_free(own_out[o]);
        clReleaseMemObject(out_mem[o]);
    }
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_remote_context_free(ctx);
    clReleaseCommandQueue(queue);
    clReleaseContext(cl);
    rn_core_free(core);
    return 0;
}
