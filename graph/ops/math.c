/* Op schemas of the math family: Einsum (opset 12) and Det (opset 11).
 *
 * Einsum's equation is parsed here for shape inference (the REF kernel has
 * its own reading of it): terms of letters (a-z, A-Z) and at most one "..."
 * per term, separated by commas, with an optional "->" and output term;
 * spaces are ignored. Without "->" the output is the ellipsis dims followed
 * by the letters that occur exactly once, in ASCII order (numpy's implicit
 * mode). A letter's dims must agree across its occurrences, except that a dim
 * of 1 broadcasts (as numpy allows); the ellipsis dims of the inputs
 * broadcast numpy-style.
 */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

#define EINSUM_LABELS 52
#define ELLIPSIS      (-1)

typedef struct einsum_term {
    int n;                      /* entries in label[] */
    int label[RN_MAX_RANK + 1]; /* 0..51, or ELLIPSIS */
    bool has_ellipsis;
} einsum_term;

static int label_of(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return 26 + c - 'A';
    return -1;
}

/* Parses the equation into n_terms input terms and the output term; *has_out
 * tells whether the output was written ("->"). */
static rn_status einsum_parse(const graph_node *node, const char *eq, einsum_term *terms,
                              int max_terms, int *n_terms, einsum_term *out, bool *has_out)
{
    memset(out, 0, sizeof *out);
    *has_out = false;
    int t = 0;
    einsum_term *cur = &terms[0];
    memset(cur, 0, sizeof *cur);
    for (const char *c = eq; *c; c++) {
        if (*c == ' ')
            continue;
        if (*c == ',' && !*has_out) {
            if (++t >= max_terms)
                return rn_set_error(RN_INVALID_ARG,
                                    NODE_FMT "equation '%s' has more terms than inputs",
                                    NODE_ARGS(node), eq);
            cur = &terms[t];
            memset(cur, 0, sizeof *cur);
            continue;
        }
        if (c[0] == '-' && c[1] == '>' && !*has_out) {
            *has_out = true;
            cur = out;
            c++;
            continue;
        }
        int l = label_of(*c);
        if (c[0] == '.' && c[1] == '.' && c[2] == '.') {
            if (cur->has_ellipsis)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s': a term has two '...'",
                                    NODE_ARGS(node), eq);
            cur->has_ellipsis = true;
            l = ELLIPSIS;
            c += 2;
        } else if (l < 0) {
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s': unexpected '%c'",
                                NODE_ARGS(node), eq, *c);
        }
        if (cur->n > RN_MAX_RANK)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s': a term is too long",
                                NODE_ARGS(node), eq);
        cur->label[cur->n++] = l;
    }
    *n_terms = t + 1;
    return RN_OK;
}

static rn_status infer_einsum(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_out;
    const char *eq = graph_node_attr_string(node, "equation", NULL);
    if (eq == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute equation is required",
                            NODE_ARGS(node));
    einsum_term terms[16], ot;
    int n_terms = 0;
    bool has_out;
    if (n_in > 16)
        return rn_set_error(RN_UNSUPPORTED, NODE_FMT "more than 16 inputs", NODE_ARGS(node));
    rn_status st = einsum_parse(node, eq, terms, 16, &n_terms, &ot, &has_out);
    if (st != RN_OK)
        return st;
    if (n_terms != n_in)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s' has %d terms for %d inputs",
                            NODE_ARGS(node), eq, n_terms, n_in);
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
    int64_t dim[EINSUM_LABELS];
    int count[EINSUM_LABELS] = {0};
    for (int l = 0; l < EINSUM_LABELS; l++)
        dim[l] = -2;
    int ell_rank = 0;
    int64_t ell[RN_MAX_RANK];
    bool known = true;
    for (int i = 0; i < n_in; i++) {
        const einsum_term *tm = &terms[i];
        int n_labels = tm->n - (tm->has_ellipsis ? 1 : 0);
        for (int k = 0; k < tm->n; k++)
            if (tm->label[k] != ELLIPSIS)
                count[tm->label[k]]++;
        const graph_shape *s = &in[i].shape;
        if (s->rank < 0) {
            known = false;
            continue;
        }
        int er = s->rank - n_labels;
        if (er < 0 || (!tm->has_ellipsis && er != 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d has rank %d; term %d of '%s' names %d dims",
                                NODE_ARGS(node), i, s->rank, i, eq, n_labels);
        if (er > ell_rank) { /* widen the broadcast ellipsis on the left */
            memmove(ell + (er - ell_rank), ell, sizeof(int64_t) * (size_t)ell_rank);
            for (int z = 0; z < er - ell_rank; z++)
                ell[z] = 1;
            ell_rank = er;
        }
    }
    for (int i = 0; known && i < n_in; i++) {
        const einsum_term *tm = &terms[i];
        const graph_shape *s = &in[i].shape;
        int er = s->rank - (tm->n - (tm->has_ellipsis ? 1 : 0));
        int d = 0;
        for (int k = 0; k < tm->n; k++) {
            if (tm->label[k] == ELLIPSIS) {
                for (int e = 0; e < er; e++, d++) {
                    int64_t v = s->dims[d], *cur = &ell[ell_rank - er + e];
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
    graph_shape y = {.rank = 0};
    if (has_out) {
        for (int k = 0; k < ot.n; k++) {
            if (ot.label[k] == ELLIPSIS) {
                for (int e = 0; e < ell_rank; e++)
                    y.dims[y.rank++] = ell[e];
                continue;
            }
            int l = ot.label[k];
            if (count[l] == 0)
                return rn_set_error(RN_INVALID_ARG,
                                    NODE_FMT "equation '%s': an output label is in no input",
                                    NODE_ARGS(node), eq);
            for (int j = 0; j < k; j++)
                if (ot.label[j] == l)
                    return rn_set_error(RN_INVALID_ARG,
                                        NODE_FMT "equation '%s': an output label repeats",
                                        NODE_ARGS(node), eq);
            if (y.rank >= RN_MAX_RANK)
                return rn_set_error(RN_UNSUPPORTED, NODE_FMT "output rank exceeds %d",
                                    NODE_ARGS(node), RN_MAX_RANK);
            y.dims[y.rank++] = dim[l];
        }
        if (!ot.has_ellipsis && ell_rank > 0)
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "equation '%s': the inputs' '...' dims are missing from "
                                         "the output",
                                NODE_ARGS(node), eq);
    } else {
        for (int e = 0; e < ell_rank; e++)
            y.dims[y.rank++] = ell[e];
        /* ASCII order: 'A'..'Z' (labels 26..51) before 'a'..'z' (0..25) */
        for (int k = 0; k < EINSUM_LABELS; k++) {
            int l = k < 26 ? 26 + k : k - 26;
            if (count[l] != 1)
                continue;
            if (y.rank >= RN_MAX_RANK)
                return rn_set_error(RN_UNSUPPORTED, NODE_FMT "output rank exceeds %d",
                                    NODE_ARGS(node), RN_MAX_RANK);
            y.dims[y.rank++] = dim[l];
        }
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
    {"", "Einsum", 1, -1, 1, 1, 0, infer_einsum, {{"equation", GRAPH_ATTR_STRING, true}}},
    {"", "Det", 1, 1, 1, 1, 0, infer_det, {{NULL}}},
    {0},
};
