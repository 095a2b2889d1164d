/* Data-movement and reduction OpenVINO ops: Concat, Reshape, Transpose,
 * Squeeze/Unsqueeze, ShuffleChannels, Gather, ShapeOf, Broadcast, Slice,
 * StridedSlice, Split/VariadicSplit, Pad, Tile, DepthToSpace, the Reduce*
 * ops. Shape, axes and index inputs become the int64 inputs ONNX wants. */
#include <stdint.h>
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

static rn_status map_concat(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, -1, 1));
    int64_t axis;
    IR_TRY(ir_data_int(b, "axis", 0, &axis));
    graph_value *xs[64], *y = out0(b);
    if (b->layer->n_in > 64)
        return ir_error(b, RN_UNSUPPORTED, "more than 64 inputs");
    for (int i = 0; i < b->layer->n_in; i++)
        xs[i] = in(b, i);
    graph_node *n;
    IR_TRY(ir_node(b, "Concat", 13, b->layer->n_in, xs, 1, &y, &n));
    return ir_attr_int(n, "axis", axis);
}

/* Reshape: special_zero true is ONNX's default (0 copies the input's dim);
 * false is allowzero = 1. */
static rn_status map_reshape(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    bool special_zero;
    IR_TRY(ir_data_bool(b, "special_zero", false, &special_zero));
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "Reshape", 14, 2, xs, 1, &y, &n));
    return special_zero ? RN_OK : ir_attr_int(n, "allowzero", 1);
}

/* Transpose with a constant order (empty: reverse the dims). */
static rn_status map_transpose(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    int64_t perm[RN_MAX_RANK];
    int n_perm;
    IR_TRY(ir_const_ints(b, 1, "order", perm, RN_MAX_RANK, &n_perm));
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Transpose", 13, 1, &x, 1, &y, &n));
    return n_perm > 0 ? ir_attr_ints(n, "perm", perm, n_perm) : RN_OK;
}

/* Squeeze (axes optional) and Unsqueeze (axes): opset-13 axes inputs. */
static rn_status map_squeeze(ir_build *b)
{
    bool unsqueeze = strcmp(b->layer->type, "Unsqueeze") == 0;
    IR_TRY(ir_check_ports(b, unsqueeze ? 2 : 1, 2, 1));
    graph_value *xs[2] = {in(b, 0), NULL}, *y = out0(b);
    if (b->layer->n_in == 2)
        IR_TRY(ir_as_i64(b, 1, &xs[1]));
    return ir_node(b, unsqueeze ? "Unsqueeze" : "Squeeze", 13, b->layer->n_in, xs, 1, &y, NULL);
}

/* ShuffleChannels(axis, group): reshape the axis into [group, C/group],
 * swap the two, reshape back. Needs the input's static shape. */
static rn_status map_shuffle_channels(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    int64_t axis, group;
    IR_TRY(ir_data_int(b, "axis", 1, &axis));
    IR_TRY(ir_data_int(b, "group", 1, &group));
    const graph_shape *s = &b->layer->in[0].shape;
    if (!graph_shape_is_static(s) || s->rank >= RN_MAX_RANK)
        return ir_error(b, RN_UNSUPPORTED, "the input needs a static shape");
    if (axis < 0)
        axis += s->rank;
    if (axis < 0 || axis >= s->rank || group <= 0 || s->dims[axis] % group != 0)
        return ir_error(b, RN_PARSE_ERROR, "axis %lld and group %lld do not fit the input",
                        (long long)axis, (long long)group);
    int64_t split[RN_MAX_RANK], perm[RN_MAX_RANK];
    int r = 0;
    for (int i = 0; i < s->rank; i++) {
        if (i == axis) {
            split[r++] = group;
            split[r++] = s->dims[i] / group;
        } else {
            split[r++] = s->dims[i];
        }
    }
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[axis] = axis + 1;
    perm[axis + 1] = axis;
    graph_value *shape, *xs[2] = {in(b, 0)}, *grouped, *swapped, *back, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_const_i64(b, split, r, false, &shape));
    xs[1] = shape;
    IR_TRY(ir_node1(b, "Reshape", 14, 2, xs, &grouped, NULL));
    IR_TRY(ir_node1(b, "Transpose", 13, 1, &grouped, &swapped, &n));
    IR_TRY(ir_attr_ints(n, "perm", perm, r));
    IR_TRY(ir_const_i64(b, s->dims, s->rank, false, &back));
    graph_value *ys[2] = {swapped, back};
    return ir_node(b, "Reshape", 14, 2, ys, 1, &y, NULL);
}

