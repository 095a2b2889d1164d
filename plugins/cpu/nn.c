/* Pooling, LRN, Softmax/LogSoftmax, BatchNormalization and Concat as oneDNN
 * primitives over the layout their input's producer writes (plain f32 when
 * oneDNN has no implementation for it). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/team.h"

#define MAX_CONCAT 64

typedef struct nn_state {
    cpu_prim p;
    int n_src;
    cpu_md src[MAX_CONCAT], dst;
    cpu_md stat;   /* [C]: BatchNormalization's scale, shift, mean, var;
                                  LayerNormalization's scale and shift */
    bool ln_shift; /* LayerNormalization has a bias */
    cpu_layout src_l[MAX_CONCAT], dst_l;
    const rn_layout *src_layout[MAX_CONCAT], *dst_layout;
    /* LRN over a channel-blocked producer (lrn_over_plain): p runs over
     * `plain`, between a reorder into it and one out of it, its source and
     * destination in the scratch at plain_at[0] and plain_at[1]. */
    bool lrn_plain;
    cpu_prim to_plain, from_plain;
    cpu_md plain;
    size_t plain_at[2];
    size_t scratch; /* bytes: the primitives' scratchpad (and the plain tensors) */
    /* ShuffleChannels as a reorder from plain into the channel-blocked
     * layout (shuffle_into_blocked): p reads shuffle_from, writes
     * shuffle_to, views of the input and the output with the group axes
     * split out. */
    bool shuffle_reorder;
    cpu_md shuffle_from, shuffle_to;
    /* BatchNormalization as a depthwise 1x1 convolution (bn_as_depthwise):
     * p is the convolution, its weights (scale / sqrt(var + eps)) and bias
     * (shift - mean * weight) folded at compile time, owned here. */
    bool bn_conv;
    cpu_md bn_wei, bn_bias;
    float *bn_wei_data, *bn_bias_data;
    /* A Concat along C of dense channels-last parts (concat_channels_last):
     * each pixel's channels of a part are one run of part_row[k] bytes at
     * byte part_at[k] of the output pixel's row_bytes; copied by copy_team
     * threads, each a range of the pixels. */
    bool cl_copy;
    int copy_team;
    size_t pixels, row_bytes;
    size_t part_row[MAX_CONCAT], part_at[MAX_CONCAT];
} nn_state;

static void nn_release(void *state)
{
    nn_state *s = state;
    if (s == NULL)
        return;
    cpu_prim_release(&s->p);
    cpu_prim_release(&s->to_plain);
    cpu_prim_release(&s->from_plain);
    free(s->bn_wei_data);
    free(s->bn_bias_data);
    free(s);
}

static const rn_layout *nn_input_layout(const void *state, int i)
{
    const nn_state *s = state;
    return i < s->n_src ? s->src_layout[i] : NULL;
}

static const rn_layout *nn_output_layout(const void *state, int i)
{
    return i == 0 ? ((const nn_state *)state)->dst_layout : NULL;
}

static size_t nn_scratch(const void *state)
{
    return ((const nn_state *)state)->scratch;
}

static const char *nn_impl(const void *state)
{
    return ((const nn_state *)state)->p.impl;
}

static bool f32_static(const rn_node *node, const char **why)
{
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "f32 only";
        return false;
    }
    return cpu_static_node(node, why);
}

/* ---- descriptors per op ---- */

static bool is_op(const rn_node *node, const char *op)
{
    return strcmp(rn_node_op_type(node), op) == 0;
}

static bool pool_supports(const rn_node *node, const char **why)
{
    /* Max pooling also on int8 (fuse_qdq's MaxPool on the quantized tensor). */
    if (!cpu_int8_max_pool(node) && !f32_static(node, why))
        return false;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    if (x.rank < 3 || x.rank > 5) {
        *why = "1-D to 3-D pooling only";
        return false;
    }
    if (rn_node_output_count(node) > 1 && rn_node_output_name(node, 1)[0] != '\0') {
        *why = "MaxPool's indices output";
        return false;
    }
    if (is_op(node, "AveragePool") && rn_node_attr_int(node, "ceil_mode", 0) &&
        rn_node_attr_int(node, "count_include_pad", 0)) {
        *why = "ceil_mode with count_include_pad";
        return false;
    }
    return true;
}

