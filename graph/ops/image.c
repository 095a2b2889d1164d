/* Op schemas of the image family (see graph/ops.h): transposed and
 * deformable convolution, the normalisations beyond NN's (instance, group,
 * RMS, mean-variance, Lp), LpPool, Resize / Upsample, GridSample /
 * AffineGrid, RoiAlign / MaxRoiPool, MaxUnpool, NonMaxSuppression,
 * Attention and its relatives (LinearAttention, FlexAttention of
 * ai.onnx.preview, CausalConvWithState), RotaryEmbedding, Swish, the two
 * losses and the optimizers of ai.onnx.preview.training (Adagrad, Adam,
 * Momentum).
 *
 * Every infer function works on partial shapes: a dim or a rank it cannot
 * know yet stays RN_DIM_DYNAMIC / -1, and only known facts are checked. */
#include <math.h>
#include <string.h>

#include "graph/ops.h"
#include "graph/ops/attr_parse.h"

/* ---- small helpers ---- */

static bool img_is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* Input i, when present and of known type, must be a float type. */
static rn_status img_want_float(const graph_node *node, const graph_port *in, int n_in, int i)
{
    if (i < n_in && in[i].present && in[i].type != RN_UNDEFINED && !img_is_float(in[i].type))
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): input %d has type %s, not a float type", node->name,
                            node->op_type, i, rn_element_type_name(in[i].type));
    return RN_OK;
}

/* Input i, when present and of known type, must be i32 or i64 (or only i64). */
static rn_status img_want_index(const graph_node *node, const graph_port *in, int n_in, int i,
                                bool i32_too)
{
    if (i < n_in && in[i].present && in[i].type != RN_UNDEFINED && in[i].type != RN_I64 &&
        !(i32_too && in[i].type == RN_I32))
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input %d has type %s, not %s",
                            node->name, node->op_type, i, rn_element_type_name(in[i].type),
                            i32_too ? "i32 or i64" : "i64");
    return RN_OK;
}

/* Inputs i and j, when present and known, must have the same type. */
static rn_status img_same_type(const graph_node *node, const graph_port *in, int n_in, int i, int j)
{
    if (i < n_in && j < n_in && in[i].present && in[j].present && in[i].type != RN_UNDEFINED &&
        in[j].type != RN_UNDEFINED && in[i].type != in[j].type)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input %d is %s but input %d is %s",
                            node->name, node->op_type, i, rn_element_type_name(in[i].type), j,
                            rn_element_type_name(in[j].type));
    return RN_OK;
}

static rn_status img_rank_range(const graph_node *node, const graph_port *p, int i, int lo, int hi)
{
    if (p->present && p->shape.rank >= 0 && (p->shape.rank < lo || p->shape.rank > hi))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input %d has rank %d; expected %d to %d", node->name,
                            node->op_type, i, p->shape.rank, lo, hi);
    return RN_OK;
}

/* Two dims that must agree when both are known. */
static rn_status img_dims_agree(const graph_node *node, const char *what, int64_t a, int64_t b)
{
    if (a >= 0 && b >= 0 && a != b)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): %s: %lld vs %lld", node->name,
                            node->op_type, what, (long long)a, (long long)b);
    return RN_OK;
}

/* Dim d of port p, or RN_DIM_DYNAMIC when the rank is unknown or too small. */
static int64_t img_dim(const graph_port *p, int d)
{
    return p->present && p->shape.rank > d ? p->shape.dims[d] : RN_DIM_DYNAMIC;
}

/* Output o (when present) gets `type` and `shape`. */
static void img_set_out(graph_port *out, int n_out, int o, rn_element_type type,
                        const graph_shape *shape)
{
    if (o < n_out && out[o].present) {
        out[o].type = type;
        out[o].shape = *shape;
    }
}

/* Element count of a port's static shape, or -1. */
static int64_t img_count(const graph_port *p)
{
    return p->present ? graph_shape_count(&p->shape) : -1;
}

/* ---- ops whose output is shaped and typed like input 0 ---- */

/* InstanceNormalization, GroupNormalization, RMSNormalization,
 * MeanVarianceNormalization, LpNormalization, Swish. */
