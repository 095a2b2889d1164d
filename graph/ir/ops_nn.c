/* Neural-network OpenVINO ops: convolutions, MatMul, pooling, LRN, Softmax,
 * MVN, BatchNormInference, ScaledDotProductAttention and Interpolate. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "graph/ir/ir_internal.h"

static graph_value *in(const ir_build *b, int i)
{
    return b->layer->in[i].value;
}

static graph_value *out0(const ir_build *b)
{
    return b->layer->out[0].value;
}

/* strides, dilations, pads_begin/pads_end and auto_pad of a convolution or
 * a pooling layer, as ONNX's attributes of node n. */
static rn_status set_window(ir_build *b, graph_node *n, bool dilations)
{
    int64_t strides[RN_MAX_RANK], dil[RN_MAX_RANK], pads[2 * RN_MAX_RANK], end[RN_MAX_RANK];
    int ns, nd, nb, ne;
    IR_TRY(ir_data_ints(b, "strides", strides, RN_MAX_RANK, &ns));
    IR_TRY(ir_data_ints(b, "dilations", dil, RN_MAX_RANK, &nd));
    IR_TRY(ir_data_ints(b, "pads_begin", pads, RN_MAX_RANK, &nb));
    IR_TRY(ir_data_ints(b, "pads_end", end, RN_MAX_RANK, &ne));
    if (ns > 0)
        IR_TRY(ir_attr_ints(n, "strides", strides, ns));
    if (dilations && nd > 0)
        IR_TRY(ir_attr_ints(n, "dilations", dil, nd));
    const char *auto_pad = ir_data_str(b, "auto_pad", "explicit");
    if (strcasecmp(auto_pad, "explicit") == 0 || strcasecmp(auto_pad, "notset") == 0) {
        if (nb != ne)
            return ir_error(b, RN_PARSE_ERROR, "pads_begin and pads_end differ in length");
        if (nb > 0) {
            memcpy(pads + nb, end, (size_t)ne * sizeof *end);
            IR_TRY(ir_attr_ints(n, "pads", pads, 2 * nb));
        }
        return RN_OK;
    }
    const char *onnx = strcasecmp(auto_pad, "same_upper") == 0   ? "SAME_UPPER"
                       : strcasecmp(auto_pad, "same_lower") == 0 ? "SAME_LOWER"
                       : strcasecmp(auto_pad, "valid") == 0      ? "VALID"
                                                                 : NULL;
    if (onnx == NULL)
        return ir_error(b, RN_PARSE_ERROR, "unknown auto_pad '%s'", auto_pad);
    return ir_attr_str(n, "auto_pad", onnx);
}

static rn_status map_convolution(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Conv", 11, 2, xs, 1, &y, &n));
    return set_window(b, n, true);
}

/* A group convolution's weights (input 1) [G, A, B, k...] as ONNX's
 * [G * A, B, k...] (a Reshape); *group gets G. */
static rn_status merge_group(ir_build *b, int min_rank, graph_value **out, int64_t *group)
{
    const graph_shape *w = &b->layer->in[1].shape;
    if (w->rank < min_rank || !graph_shape_is_static(w))
        return ir_error(b, RN_UNSUPPORTED, "the weights need a static shape of rank %d or more",
                        min_rank);
    if (w->dims[0] > ((int64_t)1 << 31) || w->dims[1] > ((int64_t)1 << 31))
        return ir_error(b, RN_PARSE_ERROR, "the weights' dims %lld and %lld are too large",
                        (long long)w->dims[0], (long long)w->dims[1]);
    int64_t shape[RN_MAX_RANK];
    shape[0] = w->dims[0] * w->dims[1];
    for (int i = 2; i < w->rank; i++)
        shape[i - 1] = w->dims[i];
    *group = w->dims[0];
    graph_value *rs[2] = {in(b, 1)};
    IR_TRY(ir_const_i64(b, shape, w->rank - 1, false, &rs[1]));
    return ir_node1(b, "Reshape", 14, 2, rs, out, NULL);
}

