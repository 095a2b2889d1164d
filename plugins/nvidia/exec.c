/* A program on the device: weights uploaded once per compiled model (one
 * copy per constant, shared by the programs of its input shapes: weights.c),
 * each step prepared once
 * (a cuDNN execution plan chosen by heuristics, pooling / LRN / softmax
 * descriptors), and request slots — an arena laid out by the program's
 * memory plan plus the largest workspace, pinned staging, a non-blocking
 * stream with its cuDNN and cuBLAS handles and an event — made on first use
 * and reused, so a steady-state run allocates nothing.
 *
 * A run takes a free slot, copies the host inputs into its pinned staging,
 * queues the upload, every step and the download on the slot's stream,
 * waits for its event (blocking sync: the worker sleeps) and copies the
 * outputs out. Concurrent requests run on different slots and streams, so
 * one request's copies overlap another's kernels. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/nvidia/exec.h"
#include "plugins/nvidia/kernels.h"

typedef struct nv_slot {
    void *arena;  /* device: arena_bytes + workspace */
    void *pinned; /* host, pinned: the program's staging */
    cudaStream_t stream;
    cudaEvent_t done;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudaEvent_t *marks;    /* n_steps + 1, for NVIDIA_STEP_TIMING */
    void **plans;          /* per step: the convolution's plan on this slot's handle */
    cudaGraphExec_t graph; /* the steps, captured on the second run (NVIDIA_CUDA_GRAPH) */
    bool graph_failed;     /* capture refused: eager launches from now on */
    uint64_t runs;
    bool busy;
    /* The run whose work is queued on the slot: where its outputs go (the
     * pinned staging's copies land there after the wait), which it got
     * from the DMA directly, its host copy-in time and whether it was
     * timed; and, with NVIDIA_ASYNC_STAGES, the run's record while it is in
     * flight (under run_lock). */
    void **out_dst;
    uint64_t direct_out;
    double host_in;
    bool timing;
    struct nv_run *run;
} nv_slot;

/* NVIDIA_ASYNC_STAGES: a request's run in flight, in a header before its
 * arena (nv_exec_arena_alloc), so that the program's node, the wait's arm
 * and the finish stage of one run find it from the arena alone. From the
 * program's node to the finish stage `slot` is the slot the run owns; a
 * run that needs a slot when every one is in flight may finish another's
 * (`finishing`: waits for its GPU work, copies its outputs out) and keep
 * that slot, leaving the status for the victim's finish stage. Under
 * run_lock. */
typedef struct nv_run {
    uint64_t magic; /* NV_RUN_MAGIC: the arena is nv_exec_arena_alloc's */
    nv_slot *slot;
    struct nv_exec *exec;
    bool finishing;
    rn_status status; /* of a run finished by another */
    char error[200];
} nv_run;

#define NV_RUN_MAGIC  0x6e7672756e68647full /* "nvrunhdr" */
#define NV_RUN_HEADER NV_RUN_ARENA_HEADER   /* keeps the arena 256-byte aligned */
_Static_assert(sizeof(nv_run) <= NV_RUN_HEADER, "the run's record fits its header");

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_done = PTHREAD_COND_INITIALIZER; /* a `finishing` cleared */

typedef struct nv_step_dev {
    nv_conv_graph *conv;
    bool conv_fused; /* bias, residual and activation inside the cuDNN graph */
    bool cudnn_pool;
    cudnnTensorDescriptor_t x, y;
    cudnnPoolingDescriptor_t pool;
    cudnnLRNDescriptor_t lrn;
    nv_blas_gemm att[2]; /* BLAS_ATTENTION: scores = scale Q K^T, out = P V */
} nv_step_dev;

struct nv_exec {
    nv_program *prog;
    int device;
    bool allow_tf32, cuda_graph;
    bool async_stages;   /* NVIDIA_ASYNC_STAGES: the run returns once queued */
    nv_tuner *tuner;     /* NVIDIA_AUTOTUNE, while the steps are prepared */
    nv_tuner tuning;     /* what it did (its counts and choices), kept after it is freed */
    bool tuned;          /* NVIDIA_AUTOTUNE was on */
    int attention_mode;  /* NVK_ATTENTION_*: RUNNEL_NV_ATTENTION=rows for A/B runs */
    nv_weights *weights; /* the compiled model's (shared) or the program's own */
    void *owner;         /* nv_exec_options.owner */
    void **const_dev;    /* per value: the device copy of an NV_CONST root */
    size_t workspace;
    cudnnHandle_t plan_handle; /* the handle the execution plans were made with */
    nv_step_dev *dev;
    int *arg_input; /* per partition input: program input index, or -1 (a constant) */
    int n_args;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    nv_slot *slots;
    int n_slots, max_slots;
    char impl[160];
    _Atomic(bool) timing;       /* NVIDIA_STEP_TIMING: events between steps */
    _Atomic(uint64_t) steps_ns; /* sum of the steps' times in the last timed run */
    /* Per step kind of the last timed run (under `lock`): time and count. */
    double kind_ms[NV_STEP_KINDS];
    int kind_steps[NV_STEP_KINDS];
    double host_in_ms, host_out_ms; /* the copies through the pinned staging */
};

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Whether p is page-locked host memory the DMA engine reads directly. */
static bool host_pinned(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

rn_status nv_host_alloc(size_t size, void **data)
{
    cudaError_t e = cudaHostAlloc(data, size ? size : 64, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *data = NULL;
        return rn_set_error(RN_OUT_OF_MEMORY,
                            "NVIDIA: cannot allocate %zu bytes of pinned memory: %s", size,
                            cudaGetErrorString(e));
    }
    return RN_OK;
}

void nv_host_free(void *data)
{
    if (data != NULL)
        cudaFreeHost(data);
}

static rn_status cuda_error(cudaError_t e, const char *node, const char *what)
{
    return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: %s%s%s: %s", node ? "node '" : "",
                        node ? node : "", node ? "'" : what, cudaGetErrorString(e));
}

static rn_status launch_error(int e, const nv_step *s)
{
    if (e == 0)
        return RN_OK;
    return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: node '%s' (%s): kernel launch: %s", s->node,
                        s->op, cudaGetErrorString((cudaError_t)e));
}

static rn_status dnn_status(cudnnStatus_t e, const nv_step *s)
{
    if (e == CUDNN_STATUS_SUCCESS)
        return RN_OK;
    return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: node '%s' (%s): cuDNN: %s", s->node, s->op,
                        cudnnGetErrorString(e));
}

static rn_status blas_status(cublasStatus_t e, const nv_step *s)
{
    if (e == CUBLAS_STATUS_SUCCESS)
        return RN_OK;
    return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: node '%s' (%s): cuBLAS: %s", s->node, s->op,
                        cublasGetStatusString(e));
}

/* ---- compile: weights and steps ---- */

/* Each constant's device copy, from the compiled model's shared weights
 * when it gives the constant an identity (the programs of its input shapes
 * share one copy), else the program's own. */