static rn_status infer_float_like_x(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st != RN_OK)
        return st;
    const char *op = node->op_type;
    bool channel_params =
        strcmp(op, "InstanceNormalization") == 0 || strcmp(op, "GroupNormalization") == 0;
    if (channel_params) {
        /* X is N x C x D1...; scale and bias are 1-D (C, or num_groups for
         * GroupNormalization-18). */
        if ((st = img_rank_range(node, &in[0], 0, 2, RN_MAX_RANK)) != RN_OK)
            return st;
        int64_t want = img_dim(&in[0], 1);
        if (strcmp(op, "GroupNormalization") == 0) {
            int64_t groups = graph_node_attr_int(node, "num_groups", 0);
            if (groups < 1)
                return rn_set_error(RN_INVALID_ARG,
                                    "node '%s' (%s): num_groups is %lld; must be >= 1", node->name,
                                    op, (long long)groups);
            if (want >= 0 && want % groups != 0)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): %lld channels are not a multiple of "
                                    "num_groups %lld",
                                    node->name, op, (long long)want, (long long)groups);
            if (node->opset < 21)
                want = groups;
        }
        for (int i = 1; i < n_in && i < 3; i++) {
            if ((st = img_same_type(node, in, n_in, 0, i)) != RN_OK ||
                (st = img_rank_range(node, &in[i], i, 1, 1)) != RN_OK ||
                (st = img_dims_agree(node, "scale / bias length", img_dim(&in[i], 0), want)) !=
                    RN_OK)
                return st;
        }
    } else if (strcmp(op, "RMSNormalization") == 0) {
        if ((st = img_want_float(node, in, n_in, 1)) != RN_OK)
            return st;
        int r = in[0].shape.rank;
        if (r >= 0) {
            int axis;
            if (r == 0)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): input X is a scalar; rank >= 1 needed",
                                    node->name, op);
            if ((st = graph_normalize_axis(node, graph_node_attr_int(node, "axis", -1), r,
                                           &axis)) != RN_OK)
                return st;
        }
    } else if (strcmp(op, "LpNormalization") == 0) {
        int64_t p = graph_node_attr_int(node, "p", 2);
        if (p != 1 && p != 2)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): p is %lld; must be 1 or 2",
                                node->name, op, (long long)p);
        int r = in[0].shape.rank, axis;
        if (r >= 1 && (st = graph_normalize_axis(node, graph_node_attr_int(node, "axis", -1), r,
                                                 &axis)) != RN_OK)
            return st;
    }
    img_set_out(out, n_out, 0, in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- ConvTranspose ---- */

/* Output size per spatial dim: output_shape when given (its last n values);
 * with SAME_* the input times the stride; else
 * stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads. */
static rn_status infer_convtranspose(const graph_node *node, const graph_port *in, int n_in,
                                     graph_port *out, int n_out)
{
    const graph_port *x = &in[0], *w = &in[1];
    const graph_port *b = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 1);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 2);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, 3, RN_MAX_RANK);
    if (st == RN_OK)
        st = img_rank_range(node, w, 1, 3, RN_MAX_RANK);
    if (st != RN_OK)
        return st;
    int rank = x->shape.rank >= 0 ? x->shape.rank : w->shape.rank;
    rn_element_type type = x->type != RN_UNDEFINED ? x->type : w->type;
    if (x->shape.rank >= 0 && w->shape.rank >= 0 && x->shape.rank != w->shape.rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input X has rank %d but weight W has %d", node->name,
                            node->op_type, x->shape.rank, w->shape.rank);
    int64_t group = graph_node_attr_int(node, "group", 1);
    if (group < 1)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): group is %lld; must be >= 1",
                            node->name, node->op_type, (long long)group);
    if (rank < 0) {
        graph_port_unknown(&out[0], type);
        return RN_OK;
    }
    int64_t c = img_dim(x, 1), wc = img_dim(w, 0), mg = img_dim(w, 1);
    int64_t m = mg >= 0 ? mg * group : RN_DIM_DYNAMIC;
    if ((st = img_dims_agree(node, "input X channels vs weight W dim 0", c, wc)) != RN_OK)
        return st;
    if (c >= 0 && c % group != 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input X has %lld channels, not a multiple of group "
                            "%lld",
                            node->name, node->op_type, (long long)c, (long long)group);
    if (b != NULL && ((st = img_rank_range(node, b, 2, 1, 1)) != RN_OK ||
                      (st = img_dims_agree(node, "bias B length vs output channels", img_dim(b, 0),
                                           m)) != RN_OK))
        return st;
    int n = rank - 2;
    int64_t wk[RN_MAX_RANK];
    for (int i = 0; i < n; i++)
        wk[i] = img_dim(w, 2 + i);
    graph_window win;
    if ((st = graph_window_read(node, n, wk, false, &win)) != RN_OK)
        return st;
    int64_t outpad[RN_MAX_RANK];
    if ((st = graph_window_ints(node, "output_padding", n, 0, 0, outpad)) != RN_OK)
        return st;
    const int64_t *os;
    int n_os = graph_node_attr_ints(node, "output_shape", &os);
    if (n_os >= 0 && n_os != n && n_os != rank)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): output_shape has %d values for %d spatial dims",
                            node->name, node->op_type, n_os, n);
    graph_shape y = {.rank = rank};
    y.dims[0] = img_dim(x, 0);
    y.dims[1] = m;
    for (int i = 0; i < n; i++) {
        int64_t d = img_dim(x, 2 + i), o = RN_DIM_DYNAMIC;
        if (n_os > 0) {
            o = os[n_os - n + i];
            if (o < 1)
                return rn_set_error(RN_INVALID_ARG,
                                    "node '%s' (%s): output_shape[%d] is %lld; must be >= 1",
                                    node->name, node->op_type, n_os - n + i, (long long)o);
        } else if (win.auto_pad == GRAPH_AUTO_PAD_SAME_UPPER ||
                   win.auto_pad == GRAPH_AUTO_PAD_SAME_LOWER) {
            o = d >= 0 ? d * win.stride[i] : RN_DIM_DYNAMIC;
        } else if (d >= 0 && win.kernel_known) {
            int64_t pads = win.auto_pad == GRAPH_AUTO_PAD_VALID ? 0 : win.pads[i] + win.pads[n + i];
            o = win.stride[i] * (d - 1) + outpad[i] + (win.kernel[i] - 1) * win.dilation[i] + 1 -
                pads;
        }
        if (o != RN_DIM_DYNAMIC && o < 1)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): output spatial dim %d would be %lld", node->name,
                                node->op_type, i, (long long)o);
        y.dims[2 + i] = o;
    }
    img_set_out(out, n_out, 0, type, &y);
    return RN_OK;
}

/* ---- DeformConv ---- */

static rn_status infer_deform_conv(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    const graph_port *x = &in[0], *w = &in[1];
    rn_status st = img_want_float(node, in, n_in, 0);
    for (int i = 1; st == RN_OK && i < n_in && i < 5; i++)
        st = img_same_type(node, in, n_in, 0, i);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, 3, 5);
    if (st == RN_OK)
        st = img_rank_range(node, w, 1, 3, 5);
    if (st != RN_OK)
        return st;
    int64_t group = graph_node_attr_int(node, "group", 1);
    int64_t offset_group = graph_node_attr_int(node, "offset_group", 1);
    if (group < 1 || offset_group < 1)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): group %lld and offset_group %lld must be >= 1",
                            node->name, node->op_type, (long long)group, (long long)offset_group);
    int rank = x->shape.rank >= 0 ? x->shape.rank : w->shape.rank;
    if (rank < 0) {
        graph_port_unknown(&out[0], x->type);
        return RN_OK;
    }
    int64_t c = img_dim(x, 1), cg = img_dim(w, 1);
    if (c >= 0 && cg >= 0 && c != cg * group)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input X has %lld channels but weight W expects %lld "
                            "x group %lld",
                            node->name, node->op_type, (long long)c, (long long)cg,
                            (long long)group);
    int n = rank - 2;
    int64_t wk[RN_MAX_RANK];
    for (int i = 0; i < n; i++)
        wk[i] = img_dim(w, 2 + i);
    graph_window win;
    if ((st = graph_window_read(node, n, wk, false, &win)) != RN_OK)
        return st;
    win.ceil_mode = false; /* not a DeformConv attribute */
    graph_shape y = {.rank = rank};
    y.dims[0] = img_dim(x, 0);
    y.dims[1] = img_dim(w, 0);
    for (int i = 0; i < n; i++)
        if ((st = graph_window_out(node, &win, i, img_dim(x, 2 + i), &y.dims[2 + i])) != RN_OK)
            return st;
    img_set_out(out, n_out, 0, x->type, &y);
    return RN_OK;
}

/* ---- LpPool ---- */

static rn_status infer_lp_pool(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    const graph_port *x = &in[0];
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, 3, RN_MAX_RANK);
    if (st != RN_OK)
        return st;
    if (x->shape.rank < 0) {
        graph_port_unknown(&out[0], x->type);
        return RN_OK;
    }
    int n = x->shape.rank - 2;
    graph_window win;
    if ((st = graph_window_read(node, n, NULL, true, &win)) != RN_OK)
        return st;
    graph_shape y = x->shape;
    for (int i = 0; i < n; i++)
        if ((st = graph_window_out(node, &win, i, x->shape.dims[2 + i], &y.dims[2 + i])) != RN_OK)
            return st;
    img_set_out(out, n_out, 0, x->type, &y);
    return RN_OK;
}

