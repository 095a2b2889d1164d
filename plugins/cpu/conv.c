/* Convolution (Conv, and runnel's FusedConv: Conv + bias + residual sum +
 * activation, made by transforms/fuse_conv.c) as a oneDNN convolution
 * primitive. The primitive picks its layouts (format "any"): weights are
 * converted into its layout once at compile time, activations flow between
 * primitives in it; in bf16 the activations and weights are bf16, the bias
 * f32. The residual of a FusedConv is added by a sum post-op over the
 * output, which the plan places on the residual's bytes (inplace_input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"
#include "transforms/rewrite.h"

static bool is_fused(const rn_node *node)
{
    return strcmp(rn_node_op_type(node), "FusedConv") == 0;
}

static bool conv_has_bias(const rn_node *node)
{
    return rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
}

/* The input a FusedConv's residual sum reads (3), or -1. */
static int conv_sum_input(const rn_node *node)
{
    return is_fused(node) && rn_node_input_count(node) > 3 && rn_node_input_name(node, 3)[0] != '\0'
               ? 3
               : -1;
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

/* Gives md (its dims and type kept) the format tag. */
static bool set_tag(cpu_md *md, dnnl_format_tag_t tag)
{
    dnnl_dims_t dims;
    memcpy(dims, md->dims, sizeof dims);
    return cpu_md_init_by_tag(md, md->ndims, dims, md->data_type, tag) == dnnl_success;
}

/* The descriptor over a source in format src_tag and a destination in
 * dst_tag (any: the primitive's pick); *pd NULL when oneDNN has no
 * implementation. */
static rn_status conv_desc_alg(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                               dnnl_alg_kind_t alg, dnnl_format_tag_t src_tag,
                               dnnl_format_tag_t dst_tag, bool post_ops, dnnl_primitive_desc_t *pd)
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
    if ((src_tag != dnnl_format_tag_any && !set_tag(&s->src, src_tag)) ||
        (dst_tag != dnnl_format_tag_any && !set_tag(&s->dst, dst_tag)))
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe the convolution's activations");
    cpu_op cd;
    dnnl_status_t ds = cpu_op_conv(&cd, alg, &s->src, &s->wei, s->has_bias ? &s->bias : NULL,
                                   &s->dst, g.strides, g.dilations, g.pads_begin, g.pads_end);
    if (ds == dnnl_unimplemented && alg != dnnl_convolution_direct) {
        *pd = NULL; /* oneDNN 3.x has no Winograd on x64 */
        return RN_OK;
    }
    if (ds != dnnl_success)
        return cpu_error(node, "describing the convolution", ds);
    return cpu_weighted_pd(node, &cd, post_ops && is_fused(node), post_ops && s->sum >= 0, pd);
}

/* The direct convolution's descriptor (conv_desc_alg). */
static rn_status conv_desc_ops(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                               dnnl_format_tag_t src_tag, dnnl_format_tag_t dst_tag, bool post_ops,
                               dnnl_primitive_desc_t *pd)
{
    return conv_desc_alg(node, s, dt, dnnl_convolution_direct, src_tag, dst_tag, post_ops, pd);
}

/* The descriptor with the node's post-ops over activations in format tag. */
static rn_status conv_desc_any(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                               dnnl_format_tag_t tag, dnnl_primitive_desc_t *pd)
{
    return conv_desc_ops(node, s, dt, tag, tag, true, pd);
}

static bool is_gemm(const_dnnl_primitive_desc_t pd)
{
    return strstr(cpu_pd_impl(pd), "gemm") != NULL;
}

/* A grouped (not depthwise) convolution whose every kernel extent is 1. */
static bool grouped_1x1(const rn_node *node, const cpu_conv_geometry *g)
{
    int64_t group = rn_node_attr_int_or_default(node, "group");
    if (group <= 1 || g->weights_dims[1] == 1 || g->weights_dims[2] == 1)
        return false;
    for (int i = 3; i < g->weights_rank; i++)
        if (g->weights_dims[i] != 1)
            return false;
    return true;
}