static rn_status upload_weights(nv_exec *x, const nv_exec_options *o)
{
    const nv_program *p = x->prog;
    rn_status st = RN_OK;
    if (o->weights != NULL)
        x->weights = nv_weights_retain(o->weights);
    else
        st = nv_weights_create(o->device, &x->weights);
    if (st == RN_OK &&
        (x->const_dev = calloc((size_t)p->n_values + 1, sizeof *x->const_dev)) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    for (int v = 0; v < p->n_values && st == RN_OK; v++) {
        const nv_value *c = &p->values[v];
        if (c->root != v || c->storage != NV_CONST)
            continue;
        const void *key = o->weight_key != NULL ? o->weight_key(o->weight_ctx, c) : NULL;
        st = nv_weights_get(x->weights, key, c, &x->const_dev[v]);
    }
    return st;
}

static cudnnDataType_t dnn_type(const nv_program *p)
{
    return p->compute == RN_BF16  ? CUDNN_DATA_BFLOAT16
           : p->compute == RN_F16 ? CUDNN_DATA_HALF
                                  : CUDNN_DATA_FLOAT;
}

/* The kernels' element type (NVK_*) of a device type. */
static int kernel_type(rn_element_type t)
{
    return t == RN_BF16 ? NVK_BF16 : t == RN_F16 ? NVK_F16 : NVK_F32;
}

/* cuBLAS's data type and compute type of the program's products: f32
 * accumulation in every precision, TF32 only for f32 and only when asked. */
static cudaDataType_t blas_type(const nv_program *p)
{
    return p->compute == RN_BF16 ? CUDA_R_16BF : p->compute == RN_F16 ? CUDA_R_16F : CUDA_R_32F;
}

static cublasComputeType_t blas_compute(const nv_exec *x)
{
    return x->prog->compute == RN_F32 && x->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                       : CUBLAS_COMPUTE_32F;
}

/* cuDNN's LRN has no bf16 kernels (libcudnn_ops 9 ships f32, f16 and int8
 * ones): bf16 runs runnel's. */
static bool cudnn_lrn(const nv_program *p)
{
    return p->compute != RN_BF16;
}

static rn_status prepare_conv(nv_exec *x, const nv_step *s, nv_step_dev *d)
{
    size_t ws = 0;
    rn_status st = nv_conv_graph_create(x->prog, s, true, &d->conv);
    if (st == RN_OK &&
        (st = nv_conv_graph_plan(d->conv, x->plan_handle, x->allow_tf32, x->tuner, &ws)) == RN_OK) {
        d->conv_fused = true;
    } else {
        /* No engine fuses this chain: the convolution alone, then runnel's
         * bias + residual + activation kernel. */
        nv_conv_graph_free(d->conv);
        d->conv = NULL;
        if ((st = nv_conv_graph_create(x->prog, s, false, &d->conv)) != RN_OK ||
            (st = nv_conv_graph_plan(d->conv, x->plan_handle, x->allow_tf32, x->tuner, &ws)) !=
                RN_OK)
            return st;
    }
    if (ws > x->workspace)
        x->workspace = ws;
    return RN_OK;
}

/* A legacy 4-D descriptor of value v (NCHW, or NHWC when v is channels-
 * last; a 1x1 value reads the same either way). */
static cudnnStatus_t nchw(cudnnTensorDescriptor_t *d, cudnnDataType_t t, const nv_value *v)
{
    cudnnStatus_t s = cudnnCreateTensorDescriptor(d);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(*d, v->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, t,
                                       (int)v->dims[0], (int)v->dims[1], (int)v->dims[2],
                                       (int)v->dims[3]);
    return s;
}

static rn_status prepare_pool(nv_exec *x, const nv_step *s, nv_step_dev *d)
{
    const nv_value *in = &x->prog->values[s->in[0]], *out = &x->prog->values[s->out];
    /* cuDNN pools with symmetric pads and floor rounding; other cases run
     * runnel's kernel. */
    if (s->pads[0] != s->pads[2] || s->pads[1] != s->pads[3])
        return RN_OK;
    cudnnStatus_t e;
    cudnnPoolingMode_t mode = s->pool_mode == 0 ? CUDNN_POOLING_MAX
                              : s->flag         ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if ((e = cudnnCreatePoolingDescriptor(&d->pool)) != CUDNN_STATUS_SUCCESS ||
        (e = cudnnSetPooling2dDescriptor(d->pool, mode, CUDNN_NOT_PROPAGATE_NAN, (int)s->kernel[0],
                                         (int)s->kernel[1], (int)s->pads[0], (int)s->pads[1],
                                         (int)s->strides[0], (int)s->strides[1])) !=
            CUDNN_STATUS_SUCCESS ||
        (e = nchw(&d->x, dnn_type(x->prog), in)) != CUDNN_STATUS_SUCCESS)
        return dnn_status(e, s);
    int n, c, h, w;
    if ((e = cudnnGetPooling2dForwardOutputDim(d->pool, d->x, &n, &c, &h, &w)) !=
        CUDNN_STATUS_SUCCESS)
        return dnn_status(e, s);
    if (h != out->dims[2] || w != out->dims[3])
        return RN_OK; /* ceil_mode: runnel's kernel */
    /* A 1x1 result takes the input's layout (the same bytes either way). */
    nv_value y = *out;
    if (out->dims[2] == 1 && out->dims[3] == 1)
        y.nhwc = in->nhwc;
    if ((e = nchw(&d->y, dnn_type(x->prog), &y)) != CUDNN_STATUS_SUCCESS)
        return dnn_status(e, s);
    d->cudnn_pool = true;
    return RN_OK;
}

static rn_status prepare_step(nv_exec *x, const nv_step *s, nv_step_dev *d)
{
    const nv_program *p = x->prog;
    cudnnStatus_t e = CUDNN_STATUS_SUCCESS;
    switch (s->kind) {
    case NV_STEP_CONV:
        return prepare_conv(x, s, d);
    case NV_STEP_POOL:
        return prepare_pool(x, s, d);
    case NV_STEP_BLAS_ATTENTION:
        if (!nv_attention_blas_plan(&s->att, d->att))
            return rn_set_error(RN_INTERNAL, "NVIDIA: node '%s': no cuBLAS form of its attention",
                                s->node);
        return RN_OK;
    case NV_STEP_LRN:
        if (s->size < CUDNN_LRN_MIN_N || s->size > CUDNN_LRN_MAX_N)
            return rn_set_error(RN_UNSUPPORTED,
                                "NVIDIA: node '%s': LRN size %lld (cuDNN: %d to %d)", s->node,
                                (long long)s->size, CUDNN_LRN_MIN_N, CUDNN_LRN_MAX_N);
        if (!cudnn_lrn(p))
            return RN_OK;
        if ((e = cudnnCreateLRNDescriptor(&d->lrn)) == CUDNN_STATUS_SUCCESS &&
            (e = cudnnSetLRNDescriptor(d->lrn, (unsigned)s->size, s->alpha, s->beta, s->epsilon)) ==
                CUDNN_STATUS_SUCCESS)
            e = nchw(&d->x, dnn_type(p), &p->values[s->in[0]]);
        return dnn_status(e, s);
    default:
        return RN_OK;
    }
}

static void release_step(nv_step_dev *d)
{
    nv_conv_graph_free(d->conv);
    if (d->x)
        cudnnDestroyTensorDescriptor(d->x);
    if (d->y)
        cudnnDestroyTensorDescriptor(d->y);
    if (d->pool)
        cudnnDestroyPoolingDescriptor(d->pool);
    if (d->lrn)
        cudnnDestroyLRNDescriptor(d->lrn);
}

/* ---- slots ---- */

static void slot_release(nv_slot *s, int n_marks)
{
    if (s->graph)
        cudaGraphExecDestroy(s->graph);
    for (int i = 0; s->plans != NULL && i < n_marks; i++)
        nv_conv_plan_free(s->plans[i]);
    free(s->plans);
    for (int i = 0; s->marks != NULL && i < n_marks; i++)
        if (s->marks[i])
            cudaEventDestroy(s->marks[i]);
    free(s->marks);
    free(s->out_dst);
    if (s->blas)
        cublasDestroy(s->blas);
    if (s->dnn)
        cudnnDestroy(s->dnn);
    if (s->done)
        cudaEventDestroy(s->done);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    if (s->pinned)
        cudaFreeHost(s->pinned);
    if (s->arena)
        cudaFree(s->arena);
    memset(s, 0, sizeof *s);
}

static rn_status slot_init(nv_exec *x, nv_slot *s)
{
    cudaError_t e;
    size_t bytes = x->prog->arena_bytes + x->workspace;
    if ((e = cudaSetDevice(x->device)) != cudaSuccess ||
        (e = cudaMalloc(&s->arena, bytes ? bytes : 256)) != cudaSuccess ||
        (e = cudaHostAlloc(&s->pinned, x->prog->pinned_bytes ? x->prog->pinned_bytes : 256,
                           cudaHostAllocDefault)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&s->done, cudaEventBlockingSync | cudaEventDisableTiming)) !=
            cudaSuccess) {
        slot_release(s, 0);
        return cuda_error(e, NULL, "creating a request slot");
    }
    if (cudnnCreate(&s->dnn) != CUDNN_STATUS_SUCCESS ||
        cudnnSetStream(s->dnn, s->stream) != CUDNN_STATUS_SUCCESS ||
        cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(s->blas, s->stream) != CUBLAS_STATUS_SUCCESS) {
        slot_release(s, 0);
        return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: cannot create the cuDNN / cuBLAS handles");
    }
    int n_marks = x->prog->n_steps + 1;
    s->marks = calloc((size_t)n_marks, sizeof *s->marks);
    for (int i = 0; s->marks != NULL && i < n_marks; i++)
        if ((e = cudaEventCreate(&s->marks[i])) != cudaSuccess) {
            slot_release(s, n_marks);
            return cuda_error(e, NULL, "creating the step events");
        }
    s->plans = calloc((size_t)n_marks, sizeof *s->plans);
    s->out_dst = calloc((size_t)x->prog->n_outputs + 1, sizeof *s->out_dst);
    if (s->marks == NULL || s->plans == NULL || s->out_dst == NULL) {
        slot_release(s, n_marks);
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    }
    for (int k = 0; k < x->prog->n_steps; k++) {
        if (x->dev[k].conv == NULL)
            continue;
        rn_status st = nv_conv_plan_create(x->dev[k].conv, s->dnn, &s->plans[k]);
        if (st != RN_OK) {
            slot_release(s, n_marks);
            return st;
        }
    }
    return RN_OK;
}

