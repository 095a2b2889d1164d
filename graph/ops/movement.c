/* Data-movement ops: schemas and shape inference for the ops that rearrange,
 * select or create elements without arithmetic on them (Reshape, Transpose,
 * Concat, Slice, Split, Squeeze/Unsqueeze, Shape, Size, Gather*, Expand,
 * ConstantOfShape, Range, Tile, DepthToSpace, SpaceToDepth, Pad).
 *
 * Several of these ops take a list (a shape, axes, pads, ...) that was an
 * attribute in early opsets and became an input later. The infer functions
 * take the input when the node has it and fall back to the attribute
 * otherwise, which reads every opset the same way. An input whose value is
 * not known (not a constant at compile time) leaves the dims it decides
 * RN_DIM_DYNAMIC; at run time every value is known and the dims resolve.
 */
#include <math.h>
#include <string.h>

#include "graph/ops.h"
#include "graph/ops/attr_parse.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type
#define DYN          RN_DIM_DYNAMIC
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        if (st_ != RN_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

/* Input i when the node has it and it is not omitted, else NULL. */
static const graph_port *opt_input(const graph_port *in, int n_in, int i)
{
    return i < n_in && in[i].present ? &in[i] : NULL;
}

static bool is_index_type(rn_element_type t)
{
    return t == RN_I64 || t == RN_I32;
}

/* ---- integer list arguments (shapes, axes, pads, repeats, splits) ---- */

enum { LIST_ABSENT = -2, LIST_UNKNOWN = -1 };

/* More values than any list argument can sensibly hold (a guard for int). */
#define LIST_MAX_VALUES (1 << 24)

/* An integer list argument given either by an input value or by an
 * attribute. n is its length, LIST_ABSENT when neither is given, or
 * LIST_UNKNOWN when it is an input whose value is not known yet. */
typedef struct int_list {
    int n;
    const graph_port *port;
    const int64_t *attr;
} int_list;

static int64_t list_at(const int_list *l, int i)
{
    return l->port ? graph_port_int(l->port, (size_t)i) : l->attr[i];
}

/* Reads the list from input `index` when present, else from attribute
 * `name`. The input must be a 1-D (or, for a single value, 0-D) integer
 * tensor. */
static rn_status get_list(const graph_node *node, const graph_port *in, int n_in, int index,
                          const char *name, int_list *out)
{
    const graph_port *p = opt_input(in, n_in, index);
    *out = (int_list){.n = LIST_ABSENT};
    if (p) {
        if (p->type != RN_UNDEFINED && !is_index_type(p->type))
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "input %d ('%s') must be i32 or i64, got %s",
                                NODE_ARGS(node), index, name, rn_element_type_name(p->type));
        if (p->shape.rank > 1)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d ('%s') must be 1-D, got rank %d",
                                NODE_ARGS(node), index, name, p->shape.rank);
        int64_t count = graph_shape_count(&p->shape);
        if (count > LIST_MAX_VALUES)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d ('%s') has %lld values",
                                NODE_ARGS(node), index, name, (long long)count);
        out->port = p;
        out->n = p->data && count >= 0 ? (int)count : LIST_UNKNOWN;
        return RN_OK;
    }
    int count = graph_node_attr_ints(node, name, &out->attr);
    if (count >= 0)
        out->n = count;
    return RN_OK;
}

/* Number of values the list input at `index` will hold, from its shape, or
 * -1 when not known (used when the values themselves are not known). */
static int64_t list_port_len(const graph_port *in, int n_in, int index)
{
    const graph_port *p = opt_input(in, n_in, index);
    if (!p || p->shape.rank != 1)
        return -1;
    return p->shape.dims[0];
}

/* Normalises the axes of a list against rank into axes[] and rejects
 * duplicates. */
static rn_status list_axes(const graph_node *node, const int_list *l, int rank, int *axes)
{
    bool seen[RN_MAX_RANK] = {false};
    if (l->n > rank)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d axes given for a rank-%d tensor",
                            NODE_ARGS(node), l->n, rank);
    for (int i = 0; i < l->n; i++) {
        TRY(graph_normalize_axis(node, list_at(l, i), rank, &axes[i]));
        if (seen[axes[i]])
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "axis %d repeated", NODE_ARGS(node),
                                axes[i]);
        seen[axes[i]] = true;
    }
    return RN_OK;
}

static void set_dynamic(graph_port *out, rn_element_type type, int rank)
{
    out->type = type;
    out->shape.rank = rank;
    for (int i = 0; i < rank; i++)
        out->shape.dims[i] = DYN;
}

static void copy_shape(graph_port *out, rn_element_type type, const graph_shape *s)
{
    out->type = type;
    out->shape = *s;
}

