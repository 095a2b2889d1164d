/* ConvTranspose as a oneDNN deconvolution primitive: 1-D to 3-D, groups,
 * strides, dilations, pads (asymmetric, auto_pad, and what output_padding
 * and output_shape make of them), constant weights and bias.
 *
 * ONNX's weights are [C, M/g, k...] (input channels first); oneDNN's are
 * [g, M/g, C/g, k...] (output channels first). The primitive picks the
 * weights' layout (format "any"), and that layout reads the plain ONNX
 * tensor with its first axes swapped (cpu_layout_init_plain): the plan's
 * constant conversion turns the ONNX weights into the primitive's layout
 * once at compile time, as for Conv.
 *
 * Output size: shape inference gives it (output_shape, output_padding);
 * the begin pads are the explicit ones or what ONNX derives for SAME_* and
 * output_shape, and the end pad is what makes oneDNN's output size the
 * inferred one: (in - 1) * stride + dilated kernel - begin - out, negative
 * where output_padding exceeds the end pad (oneDNN's deconvolutions take
 * that: the output's last rows get only the taps that reach them). A
 * negative begin pad (output_shape beyond the unpadded output) is left to
 * REF's kernel. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops/attr_parse.h"
#include "plugins/cpu/cpu.h"

typedef struct deconv_geometry {
    int n; /* spatial dims */
    int64_t group;
    dnnl_dims_t strides, dilations, pads_begin, pads_end;
} deconv_geometry;

/* floor(a / 2) for any sign (ONNX's reference uses Python's //). */
static int64_t half_floor(int64_t a)
{
    return a >= 0 ? a / 2 : -((-a + 1) / 2);
}

static rn_status deconv_geometry_read(const rn_node *node, deconv_geometry *g)
{
    rn_partial_shape xs = rn_node_input_shape(node, 0), ws = rn_node_input_shape(node, 1);
    rn_partial_shape ys = rn_node_output_shape(node, 0);
    g->n = xs.rank - 2;
    g->group = rn_node_attr_int_or_default(node, "group");
    graph_window win;
    rn_status st = graph_window_read(node, g->n, ws.dims + 2, false, &win);
    if (st != RN_OK)
        return st;
    int64_t outpad[RN_MAX_RANK];
    if ((st = graph_window_ints(node, "output_padding", g->n, 0, 0, outpad)) != RN_OK)
        return st;
    const int64_t *os = NULL;
    int n_os = rn_node_attr_ints(node, "output_shape", &os);
    bool same =
        win.auto_pad == GRAPH_AUTO_PAD_SAME_UPPER || win.auto_pad == GRAPH_AUTO_PAD_SAME_LOWER;
    for (int i = 0; i < g->n; i++) {
        int64_t in = xs.dims[2 + i], out = ys.dims[2 + i];
        int64_t span = (win.kernel[i] - 1) * win.dilation[i] + 1;
        int64_t begin = 0;
        if (win.pads_given && !same) {
            begin = win.pads[i];
        } else if (win.auto_pad != GRAPH_AUTO_PAD_VALID && (same || n_os > 0)) {
            int64_t total = win.stride[i] * (in - 1) + outpad[i] + span - out;
            begin = win.auto_pad == GRAPH_AUTO_PAD_SAME_UPPER ? half_floor(total)
                                                              : total - half_floor(total);
        }
        g->strides[i] = win.stride[i];
        g->dilations[i] = win.dilation[i] - 1;
        g->pads_begin[i] = begin;
        g->pads_end[i] = (in - 1) * win.stride[i] + span - begin - out;
    }
    return RN_OK;
}

static bool deconv_supports(const rn_node *node, const char **why)
{
    if (!cpu_conv_like_supports(node, why))
        return false;
    if (!cpu_static_node(node, why))
        return false;
    rn_partial_shape x = rn_node_input_shape(node, 0), ws = rn_node_input_shape(node, 1);
    int64_t group = rn_node_attr_int_or_default(node, "group");
    if (ws.rank != x.rank || group < 1 || x.dims[1] % group != 0 || ws.dims[0] != x.dims[1]) {
        *why = "weights' shape does not match the input's channels and group";
        return false;
    }
    deconv_geometry g;
    if (deconv_geometry_read(node, &g) != RN_OK) {
        rn_clear_error();
        *why = "window attributes oneDNN cannot take";
        return false;
    }
    for (int i = 0; i < g.n; i++) {
        if (g.pads_begin[i] < 0) {
            *why = "an output_shape beyond the unpadded output (a negative begin pad)";
            return false;
        }
        /* oneDNN takes an end pad above -stride only: an output_padding of
         * the stride or more (which ONNX allows where the dilation is
         * larger) is refused as invalid arguments. */
        if (g.pads_end[i] + g.strides[i] <= 0) {
            *why = "an output_padding of the stride or more (oneDNN needs the end pad above "
                   "-stride)";
            return false;
        }
    }
    return true;
}

