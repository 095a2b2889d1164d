/* A convolution step as a cuDNN backend graph (cudnnBackend*, the C API
 * under cudnn-frontend): X * W -> + bias -> + residual -> activation -> Y,
 * the intermediate tensors virtual so that a runtime-fusion engine runs
 * the chain as one kernel. Building the descriptors needs no device; the
 * operation graph, the heuristics (mode A) and the execution plan, chosen
 * once at compile time with its workspace size, need the handle. */
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/nvidia/nvidia.h"

enum { UID_X = 1, UID_W, UID_Y, UID_B, UID_R, UID_VIRTUAL = 100 };

#define MAX_DESC 64

struct nv_conv_graph {
    cudnnBackendDescriptor_t desc[MAX_DESC]; /* everything made, freed together */
    int n_desc;
    cudnnBackendDescriptor_t ops[4];
    int n_ops;
    cudnnBackendDescriptor_t plan, cfg; /* the chosen engine configuration */
    bool bias, residual;
    bool f32;        /* f32 data (not f16 or bf16): tensor-core engines only with TF32 allowed */
    bool nhwc;       /* a tensor of the graph is channels-last */
    size_t bytes[5]; /* device bytes of X, W, Y, the bias and the residual (0: absent) */
    int64_t key[NV_CONV_KEY]; /* what the heuristics see: nv_conv_graph_key */
    char engine[96];
};

static rn_status dnn_error(cudnnStatus_t s, const char *what)
{
    return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: cuDNN %s: %s", what, cudnnGetErrorString(s));
}

static cudnnStatus_t make(nv_conv_graph *g, cudnnBackendDescriptorType_t type,
                          cudnnBackendDescriptor_t *out)
{
    if (g->n_desc == MAX_DESC)
        return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(type, out);
    if (s == CUDNN_STATUS_SUCCESS)
        g->desc[g->n_desc++] = *out;
    return s;
}

#define SET(d, attr, type, n, ptr)                                                                 \
    do {                                                                                           \
        cudnnStatus_t s_ = cudnnBackendSetAttribute((d), (attr), (type), (n), (ptr));              \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                            \
            return s_;                                                                             \
    } while (0)

/* A rank-4 tensor of dims (N, C, H, W), NCHW or channels-last (NHWC;
 * for a filter (K, C, R, S) that is KRSC). */