/* ---- Reshape ---- */

/* The -1 dim of a Reshape whose input has dynamic dims, when those dims are
 * all carried over by 0 entries at their own index ([N,3,4] to [0,-1] gives
 * [N,12]): the rest of the input must fill the rest of the target. DYN when
 * that does not settle it. */
static int64_t reshape_rest(const graph_shape *xs, const graph_shape *os, const bool *copied,
                            int infer_at)
{
    if (xs->rank < 0)
        return DYN;
    int64_t in_rest = 1, out_rest = 1;
    for (int d = 0; d < xs->rank; d++) {
        if (d < os->rank && copied[d])
            continue;
        if (xs->dims[d] == DYN)
            return DYN;
        in_rest *= xs->dims[d];
    }
    for (int i = 0; i < os->rank; i++) {
        if (i == infer_at || copied[i])
            continue;
        if (os->dims[i] == DYN)
            return DYN;
        out_rest *= os->dims[i];
    }
    return out_rest > 0 && in_rest % out_rest == 0 ? in_rest / out_rest : DYN;
}

static rn_status infer_reshape(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    int_list s;
    TRY(get_list(node, in, n_in, 1, "shape", &s));
    if (s.n == LIST_ABSENT)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "no target shape (input 1 or attribute 'shape')",
                            NODE_ARGS(node));
    if (s.n == LIST_UNKNOWN) {
        int64_t k = list_port_len(in, n_in, 1);
        if (k >= 0 && k <= RN_MAX_RANK)
            set_dynamic(&out[0], in[0].type, (int)k);
        else
            graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    if (s.n > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "target shape has rank %d, more than %d",
                            NODE_ARGS(node), s.n, RN_MAX_RANK);
    bool allowzero = graph_node_attr_int(node, "allowzero", 0) != 0;
    int infer_at = -1;
    bool has_zero = false, all_known = true, copied[RN_MAX_RANK] = {false};
    int64_t known = 1;
    graph_shape os = {.rank = s.n};
    for (int i = 0; i < s.n; i++) {
        int64_t v = list_at(&s, i);
        if (v == -1) {
            if (infer_at >= 0)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "target shape has more than one -1",
                                    NODE_ARGS(node));
            infer_at = i;
            continue;
        }
        if (v < -1)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "target shape dim %d is %lld",
                                NODE_ARGS(node), i, (long long)v);
        if (v == 0 && !allowzero) {
            /* 0 copies the input's dim at the same index. */
            if (xs->rank >= 0 && i >= xs->rank)
                return rn_set_error(RN_INVALID_ARG,
                                    NODE_FMT "target shape dim %d is 0 (copy) but the input has "
                                             "rank %d",
                                    NODE_ARGS(node), i, xs->rank);
            v = xs->rank < 0 ? DYN : xs->dims[i];
            copied[i] = true;
        } else if (v == 0) {
            has_zero = true;
        }
        os.dims[i] = v;
        if (v == DYN)
            all_known = false;
        else if (__builtin_mul_overflow(known, v, &known))
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "target shape has too many elements",
                                NODE_ARGS(node));
    }
    if (has_zero && infer_at >= 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "allowzero=1 with both 0 and -1 in the shape",
                            NODE_ARGS(node));
    int64_t total = graph_shape_count(xs);
    char b1[128], b2[128];
    if (infer_at >= 0) {
        if (total < 0 || !all_known) {
            os.dims[infer_at] = reshape_rest(xs, &os, copied, infer_at);
        } else if (known == 0 || total % known != 0) {
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "cannot reshape %s (%lld elements): the -1 dim of the "
                                         "target does not divide evenly",
                                NODE_ARGS(node), graph_shape_str(xs, b1, sizeof b1),
                                (long long)total);
        } else {
            os.dims[infer_at] = total / known;
        }
    } else if (all_known && total >= 0 && total != known) {
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "cannot reshape %s to %s", NODE_ARGS(node),
                            graph_shape_str(xs, b1, sizeof b1),
                            graph_shape_str(&os, b2, sizeof b2));
    }
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Transpose ---- */

rn_status graph_transpose_perm(const graph_node *node, int rank, int *perm)
{
    const int64_t *p;
    int n = graph_node_attr_ints(node, "perm", &p);
    if (n < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return RN_OK;
    }
    if (n != rank || n > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "perm has %d entries for a rank-%d input",
                            NODE_ARGS(node), n, rank);
    bool seen[RN_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]])
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "perm is not a permutation of 0..%d",
                                NODE_ARGS(node), n - 1);
        seen[p[i]] = true;
        perm[i] = (int)p[i];
    }
    return RN_OK;
}

