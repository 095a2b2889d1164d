/* query_model: which of a model's original layers a device runs. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/query.h"

/* Adds `name` with `ok` to the result, and-ing with an earlier entry of the
 * same name (a layer is supported only if every node standing for it is). */
static rn_status add_entry(plugin_query_result *q, const char *name, bool ok)
{
    for (size_t i = 0; i < q->count; i++)
        if (strcmp(q->names[i], name) == 0) {
            q->supported[i] = q->supported[i] && ok;
            return RN_OK;
        }
    if (q->count == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        char **names = realloc(q->names, cap * sizeof *names);
        if (names == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
        q->names = names;
        bool *sup = realloc(q->supported, cap * sizeof *sup);
        if (sup == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
        q->supported = sup;
        q->cap = cap;
    }
    q->names[q->count] = strdup(name);
    if (q->names[q->count] == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
    q->supported[q->count++] = ok;
    return RN_OK;
}

/* Adds `name` as supported unless it is answered already. */
static rn_status add_entry_if_absent(plugin_query_result *q, const char *name)
{
    for (size_t i = 0; i < q->count; i++)
        if (strcmp(q->names[i], name) == 0)
            return RN_OK;
    return add_entry(q, name, true);
}

void plugin_query_result_release(plugin_query_result *q)
{
    for (size_t i = 0; i < q->count; i++)
        free(q->names[i]);
    free(q->names);
    free(q->supported);
    memset(q, 0, sizeof *q);
}

rn_status plugin_query_model(const graph *model, const plugin_kernel_registry *registry,
                             plugin_query_result *out)
{
    graph *g = NULL;
    plugin_query_result q = {0};
    bool *node_ok = NULL;
    rn_status st = graph_clone(model, &g);
    if (st == RN_OK && (st = graph_sort(g)) == RN_OK)
        st = graph_infer_shapes(g);
    if (st != RN_OK)
        goto done;
    node_ok = calloc((size_t)g->n_nodes + 1, sizeof *node_ok);
    if (node_ok == NULL) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "query_model: out of memory");
        goto done;
    }
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        const plugin_kernel *k;
        node_ok[i] = plugin_kernel_registry_pick(registry, g->nodes[i], &k) == RN_OK;
        for (int f = 0; f < g->nodes[i]->n_fused && st == RN_OK; f++)
            st = add_entry(&q, g->nodes[i]->fused_names[f], node_ok[i]);
    }
    /* Parameters and constants follow their consumers. */
    for (int v = 0; v < g->n_values && st == RN_OK; v++) {
        const graph_value *val = g->values[v];
        if (!val->is_parameter && val->constant == NULL)
            continue;
        bool used = false, ok = true;
        for (int i = 0; i < g->n_nodes; i++)
            for (int k = 0; k < g->nodes[i]->n_inputs; k++)
                if (g->nodes[i]->inputs[k] == val) {
                    used = true;
                    ok = ok && node_ok[i];
                }
        if (used)
            st = add_entry(&q, val->name, ok);
    }
done:
    rn_clear_error();
    free(node_ok);
    graph_free(g);
    if (st != RN_OK) {
        plugin_query_result_release(&q);
        return st;
    }
    *out = q;
    return RN_OK;
}

rn_status plugin_query_model_transformed(const graph *model, const graph *transformed,
                                         const plugin_kernel_registry *registry,
                                         plugin_query_result *out)
{
    plugin_query_result q;
    rn_status st = plugin_query_model(transformed, registry, &q);
    if (st != RN_OK)
        return st;
    for (int i = 0; i < model->n_nodes && st == RN_OK; i++)
        for (int f = 0; f < model->nodes[i]->n_fused && st == RN_OK; f++)
            st = add_entry_if_absent(&q, model->nodes[i]->fused_names[f]);
    for (int v = 0; v < model->n_values && st == RN_OK; v++)
        if (model->values[v]->is_parameter || model->values[v]->constant != NULL)
            st = add_entry_if_absent(&q, model->values[v]->name);
    if (st != RN_OK) {
        plugin_query_result_release(&q);
        return st;
    }
    *out = q;
    return RN_OK;
}
