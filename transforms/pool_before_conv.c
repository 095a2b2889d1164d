/* pool_before_conv: a pointwise (1x1, stride 1, no padding) Conv whose only
 * reader is an AveragePool without padding becomes the AveragePool followed
 * by the Conv. Both are linear along the spatial axes: averaging a window
 * of Conv outputs is the Conv of the window's average, the bias included
 * (every window's weights sum to 1). The Conv then runs on the pooled,
 * smaller image: DenseNet's transition layers (BN -> ReLU -> Conv 1x1 ->
 * AveragePool 2x2 stride 2) do a quarter of their multiply-adds, and the
 * pool averages the Conv's input channels instead of its output channels
 * (twice as many in DenseNet: cheap next to the Conv). Only where the pool
 * shrinks the image, on static shapes. The nodes keep their names and the
 * AveragePool's output (the name users see) is the Conv's now; the value
 * between them takes the pooled shape of the Conv's input.
 *
 * pool_after_conv is the same identity read the other way: an AveragePool
 * that keeps the image size (stride 1, padded, Inception-v2's and -v3's
 * pool projections: AveragePool 3x3/1 pad 1 -> Conv 1x1) whose only reader
 * is a pointwise Conv with fewer output channels than input channels runs
 * after the Conv, on its output channels. The Conv does the same work
 * either way (same image); the pool averages 128 channels instead of 576.
 * Padding is allowed where the pool excludes it from the divisor
 * (count_include_pad 0, ONNX's default): every window's weights still sum
 * to 1, so the bias commutes. It runs before fuse_activation: the Conv's
 * ReLU (after BatchNormalization folded into it) stays after the pool. */
#include <string.h>

#include "transforms/rewrite.h"