static rn_status infer_transpose(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    int rank = xs->rank;
    if (rank < 0) { /* the rank is perm's length, when it is given */
        const int64_t *p;
        rank = graph_node_attr_ints(node, "perm", &p);
        if (rank < 0) {
            graph_port_unknown(&out[0], in[0].type);
            return RN_OK;
        }
    }
    int perm[RN_MAX_RANK];
    TRY(graph_transpose_perm(node, rank, perm));
    graph_shape os = {.rank = rank};
    for (int i = 0; i < rank; i++)
        os.dims[i] = xs->rank < 0 ? DYN : xs->dims[perm[i]];
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Concat ---- */

static rn_status infer_concat(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_out;
    const graph_attr *axis_attr = graph_node_attr(node, "axis");
    if (!axis_attr && node->opset >= 4)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute 'axis' is required",
                            NODE_ARGS(node));
    int64_t axis = graph_node_attr_int(node, "axis", 1);
    rn_element_type type = RN_UNDEFINED;
    int rank = -1;
    for (int i = 0; i < n_in; i++) {
        if (!in[i].present)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d is missing", NODE_ARGS(node), i);
        if (in[i].type != RN_UNDEFINED) {
            if (type != RN_UNDEFINED && in[i].type != type)
                return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is %s, input 0 is %s",
                                    NODE_ARGS(node), i, rn_element_type_name(in[i].type),
                                    rn_element_type_name(type));
            type = in[i].type;
        }
        if (in[i].shape.rank >= 0) {
            if (rank >= 0 && in[i].shape.rank != rank)
                return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input %d has rank %d, not %d",
                                    NODE_ARGS(node), i, in[i].shape.rank, rank);
            rank = in[i].shape.rank;
        }
    }
    if (rank < 0) {
        graph_port_unknown(&out[0], type);
        return RN_OK;
    }
    if (rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "cannot concatenate scalars",
                            NODE_ARGS(node));
    int ax;
    TRY(graph_normalize_axis(node, axis, rank, &ax));
    graph_shape os = {.rank = rank};
    for (int d = 0; d < rank; d++)
        os.dims[d] = d == ax ? 0 : DYN;
    for (int i = 0; i < n_in; i++) {
        const graph_shape *s = &in[i].shape;
        for (int d = 0; d < rank; d++) {
            int64_t v = s->rank < 0 ? DYN : s->dims[d];
            if (d == ax) {
                os.dims[d] = (v == DYN || os.dims[d] == DYN) ? DYN : os.dims[d] + v;
            } else if (v != DYN) {
                if (os.dims[d] != DYN && os.dims[d] != v)
                    return rn_set_error(RN_SHAPE_MISMATCH,
                                        NODE_FMT "input %d has dim %d = %lld, another input %lld",
                                        NODE_ARGS(node), i, d, (long long)v, (long long)os.dims[d]);
                os.dims[d] = v;
            }
        }
    }
    copy_shape(&out[0], type, &os);
    return RN_OK;
}

/* ---- Slice ---- */

int64_t graph_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first)
{
    if (step < -INT64_MAX)
        step = -INT64_MAX;
    if (dim == 0) {
        *first = 0;
        return 0;
    }
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    int64_t len;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        len = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    *first = start;
    return len;
}

static rn_status infer_slice(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    int_list starts, ends, axes, steps;
    TRY(get_list(node, in, n_in, 1, "starts", &starts));
    TRY(get_list(node, in, n_in, 2, "ends", &ends));
    TRY(get_list(node, in, n_in, 3, "axes", &axes));
    TRY(get_list(node, in, n_in, 4, "steps", &steps));
    if (starts.n == LIST_ABSENT || ends.n == LIST_ABSENT)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs both starts and ends", NODE_ARGS(node));
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    if (starts.n == LIST_UNKNOWN || ends.n == LIST_UNKNOWN || axes.n == LIST_UNKNOWN ||
        steps.n == LIST_UNKNOWN) {
        set_dynamic(&out[0], in[0].type, xs->rank);
        return RN_OK;
    }
    int n = starts.n;
    if (ends.n != n || (axes.n != LIST_ABSENT && axes.n != n) ||
        (steps.n != LIST_ABSENT && steps.n != n))
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "starts, ends, axes and steps have different lengths "
                                     "(%d, %d, %d, %d)",
                            NODE_ARGS(node), starts.n, ends.n, axes.n, steps.n);
    int ax[RN_MAX_RANK];
    if (axes.n == LIST_ABSENT) {
        if (n > xs->rank)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d starts for a rank-%d input",
                                NODE_ARGS(node), n, xs->rank);
        for (int i = 0; i < n; i++)
            ax[i] = i;
    } else {
        TRY(list_axes(node, &axes, xs->rank, ax));
    }
    graph_shape os = *xs;
    for (int i = 0; i < n; i++) {
        int64_t step = steps.n == LIST_ABSENT ? 1 : list_at(&steps, i);
        if (step == 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "step %d is 0", NODE_ARGS(node), i);
        int64_t dim = xs->dims[ax[i]], first;
        if (dim != DYN)
            os.dims[ax[i]] =
                graph_slice_axis(dim, list_at(&starts, i), list_at(&ends, i), step, &first);
    }
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Split ---- */

