/* One-input primitives (Resize's resampling, Reduce*'s reduction): the
 * source in the layout the input's producer writes (plain when oneDNN has
 * no implementation for it), the destination as the op's describer chose
 * it. */
#include <stdlib.h>

#include "plugins/cpu/cpu.h"

void cpu_unary_release(void *state)
{
    cpu_unary *u = state;
    if (u == NULL)
        return;
    cpu_prim_release(&u->p);
    free(u);
}

rn_status cpu_unary_prepare(const rn_node *node, const rn_kernel_ctx *ctx, cpu_unary_desc_fn desc,
                            void **state)
{
    cpu_unary *u = calloc(1, sizeof *u);
    if (u == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    rn_partial_shape x = rn_node_input_shape(node, 0);
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = RN_OK;
    for (int native = 1; native >= 0 && st == RN_OK && pd == NULL; native--) {
        const rn_layout *l = native && ctx->n_input_layouts > 0 ? ctx->input_layouts[0] : NULL;
        if ((st = cpu_input_md(l, RN_F32, x.rank, x.dims, &u->src)) == RN_OK)
            st = desc(node, u, &pd);
    }
    if (st == RN_OK && pd == NULL)
        st = cpu_error(node, "creating the primitive", dnnl_unimplemented);
    if (st == RN_OK)
        st = cpu_prim_init(&u->p, node, pd);
    if (st != RN_OK) {
        cpu_unary_release(u);
        return st;
    }
    cpu_pd_md(pd, dnnl_query_src_md, 0, &u->src);
    cpu_pd_md(pd, dnnl_query_dst_md, 0, &u->dst);
    cpu_layout_init(&u->src_l, &u->src, RN_F32, &u->src_layout);
    cpu_layout_init(&u->dst_l, &u->dst, RN_F32, &u->dst_layout);
    *state = u;
    return RN_OK;
}

const rn_layout *cpu_unary_input_layout(const void *state, int i)
{
    return i == 0 ? ((const cpu_unary *)state)->src_layout : NULL;
}

const rn_layout *cpu_unary_output_layout(const void *state, int i)
{
    return i == 0 ? ((const cpu_unary *)state)->dst_layout : NULL;
}

size_t cpu_unary_scratch(const void *state)
{
    return ((const cpu_unary *)state)->p.scratch;
}

const char *cpu_unary_impl(const void *state)
{
    return ((const cpu_unary *)state)->p.impl;
}

rn_status cpu_unary_run(rn_kernel_args *args)
{
    const cpu_unary *u = args->state;
    cpu_arg a[2] = {{DNNL_ARG_SRC, &u->src, args->inputs[0].data},
                    {DNNL_ARG_DST, &u->dst, args->outputs[0].data}};
    return cpu_execute(&u->p, args, a, 2);
}