static cudnnStatus_t tensor(nv_conv_graph *g, int64_t uid, cudnnDataType_t dt, const int64_t *dims,
                            bool is_virtual, bool nhwc, cudnnBackendDescriptor_t *out)
{
    int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    if (nhwc) {
        strides[1] = 1;
        strides[3] = dims[1];
        strides[2] = dims[3] * dims[1];
    }
    int64_t alignment = 16;
    cudnnStatus_t s = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    SET(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    SET(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    SET(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    SET(*out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    return cudnnBackendFinalize(*out);
}

/* A pointwise operation y = mode(x[, b]). */
static cudnnStatus_t pointwise(nv_conv_graph *g, cudnnPointwiseMode_t mode, const float *clip,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                               cudnnBackendDescriptor_t y)
{
    cudnnBackendDescriptor_t pw, op;
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnStatus_t s = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (clip != NULL) { /* lower clip, upper clip, lower slope */
        if (clip[0] > -3e38f)
            SET(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_FLOAT, 1, &clip[0]);
        if (clip[1] < 3e38f)
            SET(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_FLOAT, 1, &clip[1]);
        if (clip[2] != 0.0f)
            SET(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_FLOAT, 1, &clip[2]);
    }
    if ((s = cudnnBackendFinalize(pw)) != CUDNN_STATUS_SUCCESS)
        return s;
    if ((s = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op)) != CUDNN_STATUS_SUCCESS)
        return s;
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b != NULL)
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    if ((s = cudnnBackendFinalize(op)) != CUDNN_STATUS_SUCCESS)
        return s;
    g->ops[g->n_ops++] = op;
    return CUDNN_STATUS_SUCCESS;
}

/* The pointwise mode of a fused activation (false: cuDNN has none). */
static bool act_mode(const nv_step *st, cudnnPointwiseMode_t *mode, float clip[3], bool *clipped)
{
    *clipped = false;
    clip[0] = -3.4e38f, clip[1] = 3.4e38f, clip[2] = 0.0f;
    switch (st->act) {
    case NV_ACT_RELU:
        *mode = CUDNN_POINTWISE_RELU_FWD;
        return true;
    case NV_ACT_SIGMOID:
        *mode = CUDNN_POINTWISE_SIGMOID_FWD;
        return true;
    case NV_ACT_TANH:
        *mode = CUDNN_POINTWISE_TANH_FWD;
        return true;
    case NV_ACT_GELU:
        *mode = CUDNN_POINTWISE_GELU_FWD;
        return true;
    case NV_ACT_GELU_TANH:
        *mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
        return true;
    case NV_ACT_LEAKY_RELU:
        *mode = CUDNN_POINTWISE_RELU_FWD;
        clip[0] = 0.0f, clip[2] = st->alpha, *clipped = true;
        return true;
    case NV_ACT_CLIP:
        *mode = CUDNN_POINTWISE_RELU_FWD;
        clip[0] = st->alpha, clip[1] = st->beta, *clipped = true;
        return true;
    default:
        return false;
    }
}

static cudnnStatus_t build(nv_conv_graph *g, const nv_program *p, const nv_step *st, bool fused)
{
    const nv_value *x = &p->values[st->in[0]], *w = &p->values[st->in[1]], *y = &p->values[st->out];
    cudnnDataType_t dt = p->compute == RN_BF16  ? CUDNN_DATA_BFLOAT16
                         : p->compute == RN_F16 ? CUDNN_DATA_HALF
                                                : CUDNN_DATA_FLOAT;
    g->f32 = dt == CUDNN_DATA_FLOAT;
    cudnnDataType_t acc = CUDNN_DATA_FLOAT;
    cudnnPointwiseMode_t mode = CUDNN_POINTWISE_RELU_FWD;
    float clip[3];
    bool clipped = false, act = fused && st->act != NV_ACT_NONE;
    if (act && !act_mode(st, &mode, clip, &clipped))
        return CUDNN_STATUS_NOT_SUPPORTED;
    g->bias = fused && st->in[2] >= 0;
    g->residual = fused && st->in[3] >= 0;
    size_t esize = dt == CUDNN_DATA_FLOAT ? 4 : 2;
    g->bytes[0] = (size_t)(x->dims[0] * x->dims[1] * x->dims[2] * x->dims[3]) * esize;
    g->bytes[1] = (size_t)(w->dims[0] * w->dims[1] * w->dims[2] * w->dims[3]) * esize;
    g->bytes[2] = (size_t)(y->dims[0] * y->dims[1] * y->dims[2] * y->dims[3]) * esize;
    g->bytes[3] = g->bias ? (size_t)y->dims[1] * esize : 0;
    g->bytes[4] = g->residual ? g->bytes[2] : 0;
    int chained = (int)g->bias + (int)g->residual + (int)act;
    cudnnBackendDescriptor_t tx, tw, ty, tc;
    cudnnStatus_t s;
    bool xl = x->nhwc, wl = p->values[w->root].nhwc, yl = y->nhwc;
    g->nhwc = xl || wl || yl;
    /* The key: type, shapes, layouts, geometry and the fused chain. */
    int64_t *k = g->key;
    k[0] = dt;
    for (int i = 0; i < 4; i++)
        k[1 + i] = x->dims[i], k[5 + i] = w->dims[i], k[9 + i] = y->dims[i],
              k[14 + i] = st->pads[i];
    k[13] = (int64_t)xl | (int64_t)wl << 1 | (int64_t)yl << 2;
    k[18] = st->strides[0], k[19] = st->strides[1];
    k[20] = st->dilations[0], k[21] = st->dilations[1];
    k[22] = g->bias, k[23] = g->residual, k[24] = act ? (int64_t)mode : -1;
    for (int i = 0; i < 3; i++) {
        uint32_t bits = 0;
        if (clipped)
            memcpy(&bits, &clip[i], sizeof bits);
        k[25 + i] = bits;
    }
    if ((s = tensor(g, UID_X, dt, x->dims, false, xl, &tx)) != CUDNN_STATUS_SUCCESS ||
        (s = tensor(g, UID_W, dt, w->dims, false, wl, &tw)) != CUDNN_STATUS_SUCCESS ||
        (s = tensor(g, UID_Y, dt, y->dims, false, yl, &ty)) != CUDNN_STATUS_SUCCESS)
        return s;
    /* The convolution writes Y, or a virtual f32 tensor the chain reads. */
    if (chained == 0)
        tc = ty;
    else if ((s = tensor(g, UID_VIRTUAL, acc, y->dims, true, yl, &tc)) != CUDNN_STATUS_SUCCESS)
        return s;
    cudnnBackendDescriptor_t conv, op;
    int64_t spatial = 2, pre[2] = {st->pads[0], st->pads[1]}, post[2] = {st->pads[2], st->pads[3]};
    cudnnConvolutionMode_t cm = CUDNN_CROSS_CORRELATION;
    if ((s = make(g, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv)) != CUDNN_STATUS_SUCCESS)
        return s;
    SET(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &acc);
    SET(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &cm);
    SET(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    SET(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, st->dilations);
    SET(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, st->strides);
    SET(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre);
    SET(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post);
    if ((s = cudnnBackendFinalize(conv)) != CUDNN_STATUS_SUCCESS)
        return s;
    float alpha = 1.0f, beta = 0.0f;
    if ((s = make(g, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op)) !=
        CUDNN_STATUS_SUCCESS)
        return s;
    SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &conv);
    SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx);
    SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw);
    SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tc);
    SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    SET(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    if ((s = cudnnBackendFinalize(op)) != CUDNN_STATUS_SUCCESS)
        return s;
    g->ops[g->n_ops++] = op;
    /* The chain: each link writes a virtual tensor, the last one Y. */
    cudnnBackendDescriptor_t cur = tc;
    int64_t uid = UID_VIRTUAL + 1;
    int left = chained;
    if (g->bias) {
        int64_t bd[4] = {1, y->dims[1], 1, 1};
        cudnnBackendDescriptor_t tb, next = ty;
        if ((s = tensor(g, UID_B, dt, bd, false, false, &tb)) != CUDNN_STATUS_SUCCESS)
            return s;
        if (--left > 0 &&
            (s = tensor(g, uid++, acc, y->dims, true, yl, &next)) != CUDNN_STATUS_SUCCESS)
            return s;
        if ((s = pointwise(g, CUDNN_POINTWISE_ADD, NULL, cur, tb, next)) != CUDNN_STATUS_SUCCESS)
            return s;
        cur = next;
    }
    if (g->residual) {
        cudnnBackendDescriptor_t tr, next = ty;
        if ((s = tensor(g, UID_R, dt, y->dims, false, yl, &tr)) != CUDNN_STATUS_SUCCESS)
            return s;
        if (--left > 0 &&
            (s = tensor(g, uid++, acc, y->dims, true, yl, &next)) != CUDNN_STATUS_SUCCESS)
            return s;
        if ((s = pointwise(g, CUDNN_POINTWISE_ADD, NULL, cur, tr, next)) != CUDNN_STATUS_SUCCESS)
            return s;
        cur = next;
    }
    if (act)
        return pointwise(g, mode, clipped ? clip : NULL, cur, NULL, ty);
    return CUDNN_STATUS_SUCCESS;
}

