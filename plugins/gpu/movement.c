/* Data movement: Concat (buffer copies, or rows copied by a kernel), Transpose (up to rank
 * 8), and the ops that only rename bytes (Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity, Dropout at inference), which the plan makes views
 * and, where it cannot, runs as a device copy. */
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

static size_t count(rn_partial_shape s, int from, int to)
{
    size_t n = 1;
    for (int d = from; d < to; d++)
        n *= (size_t)s.dims[d];
    return n;
}

/* ---- Concat ---- */

typedef struct concat_state {
    gpu_node g;
    size_t outer, y_row;      /* bytes of one output row (the axis and inside) */
    size_t x_row[GPU_MAX_IO]; /* bytes of input k's row */
} concat_state;

static bool concat_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_input_count(node) > GPU_MAX_IO) {
        *why = "GPU: Concat of over 32 inputs";
        return false;
    }
    return true;
}

static rn_status concat_prepare(const rn_node *node, void **out)
{
    concat_state *s;
    static const char *const kernels[] = {"copy_rows", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape y = rn_node_output_shape(node, 0);
    int axis = (int)rn_node_attr_int(node, "axis", 0);
    if (axis < 0)
        axis += y.rank;
    s->outer = count(y, 0, axis);
    s->y_row = count(y, axis, y.rank) * sizeof(float);
    for (int k = 0; k < s->g.n_in; k++) {
        rn_partial_shape x = rn_node_input_shape(node, k);
        s->x_row[k] = count(x, axis, x.rank) * sizeof(float);
    }
    *out = s;
    return RN_OK;
}

/* Inputs that are one block of the output are copied as such; the others
 * row by row with a kernel (a rectangular copy within one buffer, the
 * arena, needs equal pitches). */
static rn_status concat_run(rn_kernel_args *args)
{
    concat_state *s = args->state;
    gpu_mem y = gpu_output(args, 0);
    size_t at = 0;
    for (int k = 0; k < s->g.n_in; k++) {
        gpu_mem x = gpu_input(&s->g, args, k);
        rn_status st = RN_OK;
        if (s->x_row[k] > 0 && s->outer == 1) {
            cl_int err = clEnqueueCopyBuffer(gpu_queue(args), x.mem, y.mem, x.off * 4,
                                             y.off * 4 + at, s->x_row[k], 0, NULL, NULL);
            if (err != CL_SUCCESS)
                st = gpu_fail(&s->g, "clEnqueueCopyBuffer", err);
        } else if (s->x_row[k] > 0) {
            int xoff = (int)x.off, yoff = (int)y.off, xrow = (int)(s->x_row[k] / 4),
                yrow = (int)(s->y_row / 4), col = (int)(at / 4);
            gpu_arg a[] = {GPU_ARG(x.mem), GPU_ARG(xoff), GPU_ARG(y.mem), GPU_ARG(yoff),
                           GPU_ARG(xrow),  GPU_ARG(yrow), GPU_ARG(col)};
            st = gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]),
                            s->outer * (size_t)xrow);
        }
        if (st != RN_OK)
            return st;
        at += s->x_row[k];
    }
    return RN_OK;
}

const rn_kernel gpu_kernel_concat = {
    .domain = "",
    .op_type = "Concat",
    .impl_type = "opencl",
    .supports = concat_supports,
    .prepare = concat_prepare,
    .run = concat_run,
    .release = gpu_state_free,
    .input_layout = gpu_input_layout,
    .output_layout = gpu_output_layout,
};

/* ---- Transpose ---- */

typedef struct transpose_state {
    gpu_node g;
    int rank;
    gpu_idx8 dims, x_strides; /* y's dims; x's stride for each of y's dims */
    size_t n;
} transpose_state;

static bool transpose_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 0, why))
        return false;
    if (rn_node_input_shape(node, 0).rank > 8) {
        *why = "GPU: Transpose up to rank 8";
        return false;
    }
    return true;
}

static rn_status transpose_prepare(const rn_node *node, void **out)
{
    transpose_state *s;
    static const char *const kernels[] = {"transpose", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    const int64_t *perm = NULL;
    int np = rn_node_attr_ints(node, "perm", &perm);
    int64_t stride[8];
    int64_t acc = 1;
    for (int d = x.rank - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= x.dims[d];
    }
    s->rank = y.rank;
    for (int d = 0; d < y.rank; d++) {
        int p = np == x.rank ? (int)perm[d] : x.rank - 1 - d;
        s->dims.v[d] = (cl_int)y.dims[d];
        s->x_strides.v[d] = (cl_int)stride[p];
    }
    s->n = count(y, 0, y.rank);
    *out = s;
    return RN_OK;
}

static rn_status transpose_run(rn_kernel_args *args)
{
    transpose_state *s = args->state;
    gpu_mem x = gpu_input(&s->g, args, 0), y = gpu_output(args, 0);
    int xoff = (int)x.off, yoff = (int)y.off;
    gpu_arg a[] = {GPU_ARG(x.mem),   GPU_ARG(xoff),    GPU_ARG(y.mem),       GPU_ARG(yoff),
                   GPU_ARG(s->rank), GPU_ARG(s->dims), GPU_ARG(s->x_strides)};
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->n);
}

const rn_kernel gpu_kernel_transpose = {
    .domain = "",
    .op_type = "Transpose",
    .impl_type = "opencl",
    .supports = transpose_supports,
    .prepare = transpose_prepare,
    .run = transpose_run,
    .release = gpu_state_free,
    .input_layout = gpu_input_layout,
    .output_layout = gpu_output_layout,
};

