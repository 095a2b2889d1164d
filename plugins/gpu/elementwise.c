/* Elementwise ops: activations and other unary math, broadcasting binary
 * ops, Sum, and BatchNormalization (inference) as a per-channel scale and
 * shift computed once at prepare. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/elementwise.h"

void gpu_broadcast_init(gpu_broadcast *bc, rn_partial_shape y, rn_partial_shape a,
                        rn_partial_shape b)
{
    memset(bc, 0, sizeof *bc);
    bc->rank = y.rank;
    bc->count = 1;
    for (int d = 0; d < y.rank; d++) {
        bc->dims.v[d] = (cl_int)y.dims[d];
        bc->count *= (size_t)y.dims[d];
    }
    const rn_partial_shape *in[2] = {&a, &b};
    gpu_idx8 *st[2] = {&bc->a_strides, &bc->b_strides};
    for (int k = 0; k < 2; k++) {
        int64_t stride = 1;
        for (int d = in[k]->rank - 1; d >= 0; d--) {
            int yd = d + y.rank - in[k]->rank;
            st[k]->v[yd] = in[k]->dims[d] == 1 ? 0 : (cl_int)stride;
            stride *= in[k]->dims[d];
        }
    }
}

rn_status gpu_binary_launch(gpu_node *g, const rn_kernel_args *args, int k, const gpu_broadcast *bc,
                            gpu_mem a, gpu_mem b, gpu_mem y, int op, float alpha)
{
    int aoff = (int)a.off, boff = (int)b.off, yoff = (int)y.off;
    gpu_arg v[] = {GPU_ARG(a.mem),         GPU_ARG(aoff),     GPU_ARG(b.mem),
                   GPU_ARG(boff),          GPU_ARG(y.mem),    GPU_ARG(yoff),
                   GPU_ARG(bc->rank),      GPU_ARG(bc->dims), GPU_ARG(bc->a_strides),
                   GPU_ARG(bc->b_strides), GPU_ARG(op),       GPU_ARG(alpha)};
    return gpu_launch(g, args, k, v, (int)(sizeof v / sizeof v[0]), bc->count);
}

rn_status gpu_unary_launch(gpu_node *g, const rn_kernel_args *args, int k, gpu_mem x, gpu_mem y,
                           size_t n, int act, float p0, float p1)
{
    int xoff = (int)x.off, yoff = (int)y.off;
    gpu_arg v[] = {GPU_ARG(x.mem), GPU_ARG(xoff), GPU_ARG(y.mem), GPU_ARG(yoff),
                   GPU_ARG(act),   GPU_ARG(p0),   GPU_ARG(p1)};
    return gpu_launch(g, args, k, v, (int)(sizeof v / sizeof v[0]), n);
}

static size_t output_count(const rn_node *node)
{
    rn_partial_shape y = rn_node_output_shape(node, 0);
    size_t n = 1;
    for (int d = 0; d < y.rank; d++)
        n *= (size_t)y.dims[d];
    return n;
}

/* ---- unary ---- */

typedef struct unary_state {
    gpu_node g;
    int act;
    float p0, p1;
    size_t n;
} unary_state;

/* Clip's bounds: attributes before opset 11, constant inputs after. */
static bool clip_bounds(const rn_node *node, float *lo, float *hi, const char **why)
{
    *lo = rn_node_attr_float(node, "min", -INFINITY);
    *hi = rn_node_attr_float(node, "max", INFINITY);
    for (int i = 1; i < 3 && i < rn_node_input_count(node); i++) {
        if (rn_node_input_name(node, i)[0] == '\0')
            continue;
        const rn_kernel_tensor *c = rn_node_input_constant(node, i);
        if (c == NULL || c->type != RN_F32 || c->nbytes != sizeof(float)) {
            *why = "GPU: Clip's bounds must be f32 scalar constants";
            return false;
        }
        *(i == 1 ? lo : hi) = *(const float *)c->data;
    }
    return true;
}

static bool unary_supports(const rn_node *node, const char **why)
{
    const char *op = rn_node_op_type(node);
    if (!gpu_static_f32(node, strcmp(op, "Clip") == 0 ? 6u : 0u, why))
        return false;
    if (strcmp(op, "Gelu") == 0 &&
        strcmp(rn_node_attr_string(node, "approximate", "none"), "none") != 0) {
        *why = "GPU: Gelu's tanh approximation is not implemented";
        return false;
    }
    float lo, hi;
    return strcmp(op, "Clip") != 0 || clip_bounds(node, &lo, &hi, why);
}