/* Gather (data, indices, axis): a constant axis and batch_dims 0. */
static rn_status map_gather(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 3, 1));
    int64_t batch_dims, axis;
    int n_axis;
    IR_TRY(ir_data_int(b, "batch_dims", 0, &batch_dims));
    if (batch_dims != 0)
        return ir_error(b, RN_UNSUPPORTED, "batch_dims %lld is not supported (0 only)",
                        (long long)batch_dims);
    IR_TRY(ir_const_ints(b, 2, "axis", &axis, 1, &n_axis));
    if (n_axis != 1)
        return ir_error(b, RN_PARSE_ERROR, "axis must hold one value");
    graph_value *xs[2] = {in(b, 0), in(b, 1)}, *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "Gather", 13, 2, xs, 1, &y, &n));
    return ir_attr_int(n, "axis", axis);
}

/* Range: opset4 casts start, stop and step to output_type and counts
 * max(ceil((stop - start) / step), 0) values, as ONNX's Range of inputs of
 * that type does; opset1's inputs and output share one type. */
static rn_status map_range(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 3, 1));
    rn_element_type t = b->layer->in[0].elem;
    if (ir_layer_opset(b) >= 4) {
        const char *type = ir_data_str(b, "output_type", NULL);
        t = type ? ir_element_type(type) : RN_UNDEFINED;
        if (t == RN_UNDEFINED)
            return ir_error(b, type ? RN_UNSUPPORTED : RN_PARSE_ERROR,
                            "output_type '%s' is missing or not supported", type ? type : "");
    }
    graph_value *xs[3], *y = out0(b);
    for (int i = 0; i < 3; i++) {
        xs[i] = in(b, i);
        if (b->layer->in[i].elem == t)
            continue;
        graph_node *n;
        graph_value *v = xs[i];
        IR_TRY(ir_node1(b, "Cast", 13, 1, &v, &xs[i], &n));
        IR_TRY(ir_attr_int(n, "to", t));
    }
    return ir_node(b, "Range", 11, 3, xs, 1, &y, NULL);
}

/* TopK (opset1, 3, 11): data and a scalar k; mode max/min -> largest,
 * sort "value" -> sorted (and "none", which leaves the order to the
 * runtime, sorted too); sort "index" has no ONNX form. Indices come as
 * int64, cast to index_element_type. */
static rn_status map_topk(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 2));
    int64_t axis;
    IR_TRY(ir_data_int(b, "axis", -1, &axis));
    const char *mode = ir_data_str(b, "mode", "max");
    const char *sort = ir_data_str(b, "sort", "none");
    if (strcasecmp(mode, "max") != 0 && strcasecmp(mode, "min") != 0)
        return ir_error(b, RN_PARSE_ERROR, "unknown mode '%s'", mode);
    if (strcasecmp(sort, "index") == 0)
        return ir_error(b, RN_UNSUPPORTED, "sort 'index' is not supported (value, none)");
    if (strcasecmp(sort, "value") != 0 && strcasecmp(sort, "none") != 0)
        return ir_error(b, RN_PARSE_ERROR, "unknown sort '%s'", sort);
    const char *index_type = ir_data_str(b, "index_element_type", "i32");
    rn_element_type it = ir_element_type(index_type);
    if (it != RN_I32 && it != RN_I64)
        return ir_error(b, RN_UNSUPPORTED, "index_element_type '%s' is not supported (i32, i64)",
                        index_type);
    graph_value *k, *shape, *ins[2] = {in(b, 0)};
    IR_TRY(ir_as_i64(b, 1, &k));
    int64_t one = 1;
    IR_TRY(ir_const_i64(b, &one, 1, false, &shape));
    graph_value *ks[2] = {k, shape};
    IR_TRY(ir_node1(b, "Reshape", 14, 2, ks, &ins[1], NULL));
    graph_value *outs[2] = {b->layer->out[0].value, b->layer->out[1].value};
    if (it != RN_I64)
        IR_TRY(ir_tmp_value(b, &outs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "TopK", 11, 2, ins, 2, outs, &n));
    IR_TRY(ir_attr_int(n, "axis", axis));
    IR_TRY(ir_attr_int(n, "largest", strcasecmp(mode, "max") == 0));
    IR_TRY(ir_attr_int(n, "sorted", 1));
    if (it == RN_I64)
        return RN_OK;
    graph_node *c;
    IR_TRY(ir_node(b, "Cast", 13, 1, &outs[1], 1, &b->layer->out[1].value, &c));
    return ir_attr_int(c, "to", it);
}

/* Reverse (opset1): the axes (mode "index") or a boolean mask over the
 * dims (mode "mask"), constant, as a Slice with step -1 over each. */
