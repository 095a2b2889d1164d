/* What convolutions and products (conv.c, gemm.c) share: creating the
 * primitive in bf16 or f32, the layouts it chose, and running it with its
 * weights, bias and residual. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/team.h"
#include "transforms/transforms.h"

bool cpu_conv_like_supports(const rn_node *node, const char **why)
{
    rn_partial_shape x = rn_node_input_shape(node, 0);
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "oneDNN convolutions here take f32 models";
        return false;
    }
    if (x.rank < 3 || x.rank > 5) {
        *why = "1-D, 2-D and 3-D convolutions only";
        return false;
    }
    if (rn_node_input_constant(node, 1) == NULL) {
        *why = "weights are not a constant";
        return false;
    }
    if (rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0' &&
        rn_node_input_constant(node, 2) == NULL) {
        *why = "bias is not a constant";
        return false;
    }
    return true;
}

rn_status cpu_weighted_pd(const rn_node *node, const cpu_op *op, bool fused, bool sum,
                          dnnl_primitive_desc_t *pd)
{
    dnnl_post_ops_t po = NULL;
    rn_status st = fused ? cpu_fused_post_ops(node, sum, &po) : RN_OK;
    dnnl_primitive_attr_t attr = NULL;
    if (st == RN_OK)
        st = cpu_attr(node, po, &attr);
    dnnl_post_ops_destroy(po);
    dnnl_engine_t eng = NULL;
    if (st == RN_OK && (st = cpu_engine(&eng)) == RN_OK) {
        int prev = cpu_team_begin(node);
        dnnl_status_t ds = cpu_op_pd(pd, op, attr, eng);
        cpu_team_end(prev);
        if (ds != dnnl_success)
            *pd = NULL;
        if (ds != dnnl_success && ds != dnnl_unimplemented)
            st = cpu_error(node, "creating the primitive", ds);
    }
    dnnl_primitive_attr_destroy(attr);
    return st;
}

dnnl_data_type_t cpu_dst_type(const rn_node *node, dnnl_data_type_t dt)
{
    return dt == dnnl_bf16 && rn_node_attr_int(node, TRANSFORMS_ATTR_F32_OUTPUT, 0) != 0 ? dnnl_f32
                                                                                         : dt;
}

rn_status cpu_weighted_prepare(const rn_node *node, cpu_weighted *w, cpu_weighted_desc_fn desc)
{
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = RN_OK;
    /* bf16 where the config asks for it and the bf16 policy allows, f32
     * when oneDNN has no bf16 implementation for these shapes. */
    if (cpu_config_get()->bf16 && rn_node_attr_int(node, TRANSFORMS_ATTR_F32, 0) == 0)
        st = desc(node, w, dnnl_bf16, &pd);
    if (st == RN_OK && pd == NULL)
        st = desc(node, w, dnnl_f32, &pd);
    if (st == RN_OK && pd == NULL)
        st = cpu_error(node, "creating the primitive", dnnl_unimplemented);
    if (st == RN_OK)
        st = cpu_prim_init(&w->p, node, pd);
    if (st == RN_OK && w->epi_pd != NULL) {
        dnnl_primitive_desc_t epi = w->epi_pd;
        w->epi_pd = NULL;
        /* Its own team: an add or an activation over the output, work
         * the convolution's size says nothing about (team.c). */
        cpu_md out;
        cpu_pd_md(epi, dnnl_query_dst_md, 0, &out);
        st = cpu_prim_init_team(&w->epi, node, epi, cpu_team_size_md(&out));
        w->epi.kind = CPU_TEAM_EPILOGUE;
    }
    if (st != RN_OK)
        return st;
    w->scratch = w->p.scratch;
    if (w->epi.prim != NULL) {
        size_t pad = w->epi.scratch > w->p.scratch ? w->epi.scratch : w->p.scratch;
        w->tmp_at = (pad + 63) & ~(size_t)63;
        w->scratch = w->sum >= 0 ? w->tmp_at + cpu_md_get_size(&w->dst) : pad;
        size_t len = strnlen(w->p.impl, sizeof w->p.impl);
        snprintf(w->p.impl + len, sizeof w->p.impl - len, " + %s", w->epi.impl);
    }
    cpu_pd_md(pd, dnnl_query_src_md, 0, &w->src);
    cpu_pd_md(pd, dnnl_query_weights_md, 0, &w->wei);
    cpu_pd_md(pd, dnnl_query_dst_md, 0, &w->dst);
    if (w->has_bias)
        cpu_pd_md(pd, dnnl_query_weights_md, 1, &w->bias);
    cpu_layout_init(&w->src_l, &w->src, RN_F32, &w->src_layout);
    cpu_layout_init(&w->wei_l, &w->wei, RN_F32, &w->wei_layout);
    cpu_layout_init(&w->dst_l, &w->dst, RN_F32, &w->dst_layout);
    return RN_OK;
}