/* GroupConvolution's weights are [G, O/G, I/G, k...]; ONNX's Conv with
 * group G wants [O, I/G, k...]: a Reshape merges the first two dims. */
static rn_status map_group_convolution(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    graph_value *weights;
    int64_t group;
    IR_TRY(merge_group(b, 3, &weights, &group));
    graph_value *xs[2] = {in(b, 0), weights}, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Conv", 11, 2, xs, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "group", group));
    return set_window(b, n, true);
}

/* ConvolutionBackpropData and GroupConvolutionBackpropData (opset1) ->
 * ConvTranspose: the weights [C_in, C_out, k...] are ONNX's (a group's
 * [G, C_in/G, C_out/G, k...] merge their first two dims); output_padding as
 * ONNX's; an output_shape input is refused. */
static rn_status map_deconvolution(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 3, 1));
    bool grouped = strncmp(b->layer->type, "Group", 5) == 0;
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *y = out0(b);
    int64_t group = 1;
    if (grouped)
        IR_TRY(merge_group(b, 4, &xs[1], &group));
    int64_t out_pad[RN_MAX_RANK];
    int n_pad;
    if (b->layer->n_in == 3)
        return ir_error(b, RN_UNSUPPORTED,
                        "an output_shape input is not supported (its pads do not match "
                        "OpenVINO's yet)");
    IR_TRY(ir_data_ints(b, "output_padding", out_pad, RN_MAX_RANK, &n_pad));
    graph_node *n;
    IR_TRY(ir_node(b, "ConvTranspose", 11, 2, xs, 1, &y, &n));
    if (group != 1)
        IR_TRY(ir_attr_int(n, "group", group));
    if (n_pad > 0)
        IR_TRY(ir_attr_ints(n, "output_padding", out_pad, n_pad));
    return set_window(b, n, true);
}

static rn_status map_matmul(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    bool ta, tb;
    IR_TRY(ir_data_bool(b, "transpose_a", false, &ta));
    IR_TRY(ir_data_bool(b, "transpose_b", false, &tb));
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *y = out0(b);
    for (int i = 0; i < 2; i++) {
        if (!(i == 0 ? ta : tb))
            continue;
        int rank = b->layer->in[i].shape.rank;
        IR_TRY(ir_swap_last(b, xs[i], rank, &xs[i]));
    }
    return ir_node(b, "MatMul", 13, 2, xs, 1, &y, NULL);
}

/* MaxPool (opset1, and opset8 with dilations and a second output of
 * indices, which ONNX numbers differently: refused when it is used). */
