/* REF Einsum: the general case, by definition.
 *
 * The equation (see graph/ops/math.c for its grammar and the implicit-output
 * rule) is read into "axis variables": one per ellipsis dim (broadcast over
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

#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/nn_util.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

#define LABELS    52
#define ELLIPSIS  (-1)
#define MAX_TERMS 16
#define MAX_VARS  (LABELS + RN_MAX_RANK)

typedef struct term {
    int n;
    int label[RN_MAX_RANK + 1];
    bool has_ellipsis;
} term;

static int label_of(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return 26 + c - 'A';
    return -1;
}

/* Reads the equation; false on any syntax error (the schema has reported
 * it by then, so the kernel only declines). */
static bool parse(const char *eq, term *terms, int *n_terms, term *out, bool *has_out)
{
    memset(out, 0, sizeof *out);
    *has_out = false;
    int t = 0;
    term *cur = &terms[0];
    memset(cur, 0, sizeof *cur);
    for (const char *c = eq; *c; c++) {
        if (*c == ' ')
            continue;
        if (*c == ',' && !*has_out) {
            if (++t >= MAX_TERMS)
                return false;
            cur = &terms[t];
            memset(cur, 0, sizeof *cur);
            continue;
        }
        if (c[0] == '-' && c[1] == '>' && !*has_out) {
            *has_out = true;
            cur = out;
            c++;
            continue;
        }
        int l = label_of(*c);
        if (c[0] == '.' && c[1] == '.' && c[2] == '.') {
            if (cur->has_ellipsis)
                return false;
            cur->has_ellipsis = true;
            l = ELLIPSIS;
            c += 2;
        } else if (l < 0) {
            return false;
        }
        if (cur->n > RN_MAX_RANK)
            return false;
        cur->label[cur->n++] = l;
    }
    *n_terms = t + 1;
    return true;
}

static bool einsum_supports(const graph_node *node, const char **why)
{
    const char *eq = graph_node_attr_string(node, "equation", NULL);
    term terms[MAX_TERMS], out;
    int n = 0;
    bool has_out;
    if (eq == NULL || !parse(eq, terms, &n, &out, &has_out) || n != node->n_inputs) {
        *why = "equation does not parse or does not match the inputs";
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
    const char *eq = graph_node_attr_string(node, "equation", "");
    term terms[MAX_TERMS], ot;
    int n_terms = 0;
    bool has_out;
    if (!parse(eq, terms, &n_terms, &ot, &has_out) || n_terms != args->n_inputs)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "equation '%s' does not match the inputs",
                            NODE_ARGS(node), eq);
    memset(p, 0, sizeof *p);
    /* Variables: ellipsis dims 0..ell_rank-1, then letters in label order. */
    int ell_rank = 0, count[LABELS] = {0};
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
        for (int k = 0; k < terms[i].n; k++)
            if (terms[i].label[k] != ELLIPSIS)
                count[terms[i].label[k]]++;
    }
    int var_of[LABELS];
    p->n_vars = ell_rank;
    for (int e = 0; e < ell_rank; e++)
        p->size[e] = 1;
    for (int l = 0; l < LABELS; l++) {
        var_of[l] = -1;
        if (count[l] > 0) {
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
                for (int e = 0; e < n; e++, d++) {
                    int v = first + e;
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
    int out_vars[RN_MAX_RANK], n_out = 0;
    if (has_out) {
        for (int k = 0; k < ot.n; k++) {
            if (ot.label[k] == ELLIPSIS) {
                for (int e = 0; e < ell_rank && n_out < RN_MAX_RANK; e++)
                    out_vars[n_out++] = e;
            } else if (var_of[ot.label[k]] >= 0 && n_out < RN_MAX_RANK) {
                out_vars[n_out++] = var_of[ot.label[k]];
            }
        }
    } else {
        for (int e = 0; e < ell_rank && n_out < RN_MAX_RANK; e++)
            out_vars[n_out++] = e;
        for (int k = 0; k < LABELS && n_out < RN_MAX_RANK; k++) {
            int l = k < 26 ? 26 + k : k - 26; /* ASCII order: upper case first */
            if (count[l] == 1)
                out_vars[n_out++] = var_of[l];
        }
    }
    const graph_tensor *y = &args->outputs[0];
    bool ok = y->rank == n_out;
    for (int k = 0; ok && k < n_out; k++)
        ok = y->dims[k] == p->size[out_vars[k]];
    if (!ok)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "the output's shape does not follow from '%s' and the inputs",
                            NODE_ARGS(node), eq);
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
    double *accf = is_float ? calloc(ny ? ny : 1, sizeof *accf) : NULL;
    uint64_t *acci = is_float ? NULL : calloc(ny ? ny : 1, sizeof *acci);
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
    free(accf);
    free(acci);
    return RN_OK;
}

const plugin_kernel ref_kernel_einsum = {
    .domain = "",
    .op_type = "Einsum",
    .impl_type = "ref",
    .supports = einsum_supports,
    .run = einsum_run,
};