static rn_status pool_desc(const rn_node *node, nn_state *s, dnnl_alg_kind_t *alg, cpu_op *d)
{
    rn_partial_shape x = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    int n = x.rank - 2;
    dnnl_dims_t strides, kernel, dil, pl, pr;
    bool global = is_op(node, "GlobalAveragePool") || is_op(node, "GlobalMaxPool");
    bool max = is_op(node, "MaxPool") || is_op(node, "GlobalMaxPool");
    if (global) {
        for (int i = 0; i < n; i++) {
            strides[i] = 1;
            kernel[i] = x.dims[2 + i];
            dil[i] = pl[i] = pr[i] = 0;
        }
        *alg = max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
    } else {
        graph_window w;
        rn_status st = graph_window_read(node, n, NULL, true, &w);
        if (st != RN_OK)
            return st;
        for (int i = 0; i < n; i++) {
            int64_t b, e;
            graph_window_pads(&w, i, x.dims[2 + i], y.dims[2 + i], &b, &e);
            strides[i] = w.stride[i];
            kernel[i] = w.kernel[i];
            dil[i] = w.dilation[i] - 1;
            pl[i] = b;
            /* The right padding that gives y's size (ceil_mode adds some). */
            int64_t span = (w.kernel[i] - 1) * w.dilation[i] + 1;
            pr[i] = (y.dims[2 + i] - 1) * w.stride[i] + span - x.dims[2 + i] - b;
            if (pr[i] < 0)
                pr[i] = 0;
        }
        *alg = max                                              ? dnnl_pooling_max
               : rn_node_attr_int(node, "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                                : dnnl_pooling_avg_exclude_padding;
    }
    cpu_md dst;
    dnnl_dims_t yd;
    for (int i = 0; i < y.rank; i++)
        yd[i] = y.dims[i];
    if (cpu_md_init_by_tag(&dst, y.rank, yd, s->src[0].data_type, dnnl_format_tag_any) !=
        dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe pooling output");
    dnnl_status_t ds = cpu_op_pooling(d, *alg, &s->src[0], &dst, strides, kernel, dil, pl, pr);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the pooling", ds);
    return RN_OK;
}

static bool lrn_supports(const rn_node *node, const char **why)
{
    if (rn_node_attr_int(node, "size", 1) % 2 == 0) {
        *why = "an even LRN size";
        return false;
    }
    return f32_static(node, why) && rn_node_input_shape(node, 0).rank >= 3;
}

static bool softmax_axis(const rn_node *node, int *axis)
{
    int rank = rn_node_input_shape(node, 0).rank;
    int64_t a = rn_node_attr_int(node, "axis", rn_node_opset(node) >= 13 ? -1 : 1);
    if (a < 0)
        a += rank;
    if (a < 0 || a >= rank)
        return false;
    /* Before opset 13 the op works on the input flattened to 2-D at axis:
     * the same as the last axis only when axis is the last. */
    if (rn_node_opset(node) < 13 && a != rank - 1)
        return false;
    *axis = (int)a;
    return true;
}

static bool softmax_supports(const rn_node *node, const char **why)
{
    int axis;
    if (!softmax_axis(node, &axis)) {
        *why = "a pre-13 softmax over more than the last axis";
        return false;
    }
    return f32_static(node, why);
}

static bool bn_supports(const rn_node *node, const char **why)
{
    if (rn_node_output_count(node) > 1 && rn_node_output_name(node, 1)[0] != '\0') {
        *why = "training-mode outputs";
        return false;
    }
    if (rn_node_attr_int(node, "training_mode", 0) != 0 ||
        rn_node_attr_int(node, "spatial", 1) != 1) {
        *why = "training mode or spatial 0";
        return false;
    }
    const char *act = rn_node_attr_string(node, "activation", NULL);
    if (act != NULL && strcmp(act, "Relu") != 0) {
        *why = "an activation other than Relu";
        return false;
    }
    for (int k = 1; k < 5; k++)
        if (rn_node_input_constant(node, k) == NULL ||
            rn_node_input_constant(node, k)->type != RN_F32) {
            *why = "scale, bias, mean and variance must be f32 constants";
            return false;
        }
    return f32_static(node, why) && rn_node_input_shape(node, 0).rank >= 2;
}

static bool concat_supports(const rn_node *node, const char **why)
{
    if (rn_node_input_count(node) > MAX_CONCAT) {
        *why = "more than 64 inputs";
        return false;
    }
    for (int k = 0; k < rn_node_input_count(node); k++)
        if (rn_node_input_type(node, k) != RN_F32) {
            *why = "f32 only";
            return false;
        }
    return cpu_static_node(node, why);
}

/* The engine, and an attribute with a user scratchpad (to destroy). */
static rn_status engine_and_attr(const rn_node *node, dnnl_engine_t *eng,
                                 dnnl_primitive_attr_t *attr)
{
    rn_status st = cpu_engine(eng);
    return st != RN_OK ? st : cpu_attr(node, NULL, attr);
}

/* An f32 MaxPool or AveragePool that oneDNN gives its AVX or AVX2 kernel
 * (jit:avx, jit:avx2) takes its SSE4.1 kernel instead where oneDNN has one
 * for the layout: oneDNN 2.6.3's AVX kernels set each output's start value
 * with a legacy-SSE movq amid VEX code, and the SSE/AVX transitions take
 * most of their time (perf on 512 x 13x13: 77 % on that movq and the
 * broadcast after it). jit:sse41 was 3-8x faster on every windowed pooling
 * of the light models, nChw8c and nhwc, max and average (bench/onednn/run
 * --pool; 64 x 112x112 3x3/2: 751 against 136 us), and on a window over the
 * whole map over nChw8c (7x7 over 7x7: 27 against 13 us; nhwc 6 against 8).
 * Where oneDNN picks another kernel (AVX-512's, over nChw16c, which SSE4.1
 * does not take) nothing changes. *pd is replaced, or left. */
static void prefer_sse41_pooling(const cpu_op *op, const_dnnl_primitive_attr_t attr,
                                 dnnl_engine_t eng, dnnl_primitive_desc_t *pd)
{
    const char *impl = cpu_pd_impl(*pd);
    if (strncmp(impl, "jit:avx", 7) != 0 || strncmp(impl, "jit:avx512", 10) == 0)
        return;
    dnnl_primitive_desc_t c = cpu_op_pd_named(op, attr, eng, "jit:sse41");
    if (c != NULL) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = c;
    }
}

/* The op's primitive descriptor over s->src (NULL: unimplemented). */
static rn_status nn_pd(const rn_node *node, nn_state *s, dnnl_primitive_desc_t *pd)
{
    dnnl_engine_t eng = NULL;
    dnnl_primitive_attr_t attr;
    rn_status st = engine_and_attr(node, &eng, &attr);
    if (st != RN_OK)
        return st;
    dnnl_status_t ds = dnnl_success;
    *pd = NULL;
    if (is_op(node, "Concat")) {
        rn_partial_shape y = rn_node_output_shape(node, 0);
        int64_t axis = rn_node_attr_int(node, "axis", 0);
        if (axis < 0)
            axis += y.rank;
        int prev = cpu_team_begin(node);
        ds = cpu_concat_pd(pd, NULL, s->n_src, (int)axis, s->src, attr, eng);
        cpu_team_end(prev);
    } else {
        cpu_op d;
        if (is_op(node, "LRN")) {
            int64_t size = rn_node_attr_int(node, "size", 1);
            ds = cpu_op_lrn(&d, dnnl_lrn_across_channels, &s->src[0], size,
                            rn_node_attr_float_or_default(node, "alpha"),
                            rn_node_attr_float_or_default(node, "beta"),
                            rn_node_attr_float_or_default(node, "bias"));
        } else if (is_op(node, "LayerNormalization")) {
            unsigned flags = dnnl_use_scale;
            if (s->ln_shift)
                flags |= dnnl_use_shift;
            ds = cpu_op_layer_norm(&d, &s->src[0], rn_node_attr_float_or_default(node, "epsilon"),
                                   flags);
        } else if (is_op(node, "ShuffleChannels")) {
            int64_t axis = rn_node_attr_int(node, "axis", 1);
            if (axis < 0)
                axis += rn_node_input_shape(node, 0).rank;
            /* oneDNN's group_size is the size of each of our groups. */
            int64_t c = rn_node_input_shape(node, 0).dims[axis];
            ds = cpu_op_shuffle(&d, &s->src[0], (int)axis, c / rn_node_attr_int(node, "group", 1));
        } else if (is_op(node, "Softmax") || is_op(node, "LogSoftmax")) {
            int axis = 0;
            softmax_axis(node, &axis);
            ds = cpu_op_softmax(&d,
                                is_op(node, "Softmax") ? dnnl_softmax_accurate : dnnl_softmax_log,
                                &s->src[0], &s->src[0], axis);
        } else if (is_op(node, "BatchNormalization") || is_op(node, "FusedBatchNormalization")) {
            unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
            if (is_op(node, "FusedBatchNormalization"))
                flags |= dnnl_fuse_norm_relu; /* its one activation: Relu */
            ds = cpu_op_batch_norm(&d, &s->src[0], rn_node_attr_float_or_default(node, "epsilon"),
                                   flags);
        } else {
            dnnl_alg_kind_t alg;
            if ((st = pool_desc(node, s, &alg, &d)) != RN_OK) {
                dnnl_primitive_attr_destroy(attr);
                return st;
            }
        }
        if (ds == dnnl_success) {
            int prev = cpu_team_begin(node);
            ds = cpu_op_pd(pd, &d, attr, eng);
            if (ds == dnnl_success && (is_op(node, "MaxPool") || is_op(node, "AveragePool")) &&
                s->src[0].data_type == dnnl_f32)
                prefer_sse41_pooling(&d, attr, eng, pd);
            cpu_team_end(prev);
        }
    }
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) {
        *pd = NULL;
        if (ds != dnnl_unimplemented)
            return cpu_error(node, "creating the primitive", ds);
    }
    return RN_OK;
}

