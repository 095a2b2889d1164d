/* Convolutions around a Concat along C steered to a layout blocked along C
 * (nChw8c, nChw16c), so that the Concat is written in place.
 *
 * Where oneDNN's convolutions pick channels-last over format "any" (3.x's
 * brgconv on AVX2: cpu_dnnl_convs_pick_channels_last), a Concat along C
 * copies: the parts of a channels-last tensor do not lie end to end, and a
 * convolution writing into a strided channel range of it falls back to
 * oneDNN's reference kernel (oneDNN issue 1183). In a layout blocked along
 * C with N = 1 they do lie end to end (cpu_concat_dense), and oneDNN's jit
 * convolutions still write it. So this pass marks, with
 * CPU_ATTR_CONCAT_BLOCK (the largest block, 16 or 8, that divides every
 * part's C), the convolutions that write a Concat's parts (directly or
 * through a pooling, which keeps its input's layout) and those that read
 * its output or a part (directly or through a batch normalization, ReLU or
 * pooling), where every part is a convolution's of one group or a Concat
 * steered so: conv.c describes them over a blocked destination when oneDNN has a jit
 * kernel for it (the block its primitives take on this ISA), so the parts
 * are written into the Concat's buffer and its readers take it without a
 * conversion (SqueezeNet's fire modules, DenseNet's dense blocks).
 *
 * The jit kernels over nChw8c are slower than brgconv's over channels-last
 * for 3x3s on many channels, so a model is steered only where the spatial
 * work of the convolutions that would change is small against the copies
 * saved (STEER_MACS_PER_ELEMENT): SqueezeNet and DenseNet are, Inception's
 * four-branch modules are not (their Concats copy, as before).
 *
 * oneDNN 2.6's brgconv picks channels-last too on AVX-512 and AMX (f32 and
 * bf16); in native bf16 its jit kernel over nChw16c (jit_bf16) writes the
 * Concats in place: SqueezeNet's LATENCY median on a Zen 4, against the
 * copies, 0.94 against 1.02 ms quiet, 2.0-2.1 against 2.2 loaded (bench/LOG.md
 * "AVX-512 bf16: ShuffleNet, SqueezeNet"). In f32 it is not steered there:
 * per primitive at one thread DenseNet-121 gained (24.02 -> 23.24 ms) but
 * SqueezeNet lost (2.89 -> 3.75: its 512 -> 1000 classifier as jit_1x1 over
 * nChw16c takes twice brgconv's time); DenseNet's normalizations over
 * channels-last are depthwise convolutions instead (nn.c, bn_as_depthwise). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "plugins/cpu/cpu.h"

static bool is_onnx_op(const graph_node *n, const char *op)
{
    return (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

/* A convolution of one group: a grouped one keeps the kernel oneDNN picks
 * (3.x's brgconv over channels-last is ShuffleNet's gain; its jit kernel
 * over nChw8c takes whole 8-channel groups only). */
static bool is_conv(const graph_node *n)
{
    return (is_onnx_op(n, "Conv") ||
            (strcmp(n->domain, "runnel") == 0 && strcmp(n->op_type, "FusedConv") == 0)) &&
           graph_node_attr_int(n, "group", 1) == 1;
}

/* Ops that write the layout they read (the kernels follow their input's
 * producer): a Concat's part may come through them, its readers too. */
static bool keeps_layout(const graph_node *n)
{
    return is_onnx_op(n, "MaxPool") || is_onnx_op(n, "AveragePool") || is_onnx_op(n, "Relu") ||
           is_onnx_op(n, "BatchNormalization") ||
           (strcmp(n->domain, "runnel") == 0 && strcmp(n->op_type, "FusedBatchNormalization") == 0);
}

/* What the pass would steer: per node id the block asked of a convolution
 * (0: none; the smallest where several Concats ask), the work of those that
 * are not 1x1 (the kernels that get slower: a 3x3 over nChw8c on 3.2's
 * jit:avx2 takes 1.0-1.35x brgconv's time over channels-last, a 1x1
 * 0.86-1.0x) and the elements of the Concats then written in place (the
 * copies saved). */
typedef struct steer_plan {
    int64_t *block;
    double macs, elements;
} steer_plan;

/* Multiply-adds of a convolution that is not 1x1 (0 for a 1x1 or when the
 * shapes are not known): output elements x weights per output. */
static double spatial_macs(const graph_node *conv)
{
    const graph_value *y = conv->outputs[0], *w = conv->n_inputs > 1 ? conv->inputs[1] : NULL;
    if (y == NULL || w == NULL || !graph_shape_is_static(&y->shape) ||
        !graph_shape_is_static(&w->shape) || w->shape.rank < 3)
        return 0;
    double kernel = 1;
    for (int d = 2; d < w->shape.rank; d++)
        kernel *= (double)w->shape.dims[d];
    if (kernel <= 1)
        return 0;
    return (double)graph_shape_count(&y->shape) * (double)w->shape.dims[1] * kernel;
}

/* Puts conv in the plan with block b (or the smaller one it has). */
static void plan_conv(const graph *g, steer_plan *p, const graph_node *conv, int64_t block)
{
    if (conv->id < 0 || conv->id >= g->n_nodes || g->nodes[conv->id] != conv)
        return;
    int64_t *b = &p->block[conv->id];
    if (*b == 0)
        p->macs += spatial_macs(conv);
    if (*b == 0 || *b > block)
        *b = block;
}