/* The channels-last tag of a rank-3 to rank-5 activation (undef otherwise). */
static dnnl_format_tag_t channels_last(int rank)
{
    return rank == 3   ? dnnl_nwc
           : rank == 4 ? dnnl_nhwc
           : rank == 5 ? dnnl_ndhwc
                       : dnnl_format_tag_undef;
}

/* The plain (row-major) tag of a rank-3 to rank-5 activation. */
static dnnl_format_tag_t plain_tag(int rank)
{
    return rank == 3 ? dnnl_abc : rank == 4 ? dnnl_abcd : dnnl_abcde;
}

/* Describes the convolution again over activations in tag; *pd becomes
 * that descriptor when it exists and its implementation is gemm-based
 * exactly when gemm is true. */
static rn_status conv_desc_prefer(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                                  dnnl_format_tag_t tag, bool gemm, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_desc_t alt = NULL;
    rn_status st = conv_desc_any(node, s, dt, tag, &alt);
    if (st != RN_OK || alt == NULL)
        return st;
    if (is_gemm(alt) == gemm) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = alt;
    } else {
        dnnl_primitive_desc_destroy(alt);
    }
    return RN_OK;
}

/* The tag of a rank-3 to rank-5 activation blocked along C by `block` (8
 * or 16; undef otherwise). */
static dnnl_format_tag_t blocked_c(int rank, int64_t block)
{
    if (block == 8)
        return rank == 3 ? dnnl_aBc8b : rank == 4 ? dnnl_aBcd8b : dnnl_aBcde8b;
    if (block == 16)
        return rank == 3 ? dnnl_aBc16b : rank == 4 ? dnnl_aBcd16b : dnnl_aBcde16b;
    return dnnl_format_tag_undef;
}

/* A convolution around a Concat along C (CPU_ATTR_CONCAT_BLOCK, set by
 * concat_layout.c where oneDNN picks channels-last) described again with
 * its destination blocked along C, so that the Concat is written in place:
 * the largest block, at most the mark's and dividing the output channels,
 * for which oneDNN has a jit kernel (neither its reference one nor gemm);
 * the source is the kernel's pick (that block, or plain for a few input
 * channels). That block is what the ISA's primitives take (8 with AVX2,
 * 16 with AVX-512), never one ISA's assumed. *pd is replaced when one is
 * found; *steered says so. */
static rn_status conv_desc_blocked(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                                   int rank, dnnl_primitive_desc_t *pd, bool *steered)
{
    *steered = false;
    int64_t mark = rn_node_attr_int(node, CPU_ATTR_CONCAT_BLOCK, 0);
    int64_t oc = rn_node_output_shape(node, 0).dims[1];
    for (int64_t b = 16; b >= 8; b /= 2) {
        if (b > mark || oc % b != 0)
            continue;
        dnnl_primitive_desc_t alt = NULL;
        rn_status st =
            conv_desc_ops(node, s, dt, dnnl_format_tag_any, blocked_c(rank, b), true, &alt);
        if (st != RN_OK)
            return st;
        if (alt == NULL)
            continue;
        if (strncmp(cpu_pd_impl(alt), "ref", 3) != 0 && !is_gemm(alt)) {
            dnnl_primitive_desc_destroy(*pd);
            *pd = alt;
            *steered = true;
            return RN_OK;
        }
        dnnl_primitive_desc_destroy(alt);
    }
    return RN_OK;
}

/* Whether md is the tag's layout of its dims and type. */
static bool md_is(const cpu_md *md, dnnl_format_tag_t tag)
{
    cpu_md t;
    dnnl_dims_t dims;
    memcpy(dims, md->dims, sizeof dims);
    return cpu_md_init_by_tag(&t, md->ndims, dims, md->data_type, tag) == dnnl_success &&
           cpu_md_equal(&t, md);
}

/* The epilogue's descriptor over the output md: with a sum, a binary add
 * (the activation as its post-ops); else an eltwise of the one activation.
 * *epi NULL when there is none to make. */
