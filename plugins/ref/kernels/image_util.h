/* What the REF image-family kernels share (private to plugins/ref): the
 * presence checks every kernel runs first, so that a model which omits a
 * required input or output (an empty name in ONNX) is refused with a reason
 * instead of being dereferenced. */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_IMAGE_UTIL_H
#define RUNNEL_PLUGINS_REF_KERNELS_IMAGE_UTIL_H

#include "plugins/ref/kernels/nn_util.h"

/* Compile time: inputs [0, n_required) and output 0 are present. Sets *why
 * on false. */
static inline bool ref_img_node_ok(const graph_node *node, int n_required, const char **why)
{
    if (node->n_inputs < n_required || node->n_outputs < 1 || node->outputs[0] == NULL) {
        *why = "a required input or output 0 is missing";
        return false;
    }
    for (int i = 0; i < n_required; i++) {
        if (node->inputs[i] == NULL) {
            *why = "a required input is omitted";
            return false;
        }
    }
    return true;
}

/* Run time: inputs [0, n_required) hold buffers, and output 0 too unless
 * the kernel allocates it (out_by_kernel). RN_INVALID_ARG naming the node
 * otherwise. */
static inline rn_status ref_img_args_ok(const plugin_kernel_args *args, int n_required,
                                        bool out_by_kernel)
{
    bool ok = args->n_inputs >= n_required && args->n_outputs >= 1 &&
              (out_by_kernel || args->outputs[0].data != NULL);
    for (int i = 0; ok && i < n_required; i++)
        ok = args->inputs[i].data != NULL;
    if (!ok)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): a required input or the output has no buffer",
                            args->node->name, args->node->op_type);
    return RN_OK;
}

#endif /* RUNNEL_PLUGINS_REF_KERNELS_IMAGE_UTIL_H */
