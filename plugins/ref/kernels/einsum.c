/* REF Einsum: the general case, by definition.
 *
 * The equation (parsed by graph/ops/einsum.c, as for shape inference; see
 * graph/ops/attr_parse.h for its grammar and the implicit-output rule) is
 * read into "axis variables": one per ellipsis dim (broadcast over
 * the inputs, right-aligned) and one per distinct letter. Each operand gets
 * a stride per variable (a repeated letter adds its strides, which walks a
 * diagonal; a dim of 1 facing a larger one has stride 0, which broadcasts);
 * the output gets strides for its own variables and 0 for the summed ones.
 * Then every point of the variables' index space adds the product of the
 * operands' elements into its output element: the cost is the product of all
 * variable sizes, the flop count of the contraction done as one loop nest.
 * Floats accumulate in double (rounded once to the output type), integers in
 * wrapping 64-bit arithmetic.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/ops/attr_parse.h"
#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

#define LABELS    GRAPH_EINSUM_LABELS
#define ELLIPSIS  GRAPH_EINSUM_ELLIPSIS
#define MAX_TERMS GRAPH_EINSUM_MAX_TERMS
#define MAX_VARS  (LABELS + RN_MAX_RANK)

static bool einsum_supports(const graph_node *node, const char **why)
{
    graph_einsum e;
    if (graph_einsum_parse(node, node->n_inputs, &e) != RN_OK) {
        *why = rn_last_error(); /* thread-local: names the equation */
        return false;
    }
    for (int i = 0; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v == NULL || v->type != node->inputs[0]->type || v->type == RN_BOOL ||
            v->type == RN_STRING || rn_element_type_size(v->type) == 0 || v->type > RN_BF16) {
            *why = "inputs are not of one numeric type";
            return false;
        }
    }
    return true;
}

typedef struct plan {
    int n_vars;
    int64_t size[MAX_VARS];
    int64_t in_stride[MAX_TERMS][MAX_VARS];
    int64_t out_stride[MAX_VARS];
} plan;

/* Builds the variables and strides from the equation and the shapes. */
static rn_status plan_build(const plugin_kernel_args *args, plan *p)
{
    const graph_node *node = args->node;
    graph_einsum e;
    rn_status st = graph_einsum_parse(node, args->n_inputs, &e);
    if (st != RN_OK)
        return st;
    const graph_einsum_term *terms = e.in;
    int n_terms = e.n_terms;
    memset(p, 0, sizeof *p);
    /* Variables: ellipsis dims 0..ell_rank-1, then letters in label order. */
    int ell_rank = 0;
    for (int i = 0; i < n_terms; i++) {
        const graph_tensor *t = &args->inputs[i];
        int n_labels = terms[i].n - (terms[i].has_ellipsis ? 1 : 0);
        int er = t->rank - n_labels;
        if (er < 0 || (!terms[i].has_ellipsis && er != 0))
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "input %d has rank %d; its term names %d", NODE_ARGS(node),
                                i, t->rank, n_labels);
        if (er > ell_rank)
            ell_rank = er;
    }
    int var_of[LABELS];
    p->n_vars = ell_rank;
    for (int j = 0; j < ell_rank; j++)
        p->size[j] = 1;
    for (int l = 0; l < LABELS; l++) {
        var_of[l] = -1;
        if (e.count[l] > 0) {
            var_of[l] = p->n_vars;
            p->size[p->n_vars++] = 1;
        }
    }
    /* Sizes: the largest dim met (others must equal it or be 1). */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n_terms; i++) {
            const graph_tensor *t = &args->inputs[i];
            int64_t strides[RN_MAX_RANK];
            plugin_strides(t->rank, t->dims, strides);
            int er = t->rank - (terms[i].n - (terms[i].has_ellipsis ? 1 : 0));
            int d = 0;
            for (int k = 0; k < terms[i].n; k++) {
                int first =
                    terms[i].label[k] == ELLIPSIS ? ell_rank - er : var_of[terms[i].label[k]];
                int n = terms[i].label[k] == ELLIPSIS ? er : 1;
                for (int j = 0; j < n; j++, d++) {
                    int v = first + j;
                    int64_t dim = t->dims[d];
                    if (pass == 0) {
                        if (p->size[v] == 1)
                            p->size[v] = dim;
                        else if (dim != 1 && dim != p->size[v])
                            return rn_set_error(RN_SHAPE_MISMATCH,
                                                NODE_FMT "input %d dim %d is %lld; the equation "
                                                         "needs %lld there",
                                                NODE_ARGS(node), i, d, (long long)dim,
                                                (long long)p->size[v]);
                    } else if (dim != 1 || p->size[v] == 1) {
                        p->in_stride[i][v] += strides[d];
                    }
                }
            }
        }
    }
    /* The output's variables, in its order. */
    int labels[LABELS + 1], n_labels, out_vars[RN_MAX_RANK], n_out = 0;
    if ((st = graph_einsum_output(node, &e, labels, &n_labels)) != RN_OK)
        return st;
    for (int k = 0; k < n_labels; k++) {
        if (labels[k] == ELLIPSIS) {
            for (int j = 0; j < ell_rank && n_out < RN_MAX_RANK; j++)
                out_vars[n_out++] = j;
        } else if (n_out < RN_MAX_RANK) {
            out_vars[n_out++] = var_of[labels[k]];
        }
    }
    const graph_tensor *y = &args->outputs[0];
    bool ok = y->rank == n_out;
    for (int k = 0; ok && k < n_out; k++)
        ok = y->dims[k] == p->size[out_vars[k]];
    if (!ok)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "the output's shape does not follow from '%s' and the inputs",
                            NODE_ARGS(node), e.equation);
    int64_t ys[RN_MAX_RANK];
    plugin_strides(y->rank, y->dims, ys);
    for (int k = 0; k < n_out; k++)
        p->out_stride[out_vars[k]] = ys[k];
    return RN_OK;
}

