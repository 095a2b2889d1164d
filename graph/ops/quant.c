/* Op schemas of the quant family: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger and
 * MatMulInteger (opsets 10 to 25).
 *
 * Scales and zero points come in three layouts, checked here against x:
 *   per tensor: one element (a scalar, or any shape of one element);
 *   per axis:   1-D of x's dim `axis` (opset 13+);
 *   blocked:    x's rank, x's dims except ceil(dim / block_size) along `axis`
 *               (opset 21+, attribute block_size > 0).
 * The convolution and matrix-product ops take their output shapes from the
 * Conv and MatMul schemas (same attributes, same geometry), asked with float
 * stand-ins for the integer inputs; only the output type is theirs.
 */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool is_float8(rn_element_type t)
{
    return t == RN_F8E4M3FN || t == RN_F8E4M3FNUZ || t == RN_F8E5M2 || t == RN_F8E5M2FNUZ;
}

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* What QuantizeLinear may produce and DequantizeLinear read (int4, int2 and
 * float4 have no element type in runnel yet). */
static bool is_quantized(rn_element_type t)
{
    return t == RN_U8 || t == RN_I8 || t == RN_U16 || t == RN_I16 || is_float8(t);
}

static rn_status want_type(const graph_node *node, const graph_port *in, int i, bool ok,
                           const char *what)
{
    if (ok || in[i].type == RN_UNDEFINED)
        return RN_OK;
    return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d has type %s, expected %s",
                        NODE_ARGS(node), i, rn_element_type_name(in[i].type), what);
}

static void set_out(graph_port *out, int n_out, int o, rn_element_type type,
                    const graph_shape *shape)
{
    if (o < n_out && out[o].present) {
        out[o].type = type;
        out[o].shape = *shape;
    }
}

/* Checks the shape of scale or zero point `p` (input i) against x for the
 * node's axis and block_size (see the top of the file). */
static rn_status check_quant_param(const graph_node *node, const graph_shape *x,
                                   const graph_port *p, int i)
{
    const graph_shape *s = &p->shape;
    int64_t block = graph_node_attr_int(node, "block_size", 0);
    if (block < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "block_size is %lld; must be >= 0",
                            NODE_ARGS(node), (long long)block);
    if (!p->present || s->rank < 0 || graph_shape_count(s) == 1)
        return RN_OK; /* per tensor, or not known yet */
    if (x->rank < 0)
        return RN_OK;
    int axis;
    rn_status st = graph_normalize_axis(node, graph_node_attr_int(node, "axis", 1), x->rank, &axis);
    if (st != RN_OK)
        return st;
    char a[128], b[128];
    if (block == 0) {
        if (s->rank != 1 || (s->dims[0] >= 0 && x->dims[axis] >= 0 && s->dims[0] != x->dims[axis]))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d has shape %s; expected one element or [%lld] "
                                         "(x %s along axis %d)",
                                NODE_ARGS(node), i, graph_shape_str(s, a, sizeof a),
                                (long long)x->dims[axis], graph_shape_str(x, b, sizeof b), axis);
        return RN_OK;
    }
    bool ok = s->rank == x->rank;
    for (int d = 0; ok && d < x->rank; d++) {
        int64_t want = x->dims[d];
        if (d == axis && want >= 0)
            want = (want + block - 1) / block;
        ok = want < 0 || s->dims[d] < 0 || s->dims[d] == want;
    }
    if (!ok)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input %d has shape %s; blocked quantization of x %s with "
                                     "block_size %lld along axis %d needs x's dims with "
                                     "ceil(dim / block_size) along the axis",
                            NODE_ARGS(node), i, graph_shape_str(s, a, sizeof a),
                            graph_shape_str(x, b, sizeof b), (long long)block, axis);
    return RN_OK;
}

/* ---- QuantizeLinear / DequantizeLinear ---- */