static rn_status map_pool(ir_build *b)
{
    bool is_max = strcmp(b->layer->type, "MaxPool") == 0;
    int n_out = is_max && ir_layer_opset(b) >= 8 ? 2 : 1;
    IR_TRY(ir_check_ports(b, 1, 1, n_out));
    /* The indices: OpenVINO's `axis` 0 flattens them over the whole input,
     * as ONNX's MaxPool does (int64, cast to index_element_type). */
    bool indices = n_out == 2 && b->layer->out[1].used;
    rn_element_type it = RN_I64;
    if (indices) {
        int64_t axis;
        IR_TRY(ir_data_int(b, "axis", 0, &axis));
        it = ir_element_type(ir_data_str(b, "index_element_type", "i64"));
        if (axis != 0 || (it != RN_I64 && it != RN_I32))
            return ir_error(b, RN_UNSUPPORTED,
                            "the indices output (port %d) with axis %lld or that "
                            "index_element_type is not supported",
                            b->layer->out[1].id, (long long)axis);
    }
    int64_t kernel[RN_MAX_RANK];
    int nk;
    IR_TRY(ir_data_ints(b, "kernel", kernel, RN_MAX_RANK, &nk));
    if (nk <= 0)
        return ir_error(b, RN_PARSE_ERROR, "has no kernel");
    graph_value *x = in(b, 0), *ys[2] = {out0(b), NULL};
    if (indices && it == RN_I64)
        ys[1] = b->layer->out[1].value;
    else if (indices)
        IR_TRY(ir_tmp_value(b, &ys[1]));
    graph_node *n;
    IR_TRY(ir_node(b, is_max ? "MaxPool" : "AveragePool", is_max ? 12 : 19, 1, &x, indices ? 2 : 1,
                   ys, &n));
    IR_TRY(ir_attr_ints(n, "kernel_shape", kernel, nk));
    const char *rounding = ir_data_str(b, "rounding_type", "floor");
    /* ceil_torch (opset14) drops a last window that would start in the
     * padding, as ONNX's ceil_mode does. */
    if (strcasecmp(rounding, "ceil") == 0 || strcasecmp(rounding, "ceil_torch") == 0)
        IR_TRY(ir_attr_int(n, "ceil_mode", 1));
    else if (strcasecmp(rounding, "floor") != 0)
        return ir_error(b, RN_UNSUPPORTED, "rounding_type '%s' is not supported", rounding);
    if (!is_max) {
        bool exclude;
        IR_TRY(ir_data_bool(b, "exclude-pad", false, &exclude));
        IR_TRY(ir_attr_int(n, "count_include_pad", exclude ? 0 : 1));
    }
    IR_TRY(set_window(b, n, true)); /* AvgPool-16 has dilations (AveragePool-19) */
    if (!indices || it == RN_I64)
        return RN_OK;
    graph_node *c;
    IR_TRY(ir_node(b, "Cast", 13, 1, &ys[1], 1, &b->layer->out[1].value, &c));
    return ir_attr_int(c, "to", it);
}

/* LRN across channels (axes [1]). */
static rn_status map_lrn(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    int64_t axes[RN_MAX_RANK];
    int na;
    IR_TRY(ir_const_ints(b, 1, "axes", axes, RN_MAX_RANK, &na));
    if (na != 1 || axes[0] != 1)
        return ir_error(b, RN_UNSUPPORTED, "only LRN across channels (axes [1]) is supported");
    float alpha, beta, bias;
    int64_t size;
    IR_TRY(ir_data_float(b, "alpha", 1e-4f, &alpha));
    IR_TRY(ir_data_float(b, "beta", 0.75f, &beta));
    IR_TRY(ir_data_float(b, "bias", 1.0f, &bias));
    IR_TRY(ir_data_int(b, "size", 1, &size));
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "LRN", 13, 1, &x, 1, &y, &n));
    IR_TRY(ir_attr_float(n, "alpha", alpha));
    IR_TRY(ir_attr_float(n, "beta", beta));
    IR_TRY(ir_attr_float(n, "bias", bias));
    return ir_attr_int(n, "size", size);
}

/* SoftMax / LogSoftmax over one axis: ONNX's opset-13 meaning. */
static rn_status map_softmax(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    int64_t axis;
    IR_TRY(ir_data_int(b, "axis", 1, &axis));
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, b->op->onnx, 13, 1, &x, 1, &y, &n));
    return ir_attr_int(n, "axis", axis);
}

/* (x - mean) / sqrt(var + eps) over `axes` (an int64 value), written out:
 * ONNX has no MVN with an epsilon. eps_mode outside_sqrt adds eps after the
 * square root. */