/* Whether md blocks its channels (axis 1): nChw8c, nChw16c, ... */
static bool channel_blocked(const cpu_md *md)
{
    if (md->format_kind != dnnl_blocked || md->ndims < 3)
        return false;
    const cpu_blocking *b = &md->format_desc.blocking;
    for (int k = 0; k < b->inner_nblks; k++)
        if (b->inner_idxs[k] == 1)
            return true;
    return false;
}

/* A reorder from `from` to `to` as a primitive of the node (its team). */
static rn_status reorder_prim(const rn_node *node, const cpu_md *from, const cpu_md *to,
                              cpu_prim *p)
{
    dnnl_engine_t eng = NULL;
    dnnl_primitive_attr_t attr;
    rn_status st = engine_and_attr(node, &eng, &attr);
    if (st != RN_OK)
        return st;
    dnnl_primitive_desc_t pd = NULL;
    int prev = cpu_team_begin(node);
    dnnl_status_t ds = cpu_reorder_pd(&pd, from, eng, to, attr);
    cpu_team_end(prev);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return cpu_error(node, "creating the reorder", ds);
    return cpu_prim_init(p, node, pd);
}

/* LRN across channels over a channel-blocked producer (a convolution's or
 * a pooling's nChw8c): oneDNN 2.6's LRN over nChw8c takes 3-6x as long as
 * over plain nchw (AVX2, one thread: 192 channels 55x55 2034 us against
 * 327 us, a reorder each way about 105 us; SSE4.1 2117 against 631 us;
 * bench/onednn/run --lrn), so the node keeps its producer's layout on both
 * sides and runs the LRN over plain in its scratch, between two reorders,
 * as OpenVINO's CPU plugin reorders to planar for LRN. Left as it is (s->p
 * over the blocked layout) when oneDNN has no LRN over plain but its
 * reference one (bf16 where no jit kernel takes it). Not measured on
 * AVX-512 (nChw16c). */
static rn_status lrn_over_plain(const rn_node *node, nn_state *s)
{
    cpu_md blocked = s->src[0];
    dnnl_dims_t strides;
    int64_t n = 1;
    for (int i = blocked.ndims - 1; i >= 0; i--) {
        strides[i] = n;
        n *= blocked.dims[i];
    }
    if (cpu_md_init_by_strides(&s->plain, blocked.ndims, blocked.dims, blocked.data_type,
                               strides) != dnnl_success)
        return RN_OK;
    s->src[0] = s->plain;
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = nn_pd(node, s, &pd);
    s->src[0] = blocked;
    if (st != RN_OK || pd == NULL)
        return st;
    if (strncmp(cpu_pd_impl(pd), "ref", 3) == 0 || cpu_pd_impl(pd)[0] == '\0') {
        dnnl_primitive_desc_destroy(pd);
        return RN_OK;
    }
    cpu_prim lrn;
    if ((st = cpu_prim_init(&lrn, node, pd)) != RN_OK)
        return st;
    if ((st = reorder_prim(node, &blocked, &s->plain, &s->to_plain)) != RN_OK ||
        (st = reorder_prim(node, &s->plain, &blocked, &s->from_plain)) != RN_OK) {
        cpu_prim_release(&lrn);
        return st;
    }
    cpu_prim_release(&s->p);
    s->p = lrn;
    s->lrn_plain = true;
    size_t len = strnlen(s->p.impl, sizeof s->p.impl - sizeof " (plain)");
    memcpy(s->p.impl + len, " (plain)", sizeof " (plain)");
    size_t pad = s->p.scratch;
    pad = s->to_plain.scratch > pad ? s->to_plain.scratch : pad;
    pad = s->from_plain.scratch > pad ? s->from_plain.scratch : pad;
    size_t bytes = (cpu_md_get_size(&s->plain) + 63) & ~(size_t)63;
    s->plain_at[0] = (pad + 63) & ~(size_t)63;
    s->plain_at[1] = s->plain_at[0] + bytes;
    s->scratch = s->plain_at[1] + bytes;
    return RN_OK;
}

/* ShuffleChannels as one reorder between strided views of its input and
 * output (n axes: dims, the input's strides `from`, the output's `to`),
 * the output in format `tag`; s is left as it was when oneDNN has none. */