static rn_status einsum_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    for (int i = 0; i < args->n_inputs; i++)
        if (args->inputs[i].data == NULL)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d has no data", NODE_ARGS(node),
                                i);
    graph_tensor *y;
    rn_status st = ref_mv_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    plan p;
    if ((st = plan_build(args, &p)) != RN_OK)
        return st;
    rn_element_type t = y->type;
    bool is_float = ref_nn_is_float(t);
    size_t ny = graph_tensor_count(y);
    double *accf = is_float ? ref_tmp_calloc(ny ? ny : 1, sizeof *accf) : NULL;
    uint64_t *acci = is_float ? NULL : ref_tmp_calloc(ny ? ny : 1, sizeof *acci);
    if (is_float ? accf == NULL : acci == NULL)
        return ref_nn_oom(node);
    int64_t total = 1;
    for (int v = 0; v < p.n_vars; v++)
        total *= p.size[v];
    int n_in = args->n_inputs;
    int64_t idx[MAX_VARS] = {0}, off[MAX_TERMS] = {0}, yo = 0;
    for (int64_t it = 0; it < total; it++) {
        if (is_float) {
            double prod = 1.0;
            for (int i = 0; i < n_in; i++)
                prod *= ref_nn_get(t, args->inputs[i].data, (size_t)off[i]);
            accf[yo] += prod;
        } else {
            uint64_t prod = 1;
            for (int i = 0; i < n_in; i++)
                prod *= (uint64_t)ref_mv_int_at(&args->inputs[i], (size_t)off[i]);
            acci[yo] += prod;
        }
        for (int v = p.n_vars - 1; v >= 0; v--) { /* odometer over the variables */
            for (int i = 0; i < n_in; i++)
                off[i] += p.in_stride[i][v];
            yo += p.out_stride[v];
            if (++idx[v] < p.size[v])
                break;
            for (int i = 0; i < n_in; i++)
                off[i] -= p.in_stride[i][v] * p.size[v];
            yo -= p.out_stride[v] * p.size[v];
            idx[v] = 0;
        }
    }
    for (size_t e = 0; e < ny; e++) {
        if (is_float)
            ref_nn_set(t, y->data, e, accf[e]);
        else
            ref_mv_store_int(t, y->data, e, (int64_t)acci[e]);
    }
    ref_tmp_free(accf);
    ref_tmp_free(acci);
    return RN_OK;
}

const plugin_kernel ref_kernel_einsum = {
    .domain = "",
    .op_type = "Einsum",
    .impl_type = "ref",
    .supports = einsum_supports,
    .run = einsum_run,
};