/* ---- views ---- */

/* Input 0 and output 0 f32, i64, i32 or bool of static shape (the bytes
 * are only renamed); the other inputs (shape, axes, Dropout's ratio) are
 * constants of any type; no second output. */
static bool view_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_typed(node, ~1u, why))
        return false;
    for (int i = 1; i < rn_node_input_count(node); i++)
        if (rn_node_input_name(node, i)[0] != '\0' && rn_node_input_constant(node, i) == NULL) {
            *why = "GPU: the shape or axes must be constants";
            return false;
        }
    if (rn_node_output_count(node) > 1 && rn_node_output_name(node, 1)[0] != '\0') {
        *why = "GPU: a second output (Dropout's mask: see Dropout with a mask)";
        return false;
    }
    if (strcmp(rn_node_op_type(node), "Dropout") == 0 && rn_node_input_count(node) > 2 &&
        rn_node_input_name(node, 2)[0] != '\0') {
        const rn_kernel_tensor *t = rn_node_input_constant(node, 2);
        if (t->nbytes > 0 && ((const unsigned char *)t->data)[0] != 0) {
            *why = "GPU: Dropout in training mode";
            return false;
        }
    }
    return true;
}

static rn_status view_prepare(const rn_node *node, void **out)
{
    gpu_node *g;
    rn_status st = gpu_state_new(sizeof *g, node, NULL, (void **)&g);
    if (st != RN_OK)
        return st;
    *out = g;
    return RN_OK;
}

/* Runs when the plan could not alias the output: a device copy. */
static rn_status view_run(rn_kernel_args *args)
{
    gpu_node *g = args->state;
    gpu_mem x = gpu_input(g, args, 0), y = gpu_output(args, 0);
    size_t bytes = args->outputs[0].nbytes;
    if (bytes == 0 || (x.mem == y.mem && x.off == y.off))
        return RN_OK;
    cl_int err = clEnqueueCopyBuffer(gpu_queue(args), x.mem, y.mem, x.off * 4, y.off * 4, bytes, 0,
                                     NULL, NULL);
    return err == CL_SUCCESS ? RN_OK : gpu_fail(g, "clEnqueueCopyBuffer", err);
}

#define VIEW_KERNEL(name, op)                                                                      \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "view",                                                                       \
        .supports = view_supports,                                                                 \
        .prepare = view_prepare,                                                                   \
        .run = view_run,                                                                           \
        .release = gpu_state_free,                                                                 \
        .flags = RN_KERNEL_VIEW,                                                                   \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

VIEW_KERNEL(gpu_kernel_reshape, "Reshape");
VIEW_KERNEL(gpu_kernel_flatten, "Flatten");
VIEW_KERNEL(gpu_kernel_squeeze, "Squeeze");
VIEW_KERNEL(gpu_kernel_unsqueeze, "Unsqueeze");
VIEW_KERNEL(gpu_kernel_identity, "Identity");
VIEW_KERNEL(gpu_kernel_dropout, "Dropout");

/* Dropout at inference with its mask: a copy, and the mask all true. */
static bool dropout_mask_supports(const rn_node *node, const char **why)
{
    rn_element_type mask = rn_node_output_type(node, 1);
    if (rn_node_output_count(node) != 2 || (mask != RN_BOOL && mask != RN_F32)) {
        *why = "GPU: Dropout with a bool (or, before opset 10, f32) mask";
        return false;
    }
    if (rn_node_input_type(node, 0) != RN_F32 || rn_node_output_type(node, 0) != RN_F32) {
        *why = "GPU: f32 tensors only";
        return false;
    }
    for (int i = 1; i < rn_node_input_count(node); i++)
        if (rn_node_input_name(node, i)[0] != '\0' && rn_node_input_constant(node, i) == NULL) {
            *why = "GPU: Dropout's ratio and training mode must be constants";
            return false;
        }
    if (rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0') {
        const rn_kernel_tensor *t = rn_node_input_constant(node, 2);
        if (t->nbytes > 0 && ((const unsigned char *)t->data)[0] != 0) {
            *why = "GPU: Dropout in training mode";
            return false;
        }
    }
    return true;
}

static rn_status dropout_mask_run(rn_kernel_args *args)
{
    rn_status st = view_run(args);
    if (st != RN_OK || args->outputs[1].nbytes == 0)
        return st;
    const gpu_arena *a = args->outputs[1].buffer;
    cl_uchar one = 1;
    cl_float fone = 1.0f;
    bool f32 = args->outputs[1].type == RN_F32;
    cl_int err = clEnqueueFillBuffer(gpu_queue(args), a->mem, f32 ? (void *)&fone : (void *)&one,
                                     f32 ? sizeof fone : 1, args->outputs[1].offset,
                                     args->outputs[1].nbytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? RN_OK : gpu_fail(args->state, "clEnqueueFillBuffer", err);
}

const rn_kernel gpu_kernel_dropout_mask = {
    .domain = "",
    .op_type = "Dropout",
    .impl_type = "opencl",
    .supports = dropout_mask_supports,
    .prepare = view_prepare,
    .run = dropout_mask_run,
    .release = gpu_state_free,
    .input_layout = gpu_input_layout,
    .output_layout = gpu_output_layout,
};
