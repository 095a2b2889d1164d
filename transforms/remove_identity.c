/* Identity removal: readers of an Identity's output read its input. */
#include <string.h>

#include "transforms/rewrite.h"

static bool is_identity(const graph_node *n)
{
    return n->domain[0] == '\0' && strcmp(n->op_type, "Identity") == 0 && n->n_inputs == 1 &&
           n->n_outputs == 1 && n->inputs[0] != NULL && n->outputs[0] != NULL;
}

/* The node of g that produces v, or NULL (parameters, constants, values of
 * an enclosing graph). */
static graph_node *local_producer(const graph *g, const graph_value *v)
{
    if (v->producer == NULL || !(v->id < g->n_values && g->values[v->id] == v))
        return NULL;
    return v->producer;
}

/* Takes the Identity out: `n` reads and writes nothing afterwards. */
static void unhook(graph_node *n)
{
    n->inputs[0] = NULL;
    n->outputs[0] = NULL;
}

rn_status transforms_remove_identity(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if (!is_identity(n))
            continue;
        graph_value *x = n->inputs[0], *y = n->outputs[0];
        graph_node *producer = local_producer(g, x);
        if (!transforms_is_result(g, y)) {
            /* y is internal: its readers read x. */
            if (producer != NULL && (st = transforms_merge_fused(producer, n)) != RN_OK)
                break;
            transforms_replace_uses(g, y, x);
            y->producer = NULL;
        } else {
            /* y is a result the user knows by name: the producer of x writes
             * y directly and x's other readers read y. Without a producer
             * (x is a parameter or constant), or when x is a result too, the
             * copy is needed and the Identity stays. */
            if (producer == NULL || transforms_is_result(g, x))
                continue;
            if ((st = transforms_merge_fused(producer, n)) != RN_OK)
                break;
            int k = x->producer_output;
            producer->outputs[k] = y;
            y->producer = producer;
            y->producer_output = k;
            x->producer = NULL;
            transforms_replace_uses(g, x, y);
        }
        unhook(n);
        st = transforms_node_list_push(&removed, n);
    }
    if (st == RN_OK)
        st = transforms_remove_nodes(g, &removed);
    if (st == RN_OK)
        *changes = removed.n;
    transforms_node_list_free(&removed);
    return st;
}