/* Under x->lock: a free slot, or one made now while there are fewer than
 * max_slots (*st: whether making it failed); NULL when every slot is made
 * and busy. */
static nv_slot *slot_take(nv_exec *x, rn_status *st)
{
    *st = RN_OK;
    for (int i = 0; i < x->n_slots; i++)
        if (!x->slots[i].busy) {
            x->slots[i].busy = true;
            return &x->slots[i];
        }
    if (x->n_slots >= x->max_slots)
        return NULL;
    nv_slot *s = &x->slots[x->n_slots];
    if ((*st = slot_init(x, s)) == RN_OK) {
        s->busy = true;
        x->n_slots++;
    }
    return s;
}

/* A free slot (made on first use, up to max_slots; then waits for one). */
static rn_status slot_acquire(nv_exec *x, nv_slot **out)
{
    rn_status st;
    nv_slot *s;
    pthread_mutex_lock(&x->lock);
    while ((s = slot_take(x, &st)) == NULL)
        pthread_cond_wait(&x->cond, &x->lock);
    pthread_mutex_unlock(&x->lock);
    *out = s;
    return st;
}

static void slot_give_back(nv_exec *x, nv_slot *s)
{
    pthread_mutex_lock(&x->lock);
    s->busy = false;
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

/* ---- running the steps ---- */

static void *ptr(const nv_exec *x, const nv_slot *s, int v)
{
    if (v < 0)
        return NULL;
    const nv_value *r = &x->prog->values[x->prog->values[v].root];
    if (r->storage == NV_CONST)
        return x->const_dev[x->prog->values[v].root];
    return (char *)s->arena + r->offset;
}

static rn_status run_gemm(const nv_exec *x, const nv_slot *sl, const nv_step *s)
{
    const nv_program *p = x->prog;
    int type = kernel_type(p->compute);
    void *a = ptr(x, sl, s->in[0]), *b = ptr(x, sl, s->in[1]), *y = ptr(x, sl, s->out);
    float beta = 0.0f;
    if (s->gemm_beta != 0.0f && s->n_in > 2 && s->in[2] >= 0 && !s->bias_after) {
        const nv_value *c = &p->values[s->in[2]];
        int64_t rs = 0, cs = 0;
        if (c->rank == 2)
            rs = c->dims[0] == 1 ? 0 : c->dims[1], cs = c->dims[1] == 1 ? 0 : 1;
        else if (c->rank == 1)
            cs = c->dims[0] == 1 ? 0 : 1;
        rn_status st = launch_error(nvk_broadcast_2d(sl->stream, type, ptr(x, sl, s->in[2]), rs, cs,
                                                     s->gemm_beta, y, s->m, s->n),
                                    s);
        if (st != RN_OK)
            return st;
        beta = 1.0f;
    }
    float alpha = s->gemm_alpha;
    cudaDataType_t t = blas_type(p);
    cublasComputeType_t compute = blas_compute(x);
    /* Row-major Y = A B is column-major Y^T = B^T A^T. */
    cublasOperation_t ob = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t oa = s->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = (int)(s->trans_b ? s->k : s->n), lda = (int)(s->trans_a ? s->m : s->k);
    cublasStatus_t e;
    if (s->batch <= 1)
        e = cublasGemmEx(sl->blas, ob, oa, (int)s->n, (int)s->m, (int)s->k, &alpha, b, t, ldb, a, t,
                         lda, &beta, y, t, (int)s->n, compute, CUBLAS_GEMM_DEFAULT);
    else
        e = cublasGemmStridedBatchedEx(sl->blas, ob, oa, (int)s->n, (int)s->m, (int)s->k, &alpha, b,
                                       t, ldb, s->b_batch_stride, a, t, lda, s->a_batch_stride,
                                       &beta, y, t, (int)s->n, s->m * s->n, (int)s->batch, compute,
                                       CUBLAS_GEMM_DEFAULT);
    rn_status st = blas_status(e, s);
    if (st == RN_OK && s->bias_after) /* y = act(y + bias) in one pass */
        return launch_error(nvk_bias_act(sl->stream, type, y, ptr(x, sl, s->in[2]), NULL, s->m,
                                         s->n, 1, s->act, s->alpha, s->beta),
                            s);
    if (st == RN_OK && s->act != NV_ACT_NONE)
        st = launch_error(nvk_unary(sl->stream, type, s->act, s->alpha, s->beta, y, y,
                                    (int64_t)p->values[s->out].count),
                          s);
    return st;
}

/* One product of a BLAS_ATTENTION step (nv_blas_gemm, attention.c): x
 * and y the left and right operands, c the result. */
static rn_status attention_product(const nv_exec *x, const nv_slot *sl, const nv_step *s,
                                   const nv_blas_gemm *g, const void *left, const void *right,
                                   void *c)
{
    int64_t es = (int64_t)rn_element_type_size(x->prog->compute); /* bytes per element */
    cudaDataType_t t = blas_type(x->prog);
    cublasComputeType_t compute = blas_compute(x);
    const char *a = g->swap ? right : left, *b = g->swap ? left : right;
    float alpha = g->alpha, beta = 0.0f;
    cublasStatus_t e = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < g->calls && e == CUBLAS_STATUS_SUCCESS; i++)
        e = cublasGemmStridedBatchedEx(sl->blas, g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                       g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g->m, g->n, g->k,
                                       &alpha, a + i * g->step_a * es, t, g->lda, g->stride_a,
                                       b + i * g->step_b * es, t, g->ldb, g->stride_b, &beta,
                                       (char *)c + i * g->step_c * es, t, g->ldc, g->stride_c,
                                       g->count, compute, CUBLAS_GEMM_DEFAULT);
    return blas_status(e, s);
}