static rn_status shuffle_as_reorder(const rn_node *node, nn_state *s, int n, const dnnl_dims_t dims,
                                    const dnnl_dims_t from, const dnnl_dims_t to,
                                    dnnl_format_tag_t tag)
{
    const cpu_md *x = &s->src[0];
    dnnl_dims_t xd;
    memcpy(xd, x->dims, sizeof xd);
    cpu_md dst;
    dnnl_data_type_t dt = x->data_type;
    if (cpu_md_init_by_strides(&s->shuffle_from, n, dims, dt, from) != dnnl_success ||
        cpu_md_init_by_strides(&s->shuffle_to, n, dims, dt, to) != dnnl_success ||
        cpu_md_init_by_tag(&dst, x->ndims, xd, dt, tag) != dnnl_success)
        return RN_OK;
    cpu_prim p;
    rn_status st = reorder_prim(node, &s->shuffle_from, &s->shuffle_to, &p);
    if (st != RN_OK)
        return st;
    cpu_prim_release(&s->p);
    s->p = p;
    s->shuffle_reorder = true;
    s->dst = dst;
    cpu_layout_init(&s->dst_l, &s->dst, cpu_io_type(node), &s->dst_layout);
    s->scratch = s->p.scratch;
    return RN_OK;
}

/* ShuffleChannels over a plain f32 input (ShuffleNet's, after gemm
 * convolutions that write plain) ran oneDNN's shuffle (ref:any, the only
 * one it has over plain) and then the plan's reorder into the blocked
 * layout its depthwise consumer reads. Both are one reorder: with g groups
 * of K channels, output channel j*g + i is input channel i*K + j, and in
 * a layout of b-channel blocks (g dividing b, q = b/g dividing K) that
 * channel is at block j/q, lane (j%q)*g + i; over the axes [N, g, K/q, q,
 * spatial...] both the plain input and the blocked output are strided
 * views, and oneDNN's jit reorder runs between them (ShuffleNet's, one
 * thread: 5-23 us against 11-32 us for the two; bench/LOG.md "ShuffleNet:
 * gemm convolutions with the post-ops as a primitive of their own"). The
 * block is the one oneDNN's convolutions take on the machine's ISA: 16
 * where it has AVX-512, else 8. s is left as it was where that does not
 * apply, or where the depthwise convolutions take channels-last
 * (shuffle_channels_last then). */
static bool channels_last_consumer(const rn_node *node, const cpu_md *x);

static rn_status shuffle_into_blocked(const rn_node *node, nn_state *s)
{
    const cpu_md *x = &s->src[0];
    int r = x->ndims;
    int64_t g = rn_node_attr_int(node, "group", 1), axis = rn_node_attr_int(node, "axis", 1);
    int64_t b = strncmp(cpu_isa_name(), "avx512", 6) == 0 ? 16 : 8;
    if (r < 3 || r > 5 || x->data_type != dnnl_f32 || (axis != 1 && axis != 1 - r) || g < 1 ||
        b % g != 0 || x->dims[1] % g != 0 || (x->dims[1] / g) % (b / g) != 0 ||
        channels_last_consumer(node, x))
        return RN_OK;
    static const dnnl_format_tag_t plain[3] = {dnnl_abc, dnnl_abcd, dnnl_abcde};
    static const dnnl_format_tag_t blocked[3][2] = {
        {dnnl_nCw8c, dnnl_nCw16c}, {dnnl_nChw8c, dnnl_nChw16c}, {dnnl_nCdhw8c, dnnl_nCdhw16c}};
    cpu_md t;
    dnnl_dims_t dims;
    memcpy(dims, x->dims, sizeof dims);
    if (cpu_md_init_by_tag(&t, r, dims, dnnl_f32, plain[r - 3]) != dnnl_success ||
        !cpu_md_equal(&t, x))
        return RN_OK;
    int64_t c = x->dims[1], k = c / g, q = b / g, sp = 1;
    for (int i = 2; i < r; i++)
        sp *= x->dims[i];
    dnnl_dims_t d6, from, to;
    d6[0] = x->dims[0], d6[1] = g, d6[2] = k / q, d6[3] = q;
    from[0] = to[0] = c * sp;
    from[1] = k * sp, from[2] = q * sp, from[3] = sp;
    to[1] = 1, to[2] = sp * b, to[3] = g;
    int64_t inner = 1;
    for (int i = r - 1; i >= 2; i--) {
        d6[i + 2] = x->dims[i];
        from[i + 2] = inner;
        to[i + 2] = inner * b;
        inner *= x->dims[i];
    }
    return shuffle_as_reorder(node, s, r + 2, d6, from, to, blocked[r - 3][b == 16]);
}

/* Whether oneDNN's depthwise 3x3 convolution over x's dims (what follows
 * ShuffleNet's shuffles), asked for its source layout, takes channels-last
 * (oneDNN 3.x's on AVX2: brdgmm_dw over acdb) rather than channel blocks
 * (2.6's jit_dw over nChw8c). */