/* ---- MaxUnpool ---- */

/* Output: the output_shape input when given, else per spatial dim
 * (in - 1) * stride + kernel - pads. */
static rn_status infer_max_unpool(const graph_node *node, const graph_port *in, int n_in,
                                  graph_port *out, int n_out)
{
    const graph_port *x = &in[0], *idx = &in[1];
    const graph_port *os = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_want_index(node, in, n_in, 1, false);
    if (st == RN_OK)
        st = img_want_index(node, in, n_in, 2, false);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, 3, RN_MAX_RANK);
    if (st != RN_OK)
        return st;
    if (x->shape.rank >= 0 && idx->shape.rank >= 0) {
        bool same = x->shape.rank == idx->shape.rank;
        for (int d = 0; same && d < x->shape.rank; d++)
            same = x->shape.dims[d] < 0 || idx->shape.dims[d] < 0 ||
                   x->shape.dims[d] == idx->shape.dims[d];
        if (!same)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): indices I must have the shape of X", node->name,
                                node->op_type);
    }
    int rank = x->shape.rank;
    if (rank < 0) {
        graph_port_unknown(&out[0], x->type);
        return RN_OK;
    }
    int n = rank - 2;
    graph_window win;
    if ((st = graph_window_read(node, n, NULL, true, &win)) != RN_OK)
        return st;
    graph_shape y = {.rank = rank};
    if (os != NULL) {
        int64_t count = img_count(os);
        if (os->shape.rank >= 0 && (os->shape.rank != 1 || (count >= 0 && count != rank)))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): output_shape must hold %d values", node->name,
                                node->op_type, rank);
        for (int d = 0; d < rank; d++) {
            y.dims[d] = os->data != NULL ? graph_port_int(os, (size_t)d) : RN_DIM_DYNAMIC;
            if (os->data != NULL && y.dims[d] < 0)
                return rn_set_error(RN_INVALID_ARG,
                                    "node '%s' (%s): output_shape[%d] is %lld (negative)",
                                    node->name, node->op_type, d, (long long)y.dims[d]);
        }
    } else {
        y.dims[0] = x->shape.dims[0];
        y.dims[1] = x->shape.dims[1];
        for (int i = 0; i < n; i++) {
            int64_t d = x->shape.dims[2 + i];
            y.dims[2 + i] =
                d < 0 ? RN_DIM_DYNAMIC
                      : (d - 1) * win.stride[i] + win.kernel[i] - win.pads[i] - win.pads[n + i];
            if (d >= 0 && y.dims[2 + i] < 0)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): output spatial dim %d would be negative",
                                    node->name, node->op_type, i);
        }
    }
    img_set_out(out, n_out, 0, x->type, &y);
    return RN_OK;
}

/* ---- Resize / Upsample ---- */

/* floor(v) as the output size of resized axis i over input size d (dynamic
 * while d is); a size beyond 2^53 is an error rather than an overflow. */
static rn_status img_scaled_dim(const graph_node *node, int i, double v, int64_t d, int64_t *out)
{
    if (d < 0) {
        *out = RN_DIM_DYNAMIC;
        return RN_OK;
    }
    if (!(v >= 0.0 && v < 9007199254740992.0))
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): resized axis %d would have %g elements", node->name,
                            node->op_type, i, v);
    *out = (int64_t)floor(v);
    return RN_OK;
}

rn_status graph_resize_axes(const graph_node *node, int rank, int *axes, int *n_axes)
{
    *n_axes = rank;
    for (int d = 0; d < rank; d++)
        axes[d] = d;
    const int64_t *ax;
    int n = node->opset >= 18 ? graph_node_attr_ints(node, "axes", &ax) : -1;
    if (n < 0)
        return RN_OK;
    if (n > rank)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): %d axes for rank %d", node->name,
                            node->op_type, n, rank);
    bool seen[RN_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        rn_status st = graph_normalize_axis(node, ax[i], rank, &axes[i]);
        if (st != RN_OK)
            return st;
        if (seen[axes[i]])
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): axis %lld is repeated", node->name,
                                node->op_type, (long long)ax[i]);
        seen[axes[i]] = true;
    }
    *n_axes = n;
    return RN_OK;
}

/* Reads the scales (input `si`, or the Upsample-7 attribute when si < 0)
 * and sizes (input `zi`, -1 when the op has none) and fills y from x. An
 * empty input counts as absent; exactly one of the two must be given. */
static rn_status infer_resize_like(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out, int si, int zi)
{
    const graph_port *x = &in[0];
    rn_status st = RN_OK;
    if (x->type == RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input X is a string tensor",
                            node->name, node->op_type);
    if ((si >= 0 && (st = img_want_float(node, in, n_in, si)) != RN_OK) ||
        (zi >= 0 && (st = img_want_index(node, in, n_in, zi, false)) != RN_OK))
        return st;
    /* Element counts: 0 absent or empty, -1 not known yet. */
    const graph_port *sc = si >= 0 && si < n_in && in[si].present ? &in[si] : NULL;
    const graph_port *sz = zi >= 0 && zi < n_in && in[zi].present ? &in[zi] : NULL;
    int64_t n_sc = sc != NULL ? img_count(sc) : 0, n_sz = sz != NULL ? img_count(sz) : 0;
    const float *attr_scales = NULL;
    if (si < 0)
        n_sc = graph_node_attr_floats(node, "scales", &attr_scales);
    if (n_sc > 0 && n_sz > 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): only one of scales and sizes may be given", node->name,
                            node->op_type);
    if (n_sc == 0 && n_sz == 0)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): one of scales and sizes must be given",
                            node->name, node->op_type);
    int r = x->shape.rank;
    if (r < 0) {
        graph_port_unknown(&out[0], x->type);
        return RN_OK;
    }
    /* axes (opset 18): the scales / sizes apply to these dims only. */
    int axes[RN_MAX_RANK], n_axes;
    if ((st = graph_resize_axes(node, r, axes, &n_axes)) != RN_OK)
        return st;
    graph_shape y = x->shape;
    bool use_sizes = n_sz != 0;
    int64_t count = use_sizes ? n_sz : n_sc;
    if (count >= 0 && count != n_axes)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): %s has %lld values; expected %d",
                            node->name, node->op_type, use_sizes ? "sizes" : "scales",
                            (long long)count, n_axes);
    bool known = count >= 0 && (use_sizes ? sz->data != NULL : si < 0 || sc->data != NULL);
    if (!known) {
        for (int i = 0; i < n_axes; i++)
            y.dims[axes[i]] = RN_DIM_DYNAMIC;
        img_set_out(out, n_out, 0, x->type, &y);
        return RN_OK;
    }
    if (use_sizes) {
        const char *policy =
            node->opset >= 18 ? graph_node_attr_string(node, "keep_aspect_ratio_policy", "stretch")
                              : "stretch";
        bool not_larger = strcmp(policy, "not_larger") == 0;
        bool not_smaller = strcmp(policy, "not_smaller") == 0;
        if (!not_larger && !not_smaller && strcmp(policy, "stretch") != 0)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): keep_aspect_ratio_policy '%s' is not stretch, "
                                "not_larger or not_smaller",
                                node->name, node->op_type, policy);
        double scale = not_larger ? INFINITY : 0.0;
        for (int i = 0; i < n_axes; i++) {
            int64_t s = graph_port_int(sz, (size_t)i), d = x->shape.dims[axes[i]];
            if (s < 0)
                return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): sizes[%d] is %lld", node->name,
                                    node->op_type, i, (long long)s);
            y.dims[axes[i]] = s;
            if ((not_larger || not_smaller) && d >= 0) {
                double f = d > 0 ? (double)s / (double)d : 0.0;
                scale = not_larger ? fmin(scale, f) : fmax(scale, f);
            }
        }
        for (int i = 0; (not_larger || not_smaller) && i < n_axes; i++) {
            int64_t d = x->shape.dims[axes[i]];
            if ((st = img_scaled_dim(node, i, scale * (double)d + 0.5, d, &y.dims[axes[i]])) !=
                RN_OK)
                return st;
        }
    } else {
        for (int i = 0; i < n_axes; i++) {
            double s = sc != NULL ? graph_port_double(sc, (size_t)i) : (double)attr_scales[i];
            if (!(s > 0.0) || !isfinite(s))
                return rn_set_error(RN_INVALID_ARG,
                                    "node '%s' (%s): scales[%d] is %g; must be positive",
                                    node->name, node->op_type, i, s);
            int64_t d = x->shape.dims[axes[i]];
            if ((st = img_scaled_dim(node, i, s * (double)d, d, &y.dims[axes[i]])) != RN_OK)
                return st;
        }
    }
    img_set_out(out, n_out, 0, x->type, &y);
    return RN_OK;
}

