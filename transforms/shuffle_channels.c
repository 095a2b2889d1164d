/* Reshape -> Transpose -> Reshape that shuffles channels (ShuffleNet's
 * channel shuffle: [N, C, H, W] viewed as [N, g, C/g, H, W], the two group
 * axes swapped, viewed back as [N, C, H, W]) -> runnel ShuffleChannels
 * (OpenVINO's op, axis 1, group g): one node a device runs on its own
 * layouts, instead of a transpose of plain tensors between two views. */
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

static bool is_default(const graph_node *n, const char *op)
{
    return (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

static bool same_dims(const graph_shape *a, const graph_shape *b)
{
    return a->rank == b->rank && graph_shape_is_static(a) &&
           memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0;
}

/* The group g when r1 -> t -> r2 is a channel shuffle of x, else 0. */
static int64_t shuffle_group(const graph_value *x, const graph_node *r1, const graph_node *t,
                             const graph_node *r2)
{
    const graph_shape *xs = &x->shape, *s1 = &r1->outputs[0]->shape;
    if (xs->rank != 4 || !graph_shape_is_static(xs) || s1->rank != 5 ||
        !graph_shape_is_static(s1) || !same_dims(&r2->outputs[0]->shape, xs))
        return 0;
    const int64_t *perm;
    if (graph_node_attr_ints(t, "perm", &perm) != 5 || perm[0] != 0 || perm[1] != 2 ||
        perm[2] != 1 || perm[3] != 3 || perm[4] != 4)
        return 0;
    int64_t g = s1->dims[1];
    if (s1->dims[0] != xs->dims[0] || g < 1 || s1->dims[1] * s1->dims[2] != xs->dims[1] ||
        s1->dims[3] != xs->dims[2] || s1->dims[4] != xs->dims[3])
        return 0;
    return g;
}

rn_status transforms_fuse_shuffle_channels(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    int n = g->n_nodes;
    for (int i = 0; i < n && st == RN_OK; i++) {
        graph_node *r1 = g->nodes[i];
        if (!is_default(r1, "Reshape") || r1->n_outputs != 1 || r1->outputs[0] == NULL)
            continue;
        graph_node *t = transforms_sole_reader(g, r1->outputs[0]);
        if (t == NULL || !is_default(t, "Transpose") || t->outputs[0] == NULL)
            continue;
        graph_node *r2 = transforms_sole_reader(g, t->outputs[0]);
        if (r2 == NULL || !is_default(r2, "Reshape") || r2->inputs[0] != t->outputs[0] ||
            r2->outputs[0] == NULL)
            continue;
        graph_value *x = r1->inputs[0], *y = r2->outputs[0];
        int64_t group = shuffle_group(x, r1, t, r2);
        if (group == 0)
            continue;
        /* The new node takes over r2's name and output. */
        r2->outputs[0] = NULL;
        y->producer = NULL;
        graph_node *sc;
        st = graph_add_node(g, r2->name, "runnel", "ShuffleChannels", 1, 1, &x, 1, &y, &sc);
        if (st == RN_OK)
            st = transforms_set_attr_int(sc, "axis", 1);
        if (st == RN_OK)
            st = transforms_set_attr_int(sc, "group", group);
        if (st == RN_OK)
            st = transforms_copy_fused(sc, r1);
        if (st == RN_OK)
            st = transforms_merge_fused(sc, t);
        if (st == RN_OK)
            st = transforms_merge_fused(sc, r2);
        for (int k = 0; k < r2->n_inputs; k++)
            r2->inputs[k] = NULL;
        for (int k = 0; k < t->n_inputs; k++)
            t->inputs[k] = NULL;
        for (int k = 0; k < r1->n_inputs; k++)
            r1->inputs[k] = NULL;
        if (st == RN_OK && (st = transforms_node_list_push(&removed, r1)) == RN_OK &&
            (st = transforms_node_list_push(&removed, t)) == RN_OK)
            st = transforms_node_list_push(&removed, r2);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}
