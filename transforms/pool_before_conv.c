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
 * between them takes the pooled shape of the Conv's input. */
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
        pool->inputs[0] = x;
        conv->inputs[0] = c;
        c->producer = pool;
        c->producer_output = 0;
        y->producer = conv;
        y->producer_output = 0;
        pool->outputs[0] = c;
        conv->outputs[0] = y;
        n++;
    }
    if (changes != NULL)
        *changes = n;
    return n > 0 ? graph_sort(g) : RN_OK;
}
