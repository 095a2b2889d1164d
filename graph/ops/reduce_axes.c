/* The reduced axes of Reduce* (graph/ops/attr_parse.h): read once for the
 * schema (graph/ops/reduce.c) and for the kernels. */
#include "graph/ops/attr_parse.h"

rn_status graph_reduce_axes(const graph_node *node, int rank, const int64_t *axes, int64_t n_axes,
                            bool *reduced)
{
    if (n_axes < 0) {
        n_axes = graph_node_attr_ints(node, "axes", &axes);
        if (n_axes < 0)
            n_axes = 0;
    }
    bool noop = graph_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
    for (int d = 0; d < rank; d++)
        reduced[d] = n_axes == 0 && !noop;
    for (int64_t i = 0; i < n_axes; i++) {
        if (rank == 0 && axes[i] == -1)
            continue; /* -1 names a scalar's one "axis" */
        int ax;
        rn_status st = graph_normalize_axis(node, axes[i], rank, &ax);
        if (st != RN_OK)
            return st;
        reduced[ax] = true; /* a repeated axis is reduced once, as numpy does */
    }
    return RN_OK;
}