static rn_status infer_split(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    const graph_shape *xs = &in[0].shape;
    int_list split;
    TRY(get_list(node, in, n_in, 1, "split", &split));
    int64_t num_outputs = graph_node_attr_int(node, "num_outputs", n_out);
    if (num_outputs != n_out)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "num_outputs is %lld but the node has %d outputs",
                            NODE_ARGS(node), (long long)num_outputs, n_out);
    if (split.n >= 0 && split.n != n_out)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "split has %d entries for %d outputs",
                            NODE_ARGS(node), split.n, n_out);
    if (xs->rank < 0) {
        for (int i = 0; i < n_out; i++)
            graph_port_unknown(&out[i], in[0].type);
        return RN_OK;
    }
    int ax;
    TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &ax));
    int64_t dim = xs->dims[ax], sum = 0;
    /* Without a split list the parts are equal, except that a dim that does
     * not divide evenly gives the last part the remainder (opset 18's rule,
     * which the reference applies to every opset). */
    int64_t chunk = dim == DYN ? DYN : (dim + n_out - 1) / n_out;
    for (int i = 0; i < n_out; i++) {
        int64_t part;
        if (split.n >= 0) {
            part = list_at(&split, i);
            if (part < 0)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "split[%d] is %lld", NODE_ARGS(node),
                                    i, (long long)part);
            sum += part;
        } else if (split.n == LIST_UNKNOWN || dim == DYN) {
            part = DYN;
        } else {
            part = i < n_out - 1 ? chunk : dim - chunk * (n_out - 1);
            if (part < 0)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    NODE_FMT "axis %d of extent %lld cannot be split into %d parts",
                                    NODE_ARGS(node), ax, (long long)dim, n_out);
        }
        copy_shape(&out[i], in[0].type, xs);
        out[i].shape.dims[ax] = part;
    }
    if (split.n >= 0 && dim != DYN && sum != dim)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "split sums to %lld but axis %d is %lld",
                            NODE_ARGS(node), (long long)sum, ax, (long long)dim);
    return RN_OK;
}

/* ---- Squeeze / Unsqueeze ---- */

static rn_status infer_squeeze(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    int_list axes;
    TRY(get_list(node, in, n_in, 1, "axes", &axes));
    if (xs->rank < 0 || axes.n == LIST_UNKNOWN) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    bool drop[RN_MAX_RANK] = {false};
    if (axes.n == LIST_ABSENT || axes.n == 0) {
        /* Every dim of extent 1 goes; a dynamic dim leaves the rank unknown. */
        for (int d = 0; d < xs->rank; d++) {
            if (xs->dims[d] == DYN) {
                graph_port_unknown(&out[0], in[0].type);
                return RN_OK;
            }
            drop[d] = xs->dims[d] == 1;
        }
    } else {
        int ax[RN_MAX_RANK];
        TRY(list_axes(node, &axes, xs->rank, ax));
        for (int i = 0; i < axes.n; i++) {
            if (xs->dims[ax[i]] != 1 && xs->dims[ax[i]] != DYN)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    NODE_FMT "cannot squeeze axis %d of extent %lld",
                                    NODE_ARGS(node), ax[i], (long long)xs->dims[ax[i]]);
            drop[ax[i]] = true;
        }
    }
    graph_shape os = {.rank = 0};
    for (int d = 0; d < xs->rank; d++)
        if (!drop[d])
            os.dims[os.rank++] = xs->dims[d];
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

static rn_status infer_unsqueeze(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    int_list axes;
    TRY(get_list(node, in, n_in, 1, "axes", &axes));
    if (axes.n == LIST_ABSENT)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "no axes (input 1 or attribute 'axes')",
                            NODE_ARGS(node));
    if (axes.n == LIST_UNKNOWN || xs->rank < 0) {
        int64_t k = axes.n >= 0 ? axes.n : list_port_len(in, n_in, 1);
        if (xs->rank >= 0 && k >= 0 && xs->rank + k <= RN_MAX_RANK)
            set_dynamic(&out[0], in[0].type, xs->rank + (int)k);
        else
            graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    int rank = xs->rank + axes.n;
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "result would have rank %d, more than %d",
                            NODE_ARGS(node), rank, RN_MAX_RANK);
    int ax[RN_MAX_RANK];
    TRY(list_axes(node, &axes, rank, ax));
    bool inserted[RN_MAX_RANK] = {false};
    for (int i = 0; i < axes.n; i++)
        inserted[ax[i]] = true;
    graph_shape os = {.rank = rank};
    for (int d = 0, j = 0; d < rank; d++)
        os.dims[d] = inserted[d] ? 1 : xs->dims[j++];
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Shape / Size ---- */

