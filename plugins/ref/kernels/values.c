/* Helpers of the REF kernels that build values of their own (values.h). */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

bool ref_supports_any(const graph_node *node, const char **why)
{
    (void)node, (void)why;
    return true;
}

rn_status ref_expect_kind(const plugin_kernel_args *args, int i, graph_kind kind)
{
    const graph_node *node = args->node;
    const graph_tensor *t = &args->inputs[i];
    if (i >= args->n_inputs || node->inputs[i] == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d is required", NODE_ARGS(node), i);
    if (t->kind != kind) {
        if (graph_kind_is_optional(t->kind))
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "input %d '%s' is an optional without a "
                                         "value, expected a %s",
                                NODE_ARGS(node), i, node->inputs[i]->name, graph_kind_name(kind));
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d '%s' is a %s, expected a %s",
                            NODE_ARGS(node), i, node->inputs[i]->name, graph_kind_name(t->kind),
                            graph_kind_name(kind));
    }
    return RN_OK;
}

rn_status ref_tensor_alloc(const graph_node *node, graph_tensor *t)
{
    size_t count = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0 || (t->dims[d] > 0 && count > SIZE_MAX / 16 / (size_t)t->dims[d]))
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "output shape is too large",
                                NODE_ARGS(node));
        count *= (size_t)t->dims[d];
    }
    t->kind = GRAPH_KIND_TENSOR;
    t->nbytes = plugin_tensor_nbytes(t->type, count);
    t->data = calloc(1, t->nbytes ? t->nbytes : 1);
    if (t->data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "cannot allocate %zu bytes", NODE_ARGS(node),
                            t->nbytes);
    return RN_OK;
}

rn_status ref_copy_elements(const graph_node *node, rn_element_type type, void *dst, size_t dst_off,
                            const void *src, size_t src_off, size_t count)
{
    if (type != RN_STRING) {
        size_t es = rn_element_type_size(type);
        if (count)
            memcpy((char *)dst + dst_off * es, (const char *)src + src_off * es, count * es);
        return RN_OK;
    }
    char **d = (char **)dst + dst_off;
    char *const *s = (char *const *)src + src_off;
    for (size_t i = 0; i < count; i++) {
        free(d[i]);
        d[i] = strdup(s[i] != NULL ? s[i] : "");
        if (d[i] == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory copying strings",
                                NODE_ARGS(node));
    }
    return RN_OK;
}

rn_status ref_read_position(const graph_node *node, const graph_tensor *t, int64_t *out)
{
    if (t->kind != GRAPH_KIND_TENSOR || (t->type != RN_I32 && t->type != RN_I64) ||
        graph_tensor_count(t) != 1)
        return rn_set_error(
            RN_INVALID_ARG, NODE_FMT "position must be one i32 or i64 value, got a %s %s of %zu",
            NODE_ARGS(node), rn_element_type_name(t->type), graph_kind_name(t->kind),
            t->kind == GRAPH_KIND_TENSOR ? graph_tensor_count(t) : 0);
    *out = t->type == RN_I32 ? *(const int32_t *)t->data : *(const int64_t *)t->data;
    return RN_OK;
}

rn_status ref_resolve_position(const graph_node *node, int64_t pos, size_t n, bool end_ok,
                               size_t *out)
{
    int64_t len = (int64_t)n;
    int64_t hi = end_ok ? len : len - 1;
    if (pos < -len || pos > hi)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "position %lld is out of range [%lld, %lld] for a sequence "
                                     "of %zu",
                            NODE_ARGS(node), (long long)pos, (long long)-len, (long long)hi, n);
    *out = (size_t)(pos < 0 ? pos + len : pos);
    return RN_OK;
}

rn_status ref_concat(const graph_node *node, const graph_tensor *items, size_t n, int axis,
                     bool new_axis, graph_tensor *out)
{
    const graph_tensor *a = &items[0];
    int rank = a->rank;
    int out_rank = new_axis ? rank + 1 : rank;
    if (out_rank > RN_MAX_RANK || axis < 0 || axis >= out_rank)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "axis %d is out of range for rank %d",
                            NODE_ARGS(node), axis, out_rank);
    int64_t along = 0;
    for (size_t i = 0; i < n; i++) {
        const graph_tensor *t = &items[i];
        if (t->kind != GRAPH_KIND_TENSOR || t->type != a->type || t->rank != rank)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "item %zu is a %s %s of rank %d, item 0 a %s tensor of "
                                         "rank %d",
                                NODE_ARGS(node), i, rn_element_type_name(t->type),
                                graph_kind_name(t->kind), t->rank, rn_element_type_name(a->type),
                                rank);
        for (int d = 0; d < rank; d++)
            if ((new_axis || d != axis) && t->dims[d] != a->dims[d])
                return rn_set_error(
                    RN_SHAPE_MISMATCH, NODE_FMT "item %zu has dim %d of %lld, item 0 of %lld",
                    NODE_ARGS(node), i, d, (long long)t->dims[d], (long long)a->dims[d]);
        along += new_axis ? 1 : t->dims[axis];
    }
    graph_tensor o = {.type = a->type, .rank = out_rank};
    for (int d = 0, k = 0; d < out_rank; d++) {
        if (d == axis)
            o.dims[d] = along;
        else
            o.dims[d] = a->dims[k];
        if (d != axis || !new_axis)
            k++;
    }
    rn_status st = ref_tensor_alloc(node, &o);
    if (st != RN_OK)
        return st;
    /* outer: the product of the dims before the axis; each item adds a slab
     * of (its extent along the axis) * inner elements per outer index. */
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= (size_t)o.dims[d];
    for (int d = axis + 1; d < out_rank; d++)
        inner *= (size_t)o.dims[d];
    size_t row = (size_t)along * inner, at = 0;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        size_t slab = (new_axis ? 1 : (size_t)items[i].dims[axis]) * inner;
        for (size_t q = 0; q < outer && st == RN_OK; q++)
            st = ref_copy_elements(node, o.type, o.data, q * row + at, items[i].data, q * slab,
                                   slab);
        at += slab;
    }
    if (st != RN_OK) {
        graph_tensor_release(&o);
        return st;
    }
    *out = o;
    return RN_OK;
}

rn_status ref_take(const graph_node *node, const graph_tensor *x, int axis, int64_t index,
                   graph_tensor *out)
{
    if (axis < 0 || axis >= x->rank || index < 0 || index >= x->dims[axis])
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "slice %lld along axis %d is out of range",
                            NODE_ARGS(node), (long long)index, axis);
    graph_tensor o = {.type = x->type, .rank = x->rank - 1};
    for (int d = 0, k = 0; d < x->rank; d++)
        if (d != axis)
            o.dims[k++] = x->dims[d];
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
        st = ref_copy_elements(node, x->type, o.data, q * inner, x->data,
                               (q * extent + (size_t)index) * inner, inner);
    if (st != RN_OK) {
        graph_tensor_release(&o);
        return st;
    }
    *out = o;
    return RN_OK;
}

rn_status ref_move_copy(plugin_kernel_args *args, int index, const graph_tensor *value)
{
    graph_tensor copy;
    rn_status st = graph_tensor_copy(&copy, value);
    if (st != RN_OK)
        return st;
    if ((st = args->move_output(args, index, &copy)) != RN_OK)
        graph_tensor_release(&copy);
    return st;
}