static rn_status mvn(ir_build *b, graph_value *axes, bool normalize_variance, float eps,
                     bool inside_sqrt)
{
    graph_value *x = in(b, 0), *y = out0(b), *mean, *d;
    graph_node *n;
    graph_value *xa[2] = {x, axes};
    IR_TRY(ir_node1(b, "ReduceMean", 18, 2, xa, &mean, &n));
    graph_value *xm[2] = {x, mean};
    if (!normalize_variance)
        return ir_node(b, "Sub", 14, 2, xm, 1, &y, NULL);
    IR_TRY(ir_node1(b, "Sub", 14, 2, xm, &d, NULL));
    graph_value *dd[2] = {d, d}, *sq, *var, *e, *den;
    IR_TRY(ir_node1(b, "Mul", 14, 2, dd, &sq, NULL));
    graph_value *sa[2] = {sq, axes};
    IR_TRY(ir_node1(b, "ReduceMean", 18, 2, sa, &var, NULL));
    IR_TRY(ir_const_scalar(b, b->layer->in[0].elem, eps, &e));
    if (inside_sqrt) {
        graph_value *ve[2] = {var, e}, *s;
        IR_TRY(ir_node1(b, "Add", 14, 2, ve, &s, NULL));
        IR_TRY(ir_node1(b, "Sqrt", 13, 1, &s, &den, NULL));
    } else {
        graph_value *s;
        IR_TRY(ir_node1(b, "Sqrt", 13, 1, &var, &s, NULL));
        graph_value *se[2] = {s, e};
        IR_TRY(ir_node1(b, "Add", 14, 2, se, &den, NULL));
    }
    graph_value *q[2] = {d, den};
    return ir_node(b, "Div", 14, 2, q, 1, &y, NULL);
}

static rn_status map_mvn(ir_build *b)
{
    bool v6 = ir_layer_opset(b) >= 6;
    IR_TRY(ir_check_ports(b, v6 ? 2 : 1, v6 ? 2 : 1, 1));
    bool normalize;
    float eps;
    IR_TRY(ir_data_bool(b, "normalize_variance", true, &normalize));
    IR_TRY(ir_data_float(b, "eps", 1e-9f, &eps));
    graph_value *axes;
    bool inside = true;
    if (v6) {
        const char *mode = ir_data_str(b, "eps_mode", "inside_sqrt");
        if (strcasecmp(mode, "outside_sqrt") == 0)
            inside = false;
        else if (strcasecmp(mode, "inside_sqrt") != 0)
            return ir_error(b, RN_PARSE_ERROR, "unknown eps_mode '%s'", mode);
        IR_TRY(ir_as_i64(b, 1, &axes));
    } else {
        /* opset2: reduction_axes, or across_channels over C and the
         * spatial dims; eps is added inside the square root. */
        int64_t list[RN_MAX_RANK];
        int n;
        int rank = b->layer->in[0].shape.rank;
        IR_TRY(ir_data_ints(b, "reduction_axes", list, RN_MAX_RANK, &n));
        if (n < 0) {
            bool across;
            IR_TRY(ir_data_bool(b, "across_channels", false, &across));
            n = 0;
            for (int i = across ? 1 : 2; i < rank; i++)
                list[n++] = i;
        }
        IR_TRY(ir_const_i64(b, list, n, false, &axes));
    }
    return mvn(b, axes, normalize, eps, inside);
}

/* GridSample (opset9): align_corners, mode bilinear/bicubic/nearest and
 * padding_mode zeros/border/reflection as ONNX's GridSample-16 (but bicubic
 * with border). */
static rn_status map_grid_sample(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    bool align;
    IR_TRY(ir_data_bool(b, "align_corners", false, &align));
    const char *mode = ir_data_str(b, "mode", "bilinear");
    const char *pad = ir_data_str(b, "padding_mode", "zeros");
    if (strcmp(mode, "bilinear") != 0 && strcmp(mode, "bicubic") != 0 &&
        strcmp(mode, "nearest") != 0)
        return ir_error(b, RN_UNSUPPORTED, "mode '%s' is not supported", mode);
    if (strcmp(pad, "zeros") != 0 && strcmp(pad, "border") != 0 && strcmp(pad, "reflection") != 0)
        return ir_error(b, RN_UNSUPPORTED, "padding_mode '%s' is not supported", pad);
    /* OpenVINO's CPU plugin (2026.4.1) gives other values than ONNX's
     * reference for bicubic with border padding (tests/ir/check_ops.py). */
    if (strcmp(mode, "bicubic") == 0 && strcmp(pad, "border") == 0)
        return ir_error(b, RN_UNSUPPORTED,
                        "mode bicubic with padding_mode border is not "
                        "supported (OpenVINO's differs from ONNX's)");
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "GridSample", 16, 2, xs, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "align_corners", align));
    IR_TRY(ir_attr_str(n, "mode", mode));
    return ir_attr_str(n, "padding_mode", pad);
}