/* BLAS_ATTENTION: scores = scale Q K^T (cuBLAS, the heads read with their
 * strides), + mask and Softmax in place (runnel's kernel), out = P V
 * (cuBLAS, written with the output's strides). The products were planned
 * at compile (prepare_step). */
static rn_status run_blas_attention(const nv_exec *x, const nv_slot *sl, const nv_step *s,
                                    const nv_step_dev *d)
{
    void *scores = ptr(x, sl, s->in[4]);
    rn_status st =
        attention_product(x, sl, s, &d->att[0], ptr(x, sl, s->in[0]), ptr(x, sl, s->in[1]), scores);
    if (st == RN_OK)
        st = launch_error(nvk_attention_softmax(sl->stream, kernel_type(x->prog->compute), &s->att,
                                                scores, ptr(x, sl, s->in[3])),
                          s);
    if (st == RN_OK)
        st = attention_product(x, sl, s, &d->att[1], scores, ptr(x, sl, s->in[2]),
                               ptr(x, sl, s->out));
    return st;
}

/* Broadcast strides of `in` over the output's dims (right-aligned). */
static void broadcast_strides(const nv_value *in, const nv_value *out, int64_t *strides)
{
    int64_t stride = 1;
    for (int d = out->rank - 1, k = in->rank - 1; d >= 0; d--, k--) {
        if (k < 0 || in->dims[k] == 1) {
            strides[d] = 0;
        } else {
            strides[d] = stride;
        }
        if (k >= 0)
            stride *= in->dims[k];
    }
}

