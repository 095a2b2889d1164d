/* Pooling (Max, Average, Global), LRN, Softmax and LogSoftmax,
 * LayerNormalization over the last axis: runnel's OpenCL kernels, one work-item per output
 * element (per row for the normalisations). */
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"
#include "plugins/gpu/window.h"

/* One launch with a fixed argument list after the input and output. */
typedef struct nn_state {
    gpu_node g;
    size_t global;
    int n_args;
    int iargs[20];
    float fargs[4];
    int n_fargs;
} nn_state;

static rn_status nn_new(const rn_node *node, const char *kernel, nn_state **out)
{
    const char *kernels[] = {kernel, NULL};
    return gpu_state_new(sizeof **out, node, kernels, (void **)out);
}

/* Launches kernel 0 with (x, xoff, y, yoff, iargs..., fargs...). */
static rn_status nn_run(rn_kernel_args *args)
{
    nn_state *s = args->state;
    gpu_mem x = gpu_input(&s->g, args, 0), y = gpu_output(args, 0);
    int xoff = (int)x.off, yoff = (int)y.off;
    gpu_arg a[4 + 20 + 4] = {GPU_ARG(x.mem), GPU_ARG(xoff), GPU_ARG(y.mem), GPU_ARG(yoff)};
    int n = 4;
    for (int i = 0; i < s->n_args; i++)
        a[n++] = GPU_ARG(s->iargs[i]);
    for (int i = 0; i < s->n_fargs; i++)
        a[n++] = GPU_ARG(s->fargs[i]);
    return gpu_launch(&s->g, args, 0, a, n, s->global);
}

static size_t count(rn_partial_shape s, int from, int to)
{
    size_t n = 1;
    for (int d = from; d < to; d++)
        n *= (size_t)s.dims[d];
    return n;
}

/* ---- MaxPool, AveragePool ---- */

static bool pool_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_input_shape(node, 0).rank != 4) {
        *why = "GPU: 2-D pooling only";
        return false;
    }
    if (rn_node_output_count(node) > 1 && rn_node_output_name(node, 1)[0] != '\0') {
        *why = "GPU: MaxPool's indices are not implemented";
        return false;
    }
    gpu_window w;
    if (!gpu_window_parse(node, 2, why, &w))
        return false;
    if (w.kernel[0] == 0) {
        *why = "GPU: pooling needs kernel_shape";
        return false;
    }
    return true;
}

static rn_status pool_prepare(const rn_node *node, void **out)
{
    nn_state *s;
    rn_status st = nn_new(node, "pool2d", &s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    gpu_window w;
    const char *why;
    gpu_window_parse(node, 2, &why, &w);
    int H = (int)x.dims[2], W = (int)x.dims[3], OH = (int)y.dims[2], OW = (int)y.dims[3];
    gpu_window_resolve(&w, H, W, OH, OW, w.kernel[0], w.kernel[1]);
    bool max = strcmp(rn_node_op_type(node), "MaxPool") == 0;
    int mode = max ? 0 : rn_node_attr_int(node, "count_include_pad", 0) ? 2 : 1;
    int v[] = {
        H,           W,         OH,        OW,        w.kernel[0], w.kernel[1],   w.stride[0],
        w.stride[1], w.pads[0], w.pads[1], w.pads[2], w.pads[3],   w.dilation[0], w.dilation[1],
        mode};
    s->n_args = (int)(sizeof v / sizeof v[0]);
    memcpy(s->iargs, v, sizeof v);
    s->global = count(y, 0, 4);
    *out = s;
    return RN_OK;
}

/* ---- GlobalMaxPool, GlobalAveragePool ---- */

static bool global_pool_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_input_shape(node, 0).rank < 3) {
        *why = "GPU: global pooling of rank >= 3";
        return false;
    }
    return true;
}

static rn_status global_pool_prepare(const rn_node *node, void **out)
{
    nn_state *s;
    rn_status st = nn_new(node, "global_pool", &s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    s->iargs[0] = (int)count(x, 2, x.rank);
    s->iargs[1] = strcmp(rn_node_op_type(node), "GlobalMaxPool") == 0 ? 0 : 1;
    s->n_args = 2;
    s->global = count(x, 0, 2);
    *out = s;
    return RN_OK;
}

/* ---- LRN ---- */

static bool lrn_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_input_shape(node, 0).rank < 2 || rn_node_attr_int(node, "size", 0) < 1) {
        *why = "GPU: LRN of rank >= 2 with a positive size";
        return false;
    }
    return true;
}

static rn_status lrn_prepare(const rn_node *node, void **out)
{
    nn_state *s;
    rn_status st = nn_new(node, "lrn", &s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    s->iargs[0] = (int)x.dims[1];
    s->iargs[1] = (int)count(x, 2, x.rank);
    s->iargs[2] = (int)rn_node_attr_int(node, "size", 1);
    s->n_args = 3;
    s->fargs[0] = rn_node_attr_float_or_default(node, "alpha");
    s->fargs[1] = rn_node_attr_float_or_default(node, "beta");
    s->fargs[2] = rn_node_attr_float_or_default(node, "bias");
    s->n_fargs = 3;
    s->global = count(x, 0, x.rank);
    *out = s;
    return RN_OK;
}

/* ---- Softmax, LogSoftmax ---- */

static bool softmax_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    int rank = rn_node_input_shape(node, 0).rank;
    int64_t axis = rn_node_attr_int(node, "axis", rn_node_opset(node) >= 13 ? -1 : 1);
    if (axis < -rank || axis >= rank || rank == 0) {
        *why = "GPU: Softmax axis out of range";
        return false;
    }
    return true;
}

