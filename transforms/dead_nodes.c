/* Dead-node elimination: what reaches no result goes. */
#include "transforms/rewrite.h"

rn_status transforms_eliminate_dead_nodes(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int nodes = g->n_nodes, values = g->n_values;
    graph_prune(g);
    *changes = (nodes - g->n_nodes) + (values - g->n_values);
    return RN_OK;
}
