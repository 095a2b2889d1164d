/* Indexing and data-rearrangement ops: schemas and shape inference for the
 * ops that scatter, select, mask, count or reorder elements (Scatter*,
 * TensorScatter, Trilu, CumSum/CumProd, OneHot, Compress, EyeLike, TopK,
 * Unique, NonZero, ReverseSequence, CenterCropPad, Hardmax, Col2Im, BitCast)
 * and the lookups TfIdfVectorizer and ArrayFeatureExtractor (ai.onnx.ml).
 *
 * Some outputs depend on computed values rather than on shapes: NonZero's
 * count, Unique's number of distinct items. Their infer functions leave those
 * dims RN_DIM_DYNAMIC even at run time, and the kernel allocates the output
 * once it knows the count (plugin_kernel_args.alloc_output). Outputs that
 * depend only on input *values* (OneHot's depth, TopK's k, Compress's
 * condition, CenterCropPad's shape, Col2Im's image shape) are resolved here
 * whenever the value is known, which is always the case at run time.
 */
#include <string.h>

#include "graph/ops.h"

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

/* Integer or floating, not bool/string/undefined. */
static bool is_numeric(rn_element_type t)
{
    switch (t) {
    case RN_F32:
    case RN_F64:
    case RN_F16:
    case RN_BF16:
    case RN_I8:
    case RN_I16:
    case RN_I32:
    case RN_I64:
    case RN_U8:
    case RN_U16:
    case RN_U32:
    case RN_U64:
        return true;
    default:
        return false;
    }
}

static void copy_port(graph_port *out, rn_element_type type, const graph_shape *s)
{
    out->type = type;
    out->shape = *s;
}

static void set_dynamic(graph_port *out, rn_element_type type, int rank)
{
    out->type = type;
    out->shape.rank = rank;
    for (int i = 0; i < rank; i++)
        out->shape.dims[i] = DYN;
}

/* Checks that input `index` (named `what`) has an i32/i64 type when known. */
static rn_status check_index_type(const graph_node *node, const graph_port *p, int index,
                                  const char *what)
{
    if (p->type != RN_UNDEFINED && !is_index_type(p->type))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d (%s) must be i32 or i64, got %s",
                            NODE_ARGS(node), index, what, rn_element_type_name(p->type));
    return RN_OK;
}

/* Checks that input `index` holds a single value (rank 0, or rank 1 of one
 * element) when its shape is known. */
static rn_status check_single(const graph_node *node, const graph_port *p, int index,
                              const char *what)
{
    const graph_shape *s = &p->shape;
    if (s->rank > 1 || (s->rank == 1 && s->dims[0] != DYN && s->dims[0] != 1))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input %d (%s) must hold a single value, got rank %d",
                            NODE_ARGS(node), index, what, s->rank);
    return RN_OK;
}

/* Whether two known dims contradict each other. */
static bool dims_clash(int64_t a, int64_t b)
{
    return a != DYN && b != DYN && a != b;
}

/* Checks that the input at `index` has the same element type as input 0. */
static rn_status check_same_type(const graph_node *node, const graph_port *in, int index,
                                 const char *what)
{
    if (in[0].type != RN_UNDEFINED && in[index].type != RN_UNDEFINED &&
        in[0].type != in[index].type)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d (%s) is %s but the data is %s",
                            NODE_ARGS(node), index, what, rn_element_type_name(in[index].type),
                            rn_element_type_name(in[0].type));
    return RN_OK;
}

/* ---- ScatterElements, Scatter ---- */

static rn_status check_reduction(const graph_node *node)
{
    const char *r = graph_node_attr_string(node, "reduction", "none");
    if (strcmp(r, "none") != 0 && strcmp(r, "add") != 0 && strcmp(r, "mul") != 0 &&
        strcmp(r, "max") != 0 && strcmp(r, "min") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "reduction '%s' is not one of none, add, mul, max, min",
                            NODE_ARGS(node), r);
    return RN_OK;
}