static rn_status infer_resize(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    if (node->opset < 11)
        return infer_resize_like(node, in, n_in, out, n_out, 1, -1);
    rn_status st = img_want_float(node, in, n_in, 1);
    if (st != RN_OK)
        return st;
    return infer_resize_like(node, in, n_in, out, n_out, 2, 3);
}

static rn_status infer_upsample(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    if (node->opset < 9) {
        if (n_in != 1)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): Upsample-%d takes its scales as an attribute "
                                "and one input",
                                node->name, node->op_type, node->opset);
        const float *s;
        if (graph_node_attr_floats(node, "scales", &s) < 0)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): attribute scales is required",
                                node->name, node->op_type);
        return infer_resize_like(node, in, n_in, out, n_out, -1, -1);
    }
    if (n_in < 2)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): input scales is required", node->name,
                            node->op_type);
    return infer_resize_like(node, in, n_in, out, n_out, 1, -1);
}

/* ---- GridSample / AffineGrid ---- */

static rn_status infer_grid_sample(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    const graph_port *x = &in[0], *grid = &in[1];
    rn_status st = img_want_float(node, in, n_in, 1);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, node->opset >= 20 ? 3 : 4, node->opset >= 20 ? 5 : 4);
    if (st == RN_OK)
        st = img_rank_range(node, grid, 1, node->opset >= 20 ? 3 : 4, node->opset >= 20 ? 5 : 4);
    if (st != RN_OK)
        return st;
    int rank = x->shape.rank >= 0 ? x->shape.rank : grid->shape.rank;
    if (x->shape.rank >= 0 && grid->shape.rank >= 0 && x->shape.rank != grid->shape.rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input X has rank %d but grid has %d", node->name,
                            node->op_type, x->shape.rank, grid->shape.rank);
    if (rank < 0) {
        graph_port_unknown(&out[0], x->type);
        return RN_OK;
    }
    if ((st = img_dims_agree(node, "grid's last dim vs spatial rank", img_dim(grid, rank - 1),
                             rank - 2)) != RN_OK ||
        (st = img_dims_agree(node, "batch of X vs grid", img_dim(x, 0), img_dim(grid, 0))) != RN_OK)
        return st;
    graph_shape y = {.rank = rank};
    y.dims[0] = img_dim(x, 0) >= 0 ? img_dim(x, 0) : img_dim(grid, 0);
    y.dims[1] = img_dim(x, 1);
    for (int d = 2; d < rank; d++)
        y.dims[d] = img_dim(grid, d - 1);
    img_set_out(out, n_out, 0, x->type, &y);
    return RN_OK;
}

/* theta is N x 2 x 3 (2-D) or N x 3 x 4 (3-D); size is (N, C, H, W) or
 * (N, C, D, H, W); the grid is N x H x W x 2 or N x D x H x W x 3. */
static rn_status infer_affine_grid(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    const graph_port *theta = &in[0], *size = &in[1];
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_want_index(node, in, n_in, 1, false);
    if (st == RN_OK)
        st = img_rank_range(node, theta, 0, 3, 3);
    if (st == RN_OK)
        st = img_rank_range(node, size, 1, 1, 1);
    if (st != RN_OK)
        return st;
    int64_t count = img_count(size);
    if (count >= 0 && count != 4 && count != 5)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): size has %lld values; expected 4 or 5", node->name,
                            node->op_type, (long long)count);
    int64_t nd = count >= 0 ? count - 2 : img_dim(theta, 1);
    if (nd >= 0 && nd != 2 && nd != 3)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): theta must be N x 2 x 3 or N x 3 x 4", node->name,
                            node->op_type);
    if (nd >= 0 && ((st = img_dims_agree(node, "theta dim 1", img_dim(theta, 1), nd)) != RN_OK ||
                    (st = img_dims_agree(node, "theta dim 2", img_dim(theta, 2), nd + 1)) != RN_OK))
        return st;
    if (nd < 0) {
        graph_port_unknown(&out[0], theta->type);
        return RN_OK;
    }
    graph_shape y = {.rank = (int)nd + 2};
    y.dims[0] = img_dim(theta, 0);
    for (int d = 0; d < nd; d++) {
        y.dims[1 + d] = size->data != NULL ? graph_port_int(size, (size_t)(2 + d)) : RN_DIM_DYNAMIC;
        if (size->data != NULL && y.dims[1 + d] < 0)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): size[%d] is negative", node->name,
                                node->op_type, 2 + d);
    }
    if (size->data != NULL && (st = img_dims_agree(node, "size[0] vs theta's batch",
                                                   graph_port_int(size, 0), y.dims[0])) != RN_OK)
        return st;
    if (y.dims[0] < 0 && size->data != NULL)
        y.dims[0] = graph_port_int(size, 0);
    y.dims[nd + 1] = nd;
    img_set_out(out, n_out, 0, theta->type, &y);
    return RN_OK;
}