static rn_status epilogue_pd(const rn_node *node, const cpu_weighted *s, const cpu_md *md,
                             dnnl_primitive_desc_t *epi)
{
    *epi = NULL;
    dnnl_post_ops_t po = NULL;
    rn_status st = cpu_fused_post_ops(node, false, &po);
    if (st != RN_OK)
        return st;
    int n = dnnl_post_ops_len(po);
    dnnl_status_t ds = dnnl_unimplemented;
    dnnl_primitive_attr_t attr = NULL;
    cpu_op d;
    if (s->sum >= 0) {
        ds = cpu_op_binary(&d, dnnl_binary_add, md, md, md);
        if (ds == dnnl_success)
            st = cpu_attr(node, po, &attr);
    } else if (n == 1) {
        float alpha, beta;
        dnnl_alg_kind_t alg;
        ds = cpu_post_ops_get_params_eltwise(po, 0, &alg, &alpha, &beta);
        if (ds == dnnl_success)
            ds = cpu_op_eltwise(&d, alg, md, alpha, beta);
        if (ds == dnnl_success)
            st = cpu_attr(node, NULL, &attr);
    }
    dnnl_post_ops_destroy(po);
    dnnl_engine_t eng = NULL;
    if (st == RN_OK && ds == dnnl_success && (st = cpu_engine(&eng)) == RN_OK) {
        int prev = cpu_team_begin_size(cpu_team_size_md(md)); /* the epilogue's, weighted.c */
        if (cpu_op_pd(epi, &d, attr, eng) != dnnl_success)
            *epi = NULL;
        cpu_team_end(prev);
    }
    dnnl_primitive_attr_destroy(attr);
    return st;
}

/* A gemm convolution's post-ops are a scalar pass of their own in oneDNN
 * 2.6.3 (a grouped 1x1 of 136 channels at 28x28, f32, AVX2, one thread:
 * 90 us without post-ops, 155 with a ReLU, 1015 with sum + ReLU), while
 * its jit binary and eltwise primitives take 10-18 us for the same tensor
 * (bench/LOG.md "ShuffleNet: gemm convolutions with the post-ops as a
 * primitive of their own"). So a gemm FusedConv in f32 is described again
 * without post-ops over the same activations and they run after it, as a
 * binary add of the residual with the activation as its post-ops, or an
 * eltwise of its one activation in place (weighted.c). *pd is replaced and
 * s->epi_pd set, or both left, when either is not to be had (still gemm
 * over the same layouts, an epilogue a jit kernel of oneDNN's runs). */