rn_status nv_conv_graph_create(const nv_program *p, const nv_step *s, bool fused,
                               nv_conv_graph **out)
{
    nv_conv_graph *g = calloc(1, sizeof *g);
    if (g == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    cudnnStatus_t e = build(g, p, s, fused);
    if (e != CUDNN_STATUS_SUCCESS) {
        nv_conv_graph_free(g);
        return rn_set_error(e == CUDNN_STATUS_NOT_SUPPORTED ? RN_UNSUPPORTED : RN_DEVICE_ERROR,
                            "NVIDIA: node '%s': cuDNN descriptors of the %sconvolution: %s",
                            s->node, fused ? "fused " : "", cudnnGetErrorString(e));
    }
    *out = g;
    return RN_OK;
}

int nv_conv_graph_ops(const nv_conv_graph *g)
{
    return g->n_ops;
}

const int64_t *nv_conv_graph_key(const nv_conv_graph *g)
{
    return g->key;
}

/* Whether an engine configuration computes f32 through TF32 tensor cores
 * (or converts its inputs down); its engine's global index in *index. */
static bool uses_tf32(cudnnBackendDescriptor_t cfg, int64_t *index, bool *rtc)
{
    *rtc = true; /* unknown: not taken where runtime compilation is refused */
    cudnnBackendDescriptor_t eng;
    int64_t n = 0;
    bool tf32 = true; /* unknown: not taken when TF32 is off */
    *index = -1;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return true;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &eng) == CUDNN_STATUS_SUCCESS) {
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 index);
        cudnnBackendNumericalNote_t notes[32];
        if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE, 32, &n,
                                     notes) == CUDNN_STATUS_SUCCESS) {
            tf32 = false;
            for (int64_t i = 0; i < n; i++)
                if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
                    notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
                    tf32 = true;
        }
        cudnnBackendBehaviorNote_t behavior[32];
        if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                     32, &n, behavior) == CUDNN_STATUS_SUCCESS) {
            *rtc = false;
            for (int64_t i = 0; i < n; i++)
                *rtc |= behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
        }
    }
    cudnnBackendDestroyDescriptor(eng);
    return tf32;
}

