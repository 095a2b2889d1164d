/* REF Loop (opset 1+; 13 lets loop-carried values be sequences, 16
 * optionals): runs the body (a nested plan built at prepare time) while the
 * iteration count is below M (when given) and the condition holds (when
 * given; the body returns the next one). Loop-carried values are copied out
 * of each iteration into the next; scan outputs are collected per iteration
 * and stacked along a new first axis (all iterations must agree on their
 * shape). Neither M nor cond bounds a loop whose body keeps returning true:
 * such a loop runs until the body says stop, or until the run is cancelled,
 * which is polled before every iteration. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/subgraph.h"
#include "plugins/ref/kernels/tmp.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static void loop_release(void *state)
{
    plugin_subgraph_free(state);
}

static rn_status loop_prepare(const graph_node *node, const plugin_kernel_ctx *ctx, void **state)
{
    const graph_attr *a = graph_node_attr(node, "body");
    if (a == NULL || a->g == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the graph attribute 'body'",
                            NODE_ARGS(node));
    int n = a->g->n_inputs;
    graph_port *seed = calloc((size_t)n + 1, sizeof *seed);
    if (seed == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    /* iteration (i64 scalar), condition (bool scalar), then the kinds and
     * types of the loop-carried values (their shapes may change). */
    if (n > 0)
        seed[0] = (graph_port){.present = true, .type = RN_I64, .shape = {.rank = 0}};
    if (n > 1)
        seed[1] = (graph_port){.present = true, .type = RN_BOOL, .shape = {.rank = 0}};
    for (int k = 2; k < n && k < node->n_inputs; k++) {
        const graph_value *v = node->inputs[k];
        if (v != NULL)
            seed[k] = (graph_port){
                .present = true, .kind = v->kind, .type = v->type, .shape = {.rank = -1}};
    }
    plugin_subgraph *sub = NULL;
    rn_status st = plugin_subgraph_create(node, a->g, "body", ctx, seed, n, &sub);
    free(seed);
    if (st != RN_OK)
        return st;
    *state = sub;
    return RN_OK;
}

/* A one-element value of an optional scalar input, or `dflt` when omitted. */
static rn_status scalar_input(const plugin_kernel_args *args, int i, rn_element_type type,
                              const char *what, int64_t dflt, int64_t *out)
{
    const graph_node *node = args->node;
    *out = dflt;
    if (i >= args->n_inputs || node->inputs[i] == NULL)
        return RN_OK;
    const graph_tensor *t = &args->inputs[i];
    if (t->kind != GRAPH_KIND_TENSOR || t->type != type || graph_tensor_count(t) != 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "%s must be one %s value", NODE_ARGS(node),
                            what, rn_element_type_name(type));
    *out = type == RN_BOOL ? *(const uint8_t *)t->data : *(const int64_t *)t->data;
    return RN_OK;
}

/* The shape of a scan output after zero iterations: [0] and the dims the
 * graph declares for it (unknown ones 0). */
static void empty_scan(const graph_value *v, graph_tensor *t)
{
    t->rank = 1;
    t->dims[0] = 0;
    if (v != NULL && v->shape.rank >= 1) {
        t->rank = v->shape.rank;
        for (int d = 1; d < v->shape.rank; d++)
            t->dims[d] = v->shape.dims[d] > 0 ? v->shape.dims[d] : 0;
    }
}

typedef struct loop_buffers {
    int n_carried, n_scan;
    graph_tensor *carried;   /* owned: the values fed to the next iteration */
    graph_tensor *scans;     /* owned sequences: the scan outputs so far */
    graph_tensor *inputs;    /* views bound to the body */
    graph_tensor *results;   /* views of the body's results */
    graph_tensor iter, cond; /* owned scalars */
} loop_buffers;

static void buffers_free(loop_buffers *b)
{
    for (int k = 0; b->carried != NULL && k < b->n_carried; k++)
        graph_tensor_release(&b->carried[k]);
    for (int k = 0; b->scans != NULL && k < b->n_scan; k++)
        graph_tensor_release(&b->scans[k]);
    ref_tmp_free(b->carried);
    ref_tmp_free(b->scans);
    ref_tmp_free(b->inputs);
    ref_tmp_free(b->results);
    graph_tensor_release(&b->iter);
    graph_tensor_release(&b->cond);
}

/* One iteration: binds (i, cond, carried...), runs the body, takes the next
 * condition and carried values and appends the scan outputs. */