static rn_status infer_quantize(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    const graph_port *zp = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = want_type(node, in, 0, is_float(in[0].type) || in[0].type == RN_I32,
                             "f32, f16, bf16 or i32");
    if (st == RN_OK)
        st = want_type(node, in, 1, is_float(in[1].type), "a float type");
    if (st != RN_OK)
        return st;
    int64_t dtype = graph_node_attr_int(node, "output_dtype", 0);
    rn_element_type type = RN_U8;
    if (zp != NULL) {
        type = zp->type;
        if (dtype != 0 && type != RN_UNDEFINED && (int64_t)type != dtype)
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "output_dtype %lld differs from the zero point's type %s",
                                NODE_ARGS(node), (long long)dtype, rn_element_type_name(type));
    } else if (dtype != 0) {
        type = (rn_element_type)dtype;
    }
    if (type != RN_UNDEFINED && !is_quantized(type))
        return rn_set_error(dtype != 0 || zp ? RN_UNSUPPORTED : RN_TYPE_MISMATCH,
                            NODE_FMT "quantized type %s (%lld) is not supported", NODE_ARGS(node),
                            rn_element_type_name(type), (long long)(zp ? (int64_t)type : dtype));
    for (int i = 1; i < n_in && i < 3; i++)
        if ((st = check_quant_param(node, &in[0].shape, &in[i], i)) != RN_OK)
            return st;
    set_out(out, n_out, 0, type, &in[0].shape);
    return RN_OK;
}

static rn_status infer_dequantize(const graph_node *node, const graph_port *in, int n_in,
                                  graph_port *out, int n_out)
{
    const graph_port *zp = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = want_type(node, in, 0, is_quantized(in[0].type) || in[0].type == RN_I32,
                             "u8, i8, u16, i16, i32 or a float8 type");
    if (st == RN_OK)
        st = want_type(node, in, 1, is_float(in[1].type), "a float type");
    if (st != RN_OK)
        return st;
    if (zp != NULL && zp->type != RN_UNDEFINED && in[0].type != RN_UNDEFINED &&
        zp->type != in[0].type)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "x is %s but its zero point is %s",
                            NODE_ARGS(node), rn_element_type_name(in[0].type),
                            rn_element_type_name(zp->type));
    for (int i = 1; i < n_in && i < 3; i++)
        if ((st = check_quant_param(node, &in[0].shape, &in[i], i)) != RN_OK)
            return st;
    int64_t dtype = graph_node_attr_int(node, "output_dtype", 0);
    rn_element_type type = in[1].type;
    if (dtype != 0) {
        if (!is_float((rn_element_type)dtype))
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "output_dtype %lld is not a float type",
                                NODE_ARGS(node), (long long)dtype);
        type = (rn_element_type)dtype;
    }
    set_out(out, n_out, 0, type, &in[0].shape);
    return RN_OK;
}

static rn_status infer_dynamic_quantize(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    (void)n_in;
    rn_status st = want_type(node, in, 0, in[0].type == RN_F32, "f32");
    if (st != RN_OK)
        return st;
    graph_shape scalar = {.rank = 0};
    set_out(out, n_out, 0, RN_U8, &in[0].shape);
    set_out(out, n_out, 1, RN_F32, &scalar);
    set_out(out, n_out, 2, RN_U8, &scalar);
    return RN_OK;
}

/* ---- the integer convolutions and matrix products ---- */

/* Runs the float schema `op` (Conv or MatMul) over ports a and b (and the
 * bias when given) typed f32, for the output shape only. */
static rn_status infer_like(const graph_node *node, const char *op, const graph_port *a,
                            const graph_port *b, graph_shape *shape)
{
    const graph_op_schema *s = graph_op_find("", op);
    if (s == NULL || s->infer == NULL)
        return rn_set_error(RN_INTERNAL, NODE_FMT "no %s schema to infer from", NODE_ARGS(node),
                            op);
    graph_port in[2] = {*a, *b};
    graph_port out[1] = {{.present = true, .shape = {.rank = -1}}};
    in[0].type = in[1].type = RN_F32;
    in[0].data = in[1].data = NULL;
    rn_status st = s->infer(node, in, 2, out, 1);
    if (st == RN_OK)
        *shape = out[0].shape;
    return st;
}

static bool is_int8(rn_element_type t)
{
    return t == RN_U8 || t == RN_I8;
}

/* Zero point input i, when present, must have the type of input `of`. */
static rn_status zp_matches(const graph_node *node, const graph_port *in, int n_in, int i, int of)
{
    if (i >= n_in || !in[i].present || in[i].type == RN_UNDEFINED || in[of].type == RN_UNDEFINED ||
        in[i].type == in[of].type)
        return RN_OK;
    return rn_set_error(RN_TYPE_MISMATCH,
                        NODE_FMT "input %d is %s but its zero point (input %d) is %s",
                        NODE_ARGS(node), of, rn_element_type_name(in[of].type), i,
                        rn_element_type_name(in[i].type));
}