/* Output = data; indices and updates share a shape of data's rank. */
static rn_status infer_scatter_elements(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape, *is = &in[1].shape, *us = &in[2].shape;
    TRY(check_index_type(node, &in[1], 1, "indices"));
    TRY(check_same_type(node, in, 2, "updates"));
    TRY(check_reduction(node));
    if (xs->rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "data must have rank >= 1",
                            NODE_ARGS(node));
    if (xs->rank > 0) {
        int axis;
        TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &axis));
        if (is->rank >= 0 && is->rank != xs->rank)
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "indices rank %d, data rank %d",
                                NODE_ARGS(node), is->rank, xs->rank);
    }
    if (is->rank >= 0 && us->rank >= 0) {
        bool clash = is->rank != us->rank;
        for (int d = 0; !clash && d < is->rank; d++)
            clash = dims_clash(is->dims[d], us->dims[d]);
        if (clash) {
            char a[128], b[128];
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "indices %s and updates %s differ",
                                NODE_ARGS(node), graph_shape_str(is, a, sizeof a),
                                graph_shape_str(us, b, sizeof b));
        }
    }
    copy_port(&out[0], in[0].type, xs);
    return RN_OK;
}

/* ---- ScatterND ---- */

/* Output = data; updates = indices.shape[:-1] + data.shape[k:], k the last
 * indices dim. */
static rn_status infer_scatter_nd(const graph_node *node, const graph_port *in, int n_in,
                                  graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape, *is = &in[1].shape, *us = &in[2].shape;
    if (in[1].type != RN_UNDEFINED && in[1].type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "indices must be i64, got %s",
                            NODE_ARGS(node), rn_element_type_name(in[1].type));
    TRY(check_same_type(node, in, 2, "updates"));
    TRY(check_reduction(node));
    if (xs->rank == 0 || is->rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "data and indices must have rank >= 1",
                            NODE_ARGS(node));
    if (xs->rank > 0 && is->rank > 0 && is->dims[is->rank - 1] != DYN) {
        int64_t k = is->dims[is->rank - 1];
        if (k < 1 || k > xs->rank)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "index tuples of %lld entries for data of rank %d",
                                NODE_ARGS(node), (long long)k, xs->rank);
        if (us->rank >= 0) {
            int want = is->rank - 1 + xs->rank - (int)k;
            bool clash = us->rank != want;
            for (int d = 0; !clash && d < is->rank - 1; d++)
                clash = dims_clash(us->dims[d], is->dims[d]);
            for (int d = (int)k; !clash && d < xs->rank; d++)
                clash = dims_clash(us->dims[is->rank - 1 + d - k], xs->dims[d]);
            if (clash) {
                char a[128], b[128], c[128];
                return rn_set_error(
                    RN_SHAPE_MISMATCH, NODE_FMT "updates %s do not fit data %s and indices %s",
                    NODE_ARGS(node), graph_shape_str(us, a, sizeof a),
                    graph_shape_str(xs, b, sizeof b), graph_shape_str(is, c, sizeof c));
            }
        }
    }
    copy_port(&out[0], in[0].type, xs);
    return RN_OK;
}

/* ---- TensorScatter ---- */

/* Output = past_cache; update matches it except along the sequence axis,
 * where it may be shorter; write_indices is [batch]. */