static rn_status split_epilogue(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt, int rank,
                                dnnl_primitive_desc_t *pd)
{
    cpu_md src_md, bare_dst;
    const cpu_md *src = &src_md;
    if (!cpu_pd_md(*pd, dnnl_query_src_md, 0, &src_md))
        return RN_OK;
    dnnl_format_tag_t tag = md_is(src, plain_tag(rank))       ? plain_tag(rank)
                            : md_is(src, channels_last(rank)) ? channels_last(rank)
                                                              : dnnl_format_tag_undef;
    if (tag == dnnl_format_tag_undef)
        return RN_OK;
    dnnl_primitive_desc_t bare = NULL, epi = NULL;
    rn_status st = conv_desc_ops(node, s, dt, tag, tag, false, &bare);
    if (st == RN_OK && bare != NULL && is_gemm(bare) &&
        cpu_pd_md(bare, dnnl_query_dst_md, 0, &bare_dst))
        st = epilogue_pd(node, s, &bare_dst, &epi);
    if (epi != NULL && strncmp(cpu_pd_impl(epi), "ref", 3) == 0) {
        dnnl_primitive_desc_destroy(epi); /* no jit kernel: not worth a pass */
        epi = NULL;
    }
    if (st != RN_OK || epi == NULL) {
        if (bare != NULL)
            dnnl_primitive_desc_destroy(bare);
        return st;
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = bare;
    if (s->epi_pd != NULL)
        dnnl_primitive_desc_destroy(s->epi_pd);
    s->epi_pd = epi;
    return RN_OK;
}

bool cpu_winograd_enabled(bool performance)
{
    const char *v = getenv("RN_CPU_WINOGRAD");
    return performance && (v == NULL || strcmp(v, "0") != 0);
}

/* Winograd F(4x4, 3x3) and F(2x2, 3x3): oneDNN 2.6.3 has them for f32 on
 * AVX-512 (`jit_wino_4x3`, `jit_fp32_wino_2x3`; none for AVX2, none on x64
 * in 3.x), over activations blocked by 16 channels (nChw16c) with the
 * weights in a layout of their own, the post-ops included. Alone, one
 * thread, Zen 4 (bench/onednn/run --winograd; bench/LOG.md "Winograd
 * convolutions on AVX-512"): 0.38-0.5x the direct brgconv's time from
 * 28x28 to 224x224 maps (oneDNN picks 4x3 there, or 2x3), 0.5-0.65x at
 * 13x13 and 14x14 (2x3), 0.75-0.85x at 7x7, at 64 to 512 channels. It
 * rounds differently from the direct sum (sums of products of transformed
 * tiles: 1.1e-6 of the output's scale from REF where the direct kernel is
 * 0.9e-6 from it, tests/cpu winograd_convolutions_match_ref), so it runs
 * under EXECUTION_MODE_HINT PERFORMANCE (the default) only, as OpenVINO
 * lets PERFORMANCE trade exactness for speed; ACCURACY keeps the direct
 * sum. Taken for 2-D, ungrouped, 3x3, stride 1, undilated convolutions of
 * at least 64 input and output channels, whole blocks of 16, on maps of
 * 14x14 or more, or 12x12 and 13x13 from 128 input channels (AlexNet's and
 * ZFNet's 256-512 channels at 12x12: 0.53-0.56x; SqueezeNet's 64->256 at
 * 13x13: 0.97x; at 7x7, 0.8x, the conversions to and from its layout eat
 * most of the gain). */
static bool winograd_shape(const rn_node *node, const cpu_conv_geometry *g)
{
    int64_t oc = g->weights_dims[0], ic = g->weights_dims[1];
    if (g->rank != 4 || g->weights_rank != 4 || g->weights_dims[2] != 3 ||
        g->weights_dims[3] != 3 || oc < 64 || ic < 64 || oc % 16 != 0 || ic % 16 != 0)
        return false;
    for (int i = 0; i < 2; i++)
        if (g->strides[i] != 1 || g->dilations[i] != 0)
            return false;
    rn_partial_shape y = rn_node_output_shape(node, 0);
    int64_t map = y.dims[2] < y.dims[3] ? y.dims[2] : y.dims[3];
    return map >= 14 || (map >= 12 && ic >= 128);
}

/* Whether the Winograd implementation oneDNN picked is faster than the
 * direct one. Its 2x3 kernel (small maps) is slower than brgconv, up to
 * 2.3x, where the output channels are 11, 13, 14 or 15 blocks of 16
 * (Inception-v1's 96->208 and 112->224 at 14x14: 1.7x and 1.1x; 128->176:
 * 2.0x; 128->240: 1.0x), and 0.5-0.82x at 4 to 10, 12 and 16 to 32 blocks
 * (bench/LOG.md "Winograd convolutions on AVX-512"); the 4x3 kernel was
 * faster on every shape measured. And the 2x3 kernel only pays on one
 * thread: on a team of two (LATENCY) it took 0.53-0.61 of brgconv alone but
 * more than brgconv in the model (Inception-v1's three at 14x14: 376 / 262
 * / 225 against 296 / 242 / 196 us; its LATENCY 8.6-8.9 against 7.6-7.7
 * ms; bench/LOG.md "The suite, Winograd on and off, ..."), so there it
 * is left for THROUGHPUT's single-core streams. */
static bool winograd_pays(const_dnnl_primitive_desc_t pd, int64_t oc, int team)
{
    const char *impl = cpu_pd_impl(pd);
    if (strstr(impl, "wino") == NULL || strncmp(impl, "ref", 3) == 0)
        return false;
    if (strstr(impl, "2x3") == NULL)
        return true;
    int64_t blocks = oc / 16;
    return team == 1 && (blocks < 11 || blocks == 12 || blocks > 15);
}

/* Describes the convolution again as Winograd (winograd_shape); *pd is
 * replaced when oneDNN has a jit kernel for it that pays (winograd_pays). */
static rn_status conv_desc_winograd(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                                    const cpu_conv_geometry *g, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_desc_t alt = NULL;
    rn_status st = conv_desc_alg(node, s, dt, dnnl_convolution_winograd, dnnl_format_tag_any,
                                 dnnl_format_tag_any, true, &alt);
    if (st != RN_OK || alt == NULL)
        return st;
    if (winograd_pays(alt, g->weights_dims[0], cpu_team_size(node, cpu_config_get()->threads))) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = alt;
    } else {
        dnnl_primitive_desc_destroy(alt);
    }
    return RN_OK;
}