/* ---- RoiAlign / MaxRoiPool ---- */

static rn_status infer_roi(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    const graph_port *x = &in[0], *rois = &in[1];
    bool align = strcmp(node->op_type, "RoiAlign") == 0;
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 1);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, 4, 4);
    if (st == RN_OK)
        st = img_rank_range(node, rois, 1, 2, 2);
    if (st == RN_OK)
        st = img_dims_agree(node, "rois dim 1", img_dim(rois, 1), align ? 4 : 5);
    if (st == RN_OK && align)
        st = img_want_index(node, in, n_in, 2, false);
    if (st == RN_OK && align)
        st = img_rank_range(node, &in[2], 2, 1, 1);
    if (st == RN_OK && align)
        st = img_dims_agree(node, "number of rois vs batch_indices", img_dim(rois, 0),
                            img_dim(&in[2], 0));
    if (st != RN_OK)
        return st;
    int64_t oh, ow;
    if (align) {
        oh = graph_node_attr_int(node, "output_height", 1);
        ow = graph_node_attr_int(node, "output_width", 1);
        const char *mode = graph_node_attr_string(node, "mode", "avg");
        if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): mode '%s' is not avg or max",
                                node->name, node->op_type, mode);
    } else {
        const int64_t *ps;
        if (graph_node_attr_ints(node, "pooled_shape", &ps) != 2)
            return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): pooled_shape must hold 2 values",
                                node->name, node->op_type);
        oh = ps[0];
        ow = ps[1];
    }
    if (oh < 1 || ow < 1)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): output size %lld x %lld", node->name,
                            node->op_type, (long long)oh, (long long)ow);
    graph_shape y = {.rank = 4, .dims = {img_dim(rois, 0), img_dim(x, 1), oh, ow}};
    if (y.dims[0] < 0 && align)
        y.dims[0] = img_dim(&in[2], 0);
    img_set_out(out, n_out, 0, x->type, &y);
    return RN_OK;
}

/* ---- NonMaxSuppression ---- */

/* The number of selected boxes depends on the values: rows stay dynamic and
 * the kernel allocates its output. */
static rn_status infer_nms(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 1);
    if (st == RN_OK)
        st = img_rank_range(node, &in[0], 0, 3, 3);
    if (st == RN_OK)
        st = img_rank_range(node, &in[1], 1, 3, 3);
    if (st == RN_OK)
        st = img_dims_agree(node, "boxes dim 2", img_dim(&in[0], 2), 4);
    if (st == RN_OK)
        st = img_dims_agree(node, "batches of boxes vs scores", img_dim(&in[0], 0),
                            img_dim(&in[1], 0));
    if (st == RN_OK)
        st = img_dims_agree(node, "boxes of boxes vs scores", img_dim(&in[0], 1),
                            img_dim(&in[1], 2));
    if (st == RN_OK)
        st = img_want_index(node, in, n_in, 2, false);
    if (st == RN_OK)
        st = img_want_float(node, in, n_in, 3);
    if (st == RN_OK)
        st = img_want_float(node, in, n_in, 4);
    if (st != RN_OK)
        return st;
    int64_t cpb = graph_node_attr_int(node, "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): center_point_box is %lld; expected "
                            "0 or 1",
                            node->name, node->op_type, (long long)cpb);
    graph_shape y = {.rank = 2, .dims = {RN_DIM_DYNAMIC, 3}};
    img_set_out(out, n_out, 0, RN_I64, &y);
    return RN_OK;
}

/* ---- Attention ---- */

/* Q, K, V are 4-D (batch, heads, sequence, head size) or 3-D (batch,
 * sequence, heads * head size, with q_num_heads / kv_num_heads). */
static rn_status infer_attention(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    const graph_port *q = &in[0], *k = &in[1], *v = &in[2];
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && i < 3; i++)
        st = img_want_float(node, in, n_in, i);
    for (int i = 0; st == RN_OK && i < 3; i++)
        st = img_rank_range(node, &in[i], i, 3, 4);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 1, 4);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 2, 5);
    if (st == RN_OK && n_in > 4)
        st = img_rank_range(node, &in[4], 4, 4, 4);
    if (st == RN_OK && n_in > 6)
        st = img_want_index(node, in, n_in, 6, false);
    if (st != RN_OK)
        return st;
    int rank = q->shape.rank;
    if (rank < 0 || k->shape.rank < 0 || v->shape.rank < 0) {
        for (int o = 0; o < n_out; o++)
            if (out[o].present)
                graph_port_unknown(&out[o], o == 1 ? k->type : o == 2 ? v->type : q->type);
        return RN_OK;
    }
    if (k->shape.rank != rank || v->shape.rank != rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): Q, K and V have ranks %d, %d and %d; expected equal",
                            node->name, node->op_type, rank, k->shape.rank, v->shape.rank);
    int64_t qh = graph_node_attr_int(node, "q_num_heads", 0);
    int64_t kvh = graph_node_attr_int(node, "kv_num_heads", 0);
    int64_t batch = q->shape.dims[0], sq = 0, skv = 0, dk = 0, dv = 0;
    if (rank == 4) {
        if (qh == 0)
            qh = q->shape.dims[1];
        if (kvh == 0)
            kvh = k->shape.dims[1];
        sq = q->shape.dims[2];
        skv = k->shape.dims[2];
        dk = k->shape.dims[3];
        dv = v->shape.dims[3];
        if ((st = img_dims_agree(node, "head size of Q vs K", q->shape.dims[3], dk)) != RN_OK ||
            (st = img_dims_agree(node, "heads of K vs V", k->shape.dims[1], v->shape.dims[1])) !=
                RN_OK)
            return st;
    } else {
        if (qh < 1 || kvh < 1)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): 3-D inputs need q_num_heads and kv_num_heads",
                                node->name, node->op_type);
        sq = q->shape.dims[1];
        skv = k->shape.dims[1];
        int64_t hq = q->shape.dims[2], hk = k->shape.dims[2], hv = v->shape.dims[2];
        if ((hq >= 0 && hq % qh != 0) || (hk >= 0 && hk % kvh != 0) || (hv >= 0 && hv % kvh != 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): hidden sizes %lld / %lld / %lld do not divide "
                                "by the head counts %lld / %lld",
                                node->name, node->op_type, (long long)hq, (long long)hk,
                                (long long)hv, (long long)qh, (long long)kvh);
        dk = hk >= 0 ? hk / kvh : RN_DIM_DYNAMIC;
        dv = hv >= 0 ? hv / kvh : RN_DIM_DYNAMIC;
        if (hq >= 0 && dk >= 0 && hq / qh != dk)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): head size of Q (%lld) differs from K's (%lld)",
                                node->name, node->op_type, (long long)(hq / qh), (long long)dk);
    }
    if (qh >= 0 && kvh >= 1 && qh % kvh != 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): q_num_heads %lld is not a multiple of kv_num_heads "
                            "%lld",
                            node->name, node->op_type, (long long)qh, (long long)kvh);
    if ((st = img_dims_agree(node, "sequence of K vs V", skv,
                             rank == 4 ? v->shape.dims[2] : v->shape.dims[1])) != RN_OK)
        return st;
    int64_t past = 0;
    if (n_in > 4 && in[4].present) {
        const graph_port *pk = &in[4];
        if (n_in <= 5 || !in[5].present)
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): past_key and past_value come together", node->name,
                                node->op_type);
        if ((st = img_rank_range(node, &in[5], 5, 4, 4)) != RN_OK)
            return st;
        past = img_dim(pk, 2);
        if ((st = img_dims_agree(node, "past_key heads", img_dim(pk, 1), kvh)) != RN_OK ||
            (st = img_dims_agree(node, "past_key head size", img_dim(pk, 3), dk)) != RN_OK ||
            (st = img_dims_agree(node, "past_value head size", img_dim(&in[5], 3), dv)) != RN_OK ||
            (st = img_dims_agree(node, "past_key vs past_value length", past,
                                 img_dim(&in[5], 2))) != RN_OK)
            return st;
    }
    int64_t total = past >= 0 && skv >= 0 ? past + skv : RN_DIM_DYNAMIC;
    int64_t hdv = dv >= 0 && qh >= 0 ? dv * qh : RN_DIM_DYNAMIC;
    graph_shape y = rank == 4 ? (graph_shape){.rank = 4, .dims = {batch, qh, sq, dv}}
                              : (graph_shape){.rank = 3, .dims = {batch, sq, hdv}};
    graph_shape pk = {.rank = 4, .dims = {batch, kvh, total, dk}};
    graph_shape pv = {.rank = 4, .dims = {batch, kvh, total, dv}};
    graph_shape qk = {.rank = 4, .dims = {batch, qh, sq, total}};
    img_set_out(out, n_out, 0, q->type, &y);
    img_set_out(out, n_out, 1, k->type, &pk);
    img_set_out(out, n_out, 2, v->type, &pv);
    img_set_out(out, n_out, 3, q->type, &qk);
    return RN_OK;
}

