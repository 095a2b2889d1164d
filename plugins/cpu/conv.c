/* Convolution (Conv, and runnel's FusedConv: Conv + bias + residual sum +
 * activation, made by transforms/fuse_conv.c) as a oneDNN convolution
 * primitive. The primitive picks its layouts (format "any"): weights are
 * converted into its layout once at compile time, activations flow between
 * primitives in it; in bf16 the activations and weights are bf16, the bias
 * f32. The residual of a FusedConv is added by a sum post-op over the
 * output, which the plan places on the residual's bytes (inplace_input). */
#include <stdlib.h>
#include <string.h>

#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"

static bool is_fused(const rn_node *node)
{
    return strcmp(rn_node_op_type(node), "FusedConv") == 0;
}

static bool conv_supports(const rn_node *node, const char **why)
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
    if (is_fused(node) && !cpu_activation_supported(node)) {
        *why = "activation oneDNN has no post-op for";
        return false;
    }
    return cpu_static_node(node, why);
}

static rn_status md_any(int rank, const int64_t *dims, dnnl_data_type_t dt, dnnl_memory_desc_t *md)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    if (dnnl_memory_desc_init_by_tag(md, rank, d, dt, dnnl_format_tag_any) != dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe a rank-%d tensor", rank);
    return RN_OK;
}

/* Creates the primitive descriptor for element type dt; *pd NULL when
 * oneDNN has no implementation. */
static rn_status conv_desc(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                           dnnl_primitive_desc_t *pd)
{
    rn_partial_shape xs = rn_node_input_shape(node, 0), ws = rn_node_input_shape(node, 1);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    int rank = xs.rank, n = rank - 2;
    int64_t group = rn_node_attr_int(node, "group", 1);
    int64_t wk[RN_MAX_RANK];
    for (int i = 0; i < n; i++)
        wk[i] = ws.dims[2 + i];
    graph_window w;
    rn_status st = graph_window_read(node, n, wk, false, &w);
    if (st != RN_OK)
        return st;
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < n; i++) {
        int64_t b, e;
        graph_window_pads(&w, i, xs.dims[2 + i], ys.dims[2 + i], &b, &e);
        strides[i] = w.stride[i];
        dil[i] = w.dilation[i] - 1;
        pl[i] = b;
        pr[i] = e;
    }
    int64_t wdims[RN_MAX_RANK + 1];
    int wrank = rank;
    if (group > 1) {
        wdims[0] = group;
        wdims[1] = ws.dims[0] / group;
        for (int i = 1; i < rank; i++)
            wdims[1 + i] = ws.dims[i];
        wrank = rank + 1;
    } else {
        memcpy(wdims, ws.dims, sizeof(int64_t) * (size_t)rank);
    }
    int64_t bdims[1] = {ws.dims[0]};
    if ((st = md_any(rank, xs.dims, dt, &s->src)) != RN_OK ||
        (st = md_any(wrank, wdims, dt, &s->wei)) != RN_OK ||
        (st = md_any(rank, ys.dims, dt, &s->dst)) != RN_OK ||
        (st = cpu_plain_md(RN_F32, 1, bdims, &s->bias)) != RN_OK)
        return st;
    dnnl_convolution_desc_t cd;
    dnnl_status_t ds = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &s->src, &s->wei,
        s->has_bias ? &s->bias : NULL, &s->dst, strides, dil, pl, pr);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the convolution", ds);
    return cpu_weighted_pd(node, &cd, is_fused(node), s->sum >= 0, pd);
}

static rn_status conv_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    cpu_weighted *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    w->has_bias = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
    w->sum =
        is_fused(node) && rn_node_input_count(node) > 3 && rn_node_input_name(node, 3)[0] != '\0'
            ? 3
            : -1;
    rn_status st = cpu_weighted_prepare(node, w, conv_desc);
    if (st != RN_OK) {
        cpu_weighted_release(w);
        return st;
    }
    *state = w;
    return RN_OK;
}

CPU_WEIGHTED_KERNEL(cpu_kernel_conv, "", "Conv", conv_supports, conv_prepare);
CPU_WEIGHTED_KERNEL(cpu_kernel_fused_conv, "runnel", "FusedConv", conv_supports, conv_prepare);
