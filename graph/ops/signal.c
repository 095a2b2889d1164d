/* Op schemas of the signal family: DFT (opsets 17 and 20), STFT, the Hann,
 * Hamming and Blackman windows and MelWeightMatrix (opset 17).
 *
 * Complex tensors are real tensors with a trailing dim of 2 (real,
 * imaginary); a trailing dim of 1 holds a real signal. Output sizes that
 * depend on input values (dft_length, the window size, frame_step,
 * frame_length, num_mel_bins) are read when those values are known and stay
 * dynamic otherwise.
 */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

static bool is_int(rn_element_type t)
{
    return t == RN_I32 || t == RN_I64;
}

static rn_status want_type(const graph_node *node, const graph_port *in, int i, bool ok,
                           const char *what)
{
    if (ok || in[i].type == RN_UNDEFINED)
        return RN_OK;
    return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d has type %s, expected %s",
                        NODE_ARGS(node), i, rn_element_type_name(in[i].type), what);
}

/* Input i as a scalar: *known false while its value is not known; an error
 * when it holds more than one element. */
static rn_status scalar_int(const graph_node *node, const graph_port *in, int i, int64_t *v,
                            bool *known)
{
    *known = false;
    const graph_shape *s = &in[i].shape;
    if (s->rank >= 0 && graph_shape_count(s) >= 0 && graph_shape_count(s) != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input %d must be a scalar",
                            NODE_ARGS(node), i);
    if (in[i].data != NULL && graph_shape_count(s) == 1) {
        *v = graph_port_int(&in[i], 0);
        *known = true;
    }
    return RN_OK;
}

/* The output type of an op with an output_datatype attribute (default f32). */
static rn_status output_datatype(const graph_node *node, rn_element_type *out)
{
    int64_t t = graph_node_attr_int(node, "output_datatype", RN_F32);
    if (t <= 0 || t > 64 || !rn_element_type_is_valid((rn_element_type)t) || t == RN_STRING ||
        t == RN_BOOL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "output_datatype %lld is not a numeric type",
                            NODE_ARGS(node), (long long)t);
    *out = (rn_element_type)t;
    return RN_OK;
}

/* ---- DFT ---- */

static rn_status infer_dft(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_out;
    const graph_port *x = &in[0];
    rn_status st = want_type(node, in, 0, is_float(x->type), "a float type");
    if (st != RN_OK)
        return st;
    bool inverse = graph_node_attr_int(node, "inverse", 0) != 0;
    bool onesided = graph_node_attr_int(node, "onesided", 0) != 0;
    int64_t axis = node->opset >= 20 ? -2 : graph_node_attr_int(node, "axis", 1);
    bool axis_known = true;
    if (node->opset >= 20 && n_in > 2 && in[2].present) {
        if ((st = want_type(node, in, 2, is_int(in[2].type), "i32 or i64")) != RN_OK ||
            (st = scalar_int(node, in, 2, &axis, &axis_known)) != RN_OK)
            return st;
    }
    int64_t length = 0;
    bool length_known = false, has_length = n_in > 1 && in[1].present;
    if (has_length) {
        if ((st = want_type(node, in, 1, is_int(in[1].type), "i32 or i64")) != RN_OK ||
            (st = scalar_int(node, in, 1, &length, &length_known)) != RN_OK)
            return st;
        if (length_known && length < 1)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "dft_length is %lld; must be >= 1",
                                NODE_ARGS(node), (long long)length);
    }
    int r = x->shape.rank;
    out[0].type = x->type;
    if (r < 0) {
        out[0].shape.rank = -1;
        return RN_OK;
    }
    if (r < 2 ||
        (x->shape.dims[r - 1] >= 0 && x->shape.dims[r - 1] != 1 && x->shape.dims[r - 1] != 2))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input needs rank >= 2 and a last dim of 1 (real) or 2 "
                                     "(complex)",
                            NODE_ARGS(node));
    graph_shape y = x->shape;
    y.dims[r - 1] = inverse && onesided ? 1 : 2;
    if (!axis_known) {
        for (int d = 0; d < r - 1; d++)
            y.dims[d] = RN_DIM_DYNAMIC;
        out[0].shape = y;
        return RN_OK;
    }
    if (axis < -r || axis >= r - 1 || axis == -1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "axis %lld is not a signal axis of rank %d",
                            NODE_ARGS(node), (long long)axis, r);
    int ax = (int)(axis < 0 ? axis + r : axis);
    int64_t n = x->shape.dims[ax];
    if (!has_length)
        length = n < 0 ? RN_DIM_DYNAMIC : inverse && onesided ? 2 * (n - 1) : n;
    else if (!length_known)
        length = RN_DIM_DYNAMIC;
    if (length == 0 && !has_length)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "the signal axis %d has %lld elements",
                            NODE_ARGS(node), ax, (long long)n);
    y.dims[ax] = length < 0 ? RN_DIM_DYNAMIC : onesided && !inverse ? length / 2 + 1 : length;
    out[0].shape = y;
    return RN_OK;
}