static rn_status infer_tensor_scatter(const graph_node *node, const graph_port *in, int n_in,
                                      graph_port *out, int n_out)
{
    (void)n_out;
    const graph_shape *cs = &in[0].shape, *us = &in[1].shape;
    TRY(check_same_type(node, in, 1, "update"));
    const char *mode = graph_node_attr_string(node, "mode", "linear");
    if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "mode '%s' is not linear or circular",
                            NODE_ARGS(node), mode);
    const graph_port *wi = opt_input(in, n_in, 2);
    if (wi != NULL) {
        TRY(check_index_type(node, wi, 2, "write_indices"));
        if (wi->shape.rank > 1)
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "write_indices must be 1-D",
                                NODE_ARGS(node));
    }
    if (cs->rank >= 0) {
        int axis;
        TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", -2), cs->rank, &axis));
        if (axis == 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "axis must not be the batch axis 0",
                                NODE_ARGS(node));
        if (us->rank >= 0) {
            bool clash = us->rank != cs->rank;
            for (int d = 0; !clash && d < cs->rank; d++)
                clash = d == axis
                            ? us->dims[d] != DYN && cs->dims[d] != DYN && us->dims[d] > cs->dims[d]
                            : dims_clash(us->dims[d], cs->dims[d]);
            if (clash) {
                char a[128], b[128];
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    NODE_FMT "update %s does not fit past_cache %s",
                                    NODE_ARGS(node), graph_shape_str(us, a, sizeof a),
                                    graph_shape_str(cs, b, sizeof b));
            }
        }
        if (wi != NULL && wi->shape.rank == 1 && dims_clash(wi->shape.dims[0], cs->dims[0]))
            return rn_set_error(
                RN_SHAPE_MISMATCH, NODE_FMT "write_indices has %lld entries for a batch of %lld",
                NODE_ARGS(node), (long long)wi->shape.dims[0], (long long)cs->dims[0]);
    }
    copy_port(&out[0], in[0].type, cs);
    return RN_OK;
}

/* ---- Trilu ---- */

static rn_status infer_trilu(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    (void)n_out;
    if (in[0].shape.rank >= 0 && in[0].shape.rank < 2)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must have rank >= 2, got %d",
                            NODE_ARGS(node), in[0].shape.rank);
    const graph_port *k = opt_input(in, n_in, 1);
    if (k != NULL) {
        if (k->type != RN_UNDEFINED && k->type != RN_I64)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "k must be i64, got %s", NODE_ARGS(node),
                                rn_element_type_name(k->type));
        TRY(check_single(node, k, 1, "k"));
    }
    copy_port(&out[0], in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- CumSum, CumProd ---- */

static rn_status infer_cumulative(const graph_node *node, const graph_port *in, int n_in,
                                  graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    TRY(check_index_type(node, &in[1], 1, "axis"));
    TRY(check_single(node, &in[1], 1, "axis"));
    if (in[0].type != RN_UNDEFINED && !is_numeric(in[0].type))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input must be numeric, got %s",
                            NODE_ARGS(node), rn_element_type_name(in[0].type));
    int rank = in[0].shape.rank;
    if (rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must have rank >= 1",
                            NODE_ARGS(node));
    if (rank > 0 && in[1].data != NULL) {
        int axis;
        TRY(graph_normalize_axis(node, graph_port_int(&in[1], 0), rank, &axis));
    }
    copy_port(&out[0], in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- OneHot ---- */

/* Output: indices' shape with `depth` inserted at `axis` (counted against
 * rank + 1); the element type is that of `values` ([off, on]). */
static rn_status infer_one_hot(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *is = &in[0].shape;
    TRY(check_single(node, &in[1], 1, "depth"));
    if (in[2].shape.rank >= 0 && (in[2].shape.rank != 1 || dims_clash(in[2].shape.dims[0], 2)))
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "values must be [off, on] (2 elements)",
                            NODE_ARGS(node));
    for (int i = 0; i < 2; i++)
        if (in[i].type != RN_UNDEFINED && !is_numeric(in[i].type))
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d (%s) must be numeric, got %s",
                                NODE_ARGS(node), i, i == 0 ? "indices" : "depth",
                                rn_element_type_name(in[i].type));
    if (is->rank < 0) {
        graph_port_unknown(&out[0], in[2].type);
        return RN_OK;
    }
    if (is->rank + 1 > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "result would have rank %d, more than %d",
                            NODE_ARGS(node), is->rank + 1, RN_MAX_RANK);
    int axis;
    TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", -1), is->rank + 1, &axis));
    int64_t depth = DYN;
    if (in[1].data != NULL) {
        double d = graph_port_double(&in[1], 0);
        if (!(d >= 1 && d <= (double)INT32_MAX))
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "depth %g must be a positive count",
                                NODE_ARGS(node), d);
        depth = (int64_t)d;
    }
    graph_shape os = {.rank = is->rank + 1};
    for (int d = 0, k = 0; d < os.rank; d++)
        os.dims[d] = d == axis ? depth : is->dims[k++];
    copy_port(&out[0], in[2].type, &os);
    return RN_OK;
}

