/* Sliding-window attributes (graph/ops/attr_parse.h): read once for the
 * schemas of Conv, ConvTranspose, DeformConv and the pools and for the
 * kernels that run them. */
#include <string.h>

#include "graph/ops/attr_parse.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

rn_status graph_window_ints(const graph_node *node, const char *name, int n, int64_t dflt,
                            int64_t min, int64_t *dst)
{
    const int64_t *vals;
    int count = graph_node_attr_ints(node, name, &vals);
    if (count <= 0) {
        for (int i = 0; i < n; i++)
            dst[i] = dflt;
        return RN_OK;
    }
    if (count != n)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute %s has %d values; expected %d",
                            NODE_ARGS(node), name, count, n);
    for (int i = 0; i < n; i++) {
        if (vals[i] < min)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute %s[%d] is %lld (< %lld)",
                                NODE_ARGS(node), name, i, (long long)vals[i], (long long)min);
        dst[i] = vals[i];
    }
    return RN_OK;
}

static rn_status window_auto_pad(const graph_node *node, graph_auto_pad *out)
{
    static const struct {
        const char *name;
        graph_auto_pad mode;
    } modes[] = {
        {"NOTSET", GRAPH_AUTO_PAD_NOTSET},
        {"VALID", GRAPH_AUTO_PAD_VALID},
        {"SAME_UPPER", GRAPH_AUTO_PAD_SAME_UPPER},
        {"SAME_LOWER", GRAPH_AUTO_PAD_SAME_LOWER},
    };
    /* The attribute, else the schema's default; an op without auto_pad
     * (MaxUnpool) has explicit pads. */
    const char *ap = graph_node_attr_string(node, "auto_pad", NULL);
    if (ap == NULL && graph_node_attr_has_default(node, "auto_pad"))
        ap = graph_node_attr_string_or_default(node, "auto_pad");
    if (ap == NULL) {
        *out = GRAPH_AUTO_PAD_NOTSET;
        return RN_OK;
    }
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(ap, modes[i].name) == 0) {
            *out = modes[i].mode;
            return RN_OK;
        }
    }
    return rn_set_error(RN_INVALID_ARG,
                        NODE_FMT "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER",
                        NODE_ARGS(node), ap);
}

/* kernel_shape, or the weight's dims standing in for it. */
static rn_status window_kernel(const graph_node *node, const int64_t *w_kernel,
                               bool kernel_required, graph_window *w)
{
    const int64_t *ks;
    if (graph_node_attr_ints(node, "kernel_shape", &ks) > 0) {
        rn_status st = graph_window_ints(node, "kernel_shape", w->n, 1, 1, w->kernel);
        if (st != RN_OK)
            return st;
        w->kernel_known = true;
        for (int i = 0; w_kernel != NULL && i < w->n; i++)
            if (w_kernel[i] >= 0 && w_kernel[i] != w->kernel[i])
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    NODE_FMT "kernel_shape[%d] is %lld but the weight W has %lld",
                                    NODE_ARGS(node), i, (long long)w->kernel[i],
                                    (long long)w_kernel[i]);
    } else if (kernel_required) {
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute kernel_shape is required",
                            NODE_ARGS(node));
    } else if (w_kernel != NULL) {
        w->kernel_known = true;
        for (int i = 0; i < w->n; i++) {
            w->kernel[i] = w_kernel[i];
            if (w_kernel[i] < 0)
                w->kernel_known = false;
        }
    }
    return RN_OK;
}