bool cpu_conv_takes_winograd(const rn_node *node)
{
    const char *why = NULL;
    cpu_conv_geometry g;
    if (!conv_supports(node, &why) || cpu_conv_geometry_read(node, 0, 1, &g) != RN_OK ||
        !winograd_shape(node, &g)) {
        rn_clear_error();
        return false;
    }
    cpu_weighted s = {.has_bias = conv_has_bias(node), .sum = conv_sum_input(node)};
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = conv_desc_alg(node, &s, dnnl_f32, dnnl_convolution_winograd, dnnl_format_tag_any,
                                 dnnl_format_tag_any, true, &pd);
    bool takes = st == RN_OK && pd != NULL && winograd_pays(pd, g.weights_dims[0], 2);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    if (st != RN_OK)
        rn_clear_error();
    return takes;
}

/* The nodes that read v, in readers (at most max), each as its input 0;
 * -1 when there are more, or one reads it as another input. */
static int value_readers(const graph *g, const graph_value *v, graph_node **readers, int max)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            if (g->nodes[i]->inputs[k] == v) {
                if (n == max || k != 0)
                    return -1;
                readers[n++] = g->nodes[i];
                break;
            }
    return n;
}

static bool is_conv_node(const graph_node *n)
{
    return (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0
                ? strcmp(n->op_type, "Conv") == 0
                : strcmp(n->domain, "runnel") == 0 && strcmp(n->op_type, "FusedConv") == 0);
}

rn_status cpu_mark_winograd_inputs(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *n = g->nodes[i];
        const graph_value *w = n->n_inputs > 1 ? n->inputs[1] : NULL;
        if (!is_conv_node(n) || n->n_outputs != 1 || graph_node_attr_int(n, "group", 1) != 1 ||
            w == NULL || w->shape.rank != 4 || w->shape.dims[1] >= 16 ||
            graph_node_attr_int(n, CPU_ATTR_WINOGRAD_INPUT, 0) != 0 ||
            transforms_is_result(g, n->outputs[0]))
            continue;
        graph_node *readers[8];
        int r = value_readers(g, n->outputs[0], readers, 8);
        bool all = r > 0;
        for (int k = 0; k < r && all; k++)
            all = is_conv_node(readers[k]) && cpu_conv_takes_winograd(readers[k]);
        if (!all)
            continue;
        graph_attr attr = {.type = GRAPH_ATTR_INT, .i = 16};
        attr.name = strdup(CPU_ATTR_WINOGRAD_INPUT);
        if (attr.name == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory marking '%s'", n->name);
        rn_status st = graph_node_add_attr(n, &attr);
        if (st != RN_OK) {
            free(attr.name);
            return st;
        }
        (*changes)++;
    }
    return RN_OK;
}

/* A first convolution marked CPU_ATTR_WINOGRAD_INPUT described over a
 * plain source and an nChw16c destination; *pd replaced when oneDNN has a
 * jit kernel for that (the direct one for a few input channels). */