static bool channels_last_consumer(const rn_node *node, const cpu_md *x)
{
    int r = x->ndims;
    static const dnnl_format_tag_t last[3] = {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc};
    dnnl_dims_t dims, wd = {x->dims[1], 1, 1, 3, 3, 3}, ones = {1, 1, 1}, zeros = {0, 0, 0};
    memcpy(dims, x->dims, sizeof dims);
    cpu_md src, wei, dst, picked, want;
    cpu_op op;
    dnnl_engine_t eng = NULL;
    dnnl_primitive_desc_t pd = NULL;
    bool yes = false;
    if (cpu_engine(&eng) != RN_OK) {
        rn_clear_error();
        return false;
    }
    if (cpu_md_init_by_tag(&src, r, dims, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        cpu_md_init_by_tag(&dst, r, dims, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        cpu_md_init_by_tag(&wei, r + 1, wd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        cpu_op_conv(&op, dnnl_convolution_direct, &src, &wei, NULL, &dst, ones, zeros, ones,
                    ones) == dnnl_success &&
        cpu_op_pd(&pd, &op, NULL, eng) == dnnl_success) {
        yes = cpu_pd_md(pd, dnnl_query_src_md, 0, &picked) &&
              cpu_md_init_by_tag(&want, r, dims, dnnl_f32, last[r - 3]) == dnnl_success &&
              cpu_md_equal(&picked, &want);
        dnnl_primitive_desc_destroy(pd);
    }
    (void)node;
    return yes;
}

/* The same over channels-last input (oneDNN 3.x's convolutions on AVX2
 * write acdb, over which its shuffle is its reference one): with g groups
 * of K channels, over the axes [N, g, K, spatial...] the input and the
 * channels-last output (channel j*g + i from input channel i*K + j) are
 * strided views too. */
static rn_status shuffle_channels_last(const rn_node *node, nn_state *s)
{
    const cpu_md *x = &s->src[0];
    int r = x->ndims;
    int64_t g = rn_node_attr_int(node, "group", 1), axis = rn_node_attr_int(node, "axis", 1);
    if (r < 3 || r > 5 || (x->data_type != dnnl_f32 && x->data_type != dnnl_bf16) ||
        (axis != 1 && axis != 1 - r) || g < 1 || x->dims[1] % g != 0)
        return RN_OK;
    static const dnnl_format_tag_t last[3] = {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc};
    cpu_md t;
    dnnl_dims_t dims;
    memcpy(dims, x->dims, sizeof dims);
    const cpu_blocking *xb = &x->format_desc.blocking;
    if (x->format_kind != dnnl_blocked || xb->inner_nblks != 0 || x->offset0 != 0)
        return RN_OK;
    for (int i = 0; i < r; i++)
        if (x->padded_dims[i] != x->dims[i])
            return RN_OK;
    /* Channels-last input, or plain where the depthwise convolutions
     * after a shuffle take channels-last (channels_last_consumer). */
    if ((cpu_md_init_by_tag(&t, r, dims, x->data_type, last[r - 3]) != dnnl_success ||
         !cpu_md_equal(&t, x)) &&
        (x->data_type != dnnl_f32 || !channels_last_consumer(node, x)))
        return RN_OK;
    int64_t c = x->dims[1], k = c / g, sp = 1;
    for (int i = 2; i < r; i++)
        sp *= x->dims[i];
    dnnl_dims_t d, from, to;
    d[0] = x->dims[0], d[1] = g, d[2] = k;
    from[0] = xb->strides[0], to[0] = c * sp;
    from[1] = k * xb->strides[1], from[2] = xb->strides[1];
    to[1] = 1, to[2] = g;
    int64_t inner = c;
    for (int i = r - 1; i >= 2; i--) {
        d[i + 1] = x->dims[i];
        from[i + 1] = xb->strides[i];
        to[i + 1] = inner;
        inner *= x->dims[i];
    }
    return shuffle_as_reorder(node, s, r + 1, d, from, to, last[r - 3]);
}

/* Whether oneDNN's pick is one of its reference kernels (simple_nchw:any
 * is its plain-layout pooling). */
static bool reference_impl(const_dnnl_primitive_desc_t pd)
{
    const char *impl = cpu_pd_impl(pd);
    return strncmp(impl, "ref", 3) == 0 || strncmp(impl, "simple", 6) == 0;
}

/* A MaxPool or AveragePool whose producer writes plain activations gets
 * oneDNN 2.6.3's simple_nchw:any over them: ShuffleNet's 3x3/2 average
 * poolings of 24 x 56x56, 136 x 28x28 and 272 x 14x14 (their units'
 * inputs, written plain by gemm convolutions) took 900 us an inference, one
 * thread, against 80 us for its two over nChw8c with jit:sse41 (bench/LOG.md
 * "ShuffleNet: gemm convolutions with the post-ops as a primitive of their
 * own"). It is described again over the channel-blocked layout, 16 then 8
 * channels a block (AVX-512's, then AVX2's and SSE4.1's), and takes the
 * first that a jit kernel runs; the plan reorders its input into it. *pd is
 * replaced, or left with s->src[0] as it was. */
static rn_status pool_over_blocked(const rn_node *node, nn_state *s, dnnl_primitive_desc_t *pd)
{
    static const dnnl_format_tag_t tags[3][2] = {
        {dnnl_nCw16c, dnnl_nCw8c}, {dnnl_nChw16c, dnnl_nChw8c}, {dnnl_nCdhw16c, dnnl_nCdhw8c}};
    cpu_md plain = s->src[0];
    if (plain.ndims < 3 || plain.ndims > 5 || plain.data_type != dnnl_f32)
        return RN_OK;
    for (int k = 0; k < 2; k++) {
        dnnl_dims_t dims;
        memcpy(dims, plain.dims, sizeof dims);
        if (cpu_md_init_by_tag(&s->src[0], plain.ndims, dims, dnnl_f32, tags[plain.ndims - 3][k]) !=
            dnnl_success)
            continue;
        dnnl_primitive_desc_t alt = NULL;
        rn_status st = nn_pd(node, s, &alt);
        if (st != RN_OK) {
            s->src[0] = plain;
            return st;
        }
        if (alt != NULL && !reference_impl(alt)) {
            dnnl_primitive_desc_destroy(*pd);
            *pd = alt;
            return RN_OK;
        }
        if (alt != NULL)
            dnnl_primitive_desc_destroy(alt);
    }
    s->src[0] = plain;
    return RN_OK;
}

/* Whether md is f32 channels-last (acdb): no inner blocks, C innermost. */
static bool channels_last_f32(const cpu_md *md)
{
    return md->data_type == dnnl_f32 && md->format_kind == dnnl_blocked && md->ndims == 4 &&
           md->format_desc.blocking.inner_nblks == 0 && md->format_desc.blocking.strides[1] == 1;
}

/* Whether a depthwise 1x1 convolution's weights of C groups in md lie as C
 * floats in group order (goihw, or blocked by groups only with C a whole
 * number of blocks: Goihw16g), as bn_as_depthwise writes them. */
static bool groups_in_order(const cpu_md *md, int64_t c)
{
    const cpu_blocking *b = &md->format_desc.blocking;
    if (md->format_kind != dnnl_blocked || md->data_type != dnnl_f32 ||
        cpu_md_get_size(md) != (size_t)c * sizeof(float))
        return false;
    if (b->inner_nblks == 0)
        return b->strides[0] == 1;
    return b->inner_nblks == 1 && b->inner_idxs[0] == 0 && b->strides[0] == b->inner_blks[0];
}

/* A BatchNormalization (+ ReLU) with constant statistics over an f32
 * channels-last input, as a depthwise 1x1 convolution with the statistics
 * folded into its weights and bias, where oneDNN runs that as its brgemm
 * depthwise kernel for AVX-512 (brdgmm_dw:avx512_core). oneDNN 2.6.3's
 * bnorm_jit over channels-last takes 1.5-2x the convolution's time (one
 * thread, Zen 4: 256 x 56x56 98 against 64 us, 512 x 28x28 50 against 33,
 * 1024 x 7x7 7.0 against 3.5), and 2.6's f32 convolutions write
 * channels-last on AVX-512, so DenseNet's 62 pre-activations (after its
 * Concats) ran there; over nChw16c bnorm_jit is the faster (48 us) and is
 * kept, as on every other layout and kernel. *pd (the bnorm's) is replaced
 * on success and left otherwise. */
static rn_status bn_as_depthwise(const rn_node *node, nn_state *s, dnnl_primitive_desc_t *pd)
{
    if (!channels_last_f32(&s->src[0]))
        return RN_OK;
    int64_t c = s->src[0].dims[1];
    const rn_kernel_tensor *stat[4];
    for (int k = 0; k < 4; k++) {
        stat[k] = rn_node_input_constant(node, k + 1);
        if (stat[k] == NULL || stat[k]->type != RN_F32 || stat[k]->data == NULL ||
            stat[k]->rank != 1 || stat[k]->dims[0] != c)
            return RN_OK;
    }
    dnnl_dims_t wd = {c, 1, 1, 1, 1}, one = {1, 1}, zero = {0, 0};
    cpu_md wei, bias, dst = s->src[0];
    if (cpu_md_init_by_tag(&wei, 5, wd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
        cpu_md_init_by_tag(&bias, 1, wd, dnnl_f32, dnnl_a) != dnnl_success)
        return RN_OK;
    cpu_op d;
    if (cpu_op_conv(&d, dnnl_convolution_direct, &s->src[0], &wei, &bias, &dst, one, zero, zero,
                    zero) != dnnl_success)
        return RN_OK;
    dnnl_post_ops_t po = NULL;
    if (is_op(node, "FusedBatchNormalization") &&
        (dnnl_post_ops_create(&po) != dnnl_success ||
         cpu_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.f, 0.f) != dnnl_success)) {
        dnnl_post_ops_destroy(po);
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: node '%s': out of memory", rn_node_name(node));
    }
    dnnl_engine_t eng = NULL;
    dnnl_primitive_attr_t attr = NULL;
    rn_status st = cpu_engine(&eng);
    if (st == RN_OK)
        st = cpu_attr(node, po, &attr);
    dnnl_post_ops_destroy(po);
    if (st != RN_OK)
        return st;
    int prev = cpu_team_begin(node);
    dnnl_primitive_desc_t conv = NULL;
    dnnl_status_t ds = cpu_op_pd(&conv, &d, attr, eng);
    cpu_team_end(prev);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return RN_OK;
    cpu_pd_md(conv, dnnl_query_weights_md, 0, &wei);
    cpu_pd_md(conv, dnnl_query_weights_md, 1, &bias);
    cpu_md out;
    cpu_pd_md(conv, dnnl_query_dst_md, 0, &out);
    float *w = NULL, *b = NULL;
    if (strncmp(cpu_pd_impl(conv), "brdgmm_dw:avx512", 16) != 0 || !groups_in_order(&wei, c) ||
        cpu_md_get_size(&bias) != (size_t)c * sizeof(float) || !channels_last_f32(&out) ||
        (w = aligned_alloc(64, ((size_t)c * sizeof(float) + 63) & ~(size_t)63)) == NULL ||
        (b = aligned_alloc(64, ((size_t)c * sizeof(float) + 63) & ~(size_t)63)) == NULL) {
        free(w);
        dnnl_primitive_desc_destroy(conv);
        return RN_OK;
    }
    const float *scale = stat[0]->data, *shift = stat[1]->data, *mean = stat[2]->data,
                *var = stat[3]->data;
    float eps = rn_node_attr_float_or_default(node, "epsilon");
    for (int64_t i = 0; i < c; i++) {
        w[i] = scale[i] / sqrtf(var[i] + eps);
        b[i] = shift[i] - mean[i] * w[i];
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = conv;
    s->bn_conv = true;
    s->bn_wei = wei;
    s->bn_bias = bias;
    s->bn_wei_data = w;
    s->bn_bias_data = b;
    return RN_OK;
}

/* Whether md is dense channels-last (acdb, acdeb, ...) of rank 3 to 5. */
static bool dense_channels_last(const cpu_md *md)
{
    if (md->format_kind != dnnl_blocked || md->ndims < 3 || md->ndims > 5 ||
        md->format_desc.blocking.inner_nblks != 0 || md->offset0 != 0)
        return false;
    const dnnl_dim_t *st = md->format_desc.blocking.strides;
    dnnl_dim_t want = md->dims[1];
    if (st[1] != 1)
        return false;
    for (int d = md->ndims - 1; d >= 2; d--) {
        if (st[d] != want)
            return false;
        want *= md->dims[d];
    }
    return st[0] == want || md->dims[0] == 1;
}

/* A Concat along C whose parts and output are dense channels-last, where
 * oneDNN runs its generic concat (simple:any): every pixel of the output
 * is its parts' channels end to end, so the node copies them itself, each
 * part's run of channels per pixel, the pixels split across the node's
 * team (each thread all the parts of its pixels). oneDNN 2.6.3's simple
 * concat copies pixel by pixel and took 1.1-1.6x the time of one jit
 * reorder per part into a strided view of the output (Zen 4, one thread:
 * 64+64 x 55x55 47 against 30 us), and on a team of two threads such a
 * reorder was slower than on one; this copy took 70-88 us for SqueezeNet's
 * 8 Concats where the reorders took 106-124 (OpenVINO's 70), DenseNet-121's
 * 58 0.67-0.96 ms against 1.1-1.2, Inception-v1's 9 ~285 against ~360 us
 * (Zen 5, LATENCY, 2 threads). */
static void concat_channels_last(const rn_node *node, nn_state *s)
{
    int64_t axis = rn_node_attr_int(node, "axis", 0);
    if (axis < 0)
        axis += s->dst.ndims;
    if (axis != 1 || strncmp(s->p.impl, "simple", 6) != 0 || !dense_channels_last(&s->dst) ||
        s->n_src > MAX_CONCAT)
        return;
    for (int k = 0; k < s->n_src; k++) {
        if (!dense_channels_last(&s->src[k]) || s->src[k].data_type != s->dst.data_type ||
            s->src[k].ndims != s->dst.ndims)
            return;
        for (int d = 0; d < s->dst.ndims; d++)
            if (d != 1 && s->src[k].dims[d] != s->dst.dims[d])
                return;
    }
    size_t elem = cpu_md_get_size(&s->dst);
    for (int d = 0; d < s->dst.ndims; d++)
        elem /= (size_t)s->dst.dims[d];
    s->row_bytes = (size_t)s->dst.dims[1] * elem;
    s->pixels = s->row_bytes > 0 ? cpu_md_get_size(&s->dst) / s->row_bytes : 0;
    size_t at = 0;
    for (int k = 0; k < s->n_src; k++) {
        s->part_row[k] = (size_t)s->src[k].dims[1] * elem;
        s->part_at[k] = at;
        at += s->part_row[k];
    }
    s->cl_copy = true;
    s->copy_team = cpu_team_size(node, cpu_config_get()->threads);
    s->scratch = 0; /* oneDNN's concat does not run */
    snprintf(s->p.impl, sizeof s->p.impl, "copy:channels_last");
}

typedef struct copy_fork {
    const nn_state *s;
    const rn_kernel_args *args;
    int threads;
} copy_fork;

/* Thread `thread` of f->threads: every part's channels of its pixels. */
static void copy_fork_main(void *arg, int thread)
{
    const copy_fork *f = arg;
    const nn_state *s = f->s;
    size_t per = (s->pixels + (size_t)f->threads - 1) / (size_t)f->threads;
    size_t from = per * (size_t)thread, to = from + per < s->pixels ? from + per : s->pixels;
    char *out = f->args->outputs[0].data;
    for (int k = 0; k < s->n_src; k++) {
        const char *in = f->args->inputs[k].data;
        size_t row = s->part_row[k];
        for (size_t p = from; p < to; p++)
            memcpy(out + p * s->row_bytes + s->part_at[k], in + p * row, row);
    }
}

static void concat_copy_run(const nn_state *s, const rn_kernel_args *args)
{
    copy_fork f = {s, args, s->copy_team};
    cpu_team_count(CPU_TEAM_PRIMITIVE, f.threads > 1 && !omp_in_parallel() ? f.threads : 1);
    if (f.threads > 1 && !omp_in_parallel()) {
        cpu_branch_fork(copy_fork_main, &f, f.threads);
        return;
    }
    f.threads = 1;
    copy_fork_main(&f, 0);
}

static rn_status nn_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    nn_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    s->n_src = is_op(node, "Concat") ? rn_node_input_count(node) : 1;
    s->ln_shift = is_op(node, "LayerNormalization") && rn_node_input_count(node) > 2 &&
                  rn_node_input_name(node, 2)[0] != '\0';
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = RN_OK;
    for (int native = 1; native >= 0 && st == RN_OK && pd == NULL; native--) {
        for (int k = 0; k < s->n_src && st == RN_OK; k++) {
            rn_partial_shape x = rn_node_input_shape(node, k);
            const rn_layout *l = native && k < ctx->n_input_layouts ? ctx->input_layouts[k] : NULL;
            st = cpu_input_md(l, cpu_io_type(node), x.rank, x.dims, &s->src[k]);
        }
        if (st == RN_OK)
            st = nn_pd(node, s, &pd);
    }
    if (st == RN_OK && pd == NULL)
        st = cpu_error(node, "creating the primitive", dnnl_unimplemented);
    if (st == RN_OK && (is_op(node, "MaxPool") || is_op(node, "AveragePool")) &&
        !channel_blocked(&s->src[0]) && reference_impl(pd))
        st = pool_over_blocked(node, s, &pd);
    if (st == RN_OK && rn_node_input_count(node) == 5 &&
        (is_op(node, "BatchNormalization") || is_op(node, "FusedBatchNormalization")))
        st = bn_as_depthwise(node, s, &pd);
    if (st != RN_OK && pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    if (st == RN_OK)
        st = cpu_prim_init(&s->p, node, pd);
    if (st != RN_OK) {
        nn_release(s);
        return st;
    }
    for (int k = 0; k < s->n_src; k++) {
        cpu_pd_md(pd, dnnl_query_src_md, k, &s->src[k]);
        cpu_layout_init(&s->src_l[k], &s->src[k], cpu_io_type(node), &s->src_layout[k]);
    }
    cpu_pd_md(pd, dnnl_query_dst_md, 0, &s->dst);
    cpu_layout_init(&s->dst_l, &s->dst, cpu_io_type(node), &s->dst_layout);
    s->scratch = s->p.scratch;
    if (is_op(node, "Concat"))
        concat_channels_last(node, s);
    if (is_op(node, "LRN") && channel_blocked(&s->src[0]) &&
        (st = lrn_over_plain(node, s)) != RN_OK) {
        nn_release(s);
        return st;
    }
    if (is_op(node, "ShuffleChannels") && (st = shuffle_into_blocked(node, s)) != RN_OK) {
        nn_release(s);
        return st;
    }
    /* Where oneDNN's shuffle is its reference one (3.x's over acdb). */
    if (is_op(node, "ShuffleChannels") && !s->shuffle_reorder &&
        strncmp(s->p.impl, "ref", 3) == 0 && (st = shuffle_channels_last(node, s)) != RN_OK) {
        nn_release(s);
        return st;
    }
    if (is_op(node, "BatchNormalization") || is_op(node, "FusedBatchNormalization")) {
        int64_t c = rn_node_input_shape(node, 0).dims[1];
        cpu_plain_md(RN_F32, 1, &c, &s->stat);
    } else if (is_op(node, "LayerNormalization")) {
        rn_partial_shape x = rn_node_input_shape(node, 0);
        cpu_plain_md(RN_F32, 1, &x.dims[x.rank - 1], &s->stat);
    }
    *state = s;
    return RN_OK;
}

static rn_status nn_run(rn_kernel_args *args)
{
    const nn_state *s = args->state;
    if (s->lrn_plain) {
        if (args->scratch.data == NULL || args->scratch.nbytes < s->scratch)
            return rn_set_error(RN_INTERNAL, "node '%s': no scratch for the LRN's plain tensors",
                                rn_node_name(args->node));
        void *x = (char *)args->scratch.data + s->plain_at[0];
        void *y = (char *)args->scratch.data + s->plain_at[1];
        cpu_arg in[2] = {{DNNL_ARG_FROM, &s->src[0], args->inputs[0].data},
                         {DNNL_ARG_TO, &s->plain, x}};
        cpu_arg lrn[2] = {{DNNL_ARG_SRC, &s->plain, x}, {DNNL_ARG_DST, &s->plain, y}};
        cpu_arg out[2] = {{DNNL_ARG_FROM, &s->plain, y},
                          {DNNL_ARG_TO, &s->dst, args->outputs[0].data}};
        rn_status st = cpu_execute(&s->to_plain, args, in, 2);
        if (st == RN_OK)
            st = cpu_execute(&s->p, args, lrn, 2);
        if (st == RN_OK)
            st = cpu_execute(&s->from_plain, args, out, 2);
        return st;
    }
    if (s->cl_copy) {
        concat_copy_run(s, args);
        return RN_OK;
    }
    if (s->bn_conv) {
        cpu_arg c[4] = {{DNNL_ARG_SRC, &s->src[0], args->inputs[0].data},
                        {DNNL_ARG_WEIGHTS, &s->bn_wei, s->bn_wei_data},
                        {DNNL_ARG_BIAS, &s->bn_bias, s->bn_bias_data},
                        {DNNL_ARG_DST, &s->dst, args->outputs[0].data}};
        return cpu_execute(&s->p, args, c, 4);
    }
    if (s->shuffle_reorder) {
        cpu_arg r[2] = {{DNNL_ARG_FROM, &s->shuffle_from, args->inputs[0].data},
                        {DNNL_ARG_TO, &s->shuffle_to, args->outputs[0].data}};
        return cpu_execute(&s->p, args, r, 2);
    }
    cpu_arg a[MAX_CONCAT + 1];
    int n = 0;
    /* Concat takes its sources as MULTIPLE_SRC, one input too. */
    if (strcmp(rn_node_op_type(args->node), "Concat") == 0) {
        for (int k = 0; k < s->n_src; k++)
            a[n++] = (cpu_arg){DNNL_ARG_MULTIPLE_SRC + k, &s->src[k], args->inputs[k].data};
    } else {
        a[n++] = (cpu_arg){DNNL_ARG_SRC, &s->src[0], args->inputs[0].data};
    }
    a[n++] = (cpu_arg){DNNL_ARG_DST, &s->dst, args->outputs[0].data};
    if (args->n_inputs == 5 && strstr(rn_node_op_type(args->node), "BatchNormalization") != NULL) {
        a[n++] = (cpu_arg){DNNL_ARG_SCALE, &s->stat, args->inputs[1].data};
        a[n++] = (cpu_arg){DNNL_ARG_SHIFT, &s->stat, args->inputs[2].data};
        a[n++] = (cpu_arg){DNNL_ARG_MEAN, &s->stat, args->inputs[3].data};
        a[n++] = (cpu_arg){DNNL_ARG_VARIANCE, &s->stat, args->inputs[4].data};
    }
    if (strcmp(rn_node_op_type(args->node), "LayerNormalization") == 0) {
        a[n++] = (cpu_arg){DNNL_ARG_SCALE, &s->stat, args->inputs[1].data};
        if (s->ln_shift)
            a[n++] = (cpu_arg){DNNL_ARG_SHIFT, &s->stat, args->inputs[2].data};
    }
    return cpu_execute(&s->p, args, a, n);
}

#define NN_KERNEL(name, dom, op, sup)                                                              \
    const rn_kernel name = {                                                                       \
        .domain = dom,                                                                             \
        .op_type = op,                                                                             \
        .impl_type = "onednn",                                                                     \
        .supports = sup,                                                                           \
        .prepare_ctx = nn_prepare,                                                                 \
        .run = nn_run,                                                                             \
        .release = nn_release,                                                                     \
        .input_layout = nn_input_layout,                                                           \
        .output_layout = nn_output_layout,                                                         \
        .scratch_bytes = nn_scratch,                                                               \
        .impl_name = nn_impl,                                                                      \
    }

NN_KERNEL(cpu_kernel_max_pool, "", "MaxPool", pool_supports);
NN_KERNEL(cpu_kernel_average_pool, "", "AveragePool", pool_supports);
NN_KERNEL(cpu_kernel_global_average_pool, "", "GlobalAveragePool", pool_supports);
NN_KERNEL(cpu_kernel_global_max_pool, "", "GlobalMaxPool", pool_supports);
NN_KERNEL(cpu_kernel_lrn, "", "LRN", lrn_supports);
NN_KERNEL(cpu_kernel_softmax, "", "Softmax", softmax_supports);
NN_KERNEL(cpu_kernel_log_softmax, "", "LogSoftmax", softmax_supports);
NN_KERNEL(cpu_kernel_batch_norm, "", "BatchNormalization", bn_supports);
NN_KERNEL(cpu_kernel_fused_batch_norm, "runnel", "FusedBatchNormalization", bn_supports);
NN_KERNEL(cpu_kernel_concat, "", "Concat", concat_supports);

/* Over the last axis, with constant f32 scale (and bias), Y only. */
static bool ln_supports(const rn_node *node, const char **why)
{
    rn_partial_shape x = rn_node_input_shape(node, 0);
    int64_t axis = rn_node_attr_int(node, "axis", -1);
    if (axis != -1 && axis != x.rank - 1) {
        *why = "normalisation over more than the last axis";
        return false;
    }
    for (int k = 1; k < rn_node_output_count(node); k++)
        if (rn_node_output_name(node, k)[0] != '\0') {
            *why = "Mean or InvStdDev outputs";
            return false;
        }
    for (int k = 1; k < rn_node_input_count(node) && k < 3; k++) {
        const rn_kernel_tensor *t = rn_node_input_constant(node, k);
        if (rn_node_input_name(node, k)[0] != '\0' &&
            (t == NULL || t->type != RN_F32 || t->rank != 1)) {
            *why = "scale and bias must be 1-D f32 constants";
            return false;
        }
    }
    return f32_static(node, why) && x.rank >= 2 && x.rank <= 5;
}

NN_KERNEL(cpu_kernel_layer_norm, "", "LayerNormalization", ln_supports);

static bool shuffle_supports(const rn_node *node, const char **why)
{
    return f32_static(node, why);
}

NN_KERNEL(cpu_kernel_shuffle_channels, "runnel", "ShuffleChannels", shuffle_supports);
