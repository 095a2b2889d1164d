/* Helpers of the REF contrib kernels (kernels/contrib.h). */
#include <stdarg.h>
#include <stdio.h>

#include "plugins/ref/kernels/contrib.h"

bool ref_contrib_supports_f32(const graph_node *node, int n_required, uint32_t f32_mask,
                              const char **why)
{
    for (int i = 0; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v == NULL) {
            if (i < n_required) {
                *why = "a required input is omitted";
                return false;
            }
            continue;
        }
        if ((f32_mask >> i & 1u) && v->type != RN_F32) {
            *why = "only f32 is implemented";
            return false;
        }
    }
    for (int i = 0; i < node->n_outputs; i++) {
        const graph_value *v = node->outputs[i];
        if (v != NULL && v->type != RN_F32 && v->type != RN_I32) {
            *why = "only f32 outputs are implemented";
            return false;
        }
    }
    return true;
}

const graph_tensor *ref_contrib_input(const plugin_kernel_args *args, int i)
{
    if (i >= args->n_inputs || args->inputs[i].type == RN_UNDEFINED)
        return NULL;
    return &args->inputs[i];
}

rn_status ref_contrib_output(plugin_kernel_args *args, int i, graph_tensor **out)
{
    *out = NULL;
    if (i >= args->n_outputs || args->outputs[i].type == RN_UNDEFINED)
        return RN_OK;
    graph_tensor *t = &args->outputs[i];
    if (t->data == NULL && graph_tensor_count(t) > 0) {
        if (args->alloc_output == NULL)
            return ref_contrib_error(args->node, RN_INTERNAL, "output %d has no buffer", i);
        rn_status st = args->alloc_output(args, i, t->rank, t->dims);
        if (st != RN_OK)
            return st;
    }
    *out = t;
    return RN_OK;
}

rn_status ref_contrib_error(const graph_node *node, rn_status st, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rn_set_error(st, "node '%s' (%s): %s", node->name, node->op_type, what);
}