static rn_status run_step(const nv_exec *x, const nv_slot *sl, int k)
{
    const nv_step *s = &x->prog->steps[k];
    const nv_step_dev *d = &x->dev[k];
    const nv_program *p = x->prog;
    int type = kernel_type(p->compute);
    const nv_value *out = &p->values[s->out];
    const nv_value *in = &p->values[s->in[0]];
    void *y = ptr(x, sl, s->out), *a = ptr(x, sl, s->in[0]);
    void *ws = (char *)sl->arena + p->arena_bytes;
    float one = 1.0f, zero = 0.0f;
    switch (s->kind) {
    case NV_STEP_CONVERT:
        return launch_error(nvk_convert(sl->stream, kernel_type(in->type), kernel_type(out->type),
                                        a, y, (int64_t)out->count),
                            s);
    case NV_STEP_CONV: {
        void *bias = ptr(x, sl, s->in[2]), *res = ptr(x, sl, s->in[3]);
        rn_status st = nv_conv_graph_execute(d->conv, sl->dnn, sl->plans[k], a,
                                             ptr(x, sl, s->in[1]), y, bias, res, ws);
        if (st != RN_OK || d->conv_fused || (bias == NULL && res == NULL && s->act == NV_ACT_NONE))
            return st;
        int64_t hw = out->dims[2] * out->dims[3];
        return launch_error(nvk_bias_act(sl->stream, type, y, bias, res,
                                         out->nhwc ? out->dims[0] * hw : out->dims[0], out->dims[1],
                                         out->nhwc ? 1 : hw, s->act, s->alpha, s->beta),
                            s);
    }
    case NV_STEP_GEMM:
        return run_gemm(x, sl, s);
    case NV_STEP_POOL:
        if (d->cudnn_pool)
            return dnn_status(cudnnPoolingForward(sl->dnn, d->pool, &one, d->x, a, &zero, d->y, y),
                              s);
        return launch_error(nvk_pool2d(sl->stream, type, s->pool_mode, s->flag, a, y, in->dims[0],
                                       in->dims[1], in->dims[2], in->dims[3], out->dims[2],
                                       out->dims[3], s->kernel[0], s->kernel[1], s->strides[0],
                                       s->strides[1], s->pads[0], s->pads[1], s->pads[2],
                                       s->pads[3]),
                            s);
    case NV_STEP_LRN:
        if (!cudnn_lrn(p))
            return launch_error(nvk_lrn(sl->stream, type, a, y, in->dims[0], in->dims[1],
                                        (int64_t)(in->count / (size_t)(in->dims[0] * in->dims[1])),
                                        s->size, s->alpha, s->beta, s->epsilon),
                                s);
        return dnn_status(cudnnLRNCrossChannelForward(sl->dnn, d->lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                                      &one, d->x, a, &zero, d->x, y),
                          s);
    case NV_STEP_SOFTMAX:
        return launch_error(nvk_softmax(sl->stream, type, a, y, s->rows, s->cols), s);
    case NV_STEP_ATTENTION:
        return launch_error(
            nvk_attention(sl->stream, type, &s->att, a, ptr(x, sl, s->in[1]), ptr(x, sl, s->in[2]),
                          s->n_in > 3 ? ptr(x, sl, s->in[3]) : NULL, y, x->attention_mode),
            s);
    case NV_STEP_BLAS_ATTENTION:
        return run_blas_attention(x, sl, s, d);
    case NV_STEP_UNARY:
        return launch_error(
            nvk_unary(sl->stream, type, s->act, s->alpha, s->beta, a, y, (int64_t)out->count), s);
    case NV_STEP_BINARY: {
        nvk_broadcast b = {.rank = out->rank};
        memcpy(b.dims, out->dims, (size_t)out->rank * sizeof b.dims[0]);
        broadcast_strides(in, out, b.a_strides);
        broadcast_strides(&p->values[s->in[1]], out, b.b_strides);
        nv_collapse_broadcast(&b);
        return launch_error(
            nvk_binary(sl->stream, type, (int)s->bin, &b, a, ptr(x, sl, s->in[1]), y), s);
    }
    case NV_STEP_CONCAT: {
        size_t es = rn_element_type_size(out->type), off = 0;
        size_t outer = 1, out_chunk = es;
        for (int k = 0; k < s->axis; k++)
            outer *= (size_t)out->dims[k];
        for (int k = s->axis; k < out->rank; k++)
            out_chunk *= (size_t)out->dims[k];
        if (out->nhwc) /* channels-last over C: a run of C_i per pixel */
            outer = (size_t)(out->dims[0] * out->dims[2] * out->dims[3]),
            out_chunk = es * (size_t)out->dims[1];
        for (int i = 0; i < s->n_in; i++) {
            const nv_value *v = &p->values[s->in[i]];
            size_t chunk = outer ? v->nbytes / outer : 0;
            if (chunk > 0) {
                cudaError_t e =
                    cudaMemcpy2DAsync((char *)y + off, out_chunk, ptr(x, sl, s->in[i]), chunk,
                                      chunk, outer, cudaMemcpyDeviceToDevice, sl->stream);
                if (e != cudaSuccess)
                    return launch_error((int)e, s);
            }
            off += chunk;
        }
        return RN_OK;
    }
    case NV_STEP_TRANSPOSE: {
        /* Output dim k (logical) is input dim perm[k]; the output is
         * walked in its storage order (channels-last for NHWC values), the
         * input read with its layout's strides: a layout conversion is the
         * identity permutation between layouts. */
        int64_t in_strides[RN_MAX_RANK], perm_strides[RN_MAX_RANK], dims[RN_MAX_RANK];
        int order[RN_MAX_RANK];
        for (int k = 0; k < out->rank; k++)
            order[k] = k;
        if (out->nhwc && out->rank == 4)
            order[1] = 2, order[2] = 3, order[3] = 1;
        nv_value_strides(in, in_strides);
        for (int k = 0; k < out->rank; k++) {
            perm_strides[k] = in_strides[s->perm[order[k]]];
            dims[k] = out->dims[order[k]];
        }
        int esize = (int)rn_element_type_size(out->type);
        int rank = nv_collapse_transpose(&esize, out->rank, dims, perm_strides);
        return launch_error(nvk_transpose(sl->stream, esize, a, y, rank, dims, perm_strides), s);
    }
    case NV_STEP_LAYERNORM:
        return launch_error(nvk_layernorm(sl->stream, type, a, ptr(x, sl, s->in[3]),
                                          ptr(x, sl, s->in[1]), ptr(x, sl, s->in[2]), s->epsilon, y,
                                          s->rows, s->cols),
                            s);
    case NV_STEP_GATHER:
        return launch_error(nvk_gather(sl->stream, (int)rn_element_type_size(out->type), a,
                                       ptr(x, sl, s->in[1]), p->values[s->in[1]].type == RN_I64, y,
                                       s->outer, s->axis_dim, s->inner, s->n_idx),
                            s);
    case NV_STEP_REDUCE_MEAN:
        return launch_error(nvk_reduce_mean(sl->stream, type, a, y, s->rows, s->cols), s);
    case NV_STEP_BATCHNORM:
        return launch_error(nvk_batchnorm(sl->stream, type, a, ptr(x, sl, s->in[1]),
                                          ptr(x, sl, s->in[2]), ptr(x, sl, s->in[3]),
                                          ptr(x, sl, s->in[4]), s->epsilon, y, s->rows, s->cols,
                                          s->inner, s->act, s->alpha, s->beta),
                            s);
    }
    return rn_set_error(RN_INTERNAL, "NVIDIA: node '%s': unknown step", s->node);
}

static rn_status run_steps(const nv_exec *x, const nv_slot *sl)
{
    rn_status st = RN_OK;
    for (int k = 0; k < x->prog->n_steps && st == RN_OK; k++)
        st = run_step(x, sl, k);
    return st;
}

/* The steps as a CUDA graph of the slot: captured on the slot's second run
 * (the first is the warm-up: cuDNN and cuBLAS set up lazily), then launched
 * whole. A capture the stream refuses leaves the slot on eager launches. */