static rn_status iterate(plugin_kernel_args *args, plugin_subgraph_run *run, loop_buffers *b,
                         int64_t i, bool *cond)
{
    const graph_node *node = args->node;
    *(int64_t *)b->iter.data = i;
    *(uint8_t *)b->cond.data = *cond ? 1 : 0;
    b->inputs[0] = b->iter;
    b->inputs[1] = b->cond;
    for (int k = 0; k < b->n_carried; k++)
        b->inputs[2 + k] = b->carried[k];
    rn_status st = plugin_subgraph_invoke(run, b->inputs, b->results);
    if (st != RN_OK)
        return st;
    const graph_tensor *c = &b->results[0];
    if (c->kind != GRAPH_KIND_TENSOR || c->type != RN_BOOL || graph_tensor_count(c) != 1)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "iteration %lld: the body's condition must be one bool",
                            NODE_ARGS(node), (long long)i);
    *cond = *(const uint8_t *)c->data != 0;
    for (int k = 0; k < b->n_carried; k++) {
        graph_tensor next;
        if ((st = graph_tensor_copy(&next, &b->results[1 + k])) != RN_OK)
            return st;
        graph_tensor_release(&b->carried[k]);
        b->carried[k] = next;
    }
    for (int k = 0; k < b->n_scan; k++) {
        const graph_tensor *y = &b->results[1 + b->n_carried + k];
        if (y->kind != GRAPH_KIND_TENSOR)
            return rn_set_error(RN_TYPE_MISMATCH,
                                NODE_FMT "iteration %lld: scan output %d is a %s, expected a "
                                         "tensor",
                                NODE_ARGS(node), (long long)i, k, graph_kind_name(y->kind));
        graph_tensor item;
        if ((st = graph_tensor_copy(&item, y)) != RN_OK)
            return st;
        if ((st = graph_sequence_append(&b->scans[k], &item)) != RN_OK) {
            graph_tensor_release(&item);
            return st;
        }
    }
    return RN_OK;
}

static rn_status loop_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const plugin_subgraph *sub = args->state;
    const graph *body = plugin_subgraph_graph(sub);
    int64_t trip = -1, cond_in = 1;
    bool bounded = args->n_inputs > 0 && node->inputs[0] != NULL;
    rn_status st = scalar_input(args, 0, RN_I64, "M", -1, &trip);
    if (st == RN_OK)
        st = scalar_input(args, 1, RN_BOOL, "cond", 1, &cond_in);
    if (st != RN_OK)
        return st;
    loop_buffers b = {.n_carried = args->n_inputs - 2};
    b.n_scan = args->n_outputs - b.n_carried;
    if (b.n_carried < 0 || b.n_scan < 0 || body->n_inputs != 2 + b.n_carried ||
        body->n_outputs != 1 + b.n_carried + b.n_scan)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "the body's %d inputs and %d results do not fit %d inputs "
                                     "and %d outputs",
                            NODE_ARGS(node), body->n_inputs, body->n_outputs, args->n_inputs,
                            args->n_outputs);
    b.carried = ref_tmp_calloc((size_t)b.n_carried + 1, sizeof *b.carried);
    b.scans = ref_tmp_calloc((size_t)b.n_scan + 1, sizeof *b.scans);
    b.inputs = ref_tmp_calloc((size_t)body->n_inputs + 1, sizeof *b.inputs);
    b.results = ref_tmp_calloc((size_t)body->n_outputs + 1, sizeof *b.results);
    b.iter = (graph_tensor){.type = RN_I64};
    b.cond = (graph_tensor){.type = RN_BOOL};
    if (!b.carried || !b.scans || !b.inputs || !b.results)
        st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    if (st == RN_OK && (st = ref_tensor_alloc(node, &b.iter)) == RN_OK)
        st = ref_tensor_alloc(node, &b.cond);
    for (int k = 0; k < b.n_carried && st == RN_OK; k++) {
        if (node->inputs[2 + k] == NULL)
            st = rn_set_error(RN_INVALID_ARG, NODE_FMT "loop-carried input %d is empty",
                              NODE_ARGS(node), k);
        else
            st = graph_tensor_copy(&b.carried[k], &args->inputs[2 + k]);
    }
    for (int k = 0; k < b.n_scan; k++)
        b.scans[k] = (graph_tensor){.kind = GRAPH_KIND_SEQUENCE};
    plugin_subgraph_run *run = NULL;
    if (st == RN_OK)
        st = plugin_subgraph_begin(sub, args, &run);
    bool cond = cond_in != 0;
    int64_t i = 0;
    for (; st == RN_OK && cond && (!bounded || i < trip); i++) {
        if (args->cancel != NULL && atomic_load(args->cancel)) {
            st = rn_set_error(RN_CANCELLED, NODE_FMT "cancelled at iteration %lld", NODE_ARGS(node),
                              (long long)i);
            break;
        }
        if ((st = iterate(args, run, &b, i, &cond)) != RN_OK && st != RN_CANCELLED)
            st =
                rn_wrap_error(st, NODE_FMT "body, iteration %lld: ", NODE_ARGS(node), (long long)i);
    }
    plugin_subgraph_end(run);
    for (int k = 0; k < b.n_carried && st == RN_OK; k++)
        if (node->outputs[k] != NULL && (st = args->move_output(args, k, &b.carried[k])) != RN_OK)
            break;
    for (int k = 0; k < b.n_scan && st == RN_OK; k++) {
        const graph_value *v = node->outputs[b.n_carried + k];
        if (v == NULL)
            continue;
        graph_tensor y = {0};
        if (b.scans[k].n_items > 0) {
            st = ref_concat(node, b.scans[k].items, b.scans[k].n_items, 0, true, &y);
        } else {
            y.type = v->type;
            empty_scan(v, &y);
            st = ref_tensor_alloc(node, &y);
        }
        if (st == RN_OK && (st = args->move_output(args, b.n_carried + k, &y)) != RN_OK)
            graph_tensor_release(&y);
    }
    buffers_free(&b);
    return st;
}

const plugin_kernel ref_kernel_loop = {
    .domain = "",
    .op_type = "Loop",
    .impl_type = "ref",
    .supports = ref_supports_any,
    .prepare_ctx = loop_prepare,
    .run = loop_run,
    .release = loop_release,
    .values = true,
};