/* ---- Compress ---- */

/* The number of true entries of a known condition, counted against a
 * selectable length `limit` (DYN: no check); a true entry past it is an
 * error, false ones past it are ignored. */
static rn_status count_condition(const graph_node *node, const graph_port *c, int64_t limit,
                                 int64_t *out)
{
    int64_t n = graph_shape_count(&c->shape), count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (graph_port_double(c, (size_t)i) == 0)
            continue;
        if (limit != DYN && i >= limit)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "condition selects entry %lld of an axis of %lld",
                                NODE_ARGS(node), (long long)i, (long long)limit);
        count++;
    }
    *out = count;
    return RN_OK;
}

static rn_status infer_compress(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    const graph_port *c = &in[1];
    if (c->type != RN_UNDEFINED && c->type != RN_BOOL)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "condition must be bool, got %s",
                            NODE_ARGS(node), rn_element_type_name(c->type));
    if (c->shape.rank >= 0 && c->shape.rank != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "condition must be 1-D, got rank %d",
                            NODE_ARGS(node), c->shape.rank);
    bool known = c->data != NULL && graph_shape_is_static(&c->shape);
    if (graph_node_attr(node, "axis") == NULL) {
        int64_t count = DYN;
        if (known)
            TRY(count_condition(node, c, graph_shape_count(xs), &count));
        set_dynamic(&out[0], in[0].type, 1);
        out[0].shape.dims[0] = count;
        return RN_OK;
    }
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    int axis;
    TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &axis));
    graph_shape os = *xs;
    os.dims[axis] = DYN;
    if (known)
        TRY(count_condition(node, c, xs->dims[axis], &os.dims[axis]));
    copy_port(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- EyeLike ---- */

static rn_status infer_eye_like(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    if (in[0].shape.rank >= 0 && in[0].shape.rank != 2)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must be 2-D, got rank %d",
                            NODE_ARGS(node), in[0].shape.rank);
    rn_element_type type = in[0].type;
    const graph_attr *dt = graph_node_attr(node, "dtype");
    if (dt != NULL) {
        type = (rn_element_type)dt->i;
        if (dt->type != GRAPH_ATTR_INT || !rn_element_type_is_valid(type) || type == RN_STRING)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "dtype %lld is not a numeric type",
                                NODE_ARGS(node), (long long)dt->i);
    }
    copy_port(&out[0], type, &in[0].shape);
    return RN_OK;
}

/* ---- TopK ---- */

/* Output 0 (values) and 1 (indices, i64): X's shape with `k` along axis.
 * Opset 1 takes k as an attribute, later opsets as input 1. */