static rn_status run_graph(const nv_exec *x, nv_slot *sl)
{
    if (sl->graph != NULL)
        return cudaGraphLaunch(sl->graph, sl->stream) == cudaSuccess
                   ? RN_OK
                   : cuda_error(cudaGetLastError(), NULL, "cudaGraphLaunch");
    if (sl->runs == 0 || sl->graph_failed)
        return run_steps(x, sl);
    cudaGraph_t g = NULL;
    if (cudaStreamBeginCapture(sl->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        sl->graph_failed = true;
        return run_steps(x, sl);
    }
    rn_status st = run_steps(x, sl);
    cudaError_t e = cudaStreamEndCapture(sl->stream, &g);
    if (st == RN_OK && e == cudaSuccess && g != NULL &&
        cudaGraphInstantiate(&sl->graph, g, 0) == cudaSuccess) {
        cudaGraphDestroy(g);
        return cudaGraphLaunch(sl->graph, sl->stream) == cudaSuccess
                   ? RN_OK
                   : cuda_error(cudaGetLastError(), NULL, "cudaGraphLaunch");
    }
    if (g != NULL)
        cudaGraphDestroy(g);
    cudaGetLastError(); /* the capture's error, not the run's */
    sl->graph = NULL;
    sl->graph_failed = true;
    return run_steps(x, sl);
}

/* Queues the run of `args` on the slot: the host inputs through the
 * pinned staging (or straight from pinned memory), the upload, the steps
 * (a CUDA graph, or eager launches when timed) and the download, then the
 * slot's `done` event; records where each output goes (sl->out_dst, and
 * which the DMA writes directly). The outputs are not there before `done`
 * completed and finish_run ran. */
static rn_status queue_run(nv_exec *x, nv_slot *sl, rn_kernel_args *args)
{
    const nv_program *p = x->prog;
    rn_status st = RN_OK;
    cudaError_t e = cudaSuccess;
    sl->host_in = 0;
    sl->direct_out = 0;
    for (int k = 0; k < args->n_inputs && st == RN_OK; k++) {
        int i = x->arg_input[k];
        if (i < 0)
            continue;
        const nv_value *v = &p->values[p->input_value[i]];
        size_t bytes = v->count * rn_element_type_size(v->host_type);
        if (args->inputs[k].data == NULL || args->inputs[k].nbytes != bytes) {
            st = rn_set_error(RN_INVALID_ARG,
                              "NVIDIA: input '%s': %zu bytes in host memory "
                              "expected",
                              v->name, bytes);
            break;
        }
        /* Pinned memory (a host tensor of NVIDIA's context) is copied by
         * the DMA engine directly; other memory through the slot's
         * pinned staging. */
        const void *src = args->inputs[k].data;
        if (!host_pinned(src)) {
            char *pin = (char *)sl->pinned + p->input_pinned[i];
            double t0 = now_ns();
            memcpy(pin, src, bytes);
            sl->host_in += now_ns() - t0;
            src = pin;
        }
        e = cudaMemcpyAsync((char *)sl->arena + p->input_stage[i], src, bytes,
                            cudaMemcpyHostToDevice, sl->stream);
        if (e != cudaSuccess)
            st = cuda_error(e, NULL, "upload");
    }
    bool timing = atomic_load(&x->timing);
    sl->timing = timing;
    if (st == RN_OK && x->cuda_graph && !timing)
        st = run_graph(x, sl);
    for (int k = 0; k < p->n_steps && st == RN_OK && !(x->cuda_graph && !timing); k++) {
        if (timing)
            cudaEventRecord(sl->marks[k], sl->stream);
        st = run_step(x, sl, k);
    }
    if (timing)
        cudaEventRecord(sl->marks[p->n_steps], sl->stream);
    sl->runs++;
    for (int o = 0; o < p->n_outputs && st == RN_OK; o++) {
        const nv_value *v = &p->values[p->output_value[o]];
        size_t bytes = v->count * rn_element_type_size(v->host_type);
        if (args->outputs[o].data == NULL || args->outputs[o].nbytes != bytes) {
            st = rn_set_error(RN_INTERNAL, "NVIDIA: output '%s' has no %zu-byte host buffer",
                              v->name, bytes);
            break;
        }
        void *dst = args->outputs[o].data;
        sl->out_dst[o] = dst;
        if (!host_pinned(dst))
            dst = (char *)sl->pinned + p->output_pinned[o];
        else
            sl->direct_out |= 1ull << (o < 63 ? o : 63);
        e = cudaMemcpyAsync(dst, (char *)sl->arena + p->output_stage[o], bytes,
                            cudaMemcpyDeviceToHost, sl->stream);
        if (e != cudaSuccess)
            st = cuda_error(e, NULL, "download");
    }
    /* Recorded even after an error: what was queued is waited for before
     * the slot is reused. */
    e = cudaEventRecord(sl->done, sl->stream);
    if (e != cudaSuccess && st == RN_OK)
        st = cuda_error(e, NULL, "the run");
    return st;
}

/* After the slot's `done` event completed (`st`: the run's status so
 * far): the step timings (NVIDIA_STEP_TIMING) and, when the run
 * succeeded, the outputs the DMA did not write copied out of the pinned
 * staging. The slot stays the caller's. */
static rn_status finish_run(nv_exec *x, nv_slot *sl, rn_status st)
{
    const nv_program *p = x->prog;
    bool timing = sl->timing;
    if (timing && st == RN_OK) {
        /* Each step alone: the stream runs them one after the other. */
        double ns = 0, kind_ms[NV_STEP_KINDS] = {0};
        int kind_steps[NV_STEP_KINDS] = {0};
        for (int k = 0; k < p->n_steps; k++) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, sl->marks[k], sl->marks[k + 1]) == cudaSuccess)
                ns += (double)ms * 1e6;
            kind_ms[p->steps[k].kind] += ms;
            kind_steps[p->steps[k].kind]++;
        }
        atomic_store(&x->steps_ns, (uint64_t)ns);
        pthread_mutex_lock(&x->lock);
        memcpy(x->kind_ms, kind_ms, sizeof kind_ms);
        memcpy(x->kind_steps, kind_steps, sizeof kind_steps);
        pthread_mutex_unlock(&x->lock);
    }
    double t_out = now_ns();
    for (int o = 0; o < p->n_outputs && st == RN_OK; o++) {
        const nv_value *v = &p->values[p->output_value[o]];
        size_t bytes = v->count * rn_element_type_size(v->host_type);
        if (o < 63 && (sl->direct_out >> o & 1))
            continue; /* the DMA wrote it */
        memcpy(sl->out_dst[o], (char *)sl->pinned + p->output_pinned[o], bytes);
    }
    if (timing) {
        pthread_mutex_lock(&x->lock);
        x->host_in_ms = sl->host_in * 1e-6;
        x->host_out_ms = (now_ns() - t_out) * 1e-6;
        pthread_mutex_unlock(&x->lock);
    }
    return st;
}

/* Waits (blocking) for the slot's queued work: its status joined to `st`. */
static rn_status drain(nv_slot *sl, rn_status st)
{
    cudaError_t e = cudaEventSynchronize(sl->done);
    if (e != cudaSuccess && st == RN_OK)
        st = cuda_error(e, NULL, "the run");
    return st;
}

/* ---- NVIDIA_ASYNC_STAGES: the wait and the copy-out as DAG stages ---- */

static nv_run *run_of(void *arena)
{
    return (nv_run *)((char *)arena - NV_RUN_HEADER);
}

rn_status nv_exec_arena_alloc(size_t size, void **arena)
{
    void *base;
    rn_status st = nv_host_alloc(size + NV_RUN_HEADER, &base);
    if (st != RN_OK)
        return st;
    memset(base, 0, sizeof(nv_run));
    ((nv_run *)base)->magic = NV_RUN_MAGIC;
    *arena = (char *)base + NV_RUN_HEADER;
    return RN_OK;
}

void nv_exec_arena_free(void *arena)
{
    if (arena != NULL)
        nv_host_free(run_of(arena));
}

/* Finishes run `run` (in flight on `sl`, marked finishing by the caller):
 * waits for its work, copies its outputs out, and leaves its status for its
 * finish stage. The slot stays the caller's. Called by a run that found
 * every slot in flight: its worker waits for the GPU, as the synchronous
 * path waits for a slot. */
static void finish_other(nv_exec *x, nv_slot *sl, nv_run *run)
{
    rn_status st = finish_run(x, sl, drain(sl, RN_OK));
    pthread_mutex_lock(&run_lock);
    run->status = st;
    snprintf(run->error, sizeof run->error, "%s", st == RN_OK ? "" : rn_last_error());
    run->slot = NULL;
    run->finishing = false;
    sl->run = NULL;
    pthread_cond_broadcast(&run_done);
    pthread_mutex_unlock(&run_lock);
}

/* A slot for an async run: a free one, a new one, or one whose run is in
 * flight, finished here (finish_other). Never waits for a stage of another
 * run, which may be queued behind this one on the same stream worker; waits
 * only while every slot is being queued or finished by another thread. */