static rn_status unary_prepare(const rn_node *node, void **out)
{
    unary_state *s;
    static const char *const kernels[] = {"unary", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    const char *op = rn_node_op_type(node), *why;
    s->act = gpu_activation(op);
    s->n = output_count(node);
    switch (s->act) {
    case GPU_ACT_LEAKY_RELU:
    case GPU_ACT_ELU:
        s->p0 = rn_node_attr_float_or_default(node, "alpha");
        break;
    case GPU_ACT_HARD_SIGMOID:
        s->p0 = rn_node_attr_float_or_default(node, "alpha");
        s->p1 = rn_node_attr_float_or_default(node, "beta");
        break;
    case GPU_ACT_CLIP:
        clip_bounds(node, &s->p0, &s->p1, &why);
        break;
    default:
        break;
    }
    *out = s;
    return RN_OK;
}

static rn_status unary_run(rn_kernel_args *args)
{
    unary_state *s = args->state;
    return gpu_unary_launch(&s->g, args, 0, gpu_input(&s->g, args, 0), gpu_output(args, 0), s->n,
                            s->act, s->p0, s->p1);
}

#define UNARY_KERNEL(name, op)                                                                     \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "opencl",                                                                     \
        .supports = unary_supports,                                                                \
        .prepare = unary_prepare,                                                                  \
        .run = unary_run,                                                                          \
        .release = gpu_state_free,                                                                 \
        .flags = RN_KERNEL_INPLACE,                                                                \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

UNARY_KERNEL(gpu_kernel_relu, "Relu");
UNARY_KERNEL(gpu_kernel_leaky_relu, "LeakyRelu");
UNARY_KERNEL(gpu_kernel_clip, "Clip");
UNARY_KERNEL(gpu_kernel_sigmoid, "Sigmoid");
UNARY_KERNEL(gpu_kernel_tanh, "Tanh");
UNARY_KERNEL(gpu_kernel_elu, "Elu");
UNARY_KERNEL(gpu_kernel_hard_sigmoid, "HardSigmoid");
UNARY_KERNEL(gpu_kernel_gelu, "Gelu");
UNARY_KERNEL(gpu_kernel_abs, "Abs");
UNARY_KERNEL(gpu_kernel_neg, "Neg");
UNARY_KERNEL(gpu_kernel_exp, "Exp");
UNARY_KERNEL(gpu_kernel_log, "Log");
UNARY_KERNEL(gpu_kernel_sqrt, "Sqrt");
UNARY_KERNEL(gpu_kernel_erf, "Erf");
UNARY_KERNEL(gpu_kernel_reciprocal, "Reciprocal");

/* ---- binary and Sum ---- */

typedef struct binary_state {
    gpu_node g;
    int op;
    int n_bc;
    gpu_broadcast bc[GPU_MAX_IO]; /* Sum: input k against the running sum */
} binary_state;

static int binary_op(const char *op)
{
    static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "", "Pow"};
    for (int i = 0; i < 8; i++)
        if (names[i][0] != '\0' && strcmp(op, names[i]) == 0)
            return i;
    return -1;
}

static bool binary_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    int n = rn_node_input_count(node);
    if (strcmp(rn_node_op_type(node), "Sum") != 0 && n != 2) {
        *why = "GPU: two inputs only";
        return false;
    }
    if (rn_node_output_shape(node, 0).rank > 8) {
        *why = "GPU: ranks up to 8 only";
        return false;
    }
    for (int i = 0; i < n; i++)
        if (rn_node_input_name(node, i)[0] == '\0') {
            *why = "GPU: omitted inputs";
            return false;
        }
    return true;
}

