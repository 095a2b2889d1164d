/* Graph rewriting helpers the passes share. Private to transforms/.
 *
 * graph/graph.h builds graphs and prunes them; passes also need to rewire
 * readers, remove the nodes they replace and make up fresh names. These
 * helpers do that with the public parts of the IR only.
 */
#ifndef RUNNEL_TRANSFORMS_REWRITE_H
#define RUNNEL_TRANSFORMS_REWRITE_H

#include "graph/graph.h"
#include "transforms/transforms.h"

/* A value the passes may treat as a known constant: a constant that is not
 * also a parameter the user could feed. */
bool transforms_is_constant(const graph_value *v);

/* Whether `v` is one of g's results. */
bool transforms_is_result(const graph *g, const graph_value *v);

/* Whether the node holds subgraphs (GRAPH or GRAPHS attributes). */
bool transforms_has_subgraphs(const graph_node *n);

/* Number of reads of v: node inputs of g, reads from subgraphs at any depth
 * (outer-scope references and subgraph results) and entries of g's results. */
int transforms_count_uses(const graph *g, const graph_value *v);

/* The only node of g that reads v: NULL when v is a result, is read by
 * no node, by several, or from a subgraph. */
graph_node *transforms_sole_reader(const graph *g, const graph_value *v);

/* Makes every reader of `from` read `to` instead: node inputs of g and, at
 * any depth, subgraph nodes and subgraph results that refer to `from` from
 * the outer scope. g's own results are not touched (a result is a name the
 * user sees; callers decide). Returns the number of reads rewired. */
int transforms_replace_uses(graph *g, const graph_value *from, graph_value *to);

/* A fresh name for a node or value: `base` followed by `suffix`, then by
 * "_2", "_3", ... until neither a value (of g or its enclosing graphs) nor a
 * node of g has it. *out is malloc'ed; the caller frees it. */
rn_status transforms_unique_name(const graph *g, const char *base, const char *suffix, char **out);

/* Appends to dst the fused names of src that dst does not carry yet. */
rn_status transforms_merge_fused(graph_node *dst, const graph_node *src);

/* Replaces dst's fused names by a copy of src's. */
rn_status transforms_copy_fused(graph_node *dst, const graph_node *src);

/* Sets an INT / STRING / INTS attribute on a node (copied). */
rn_status transforms_set_attr_int(graph_node *n, const char *name, int64_t value);
rn_status transforms_set_attr_string(graph_node *n, const char *name, const char *value);
rn_status transforms_set_attr_ints(graph_node *n, const char *name, const int64_t *values,
                                   int count);

/* Adds a constant value to g named from `base` + `suffix` (made unique) that
 * takes over *t (its data is owned by the graph afterwards; *t is cleared).
 * On error *t is released. */
rn_status transforms_add_constant(graph *g, const char *base, const char *suffix, graph_tensor *t,
                                  graph_value **out);

/* Nodes a pass replaced, removed together at the end of the pass. */
typedef struct transforms_node_list {
    int n, cap;
    graph_node **nodes;
} transforms_node_list;

rn_status transforms_node_list_push(transforms_node_list *l, graph_node *n);
void transforms_node_list_free(transforms_node_list *l);

/* Removes the listed nodes from g and frees them (duplicates are ignored);
 * values they produced lose their producer and stay (dead-node elimination
 * drops them). Nothing may still read their outputs. Node ids are renumbered.
 * On error (out of memory) g is unchanged. */
rn_status transforms_remove_nodes(graph *g, const transforms_node_list *l);

/* The end of a pass that collected the nodes it replaced: when st is
 * RN_OK removes them, sorts g again if any went and sets *changes to their
 * number; frees the list either way. Returns the pass's status. */
rn_status transforms_finish_removal(graph *g, transforms_node_list *l, rn_status st, int *changes);

/* The opset for a node a pass creates in the default domain: the graph's,
 * but at least 7 so that binary ops broadcast numpy-style rather than with the
 * legacy `broadcast`/`axis` attributes. */
int transforms_new_node_opset(const graph *g);

#endif /* RUNNEL_TRANSFORMS_REWRITE_H */
