/* Subgraphs of control-flow kernels as nested plans, run with nested
 * requests (see subgraph.h). */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan_internal.h"
#include "plugins/api/subgraph.h"

struct plugin_subgraph {
    const graph_node *node;
    char *what;        /* the attribute's name, for errors */
    plugin_plan *plan; /* nested */
    int *capture_map;  /* per capture: index in the node's implicit inputs */
};

struct plugin_subgraph_run {
    const plugin_subgraph *sub;
    plugin_request *request;
};

void plugin_subgraph_free(plugin_subgraph *s)
{
    if (s == NULL)
        return;
    plugin_plan_free(s->plan);
    free(s->capture_map);
    free(s->what);
    free(s);
}

rn_status plugin_subgraph_create(const graph_node *node, const graph *body, const char *what,
                                 const plugin_kernel_ctx *ctx, const graph_port *inputs,
                                 int n_inputs, plugin_subgraph **out)
{
    if (ctx == NULL || ctx->registry == NULL)
        return rn_set_error(RN_INTERNAL, "node '%s' (%s): no kernel registry for its subgraphs",
                            node->name, node->op_type);
    plugin_subgraph *s = calloc(1, sizeof *s);
    if (s == NULL || (s->what = strdup(what)) == NULL) {
        free(s);
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                            node->op_type);
    }
    s->node = node;
    graph_value **implicit = NULL;
    int n_implicit = 0;
    rn_status st = plugin_plan_build_nested(body, ctx->registry, inputs, n_inputs, &s->plan);
    if (st != RN_OK) {
        st = rn_wrap_error(st, "node '%s' (%s): %s: ", node->name, node->op_type, what);
        goto fail;
    }
    if ((st = graph_node_outer_inputs(node, &implicit, &n_implicit)) != RN_OK)
        goto fail;
    int n = plugin_plan_capture_count(s->plan);
    s->capture_map = calloc((size_t)n + 1, sizeof *s->capture_map);
    if (s->capture_map == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                          node->op_type);
        goto fail;
    }
    for (int j = 0; j < n; j++) {
        const graph_value *src = plugin_plan_capture_source(s->plan, j);
        int k = 0;
        while (k < n_implicit && implicit[k] != src)
            k++;
        if (k == n_implicit) {
            st = rn_set_error(RN_INTERNAL,
                              "node '%s' (%s): %s reads '%s', which is not among "
                              "the node's implicit inputs",
                              node->name, node->op_type, what, src->name);
            goto fail;
        }
        s->capture_map[j] = k;
    }
    free(implicit);
    *out = s;
    return RN_OK;
fail:
    free(implicit);
    plugin_subgraph_free(s);
    return st;
}

const graph *plugin_subgraph_graph(const plugin_subgraph *s)
{
    return plugin_plan_graph(s->plan);
}

rn_status plugin_subgraph_begin(const plugin_subgraph *s, const plugin_kernel_args *args,
                                plugin_subgraph_run **out)
{
    const graph_node *node = s->node;
    plugin_subgraph_run *run = calloc(1, sizeof *run);
    if (run == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                            node->op_type);
    run->sub = s;
    rn_status st = plugin_request_create(s->plan, NULL, &run->request);
    for (int j = 0; st == RN_OK && j < plugin_plan_capture_count(s->plan); j++) {
        int k = s->capture_map[j];
        if (k >= args->n_implicit || args->implicit == NULL) {
            st = rn_set_error(RN_INTERNAL, "node '%s' (%s): %s: outer value %d was not passed",
                              node->name, node->op_type, s->what, k);
            break;
        }
        st = plugin_request_set_capture(run->request, j, &args->implicit[k]);
    }
    if (st != RN_OK) {
        plugin_subgraph_end(run);
        return st;
    }
    plugin_request_set_cancel_source(run->request, args->cancel);
    *out = run;
    return RN_OK;
}

rn_status plugin_subgraph_invoke(plugin_subgraph_run *run, const graph_tensor *inputs,
                                 graph_tensor *outputs)
{
    const plugin_subgraph *s = run->sub;
    const graph *g = plugin_plan_graph(s->plan);
    const graph_node *node = s->node;
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_inputs && st == RN_OK; i++)
        st = plugin_request_set_input(run->request, (size_t)i, &inputs[i]);
    if (st == RN_OK)
        st = plugin_request_infer(run->request);
    for (int o = 0; o < g->n_outputs && st == RN_OK; o++)
        st = plugin_request_get_output(run->request, (size_t)o, &outputs[o]);
    (void)node;
    return st;
}

void plugin_subgraph_end(plugin_subgraph_run *run)
{
    if (run == NULL)
        return;
    plugin_request_free(run->request);
    free(run);
}
