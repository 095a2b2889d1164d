/* runnel ShuffleChannels (OpenVINO's op): the axis viewed as [group, C /
 * group], the two swapped: y[..., j * group + i, ...] = x[..., i * (C /
 * group) + j, ...]. Made by transforms/shuffle_channels.c from ShuffleNet's
 * Reshape -> Transpose -> Reshape. Any element type. */
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

static bool shuffle_supports(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[0];
    if (x == NULL || x->shape.rank < 1 || x->type == RN_STRING) {
        *why = "a tensor of known rank (not strings)";
        return false;
    }
    return true;
}

static rn_status shuffle_run(plugin_kernel_args *args)
{
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int64_t axis = graph_node_attr_int(args->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    int64_t group = graph_node_attr_int(args->node, "group", 1);
    int64_t c = x->dims[axis];
    if (group < 1 || c % group != 0)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s': group %lld does not divide %lld",
                            args->node->name, (long long)group, (long long)c);
    size_t outer = 1, inner = rn_element_type_size(x->type);
    for (int d = 0; d < axis; d++)
        outer *= (size_t)x->dims[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        inner *= (size_t)x->dims[d];
    int64_t per = c / group;
    const char *src = x->data;
    char *dst = y->data;
    for (size_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < group; i++)
            for (int64_t j = 0; j < per; j++)
                memcpy(dst + (o * (size_t)c + (size_t)(j * group + i)) * inner,
                       src + (o * (size_t)c + (size_t)(i * per + j)) * inner, inner);
    return RN_OK;
}

const plugin_kernel ref_kernel_shuffle_channels = {
    .domain = "runnel",
    .op_type = "ShuffleChannels",
    .impl_type = "ref",
    .supports = shuffle_supports,
    .run = shuffle_run,
};
