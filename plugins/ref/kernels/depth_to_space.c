/* REF DepthToSpace and SpaceToDepth: both are a reshape to 6-D, a transpose
 * and a reshape back, i.e. one strided view of the NCHW input. */
#include "plugins/ref/kernels/movement.h"

static bool supports_depth_space(const graph_node *node, const char **why)
{
    if (node->n_inputs > 0 && node->inputs[0] && node->inputs[0]->shape.rank >= 0 &&
        node->inputs[0]->shape.rank != 4) {
        *why = "input rank other than 4";
        return false;
    }
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status check_4d(const plugin_kernel_args *args, const graph_tensor *x, int64_t b)
{
    if (x->rank != 4 || b <= 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_MV_NODE_FMT "needs a 4-D input and blocksize > 0",
                            REF_MV_NODE_ARGS(args->node));
    return RN_OK;
}

/* Output [N, C/b^2, H*b, W*b] walked as [N, C', H, b1, W, b2]. DCR reads
 * channel (b1*b + b2)*C' + c, CRD reads c*b*b + b1*b + b2. */
static rn_status run_depth_to_space(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    int64_t b = graph_node_attr_int(args->node, "blocksize", 0);
    REF_MV_TRY(check_4d(args, x, b));
    bool crd = strcmp(graph_node_attr_string(args->node, "mode", "DCR"), "CRD") == 0;
    int64_t n = x->dims[0], c = x->dims[1] / (b * b), h = x->dims[2], w = x->dims[3];
    int64_t hw = h * w;
    int64_t dims[6] = {n, c, h, b, w, b};
    int64_t s_c = crd ? b * b * hw : hw;
    int64_t s_b1 = crd ? b * hw : b * c * hw;
    int64_t s_b2 = crd ? hw : c * hw;
    int64_t strides[6] = {x->dims[1] * hw, s_c, w, s_b1, 1, s_b2};
    ref_mv_view_copy(y->data, x->data, rn_element_type_size(x->type), 6, dims, strides, 0);
    return RN_OK;
}

/* Output [N, C*b^2, H/b, W/b] walked as [N, b1, b2, C, H', W'], reading input
 * element (c, h'*b + b1, w'*b + b2). */
static rn_status run_space_to_depth(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    int64_t b = graph_node_attr_int(args->node, "blocksize", 0);
    REF_MV_TRY(check_4d(args, x, b));
    int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    int64_t dims[6] = {n, b, b, c, h / b, w / b};
    int64_t strides[6] = {c * h * w, w, 1, h * w, b * w, b};
    ref_mv_view_copy(y->data, x->data, rn_element_type_size(x->type), 6, dims, strides, 0);
    return RN_OK;
}

const plugin_kernel ref_kernel_depth_to_space = {
    .domain = "",
    .op_type = "DepthToSpace",
    .impl_type = "ref",
    .supports = supports_depth_space,
    .run = run_depth_to_space,
};

const plugin_kernel ref_kernel_space_to_depth = {
    .domain = "",
    .op_type = "SpaceToDepth",
    .impl_type = "ref",
    .supports = supports_depth_space,
    .run = run_space_to_depth,
};
