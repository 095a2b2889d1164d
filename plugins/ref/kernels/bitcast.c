/* REF BitCast (opset 26): reinterprets the bits of every element as the
 * type `to` of the same size; the shape is unchanged. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_bit_cast(const graph_node *node, const char **why)
{
    return ref_mv_supports_types(node, 1u, why);
}

static rn_status run_bit_cast(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    size_t bytes = graph_tensor_count(x) * rn_element_type_size(x->type);
    if (graph_tensor_count(y) * rn_element_type_size(y->type) != bytes)
        return rn_set_error(RN_TYPE_MISMATCH, REF_IX_FMT "cannot reinterpret %s as %s",
                            REF_IX_ARGS(args->node), rn_element_type_name(x->type),
                            rn_element_type_name(y->type));
    if (bytes > 0)
        memcpy(y->data, x->data, bytes);
    return RN_OK;
}

const plugin_kernel ref_kernel_bit_cast = {
    .domain = "",
    .op_type = "BitCast",
    .impl_type = "ref",
    .supports = supports_bit_cast,
    .run = run_bit_cast,
};