static rn_status slot_acquire_async(nv_exec *x, nv_slot **out)
{
    pthread_mutex_lock(&x->lock);
    for (;;) {
        rn_status st;
        nv_slot *s = slot_take(x, &st);
        if (s != NULL) {
            pthread_mutex_unlock(&x->lock);
            *out = s;
            return st;
        }
        nv_slot *victim = NULL;
        nv_run *run = NULL;
        pthread_mutex_lock(&run_lock);
        for (int i = 0; i < x->n_slots && victim == NULL; i++) {
            nv_run *r = x->slots[i].run;
            if (r != NULL && r->slot == &x->slots[i] && !r->finishing) {
                r->finishing = true;
                victim = &x->slots[i];
                run = r;
            }
        }
        pthread_mutex_unlock(&run_lock);
        if (victim != NULL) {
            pthread_mutex_unlock(&x->lock);
            finish_other(x, victim, run);
            *out = victim;
            return RN_OK;
        }
        pthread_cond_wait(&x->cond, &x->lock);
    }
}

/* The async run: queued, recorded in the arena's header and handed to the
 * wait stage; on an error, drained here and the slot given back. */
static rn_status run_async(nv_exec *x, rn_kernel_args *args, void *arena)
{
    nv_slot *sl;
    rn_status st = slot_acquire_async(x, &sl);
    if (st != RN_OK)
        return st;
    if ((st = queue_run(x, sl, args)) != RN_OK) {
        st = drain(sl, st);
        slot_give_back(x, sl);
        return st;
    }
    nv_run *run = run_of(arena);
    pthread_mutex_lock(&run_lock);
    run->slot = sl;
    run->exec = x;
    run->finishing = false;
    run->status = RN_OK;
    sl->run = run;
    pthread_mutex_unlock(&run_lock);
    /* A run waiting for a slot may finish this one. */
    pthread_mutex_lock(&x->lock);
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
    return RN_OK;
}

/* The driver's thread once the stream reached the callback: signals only
 * (no CUDA call is allowed here). cudaStreamAddCallback rather than
 * cudaLaunchHostFunc: its callback runs, with the error, after a device
 * error too, where a host function is not called and the run would hang. */
static void CUDART_CB stream_reached(cudaStream_t stream, cudaError_t status, void *event)
{
    (void)stream;
    plugin_event_signal(event, status == cudaSuccess ? RN_OK : RN_DEVICE_ERROR);
}

int nv_exec_stage_arm(void *arena, plugin_event *event)
{
    nv_run *run = run_of(arena);
    pthread_mutex_lock(&run_lock);
    nv_slot *sl = run->slot;
    if (sl == NULL || run->finishing) {
        /* Nothing queued (the program failed or was skipped), or another
         * run is finishing it: the finish stage sees to it. */
        pthread_mutex_unlock(&run_lock);
        return RN_OK;
    }
    /* Under the lock: the slot cannot be finished and reused meanwhile. */
    cudaError_t e = cudaSetDevice(run->exec->device);
    if (e == cudaSuccess)
        e = cudaStreamAddCallback(sl->stream, stream_reached, event, 0);
    pthread_mutex_unlock(&run_lock);
    if (e == cudaSuccess)
        return PLUGIN_STAGE_PENDING; /* the event may be signalled already */
    cudaGetLastError();
    return cuda_error(e, NULL, "cudaStreamAddCallback"); /* the finish stage drains */
}

int nv_exec_stage_finish(plugin_request *request, uint32_t stage, void *ctx)
{
    (void)stage, (void)ctx;
    void *arena = plugin_request_arena(request);
    if (arena == NULL)
        return RN_OK;
    nv_run *run = run_of(arena);
    pthread_mutex_lock(&run_lock);
    while (run->finishing)
        pthread_cond_wait(&run_done, &run_lock);
    nv_slot *sl = run->slot;
    if (sl == NULL) {
        /* Not queued, or finished by the run that took its slot. */
        rn_status st = run->status;
        run->status = RN_OK;
        pthread_mutex_unlock(&run_lock);
        return st == RN_OK ? RN_OK : rn_set_error(st, "%s", run->error);
    }
    nv_exec *x = run->exec;
    run->finishing = true;
    pthread_mutex_unlock(&run_lock);
    cudaError_t e = cudaSetDevice(x->device);
    /* The wait completed, so this returns at once; it drains if the wait
     * could not be armed. */
    rn_status st = drain(sl, e == cudaSuccess ? RN_OK : cuda_error(e, NULL, "cudaSetDevice"));
    st = finish_run(x, sl, st);
    pthread_mutex_lock(&run_lock);
    run->slot = NULL;
    run->finishing = false;
    sl->run = NULL;
    pthread_cond_broadcast(&run_done);
    pthread_mutex_unlock(&run_lock);
    slot_give_back(x, sl);
    return st;
}

void nv_exec_plan_stages(plugin_plan_options *o, bool async_stages)
{
    o->n_stages = 0;
    if (!async_stages)
        return;
    o->n_stages = 2;
    o->stages[0] = (plugin_stage){.stage = EXECUTORS_STAGE_WAIT,
                                  .where = EXECUTORS_ON_STREAM,
                                  .always = true,
                                  .arm = nv_exec_stage_arm};
    o->stages[1] = (plugin_stage){.stage = EXECUTORS_STAGE_DOWNLOAD,
                                  .where = EXECUTORS_ON_STREAM,
                                  .always = true,
                                  .run = nv_exec_stage_finish};
}

rn_status nv_exec_run(rn_kernel_args *args)
{
    nv_exec *x = args->state;
    const nv_program *p = x->prog;
    if (args->cancel != NULL && atomic_load(args->cancel))
        return RN_CANCELLED;
    cudaError_t set = cudaSetDevice(x->device); /* the runtime's device is per thread */
    if (set != cudaSuccess)
        return cuda_error(set, NULL, "cudaSetDevice");
    if (args->n_inputs != x->n_args || args->n_outputs != p->n_outputs)
        return rn_set_error(RN_INTERNAL, "NVIDIA: partition called with %d inputs, %d outputs",
                            args->n_inputs, args->n_outputs);
    if (x->async_stages) {
        plugin_request *r = plugin_kernel_request(args);
        void *arena = r != NULL ? plugin_request_arena(r) : NULL;
        /* Only in a plan whose arenas carry the record (NVIDIA's own with
         * the property on); anywhere else the synchronous run below. */
        if (arena != NULL && run_of(arena)->magic == NV_RUN_MAGIC)
            return run_async(x, args, arena);
    }
    nv_slot *sl;
    rn_status st = slot_acquire(x, &sl);
    if (st != RN_OK)
        return st;
    /* Wait for what was queued, even after an error, before the slot is
     * reused. */
    st = finish_run(x, sl, drain(sl, queue_run(x, sl, args)));
    slot_give_back(x, sl);
    return st;
}

/* ---- life ---- */