/* ---- LinearAttention ---- */

/* query (B, T, Hq * dk), key (B, T, Hkv * dk), value (B, T, Hkv * dv);
 * output (B, T, Hq * dv), present_state (B, Hkv, dk, dv). decay is required
 * by the gated update rules and forbidden otherwise, beta likewise by the
 * delta rules. */
static rn_status infer_linear_attention(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && i < n_in && i < 6; i++)
        st = img_want_float(node, in, n_in, i);
    for (int i = 0; st == RN_OK && i < 3; i++)
        st = img_rank_range(node, &in[i], i, 3, 3);
    if (st == RN_OK && n_in > 3)
        st = img_rank_range(node, &in[3], 3, 4, 4);
    for (int i = 4; st == RN_OK && i < n_in && i < 6; i++)
        st = img_rank_range(node, &in[i], i, 3, 3);
    if (st != RN_OK)
        return st;
    int64_t qh = graph_node_attr_int(node, "q_num_heads", 0);
    int64_t kvh = graph_node_attr_int(node, "kv_num_heads", 0);
    if (qh < 1 || kvh < 1 || qh % kvh != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): q_num_heads %lld must be a positive multiple of "
                            "kv_num_heads %lld",
                            node->name, node->op_type, (long long)qh, (long long)kvh);
    const char *rule = graph_node_attr_string(node, "update_rule", "gated_delta");
    bool gated = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
    bool delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
    if (!gated && !delta && strcmp(rule, "linear") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): update_rule '%s' is not linear, gated, delta or "
                            "gated_delta",
                            node->name, node->op_type, rule);
    bool has_decay = n_in > 4 && in[4].present, has_beta = n_in > 5 && in[5].present;
    if (gated != has_decay || delta != has_beta)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): update_rule '%s' %s decay and %s beta",
                            node->name, node->op_type, rule, gated ? "needs" : "forbids",
                            delta ? "needs" : "forbids");
    int64_t hq = img_dim(&in[0], 2), hk = img_dim(&in[1], 2), hv = img_dim(&in[2], 2);
    if ((hq >= 0 && hq % qh != 0) || (hk >= 0 && hk % kvh != 0) || (hv >= 0 && hv % kvh != 0))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): hidden sizes do not split into the heads", node->name,
                            node->op_type);
    int64_t dk = hq >= 0 ? hq / qh : RN_DIM_DYNAMIC, dv = hv >= 0 ? hv / kvh : RN_DIM_DYNAMIC;
    if ((st = img_dims_agree(node, "head size of query vs key", dk,
                             hk >= 0 ? hk / kvh : RN_DIM_DYNAMIC)) != RN_OK)
        return st;
    int64_t batch = img_dim(&in[0], 0);
    graph_shape y = {.rank = 3,
                     .dims = {batch, img_dim(&in[0], 1), dv >= 0 ? qh * dv : RN_DIM_DYNAMIC}};
    graph_shape state = {.rank = 4, .dims = {batch, kvh, dk, dv}};
    img_set_out(out, n_out, 0, in[0].type, &y);
    img_set_out(out, n_out, 1, n_in > 3 && in[3].present ? in[3].type : in[0].type, &state);
    return RN_OK;
}

/* ---- CausalConvWithState ---- */

/* input (B, C, L), weight (C, 1, k): output (B, C, L), present_state
 * (B, C, k - 1). */
static rn_status infer_causal_conv(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    rn_status st = img_want_float(node, in, n_in, 0);
    for (int i = 1; st == RN_OK && i < n_in && i < 4; i++)
        st = img_same_type(node, in, n_in, 0, i);
    if (st == RN_OK)
        st = img_rank_range(node, &in[0], 0, 3, 3);
    if (st == RN_OK)
        st = img_rank_range(node, &in[1], 1, 3, 3);
    if (st == RN_OK)
        st = img_dims_agree(node, "weight dim 1", img_dim(&in[1], 1), 1);
    if (st == RN_OK)
        st = img_dims_agree(node, "channels of input vs weight", img_dim(&in[0], 1),
                            img_dim(&in[1], 0));
    if (st != RN_OK)
        return st;
    const char *act = graph_node_attr_string(node, "activation", "none");
    if (strcmp(act, "none") != 0 && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): activation '%s' is not none, silu or swish",
                            node->name, node->op_type, act);
    int64_t k = img_dim(&in[1], 2);
    graph_shape state = {
        .rank = 3,
        .dims = {img_dim(&in[0], 0), img_dim(&in[0], 1), k >= 1 ? k - 1 : RN_DIM_DYNAMIC}};
    if (k == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): the kernel is empty", node->name,
                            node->op_type);
    img_set_out(out, n_out, 0, in[0].type, &in[0].shape);
    img_set_out(out, n_out, 1, in[0].type, &state);
    return RN_OK;
}