/* ---- STFT ---- */

static rn_status infer_stft(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)n_out;
    const graph_port *x = &in[0];
    const graph_port *win = n_in > 2 && in[2].present ? &in[2] : NULL;
    rn_status st = want_type(node, in, 0, is_float(x->type), "a float type");
    if (st == RN_OK)
        st = want_type(node, in, 1, is_int(in[1].type), "i32 or i64");
    if (st == RN_OK && win != NULL)
        st = want_type(node, in, 2, win->type == x->type || x->type == RN_UNDEFINED,
                       "the signal's type");
    if (st == RN_OK && n_in > 3 && in[3].present)
        st = want_type(node, in, 3, is_int(in[3].type), "i32 or i64");
    if (st != RN_OK)
        return st;
    if (x->shape.rank >= 0 &&
        (x->shape.rank != 3 ||
         (x->shape.dims[2] >= 0 && x->shape.dims[2] != 1 && x->shape.dims[2] != 2)))
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "signal must be [batch, length, 1 or 2]",
                            NODE_ARGS(node));
    if (win != NULL && win->shape.rank >= 0 && win->shape.rank != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "window must be 1-D", NODE_ARGS(node));
    int64_t step = 0, flen = RN_DIM_DYNAMIC;
    bool step_known, flen_known = false;
    if ((st = scalar_int(node, in, 1, &step, &step_known)) != RN_OK)
        return st;
    if (step_known && step < 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "frame_step is %lld; must be >= 1",
                            NODE_ARGS(node), (long long)step);
    if (n_in > 3 && in[3].present) {
        if ((st = scalar_int(node, in, 3, &flen, &flen_known)) != RN_OK)
            return st;
        if (!flen_known)
            flen = RN_DIM_DYNAMIC;
    } else if (win != NULL) {
        flen = win->shape.rank == 1 ? win->shape.dims[0] : RN_DIM_DYNAMIC;
    } else {
        flen = x->shape.rank == 3 ? x->shape.dims[1] : RN_DIM_DYNAMIC;
    }
    int64_t len = x->shape.rank == 3 ? x->shape.dims[1] : RN_DIM_DYNAMIC;
    if (flen >= 0 && (flen < 1 || (len >= 0 && flen > len)))
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "frame_length %lld does not fit a signal of %lld samples",
                            NODE_ARGS(node), (long long)flen, (long long)len);
    if (win != NULL && win->shape.rank == 1 && win->shape.dims[0] >= 0 && flen >= 0 &&
        win->shape.dims[0] != flen)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "window has %lld elements but frame_length is %lld",
                            NODE_ARGS(node), (long long)win->shape.dims[0], (long long)flen);
    bool onesided = graph_node_attr_int(node, "onesided", 1) != 0;
    graph_shape y = {.rank = 4};
    y.dims[0] = x->shape.rank == 3 ? x->shape.dims[0] : RN_DIM_DYNAMIC;
    y.dims[1] = len >= 0 && flen >= 0 && step_known ? 1 + (len - flen) / step : RN_DIM_DYNAMIC;
    y.dims[2] = flen < 0 ? RN_DIM_DYNAMIC : onesided ? flen / 2 + 1 : flen;
    y.dims[3] = 2;
    out[0].type = x->type;
    out[0].shape = y;
    return RN_OK;
}

