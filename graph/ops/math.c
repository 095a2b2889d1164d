/* Op schemas of the math family: Einsum (opset 12) and Det (opset 11).
 *
 * Einsum's equation is parsed by graph/ops/einsum.c (graph/ops/attr_parse.h,
 * which gives its grammar and the implicit-output rule), as for the kernels.
 * A letter's dims must agree across its occurrences, except that a dim of 1
 * broadcasts (as numpy allows); the ellipsis dims of the inputs broadcast
 * numpy-style.
 */
#include <string.h>

#include "graph/ops.h"
#include "graph/ops/attr_parse.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static rn_status infer_einsum(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_out;
    graph_einsum e;
    rn_status st = graph_einsum_parse(node, n_in, &e);
    if (st != RN_OK)
        return st;
    rn_element_type type = RN_UNDEFINED;
    for (int i = 0; i < n_in; i++) {
        rn_element_type t = in[i].type;
        if (t == RN_UNDEFINED)
            continue;
        if (t == RN_BOOL || t == RN_STRING || (type != RN_UNDEFINED && t != type))
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "input %d has type %s; inputs must share one numeric "
                                         "type",
                                NODE_ARGS(node), i, rn_element_type_name(t));
        type = t;
    }
    out[0].type = type;
    /* Label dims (-2: not seen yet) and the broadcast ellipsis dims. */
    int64_t dim[GRAPH_EINSUM_LABELS];
    for (int l = 0; l < GRAPH_EINSUM_LABELS; l++)
        dim[l] = -2;
    int ell_rank = 0;
    int64_t ell[RN_MAX_RANK];
    bool known = true;
    for (int i = 0; i < n_in; i++) {
        const graph_einsum_term *tm = &e.in[i];
        int n_labels = tm->n - (tm->has_ellipsis ? 1 : 0);
        const graph_shape *s = &in[i].shape;
        if (s->rank < 0) {
            known = false;
            continue;
        }
        int er = s->rank - n_labels;
        if (er < 0 || (!tm->has_ellipsis && er != 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d has rank %d; term %d of '%s' names %d dims",
                                NODE_ARGS(node), i, s->rank, i, e.equation, n_labels);
        if (er > ell_rank) { /* widen the broadcast ellipsis on the left */
            memmove(ell + (er - ell_rank), ell, sizeof(int64_t) * (size_t)ell_rank);
            for (int z = 0; z < er - ell_rank; z++)
                ell[z] = 1;
            ell_rank = er;
        }
    }
    for (int i = 0; known && i < n_in; i++) {
        const graph_einsum_term *tm = &e.in[i];
        const graph_shape *s = &in[i].shape;
        int er = s->rank - (tm->n - (tm->has_ellipsis ? 1 : 0));
        int d = 0;
        for (int k = 0; k < tm->n; k++) {
            if (tm->label[k] == GRAPH_EINSUM_ELLIPSIS) {
                for (int j = 0; j < er; j++, d++) {
                    int64_t v = s->dims[d], *cur = &ell[ell_rank - er + j];
                    if (v == 1 || v == *cur)
                        continue;
                    if (*cur == 1 || (*cur < 0 && v >= 0))
                        *cur = v;
                    else if (v >= 0 && *cur >= 0)
                        return rn_set_error(RN_SHAPE_MISMATCH,
                                            NODE_FMT "the '...' dims of input %d do not broadcast",
                                            NODE_ARGS(node), i);
                }
                continue;
            }
            int l = tm->label[k];
            int64_t v = s->dims[d++];
            if (dim[l] == -2 || dim[l] == 1 || (dim[l] < 0 && v >= 0))
                dim[l] = v;
            else if (v >= 0 && v != 1 && dim[l] >= 0 && v != dim[l])
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    NODE_FMT "label '%c' is %lld in one place and %lld in another",
                                    NODE_ARGS(node), l < 26 ? 'a' + l : 'A' + l - 26,
                                    (long long)dim[l], (long long)v);
        }
    }
    if (!known) {
        graph_port_unknown(&out[0], type);
        return RN_OK;
    }
    int labels[GRAPH_EINSUM_LABELS + 1], n_labels;
    if ((st = graph_einsum_output(node, &e, labels, &n_labels)) != RN_OK)
        return st;
    if (e.has_out && !e.out.has_ellipsis && ell_rank > 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "equation '%s': the inputs' '...' dims are missing from the "
                                     "output",
                            NODE_ARGS(node), e.equation);
    graph_shape y = {.rank = 0};
    for (int k = 0; k < n_labels; k++) {
        int width = labels[k] == GRAPH_EINSUM_ELLIPSIS ? ell_rank : 1;
        if (y.rank + width > RN_MAX_RANK)
            return rn_set_error(RN_UNSUPPORTED, NODE_FMT "output rank exceeds %d", NODE_ARGS(node),
                                RN_MAX_RANK);
        if (labels[k] == GRAPH_EINSUM_ELLIPSIS)
            for (int j = 0; j < ell_rank; j++)
                y.dims[y.rank++] = ell[j];
        else
            y.dims[y.rank++] = dim[labels[k]];
    }
    out[0].shape = y;
    return RN_OK;
}

/* ---- Det ---- */

static rn_status infer_det(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_in, (void)n_out;
    rn_element_type t = in[0].type;
    if (t != RN_UNDEFINED && t != RN_F32 && t != RN_F64 && t != RN_F16 && t != RN_BF16)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input type %s is not a float type",
                            NODE_ARGS(node), rn_element_type_name(t));
    const graph_shape *s = &in[0].shape;
    out[0].type = t;
    if (s->rank < 0) {
        out[0].shape.rank = -1;
        return RN_OK;
    }
    if (s->rank < 2 || (s->dims[s->rank - 1] >= 0 && s->dims[s->rank - 2] >= 0 &&
                        s->dims[s->rank - 1] != s->dims[s->rank - 2])) {
        char buf[128];
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input %s is not [..., M, M]",
                            NODE_ARGS(node), graph_shape_str(s, buf, sizeof buf));
    }
    out[0].shape = *s;
    out[0].shape.rank = s->rank - 2;
    return RN_OK;
}

const graph_op_schema graph_ops_math[] = {
    {"", "Einsum", 1, -1, 1, 1, 0, infer_einsum, {GRAPH_REQUIRED("equation", STRING)}},
    {"", "Det", 1, 1, 1, 1, 0, infer_det, {{NULL}}},
    {0},
};