enum { MAX_CANDIDATES = 64 };

/* An engine configuration whose execution plan finalised. */
typedef struct candidate {
    cudnnBackendDescriptor_t plan, cfg;
    int64_t index; /* the engine's global index */
    size_t workspace;
} candidate;

static void candidate_free(candidate *c)
{
    if (c->plan != NULL)
        cudnnBackendDestroyDescriptor(c->plan);
    if (c->cfg != NULL)
        cudnnBackendDestroyDescriptor(c->cfg);
    c->plan = c->cfg = NULL;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Tries the engine configurations of one heuristics mode in their order and
 * keeps up to `cap` whose plans finalise in out[*n...] (their workspace at
 * most NV_TUNE_MAX_EXTRA_WORKSPACE beyond the first kept's); after the
 * first, none is tried past `deadline` (now_ms; 0: none). *tried counts the
 * candidates, *excluded those skipped for TF32 or runtime compilation. */
static void collect(nv_conv_graph *g, cudnnHandle_t h, cudnnBackendDescriptor_t graph,
                    cudnnBackendHeurMode_t mode, bool allow_tf32, int cap, double deadline,
                    candidate *out, int *n, int *tried, int *excluded)
{
    cudnnBackendDescriptor_t heur;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) !=
        CUDNN_STATUS_SUCCESS)
        return;
    cudnnBackendDescriptor_t cfgs[MAX_CANDIDATES];
    int64_t count = 0, made = 0;
    if (cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &graph) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                 &mode) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 0, &count, NULL) != CUDNN_STATUS_SUCCESS)
        goto done;
    if (count > MAX_CANDIDATES)
        count = MAX_CANDIDATES;
    for (; made < count; made++)
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made]) !=
            CUDNN_STATUS_SUCCESS)
            break;
    if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 made, &count, cfgs) != CUDNN_STATUS_SUCCESS)
        goto done;
    for (int64_t i = 0; i < count && i < made && *n < cap; i++) {
        if (*n > 0 && deadline > 0 && now_ms() > deadline)
            break;
        int64_t index;
        bool rtc;
        ++*tried;
        /* f32 stays f32 unless NVIDIA_ALLOW_TF32 (f16 and bf16 run on
         * tensor cores anyway). */
        if (uses_tf32(cfgs[i], &index, &rtc) && g->f32 && !allow_tf32) {
            ++*excluded;
            continue;
        }
        /* Channels-last graphs take precompiled engines only: on an H200 a
         * runtime-compiled engine's plan made at compile time could not be
         * made again on a request slot's handle
         * (CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED). */
        if (rtc && g->nhwc) {
            ++*excluded;
            continue;
        }
        cudnnBackendDescriptor_t plan;
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
            CUDNN_STATUS_SUCCESS)
            continue;
        int64_t ws = 0, nws = 0;
        if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &h) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &cfgs[i]) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
            cudnnBackendDestroyDescriptor(plan);
            continue;
        }
        cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                 1, &nws, &ws);
        size_t bytes = (size_t)(ws > 0 ? ws : 0);
        if (*n > 0 && bytes > out[0].workspace + NV_TUNE_MAX_EXTRA_WORKSPACE) {
            cudnnBackendDestroyDescriptor(plan);
            continue;
        }
        /* The configuration is kept with its plan: each request slot
         * builds its own plan from it. */
        out[*n] = (candidate){.plan = plan, .cfg = cfgs[i], .index = index, .workspace = bytes};
        cfgs[i] = NULL;
        ++*n;
    }