static rn_status map_reverse(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    const char *mode = ir_data_str(b, "mode", "index");
    int64_t axes[RN_MAX_RANK];
    int n;
    if (strcasecmp(mode, "mask") == 0) {
        const graph_tensor *t = in(b, 1)->constant;
        if (t == NULL || t->type != RN_BOOL || graph_tensor_count(t) > RN_MAX_RANK)
            return ir_error(b, RN_UNSUPPORTED, "the mask must be a constant boolean list");
        n = 0;
        for (size_t i = 0; i < graph_tensor_count(t); i++)
            if (((const uint8_t *)t->data)[i])
                axes[n++] = (int64_t)i;
    } else if (strcasecmp(mode, "index") == 0) {
        IR_TRY(ir_const_ints(b, 1, "axes", axes, RN_MAX_RANK, &n));
    } else {
        return ir_error(b, RN_PARSE_ERROR, "unknown mode '%s'", mode);
    }
    graph_value *x = in(b, 0), *y = out0(b);
    if (n == 0)
        return ir_node(b, "Identity", 16, 1, &x, 1, &y, NULL);
    int64_t starts[RN_MAX_RANK], ends[RN_MAX_RANK], steps[RN_MAX_RANK];
    for (int i = 0; i < n; i++) {
        starts[i] = -1;
        ends[i] = INT64_MIN;
        steps[i] = -1;
    }
    graph_value *ins[5] = {x};
    IR_TRY(ir_const_i64(b, starts, n, false, &ins[1]));
    IR_TRY(ir_const_i64(b, ends, n, false, &ins[2]));
    IR_TRY(ir_const_i64(b, axes, n, false, &ins[3]));
    IR_TRY(ir_const_i64(b, steps, n, false, &ins[4]));
    return ir_node(b, "Slice", 13, 5, ins, 1, &y, NULL);
}

/* An op ONNX has with the same inputs and no attributes (Identity). */
static rn_status map_same(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    graph_value *x = in(b, 0), *y = out0(b);
    return ir_node(b, b->op->onnx, b->op->opset, 1, &x, 1, &y, NULL);
}

/* GatherND (opset8: batch dims kept in the output, as ONNX's; opset5
 * merges them, the same for batch_dims 0 and 1). */
static rn_status map_gather_nd(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    int64_t batch_dims;
    IR_TRY(ir_data_int(b, "batch_dims", 0, &batch_dims));
    if (ir_layer_opset(b) < 8 && batch_dims > 1)
        return ir_error(b, RN_UNSUPPORTED, "GatherND of opset5 with batch_dims %lld",
                        (long long)batch_dims);
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "GatherND", 13, 2, xs, 1, &y, &n));
    return ir_attr_int(n, "batch_dims", batch_dims);
}

/* GatherElements (opset6): axis as ONNX's. */
static rn_status map_gather_elements(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    int64_t axis;
    IR_TRY(ir_data_int(b, "axis", 0, &axis));
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "GatherElements", 13, 2, xs, 1, &y, &n));
    return ir_attr_int(n, "axis", axis);
}

/* A scatter's reduction (none, sum, prod, min, max) as ONNX's; mean has no
 * ONNX form. */
static rn_status scatter_reduction(const ir_build *b, const char **onnx)
{
    const char *red = ir_data_str(b, "reduction", "none");
    *onnx = strcasecmp(red, "none") == 0   ? "none"
            : strcasecmp(red, "sum") == 0  ? "add"
            : strcasecmp(red, "prod") == 0 ? "mul"
            : strcasecmp(red, "min") == 0  ? "min"
            : strcasecmp(red, "max") == 0  ? "max"
                                           : NULL;
    if (*onnx == NULL)
        return ir_error(b, RN_UNSUPPORTED, "reduction '%s' is not supported", red);
    return RN_OK;
}

/* ScatterElementsUpdate (opset3; opset12 adds reduction and use_init_val):
 * ScatterElements with the constant axis; reduction sum/prod/min/max ->
 * add/mul/min/max; mean and use_init_val false have no ONNX form. */
static rn_status map_scatter_elements(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 4, 4, 1));
    int64_t axis;
    int n_axis;
    IR_TRY(ir_const_ints(b, 3, "axis", &axis, 1, &n_axis));
    if (n_axis != 1)
        return ir_error(b, RN_PARSE_ERROR, "axis must hold one value");
    const char *onnx;
    IR_TRY(scatter_reduction(b, &onnx));
    bool init;
    IR_TRY(ir_data_bool(b, "use_init_val", true, &init));
    if (!init && strcmp(onnx, "none") != 0)
        return ir_error(b, RN_UNSUPPORTED, "use_init_val false is not supported");
    graph_value *xs[3] = {in(b, 0), NULL, in(b, 2)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "ScatterElements", 18, 3, xs, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "axis", axis));
    return ir_attr_str(n, "reduction", onnx);
}

