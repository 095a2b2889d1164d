/* REF MaxUnpool, following the ONNX reference: X's values are scattered to
 * the flat positions I holds (MaxPool's Indices: offsets into the whole
 * N x C x D1... tensor of the unpooled shape (in - 1) * stride + kernel -
 * pads), everything else is 0. With the output_shape input the result is
 * that shape, holding the unpooled tensor in its leading corner (the rest
 * 0). An index outside the unpooled tensor is an error. */
#include <string.h>

#include "plugins/ref/kernels/image_util.h"

static bool max_unpool_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type) || node->inputs[1]->type != RN_I64) {
        *why = "X must be f32, f64, f16 or bf16 and I i64";
        return false;
    }
    return true;
}

static rn_status max_unpool_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *ind = &args->inputs[1];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank, n = r - 2;
    if (n < 1)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): X has rank %d; at least 3 needed",
                            node->name, node->op_type, r);
    graph_window win;
    rn_status st = graph_window_read(node, n, NULL, true, &win);
    if (st != RN_OK)
        return st;
    if (ind->rank != r || memcmp(ind->dims, x->dims, sizeof(int64_t) * (size_t)r) != 0 ||
        y->rank != r)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): I must have X's shape and the output X's rank",
                            node->name, node->op_type);
    /* The unpooled shape, and its placement in the output. */
    int64_t un[RN_MAX_RANK], un_stride[RN_MAX_RANK], y_stride[RN_MAX_RANK];
    un[0] = x->dims[0];
    un[1] = x->dims[1];
    for (int i = 0; i < n; i++)
        un[2 + i] =
            (x->dims[2 + i] - 1) * win.stride[i] + win.kernel[i] - win.pads[i] - win.pads[n + i];
    for (int d = 0; d < r; d++)
        if (un[d] > y->dims[d] || un[d] < 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): output dim %d (%lld) is smaller than the "
                                "unpooled %lld",
                                node->name, node->op_type, d, (long long)y->dims[d],
                                (long long)un[d]);
    plugin_strides(r, un, un_stride);
    plugin_strides(r, y->dims, y_stride);
    int64_t un_count = ref_nn_span(un, 0, r);
    size_t count = graph_tensor_count(x), es = rn_element_type_size(y->type);
    memset(y->data, 0, graph_tensor_count(y) * es);
    for (size_t i = 0; i < count; i++) {
        int64_t at = ((const int64_t *)ind->data)[i];
        if (at < 0 || at >= un_count)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): index %lld at element %zu is outside [0, %lld)",
                                node->name, node->op_type, (long long)at, i, (long long)un_count);
        int64_t off = 0;
        for (int d = 0; d < r; d++) {
            off += (at / un_stride[d]) * y_stride[d];
            at %= un_stride[d];
        }
        memcpy((char *)y->data + (size_t)off * es, (const char *)x->data + i * es, es);
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_max_unpool = {
    .domain = "",
    .op_type = "MaxUnpool",
    .impl_type = "ref",
    .supports = max_unpool_supports,
    .run = max_unpool_run,
};