/* Sets CPU_ATTR_CONCAT_BLOCK on conv. */
static rn_status mark(graph_node *conv, int64_t block)
{
    for (int a = 0; a < conv->n_attrs; a++)
        if (strcmp(conv->attrs[a].name, CPU_ATTR_CONCAT_BLOCK) == 0) {
            conv->attrs[a].type = GRAPH_ATTR_INT;
            conv->attrs[a].i = block;
            return RN_OK;
        }
    graph_attr attr = {.type = GRAPH_ATTR_INT, .i = block};
    attr.name = strdup(CPU_ATTR_CONCAT_BLOCK);
    if (attr.name == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory marking '%s'", conv->name);
    rn_status st = graph_node_add_attr(conv, &attr);
    if (st != RN_OK)
        free(attr.name);
    return st;
}

/* The largest block (16, 8) that divides C of every input of Concat n
 * along C of an f32 tensor of rank 3 to 5 with N = 1; 0 when none does or
 * the Concat is not one. */
static int64_t concat_block(const graph_node *n)
{
    const graph_value *y = n->n_outputs == 1 ? n->outputs[0] : NULL;
    if (!is_onnx_op(n, "Concat") || y == NULL || y->type != RN_F32 || y->shape.rank < 3 ||
        y->shape.rank > 5 || y->shape.dims[0] != 1 || !graph_shape_is_static(&y->shape))
        return 0;
    int64_t axis = graph_node_attr_int(n, "axis", 0);
    if (axis != 1 && axis != 1 - y->shape.rank)
        return 0;
    int64_t block = 16;
    for (int k = 0; k < n->n_inputs; k++) {
        const graph_value *x = n->inputs[k];
        if (x == NULL || x->shape.rank != y->shape.rank || x->shape.dims[1] <= 0)
            return 0;
        while (block >= 8 && x->shape.dims[1] % block != 0)
            block /= 2;
    }
    return block >= 8 ? block : 0;
}

/* The node that writes v's layout: its producer, or through
 * layout-keeping ops the first that is not one; NULL when none. */
static graph_node *layout_writer(const graph_value *v)
{
    for (int depth = 0; v != NULL && v->producer != NULL && depth < 4; depth++) {
        graph_node *p = v->producer;
        if (!keeps_layout(p) || p->n_inputs < 1)
            return p;
        v = p->inputs[0];
    }
    return NULL;
}

/* Puts the convolutions of g that read v as their data, through
 * layout-keeping ops, in the plan. */
static void plan_readers(const graph *g, steer_plan *p, const graph_value *v, int64_t block,
                         int depth)
{
    for (int i = 0; i < g->n_nodes && depth <= 4; i++) {
        const graph_node *r = g->nodes[i];
        if (r->n_inputs < 1 || r->inputs[0] != v)
            continue;
        if (is_conv(r))
            plan_conv(g, p, r, block);
        else if (keeps_layout(r) && r->n_outputs >= 1 && r->outputs[0] != NULL)
            plan_readers(g, p, r->outputs[0], block, depth + 1);
    }
}

/* Whether every part of Concat n is written by a convolution of one group
 * or by a Concat already steered (steered[id]), each through
 * layout-keeping ops: only then can all of them be blocked along C. */
static bool parts_steerable(const graph *g, const graph_node *n, const bool *steered)
{
    for (int k = 0; k < n->n_inputs; k++) {
        const graph_node *w = layout_writer(n->inputs[k]);
        bool concat =
            w != NULL && w->id >= 0 && w->id < g->n_nodes && g->nodes[w->id] == w && steered[w->id];
        if (w == NULL || (!is_conv(w) && !concat))
            return false;
    }
    return true;
}

/* The bound on the plan's spatial work per element of the Concats it puts
 * in place: above it the slower kernels cost more than the copies saved.
 * Measured on AVX2 (Zen 3, oneDNN 3.2, bench/LOG.md "Concats in place on
 * oneDNN 3.2"): SqueezeNet (~130 multiply-adds per element) and
 * DenseNet-121 (~130) gain, Inception-v1 and v2 (~600) lose 4-6 % at one
 * thread (their 3x3s over 96-192 channels). */
#define STEER_MACS_PER_ELEMENT 256.0

rn_status cpu_mark_concat_convs(graph *g, void *ctx, int *changes)
{
    const bool *native_bf16 = ctx;
    *changes = 0;
    if (!(cpu_dnnl_convs_pick_channels_last() || (native_bf16 != NULL && *native_bf16)) ||
        g->n_nodes == 0)
        return RN_OK;
    steer_plan p = {.block = calloc((size_t)g->n_nodes, sizeof *p.block)};
    bool *steered = calloc((size_t)g->n_nodes, sizeof *steered);
    rn_status st = RN_OK;
    if (p.block == NULL || steered == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) { /* topological: parts first */
        graph_node *n = g->nodes[i];
        int64_t block = concat_block(n);
        if (block == 0 || n->id != i || !parts_steerable(g, n, steered))
            continue;
        steered[i] = true;
        p.elements += (double)graph_shape_count(&n->outputs[0]->shape);
        for (int k = 0; k < n->n_inputs; k++) {
            const graph_node *w = layout_writer(n->inputs[k]);
            if (w != NULL && is_conv(w))
                plan_conv(g, &p, w, block);
            /* A part's other readers read the Concat's bytes (DenseNet's
             * block input, read by the block's first dense layer too). */
            plan_readers(g, &p, n->inputs[k], block, 0);
        }
        plan_readers(g, &p, n->outputs[0], block, 0);
    }
    /* All or nothing: a Concat left out would break a chain of them. */
    if (st == RN_OK && p.elements > 0 && p.macs <= STEER_MACS_PER_ELEMENT * p.elements)
        for (int i = 0; i < g->n_nodes && st == RN_OK; i++)
            if (p.block[i] > 0 && (st = mark(g->nodes[i], p.block[i])) == RN_OK)
                (*changes)++;
    free(p.block);
    free(steered);
    return st;
}