/* ScatterNDUpdate (opset3; opset15 adds reduction) -> ScatterND. */
static rn_status map_scatter_nd(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 3, 1));
    const char *onnx;
    IR_TRY(scatter_reduction(b, &onnx));
    graph_value *xs[3] = {in(b, 0), NULL, in(b, 2)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "ScatterND", 18, 3, xs, 1, &y, &n));
    return ir_attr_str(n, "reduction", onnx);
}

/* NonZero (opset3): int64 indices, cast to output_type i32. */
static rn_status map_non_zero(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    rn_element_type t = ir_element_type(ir_data_str(b, "output_type", "i64"));
    if (t != RN_I64 && t != RN_I32)
        return ir_error(b, RN_UNSUPPORTED, "output_type is not supported (i32, i64)");
    graph_value *x = in(b, 0), *y = out0(b), *nz;
    if (t == RN_I64)
        return ir_node(b, "NonZero", 13, 1, &x, 1, &y, NULL);
    IR_TRY(ir_node1(b, "NonZero", 13, 1, &x, &nz, NULL));
    graph_node *c;
    IR_TRY(ir_node(b, "Cast", 13, 1, &nz, 1, &y, &c));
    return ir_attr_int(c, "to", t);
}

/* CumSum (opset3): the axis input (0 when absent), exclusive and reverse
 * as ONNX's. */
static rn_status map_cumsum(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 2, 1));
    bool exclusive, reverse;
    IR_TRY(ir_data_bool(b, "exclusive", false, &exclusive));
    IR_TRY(ir_data_bool(b, "reverse", false, &reverse));
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    if (b->layer->n_in == 2) {
        IR_TRY(ir_as_i64(b, 1, &xs[1]));
    } else {
        int64_t zero = 0;
        IR_TRY(ir_const_i64(b, &zero, 1, true, &xs[1]));
    }
    graph_node *n;
    IR_TRY(ir_node(b, "CumSum", 14, 2, xs, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "exclusive", exclusive));
    return ir_attr_int(n, "reverse", reverse);
}

/* OneHot (opset1): indices, depth, on_value, off_value -> ONNX's OneHot
 * with values [off, on]. */
static rn_status map_one_hot(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 4, 4, 1));
    int64_t axis;
    IR_TRY(ir_data_int(b, "axis", -1, &axis));
    graph_value *vals[2], *shape, *values, *ins[3] = {in(b, 0)}, *y = out0(b);
    int64_t one = 1;
    IR_TRY(ir_const_i64(b, &one, 1, false, &shape));
    for (int i = 0; i < 2; i++) {
        graph_value *rs[2] = {in(b, 3 - i), shape};
        IR_TRY(ir_node1(b, "Reshape", 14, 2, rs, &vals[i], NULL));
    }
    graph_node *n;
    IR_TRY(ir_node1(b, "Concat", 13, 2, vals, &values, &n));
    IR_TRY(ir_attr_int(n, "axis", 0));
    ins[1] = in(b, 1);
    ins[2] = values;
    IR_TRY(ir_node(b, "OneHot", 11, 3, ins, 1, &y, &n));
    return ir_attr_int(n, "axis", axis);
}

/* ShapeOf: Shape (int64), then a Cast when output_type is i32. */
static rn_status map_shape_of(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    const char *type = ir_data_str(b, "output_type", "i64");
    rn_element_type t = ir_element_type(type);
    if (t != RN_I64 && t != RN_I32)
        return ir_error(b, RN_UNSUPPORTED, "output_type '%s' is not supported (i32, i64)", type);
    graph_value *x = in(b, 0), *y = out0(b), *s;
    if (t == RN_I64)
        return ir_node(b, "Shape", 15, 1, &x, 1, &y, NULL);
    IR_TRY(ir_node1(b, "Shape", 15, 1, &x, &s, NULL));
    graph_node *n;
    IR_TRY(ir_node(b, "Cast", 13, 1, &s, 1, &y, &n));
    return ir_attr_int(n, "to", RN_I32);
}

/* Broadcast in numpy or bidirectional mode: Expand. */
static rn_status map_broadcast(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 3, 1));
    const char *mode = ir_data_str(b, "mode", "numpy");
    if (strcasecmp(mode, "numpy") != 0 && strcasecmp(mode, "bidirectional") != 0)
        return ir_error(b, RN_UNSUPPORTED, "mode '%s' is not supported (numpy, bidirectional)",
                        mode);
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    return ir_node(b, "Expand", 13, 2, xs, 1, &y, NULL);
}