static rn_status conv_desc_winograd_input(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                                          int rank, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_desc_t alt = NULL;
    rn_status st = conv_desc_ops(node, s, dt, plain_tag(rank), blocked_c(rank, 16), true, &alt);
    if (st != RN_OK || alt == NULL)
        return st;
    if (strncmp(cpu_pd_impl(alt), "ref", 3) != 0 && !is_gemm(alt)) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = alt;
    } else {
        dnnl_primitive_desc_destroy(alt);
    }
    return RN_OK;
}

/* Creates the primitive descriptor for element type dt; *pd NULL when
 * oneDNN has no implementation. A convolution around a Concat along C
 * takes a layout blocked along C where it has a jit kernel for one
 * (conv_desc_blocked). Where oneDNN's first pick over format
 * "any" is slow for what it is asked (measured on oneDNN 2.6.3, AVX2, f32;
 * docs/cpu.md "Grouped convolutions"), another implementation is taken:
 * - the AVX2 direct jit kernel on a grouped 1x1 convolution (whole 8-channel
 *   groups: oneDNN 2.6 has no grouped 1x1 jit kernel): 2.3x slower than the
 *   gemm one oneDNN takes over plain activations (544 channels, 4 groups,
 *   7x7: 225 us vs 100 us), described again over plain activations, kept
 *   when that is gemm;
 * - a gemm FusedConv: its post-ops run as a primitive of their own
 *   (split_epilogue; with sum + ReLU 105-115 us where the direct kernel
 *   over channels-last takes 190-226 us);
 * - a gemm convolution left with a sum post-op (no epilogue to be had): its
 *   post-op pass is scalar (980 us with sum+relu, 90 us without), while the
 *   direct jit kernel over channels-last takes any channels per group with
 *   free post-ops (220 us): described again over channels-last, kept when
 *   that is not gemm.
 * An f32 3x3 convolution Winograd is faster for (winograd_shape) takes
 * it where oneDNN has it and the config allows it. */
static rn_status conv_desc(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                           dnnl_primitive_desc_t *pd)
{
    rn_status st = conv_desc_any(node, s, dt, dnnl_format_tag_any, pd);
    if (st != RN_OK || *pd == NULL)
        return st;
    cpu_conv_geometry g;
    if ((st = cpu_conv_geometry_read(node, 0, 1, &g)) != RN_OK)
        return st;
    bool steered = false;
    if (rn_node_attr_int(node, CPU_ATTR_CONCAT_BLOCK, 0) > 0 &&
        ((st = conv_desc_blocked(node, s, dt, g.rank, pd, &steered)) != RN_OK || steered))
        return st;
    if (dt == dnnl_f32 && cpu_config_get()->winograd && winograd_shape(node, &g))
        return conv_desc_winograd(node, s, dt, &g, pd);
    if (dt == dnnl_f32 && cpu_config_get()->winograd && g.rank == 4 &&
        rn_node_attr_int(node, CPU_ATTR_WINOGRAD_INPUT, 0) > 0)
        return conv_desc_winograd_input(node, s, dt, g.rank, pd);
    dnnl_format_tag_t last = channels_last(g.rank);
    if (dt != dnnl_f32)
        return is_gemm(*pd) && last != dnnl_format_tag_undef
                   ? conv_desc_prefer(node, s, dt, last, false, pd)
                   : RN_OK;
    if (grouped_1x1(node, &g) && strcmp(cpu_pd_impl(*pd), "jit:avx2") == 0 &&
        (st = conv_desc_prefer(node, s, dt, plain_tag(g.rank), true, pd)) != RN_OK)
        return st;
    if (is_gemm(*pd) && is_fused(node) && g.rank >= 3 && g.rank <= 5 &&
        (st = split_epilogue(node, s, dt, g.rank, pd)) != RN_OK)
        return st;
    if (s->epi_pd == NULL && s->sum >= 0 && is_gemm(*pd) && last != dnnl_format_tag_undef)
        return conv_desc_prefer(node, s, dt, last, false, pd);
    return RN_OK;
}

static rn_status conv_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    cpu_weighted *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    w->has_bias = conv_has_bias(node);
    w->sum = conv_sum_input(node);
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
