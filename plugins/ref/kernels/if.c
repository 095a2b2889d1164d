/* REF If: runs then_branch or else_branch (nested plans built at prepare
 * time with REF's own kernels) on a one-element bool condition, and hands
 * over copies of the branch's results: tensors of any shape, sequences, or
 * optionals with or without a value. */
#include <stdio.h>
#include <stdlib.h>

#include "plugins/api/subgraph.h"
#include "plugins/ref/kernels/tmp.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

/* A branch whose plan cannot be built (its shapes rule it out: an expanded
 * function's branch for another rank, say) fails only when taken. */
typedef struct if_state {
    plugin_subgraph *branch[2]; /* then, else; NULL when it could not be built */
    rn_status error[2];
    char why[2][512];
} if_state;

static void if_release(void *state)
{
    if_state *s = state;
    if (s == NULL)
        return;
    plugin_subgraph_free(s->branch[0]);
    plugin_subgraph_free(s->branch[1]);
    free(s);
}

static rn_status if_prepare(const graph_node *node, const plugin_kernel_ctx *ctx, void **state)
{
    if_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    static const char *const names[2] = {"then_branch", "else_branch"};
    rn_status st = RN_OK;
    for (int b = 0; b < 2 && st == RN_OK; b++) {
        const graph_attr *a = graph_node_attr(node, names[b]);
        if (a == NULL || a->g == NULL) {
            st = rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the graph attribute '%s'",
                              NODE_ARGS(node), names[b]);
            break;
        }
        s->error[b] = plugin_subgraph_create(node, a->g, names[b], ctx, NULL, 0, &s->branch[b]);
        if (s->error[b] != RN_OK)
            snprintf(s->why[b], sizeof s->why[b], "%s", rn_last_error());
    }
    if (st == RN_OK && s->error[0] != RN_OK && s->error[1] != RN_OK)
        st = rn_set_error(s->error[0], "%s", s->why[0]);
    if (st != RN_OK) {
        if_release(s);
        return st;
    }
    rn_clear_error();
    *state = s;
    return RN_OK;
}

static rn_status if_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const if_state *s = args->state;
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_TENSOR);
    if (st != RN_OK)
        return st;
    const graph_tensor *c = &args->inputs[0];
    if (c->type != RN_BOOL || graph_tensor_count(c) != 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "cond must be one bool, got %s of %zu",
                            NODE_ARGS(node), rn_element_type_name(c->type), graph_tensor_count(c));
    int which = *(const uint8_t *)c->data ? 0 : 1;
    if (s->branch[which] == NULL)
        return rn_set_error(s->error[which], "%s", s->why[which]);
    const plugin_subgraph *branch = s->branch[which];
    const graph *g = plugin_subgraph_graph(branch);
    if (g->n_outputs != args->n_outputs)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "the branch has %d results for %d outputs",
                            NODE_ARGS(node), g->n_outputs, args->n_outputs);
    graph_tensor *results = ref_tmp_calloc((size_t)g->n_outputs + 1, sizeof *results);
    if (results == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    plugin_subgraph_run *run = NULL;
    st = plugin_subgraph_begin(branch, args, &run);
    if (st == RN_OK && (st = plugin_subgraph_invoke(run, NULL, results)) != RN_OK &&
        st != RN_CANCELLED)
        st = rn_wrap_error(st, NODE_FMT "%s: ", NODE_ARGS(node),
                           which == 0 ? "then_branch" : "else_branch");
    for (int o = 0; o < args->n_outputs && st == RN_OK; o++)
        if (node->outputs[o] != NULL)
            st = ref_move_copy(args, o, &results[o]);
    plugin_subgraph_end(run);
    ref_tmp_free(results);
    return st;
}

const plugin_kernel ref_kernel_if = {
    .domain = "",
    .op_type = "If",
    .impl_type = "ref",
    .supports = ref_supports_any,
    .prepare_ctx = if_prepare,
    .run = if_run,
    .release = if_release,
    .values = true,
};