/* ---- FlexAttention (ai.onnx.preview) ---- */

static rn_status infer_flex_attention(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && i < 3; i++)
        st = img_want_float(node, in, n_in, i);
    for (int i = 0; st == RN_OK && i < 3; i++)
        st = img_rank_range(node, &in[i], i, 4, 4);
    if (st == RN_OK)
        st = img_dims_agree(node, "head size of Q vs K", img_dim(&in[0], 3), img_dim(&in[1], 3));
    if (st == RN_OK)
        st = img_dims_agree(node, "heads of K vs V", img_dim(&in[1], 1), img_dim(&in[2], 1));
    if (st == RN_OK)
        st = img_dims_agree(node, "sequence of K vs V", img_dim(&in[1], 2), img_dim(&in[2], 2));
    if (st != RN_OK)
        return st;
    int64_t qh = img_dim(&in[0], 1), kvh = img_dim(&in[1], 1);
    if (qh >= 0 && kvh >= 0 && (kvh == 0 || qh % kvh != 0))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): %lld query heads are not a multiple of %lld key / "
                            "value heads",
                            node->name, node->op_type, (long long)qh, (long long)kvh);
    graph_shape y = {.rank = 4,
                     .dims = {img_dim(&in[0], 0), qh, img_dim(&in[0], 2), img_dim(&in[2], 3)}};
    img_set_out(out, n_out, 0, in[2].type, &y);
    return RN_OK;
}

/* ---- RotaryEmbedding ---- */

static rn_status infer_rotary(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 1);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 2);
    if (st == RN_OK)
        st = img_rank_range(node, &in[0], 0, 3, 4);
    if (st == RN_OK && n_in > 3)
        st = img_want_index(node, in, n_in, 3, false);
    if (st != RN_OK)
        return st;
    if (in[0].shape.rank == 3 && graph_node_attr_int(node, "num_heads", 0) < 1)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): 3-D input needs num_heads", node->name,
                            node->op_type);
    img_set_out(out, n_out, 0, in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss ---- */

/* scores / input are N x C x D1...; labels / target N x D1...; the loss is
 * a scalar, or labels-shaped with reduction 'none'. */
static rn_status infer_loss(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    const graph_port *x = &in[0], *t = &in[1];
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_want_index(node, in, n_in, 1, true);
    if (st == RN_OK)
        st = img_same_type(node, in, n_in, 0, 2);
    if (st == RN_OK)
        st = img_rank_range(node, x, 0, 2, RN_MAX_RANK);
    if (st == RN_OK && n_in > 2)
        st = img_rank_range(node, &in[2], 2, 1, 1);
    if (st == RN_OK && n_in > 2)
        st = img_dims_agree(node, "weight length vs classes", img_dim(&in[2], 0), img_dim(x, 1));
    if (st != RN_OK)
        return st;
    const char *red = graph_node_attr_string(node, "reduction", "mean");
    bool none = strcmp(red, "none") == 0;
    if (!none && strcmp(red, "mean") != 0 && strcmp(red, "sum") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): reduction '%s' is not none, mean or sum", node->name,
                            node->op_type, red);
    graph_shape target = {.rank = -1};
    if (x->shape.rank >= 0) {
        target.rank = x->shape.rank - 1;
        target.dims[0] = x->shape.dims[0];
        for (int d = 2; d < x->shape.rank; d++)
            target.dims[d - 1] = x->shape.dims[d];
    }
    if (t->shape.rank >= 0 && target.rank >= 0) {
        if (t->shape.rank != target.rank)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "node '%s' (%s): target has rank %d; expected %d (input rank - 1)",
                                node->name, node->op_type, t->shape.rank, target.rank);
        for (int d = 0; d < target.rank; d++) {
            if ((st = img_dims_agree(node, "target dims vs input's N, D1...", t->shape.dims[d],
                                     target.dims[d])) != RN_OK)
                return st;
            if (target.dims[d] < 0)
                target.dims[d] = t->shape.dims[d];
        }
    } else if (t->shape.rank >= 0) {
        target = t->shape;
    }
    graph_shape scalar = {.rank = 0};
    img_set_out(out, n_out, 0, x->type, none ? &target : &scalar);
    img_set_out(out, n_out, 1, x->type, &x->shape);
    return RN_OK;
}

/* ---- Adagrad / Adam / Momentum (ai.onnx.preview.training) ---- */

/* Inputs R (scalar rate), T (scalar i64 step), then k groups of n tensors
 * (X, G, then one or two state tensors); outputs the updated X and states,
 * each shaped like its input: output j * n + i mirrors X_i for j = 0 and
 * the (j + 1)-th group otherwise. */
static rn_status infer_optimizer(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    int k = strcmp(node->op_type, "Adam") == 0 ? 4 : 3;
    int n = (n_in - 2) / k;
    if (n < 1 || n_in != 2 + k * n || n_out != (k - 1) * n)
        return rn_set_error(RN_INVALID_ARG,
                            "node '%s' (%s): %d inputs and %d outputs do not form R, T and %d "
                            "groups of tensors with %d outputs each",
                            node->name, node->op_type, n_in, n_out, k, k - 1);
    rn_status st = img_want_float(node, in, n_in, 0);
    if (st == RN_OK)
        st = img_want_index(node, in, n_in, 1, false);
    for (int i = 2; st == RN_OK && i < n_in; i++)
        st = img_want_float(node, in, n_in, i);
    for (int i = 0; st == RN_OK && i < 2; i++)
        if (img_count(&in[i]) > 1)
            st = rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input %d must be a scalar",
                              node->name, node->op_type, i);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < n; i++) {
        for (int g = 1; g < k; g++) {
            const graph_shape *a = &in[2 + i].shape, *b = &in[2 + g * n + i].shape;
            bool same = a->rank < 0 || b->rank < 0 || a->rank == b->rank;
            for (int d = 0; same && a->rank >= 0 && b->rank >= 0 && d < a->rank; d++)
                same = a->dims[d] < 0 || b->dims[d] < 0 || a->dims[d] == b->dims[d];
            if (!same)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    "node '%s' (%s): input %d must have the shape of input %d",
                                    node->name, node->op_type, 2 + g * n + i, 2 + i);
        }
        for (int j = 0; j < k - 1; j++) {
            const graph_port *src = &in[j == 0 ? 2 + i : 2 + (j + 1) * n + i];
            img_set_out(out, n_out, j * n + i, src->type, &src->shape);
        }
    }
    return RN_OK;
}

/* ---- the table ---- */