/* input i reshaped to [1] (a scalar threshold or count as ONNX wants it). */
static rn_status as_one(ir_build *b, graph_value *v, graph_value **out)
{
    int64_t one = 1;
    graph_value *rs[2] = {v};
    IR_TRY(ir_const_i64(b, &one, 1, false, &rs[1]));
    return ir_node1(b, "Reshape", 14, 2, rs, out, NULL);
}

/* NonMaxSuppression (opset5, opset9): ONNX's NonMaxSuppression for the
 * indices (box_encoding center -> center_point_box), cast to output_type;
 * selected_scores [M, 3] = (batch, class, the score GatherND reads);
 * valid_outputs the number of rows. sort_result_descending true (a sort
 * across classes) and a non-zero soft_nms_sigma have no ONNX form. */
static rn_status map_nms(ir_build *b)
{
    const ir_layer *l = b->layer;
    IR_TRY(ir_check_ports(b, 2, 6, 3));
    bool sort_desc;
    IR_TRY(ir_data_bool(b, "sort_result_descending", true, &sort_desc));
    if (sort_desc)
        return ir_error(b, RN_UNSUPPORTED,
                        "sort_result_descending true is not supported (ONNX sorts per class)");
    if (l->n_in >= 6) {
        double sigma;
        int n;
        IR_TRY(ir_const_doubles(b, 5, "soft_nms_sigma", &sigma, 1, &n));
        if (n != 1 || sigma != 0)
            return ir_error(b, RN_UNSUPPORTED, "a non-zero soft_nms_sigma is not supported");
    }
    const char *enc = ir_data_str(b, "box_encoding", "corner");
    bool center = strcasecmp(enc, "center") == 0;
    if (!center && strcasecmp(enc, "corner") != 0)
        return ir_error(b, RN_PARSE_ERROR, "unknown box_encoding '%s'", enc);
    rn_element_type ot = ir_element_type(ir_data_str(b, "output_type", "i64"));
    if (ot != RN_I64 && ot != RN_I32)
        return ir_error(b, RN_UNSUPPORTED, "output_type is not supported (i32, i64)");
    graph_value *ins[5] = {l->in[0].value, l->in[1].value, NULL, NULL, NULL};
    if (l->n_in >= 3) {
        graph_value *m;
        IR_TRY(ir_as_i64(b, 2, &m));
        IR_TRY(as_one(b, m, &ins[2]));
    }
    for (int i = 3; i < 5 && i < l->n_in; i++)
        IR_TRY(as_one(b, l->in[i].value, &ins[i]));
    int n_in = l->n_in < 5 ? l->n_in : 5;
    graph_value *idx;
    graph_node *n;
    IR_TRY(ir_node1(b, "NonMaxSuppression", 11, n_in, ins, &idx, &n));
    IR_TRY(ir_attr_int(n, "center_point_box", center));
    graph_value *y0 = l->out[0].value, *y1 = l->out[1].value, *y2 = l->out[2].value;
    if (ot == RN_I64) {
        IR_TRY(ir_node(b, "Identity", 16, 1, &idx, 1, &y0, NULL));
    } else {
        IR_TRY(ir_node(b, "Cast", 13, 1, &idx, 1, &y0, &n));
        IR_TRY(ir_attr_int(n, "to", ot));
    }
    /* selected_scores: Concat(float(indices[:, 0:2]), scores[b, c, box]). */
    graph_value *sl[5] = {idx}, *bc, *bcf, *score, *score1;
    int64_t zero = 0, two = 2, one = 1;
    IR_TRY(ir_const_i64(b, &zero, 1, false, &sl[1]));
    IR_TRY(ir_const_i64(b, &two, 1, false, &sl[2]));
    IR_TRY(ir_const_i64(b, &one, 1, false, &sl[3]));
    IR_TRY(ir_node1(b, "Slice", 13, 4, sl, &bc, NULL));
    IR_TRY(ir_node1(b, "Cast", 13, 1, &bc, &bcf, &n));
    IR_TRY(ir_attr_int(n, "to", l->out[1].elem != RN_UNDEFINED ? l->out[1].elem : RN_F32));
    graph_value *gi[2] = {l->in[1].value, idx};
    IR_TRY(ir_node1(b, "GatherND", 13, 2, gi, &score, NULL));
    graph_value *us[2] = {score};
    IR_TRY(ir_const_i64(b, &one, 1, false, &us[1]));
    IR_TRY(ir_node1(b, "Unsqueeze", 13, 2, us, &score1, NULL));
    graph_value *cat[2] = {bcf, score1};
    IR_TRY(ir_node(b, "Concat", 13, 2, cat, 1, &y1, &n));
    IR_TRY(ir_attr_int(n, "axis", 1));
    /* valid_outputs: [rows]. */
    graph_value *shape, *rows;
    IR_TRY(ir_node1(b, "Shape", 15, 1, &idx, &shape, NULL));
    graph_value *s0[4] = {shape, sl[1], sl[3], sl[1]};
    IR_TRY(ir_node1(b, "Slice", 13, 4, s0, &rows, NULL));
    if (l->out[2].elem == RN_I64)
        return ir_node(b, "Identity", 16, 1, &rows, 1, &y2, NULL);
    IR_TRY(ir_node(b, "Cast", 13, 1, &rows, 1, &y2, &n));
    return ir_attr_int(n, "to", l->out[2].elem != RN_UNDEFINED ? l->out[2].elem : ot);
}

