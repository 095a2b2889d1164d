/* REF Dropout in inference mode: the output is the input and the optional
 * mask is all true (Dropout-7's mask, typed like the data, is all ones).
 *
 * runnel runs inference only: a training_mode input that is true (with a
 * non-zero ratio) would ask for random dropping, which this kernel refuses
 * rather than silently ignoring -- at compile time when training_mode is a
 * constant, at run time otherwise. With ratio 0 training mode is the
 * identity too, as in the ONNX reference. */
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

static bool dropout_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 1, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (rn_element_type_size(t) == 0) {
        *why = "input type is string or undefined";
        return false;
    }
    const graph_value *training = node->n_inputs > 2 ? node->inputs[2] : NULL;
    const graph_value *ratio = node->n_inputs > 1 ? node->inputs[1] : NULL;
    if (training != NULL && training->constant != NULL && training->constant->data != NULL &&
        training->constant->type == RN_BOOL && graph_tensor_count(training->constant) == 1 &&
        *(const uint8_t *)training->constant->data != 0) {
        bool zero_ratio = ratio != NULL && ratio->constant != NULL &&
                          ref_nn_is_float(ratio->constant->type) &&
                          graph_tensor_count(ratio->constant) == 1 &&
                          ref_nn_get(ratio->constant->type, ratio->constant->data, 0) == 0.0;
        if (!zero_ratio) {
            *why = "training_mode is true (runnel runs Dropout in inference mode only)";
            return false;
        }
    }
    return true;
}

static rn_status dropout_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 1);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    const graph_tensor *ratio =
        args->n_inputs > 1 && args->inputs[1].data ? &args->inputs[1] : NULL;
    const graph_tensor *training =
        args->n_inputs > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
    if (training != NULL && graph_tensor_count(training) >= 1 &&
        *(const uint8_t *)training->data != 0) {
        bool zero_ratio = ratio != NULL && ref_nn_is_float(ratio->type) &&
                          graph_tensor_count(ratio) >= 1 &&
                          ref_nn_get(ratio->type, ratio->data, 0) == 0.0;
        if (!zero_ratio)
            return rn_set_error(RN_UNSUPPORTED,
                                "node '%s' (%s): training_mode is true; runnel runs Dropout in "
                                "inference mode only",
                                node->name, node->op_type);
    }
    size_t count = graph_tensor_count(x);
    if (graph_tensor_count(y) != count || y->type != x->type)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output does not match the input",
                            node->name, node->op_type);
    size_t bytes = count * rn_element_type_size(x->type);
    if (bytes > 0 && y->data != x->data)
        memmove(y->data, x->data, bytes);
    graph_tensor *mask = args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    if (mask != NULL) {
        if (graph_tensor_count(mask) != count)
            return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): mask does not match the input",
                                node->name, node->op_type);
        if (mask->type == RN_BOOL) {
            memset(mask->data, 1, count);
        } else if (ref_nn_is_float(mask->type)) {
            for (size_t i = 0; i < count; i++)
                ref_nn_set(mask->type, mask->data, i, 1.0);
        } else {
            return rn_set_error(RN_UNSUPPORTED, "node '%s' (%s): mask of type %s", node->name,
                                node->op_type, rn_element_type_name(mask->type));
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_dropout = {
    .domain = "",
    .op_type = "Dropout",
    .impl_type = "ref",
    .supports = dropout_supports,
    .run = dropout_run,
};