rn_status nv_exec_create(nv_program *prog, const char *const *input_names, int n_inputs,
                         const nv_exec_options *o, nv_exec **out)
{
    nv_exec *x = calloc(1, sizeof *x);
    if (x == NULL) {
        nv_program_free(prog);
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    }
    x->prog = prog;
    x->device = o->device;
    x->owner = o->owner;
    x->allow_tf32 = o->allow_tf32;
    x->cuda_graph = o->cuda_graph;
    x->async_stages = o->async_stages;
    const char *mode = getenv("RUNNEL_NV_ATTENTION");
    x->attention_mode =
        mode != NULL && strcmp(mode, "rows") == 0 ? NVK_ATTENTION_ROWS : NVK_ATTENTION_AUTO;
    x->max_slots = o->max_slots > 0 ? o->max_slots : 1;
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->cond, NULL);
    x->n_args = n_inputs;
    x->arg_input = calloc((size_t)n_inputs + 1, sizeof *x->arg_input);
    x->dev = calloc((size_t)prog->n_steps + 1, sizeof *x->dev);
    x->slots = calloc((size_t)x->max_slots, sizeof *x->slots);
    rn_status st = RN_OK;
    if (x->arg_input == NULL || x->dev == NULL || x->slots == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    for (int k = 0; k < n_inputs && st == RN_OK; k++) {
        x->arg_input[k] = -1;
        for (int i = 0; i < prog->n_inputs; i++)
            if (strcmp(prog->values[prog->input_value[i]].name, input_names[k]) == 0)
                x->arg_input[k] = i;
    }
    cudaError_t e;
    if (st == RN_OK && (e = cudaSetDevice(o->device)) != cudaSuccess)
        st = cuda_error(e, NULL, "cudaSetDevice");
    if (st == RN_OK && cudnnCreate(&x->plan_handle) != CUDNN_STATUS_SUCCESS)
        st = rn_set_error(RN_DEVICE_ERROR, "NVIDIA: cannot create a cuDNN handle");
    if (st == RN_OK)
        st = upload_weights(x, o);
    /* A tuner that cannot be made (its events) leaves the heuristic's
     * choices: tuning is an optimisation, not a condition of compiling. */
    x->tuned = o->autotune;
    if (st == RN_OK && o->autotune && nv_tuner_create(NV_TUNE_BUDGET_MS, &x->tuner) != RN_OK)
        x->tuner = NULL;
    if (x->tuner != NULL && o->tuned != NULL)
        nv_tune_merge(&x->tuner->table, o->tuned);
    for (int k = 0; k < prog->n_steps && st == RN_OK; k++)
        st = prepare_step(x, &prog->steps[k], &x->dev[k]);
    if (x->tuner != NULL) {
        x->tuning = *x->tuner;
        x->tuning.scratch = x->tuning.start = x->tuning.stop = NULL;
        x->tuner->table = (nv_tune_table){0}; /* the choices stay with the program */
        nv_tuner_free(x->tuner);              /* its scratch goes before the slots take theirs */
        x->tuner = NULL;
    }
    if (st != RN_OK) {
        nv_exec_free(x);
        return st;
    }
    int w = snprintf(x->impl, sizeof x->impl, "cudnn+cublas:%s:%d steps",
                     rn_element_type_name(prog->compute), prog->n_steps);
    if (x->tuned && w > 0 && (size_t)w < sizeof x->impl)
        snprintf(x->impl + w, sizeof x->impl - (size_t)w, ":tuned %d of %d convolutions",
                 x->tuning.changed, x->tuning.graphs);
    *out = x;
    return RN_OK;
}

void nv_exec_set_timing(nv_exec *x, bool on)
{
    atomic_store(&x->timing, on);
}

uint64_t nv_exec_steps_ns(const nv_exec *x)
{
    return atomic_load(&x->steps_ns);
}

void nv_exec_step_profile(nv_exec *x, char *buf, size_t size)
{
    double ms[NV_STEP_KINDS];
    int steps[NV_STEP_KINDS];
    pthread_mutex_lock(&x->lock);
    memcpy(ms, x->kind_ms, sizeof ms);
    memcpy(steps, x->kind_steps, sizeof steps);
    double in_ms = x->host_in_ms, out_ms = x->host_out_ms;
    pthread_mutex_unlock(&x->lock);
    int w0 = snprintf(buf, size, "host copies in %.3f ms, out %.3f ms", in_ms, out_ms);
    size_t used = w0 > 0 && (size_t)w0 < size ? (size_t)w0 : 0;
    for (;;) { /* the costliest kind first */
        int best = -1;
        for (int k = 0; k < NV_STEP_KINDS; k++)
            if (steps[k] > 0 && (best < 0 || ms[k] > ms[best]))
                best = k;
        if (best < 0 || used + 1 >= size)
            break;
        int w = snprintf(buf + used, size - used, "%s%s %dx %.3f ms", used ? "; " : "",
                         nv_step_kind_name((nv_step_kind)best), steps[best], ms[best]);
        if (w < 0)
            break;
        used += (size_t)w < size - used ? (size_t)w : size - used - 1;
        steps[best] = 0;
    }
}

const nv_tune_table *nv_exec_tuned(const nv_exec *x)
{
    return &x->tuning.table;
}

void nv_exec_conv_engines(const nv_exec *x, char *buf, size_t size)
{
    const nv_tuner *t = &x->tuning;
    int w;
    if (!x->tuned)
        w = snprintf(buf, size, "heuristic");
    else
        w = snprintf(buf, size,
                     "tuned graphs=%d reused=%d timed=%d changed=%d failed=%d over_budget=%d "
                     "candidates<=%d tune_ms=%.0f conv_time=%.3f of the heuristic's",
                     t->tuned, t->reused, t->timed, t->changed, t->failed, t->over_budget,
                     NV_TUNE_MAX_CANDIDATES, t->spent_ms,
                     t->first_ms > 0 ? t->best_ms / t->first_ms : 1.0);
    size_t used = w > 0 && (size_t)w < size ? (size_t)w : 0;
    for (int k = 0; k < x->prog->n_steps && used + 1 < size; k++) {
        if (x->dev[k].conv == NULL)
            continue;
        w = snprintf(buf + used, size - used, "; %s: %s", x->prog->steps[k].node,
                     nv_conv_graph_engine(x->dev[k].conv));
        if (w < 0)
            break;
        used += (size_t)w < size - used ? (size_t)w : size - used - 1;
    }
}

const char *nv_exec_impl(const nv_exec *x)
{
    return x->impl;
}

void *nv_exec_owner(const nv_exec *x)
{
    return x->owner;
}

const nv_program *nv_exec_program(const nv_exec *x)
{
    return x->prog;
}

void nv_exec_free(nv_exec *x)
{
    if (x == NULL)
        return;
    for (int i = 0; i < x->n_slots; i++)
        slot_release(&x->slots[i], x->prog->n_steps + 1);
    for (int k = 0; x->dev != NULL && k < x->prog->n_steps; k++)
        release_step(&x->dev[k]);
    for (int v = 0; x->const_dev != NULL && v < x->prog->n_values; v++)
        if (x->const_dev[v] != NULL)
            nv_weights_put(x->weights, x->const_dev[v]);
    free(x->const_dev);
    nv_tune_table_release(&x->tuning.table);
    nv_weights_release(x->weights);
    if (x->plan_handle)
        cudnnDestroy(x->plan_handle);
    pthread_mutex_destroy(&x->lock);
    pthread_cond_destroy(&x->cond);
    nv_program_free(x->prog);
    free(x->dev);
    free(x->slots);
    free(x->arg_input);
    free(x);
}