/* NormalizeL2 (opset1): x / sqrt(max(sum(x^2), eps)) over the axes input
 * (eps_mode add: sqrt(sum + eps)), written out. */
static rn_status map_normalize_l2(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    float eps;
    IR_TRY(ir_data_float(b, "eps", 1e-10f, &eps));
    const char *mode = ir_data_str(b, "eps_mode", "add");
    bool add = strcasecmp(mode, "add") == 0;
    if (!add && strcasecmp(mode, "max") != 0)
        return ir_error(b, RN_PARSE_ERROR, "unknown eps_mode '%s'", mode);
    graph_value *x = in(b, 0), *y = out0(b), *sq, *sum, *e, *m, *root, *axes;
    IR_TRY(ir_as_i64(b, 1, &axes));
    graph_value *xx[2] = {x, x};
    IR_TRY(ir_node1(b, "Mul", 14, 2, xx, &sq, NULL));
    graph_value *sa[2] = {sq, axes};
    graph_node *n;
    IR_TRY(ir_node1(b, "ReduceSum", 13, 2, sa, &sum, &n));
    IR_TRY(ir_attr_int(n, "keepdims", 1));
    IR_TRY(ir_const_scalar(b, b->layer->in[0].elem, eps, &e));
    graph_value *se[2] = {sum, e};
    IR_TRY(ir_node1(b, add ? "Add" : "Max", add ? 14 : 13, 2, se, &m, NULL));
    IR_TRY(ir_node1(b, "Sqrt", 13, 1, &m, &root, NULL));
    graph_value *q[2] = {x, root};
    return ir_node(b, "Div", 14, 2, q, 1, &y, NULL);
}

/* BatchNormInference: opset5 takes (data, gamma, beta, mean, variance),
 * opset1 (gamma, beta, data, mean, variance). */
static rn_status map_batch_norm(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 5, 5, 1));
    float eps;
    IR_TRY(ir_data_float(b, "epsilon", 1e-5f, &eps));
    bool v5 = ir_layer_opset(b) >= 5;
    graph_value *xs[5] = {in(b, v5 ? 0 : 2), in(b, v5 ? 1 : 0), in(b, v5 ? 2 : 1), in(b, 3),
                          in(b, 4)},
                *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "BatchNormalization", 15, 5, xs, 1, &y, &n));
    return ir_attr_float(n, "epsilon", eps);
}

