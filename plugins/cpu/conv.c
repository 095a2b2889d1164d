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
    if (!cpu_conv_like_supports(node, why))
        return false;
    if (is_fused(node) && !cpu_activation_supported(node)) {
        *why = "activation oneDNN has no post-op for";
        return false;
    }
    return cpu_static_node(node, why);
}

rn_status cpu_conv_geometry_read(const rn_node *node, int x, int w, cpu_conv_geometry *g)
{
    rn_partial_shape xs = rn_node_input_shape(node, x), ws = rn_node_input_shape(node, w);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    g->rank = xs.rank;
    int n = g->rank - 2;
    int64_t group = rn_node_attr_int_or_default(node, "group");
    graph_window win;
    rn_status st = graph_window_read(node, n, ws.dims + 2, false, &win);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < n; i++) {
        int64_t b, e;
        graph_window_pads(&win, i, xs.dims[2 + i], ys.dims[2 + i], &b, &e);
        g->strides[i] = win.stride[i];
        g->dilations[i] = win.dilation[i] - 1;
        g->pads_begin[i] = b;
        g->pads_end[i] = e;
    }
    g->weights_rank = g->rank;
    if (group > 1) {
        g->weights_dims[0] = group;
        g->weights_dims[1] = ws.dims[0] / group;
        for (int i = 1; i < g->rank; i++)
            g->weights_dims[1 + i] = ws.dims[i];
        g->weights_rank = g->rank + 1;
    } else {
        memcpy(g->weights_dims, ws.dims, sizeof(int64_t) * (size_t)g->rank);
    }
    return RN_OK;
}

/* Creates the primitive descriptor for element type dt; *pd NULL when
 * oneDNN has no implementation. */
static rn_status conv_desc(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                           dnnl_primitive_desc_t *pd)
{
    rn_partial_shape xs = rn_node_input_shape(node, 0), ws = rn_node_input_shape(node, 1);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    int rank = xs.rank;
    cpu_conv_geometry g;
    rn_status st = cpu_conv_geometry_read(node, 0, 1, &g);
    if (st != RN_OK)
        return st;
    int64_t bdims[1] = {ws.dims[0]};
    if ((st = cpu_any_md(rank, xs.dims, dt, &s->src)) != RN_OK ||
        (st = cpu_any_md(g.weights_rank, g.weights_dims, dt, &s->wei)) != RN_OK ||
        (st = cpu_any_md(rank, ys.dims, cpu_dst_type(node, dt), &s->dst)) != RN_OK ||
        (st = cpu_plain_md(RN_F32, 1, bdims, &s->bias)) != RN_OK)
        return st;
    dnnl_convolution_desc_t cd;
    dnnl_status_t ds = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &s->src, &s->wei,
        s->has_bias ? &s->bias : NULL, &s->dst, g.strides, g.dilations, g.pads_begin, g.pads_end);
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