static rn_status infer_top_k(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    const graph_shape *xs = &in[0].shape;
    int64_t k = DYN;
    const graph_port *kp = opt_input(in, n_in, 1);
    if (kp != NULL) {
        if (kp->type != RN_UNDEFINED && kp->type != RN_I64)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "K must be i64, got %s", NODE_ARGS(node),
                                rn_element_type_name(kp->type));
        TRY(check_single(node, kp, 1, "K"));
        if (kp->data != NULL)
            k = graph_port_int(kp, 0);
    } else {
        const graph_attr *a = graph_node_attr(node, "k");
        if (a == NULL || a->type != GRAPH_ATTR_INT)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "no k (input 1 or attribute 'k')",
                                NODE_ARGS(node));
        k = a->i;
    }
    if (k != DYN && k < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "k is %lld", NODE_ARGS(node), (long long)k);
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        if (n_out > 1)
            graph_port_unknown(&out[1], RN_I64);
        return RN_OK;
    }
    if (xs->rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must have rank >= 1",
                            NODE_ARGS(node));
    int axis;
    TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", -1), xs->rank, &axis));
    if (k != DYN && xs->dims[axis] != DYN && k > xs->dims[axis])
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "k %lld exceeds axis %d of extent %lld",
                            NODE_ARGS(node), (long long)k, axis, (long long)xs->dims[axis]);
    graph_shape os = *xs;
    os.dims[axis] = k;
    copy_port(&out[0], in[0].type, &os);
    if (n_out > 1)
        copy_port(&out[1], RN_I64, &os);
    return RN_OK;
}

/* ---- Unique ---- */

/* Y has a data-dependent extent along the axis (or is 1-D without one);
 * indices and counts are [number of unique items]; inverse_indices has one
 * entry per input item. The kernel allocates the data-dependent outputs. */
static rn_status infer_unique(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_in;
    const graph_shape *xs = &in[0].shape;
    int64_t items = DYN;
    if (graph_node_attr(node, "axis") == NULL) {
        set_dynamic(&out[0], in[0].type, 1);
        items = graph_shape_count(xs);
    } else if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
    } else {
        int axis;
        TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), xs->rank, &axis));
        graph_shape os = *xs;
        os.dims[axis] = DYN;
        copy_port(&out[0], in[0].type, &os);
        items = xs->dims[axis];
    }
    for (int i = 1; i < n_out && i < 4; i++)
        set_dynamic(&out[i], RN_I64, 1);
    if (n_out > 2)
        out[2].shape.dims[0] = items < 0 ? DYN : items;
    return RN_OK;
}

/* ---- NonZero ---- */

static rn_status infer_non_zero(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)node, (void)n_in, (void)n_out;
    set_dynamic(&out[0], RN_I64, 2);
    out[0].shape.dims[0] = in[0].shape.rank >= 0 ? in[0].shape.rank : DYN;
    return RN_OK;
}

/* ---- ReverseSequence ---- */

static rn_status infer_reverse_sequence(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape, *ls = &in[1].shape;
    TRY(check_index_type(node, &in[1], 1, "sequence_lens"));
    int64_t b = graph_node_attr_int(node, "batch_axis", 1);
    int64_t t = graph_node_attr_int(node, "time_axis", 0);
    if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "batch_axis %lld and time_axis %lld must be 0 and 1",
                            NODE_ARGS(node), (long long)b, (long long)t);
    if (xs->rank >= 0 && xs->rank < 2)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must have rank >= 2, got %d",
                            NODE_ARGS(node), xs->rank);
    if (ls->rank >= 0 && ls->rank != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "sequence_lens must be 1-D",
                            NODE_ARGS(node));
    if (xs->rank >= 2 && ls->rank == 1 && dims_clash(ls->dims[0], xs->dims[b]))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "sequence_lens has %lld entries for a batch of %lld",
                            NODE_ARGS(node), (long long)ls->dims[0], (long long)xs->dims[b]);
    copy_port(&out[0], in[0].type, xs);
    return RN_OK;
}

/* ---- CenterCropPad ---- */

/* Output: input's shape with shape[i] at axes[i] (all axes in order when
 * `axes` is absent). */