/* Slice (opset8: data, start, stop, step[, axes]) -> ONNX's order
 * (data, starts, ends, axes, steps). */
static rn_status map_slice(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 4, 5, 1));
    graph_value *xs[5] = {in(b, 0), NULL, NULL, NULL, NULL}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    IR_TRY(ir_as_i64(b, 2, &xs[2]));
    IR_TRY(ir_as_i64(b, 4 - 1, &xs[4]));
    if (b->layer->n_in == 5)
        IR_TRY(ir_as_i64(b, 4, &xs[3]));
    return ir_node(b, "Slice", 13, 5, xs, 1, &y, NULL);
}

/* StridedSlice with constant begin/end/strides: a Slice over the first
 * len(begin) axes, then a Squeeze of the shrunk ones. new_axis_mask and
 * ellipsis_mask are refused. A mask entry 1 means "ignore this bound". */
static rn_status map_strided_slice(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 4, 1));
    int64_t begin[RN_MAX_RANK], end[RN_MAX_RANK], stride[RN_MAX_RANK];
    int64_t bm[RN_MAX_RANK], em[RN_MAX_RANK], nm[RN_MAX_RANK], sm[RN_MAX_RANK], el[RN_MAX_RANK];
    int nb, ne, ns = -1, nbm, nem, nnm, nsm, nel;
    IR_TRY(ir_const_ints(b, 1, "begin", begin, RN_MAX_RANK, &nb));
    IR_TRY(ir_const_ints(b, 2, "end", end, RN_MAX_RANK, &ne));
    if (b->layer->n_in == 4)
        IR_TRY(ir_const_ints(b, 3, "strides", stride, RN_MAX_RANK, &ns));
    IR_TRY(ir_data_ints(b, "begin_mask", bm, RN_MAX_RANK, &nbm));
    IR_TRY(ir_data_ints(b, "end_mask", em, RN_MAX_RANK, &nem));
    IR_TRY(ir_data_ints(b, "new_axis_mask", nm, RN_MAX_RANK, &nnm));
    IR_TRY(ir_data_ints(b, "shrink_axis_mask", sm, RN_MAX_RANK, &nsm));
    IR_TRY(ir_data_ints(b, "ellipsis_mask", el, RN_MAX_RANK, &nel));
    if (nb != ne || (ns >= 0 && ns != nb))
        return ir_error(b, RN_PARSE_ERROR, "begin, end and strides differ in length");
    for (int i = 0; i < nnm; i++)
        if (nm[i] != 0)
            return ir_error(b, RN_UNSUPPORTED, "new_axis_mask is not supported");
    for (int i = 0; i < nel; i++)
        if (el[i] != 0)
            return ir_error(b, RN_UNSUPPORTED, "ellipsis_mask is not supported");
    int64_t axes[RN_MAX_RANK], squeeze[RN_MAX_RANK];
    int n_squeeze = 0;
    for (int i = 0; i < nb; i++) {
        int64_t s = ns >= 0 ? stride[i] : 1;
        if (s == 0)
            return ir_error(b, RN_PARSE_ERROR, "stride %d is 0", i);
        axes[i] = i;
        stride[i] = s;
        if (i < nsm && sm[i] != 0) {
            end[i] = begin[i] == -1 ? INT64_MAX : begin[i] + 1;
            stride[i] = 1;
            squeeze[n_squeeze++] = i;
            continue;
        }
        if (i < nbm && bm[i] != 0)
            begin[i] = s > 0 ? 0 : INT64_MAX;
        if (i < nem && em[i] != 0)
            end[i] = s > 0 ? INT64_MAX : INT64_MIN;
    }
    graph_value *xs[5] = {in(b, 0)}, *y = out0(b), *t;
    IR_TRY(ir_const_i64(b, begin, nb, false, &xs[1]));
    IR_TRY(ir_const_i64(b, end, nb, false, &xs[2]));
    IR_TRY(ir_const_i64(b, axes, nb, false, &xs[3]));
    IR_TRY(ir_const_i64(b, stride, nb, false, &xs[4]));
    if (n_squeeze == 0)
        return ir_node(b, "Slice", 13, 5, xs, 1, &y, NULL);
    IR_TRY(ir_node1(b, "Slice", 13, 5, xs, &t, NULL));
    graph_value *sq[2] = {t};
    IR_TRY(ir_const_i64(b, squeeze, n_squeeze, false, &sq[1]));
    return ir_node(b, "Squeeze", 13, 2, sq, 1, &y, NULL);
}