/* ScaledDotProductAttention (opset13): softmax(Q K^T * scale + mask) V,
 * written out. scale defaults to 1/sqrt(d); a boolean mask keeps where it
 * is true; a float mask is added. */
static rn_status map_sdpa(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 5, 1));
    bool causal;
    IR_TRY(ir_data_bool(b, "causal", false, &causal));
    if (causal)
        return ir_error(b, RN_UNSUPPORTED, "causal attention is not supported");
    const ir_layer *l = b->layer;
    int rank = l->in[1].shape.rank;
    if (rank < 2 || l->in[0].shape.rank < 2)
        return ir_error(b, RN_UNSUPPORTED, "query and key need a known rank of at least 2");
    rn_element_type t = l->in[0].elem;
    graph_value *kt, *s, *scale;
    IR_TRY(ir_swap_last(b, in(b, 1), rank, &kt));
    graph_value *qk[2] = {in(b, 0), kt};
    IR_TRY(ir_node1(b, "MatMul", 13, 2, qk, &s, NULL));
    if (l->n_in >= 5) {
        scale = in(b, 4);
    } else {
        int64_t d = l->in[0].shape.dims[l->in[0].shape.rank - 1];
        if (d == RN_DIM_DYNAMIC)
            return ir_error(b, RN_UNSUPPORTED,
                            "no scale input and the query's last dim is "
                            "dynamic");
        IR_TRY(ir_const_scalar(b, t, 1.0 / sqrt((double)d), &scale));
    }
    graph_value *ss[2] = {s, scale};
    IR_TRY(ir_node1(b, "Mul", 14, 2, ss, &s, NULL));
    if (l->n_in >= 4) {
        graph_value *mask = in(b, 3);
        if (l->in[3].elem == RN_BOOL) {
            graph_value *ninf, *w[3] = {mask, s};
            IR_TRY(ir_const_scalar(b, t, -INFINITY, &ninf));
            w[2] = ninf;
            IR_TRY(ir_node1(b, "Where", 16, 3, w, &s, NULL));
        } else {
            graph_value *sm[2] = {s, mask};
            IR_TRY(ir_node1(b, "Add", 14, 2, sm, &s, NULL));
        }
    }
    graph_value *p, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node1(b, "Softmax", 13, 1, &s, &p, &n));
    IR_TRY(ir_attr_int(n, "axis", -1));
    graph_value *pv[2] = {p, in(b, 2)};
    return ir_node(b, "MatMul", 13, 2, pv, 1, &y, NULL);
}

/* Interpolate opset4 (data, sizes, scales[, axes]) and opset11
 * (data, scales_or_sizes[, axes]) -> Resize (opset 18, axes attribute). */