/* oneDNN's weights dims: [M, C, k...], grouped [g, M/g, C/g, k...]. */
static int deconv_weights_dims(const rn_node *node, int64_t group, int64_t *dims)
{
    rn_partial_shape ws = rn_node_input_shape(node, 1);
    int64_t c = ws.dims[0], mg = ws.dims[1];
    int r = 0;
    if (group > 1)
        dims[r++] = group;
    dims[r++] = mg;
    dims[r++] = c / group;
    for (int i = 2; i < ws.rank; i++)
        dims[r++] = ws.dims[i];
    return r;
}

static rn_status deconv_desc(const rn_node *node, cpu_weighted *s, dnnl_data_type_t dt,
                             dnnl_primitive_desc_t *pd)
{
    rn_partial_shape xs = rn_node_input_shape(node, 0), ys = rn_node_output_shape(node, 0);
    deconv_geometry g;
    rn_status st = deconv_geometry_read(node, &g);
    if (st != RN_OK)
        return st;
    int64_t wdims[RN_MAX_RANK + 1], bdims[1] = {ys.dims[1]};
    int wrank = deconv_weights_dims(node, g.group, wdims);
    if ((st = cpu_any_md(xs.rank, xs.dims, dt, &s->src)) != RN_OK ||
        (st = cpu_any_md(wrank, wdims, dt, &s->wei)) != RN_OK ||
        (st = cpu_any_md(ys.rank, ys.dims, cpu_dst_type(node, dt), &s->dst)) != RN_OK ||
        (st = cpu_plain_md(RN_F32, 1, bdims, &s->bias)) != RN_OK)
        return st;
    cpu_op dd;
    dnnl_status_t ds = cpu_op_deconv(&dd, dnnl_deconvolution_direct, &s->src, &s->wei,
                                     s->has_bias ? &s->bias : NULL, &s->dst, g.strides, g.dilations,
                                     g.pads_begin, g.pads_end);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the deconvolution", ds);
    return cpu_weighted_pd(node, &dd, false, false, pd);
}

/* The plain ONNX weights [C, M/g, k...] seen as oneDNN's dims: the bytes
 * of [g, C/g, M/g, k...] with the channel axes swapped. */
static rn_status deconv_plain_weights(const rn_node *node, const cpu_weighted *w, cpu_md *plain)
{
    int64_t group = rn_node_attr_int_or_default(node, "group");
    int rank = w->wei.ndims, lead = group > 1 ? 1 : 0;
    int64_t dims[DNNL_MAX_NDIMS];
    for (int i = 0; i < rank; i++)
        dims[i] = w->wei.dims[i];
    /* Stored order: (g,) C/g, M/g, k... */
    dims[lead] = w->wei.dims[lead + 1];
    dims[lead + 1] = w->wei.dims[lead];
    cpu_md stored;
    rn_status st = cpu_plain_md(RN_F32, rank, dims, &stored);
    if (st != RN_OK)
        return st;
    int perm[DNNL_MAX_NDIMS];
    for (int i = 0; i < rank; i++)
        perm[i] = i;
    perm[lead] = lead + 1;
    perm[lead + 1] = lead;
    dnnl_status_t ds = cpu_md_permute_axes(plain, &stored, perm);
    if (ds != dnnl_success)
        return cpu_error(node, "describing the ONNX weights", ds);
    return RN_OK;
}

static rn_status deconv_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    (void)ctx;
    cpu_weighted *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    w->has_bias = rn_node_input_count(node) > 2 && rn_node_input_name(node, 2)[0] != '\0';
    w->sum = -1;
    rn_status st = cpu_weighted_prepare(node, w, deconv_desc);
    cpu_md plain;
    if (st == RN_OK && (st = deconv_plain_weights(node, w, &plain)) == RN_OK)
        cpu_layout_init_plain(&w->wei_l, &w->wei, &plain, &w->wei_layout);
    if (st != RN_OK) {
        cpu_weighted_release(w);
        return st;
    }
    *state = w;
    return RN_OK;
}

CPU_WEIGHTED_KERNEL(cpu_kernel_conv_transpose, "", "ConvTranspose", deconv_supports,
                    deconv_prepare);