/* An optional (A) or required (R) attribute of type t, and one schema:
 * domain, op, input and output counts (max -1: variadic), the value_inputs
 * mask, the infer function, then the attributes. (clang-format would break
 * these brace-initializer macros into one field a line.) */
/* clang-format off */
#define A(name, t) GRAPH_OPTIONAL(name, t)
#define R(name, t) GRAPH_REQUIRED(name, t)
#define OP(dom, op, in_lo, in_hi, out_lo, out_hi, values, fn, ...) \
    {dom, op, in_lo, in_hi, out_lo, out_hi, values, fn, {__VA_ARGS__}}
/* clang-format on */
#define WINDOW_ATTRS                                                                               \
    GRAPH_DEFAULT_STRING("auto_pad", "NOTSET"), A("kernel_shape", INTS), A("pads", INTS),          \
        A("strides", INTS), A("dilations", INTS)

const graph_op_schema graph_ops_image[] = {
    OP("", "ConvTranspose", 2, 3, 1, 1, 0, infer_convtranspose, WINDOW_ATTRS,
       GRAPH_DEFAULT_INT("group", 1), A("output_padding", INTS), A("output_shape", INTS)),
    /* DeformConv has no auto_pad (ONNX's spec): explicit pads only. */
    OP("", "DeformConv", 3, 5, 1, 1, 0, infer_deform_conv, A("kernel_shape", INTS), A("pads", INTS),
       A("strides", INTS), A("dilations", INTS), GRAPH_DEFAULT_INT("group", 1),
       GRAPH_DEFAULT_INT("offset_group", 1)),
    OP("", "InstanceNormalization", 3, 3, 1, 1, 0, infer_float_like_x,
       GRAPH_DEFAULT_FLOAT("epsilon", 1e-5f)),
    OP("", "GroupNormalization", 3, 3, 1, 1, 0, infer_float_like_x, R("num_groups", INT),
       GRAPH_DEFAULT_FLOAT("epsilon", 1e-5f), GRAPH_DEFAULT_INT("stash_type", 1)),
    OP("", "RMSNormalization", 2, 2, 1, 1, 0, infer_float_like_x, A("axis", INT),
       A("epsilon", FLOAT), A("stash_type", INT)),
    OP("", "MeanVarianceNormalization", 1, 1, 1, 1, 0, infer_float_like_x, A("axes", INTS)),
    OP("", "LpNormalization", 1, 1, 1, 1, 0, infer_float_like_x, A("axis", INT), A("p", INT)),
    OP("", "Swish", 1, 1, 1, 1, 0, infer_float_like_x, A("alpha", FLOAT)),
    OP("", "LpPool", 1, 1, 1, 1, 0, infer_lp_pool, WINDOW_ATTRS, GRAPH_DEFAULT_INT("p", 2),
       GRAPH_DEFAULT_INT("ceil_mode", 0)),
    OP("", "MaxUnpool", 2, 3, 1, 1, 1u << 2, infer_max_unpool, R("kernel_shape", INTS),
       A("pads", INTS), A("strides", INTS)),
    OP("", "Resize", 1, 4, 1, 1, 0xEu, infer_resize, A("mode", STRING),
       A("coordinate_transformation_mode", STRING), A("cubic_coeff_a", FLOAT),
       A("exclude_outside", INT), A("extrapolation_value", FLOAT), A("nearest_mode", STRING),
       A("antialias", INT), A("axes", INTS), A("keep_aspect_ratio_policy", STRING)),
    OP("", "Upsample", 1, 2, 1, 1, 1u << 1, infer_upsample, A("mode", STRING), A("scales", FLOATS)),
    OP("", "GridSample", 2, 2, 1, 1, 0, infer_grid_sample, A("mode", STRING),
       A("padding_mode", STRING), A("align_corners", INT)),
    OP("", "AffineGrid", 2, 2, 1, 1, 1u << 1, infer_affine_grid, A("align_corners", INT)),
    OP("", "RoiAlign", 3, 3, 1, 1, 0, infer_roi, A("coordinate_transformation_mode", STRING),
       A("mode", STRING), A("output_height", INT), A("output_width", INT), A("sampling_ratio", INT),
       A("spatial_scale", FLOAT)),
    OP("", "MaxRoiPool", 2, 2, 1, 1, 0, infer_roi, R("pooled_shape", INTS),
       A("spatial_scale", FLOAT)),
    OP("", "NonMaxSuppression", 2, 5, 1, 1, 0, infer_nms, A("center_point_box", INT)),
    OP("", "Attention", 3, 7, 1, 4, 0, infer_attention, A("is_causal", INT), A("kv_num_heads", INT),
       A("q_num_heads", INT), A("qk_matmul_output_mode", INT), A("scale", FLOAT),
       A("softcap", FLOAT), A("softmax_precision", INT)),
    OP("", "LinearAttention", 3, 6, 2, 2, 0, infer_linear_attention, A("chunk_size", INT),
       R("kv_num_heads", INT), R("q_num_heads", INT), A("scale", FLOAT), A("update_rule", STRING)),
    OP("", "CausalConvWithState", 2, 4, 2, 2, 0, infer_causal_conv, A("activation", STRING)),
    OP("ai.onnx.preview", "FlexAttention", 3, 3, 1, 1, 0, infer_flex_attention, A("scale", FLOAT),
       A("score_mod", GRAPH), A("prob_mod", GRAPH), A("softmax_precision", INT)),
    OP("", "RotaryEmbedding", 3, 4, 1, 1, 0, infer_rotary, A("interleaved", INT),
       A("num_heads", INT), A("rotary_embedding_dim", INT)),
    OP("", "SoftmaxCrossEntropyLoss", 2, 3, 1, 2, 0, infer_loss, A("ignore_index", INT),
       A("reduction", STRING)),
    OP("", "NegativeLogLikelihoodLoss", 2, 3, 1, 1, 0, infer_loss, A("ignore_index", INT),
       A("reduction", STRING)),
    OP("ai.onnx.preview.training", "Adagrad", 5, -1, 2, -1, 0, infer_optimizer,
       A("decay_factor", FLOAT), A("epsilon", FLOAT), A("norm_coefficient", FLOAT)),
    OP("ai.onnx.preview.training", "Adam", 6, -1, 3, -1, 0, infer_optimizer, A("alpha", FLOAT),
       A("beta", FLOAT), A("epsilon", FLOAT), A("norm_coefficient", FLOAT),
       A("norm_coefficient_post", FLOAT)),
    OP("ai.onnx.preview.training", "Momentum", 5, -1, 2, -1, 0, infer_optimizer, R("alpha", FLOAT),
       R("beta", FLOAT), R("mode", STRING), R("norm_coefficient", FLOAT)),
    {0},
};

#undef A
#undef R
#undef OP
#undef WINDOW_ATTRS
