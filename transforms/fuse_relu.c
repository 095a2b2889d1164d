/* Relu(Relu(x)) -> Relu(x): the template plugin's ReluReluFusion. Relu is
 * idempotent, so the second Relu may read x directly. */
#include <string.h>

#include "transforms/rewrite.h"

static bool is_relu(const graph_node *n)
{
    return n->domain[0] == '\0' && strcmp(n->op_type, "Relu") == 0 && n->n_inputs == 1 &&
           n->n_outputs == 1 && n->inputs[0] != NULL && n->outputs[0] != NULL;
}

rn_status transforms_fuse_relu_relu(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *second = g->nodes[i];
        if (!is_relu(second))
            continue;
        graph_value *mid = second->inputs[0];
        graph_node *first = mid->producer;
        /* The first Relu must be of this graph and read by the second alone
         * (no other node, no subgraph, no result), as in OpenVINO's pattern
         * (consumers_count(1)): then it disappears. */
        if (first == NULL || !(mid->id < g->n_values && g->values[mid->id] == mid) ||
            !is_relu(first) || transforms_count_uses(g, mid) != 1)
            continue;
        if ((st = transforms_merge_fused(second, first)) != RN_OK)
            break;
        second->inputs[0] = first->inputs[0];
        /* The first Relu reads nothing from now on, so that use counts of x
         * stay exact for the rest of this run (chains fuse in one run). */
        first->inputs[0] = NULL;
        st = transforms_node_list_push(&removed, first);
    }
    if (st == RN_OK)
        st = transforms_remove_nodes(g, &removed);
    if (st == RN_OK)
        *changes = removed.n;
    transforms_node_list_free(&removed);
    return st;
}