static rn_status binary_prepare(const rn_node *node, void **out)
{
    binary_state *s;
    static const char *const kernels[] = {"binary", "unary", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    const char *op = rn_node_op_type(node);
    bool sum = strcmp(op, "Sum") == 0;
    s->op = sum ? GPU_BINARY_ADD : binary_op(op);
    rn_partial_shape y = rn_node_output_shape(node, 0);
    if (sum) {
        /* y = x0 + x1, then y += xk. */
        s->n_bc = s->g.n_in < 2 ? 1 : s->g.n_in - 1;
        if (s->g.n_in >= 2)
            gpu_broadcast_init(&s->bc[0], y, rn_node_input_shape(node, 0),
                               rn_node_input_shape(node, 1));
        else
            gpu_broadcast_init(&s->bc[0], y, rn_node_input_shape(node, 0), y);
        for (int k = 2; k < s->g.n_in; k++)
            gpu_broadcast_init(&s->bc[k - 1], y, y, rn_node_input_shape(node, k));
    } else {
        s->n_bc = 1;
        gpu_broadcast_init(&s->bc[0], y, rn_node_input_shape(node, 0),
                           rn_node_input_shape(node, 1));
    }
    *out = s;
    return RN_OK;
}

static rn_status binary_run(rn_kernel_args *args)
{
    binary_state *s = args->state;
    gpu_mem y = gpu_output(args, 0);
    if (s->g.n_in == 1) /* Sum of one input: a copy */
        return gpu_unary_launch(&s->g, args, 1, gpu_input(&s->g, args, 0), y, s->bc[0].count,
                                GPU_ACT_IDENTITY, 0.0f, 0.0f);
    rn_status st = gpu_binary_launch(&s->g, args, 0, &s->bc[0], gpu_input(&s->g, args, 0),
                                     gpu_input(&s->g, args, 1), y, s->op, 1.0f);
    for (int k = 2; k < s->g.n_in && st == RN_OK; k++)
        st = gpu_binary_launch(&s->g, args, 0, &s->bc[k - 1], y, gpu_input(&s->g, args, k), y,
                               GPU_BINARY_ADD, 1.0f);
    return st;
}

#define BINARY_KERNEL(name, op)                                                                    \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "opencl",                                                                     \
        .supports = binary_supports,                                                               \
        .prepare = binary_prepare,                                                                 \
        .run = binary_run,                                                                         \
        .release = gpu_state_free,                                                                 \
        .flags = RN_KERNEL_INPLACE,                                                                \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

BINARY_KERNEL(gpu_kernel_add, "Add");
BINARY_KERNEL(gpu_kernel_sub, "Sub");
BINARY_KERNEL(gpu_kernel_mul, "Mul");
BINARY_KERNEL(gpu_kernel_div, "Div");
BINARY_KERNEL(gpu_kernel_max, "Max");
BINARY_KERNEL(gpu_kernel_min, "Min");
BINARY_KERNEL(gpu_kernel_pow, "Pow");
BINARY_KERNEL(gpu_kernel_sum, "Sum");

/* ---- BatchNormalization (inference) ---- */

typedef struct batchnorm_state {
    gpu_node g;
    cl_mem scale, shift;
    int C, inner;
    size_t n;
} batchnorm_state;

static bool batchnorm_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_output_count(node) > 1 && rn_node_output_name(node, 1)[0] != '\0') {
        *why = "GPU: BatchNormalization in inference mode only";
        return false;
    }
    if (rn_node_input_shape(node, 0).rank < 2) {
        *why = "GPU: BatchNormalization of rank >= 2";
        return false;
    }
    for (int i = 1; i < 5; i++)
        if (rn_node_input_count(node) <= i || rn_node_input_constant(node, i) == NULL) {
            *why = "GPU: BatchNormalization with constant statistics only";
            return false;
        }
    return true;
}

static void batchnorm_free(void *state)
{
    batchnorm_state *s = state;
    if (s == NULL)
        return;
    if (s->scale != NULL)
        clReleaseMemObject(s->scale);
    if (s->shift != NULL)
        clReleaseMemObject(s->shift);
    gpu_state_free(s);
}

static rn_status batchnorm_prepare(const rn_node *node, void **out)
{
    batchnorm_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    static const char *const kernels[] = {"scale_shift", NULL};
    rn_status st = gpu_node_init(&s->g, node, kernels);
    rn_partial_shape x = rn_node_input_shape(node, 0);
    s->C = (int)x.dims[1];
    s->inner = 1;
    for (int d = 2; d < x.rank; d++)
        s->inner *= (int)x.dims[d];
    s->n = output_count(node);
    float *host = calloc(2 * (size_t)s->C + 1, sizeof *host);
    if (st == RN_OK && host == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory");
    if (st == RN_OK) {
        const float *gamma = rn_node_input_constant(node, 1)->data,
                    *beta = rn_node_input_constant(node, 2)->data,
                    *mean = rn_node_input_constant(node, 3)->data,
                    *var = rn_node_input_constant(node, 4)->data;
        float eps = rn_node_attr_float_or_default(node, "epsilon");
        for (int c = 0; c < s->C; c++) {
            host[c] = gamma[c] / sqrtf(var[c] + eps);
            host[s->C + c] = beta[c] - mean[c] * host[c];
        }
        cl_int err;
        s->scale = clCreateBuffer(s->g.dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  (size_t)s->C * sizeof(float), host, &err);
        if (s->scale != NULL)
            s->shift = clCreateBuffer(s->g.dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                      (size_t)s->C * sizeof(float), host + s->C, &err);
        if (s->shift == NULL)
            st = gpu_fail(&s->g, "uploading the scale and shift", err);
    }
    free(host);
    if (st != RN_OK) {
        batchnorm_free(s);
        return st;
    }
    *out = s;
    return RN_OK;
}

static rn_status batchnorm_run(rn_kernel_args *args)
{
    batchnorm_state *s = args->state;
    gpu_mem x = gpu_input(&s->g, args, 0), y = gpu_output(args, 0);
    int xoff = (int)x.off, yoff = (int)y.off;
    gpu_arg a[] = {GPU_ARG(x.mem),    GPU_ARG(xoff),     GPU_ARG(y.mem), GPU_ARG(yoff),
                   GPU_ARG(s->scale), GPU_ARG(s->shift), GPU_ARG(s->C),  GPU_ARG(s->inner)};
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->n);
}

const rn_kernel gpu_kernel_batchnorm = {
    .domain = "",
    .op_type = "BatchNormalization",
    .impl_type = "opencl",
    .supports = batchnorm_supports,
    .prepare = batchnorm_prepare,
    .run = batchnorm_run,
    .release = batchnorm_free,
    .flags = RN_KERNEL_INPLACE,
    .input_layout = gpu_input_layout,
    .output_layout = gpu_output_layout,
};