static rn_status infer_center_crop_pad(const graph_node *node, const graph_port *in, int n_in,
                                       graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    const graph_port *sp = &in[1];
    TRY(check_index_type(node, sp, 1, "shape"));
    if (sp->shape.rank >= 0 && sp->shape.rank != 1)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "shape must be 1-D, got rank %d",
                            NODE_ARGS(node), sp->shape.rank);
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    const int64_t *axes_attr = NULL;
    int n_axes = graph_node_attr_ints(node, "axes", &axes_attr);
    int axes[RN_MAX_RANK];
    bool seen[RN_MAX_RANK] = {false};
    if (n_axes < 0) {
        n_axes = xs->rank;
        for (int i = 0; i < n_axes; i++)
            axes[i] = i;
    } else {
        if (n_axes > xs->rank)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d axes for rank %d", NODE_ARGS(node),
                                n_axes, xs->rank);
        for (int i = 0; i < n_axes; i++) {
            TRY(graph_normalize_axis(node, axes_attr[i], xs->rank, &axes[i]));
            if (seen[axes[i]])
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "axis %d repeated", NODE_ARGS(node),
                                    axes[i]);
            seen[axes[i]] = true;
        }
    }
    if (sp->shape.rank == 1 && dims_clash(sp->shape.dims[0], n_axes))
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "shape has %lld entries for %d axes",
                            NODE_ARGS(node), (long long)sp->shape.dims[0], n_axes);
    graph_shape os = *xs;
    for (int i = 0; i < n_axes; i++) {
        int64_t v = DYN;
        if (sp->data != NULL) {
            v = graph_port_int(sp, (size_t)i);
            if (v < 0)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "target extent %lld for axis %d",
                                    NODE_ARGS(node), (long long)v, axes[i]);
        }
        os.dims[axes[i]] = v;
    }
    copy_port(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- Hardmax ---- */

static rn_status infer_hardmax(const graph_node *node, const graph_port *in, int n_in,
                               graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    int rank = in[0].shape.rank;
    if (rank >= 0) {
        /* Opset 13 takes one axis; before, the input is coerced to 2-D at
         * `axis` (default 1). Either way the axis must name a dim. */
        int axis;
        int64_t a = graph_node_attr_int(node, "axis", node->opset >= 13 ? -1 : 1);
        TRY(graph_normalize_axis(node, a, rank, &axis));
    }
    copy_port(&out[0], in[0].type, &in[0].shape);
    return RN_OK;
}

/* ---- Col2Im ---- */

/* input [N, C * prod(block_shape), L] gives [N, C, image_shape...]. */
static rn_status infer_col2im(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    const graph_port *img = &in[1], *blk = &in[2];
    TRY(check_index_type(node, img, 1, "image_shape"));
    TRY(check_index_type(node, blk, 2, "block_shape"));
    if (xs->rank >= 0 && xs->rank != 3)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must be [N, C*blocks, L], rank %d",
                            NODE_ARGS(node), xs->rank);
    if (img->shape.rank != 1 || img->shape.dims[0] == DYN) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    int64_t n_sp = img->shape.dims[0];
    if (n_sp < 1 || n_sp + 2 > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "image_shape has %lld dims", NODE_ARGS(node),
                            (long long)n_sp);
    if (blk->shape.rank >= 0 && (blk->shape.rank != 1 || dims_clash(blk->shape.dims[0], n_sp)))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "block_shape must be 1-D with %lld entries like image_shape",
                            NODE_ARGS(node), (long long)n_sp);
    graph_shape os = {.rank = (int)n_sp + 2};
    for (int d = 0; d < os.rank; d++)
        os.dims[d] = DYN;
    if (xs->rank == 3)
        os.dims[0] = xs->dims[0];
    if (img->data != NULL)
        for (int64_t i = 0; i < n_sp; i++) {
            os.dims[2 + i] = graph_port_int(img, (size_t)i);
            if (os.dims[2 + i] < 1)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "image_shape[%lld] is %lld",
                                    NODE_ARGS(node), (long long)i, (long long)os.dims[2 + i]);
        }
    if (blk->data != NULL && xs->rank == 3 && xs->dims[1] != DYN) {
        int64_t block = 1;
        for (int64_t i = 0; i < n_sp; i++) {
            int64_t b = graph_port_int(blk, (size_t)i);
            if (b < 1 || b > INT32_MAX)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "block_shape[%lld] is %lld",
                                    NODE_ARGS(node), (long long)i, (long long)b);
            block *= b;
            if (block > INT32_MAX)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "block_shape is too large",
                                    NODE_ARGS(node));
        }
        if (xs->dims[1] % block != 0)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input dim 1 (%lld) is not a multiple of the block "
                                         "size %lld",
                                NODE_ARGS(node), (long long)xs->dims[1], (long long)block);
        os.dims[1] = xs->dims[1] / block;
    }
    copy_port(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- BitCast ---- */

static rn_status infer_bit_cast(const graph_node *node, const graph_port *in, int n_in,
                                graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_attr *to = graph_node_attr(node, "to");
    rn_element_type type = to != NULL ? (rn_element_type)to->i : RN_UNDEFINED;
    if (to == NULL || to->type != GRAPH_ATTR_INT || !rn_element_type_is_valid(type) ||
        type == RN_STRING)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "'to' must name a fixed-size element type",
                            NODE_ARGS(node));
    if (in[0].type != RN_UNDEFINED &&
        (in[0].type == RN_STRING || rn_element_type_size(in[0].type) != rn_element_type_size(type)))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "cannot reinterpret %s as %s",
                            NODE_ARGS(node), rn_element_type_name(in[0].type),
                            rn_element_type_name(type));
    copy_port(&out[0], type, &in[0].shape);
    return RN_OK;
}