void graph_shape_range(const graph_node *node, int rank, int64_t *start, int64_t *end)
{
    int64_t r = rank;
    int64_t a = graph_node_attr_int(node, "start", 0);
    int64_t b = graph_node_attr_int(node, "end", r);
    a = a < 0 ? a + r : a;
    b = b < 0 ? b + r : b;
    *start = a < 0 ? 0 : a > r ? r : a;
    *end = b < 0 ? 0 : b > r ? r : b;
}

static rn_status infer_shape(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    int r = in[0].shape.rank;
    if (r < 0) {
        set_dynamic(&out[0], RN_I64, 1);
        return RN_OK;
    }
    int64_t start, end;
    graph_shape_range(node, r, &start, &end);
    set_dynamic(&out[0], RN_I64, 1);
    out[0].shape.dims[0] = end > start ? end - start : 0;
    return RN_OK;
}

static rn_status infer_size(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)node, (void)in, (void)n_in, (void)n_out;
    set_dynamic(&out[0], RN_I64, 0);
    return RN_OK;
}

/* ---- Gather, GatherElements, GatherND ---- */

static rn_status check_indices(const graph_node *node, const graph_port *idx)
{
    if (idx->type != RN_UNDEFINED && !is_index_type(idx->type))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "indices must be i32 or i64, got %s",
                            NODE_ARGS(node), rn_element_type_name(idx->type));
    return RN_OK;
}

static rn_status infer_gather(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape, *is = &in[1].shape;
    TRY(check_indices(node, &in[1]));
    if (xs->rank < 0 || is->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    if (xs->rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "data must have rank >= 1",
                            NODE_ARGS(node));
    int ax;
    TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &ax));
    int rank = xs->rank + is->rank - 1;
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "result would have rank %d, more than %d",
                            NODE_ARGS(node), rank, RN_MAX_RANK);
    graph_shape os = {.rank = rank};
    int k = 0;
    for (int d = 0; d < ax; d++)
        os.dims[k++] = xs->dims[d];
    for (int d = 0; d < is->rank; d++)
        os.dims[k++] = is->dims[d];
    for (int d = ax + 1; d < xs->rank; d++)
        os.dims[k++] = xs->dims[d];
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

static rn_status infer_gather_elements(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape, *is = &in[1].shape;
    TRY(check_indices(node, &in[1]));
    if (xs->rank >= 0 && is->rank >= 0) {
        if (xs->rank != is->rank || xs->rank == 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "data (rank %d) and indices (rank %d) must have the "
                                         "same rank >= 1",
                                NODE_ARGS(node), xs->rank, is->rank);
        int ax;
        TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &ax));
    }
    copy_shape(&out[0], in[0].type, is);
    return RN_OK;
}

static rn_status infer_gather_nd(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape, *is = &in[1].shape;
    if (in[1].type != RN_UNDEFINED && in[1].type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "indices must be i64, got %s",
                            NODE_ARGS(node), rn_element_type_name(in[1].type));
    int64_t b = graph_node_attr_int(node, "batch_dims", 0);
    if (xs->rank < 0 || is->rank < 0 || (is->rank >= 1 && is->dims[is->rank - 1] == DYN)) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    if (is->rank < 1 || b < 0 || b >= is->rank || b >= xs->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "batch_dims %lld does not fit data rank %d and indices "
                                     "rank %d",
                            NODE_ARGS(node), (long long)b, xs->rank, is->rank);
    int64_t k = is->dims[is->rank - 1];
    if (k < 1 || b + k > xs->rank)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "indices address %lld dims after %lld batch dims of a "
                                     "rank-%d input",
                            NODE_ARGS(node), (long long)k, (long long)b, xs->rank);
    int rank = is->rank - 1 + xs->rank - (int)(b + k);
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "result would have rank %d, more than %d",
                            NODE_ARGS(node), rank, RN_MAX_RANK);
    graph_shape os = {.rank = 0};
    for (int d = 0; d < is->rank - 1; d++)
        os.dims[os.rank++] = is->dims[d];
    for (int d = (int)(b + k); d < xs->rank; d++)
        os.dims[os.rank++] = xs->dims[d];
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Expand, ConstantOfShape, Range, Tile ---- */