done:
    for (int64_t i = 0; i < made; i++)
        if (cfgs[i] != NULL)
            cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
}

size_t nv_conv_graph_operand_bytes(const nv_conv_graph *g)
{
    size_t sum = 0;
    for (int i = 0; i < 5; i++)
        sum += (g->bytes[i] + 255) / 256 * 256;
    return sum;
}

/* One run of candidate c on the tuner's scratch timed with its events on
 * the handle's stream (ms; -1 when it failed). */
static float time_once(nv_conv_graph *g, cudnnHandle_t h, nv_tuner *t, cudaStream_t stream,
                       const candidate *c, void *const *ops, void *workspace)
{
    float ms = -1.0f;
    if (cudaEventRecord((cudaEvent_t)t->start, stream) != cudaSuccess ||
        nv_conv_graph_execute(g, h, c->plan, ops[0], ops[1], ops[2], ops[3], ops[4], workspace) !=
            RN_OK ||
        cudaEventRecord((cudaEvent_t)t->stop, stream) != cudaSuccess ||
        cudaEventSynchronize((cudaEvent_t)t->stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, (cudaEvent_t)t->start, (cudaEvent_t)t->stop) != cudaSuccess) {
        cudaGetLastError();
        cudaStreamSynchronize(stream);
        return -1.0f;
    }
    return ms;
}

/* Times the n candidates (a warm-up run, then NV_TUNE_RUNS, the minimum;
 * a candidate whose warm-up is over NV_TUNE_SLOW times the best so far
 * keeps the warm-up's time; after the first, none starts past `deadline`)
 * into ms[]: false when the scratch could not be had (every ms -1). The
 * operands are the scratch's first bytes, the workspace after them. */
