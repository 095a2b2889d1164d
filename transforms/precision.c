/* Which nodes keep f32 when a device runs a model in bf16 (OpenVINO's
 * EnforceInferencePrecision, as its CPU plugin does it): the products
 * (convolutions, GEMMs, matmuls) run in bf16, and the rest follows the
 * layout they write, except where bf16's 8-bit mantissa costs accuracy
 * that no speed pays for:
 *
 * - the tail: a product whose output reaches a model output through no
 *   other product writes f32, so the tail after it (a classifier's logits,
 *   a detector's boxes, a Softmax and its statistics) runs in f32;
 * - recurrent state: a product whose output reaches an LSTM, GRU or RNN, or
 *   a Loop's or Scan's carried state, through no other product writes f32;
 *   products inside Loop and Scan bodies (the recurrence itself) run
 *   entirely in f32;
 * - shapes and indices never were bf16 (integer ops; REF);
 * - the residual stream: a FusedMatMul that adds a residual (input 3, an
 *   encoder's attention output and feed-forward output) writes f32, so
 *   that the sum and the normalization after it run in f32 and the next
 *   products read a conversion of it; OpenVINO keeps an encoder's residual
 *   Adds and MVN in f32 too. Rounded to bf16 at every sum, MiniLM-L6's
 *   output was 5x further from f32's (RMS error 0.0079 against 0.0015;
 *   bench/LOG.md, "bf16 attention heads on a Zen 4").
 *
 * The pass marks nodes with two attributes a device's kernels read:
 * TRANSFORMS_ATTR_F32_OUTPUT (bf16 compute, f32 output) and
 * TRANSFORMS_ATTR_F32 (f32 throughout). */
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

/* The ops whose bf16 compute pays: OpenVINO's "significant" nodes. */
static bool is_product(const graph_node *n)
{
    static const char *const ops[] = {
        "Conv",      "FusedConv", "ConvTranspose", "Gemm",
        "FusedGemm", "MatMul",    "FusedMatMul",   "ScaledDotProductAttention",
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op_type, ops[i]) == 0)
            return true;
    return false;
}

static bool is_recurrent(const graph_node *n)
{
    bool onnx = n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0;
    return onnx && (strcmp(n->op_type, "LSTM") == 0 || strcmp(n->op_type, "GRU") == 0 ||
                    strcmp(n->op_type, "RNN") == 0 || strcmp(n->op_type, "Loop") == 0 ||
                    strcmp(n->op_type, "Scan") == 0);
}

static bool has_attr(const graph_node *n, const char *name)
{
    for (int a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, name) == 0)
            return true;
    return false;
}

static rn_status mark(graph_node *n, const char *attr, int *changes)
{
    if (has_attr(n, attr))
        return RN_OK;
    (*changes)++;
    return transforms_set_attr_int(n, attr, 1);
}

/* Walks back from value v through nodes that are not products (each seen
 * once, in `seen`), marking the products it meets to write f32. */
static rn_status walk_back(const graph *g, graph_value *v, bool *seen, int *changes)
{
    graph_node *p = v != NULL ? v->producer : NULL;
    /* Only g's own nodes: a subgraph reads values of enclosing graphs,
     * whose producers the enclosing graph's walk handles. */
    if (p == NULL || p->id < 0 || p->id >= g->n_nodes || g->nodes[p->id] != p || seen[p->id])
        return RN_OK;
    seen[p->id] = true;
    if (is_product(p))
        return mark(p, TRANSFORMS_ATTR_F32_OUTPUT, changes);
    rn_status st = RN_OK;
    for (int k = 0; k < p->n_inputs && st == RN_OK; k++)
        st = walk_back(g, p->inputs[k], seen, changes);
    if (st != RN_OK || !transforms_has_subgraphs(p))
        return st;
    /* And the values its subgraphs read from g (an If's branches). */
    graph_value **outer = NULL;
    int n_outer = 0;
    if ((st = graph_node_outer_inputs(p, &outer, &n_outer)) != RN_OK)
        return st;
    for (int k = 0; k < n_outer && st == RN_OK; k++)
        st = walk_back(g, outer[k], seen, changes);
    free(outer);
    return st;
}

/* Marks every product of g and of its subgraphs f32 throughout. */
static rn_status all_f32(graph *g, int *changes)
{
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if (is_product(n))
            st = mark(n, TRANSFORMS_ATTR_F32, changes);
        for (int a = 0; a < n->n_attrs && st == RN_OK; a++) {
            if (n->attrs[a].g != NULL)
                st = all_f32(n->attrs[a].g, changes);
            for (int k = 0; n->attrs[a].graphs != NULL && k < n->attrs[a].count && st == RN_OK; k++)
                st = all_f32(n->attrs[a].graphs[k], changes);
        }
    }
    return st;
}

static rn_status mark_graph(graph *g, int *changes);

/* The marks inside If branches, which a run may take (and which the
 * constant folding of a known condition inlines). */
static rn_status mark_branches(graph_node *n, int *changes)
{
    rn_status st = RN_OK;
    for (int a = 0; a < n->n_attrs && st == RN_OK; a++)
        if (n->attrs[a].g != NULL)
            st = mark_graph(n->attrs[a].g, changes);
    return st;
}

static rn_status mark_graph(graph *g, int *changes)
{
    bool *seen = calloc((size_t)g->n_nodes + 1, sizeof *seen);
    if (seen == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "keep_f32: out of memory");
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i]->id = i;
    rn_status st = RN_OK;
    for (int r = 0; r < g->n_outputs && st == RN_OK; r++)
        st = walk_back(g, g->outputs[r], seen, changes);
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if (is_recurrent(n)) {
            /* Inputs of a recurrence: walk back afresh (the tail's walk may
             * have passed these nodes without reaching their products). */
            memset(seen, 0, (size_t)g->n_nodes * sizeof *seen);
            for (int k = 0; k < n->n_inputs && st == RN_OK; k++)
                st = walk_back(g, n->inputs[k], seen, changes);
            if (st == RN_OK && strcmp(n->op_type, "Loop") != 0 && strcmp(n->op_type, "Scan") != 0)
                continue;
            for (int a = 0; a < n->n_attrs && st == RN_OK; a++)
                if (n->attrs[a].g != NULL)
                    st = all_f32(n->attrs[a].g, changes);
        } else if (transforms_has_subgraphs(n)) {
            st = mark_branches(n, changes);
        } else if (strcmp(n->op_type, "FusedMatMul") == 0 && strcmp(n->domain, "runnel") == 0 &&
                   n->n_inputs > 3 && n->inputs[3] != NULL) {
            st = mark(n, TRANSFORMS_ATTR_F32_OUTPUT, changes);
        }
    }
    free(seen);
    return st;
}

rn_status transforms_keep_f32(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int made = 0;
    rn_status st = mark_graph(g, &made);
    if (changes != NULL)
        *changes = made;
    return st;
}
