/* A convolution step as a cuDNN backend graph (cudnnBackend*, the C API
 * under cudnn-frontend): X * W -> + bias -> + residual -> activation -> Y,
 * the intermediate tensors virtual so that a runtime-fusion engine runs
 * the chain as one kernel. Building the descriptors needs no device; the
 * operation graph, the heuristics (mode A) and the execution plan, chosen
 * once at compile time with its workspace size, need the handle. */
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    bool f32;  /* f32 data (not f16 or bf16): tensor-core engines only with TF32 allowed */
    bool nhwc; /* a tensor of the graph is channels-last */
    char engine[48];
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
    int chained = (int)g->bias + (int)g->residual + (int)act;
    cudnnBackendDescriptor_t tx, tw, ty, tc;
    cudnnStatus_t s;
    bool xl = x->nhwc, wl = p->values[w->root].nhwc, yl = y->nhwc;
    g->nhwc = xl || wl || yl;
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

/* Tries the engine configurations of one heuristics mode in their order;
 * the first that finalises becomes the plan. *tried counts the candidates,
 * *excluded those skipped for TF32. */
static bool choose(nv_conv_graph *g, cudnnHandle_t h, cudnnBackendDescriptor_t graph,
                   cudnnBackendHeurMode_t mode, bool allow_tf32, size_t *workspace, int *tried,
                   int *excluded)
{
    cudnnBackendDescriptor_t heur;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) !=
        CUDNN_STATUS_SUCCESS)
        return false;
    cudnnBackendDescriptor_t cfgs[MAX_CANDIDATES];
    int64_t count = 0, made = 0;
    bool found = false;
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
    for (int64_t i = 0; i < count && i < made && !found; i++) {
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
        if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &h) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &cfgs[i]) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS) {
            int64_t ws = 0, n = 0;
            cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &ws);
            g->plan = plan;
            g->cfg = cfgs[i];
            cfgs[i] = NULL; /* kept: each request slot builds its plan from it */
            snprintf(g->engine, sizeof g->engine, "engine %lld%s", (long long)index,
                     mode == CUDNN_HEUR_MODE_FALLBACK ? " (fallback)" : "");
            *workspace = (size_t)(ws > 0 ? ws : 0);
            found = true;
        } else {
            cudnnBackendDestroyDescriptor(plan);
        }
    }
done:
    for (int64_t i = 0; i < made; i++)
        if (cfgs[i] != NULL)
            cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    return found;
}

rn_status nv_conv_graph_plan(nv_conv_graph *g, void *handle, bool allow_tf32, size_t *workspace)
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
    /* Heuristics mode A in its order; then the fallback list, which holds
     * the engines without tensor cores that f32 without TF32 needs. */
    int tried = 0, excluded = 0;
    if (choose(g, h, graph, CUDNN_HEUR_MODE_A, allow_tf32, workspace, &tried, &excluded) ||
        choose(g, h, graph, CUDNN_HEUR_MODE_FALLBACK, allow_tf32, workspace, &tried, &excluded))
        return RN_OK;
    return rn_set_error(RN_UNSUPPORTED,
                        "NVIDIA: cuDNN has no engine for this convolution (%d candidates of "
                        "heuristics A and fallback, %d with TF32 excluded)",
                        tried, excluded);
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
