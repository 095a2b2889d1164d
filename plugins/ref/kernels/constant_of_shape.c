/* REF ConstantOfShape: fills the output with the one element of the `value`
 * attribute (any fixed-size type), or with f32 zeros when it is absent. */
#include "plugins/ref/kernels/movement.h"

static bool supports_constant_of_shape(const graph_node *node, const char **why)
{
    const graph_attr *value = graph_node_attr(node, "value");
    if (value && value->type == GRAPH_ATTR_TENSOR && value->t && value->t->type == RN_STRING) {
        *why = "string value";
        return false;
    }
    return true;
}

static rn_status run_constant_of_shape(plugin_kernel_args *args)
{
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    size_t count = graph_tensor_count(y);
    if (count == 0)
        return RN_OK;
    const graph_attr *value = graph_node_attr(args->node, "value");
    if (!value) {
        memset(y->data, 0, count * rn_element_type_size(y->type));
        return RN_OK;
    }
    const graph_tensor *v = value->t;
    size_t esize = rn_element_type_size(y->type);
    if (value->type != GRAPH_ATTR_TENSOR || !v || v->type != y->type ||
        graph_tensor_count(v) != 1 || esize == 0)
        return rn_set_error(RN_INVALID_ARG,
                            REF_MV_NODE_FMT "value must be one element of the output's type",
                            REF_MV_NODE_ARGS(args->node));
    for (size_t i = 0; i < count; i++)
        memcpy((char *)y->data + i * esize, v->data, esize);
    return RN_OK;
}

const plugin_kernel ref_kernel_constant_of_shape = {
    .domain = "",
    .op_type = "ConstantOfShape",
    .impl_type = "ref",
    .supports = supports_constant_of_shape,
    .run = run_constant_of_shape,
};