/* ---- TfIdfVectorizer ---- */

/* f32 [max(ngram_indexes) + 1], or [B, that] for a [B, C] input. */
static rn_status infer_tfidf_vectorizer(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    if (in[0].type != RN_UNDEFINED && in[0].type != RN_I32 && in[0].type != RN_I64 &&
        in[0].type != RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input must be string, i32 or i64, got %s",
                            NODE_ARGS(node), rn_element_type_name(in[0].type));
    if (xs->rank > 2)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input must be [C] or [B, C], rank %d",
                            NODE_ARGS(node), xs->rank);
    const int64_t *idx;
    int n = graph_node_attr_ints(node, "ngram_indexes", &idx);
    int64_t width = 0;
    for (int i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] > INT32_MAX)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "ngram_indexes[%d] is %lld",
                                NODE_ARGS(node), i, (long long)idx[i]);
        width = idx[i] + 1 > width ? idx[i] + 1 : width;
    }
    if (n < 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "ngram_indexes is empty", NODE_ARGS(node));
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], RN_F32);
        return RN_OK;
    }
    graph_shape os = {.rank = xs->rank == 2 ? 2 : 1};
    os.dims[0] = xs->rank == 2 ? xs->dims[0] : width;
    os.dims[os.rank - 1] = width;
    copy_port(&out[0], RN_F32, &os);
    return RN_OK;
}

/* ---- ArrayFeatureExtractor (ai.onnx.ml) ---- */

/* X [..., C] and n indices give [..., n]; a 1-D X gives [1, n]. */
static rn_status infer_array_feature_extractor(const graph_node *node, const graph_port *in,
                                               int n_in, graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    const graph_shape *xs = &in[0].shape;
    if (in[1].type != RN_UNDEFINED && in[1].type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "indices must be i64, got %s",
                            NODE_ARGS(node), rn_element_type_name(in[1].type));
    if (xs->rank == 0)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "X must have rank >= 1", NODE_ARGS(node));
    if (xs->rank < 0) {
        graph_port_unknown(&out[0], in[0].type);
        return RN_OK;
    }
    graph_shape os = *xs;
    if (xs->rank == 1) {
        os.rank = 2;
        os.dims[0] = 1;
    }
    os.dims[os.rank - 1] =
        graph_shape_count(&in[1].shape) >= 0 ? graph_shape_count(&in[1].shape) : DYN;
    copy_port(&out[0], in[0].type, &os);
    return RN_OK;
}