static bool time_candidates(nv_conv_graph *g, cudnnHandle_t h, nv_tuner *t, const candidate *c,
                            int n, double deadline, float *ms)
{
    for (int i = 0; i < n; i++)
        ms[i] = -1.0f;
    size_t ws = 0;
    for (int i = 0; i < n; i++)
        ws = c[i].workspace > ws ? c[i].workspace : ws;
    void *base, *ops[5];
    cudaStream_t stream = NULL;
    if (nv_tuner_reserve(t, nv_conv_graph_operand_bytes(g) + ws + 256, &base) != RN_OK ||
        cudnnGetStream(h, &stream) != CUDNN_STATUS_SUCCESS)
        return false;
    char *at = base;
    for (int i = 0; i < 5; i++) {
        ops[i] = g->bytes[i] > 0 ? at : NULL;
        at += (g->bytes[i] + 255) / 256 * 256;
    }
    /* Zeros, not whatever the last graph left: NaNs and denormals would
     * time differently from what a model feeds. */
    if (cudaMemsetAsync(base, 0, (size_t)(at - (char *)base), stream) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    float best = -1.0f;
    for (int i = 0; i < n; i++) {
        /* Past the budget the rest stay untimed (-1): they cannot win. */
        if (i > 0 && now_ms() > deadline)
            break;
        float warm = time_once(g, h, t, stream, &c[i], ops, ws > 0 ? at : NULL);
        if (warm <= 0.0f)
            continue;
        t->timed++;
        if (best > 0.0f && warm > NV_TUNE_SLOW * best) {
            ms[i] = warm;
            continue;
        }
        float runs[NV_TUNE_RUNS];
        for (int r = 0; r < NV_TUNE_RUNS; r++)
            runs[r] = time_once(g, h, t, stream, &c[i], ops, ws > 0 ? at : NULL);
        ms[i] = nv_tune_min(runs, NV_TUNE_RUNS);
        if (ms[i] > 0.0f && (best < 0.0f || ms[i] < best))
            best = ms[i];
    }
    return true;
}

rn_status nv_conv_graph_plan(nv_conv_graph *g, void *handle, bool allow_tf32, nv_tuner *tuner,
                             size_t *workspace)
{
    cudnnHandle_t h = handle;
    cudnnBackendDescriptor_t graph;
    cudnnStatus_t s;
    if ((s = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops, g->ops)) !=
            CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                      &h)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendFinalize(graph)) != CUDNN_STATUS_SUCCESS)
        return dnn_error(s, "operation graph");
    double t0 = now_ms();
    int cap = 1;
    /* A graph of the same key as one tuned before gets the same candidates
     * in the same order: the winner's rank is taken again, untimed, within
     * the budget or past it. */
    const nv_tune_record *again = tuner != NULL ? nv_tune_find(&tuner->table, g->key) : NULL;
    if (again != NULL) {
        tuner->graphs++;
        cap = again->rank + 1;
    } else if (tuner != NULL) {
        tuner->graphs++;
        cap = nv_tune_cap(tuner->spent_ms, tuner->budget_ms);
        if (cap == 1)
            tuner->over_budget++;
    }
    double deadline =
        tuner != NULL && again == NULL ? t0 + (tuner->budget_ms - tuner->spent_ms) : 0;
    /* Heuristics mode A in its order; then the fallback list, which holds
     * the engines without tensor cores that f32 without TF32 needs. */
    candidate c[NV_TUNE_MAX_CANDIDATES];
    int n = 0, tried = 0, excluded = 0;
    bool fallback = false;
    collect(g, h, graph, CUDNN_HEUR_MODE_A, allow_tf32, cap, deadline, c, &n, &tried, &excluded);
    if (n == 0) {
        fallback = true;
        collect(g, h, graph, CUDNN_HEUR_MODE_FALLBACK, allow_tf32, cap, deadline, c, &n, &tried,
                &excluded);
    }
    if (n == 0)
        return rn_set_error(RN_UNSUPPORTED,
                            "NVIDIA: cuDNN has no engine for this convolution (%d candidates of "
                            "heuristics A and fallback, %d with TF32 or runtime compilation "
                            "excluded)",
                            tried, excluded);
    float ms[NV_TUNE_MAX_CANDIDATES] = {0};
    int best = 0, pick = 0;
    if (again != NULL) {
        /* Fewer candidates than before (not expected): the first. */
        best = n == again->rank + 1 ? again->rank : 0;
        tuner->reused++;
        tuner->changed += best != 0;
        if (best == again->rank && again->first_ms > 0.0f) {
            tuner->first_ms += again->first_ms;
            tuner->best_ms += again->best_ms;
        }
    } else if (n > 1) {
        pick = time_candidates(g, h, tuner, c, n, deadline, ms) ? nv_tune_pick(ms, n) : -1;
        best = pick >= 0 ? pick : 0;
        tuner->tuned++;
        tuner->changed += best != 0;
        tuner->failed += pick < 0;
        if (pick >= 0 && ms[0] > 0.0f) {
            tuner->first_ms += ms[0];
            tuner->best_ms += ms[best];
        }
        /* Failed timings too: the key then keeps the first, untimed. */
        nv_tune_remember(&tuner->table, g->key, best, ms[0], ms[best]);
    }
    for (int i = 0; i < n; i++)
        if (i != best)
            candidate_free(&c[i]);
    g->plan = c[best].plan;
    g->cfg = c[best].cfg;
    *workspace = c[best].workspace;
    if (again != NULL)
        nv_tune_label_again(g->engine, sizeof g->engine, (long long)c[best].index, fallback, again,
                            best == again->rank);
    else
        nv_tune_label(g->engine, sizeof g->engine, (long long)c[best].index, fallback, ms, n, pick);
    if (tuner != NULL)
        tuner->spent_ms += now_ms() - t0;
    return RN_OK;
}

