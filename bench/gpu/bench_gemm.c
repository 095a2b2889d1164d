/* bench/gpu: the GPU device's GEMM against CLBlast's own Sgemm on the same
 * OpenCL device (not a test).
 *
 * For each shape (M, K, N) it builds a model Y = MatMul(X[M,K], W[K,N])
 * with W a constant, compiles it on GPU (LATENCY: one stream) and times a
 * synchronous infer (the median of --runs), which uploads X, runs the GEMM
 * and downloads Y. The peer is CLBlastSgemm called directly in the same
 * process on the same device, timed twice: the GEMM alone (operands already
 * in device memory) and with the same copies (write X, GEMM, read Y). It
 * prints GFLOP/s of each and the ratios runnel / peer.
 *
 *   bazel run //bench/gpu:bench_gemm -- [--runs N]
 */
#include <CL/cl.h>
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define GPU_SO "plugins/gpu/libgpu.so"

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

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

static Onnx__ValueInfoProto *f32_info(Onnx__ValueInfoProto *vi, Onnx__TypeProto *tp,
                                      Onnx__TypeProto__Tensor *tt, Onnx__TensorShapeProto *sh,
                                      Onnx__TensorShapeProto__Dimension *dims,
                                      Onnx__TensorShapeProto__Dimension **dimp, const char *name,
                                      int64_t d0, int64_t d1)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    int64_t d[2] = {d0, d1};
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&dims[i]);
        dims[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[i].dim_value = d[i];
        dimp[i] = &dims[i];
    }
    sh->n_dim = 2;
    sh->dim = dimp;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* The ONNX bytes of Y = MatMul(X, W), W the given constant. */
static void *matmul_model(size_t M, size_t K, size_t N, const float *w, size_t *size)
{
    char *in[] = {"X", "W"}, *out[] = {"Y"};
    Onnx__NodeProto node, *nodep = &node;
    onnx__node_proto__init(&node);
    node.op_type = "MatMul";
    node.n_input = 2, node.input = in, node.n_output = 1, node.output = out;
    Onnx__TensorProto t, *tp0 = &t;
    onnx__tensor_proto__init(&t);
    int64_t wdims[2] = {(int64_t)K, (int64_t)N};
    t.name = "W";
    t.has_data_type = 1;
    t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t.n_dims = 2;
    t.dims = wdims;
    t.has_raw_data = 1;
    t.raw_data.len = K * N * sizeof(float);
    t.raw_data.data = (uint8_t *)w;
    Onnx__ValueInfoProto vi[2], *vin, *vout;
    Onnx__TypeProto tps[2];
    Onnx__TypeProto__Tensor tts[2];
    Onnx__TensorShapeProto shs[2];
    Onnx__TensorShapeProto__Dimension dims[2][2], *dimp[2][2];
    vin =
        f32_info(&vi[0], &tps[0], &tts[0], &shs[0], dims[0], dimp[0], "X", (int64_t)M, (int64_t)K);
    vout =
        f32_info(&vi[1], &tps[1], &tts[1], &shs[1], dims[1], dimp[1], "Y", (int64_t)M, (int64_t)N);
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "matmul";
    g.n_node = 1, g.node = &nodep;
    g.n_initializer = 1, g.initializer = &tp0;
    g.n_input = 1, g.input = &vin;
    g.n_output = 1, g.output = &vout;
    Onnx__OperatorSetIdProto opset, *opsetp = &opset;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 17;
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.graph = &g;
    m.n_opset_import = 1;
    m.opset_import = &opsetp;
    *size = onnx__model_proto__get_packed_size(&m);
    void *buf = malloc(*size);
    if (buf != NULL)
        onnx__model_proto__pack(&m, buf);
    return buf;
}

static void check(rn_status st, const char *what)
{
    if (st != RN_OK) {
        fprintf(stderr, "bench_gemm: %s: %s\n", what, rn_last_error());
        exit(1);
    }
}

/* runnel GPU: median seconds of a sync infer of the MatMul model. */
static double runnel_gemm(rn_core *core, size_t M, size_t K, size_t N, const float *x,
                          const float *w, int runs)
{
    size_t size;
    void *bytes = matmul_model(M, K, N, w, &size);
    rn_model *model;
    check(rn_core_read_model_from_memory(core, bytes, size, NULL, &model), "read");
    free(bytes);
    rn_compiled_model *cm;
    rn_property props[] = {{"PERFORMANCE_HINT", "LATENCY"}};
    check(rn_core_compile_model(core, model, "GPU", props, 1, &cm), "compile");
    rn_infer_request *r;
    check(rn_compiled_model_create_infer_request(cm, &r), "request");
    rn_tensor *t;
    check(rn_infer_request_get_input_tensor(r, 0, &t), "input");
    memcpy(rn_tensor_data(t), x, M * K * sizeof(float));
    check(rn_infer_request_infer(r), "warm-up infer");
    double *times = malloc((size_t)runs * sizeof *times);
    for (int i = 0; i < runs; i++) {
        double t0 = now_s();
        check(rn_infer_request_infer(r), "infer");
        times[i] = now_s() - t0;
    }
    double med = median(times, runs);
    free(times);
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    return med;
}