/* Reads a target shape (Expand, ConstantOfShape) from input `index`; the
 * output is left with a dynamic shape when the value is not known. Returns
 * with *known false in that case. */
static rn_status target_shape(const graph_node *node, const graph_port *in, int n_in, int index,
                              graph_shape *s, bool *known)
{
    int_list l;
    TRY(get_list(node, in, n_in, index, "shape", &l));
    *known = false;
    if (l.n == LIST_ABSENT)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d (shape) is missing", NODE_ARGS(node),
                            index);
    if (l.n == LIST_UNKNOWN) {
        int64_t k = list_port_len(in, n_in, index);
        s->rank = k >= 0 && k <= RN_MAX_RANK ? (int)k : -1;
        for (int i = 0; i < s->rank; i++)
            s->dims[i] = DYN;
        return RN_OK;
    }
    if (l.n > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "shape has %d dims, more than %d",
                            NODE_ARGS(node), l.n, RN_MAX_RANK);
    s->rank = l.n;
    for (int i = 0; i < l.n; i++) {
        s->dims[i] = list_at(&l, i);
        if (s->dims[i] < 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "shape dim %d is %lld", NODE_ARGS(node), i,
                                (long long)s->dims[i]);
    }
    *known = true;
    return RN_OK;
}

static rn_status infer_expand(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_out;
    graph_shape s;
    bool known;
    TRY(target_shape(node, in, n_in, 1, &s, &known));
    const graph_shape *xs = &in[0].shape;
    if (!known) {
        if (s.rank < 0 || xs->rank < 0)
            graph_port_unknown(&out[0], in[0].type);
        else
            set_dynamic(&out[0], in[0].type, s.rank > xs->rank ? s.rank : xs->rank);
        return RN_OK;
    }
    out[0].type = in[0].type;
    return graph_broadcast_shapes(node, xs, &s, &out[0].shape);
}

static rn_status infer_constant_of_shape(const graph_node *node, const graph_port *in, int n_in,
                                         graph_port *out, int n_out)
{
    (void)n_out;
    rn_element_type type = RN_F32;
    const graph_attr *value = graph_node_attr(node, "value");
    if (value) {
        if (value->type != GRAPH_ATTR_TENSOR || !value->t || graph_tensor_count(value->t) != 1)
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "attribute 'value' must be a one-element tensor",
                                NODE_ARGS(node));
        type = value->t->type;
    }
    graph_shape s;
    bool known;
    TRY(target_shape(node, in, n_in, 0, &s, &known));
    if (s.rank < 0)
        graph_port_unknown(&out[0], type);
    else
        copy_shape(&out[0], type, &s);
    return RN_OK;
}

/* A half-precision scalar as double (graph/ has no f16 helpers of its own). */
static double half_to_double(uint16_t h, bool bf16)
{
    if (bf16) {
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp == 0      ? ldexp(mant, -24)
               : exp == 0x1f ? (mant ? NAN : INFINITY)
                             : ldexp(mant | 0x400, exp - 25);
    return h & 0x8000 ? -v : v;
}

static double port_real(const graph_port *p)
{
    if (p->type == RN_F16 || p->type == RN_BF16)
        return half_to_double(*(const uint16_t *)p->data, p->type == RN_BF16);
    return graph_port_double(p, 0);
}

static rn_status infer_range(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    rn_element_type type = in[0].type;
    static const char *const names[] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) {
        if (in[i].type != type)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "%s is %s but start is %s",
                                NODE_ARGS(node), names[i], rn_element_type_name(in[i].type),
                                rn_element_type_name(type));
        /* A scalar, or one element (the ONNX reference accepts [1]); a dim
         * unknown at compile time is checked when the request runs. */
        int64_t count = graph_shape_count(&in[i].shape);
        if (in[i].shape.rank > 1 || (in[i].shape.rank == 1 && count >= 0 && count != 1))
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "%s must be a scalar", NODE_ARGS(node),
                                names[i]);
    }
    bool real = type == RN_F32 || type == RN_F64 || type == RN_F16 || type == RN_BF16;
    if (type != RN_UNDEFINED && !real && type != RN_I16 && type != RN_I32 && type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH,
                            NODE_FMT "type %s is not f32, f64, f16, bf16, i16, i32 or i64",
                            NODE_ARGS(node), rn_element_type_name(type));
    set_dynamic(&out[0], type, 1);
    if (!in[0].data || !in[1].data || !in[2].data)
        return RN_OK;
    int64_t n;
    if (real) {
        /* The count comes from the values widened to double, as numpy's
         * arange computes it. */
        double start = port_real(&in[0]), limit = port_real(&in[1]), delta = port_real(&in[2]);
        double len = ceil((limit - start) / delta);
        if (delta == 0 || !(len < 1e15))
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "delta %g from %g to %g gives no finite range",
                                NODE_ARGS(node), delta, start, limit);
        n = len > 0 ? (int64_t)len : 0;
    } else {
        int64_t start = graph_port_int(&in[0], 0), limit = graph_port_int(&in[1], 0);
        int64_t delta = graph_port_int(&in[2], 0);
        if (delta == 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "delta is 0", NODE_ARGS(node));
        if (delta > 0)
            n = limit > start ? (limit - start - 1) / delta + 1 : 0;
        else
            n = start > limit ? (start - limit - 1) / -delta + 1 : 0;
    }
    out[0].shape.dims[0] = n;
    return RN_OK;
}