/* Split (num_splits) and VariadicSplit (split_lengths): ONNX's Split with
 * the sizes of the output ports along the constant axis. */
static rn_status map_split(ir_build *b)
{
    const ir_layer *l = b->layer;
    bool variadic = strcmp(l->type, "VariadicSplit") == 0;
    IR_TRY(ir_check_ports(b, variadic ? 3 : 2, variadic ? 3 : 2, l->n_out));
    if (l->n_out < 1 || l->n_out > 64)
        return ir_error(b, RN_UNSUPPORTED, "%d outputs (1 to 64 supported)", l->n_out);
    int64_t axis;
    int n_axis;
    IR_TRY(ir_const_ints(b, 1, "axis", &axis, 1, &n_axis));
    int rank = l->in[0].shape.rank;
    if (n_axis != 1 || rank < 0 || axis < -rank || axis >= rank)
        return ir_error(b, RN_PARSE_ERROR, "axis must be one value within the input's rank");
    if (axis < 0)
        axis += rank;
    int64_t sizes[64], lengths[64];
    int n_lengths = -1;
    /* VariadicSplit's constant split_lengths (-1: what the others leave),
     * where the output ports do not state their sizes. */
    if (variadic && l->in[2].value->constant != NULL) {
        IR_TRY(ir_const_ints(b, 2, "split_lengths", lengths, 64, &n_lengths));
        if (n_lengths != l->n_out)
            return ir_error(b, RN_PARSE_ERROR, "split_lengths has %d values for %d outputs",
                            n_lengths, l->n_out);
        int64_t known = 0, dim = l->in[0].shape.dims[axis];
        int open = -1;
        for (int i = 0; i < n_lengths; i++) {
            if (lengths[i] == -1 && open < 0)
                open = i;
            else if (lengths[i] >= 0 && lengths[i] <= ((int64_t)1 << 40))
                known += lengths[i]; /* at most 64 * 2^40: no overflow */
            else
                return ir_error(b, RN_PARSE_ERROR, "split_lengths holds %lld",
                                (long long)lengths[i]);
        }
        if (open >= 0)
            lengths[open] = dim == RN_DIM_DYNAMIC ? -1 : dim - known;
        if (open >= 0 && dim != RN_DIM_DYNAMIC && lengths[open] < 0)
            return ir_error(b, RN_PARSE_ERROR, "split_lengths add up to more than the dim %lld",
                            (long long)dim);
    }
    graph_value *xs[2] = {in(b, 0)}, *ys[64];
    /* Lengths known only at run time go to ONNX's Split as they are (a -1
     * among them is then an error of the run). */
    bool runtime = variadic && n_lengths < 0;
    for (int i = 0; i < l->n_out && !runtime; i++) {
        if (l->out[i].shape.rank == rank && l->out[i].shape.dims[axis] != RN_DIM_DYNAMIC)
            sizes[i] = l->out[i].shape.dims[axis];
        else if (n_lengths > i && lengths[i] >= 0)
            sizes[i] = lengths[i];
        else
            return ir_error(b, RN_UNSUPPORTED,
                            "output port %d needs a static size along axis "
                            "%lld",
                            l->out[i].id, (long long)axis);
    }
    if (runtime)
        IR_TRY(ir_as_i64(b, 2, &xs[1]));
    else
        IR_TRY(ir_const_i64(b, sizes, l->n_out, false, &xs[1]));
    for (int i = 0; i < l->n_out; i++)
        ys[i] = l->out[i].value;
    graph_node *n;
    IR_TRY(ir_node(b, "Split", 13, 2, xs, l->n_out, ys, &n));
    return ir_attr_int(n, "axis", axis);
}

/* Pad (data, pads_begin, pads_end[, pad_value]) -> Pad with the two pad
 * lists concatenated. */
static rn_status map_pad(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 3, 4, 1));
    const char *mode = ir_data_str(b, "pad_mode", "constant");
    if (strcasecmp(mode, "constant") != 0 && strcasecmp(mode, "edge") != 0 &&
        strcasecmp(mode, "reflect") != 0)
        return ir_error(b, RN_UNSUPPORTED,
                        "pad_mode '%s' is not supported (constant, edge, "
                        "reflect)",
                        mode);
    graph_value *pads[2], *xs[3] = {in(b, 0), NULL, NULL}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &pads[0]));
    IR_TRY(ir_as_i64(b, 2, &pads[1]));
    graph_node *n;
    IR_TRY(ir_node1(b, "Concat", 13, 2, pads, &xs[1], &n));
    IR_TRY(ir_attr_int(n, "axis", 0));
    int n_in = 2;
    if (b->layer->n_in == 4) {
        xs[2] = in(b, 3);
        n_in = 3;
    }
    IR_TRY(ir_node(b, "Pad", 18, n_in, xs, 1, &y, &n));
    char lower[16];
    size_t i = 0;
    for (; mode[i] != '\0' && i < sizeof lower - 1; i++)
        lower[i] = (char)(mode[i] | 0x20);
    lower[i] = '\0';
    return ir_attr_str(n, "mode", lower);
}