static rn_status softmax_prepare(const rn_node *node, void **out)
{
    nn_state *s;
    rn_status st = nn_new(node, "softmax", &s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    bool v13 = rn_node_opset(node) >= 13;
    int axis = (int)rn_node_attr_int(node, "axis", v13 ? -1 : 1);
    if (axis < 0)
        axis += x.rank;
    /* Before opset 13 the input is read as a 2-D matrix split at axis. */
    size_t D = v13 ? (size_t)x.dims[axis] : count(x, axis, x.rank);
    size_t inner = v13 ? count(x, axis + 1, x.rank) : 1;
    s->iargs[0] = (int)D;
    s->iargs[1] = (int)inner;
    s->iargs[2] = strcmp(rn_node_op_type(node), "LogSoftmax") == 0;
    s->n_args = 3;
    s->global = count(x, 0, axis) * inner;
    *out = s;
    return RN_OK;
}

/* ---- LayerNormalization (over the last axis) ---- */

typedef struct layernorm_state {
    gpu_node g;
    int D;
    size_t rows;
    float eps;
} layernorm_state;

static bool layernorm_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    int rank = rn_node_input_shape(node, 0).rank;
    int64_t axis = rn_node_attr_int(node, "axis", -1);
    if (rank < 1 || (axis != -1 && axis != rank - 1)) {
        *why = "GPU: LayerNormalization over the last axis only";
        return false;
    }
    int D = (int)rn_node_input_shape(node, 0).dims[rank - 1];
    for (int i = 1; i < rn_node_input_count(node); i++) {
        rn_partial_shape s = rn_node_input_shape(node, i);
        if (rn_node_input_name(node, i)[0] != '\0' && (s.rank != 1 || s.dims[0] != D)) {
            *why = "GPU: LayerNormalization's scale and bias of the last axis' size only";
            return false;
        }
    }
    return true;
}

static rn_status layernorm_prepare(const rn_node *node, void **out)
{
    layernorm_state *s;
    static const char *const kernels[] = {"layernorm", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    s->D = (int)x.dims[x.rank - 1];
    s->rows = count(x, 0, x.rank - 1);
    s->eps = rn_node_attr_float_or_default(node, "epsilon");
    *out = s;
    return RN_OK;
}

static rn_status layernorm_run(rn_kernel_args *args)
{
    layernorm_state *s = args->state;
    gpu_mem x = gpu_input(&s->g, args, 0), g = gpu_input(&s->g, args, 1),
            b = gpu_input(&s->g, args, 2), y = gpu_output(args, 0);
    int has_b = b.mem != NULL;
    cl_mem bm = has_b ? b.mem : g.mem;
    int xoff = (int)x.off, yoff = (int)y.off, goff = (int)g.off, boff = (int)b.off;
    /* Mean and InvStdDev, when asked for (else y stands in, unwritten). */
    gpu_mem m = y, r = y;
    int has_m = args->n_outputs > 1 && args->outputs[1].type != RN_UNDEFINED;
    int has_r = args->n_outputs > 2 && args->outputs[2].type != RN_UNDEFINED;
    if (has_m)
        m = gpu_output(args, 1);
    if (has_r)
        r = gpu_output(args, 2);
    int moff = (int)m.off, roff = (int)r.off;
    gpu_arg a[] = {GPU_ARG(x.mem),  GPU_ARG(xoff),  GPU_ARG(y.mem), GPU_ARG(yoff),  GPU_ARG(g.mem),
                   GPU_ARG(goff),   GPU_ARG(bm),    GPU_ARG(boff),  GPU_ARG(has_b), GPU_ARG(s->D),
                   GPU_ARG(s->eps), GPU_ARG(m.mem), GPU_ARG(moff),  GPU_ARG(has_m), GPU_ARG(r.mem),
                   GPU_ARG(roff),   GPU_ARG(has_r)};
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->rows);
}

const rn_kernel gpu_kernel_layernorm = {
    .domain = "",
    .op_type = "LayerNormalization",
    .impl_type = "opencl",
    .supports = layernorm_supports,
    .prepare = layernorm_prepare,
    .run = layernorm_run,
    .release = gpu_state_free,
    .input_layout = gpu_input_layout,
    .output_layout = gpu_output_layout,
};

#define NN_KERNEL(name, op, supports_fn, prepare_fn)                                               \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "opencl",                                                                     \
        .supports = supports_fn,                                                                   \
        .prepare = prepare_fn,                                                                     \
        .run = nn_run,                                                                             \
        .release = gpu_state_free,                                                                 \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

NN_KERNEL(gpu_kernel_max_pool, "MaxPool", pool_supports, pool_prepare);
NN_KERNEL(gpu_kernel_average_pool, "AveragePool", pool_supports, pool_prepare);
NN_KERNEL(gpu_kernel_global_max_pool, "GlobalMaxPool", global_pool_supports, global_pool_prepare);
NN_KERNEL(gpu_kernel_global_average_pool, "GlobalAveragePool", global_pool_supports,
          global_pool_prepare);
NN_KERNEL(gpu_kernel_lrn, "LRN", lrn_supports, lrn_prepare);
NN_KERNEL(gpu_kernel_softmax, "Softmax", softmax_supports, softmax_prepare);
NN_KERNEL(gpu_kernel_log_softmax, "LogSoftmax", softmax_supports, softmax_prepare);