static bool is_default(const graph_node *n, const char *op)
{
    return (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

/* Whether the INTS attribute `name` is absent or every entry is `v`. */
static bool ints_all(const graph_node *n, const char *name, int64_t v)
{
    const int64_t *vals;
    int k = graph_node_attr_ints(n, name, &vals);
    for (int i = 0; i < k; i++)
        if (vals[i] != v)
            return false;
    return true;
}

static bool no_auto_pad(const graph_node *n)
{
    const char *p = graph_node_attr_string(n, "auto_pad", "NOTSET");
    return strcmp(p, "NOTSET") == 0 || strcmp(p, "VALID") == 0;
}

/* Whether conv is a pointwise Conv of static x by constant weights. */
static bool pointwise_conv(const graph_node *conv)
{
    if (!is_default(conv, "Conv") || conv->n_inputs < 2 || conv->n_inputs > 3 ||
        conv->n_outputs != 1 || conv->outputs[0] == NULL || conv->inputs[0] == NULL ||
        conv->inputs[1] == NULL || !transforms_is_constant(conv->inputs[1]) ||
        (conv->n_inputs == 3 && conv->inputs[2] != NULL &&
         !transforms_is_constant(conv->inputs[2])))
        return false;
    const graph_shape *x = &conv->inputs[0]->shape, *w = &conv->inputs[1]->shape;
    if (x->rank < 3 || w->rank != x->rank || !graph_shape_is_static(x) || !graph_shape_is_static(w))
        return false;
    for (int d = 2; d < w->rank; d++)
        if (w->dims[d] != 1)
            return false;
    return ints_all(conv, "strides", 1) && ints_all(conv, "pads", 0) && no_auto_pad(conv);
}

/* Whether pool's output is its input's average over windows whose weights
 * sum to 1 (no dilation or ceil_mode; pads only where the divisor excludes
 * them), of static shapes of one rank. */
static bool unit_average_pool(const graph_node *pool)
{
    if (!is_default(pool, "AveragePool") || pool->n_inputs != 1 || pool->inputs[0] == NULL ||
        pool->n_outputs != 1 || pool->outputs[0] == NULL ||
        graph_node_attr_int(pool, "ceil_mode", 0) != 0 || !ints_all(pool, "dilations", 1) ||
        !no_auto_pad(pool) ||
        (graph_node_attr_int(pool, "count_include_pad", 0) != 0 && !ints_all(pool, "pads", 0)))
        return false;
    const graph_shape *xs = &pool->inputs[0]->shape, *ys = &pool->outputs[0]->shape;
    return ys->rank == xs->rank && graph_shape_is_static(xs) && graph_shape_is_static(ys);
}

/* Whether pool averages its input c (the Conv's output, of x's rank)
 * without padding or dilation into a smaller static image. */
static bool shrinking_average_pool(const graph_node *pool, const graph_value *c)
{
    if (!is_default(pool, "AveragePool") || pool->n_inputs != 1 || pool->inputs[0] != c ||
        pool->n_outputs != 1 || pool->outputs[0] == NULL ||
        graph_node_attr_int(pool, "ceil_mode", 0) != 0 || !ints_all(pool, "pads", 0) ||
        !ints_all(pool, "dilations", 1) || !no_auto_pad(pool))
        return false;
    const graph_shape *cs = &c->shape, *ys = &pool->outputs[0]->shape;
    if (ys->rank != cs->rank || !graph_shape_is_static(ys) || !graph_shape_is_static(cs))
        return false;
    int64_t in = 1, out = 1;
    for (int d = 2; d < cs->rank; d++) {
        in *= cs->dims[d];
        out *= ys->dims[d];
    }
    return out < in;
}

/* x -> first -> m -> second -> y becomes x -> second -> m -> first -> y:
 * the two single-input, single-output nodes trade places, the value m
 * between them stays (its shape is the caller's to set) and y keeps its
 * name as first's output. */
static void trade_places(graph_node *first, graph_node *second)
{
    graph_value *x = first->inputs[0], *m = first->outputs[0], *y = second->outputs[0];
    second->inputs[0] = x;
    first->inputs[0] = m;
    m->producer = second;
    m->producer_output = 0;
    y->producer = first;
    y->producer_output = 0;
    second->outputs[0] = m;
    first->outputs[0] = y;
}

rn_status transforms_pool_before_conv(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *conv = g->nodes[i];
        if (!pointwise_conv(conv))
            continue;
        graph_value *x = conv->inputs[0], *c = conv->outputs[0];
        graph_node *pool = transforms_sole_reader(g, c);
        if (pool == NULL || !shrinking_average_pool(pool, c))
            continue;
        graph_value *y = pool->outputs[0];
        /* x -> pool -> c -> conv -> y; c is x pooled. */
        c->shape.dims[1] = x->shape.dims[1];
        for (int d = 2; d < c->shape.rank; d++)
            c->shape.dims[d] = y->shape.dims[d];
        trade_places(conv, pool);
        n++;
    }
    if (changes != NULL)
        *changes = n;
    return n > 0 ? graph_sort(g) : RN_OK;
}

static bool in_graph(const graph *g, const graph_node *node)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == node)
            return true;
    return false;
}

/* Whether pool keeps its input's image size. */
static bool same_image(const graph_node *pool)
{
    const graph_shape *xs = &pool->inputs[0]->shape, *ys = &pool->outputs[0]->shape;
    for (int d = 2; d < xs->rank; d++)
        if (xs->dims[d] != ys->dims[d])
            return false;
    return true;
}

rn_status transforms_pool_after_conv(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *conv = g->nodes[i];
        if (!pointwise_conv(conv))
            continue;
        graph_value *p = conv->inputs[0], *y = conv->outputs[0];
        graph_node *pool = p->producer;
        /* The pool is g's own node (not an outer scope's), p read by the
         * Conv alone. */
        if (pool == NULL || !in_graph(g, pool) || transforms_sole_reader(g, p) != conv ||
            !unit_average_pool(pool) || !same_image(pool) || y->shape.rank != p->shape.rank ||
            !graph_shape_is_static(&y->shape) || y->shape.dims[1] >= p->shape.dims[1])
            continue;
        /* x -> conv -> p -> pool -> y; p is the Conv's output, unpooled
         * (the pool keeps the image, so only its channels change). */
        p->shape.dims[1] = y->shape.dims[1];
        trade_places(pool, conv);
        n++;
    }
    if (changes != NULL)
        *changes = n;
    return n > 0 ? graph_sort(g) : RN_OK;
}