/* ConvInteger(x, w, x_zero_point, w_zero_point) -> i32 */
static rn_status infer_conv_integer(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    rn_status st = want_type(node, in, 0, is_int8(in[0].type), "u8 or i8");
    if (st == RN_OK)
        st = want_type(node, in, 1, is_int8(in[1].type), "u8 or i8");
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 2, 0);
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 3, 1);
    graph_shape y;
    if (st == RN_OK)
        st = infer_like(node, "Conv", &in[0], &in[1], &y);
    if (st == RN_OK)
        set_out(out, n_out, 0, RN_I32, &y);
    return st;
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) -> y_zp's type */
static rn_status infer_qlinear_conv(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    rn_status st = want_type(node, in, 0, is_int8(in[0].type), "u8 or i8");
    if (st == RN_OK)
        st = want_type(node, in, 3, is_int8(in[3].type), "u8 or i8");
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 2, 0);
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 5, 3);
    static const int scales[] = {1, 4, 6};
    for (int k = 0; st == RN_OK && k < 3; k++)
        st = want_type(node, in, scales[k], in[scales[k]].type == RN_F32, "f32");
    if (st == RN_OK && n_in > 8 && in[8].present)
        st = want_type(node, in, 8, in[8].type == RN_I32, "i32");
    graph_shape y;
    if (st == RN_OK)
        st = infer_like(node, "Conv", &in[0], &in[3], &y);
    if (st != RN_OK)
        return st;
    rn_element_type type = n_in > 7 && in[7].present ? in[7].type : in[0].type;
    set_out(out, n_out, 0, type, &y);
    return RN_OK;
}

/* MatMulInteger(A, B, a_zero_point, b_zero_point) -> i32 */
static rn_status infer_matmul_integer(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    rn_status st = want_type(node, in, 0, is_int8(in[0].type), "u8 or i8");
    if (st == RN_OK)
        st = want_type(node, in, 1, is_int8(in[1].type), "u8 or i8");
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 2, 0);
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 3, 1);
    graph_shape y;
    if (st == RN_OK)
        st = infer_like(node, "MatMul", &in[0], &in[1], &y);
    if (st == RN_OK)
        set_out(out, n_out, 0, RN_I32, &y);
    return st;
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y_zp's type */
static rn_status infer_qlinear_matmul(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    rn_status st = want_type(node, in, 0, is_int8(in[0].type), "u8 or i8");
    if (st == RN_OK)
        st = want_type(node, in, 3, is_int8(in[3].type), "u8 or i8");
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 2, 0);
    if (st == RN_OK)
        st = zp_matches(node, in, n_in, 5, 3);
    static const int scales[] = {1, 4, 6};
    for (int k = 0; st == RN_OK && k < 3; k++)
        st = want_type(node, in, scales[k], is_float(in[scales[k]].type), "a float type");
    graph_shape y;
    if (st == RN_OK)
        st = infer_like(node, "MatMul", &in[0], &in[3], &y);
    if (st != RN_OK)
        return st;
    rn_element_type type = n_in > 7 && in[7].present ? in[7].type : in[0].type;
    set_out(out, n_out, 0, type, &y);
    return RN_OK;
}

/* runnel's QLinearFusedConv, QLinearFusedGemm and QLinearFusedMatMul (transforms/fuse_qdq.c
 * makes them from QDQ models): x, x_scale, x_zero_point, w, w_scale,
 * w_zero_point, B (f32), mid_scale, mid_zero_point, sum, sum_scale,
 * sum_zero_point, y_scale, y_zero_point. The output has Conv's (Gemm's,
 * MatMul's) shape and y_zero_point's type (f32 without y_scale). sum is
 * u8/i8 with its scale, or f32 without (transforms/fuse_qop.c: the operator
 * format's f32 residual). */
static rn_status infer_qlinear_fused(const graph_node *node, const graph_port *in, int n_in,
                                     graph_port *out, int n_out, const char *like)
{
    rn_status st = want_type(node, in, 0, is_int8(in[0].type), "u8 or i8");
    if (st == RN_OK)
        st = want_type(node, in, 3, is_int8(in[3].type), "u8 or i8");
    /* sum: quantized with its scale, or f32 (fuse_qop's residual) without one. */
    bool sum_scaled = n_in > 10 && in[10].present;
    if (st == RN_OK && n_in > 9 && in[9].present)
        st = want_type(node, in, 9, sum_scaled ? is_int8(in[9].type) : in[9].type == RN_F32,
                       sum_scaled ? "u8 or i8 (with sum_scale)" : "f32 (without sum_scale)");
    static const int scales[] = {1, 4, 7, 10, 12};
    for (int k = 0; st == RN_OK && k < 5; k++)
        if (scales[k] < n_in && in[scales[k]].present)
            st = want_type(node, in, scales[k], in[scales[k]].type == RN_F32, "f32");
    graph_shape y;
    if (st == RN_OK)
        st = infer_like(node, like, &in[0], &in[3], &y);
    if (st != RN_OK)
        return st;
    bool quantized = n_in > 13 && in[12].present && in[13].present;
    set_out(out, n_out, 0, quantized ? in[13].type : RN_F32, &y);
    return RN_OK;
}