rn_status graph_window_read(const graph_node *node, int n, const int64_t *w_kernel,
                            bool kernel_required, graph_window *w)
{
    if (n < 0 || n > RN_MAX_RANK - 2)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "%d spatial dims; at most %d supported",
                            NODE_ARGS(node), n, RN_MAX_RANK - 2);
    memset(w, 0, sizeof *w);
    w->n = n;
    rn_status st = window_auto_pad(node, &w->auto_pad);
    if (st != RN_OK)
        return st;
    /* Conv-like ops have no ceil_mode: their windows never round up. */
    int64_t ceil_mode = graph_node_attr_has_default(node, "ceil_mode")
                            ? graph_node_attr_int_or_default(node, "ceil_mode")
                            : 0;
    if (ceil_mode != 0 && ceil_mode != 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "ceil_mode is %lld; expected 0 or 1",
                            NODE_ARGS(node), (long long)ceil_mode);
    w->ceil_mode = ceil_mode == 1;
    const int64_t *pads;
    w->pads_given = graph_node_attr_ints(node, "pads", &pads) > 0;
    if ((st = graph_window_ints(node, "strides", n, 1, 1, w->stride)) != RN_OK ||
        (st = graph_window_ints(node, "dilations", n, 1, 1, w->dilation)) != RN_OK ||
        (st = graph_window_ints(node, "pads", 2 * n, 0, 0, w->pads)) != RN_OK)
        return st;
    return window_kernel(node, w_kernel, kernel_required, w);
}

rn_status graph_window_out(const graph_node *node, const graph_window *w, int i, int64_t in,
                           int64_t *out)
{
    *out = RN_DIM_DYNAMIC;
    if (in < 0)
        return RN_OK;
    int64_t s = w->stride[i];
    if (w->auto_pad == GRAPH_AUTO_PAD_SAME_UPPER || w->auto_pad == GRAPH_AUTO_PAD_SAME_LOWER) {
        *out = in / s + (in % s != 0);
        return RN_OK;
    }
    if (!w->kernel_known)
        return RN_OK;
    int64_t pb = w->auto_pad == GRAPH_AUTO_PAD_VALID ? 0 : w->pads[i];
    int64_t pe = w->auto_pad == GRAPH_AUTO_PAD_VALID ? 0 : w->pads[w->n + i];
    /* Attributes come from the file: sizes that overflow are refused. */
    int64_t span, room;
    if (__builtin_mul_overflow(w->kernel[i] - 1, w->dilation[i], &span) ||
        __builtin_add_overflow(span, 1, &span) || __builtin_add_overflow(in, pb, &room) ||
        __builtin_add_overflow(room, pe, &room) || __builtin_sub_overflow(room, span, &room))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "spatial dim %d: kernel, dilation and pads overflow 64 bits",
                            NODE_ARGS(node), i);
    if (room < 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "spatial dim %d is %lld with pads %lld+%lld, smaller than "
                                     "the dilated kernel %lld",
                            NODE_ARGS(node), i, (long long)in, (long long)pb, (long long)pe,
                            (long long)span);
    int64_t o;
    if (w->ceil_mode) {
        o = room / s + (room % s != 0) + 1;
        /* (o - 1) * s >= in + pb, without overflow (in + pb fits: above). */
        int64_t start = in + pb;
        if (start == 0 || o - 1 > (start - 1) / s)
            o--;
    } else {
        o = room / s + 1;
    }
    *out = o;
    return RN_OK;
}

void graph_window_pads(const graph_window *w, int i, int64_t in, int64_t out, int64_t *begin,
                       int64_t *end)
{
    switch (w->auto_pad) {
    case GRAPH_AUTO_PAD_SAME_UPPER:
    case GRAPH_AUTO_PAD_SAME_LOWER: {
        int64_t span = (w->kernel[i] - 1) * w->dilation[i] + 1;
        int64_t total = (out - 1) * w->stride[i] + span - in;
        if (total < 0)
            total = 0;
        *begin = w->auto_pad == GRAPH_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        *end = total - *begin;
        break;
    }
    case GRAPH_AUTO_PAD_VALID:
        *begin = *end = 0;
        break;
    default:
        *begin = w->pads[i];
        *end = w->pads[w->n + i];
        break;
    }
}

rn_status rn_node_window(const rn_node *node, int n, const int64_t *w_kernel, bool kernel_required,
                         rn_window *w)
{
    return graph_window_read(node, n, w_kernel, kernel_required, w);
}

void rn_window_pads(const rn_window *w, int i, int64_t in, int64_t out, int64_t *begin,
                    int64_t *end)
{
    graph_window_pads(w, i, in, out, begin, end);
}