/* Tile: OpenVINO pads short repeats with leading 1s; ONNX wants one per
 * dim, so constant repeats are padded here. */
static rn_status map_tile(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    int rank = b->layer->in[0].shape.rank;
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    int64_t reps[RN_MAX_RANK];
    int n;
    if (b->layer->in[1].value->constant != NULL && rank >= 0) {
        IR_TRY(ir_const_ints(b, 1, "repeats", reps, RN_MAX_RANK, &n));
        if (n > rank)
            return ir_error(b, RN_UNSUPPORTED, "more repeats than dims");
        int64_t full[RN_MAX_RANK];
        for (int i = 0; i < rank; i++)
            full[i] = i < rank - n ? 1 : reps[i - (rank - n)];
        IR_TRY(ir_const_i64(b, full, rank, false, &xs[1]));
    } else {
        IR_TRY(ir_as_i64(b, 1, &xs[1]));
    }
    return ir_node(b, "Tile", 13, 2, xs, 1, &y, NULL);
}

/* DepthToSpace: blocks_first is ONNX's DCR, depth_first its CRD. */
static rn_status map_depth_to_space(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    int64_t block;
    IR_TRY(ir_data_int(b, "block_size", 1, &block));
    const char *mode = ir_data_str(b, "mode", "blocks_first");
    const char *onnx = strcasecmp(mode, "blocks_first") == 0  ? "DCR"
                       : strcasecmp(mode, "depth_first") == 0 ? "CRD"
                                                              : NULL;
    if (onnx == NULL)
        return ir_error(b, RN_PARSE_ERROR, "unknown mode '%s'", mode);
    graph_value *x = in(b, 0), *y = out0(b);
    graph_node *n;
    IR_TRY(ir_node(b, "DepthToSpace", 13, 1, &x, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "blocksize", block));
    return ir_attr_str(n, "mode", onnx);
}

/* SpaceToDepth: blocks_first is ONNX's; depth_first orders the new
 * channels C-major, so ONNX's result is regrouped (static shapes). */
static rn_status map_space_to_depth(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 1, 1));
    int64_t block;
    IR_TRY(ir_data_int(b, "block_size", 1, &block));
    const char *mode = ir_data_str(b, "mode", "blocks_first");
    bool depth_first = strcasecmp(mode, "depth_first") == 0;
    if (!depth_first && strcasecmp(mode, "blocks_first") != 0)
        return ir_error(b, RN_PARSE_ERROR, "unknown mode '%s'", mode);
    graph_value *x = in(b, 0), *y = out0(b), *t;
    graph_node *n;
    const graph_shape *os = &b->layer->out[0].shape;
    if (!depth_first) {
        IR_TRY(ir_node(b, "SpaceToDepth", 13, 1, &x, 1, &y, &n));
        return ir_attr_int(n, "blocksize", block);
    }
    if (os->rank != 4 || !graph_shape_is_static(os) || block <= 0 ||
        os->dims[1] % (block * block) != 0)
        return ir_error(b, RN_UNSUPPORTED, "depth_first needs a static 4-D output");
    IR_TRY(ir_node1(b, "SpaceToDepth", 13, 1, &x, &t, &n));
    IR_TRY(ir_attr_int(n, "blocksize", block));
    int64_t c = os->dims[1] / (block * block);
    int64_t split[5] = {os->dims[0], block * block, c, os->dims[2], os->dims[3]};
    int64_t perm[5] = {0, 2, 1, 3, 4};
    graph_value *rs[2] = {t}, *u, *v;
    IR_TRY(ir_const_i64(b, split, 5, false, &rs[1]));
    IR_TRY(ir_node1(b, "Reshape", 14, 2, rs, &u, NULL));
    IR_TRY(ir_node1(b, "Transpose", 13, 1, &u, &v, &n));
    IR_TRY(ir_attr_ints(n, "perm", perm, 5));
    graph_value *back[2] = {v};
    IR_TRY(ir_const_i64(b, os->dims, 4, false, &back[1]));
    return ir_node(b, "Reshape", 14, 2, back, 1, &y, NULL);
}

/* ReverseSequence (opset1): seq_axis and batch_axis -> ONNX's time_axis
 * and batch_axis (which take 0 and 1 only), lengths as int64. */