void cpu_weighted_release(void *state)
{
    cpu_weighted *w = state;
    if (w == NULL)
        return;
    cpu_prim_release(&w->p);
    cpu_prim_release(&w->epi);
    if (w->epi_pd != NULL)
        dnnl_primitive_desc_destroy(w->epi_pd);
    free(w);
}

const rn_layout *cpu_weighted_input_layout(const void *state, int i)
{
    const cpu_weighted *w = state;
    if (i == 0)
        return w->src_layout;
    if (i == 1)
        return w->wei_layout;
    return i == w->sum ? w->dst_layout : NULL;
}

const rn_layout *cpu_weighted_output_layout(const void *state, int i)
{
    return i == 0 ? ((const cpu_weighted *)state)->dst_layout : NULL;
}

size_t cpu_weighted_scratch(const void *state)
{
    const cpu_weighted *w = state;
    return w->epi.prim != NULL ? w->scratch : w->p.scratch;
}

int cpu_weighted_inplace(const void *state)
{
    return ((const cpu_weighted *)state)->sum;
}

const char *cpu_weighted_impl(const void *state)
{
    return ((const cpu_weighted *)state)->p.impl;
}

rn_status cpu_weighted_run(rn_kernel_args *args)
{
    const cpu_weighted *w = args->state;
    /* The residual is summed into the output: in place when the plan put
     * them on the same bytes, else copied there first. */
    if (w->sum >= 0 && args->outputs[0].data != args->inputs[w->sum].data)
        memcpy(args->outputs[0].data, args->inputs[w->sum].data, args->outputs[0].nbytes);
    void *out = args->outputs[0].data, *dst = out;
    if (w->epi.prim != NULL && w->sum >= 0) {
        /* The product goes to the scratch; the epilogue adds it to the
         * residual in the output. */
        if (args->scratch.data == NULL || args->scratch.nbytes < w->scratch)
            return rn_set_error(RN_INTERNAL, "node '%s': no scratch for the convolution's output",
                                rn_node_name(args->node));
        dst = (char *)args->scratch.data + w->tmp_at;
    }
    cpu_arg a[4] = {{DNNL_ARG_SRC, &w->src, args->inputs[0].data},
                    {DNNL_ARG_WEIGHTS, &w->wei, args->inputs[1].data},
                    {DNNL_ARG_DST, &w->dst, dst},
                    {DNNL_ARG_BIAS, &w->bias, w->has_bias ? args->inputs[2].data : NULL}};
    rn_status st = cpu_execute(&w->p, args, a, w->has_bias ? 4 : 3);
    if (st != RN_OK || w->epi.prim == NULL)
        return st;
    if (w->sum >= 0) {
        cpu_arg e[3] = {{DNNL_ARG_SRC_0, &w->dst, out},
                        {DNNL_ARG_SRC_1, &w->dst, dst},
                        {DNNL_ARG_DST, &w->dst, out}};
        return cpu_execute(&w->epi, args, e, 3);
    }
    cpu_arg e[2] = {{DNNL_ARG_SRC, &w->dst, out}, {DNNL_ARG_DST, &w->dst, out}};
    return cpu_execute(&w->epi, args, e, 2);
}