static rn_status map_interpolate(ir_build *b)
{
    int opset = ir_layer_opset(b);
    if (opset < 4)
        return ir_error(b, RN_UNSUPPORTED, "Interpolate of %s is not supported (opset4, opset11)",
                        b->layer->version);
    bool v11 = opset >= 11;
    IR_TRY(ir_check_ports(b, v11 ? 2 : 3, v11 ? 3 : 4, 1));
    const char *mode = ir_data_str(b, "mode", "nearest");
    const char *onnx_mode =
        strcasecmp(mode, "nearest") == 0                                          ? "nearest"
        : strcasecmp(mode, "linear") == 0 || strcasecmp(mode, "linear_onnx") == 0 ? "linear"
        : strcasecmp(mode, "cubic") == 0                                          ? "cubic"
                                                                                  : NULL;
    if (onnx_mode == NULL)
        return ir_error(b, RN_UNSUPPORTED, "mode '%s' is not supported", mode);
    int64_t pads[RN_MAX_RANK];
    int np;
    for (int k = 0; k < 2; k++) {
        IR_TRY(ir_data_ints(b, k ? "pads_end" : "pads_begin", pads, RN_MAX_RANK, &np));
        for (int i = 0; i < np; i++)
            if (pads[i] != 0)
                return ir_error(b, RN_UNSUPPORTED, "non-zero pads are not supported");
    }
    const char *calc = ir_data_str(b, "shape_calculation_mode", "sizes");
    bool sizes = strcasecmp(calc, "sizes") == 0;
    if (!sizes && strcasecmp(calc, "scales") != 0)
        return ir_error(b, RN_PARSE_ERROR, "unknown shape_calculation_mode '%s'", calc);
    int src = v11 ? 1 : (sizes ? 1 : 2);
    int axes_port = v11 ? 2 : 3;
    graph_value *ins[4] = {in(b, 0), NULL, NULL, NULL}, *y = out0(b);
    if (sizes) {
        IR_TRY(ir_as_i64(b, src, &ins[3]));
    } else {
        ins[2] = in(b, src);
        if (b->layer->in[src].elem != RN_F32) {
            graph_node *c;
            graph_value *scales = ins[2];
            IR_TRY(ir_node1(b, "Cast", 13, 1, &scales, &ins[2], &c));
            IR_TRY(ir_attr_int(c, "to", RN_F32));
        }
    }
    graph_node *n;
    IR_TRY(ir_node(b, "Resize", 18, 4, ins, 1, &y, &n));
    IR_TRY(ir_attr_str(n, "mode", onnx_mode));
    if (b->layer->n_in > axes_port) {
        int64_t axes[RN_MAX_RANK];
        int na;
        IR_TRY(ir_const_ints(b, axes_port, "axes", axes, RN_MAX_RANK, &na));
        IR_TRY(ir_attr_ints(n, "axes", axes, na));
    }
    IR_TRY(ir_attr_str(n, "coordinate_transformation_mode",
                       ir_data_str(b, "coordinate_transformation_mode", "half_pixel")));
    if (strcmp(onnx_mode, "nearest") == 0) {
        const char *nearest = ir_data_str(b, "nearest_mode", "round_prefer_floor");
        if (strcasecmp(nearest, "simple") == 0)
            return ir_error(b, RN_UNSUPPORTED, "nearest_mode 'simple' is not supported");
        IR_TRY(ir_attr_str(n, "nearest_mode", nearest));
    }
    float cube;
    IR_TRY(ir_data_float(b, "cube_coeff", -0.75f, &cube));
    IR_TRY(ir_attr_float(n, "cubic_coeff_a", cube));
    bool antialias;
    IR_TRY(ir_data_bool(b, "antialias", false, &antialias));
    return antialias ? ir_attr_int(n, "antialias", 1) : RN_OK;
}

const ir_op ir_ops_nn[] = {
    {"Convolution", map_convolution, NULL, 0},
    {"GroupConvolution", map_group_convolution, NULL, 0},
    {"MatMul", map_matmul, NULL, 0},
    {"ConvolutionBackpropData", map_deconvolution, NULL, 0},
    {"GroupConvolutionBackpropData", map_deconvolution, NULL, 0},
    {"MaxPool", map_pool, NULL, 0},
    {"AvgPool", map_pool, NULL, 0},
    {"LRN", map_lrn, NULL, 0},
    {"SoftMax", map_softmax, "Softmax", 13},
    {"LogSoftmax", map_softmax, "LogSoftmax", 13},
    {"MVN", map_mvn, NULL, 0},
    {"BatchNormInference", map_batch_norm, NULL, 0},
    {"NormalizeL2", map_normalize_l2, NULL, 0},
    {"GridSample", map_grid_sample, NULL, 0},
    {"NonMaxSuppression", map_nms, NULL, 0},
    {"ScaledDotProductAttention", map_sdpa, NULL, 0},
    {"Interpolate", map_interpolate, NULL, 0},
    {NULL, NULL, NULL, 0},
};