static rn_status infer_qlinear_fused_conv(const graph_node *node, const graph_port *in, int n_in,
                                          graph_port *out, int n_out)
{
    return infer_qlinear_fused(node, in, n_in, out, n_out, "Conv");
}

static rn_status infer_qlinear_fused_matmul(const graph_node *node, const graph_port *in, int n_in,
                                            graph_port *out, int n_out)
{
    return infer_qlinear_fused(node, in, n_in, out, n_out, "MatMul");
}

static rn_status infer_qlinear_fused_gemm(const graph_node *node, const graph_port *in, int n_in,
                                          graph_port *out, int n_out)
{
    return infer_qlinear_fused(node, in, n_in, out, n_out, "Gemm");
}

/* ---- the table ---- */

#define CONV_ATTRS                                                                                 \
    GRAPH_DEFAULT_STRING("auto_pad", "NOTSET"), GRAPH_OPTIONAL("kernel_shape", INTS),              \
        GRAPH_OPTIONAL("pads", INTS), GRAPH_OPTIONAL("strides", INTS),                             \
        GRAPH_OPTIONAL("dilations", INTS), GRAPH_DEFAULT_INT("group", 1),                          \
    {                                                                                              \
        NULL                                                                                       \
    }

const graph_op_schema graph_ops_quant[] = {
    {"",
     "QuantizeLinear",
     2,
     3,
     1,
     1,
     0,
     infer_quantize,
     {GRAPH_OPTIONAL("axis", INT), GRAPH_OPTIONAL("saturate", INT),
      GRAPH_OPTIONAL("block_size", INT), GRAPH_OPTIONAL("output_dtype", INT),
      GRAPH_OPTIONAL("precision", INT)}},
    {"",
     "DequantizeLinear",
     2,
     3,
     1,
     1,
     0,
     infer_dequantize,
     {GRAPH_OPTIONAL("axis", INT), GRAPH_OPTIONAL("block_size", INT),
      GRAPH_OPTIONAL("output_dtype", INT)}},
    {"", "DynamicQuantizeLinear", 1, 1, 3, 3, 0, infer_dynamic_quantize, {{NULL}}},
    {"", "ConvInteger", 2, 4, 1, 1, 0, infer_conv_integer, {CONV_ATTRS}},
    {"", "QLinearConv", 8, 9, 1, 1, 0, infer_qlinear_conv, {CONV_ATTRS}},
    {"", "MatMulInteger", 2, 4, 1, 1, 0, infer_matmul_integer, {{NULL}}},
    {"", "QLinearMatMul", 8, 8, 1, 1, 0, infer_qlinear_matmul, {{NULL}}},
    {"runnel",
     "QLinearFusedConv",
     6,
     14,
     1,
     1,
     0,
     infer_qlinear_fused_conv,
     {GRAPH_DEFAULT_STRING("auto_pad", "NOTSET"), GRAPH_OPTIONAL("kernel_shape", INTS),
      GRAPH_OPTIONAL("pads", INTS), GRAPH_OPTIONAL("strides", INTS),
      GRAPH_OPTIONAL("dilations", INTS), GRAPH_DEFAULT_INT("group", 1),
      GRAPH_OPTIONAL("activation", STRING), GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {"runnel",
     "QLinearFusedMatMul",
     6,
     14,
     1,
     1,
     0,
     infer_qlinear_fused_matmul,
     {GRAPH_OPTIONAL("activation", STRING), GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {"runnel",
     "QLinearFusedGemm",
     6,
     14,
     1,
     1,
     0,
     infer_qlinear_fused_gemm,
     {GRAPH_DEFAULT_FLOAT("alpha", 1.0f), GRAPH_DEFAULT_FLOAT("beta", 1.0f),
      GRAPH_DEFAULT_INT("transA", 0), GRAPH_DEFAULT_INT("transB", 0),
      GRAPH_OPTIONAL("activation", STRING), GRAPH_OPTIONAL("activation_params", FLOATS)}},
    {0},
};
