/* REF SequenceMap (opset 17): runs the body once per item of the first input
 * sequence; the other inputs are passed item by item when they are sequences
 * (of the same length) and whole when they are tensors. Result k of every
 * run becomes item k of output sequence k. */
#include <stdlib.h>

#include "plugins/api/subgraph.h"
#include "plugins/ref/kernels/tmp.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static void sequence_map_release(void *state)
{
    plugin_subgraph_free(state);
}

static rn_status sequence_map_prepare(const graph_node *node, const plugin_kernel_ctx *ctx,
                                      void **state)
{
    const graph_attr *a = graph_node_attr(node, "body");
    if (a == NULL || a->g == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the graph attribute 'body'",
                            NODE_ARGS(node));
    int n = a->g->n_inputs;
    graph_port *seed = calloc((size_t)n + 1, sizeof *seed);
    if (seed == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    for (int i = 0; i < n && i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v == NULL)
            continue;
        seed[i] = (graph_port){.present = true, .type = v->type, .shape = v->shape};
        if (i == 0 || v->kind == GRAPH_KIND_SEQUENCE)
            seed[i].shape.rank = -1; /* one item of the sequence */
        else
            seed[i].kind = v->kind;
    }
    plugin_subgraph *sub = NULL;
    rn_status st = plugin_subgraph_create(node, a->g, "body", ctx, seed, n, &sub);
    free(seed);
    if (st != RN_OK)
        return st;
    *state = sub;
    return RN_OK;
}

static rn_status sequence_map_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const plugin_subgraph *sub = args->state;
    const graph *body = plugin_subgraph_graph(sub);
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_SEQUENCE);
    if (st != RN_OK)
        return st;
    if (body->n_inputs != args->n_inputs || body->n_outputs != args->n_outputs)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "the body's %d inputs and %d results do not fit the node",
                            NODE_ARGS(node), body->n_inputs, body->n_outputs);
    size_t n = args->inputs[0].n_items;
    for (int i = 1; i < args->n_inputs; i++) {
        const graph_tensor *x = &args->inputs[i];
        if (node->inputs[i] == NULL)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d is empty", NODE_ARGS(node), i);
        if (x->kind == GRAPH_KIND_SEQUENCE && x->n_items != n)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d holds %zu items, input 0 holds %zu",
                                NODE_ARGS(node), i, x->n_items, n);
        if (x->kind != GRAPH_KIND_SEQUENCE && x->kind != GRAPH_KIND_TENSOR)
            return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is a %s", NODE_ARGS(node), i,
                                graph_kind_name(x->kind));
    }
    graph_tensor *buf =
        ref_tmp_calloc((size_t)(2 * args->n_inputs + args->n_outputs) + 1, sizeof *buf);
    if (buf == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    graph_tensor *in = buf, *res = buf + args->n_inputs, *seqs = res + args->n_outputs;
    for (int k = 0; k < args->n_outputs; k++)
        seqs[k] = (graph_tensor){.kind = GRAPH_KIND_SEQUENCE,
                                 .type = node->outputs[k] != NULL ? node->outputs[k]->type
                                                                  : RN_UNDEFINED};
    plugin_subgraph_run *run = NULL;
    st = plugin_subgraph_begin(sub, args, &run);
    for (size_t t = 0; t < n && st == RN_OK; t++) {
        if (args->cancel != NULL && atomic_load(args->cancel)) {
            st = rn_set_error(RN_CANCELLED, NODE_FMT "cancelled at item %zu", NODE_ARGS(node), t);
            break;
        }
        for (int i = 0; i < args->n_inputs; i++) {
            const graph_tensor *x = &args->inputs[i];
            in[i] = x->kind == GRAPH_KIND_SEQUENCE ? x->items[t] : *x;
        }
        if ((st = plugin_subgraph_invoke(run, in, res)) != RN_OK) {
            if (st != RN_CANCELLED)
                st = rn_wrap_error(st, NODE_FMT "body, item %zu: ", NODE_ARGS(node), t);
            break;
        }
        for (int k = 0; k < args->n_outputs && st == RN_OK; k++) {
            graph_tensor item;
            if (res[k].kind != GRAPH_KIND_TENSOR) {
                st = rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "body result %d is a %s",
                                  NODE_ARGS(node), k, graph_kind_name(res[k].kind));
                break;
            }
            seqs[k].type = res[k].type;
            if ((st = graph_tensor_copy(&item, &res[k])) == RN_OK &&
                (st = graph_sequence_append(&seqs[k], &item)) != RN_OK)
                graph_tensor_release(&item);
        }
    }
    plugin_subgraph_end(run);
    for (int k = 0; k < args->n_outputs && st == RN_OK; k++)
        if (node->outputs[k] != NULL)
            st = args->move_output(args, k, &seqs[k]);
    for (int k = 0; k < args->n_outputs; k++)
        graph_tensor_release(&seqs[k]);
    ref_tmp_free(buf);
    return st;
}

const plugin_kernel ref_kernel_sequence_map = {
    .domain = "",
    .op_type = "SequenceMap",
    .impl_type = "ref",
    .supports = ref_supports_any,
    .prepare_ctx = sequence_map_prepare,
    .run = sequence_map_run,
    .release = sequence_map_release,
    .values = true,
};