const char *nv_conv_graph_engine(const nv_conv_graph *g)
{
    return g->engine;
}

rn_status nv_conv_plan_create(const nv_conv_graph *g, void *handle, void **plan)
{
    cudnnHandle_t h = handle;
    cudnnBackendDescriptor_t p;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p);
    if (s != CUDNN_STATUS_SUCCESS)
        return dnn_error(s, "execution plan");
    if ((s = cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                      &h)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->cfg)) !=
            CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendFinalize(p)) != CUDNN_STATUS_SUCCESS) {
        cudnnBackendDestroyDescriptor(p);
        return dnn_error(s, "execution plan of a request slot");
    }
    *plan = p;
    return RN_OK;
}

void nv_conv_plan_free(void *plan)
{
    if (plan != NULL)
        cudnnBackendDestroyDescriptor(plan);
}

rn_status nv_conv_graph_execute(nv_conv_graph *g, void *handle, void *plan, void *x, void *w,
                                void *y, void *bias, void *residual, void *workspace)
{
    int64_t uids[5] = {UID_X, UID_W, UID_Y};
    void *ptrs[5] = {x, w, y};
    int64_t n = 3;
    if (g->bias)
        uids[n] = UID_B, ptrs[n++] = bias;
    if (g->residual)
        uids[n] = UID_R, ptrs[n++] = residual;
    cudnnBackendDescriptor_t pack;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
    if (s != CUDNN_STATUS_SUCCESS)
        return dnn_error(s, "variant pack");
    if ((s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                      uids)) == CUDNN_STATUS_SUCCESS &&
        (s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, ptrs)) == CUDNN_STATUS_SUCCESS &&
        (s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                      1, &workspace)) == CUDNN_STATUS_SUCCESS &&
        (s = cudnnBackendFinalize(pack)) == CUDNN_STATUS_SUCCESS)
        s = cudnnBackendExecute((cudnnHandle_t)handle, plan != NULL ? plan : g->plan, pack);
    cudnnBackendDestroyDescriptor(pack);
    return s == CUDNN_STATUS_SUCCESS ? RN_OK : dnn_error(s, "execute");
}

void nv_conv_graph_free(nv_conv_graph *g)
{
    if (g == NULL)
        return;
    if (g->plan != NULL)
        cudnnBackendDestroyDescriptor(g->plan);
    if (g->cfg != NULL)
        cudnnBackendDestroyDescriptor(g->cfg);
    for (int i = g->n_desc - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(g->desc[i]);
    free(g);
}