static rn_status infer_tile(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                            int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    int_list rep;
    TRY(get_list(node, in, n_in, 1, "repeats", &rep));
    if (rep.n == LIST_ABSENT)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "input 1 (repeats) is missing",
                            NODE_ARGS(node));
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    if (rep.n == LIST_UNKNOWN) {
        set_dynamic(&out[0], in[0].type, xs->rank);
        return RN_OK;
    }
    if (rep.n != xs->rank)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d repeats for a rank-%d input",
                            NODE_ARGS(node), rep.n, xs->rank);
    graph_shape os = *xs;
    for (int d = 0; d < xs->rank; d++) {
        int64_t r = list_at(&rep, d);
        if (r < 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "repeats[%d] is %lld", NODE_ARGS(node), d,
                                (long long)r);
        if (os.dims[d] != DYN && __builtin_mul_overflow(os.dims[d], r, &os.dims[d]))
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "repeats[%d] = %lld overflows dim %d",
                                NODE_ARGS(node), d, (long long)r, d);
    }
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- DepthToSpace / SpaceToDepth ---- */

static rn_status infer_depth_space(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    bool to_space = strcmp(node->op_type, "DepthToSpace") == 0;
    int64_t b = graph_node_attr_int(node, "blocksize", 0);
    if (b <= 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "blocksize must be positive, got %lld",
                            NODE_ARGS(node), (long long)b);
    if (to_space) {
        const char *mode = graph_node_attr_string(node, "mode", "DCR");
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "mode '%s' is not DCR or CRD",
                                NODE_ARGS(node), mode);
    }
    const graph_shape *xs = &in[0].shape;
    if (xs->rank < 0) {
        set_dynamic(&out[0], in[0].type, 4);
        return RN_OK;
    }
    if (xs->rank != 4)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must be 4-D (NCHW), got rank %d",
                            NODE_ARGS(node), xs->rank);
    graph_shape os = *xs;
    int64_t c = xs->dims[1], h = xs->dims[2], w = xs->dims[3];
    if (to_space) {
        if (c != DYN && c % (b * b) != 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "channels %lld not divisible by blocksize^2 = %lld",
                                NODE_ARGS(node), (long long)c, (long long)(b * b));
        os.dims[1] = c == DYN ? DYN : c / (b * b);
        os.dims[2] = h == DYN ? DYN : h * b;
        os.dims[3] = w == DYN ? DYN : w * b;
    } else {
        if ((h != DYN && h % b != 0) || (w != DYN && w % b != 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "height %lld and width %lld must be divisible by "
                                         "blocksize %lld",
                                NODE_ARGS(node), (long long)h, (long long)w, (long long)b);
        os.dims[1] = c == DYN ? DYN : c * b * b;
        os.dims[2] = h == DYN ? DYN : h / b;
        os.dims[3] = w == DYN ? DYN : w / b;
    }
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Pad ---- */

static rn_status infer_pad(const graph_node *node, const graph_port *in, int n_in, graph_port *out,
                           int n_out)
{
    (void)n_out;
    const graph_shape *xs = &in[0].shape;
    const char *mode = graph_node_attr_string(node, "mode", "constant");
    bool constant = strcmp(mode, "constant") == 0;
    if (!constant && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0 &&
        strcmp(mode, "wrap") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "mode '%s' is not constant, reflect, edge or wrap",
                            NODE_ARGS(node), mode);
    const graph_port *cv = opt_input(in, n_in, 2);
    if (cv && cv->type != RN_UNDEFINED && in[0].type != RN_UNDEFINED && cv->type != in[0].type)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "constant_value is %s but data is %s",
                            NODE_ARGS(node), rn_element_type_name(cv->type),
                            rn_element_type_name(in[0].type));
    int_list pads, axes;
    TRY(get_list(node, in, n_in, 1, node->opset < 2 ? "paddings" : "pads", &pads));
    TRY(get_list(node, in, n_in, 3, "axes", &axes));
    if (pads.n == LIST_ABSENT)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "no pads (input 1 or attribute 'pads')",
                            NODE_ARGS(node));
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    if (pads.n == LIST_UNKNOWN || axes.n == LIST_UNKNOWN) {
        set_dynamic(&out[0], in[0].type, xs->rank);
        return RN_OK;
    }
    int ax[RN_MAX_RANK], n_axes = xs->rank;
    if (axes.n == LIST_ABSENT) {
        for (int d = 0; d < xs->rank; d++)
            ax[d] = d;
    } else {
        n_axes = axes.n;
        TRY(list_axes(node, &axes, xs->rank, ax));
    }
    if (pads.n != 2 * n_axes)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d pads for %d axes (need twice as many)",
                            NODE_ARGS(node), pads.n, n_axes);
    graph_shape os = *xs;
    for (int i = 0; i < n_axes; i++) {
        int64_t dim = xs->dims[ax[i]];
        if (dim == DYN)
            continue;
        int64_t begin = list_at(&pads, i), end = list_at(&pads, n_axes + i);
        if (!constant && dim == 0 && (begin > 0 || end > 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "mode '%s' cannot pad axis %d of extent 0",
                                NODE_ARGS(node), mode, ax[i]);
        os.dims[ax[i]] = dim + begin + end;
        if (os.dims[ax[i]] < 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "pads %lld and %lld crop axis %d of extent %lld below 0",
                                NODE_ARGS(node), (long long)begin, (long long)end, ax[i],
                                (long long)dim);
    }
    copy_shape(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- the family's table ---- */

#define A(name_, type_)     GRAPH_OPTIONAL(name_, type_)
#define A_REQ(name_, type_) GRAPH_REQUIRED(name_, type_)
#define VALUE_IN(i)         (1u << (i))

const graph_op_schema graph_ops_movement[] = {
    {"",
     "Reshape",
     1,
     2,
     1,
     1,
     VALUE_IN(1),
     infer_reshape,
     {A("shape", INTS), A("allowzero", INT), A("consumed_inputs", INTS)}},
    {"", "Transpose", 1, 1, 1, 1, 0, infer_transpose, {A("perm", INTS)}},
    {"", "Concat", 1, -1, 1, 1, 0, infer_concat, {A("axis", INT)}},
    {"",
     "Slice",
     1,
     5,
     1,
     1,
     VALUE_IN(1) | VALUE_IN(2) | VALUE_IN(3) | VALUE_IN(4),
     infer_slice,
     {A("starts", INTS), A("ends", INTS), A("axes", INTS)}},
    {"",
     "Split",
     1,
     2,
     1,
     -1,
     VALUE_IN(1),
     infer_split,
     {A("axis", INT), A("split", INTS), A("num_outputs", INT)}},
    {"", "Squeeze", 1, 2, 1, 1, VALUE_IN(1), infer_squeeze, {A("axes", INTS)}},
    {"", "Unsqueeze", 1, 2, 1, 1, VALUE_IN(1), infer_unsqueeze, {A("axes", INTS)}},
    {"", "Shape", 1, 1, 1, 1, 0, infer_shape, {A("start", INT), A("end", INT)}},
    {"", "Size", 1, 1, 1, 1, 0, infer_size, {{0}}},
    {"", "Gather", 2, 2, 1, 1, 0, infer_gather, {A("axis", INT)}},
    {"", "GatherElements", 2, 2, 1, 1, 0, infer_gather_elements, {A("axis", INT)}},
    {"", "GatherND", 2, 2, 1, 1, 0, infer_gather_nd, {A("batch_dims", INT)}},
    {"", "Expand", 2, 2, 1, 1, VALUE_IN(1), infer_expand, {{0}}},
    {"", "ConstantOfShape", 1, 1, 1, 1, VALUE_IN(0), infer_constant_of_shape, {A("value", TENSOR)}},
    {"",
     "Range",
     3,
     3,
     1,
     1,
     VALUE_IN(0) | VALUE_IN(1) | VALUE_IN(2),
     infer_range,
     {A("stash_type", INT)}},
    {"", "Tile", 2, 2, 1, 1, VALUE_IN(1), infer_tile, {{0}}},
    {"",
     "DepthToSpace",
     1,
     1,
     1,
     1,
     0,
     infer_depth_space,
     {A_REQ("blocksize", INT), A("mode", STRING)}},
    {"", "SpaceToDepth", 1, 1, 1, 1, 0, infer_depth_space, {A_REQ("blocksize", INT)}},
    {"",
     "Pad",
     1,
     4,
     1,
     1,
     VALUE_IN(1) | VALUE_IN(3),
     infer_pad,
     {A("mode", STRING), A("pads", INTS), A("paddings", INTS), A("value", FLOAT)}},
    {0},
};
