/* ReduceSum, ReduceMean and ReduceMax of f32 over constant axes (the
 * `axes` attribute, or the axes input from opset 13 for ReduceSum and 18
 * for the others), keepdims either way, noop_with_empty_axes: one
 * work-item per output element walks the reduced dims (program_index.c's
 * reduce). */
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

enum { REDUCE_SUM = 0, REDUCE_MEAN, REDUCE_MAX };

typedef struct reduce_state {
    gpu_node g;
    int op, krank, rrank, R;
    gpu_idx8 kdims, ks, rdims, rs;
    size_t n;
} reduce_state;

/* Which of x's dims are reduced (mask[d]); false with a reason when the
 * axes are not a constant or out of range. */
static bool reduced_dims(const rn_node *node, bool mask[8], const char **why)
{
    int rank = rn_node_input_shape(node, 0).rank;
    const int64_t *attr = NULL;
    int n = rn_node_attr_ints(node, "axes", &attr); /* -1: absent */
    if (n < 0)
        n = 0;
    const rn_kernel_tensor *t = NULL;
    if (rn_node_input_count(node) > 1 && rn_node_input_name(node, 1)[0] != '\0') {
        t = rn_node_input_constant(node, 1);
        if (t == NULL || t->type != RN_I64) {
            *why = "GPU: a reduction's axes must be an i64 constant";
            return false;
        }
        n = (int)(t->nbytes / sizeof(int64_t));
    }
    bool noop = rn_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
    for (int d = 0; d < 8; d++)
        mask[d] = n == 0 && !noop && d < rank;
    for (int k = 0; k < n; k++) {
        int64_t a = t != NULL ? ((const int64_t *)t->data)[k] : attr[k];
        if (a < 0)
            a += rank;
        if (a < 0 || a >= rank) {
            *why = "GPU: a reduction's axis is out of range";
            return false;
        }
        mask[a] = true;
    }
    return true;
}

static bool reduce_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_f32(node, 2u, why))
        return false;
    if (rn_node_input_shape(node, 0).rank > 8) {
        *why = "GPU: reductions up to rank 8";
        return false;
    }
    bool mask[8];
    return reduced_dims(node, mask, why);
}

static rn_status reduce_prepare(const rn_node *node, void **out)
{
    static const char *const kernels[] = {"reduce", NULL};
    reduce_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    const char *op = rn_node_op_type(node), *why;
    s->op = strcmp(op, "ReduceSum") == 0    ? REDUCE_SUM
            : strcmp(op, "ReduceMean") == 0 ? REDUCE_MEAN
                                            : REDUCE_MAX;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    bool mask[8];
    reduced_dims(node, mask, &why);
    int64_t stride = 1, strides[8];
    for (int d = x.rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= x.dims[d];
    }
    s->R = 1;
    s->n = 1;
    for (int d = 0; d < x.rank; d++) {
        if (mask[d]) {
            s->rdims.v[s->rrank] = (cl_int)x.dims[d];
            s->rs.v[s->rrank++] = (cl_int)strides[d];
            s->R *= (int)x.dims[d];
        } else {
            s->kdims.v[s->krank] = (cl_int)x.dims[d];
            s->ks.v[s->krank++] = (cl_int)strides[d];
            s->n *= (size_t)x.dims[d];
        }
    }
    *out = s;
    return RN_OK;
}

static rn_status reduce_run(rn_kernel_args *args)
{
    reduce_state *s = args->state;
    gpu_mem x = gpu_input(&s->g, args, 0), y = gpu_output(args, 0);
    int xoff = (int)x.off, yoff = (int)y.off;
    gpu_arg a[] = {GPU_ARG(x.mem),    GPU_ARG(xoff),     GPU_ARG(y.mem), GPU_ARG(yoff),
                   GPU_ARG(s->krank), GPU_ARG(s->kdims), GPU_ARG(s->ks), GPU_ARG(s->rrank),
                   GPU_ARG(s->rdims), GPU_ARG(s->rs),    GPU_ARG(s->R),  GPU_ARG(s->op)};
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->n);
}

#define REDUCE_KERNEL(name, op_name)                                                               \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op_name,                                                                        \
        .impl_type = "opencl",                                                                     \
        .supports = reduce_supports,                                                               \
        .prepare = reduce_prepare,                                                                 \
        .run = reduce_run,                                                                         \
        .release = gpu_state_free,                                                                 \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

REDUCE_KERNEL(gpu_kernel_reduce_sum, "ReduceSum");
REDUCE_KERNEL(gpu_kernel_reduce_mean, "ReduceMean");
REDUCE_KERNEL(gpu_kernel_reduce_max, "ReduceMax");