/* CLBlast on the first device as runnel's GPU picks it (GPU, else CPU). */
static void peer_gemm(size_t M, size_t K, size_t N, const float *x, const float *w, int runs,
                      double *alone, double *copies)
{
    cl_platform_id plat[8];
    cl_uint np = 0;
    clGetPlatformIDs(8, plat, &np);
    cl_device_id dev = NULL;
    cl_platform_id dp = NULL;
    for (int pass = 0; pass < 2 && dev == NULL; pass++)
        for (cl_uint p = 0; p < np && dev == NULL; p++) {
            cl_uint nd = 0;
            cl_device_type ty =
                pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR;
            if (clGetDeviceIDs(plat[p], ty, 1, &dev, &nd) != CL_SUCCESS)
                dev = NULL;
            else
                dp = plat[p];
        }
    cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dp, 0};
    cl_int err;
    cl_context ctx = clCreateContext(cp, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    cl_mem a =
        clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, M * K * 4, (void *)x, &err);
    cl_mem b =
        clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, K * N * 4, (void *)w, &err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, M * N * 4, NULL, &err);
    float *y = malloc(M * N * sizeof *y);
    double *t1 = malloc((size_t)runs * sizeof *t1), *t2 = malloc((size_t)runs * sizeof *t2);
    for (int i = -1; i < runs; i++) { /* -1: warm-up (CLBlast compiles its kernels) */
        double t0 = now_s();
        CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, M, N, K, 1.0f,
                     a, 0, K, b, 0, N, 0.0f, c, 0, N, &q, NULL);
        clFinish(q);
        if (i >= 0)
            t1[i] = now_s() - t0;
        t0 = now_s();
        clEnqueueWriteBuffer(q, a, CL_FALSE, 0, M * K * 4, x, 0, NULL, NULL);
        CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, M, N, K, 1.0f,
                     a, 0, K, b, 0, N, 0.0f, c, 0, N, &q, NULL);
        clEnqueueReadBuffer(q, c, CL_TRUE, 0, M * N * 4, y, 0, NULL, NULL);
        if (i >= 0)
            t2[i] = now_s() - t0;
    }
    *alone = median(t1, runs);
    *copies = median(t2, runs);
    free(t1);
    free(t2);
    free(y);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

int main(int argc, char **argv)
{
    int runs = 15;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
    if (runs < 1)
        runs = 1;
    rn_core *core;
    check(rn_core_create(&core), "core");
    check(rn_core_load_plugin(core, NULL, GPU_SO), "loading the GPU plugin");
    char name[256];
    check(rn_core_get_property(core, "GPU", "FULL_DEVICE_NAME", name, sizeof name), "name");
    printf("device: %s (runs: %d, medians)\n", name, runs);
    printf("%6s %6s %6s  %12s  %14s  %14s  %7s  %7s\n", "M", "K", "N", "runnel GF/s",
           "CLBlast GF/s", "+copies GF/s", "ratio", "ratio+c");
    static const size_t shapes[][3] = {
        {256, 1024, 1024}, /* a square-ish GEMM */
        {3136, 64, 256},   /* ResNet-50's first 1x1 conv as GEMM (HW x Cin x Cout) */
        {784, 1152, 128},  /* a 3x3 conv of ResNet-50's stage 2, im2col'ed */
        {64, 2048, 1000},  /* the classifier, batch 64 */
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        float *x = malloc(M * K * sizeof *x), *w = malloc(K * N * sizeof *w);
        for (size_t i = 0; i < M * K; i++)
            x[i] = (float)(i % 17) / 17.0f - 0.5f;
        for (size_t i = 0; i < K * N; i++)
            w[i] = (float)(i % 13) / 13.0f - 0.5f;
        double flop = 2.0 * (double)M * (double)K * (double)N * 1e-9;
        double t_runnel = runnel_gemm(core, M, K, N, x, w, runs), alone, copies;
        peer_gemm(M, K, N, x, w, runs, &alone, &copies);
        printf("%6zu %6zu %6zu  %12.2f  %14.2f  %14.2f  %7.2f  %7.2f\n", M, K, N, flop / t_runnel,
               flop / alone, flop / copies, alone / t_runnel, copies / t_runnel);
        free(x);
        free(w);
    }
    rn_core_free(core);
    return 0;
}
