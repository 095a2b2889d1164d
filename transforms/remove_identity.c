/* Identity removal: readers of an Identity's output read its input. An
 * inference Dropout is an Identity too (its output is its input) when
 * nothing reads its mask. */
#include <string.h>

#include "transforms/rewrite.h"

/* Dropout's training_mode (input 2) absent, or a constant false. */
static bool inference_mode(const graph_node *n)
{
    const graph_value *t = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (t == NULL)
        return true;
    const graph_tensor *c = t->constant;
    return c != NULL && c->data != NULL && c->type == RN_BOOL && graph_tensor_count(c) == 1 &&
           *(const uint8_t *)c->data == 0;
}

static bool is_identity(const graph *g, const graph_node *n)
{
    if (n->domain[0] != '\0' || n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] == NULL ||
        n->outputs[0] == NULL)
        return false;
    if (strcmp(n->op_type, "Identity") == 0)
        return n->n_inputs == 1 && n->n_outputs == 1;
    if (strcmp(n->op_type, "Dropout") != 0 || !inference_mode(n))
        return false;
    const graph_value *mask = n->n_outputs > 1 ? n->outputs[1] : NULL;
    return mask == NULL || (!transforms_is_result(g, mask) && transforms_count_uses(g, mask) == 0);
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
    for (int k = 0; k < n->n_inputs; k++)
        n->inputs[k] = NULL;
    n->outputs[0] = NULL; /* a Dropout's unread mask loses its producer with the node */
}

rn_status transforms_remove_identity(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if (!is_identity(g, n))
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