static rn_status map_reverse_sequence(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    int64_t batch, seq;
    IR_TRY(ir_data_int(b, "batch_axis", 0, &batch));
    IR_TRY(ir_data_int(b, "seq_axis", 1, &seq));
    int rank = b->layer->in[0].shape.rank;
    if (batch < 0)
        batch += rank;
    if (seq < 0)
        seq += rank;
    if (!((batch == 0 && seq == 1) || (batch == 1 && seq == 0)))
        return ir_error(b, RN_UNSUPPORTED, "batch_axis %lld and seq_axis %lld (0 and 1 only)",
                        (long long)batch, (long long)seq);
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, "ReverseSequence", 10, 2, xs, 1, &y, &n));
    IR_TRY(ir_attr_int(n, "batch_axis", batch));
    return ir_attr_int(n, "time_axis", seq);
}

/* Reduce* (data, axes; keep_dims): opset-18 reductions with axes inputs. */
static rn_status map_reduce(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 2, 2, 1));
    bool keep;
    IR_TRY(ir_data_bool(b, "keep_dims", false, &keep));
    graph_value *xs[2] = {in(b, 0)}, *y = out0(b);
    IR_TRY(ir_as_i64(b, 1, &xs[1]));
    graph_node *n;
    IR_TRY(ir_node(b, b->op->onnx, 18, 2, xs, 1, &y, &n));
    return ir_attr_int(n, "keepdims", keep ? 1 : 0);
}

/* Einsum(equation) over any number of inputs. */
static rn_status map_einsum(ir_build *b)
{
    IR_TRY(ir_check_ports(b, 1, 64, 1));
    const char *eq = ir_data_str(b, "equation", NULL);
    if (eq == NULL)
        return ir_error(b, RN_PARSE_ERROR, "has no equation");
    graph_value *xs[64], *y = out0(b);
    for (int i = 0; i < b->layer->n_in; i++)
        xs[i] = in(b, i);
    graph_node *n;
    IR_TRY(ir_node(b, "Einsum", 12, b->layer->n_in, xs, 1, &y, &n));
    return ir_attr_str(n, "equation", eq);
}

#define REDUCE(type, onnx)                                                                         \
    {                                                                                              \
        type, map_reduce, onnx, 18                                                                 \
    }

const ir_op ir_ops_movement[] = {
    {"Concat", map_concat, NULL, 0},
    {"Reshape", map_reshape, NULL, 0},
    {"Transpose", map_transpose, NULL, 0},
    {"Squeeze", map_squeeze, NULL, 0},
    {"Unsqueeze", map_squeeze, NULL, 0},
    {"ShuffleChannels", map_shuffle_channels, NULL, 0},
    {"Gather", map_gather, NULL, 0},
    {"ShapeOf", map_shape_of, NULL, 0},
    {"Range", map_range, NULL, 0},
    {"TopK", map_topk, NULL, 0},
    {"Reverse", map_reverse, NULL, 0},
    {"Identity", map_same, "Identity", 16},
    {"GatherND", map_gather_nd, NULL, 0},
    {"GatherElements", map_gather_elements, NULL, 0},
    {"ScatterElementsUpdate", map_scatter_elements, NULL, 0},
    {"ScatterNDUpdate", map_scatter_nd, NULL, 0},
    {"NonZero", map_non_zero, NULL, 0},
    {"CumSum", map_cumsum, NULL, 0},
    {"OneHot", map_one_hot, NULL, 0},
    {"Broadcast", map_broadcast, NULL, 0},
    {"Slice", map_slice, NULL, 0},
    {"StridedSlice", map_strided_slice, NULL, 0},
    {"Split", map_split, NULL, 0},
    {"VariadicSplit", map_split, NULL, 0},
    {"Pad", map_pad, NULL, 0},
    {"Tile", map_tile, NULL, 0},
    {"DepthToSpace", map_depth_to_space, NULL, 0},
    {"SpaceToDepth", map_space_to_depth, NULL, 0},
    {"ReverseSequence", map_reverse_sequence, NULL, 0},
    {"Einsum", map_einsum, NULL, 0},
    REDUCE("ReduceMean", "ReduceMean"),
    REDUCE("ReduceSum", "ReduceSum"),
    REDUCE("ReduceMax", "ReduceMax"),
    REDUCE("ReduceMin", "ReduceMin"),
    REDUCE("ReduceProd", "ReduceProd"),
    REDUCE("ReduceL1", "ReduceL1"),
    REDUCE("ReduceL2", "ReduceL2"),
    {NULL, NULL, NULL, 0},
};