/* ---- the family's table ---- */

#define A(name_, type_)     GRAPH_OPTIONAL(name_, type_)
#define A_REQ(name_, type_) GRAPH_REQUIRED(name_, type_)
#define VALUE_IN(i)         (1u << (i))

const graph_op_schema graph_ops_indexing[] = {
    {"",
     "ScatterElements",
     3,
     3,
     1,
     1,
     0,
     infer_scatter_elements,
     {A("axis", INT), A("reduction", STRING)}},
    {"", "Scatter", 3, 3, 1, 1, 0, infer_scatter_elements, {A("axis", INT)}},
    {"", "ScatterND", 3, 3, 1, 1, 0, infer_scatter_nd, {A("reduction", STRING)}},
    {"", "TensorScatter", 2, 3, 1, 1, 0, infer_tensor_scatter, {A("axis", INT), A("mode", STRING)}},
    {"", "Trilu", 1, 2, 1, 1, 0, infer_trilu, {A("upper", INT)}},
    {"", "CumSum", 2, 2, 1, 1, 0, infer_cumulative, {A("exclusive", INT), A("reverse", INT)}},
    {"", "CumProd", 2, 2, 1, 1, 0, infer_cumulative, {A("exclusive", INT), A("reverse", INT)}},
    {"", "OneHot", 3, 3, 1, 1, VALUE_IN(1), infer_one_hot, {A("axis", INT)}},
    {"", "Compress", 2, 2, 1, 1, VALUE_IN(1), infer_compress, {A("axis", INT)}},
    {"", "EyeLike", 1, 1, 1, 1, 0, infer_eye_like, {A("dtype", INT), A("k", INT)}},
    {"",
     "TopK",
     1,
     2,
     2,
     2,
     VALUE_IN(1),
     infer_top_k,
     {A("axis", INT), A("k", INT), A("largest", INT), A("sorted", INT)}},
    {"", "Unique", 1, 1, 1, 4, 0, infer_unique, {A("axis", INT), A("sorted", INT)}},
    {"", "NonZero", 1, 1, 1, 1, 0, infer_non_zero, {{0}}},
    {"",
     "ReverseSequence",
     2,
     2,
     1,
     1,
     0,
     infer_reverse_sequence,
     {A("batch_axis", INT), A("time_axis", INT)}},
    {"", "CenterCropPad", 2, 2, 1, 1, VALUE_IN(1), infer_center_crop_pad, {A("axes", INTS)}},
    {"", "Hardmax", 1, 1, 1, 1, 0, infer_hardmax, {A("axis", INT)}},
    {"",
     "Col2Im",
     3,
     3,
     1,
     1,
     VALUE_IN(1) | VALUE_IN(2),
     infer_col2im,
     {A("dilations", INTS), A("pads", INTS), A("strides", INTS)}},
    {"", "BitCast", 1, 1, 1, 1, 0, infer_bit_cast, {A_REQ("to", INT)}},
    {"",
     "TfIdfVectorizer",
     1,
     1,
     1,
     1,
     0,
     infer_tfidf_vectorizer,
     {A_REQ("max_gram_length", INT), A_REQ("min_gram_length", INT), A_REQ("max_skip_count", INT),
      A_REQ("mode", STRING), A_REQ("ngram_counts", INTS), A_REQ("ngram_indexes", INTS),
      A("pool_int64s", INTS), A("pool_strings", STRINGS), A("weights", FLOATS)}},
    {"ai.onnx.ml", "ArrayFeatureExtractor", 2, 2, 1, 1, 0, infer_array_feature_extractor, {{0}}},
    {0},
};
