/* Reshape, Squeeze and Unsqueeze of f32 tensors over plain bf16: the
 * output is the input's bytes under another shape, in whatever element
 * type the producer wrote them. REF's kernel reads plain f32 only, so in
 * bf16 a product's plain bf16 output (an encoder's Q, K and V projections
 * before their head split, the attention's merged heads before the output
 * dense) was converted to f32 before the Reshape and back after it. This
 * kernel takes a plain (dense row-major) bf16 CPU layout as it is and
 * writes the same bytes as plain bf16 of the output's shape, so the plan
 * makes the node a view (RN_KERNEL_VIEW_LAYOUTS: the plan's alias,
 * plugins/api/plan_spec.c) and runs nothing. Any other input
 * (plain f32, a blocked layout, which the plan converts to plain f32 first)
 * is REF's case: plain f32 in and out, a view too. Run only where the plan
 * cannot make it a view (a result, a model input of unknown bytes): one
 * copy. */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"

typedef struct reshape_state {
    cpu_layout in_l, out_l; /* copies: the producer's layout lives in its own state */
    const rn_layout *in_layout, *out_layout; /* both NULL (plain f32) or plain bf16 */
} reshape_state;

static bool reshape_supports(const rn_node *node, const char **why)
{
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "f32 only (REF's kernel moves the other types)";
        return false;
    }
    return cpu_static_node(node, why);
}

static rn_status reshape_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    reshape_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    const rn_layout *in = ctx->n_input_layouts > 0 ? ctx->input_layouts[0] : NULL;
    rn_partial_shape y = rn_node_output_shape(node, 0);
    rn_partial_shape x = rn_node_input_shape(node, 0);
    if (cpu_layout_plain_of(in, RN_BF16, x.rank, x.dims) && y.rank >= 1) {
        cpu_md md;
        rn_status st = cpu_plain_md(RN_BF16, y.rank, y.dims, &md);
        if (st != RN_OK) {
            free(s);
            return st;
        }
        cpu_layout_init(&s->in_l, (const cpu_md *)in->desc, RN_F32, &s->in_layout);
        cpu_layout_init(&s->out_l, &md, RN_F32, &s->out_layout);
    }
    *state = s;
    return RN_OK;
}

static void reshape_release(void *state)
{
    free(state);
}

static const rn_layout *reshape_input_layout(const void *state, int i)
{
    return i == 0 ? ((const reshape_state *)state)->in_layout : NULL;
}

static const rn_layout *reshape_output_layout(const void *state, int i)
{
    return i == 0 ? ((const reshape_state *)state)->out_layout : NULL;
}

static const char *reshape_impl(const void *state)
{
    return ((const reshape_state *)state)->out_layout != NULL ? "copy:bf16" : "copy";
}

static rn_status reshape_run(rn_kernel_args *args)
{
    const rn_kernel_tensor *x = &args->inputs[0];
    rn_kernel_tensor *y = &args->outputs[0];
    if (x->nbytes != y->nbytes)
        return rn_set_error(RN_INTERNAL, "node '%s': output of %zu bytes, input of %zu",
                            rn_node_name(args->node), y->nbytes, x->nbytes);
    if (y->nbytes > 0 && y->data != x->data)
        memcpy(y->data, x->data, y->nbytes);
    return RN_OK;
}

#define RESHAPE_KERNEL(name, op)                                                                   \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "copy",                                                                       \
        .supports = reshape_supports,                                                              \
        .prepare_ctx = reshape_prepare,                                                            \
        .run = reshape_run,                                                                        \
        .release = reshape_release,                                                                \
        .flags = RN_KERNEL_VIEW | RN_KERNEL_VIEW_LAYOUTS,                                          \
        .input_layout = reshape_input_layout,                                                      \
        .output_layout = reshape_output_layout,                                                    \
        .impl_name = reshape_impl,                                                                 \
    }

RESHAPE_KERNEL(cpu_kernel_reshape, "Reshape");
RESHAPE_KERNEL(cpu_kernel_squeeze, "Squeeze");
RESHAPE_KERNEL(cpu_kernel_unsqueeze, "Unsqueeze");
