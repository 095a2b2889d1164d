/* REF SplitToSequence and ConcatFromSequence (opset 11), for every element
 * type including strings.
 *
 * SplitToSequence: `split` may be a scalar (chunks of that length, the last
 * one shorter when the dim does not divide) or a 1-D list of lengths that sum
 * to the dim; without it the input is split into pieces of length 1, whose
 * axis is dropped when keepdims is 0. ConcatFromSequence concatenates the
 * items along `axis`, or with new_axis = 1 stacks them along a new axis
 * (axis then ranges over [-r-1, r]). */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/tmp.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

/* Copies x[..., from:from+len, ...] along axis into an owned *out. */
static rn_status slice_axis(const graph_node *node, const graph_tensor *x, int axis, int64_t from,
                            int64_t len, graph_tensor *out)
{
    graph_tensor o = {.type = x->type, .rank = x->rank};
    memcpy(o.dims, x->dims, sizeof o.dims);
    o.dims[axis] = len;
    rn_status st = ref_tensor_alloc(node, &o);
    if (st != RN_OK)
        return st;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= (size_t)x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= (size_t)x->dims[d];
    size_t extent = (size_t)x->dims[axis];
    for (size_t q = 0; q < outer && st == RN_OK; q++)
        st = ref_copy_elements(node, x->type, o.data, q * (size_t)len * inner, x->data,
                               (q * extent + (size_t)from) * inner, (size_t)len * inner);
    if (st != RN_OK) {
        graph_tensor_release(&o);
        return st;
    }
    *out = o;
    return RN_OK;
}

/* Reads element i of an i32/i64 tensor. */
static int64_t int_at(const graph_tensor *t, size_t i)
{
    return t->type == RN_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

static rn_status split_to_sequence_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_TENSOR);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    if (x->rank == 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "cannot split a scalar", NODE_ARGS(node));
    int axis;
    if ((st = graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), x->rank, &axis)) !=
        RN_OK)
        return st;
    bool keepdims = graph_node_attr_int(node, "keepdims", 1) != 0;
    int64_t dim = x->dims[axis];
    const graph_tensor *split =
        args->n_inputs > 1 && node->inputs[1] != NULL ? &args->inputs[1] : NULL;
    /* The piece lengths, computed up front so that bad splits fail before
     * anything is built. */
    int64_t *lens = NULL;
    size_t n = 0;
    if (split == NULL) {
        n = (size_t)dim;
    } else {
        if (split->kind != GRAPH_KIND_TENSOR || (split->type != RN_I32 && split->type != RN_I64) ||
            split->rank > 1)
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "split must be an i32 or i64 scalar or 1-D tensor",
                                NODE_ARGS(node));
        if (split->rank == 0) {
            int64_t len = int_at(split, 0);
            if (len <= 0)
                return rn_set_error(RN_INVALID_ARG, NODE_FMT "split is %lld, expected > 0",
                                    NODE_ARGS(node), (long long)len);
            n = (size_t)((dim + len - 1) / len);
        } else {
            n = (size_t)split->dims[0];
        }
    }
    lens = ref_tmp_calloc(n + 1, sizeof *lens);
    if (lens == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    int64_t total = 0;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (split == NULL)
            lens[i] = 1;
        else if (split->rank == 0)
            lens[i] = dim - total < int_at(split, 0) ? dim - total : int_at(split, 0);
        else if ((lens[i] = int_at(split, i)) < 0)
            st = rn_set_error(RN_INVALID_ARG, NODE_FMT "split[%zu] is %lld, expected >= 0",
                              NODE_ARGS(node), i, (long long)lens[i]);
        total += lens[i];
    }
    if (st == RN_OK && total != dim)
        st = rn_set_error(RN_INVALID_ARG, NODE_FMT "the split lengths sum to %lld, dim %d is %lld",
                          NODE_ARGS(node), (long long)total, axis, (long long)dim);
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = x->type};
    int64_t from = 0;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        graph_tensor piece;
        st = slice_axis(node, x, axis, from, lens[i], &piece);
        from += lens[i];
        if (st != RN_OK)
            break;
        if (split == NULL && !keepdims) {
            for (int d = axis; d + 1 < piece.rank; d++)
                piece.dims[d] = piece.dims[d + 1];
            piece.rank--;
        }
        if ((st = graph_sequence_append(&seq, &piece)) != RN_OK)
            graph_tensor_release(&piece);
    }
    ref_tmp_free(lens);
    if (st == RN_OK)
        st = args->move_output(args, 0, &seq);
    graph_tensor_release(&seq);
    return st;
}

static rn_status concat_from_sequence_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_SEQUENCE);
    if (st != RN_OK)
        return st;
    const graph_tensor *s = &args->inputs[0];
    if (s->n_items == 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "cannot concatenate an empty sequence",
                            NODE_ARGS(node));
    bool new_axis = graph_node_attr_int(node, "new_axis", 0) != 0;
    int rank = s->items[0].rank + (new_axis ? 1 : 0);
    if (rank == 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "cannot concatenate scalars without new_axis",
                            NODE_ARGS(node));
    int axis;
    if ((st = graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), rank, &axis)) !=
        RN_OK)
        return st;
    graph_tensor y;
    if ((st = ref_concat(node, s->items, s->n_items, axis, new_axis, &y)) != RN_OK)
        return st;
    if ((st = args->move_output(args, 0, &y)) != RN_OK)
        graph_tensor_release(&y);
    return st;
}

REF_VALUE_KERNEL(ref_kernel_split_to_sequence, "SplitToSequence", ref_supports_any,
                 split_to_sequence_run)
REF_VALUE_KERNEL(ref_kernel_concat_from_sequence, "ConcatFromSequence", ref_supports_any,
                 concat_from_sequence_run)