/* ---- windows ---- */

static rn_status infer_window(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    rn_status st = want_type(node, in, 0, is_int(in[0].type), "i32 or i64");
    rn_element_type type = RN_UNDEFINED;
    if (st == RN_OK)
        st = output_datatype(node, &type);
    int64_t size = 0;
    bool known;
    if (st == RN_OK)
        st = scalar_int(node, in, 0, &size, &known);
    if (st != RN_OK)
        return st;
    if (known && size < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "size is %lld", NODE_ARGS(node),
                            (long long)size);
    out[0].type = type;
    out[0].shape.rank = 1;
    out[0].shape.dims[0] = known ? size : RN_DIM_DYNAMIC;
    return RN_OK;
}

/* ---- MelWeightMatrix ---- */

static rn_status infer_mel(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_in, (void)n_out;
    rn_status st = RN_OK;
    for (int i = 0; st == RN_OK && i < 3; i++)
        st = want_type(node, in, i, is_int(in[i].type), "i32 or i64");
    for (int i = 3; st == RN_OK && i < 5; i++)
        st = want_type(node, in, i, is_float(in[i].type), "a float type");
    rn_element_type type = RN_UNDEFINED;
    if (st == RN_OK)
        st = output_datatype(node, &type);
    int64_t bins = 0, length = 0;
    bool bins_known, length_known;
    if (st == RN_OK)
        st = scalar_int(node, in, 0, &bins, &bins_known);
    if (st == RN_OK)
        st = scalar_int(node, in, 1, &length, &length_known);
    if (st != RN_OK)
        return st;
    if ((bins_known && bins < 1) || (length_known && length < 1))
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "num_mel_bins (%lld) and dft_length (%lld) must be >= 1",
                            NODE_ARGS(node), (long long)bins, (long long)length);
    out[0].type = type;
    out[0].shape.rank = 2;
    out[0].shape.dims[0] = length_known ? length / 2 + 1 : RN_DIM_DYNAMIC;
    out[0].shape.dims[1] = bins_known ? bins : RN_DIM_DYNAMIC;
    return RN_OK;
}

/* ---- the table ---- */

#define WINDOW_ATTRS                                                                               \
    {                                                                                              \
        GRAPH_OPTIONAL("output_datatype", INT), GRAPH_OPTIONAL("periodic", INT)                    \
    }

const graph_op_schema graph_ops_signal[] = {
    {"",
     "DFT",
     1,
     3,
     1,
     1,
     1u << 1 | 1u << 2,
     infer_dft,
     {GRAPH_OPTIONAL("axis", INT), GRAPH_OPTIONAL("inverse", INT),
      GRAPH_OPTIONAL("onesided", INT)}},
    {"", "STFT", 2, 4, 1, 1, 1u << 1 | 1u << 3, infer_stft, {GRAPH_OPTIONAL("onesided", INT)}},
    {"", "HannWindow", 1, 1, 1, 1, 1u << 0, infer_window, WINDOW_ATTRS},
    {"", "HammingWindow", 1, 1, 1, 1, 1u << 0, infer_window, WINDOW_ATTRS},
    {"", "BlackmanWindow", 1, 1, 1, 1, 1u << 0, infer_window, WINDOW_ATTRS},
    {"",
     "MelWeightMatrix",
     5,
     5,
     1,
     1,
     1u << 0 | 1u << 1,
     infer_mel,
     {GRAPH_OPTIONAL("output_datatype", INT)}},
    {0},
};
