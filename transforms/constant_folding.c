/* Constant folding: a node whose inputs are all constants becomes constant
 * values. The pass knows no kernels: Shape and Size of a static shape are
 * computed here, every other op through the evaluator the plugin supplies. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "transforms/rewrite.h"

/* Ops whose result is not a function of their inputs (random draws; Dropout
 * draws when training_mode is set). */
static const char *const nondeterministic[] = {
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
    "Bernoulli",    "Multinomial",      "Dropout",       NULL,
};

static bool is_default_op(const graph_node *n, const char *op)
{
    return n->domain[0] == '\0' && strcmp(n->op_type, op) == 0;
}

static bool may_fold(const graph_node *n)
{
    if (n->domain[0] == '\0')
        for (int i = 0; nondeterministic[i] != NULL; i++)
            if (strcmp(n->op_type, nondeterministic[i]) == 0)
                return false;
    if (transforms_has_subgraphs(n))
        return false;
    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] != NULL)
            return true;
    return false; /* nothing to fold into */
}

static bool inputs_constant(const graph_node *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] != NULL && !transforms_is_constant(n->inputs[k]))
            return false;
    return true;
}

/* The static shape of v (a constant's own, else the declared or inferred
 * one); false if any dim is unknown. */
static bool static_shape(const graph_value *v, graph_shape *out)
{
    if (v->constant != NULL && !v->is_parameter) {
        out->rank = v->constant->rank;
        memcpy(out->dims, v->constant->dims, sizeof out->dims);
        return true;
    }
    *out = v->shape;
    return graph_shape_is_static(&v->shape);
}

/* Shape (with opset 15's start/end) or Size of a value of static shape, into
 * an owned i64 tensor; *done stays false when the shape is not static. */
static rn_status fold_shape_op(const graph_node *n, graph_tensor *out, bool *done)
{
    graph_shape s;
    if (n->n_outputs != 1 || n->n_inputs < 1 || n->inputs[0] == NULL ||
        !static_shape(n->inputs[0], &s))
        return RN_OK;
    graph_tensor t = {.type = RN_I64};
    int64_t start = 0, len = 1;
    if (is_default_op(n, "Shape")) {
        int64_t r = s.rank;
        start = graph_node_attr_int(n, "start", 0);
        int64_t end = graph_node_attr_int(n, "end", r);
        start = start < 0 ? start + r : start;
        end = end < 0 ? end + r : end;
        start = start < 0 ? 0 : (start > r ? r : start);
        end = end < 0 ? 0 : (end > r ? r : end);
        len = end > start ? end - start : 0;
        t.rank = 1;
        t.dims[0] = len;
    }
    t.nbytes = (size_t)len * sizeof(int64_t);
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (t.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory folding", n->name,
                            n->op_type);
    int64_t *d = t.data;
    if (t.rank == 1)
        memcpy(d, &s.dims[start], t.nbytes);
    else
        d[0] = graph_shape_count(&s);
    *out = t;
    *done = true;
    return RN_OK;
}

/* Bytes output value v will take, when its type and shape are known; else 0. */
static size_t expected_bytes(const graph_value *v)
{
    int64_t count = graph_shape_count(&v->shape);
    size_t size = v->type == RN_STRING ? sizeof(char *) : rn_element_type_size(v->type);
    if (count < 0 || size == 0)
        return 0;
    return (size_t)count * size;
}

/* Checks a computed output against what the graph declares for it. */
static rn_status check_output(const graph_node *n, const graph_value *v, const graph_tensor *t)
{
    if (v->type != RN_UNDEFINED && v->type != t->type)
        return rn_set_error(
            RN_TYPE_MISMATCH, "node '%s' (%s): output '%s' is declared %s but folds to %s", n->name,
            n->op_type, v->name, rn_element_type_name(v->type), rn_element_type_name(t->type));
    bool same = v->shape.rank < 0 || v->shape.rank == t->rank;
    for (int d = 0; same && v->shape.rank >= 0 && d < t->rank; d++)
        same = v->shape.dims[d] < 0 || v->shape.dims[d] == t->dims[d];
    if (!same) {
        graph_shape got = {.rank = t->rank};
        memcpy(got.dims, t->dims, sizeof got.dims);
        char a[128], b[128];
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): output '%s' is declared %s but folds to %s", n->name,
                            n->op_type, v->name, graph_shape_str(&v->shape, a, sizeof a),
                            graph_shape_str(&got, b, sizeof b));
    }
    return RN_OK;
}

/* Evaluates n into outs[] (zeroed, one per output) and sets *done; *done
 * stays false when n does not fold (unknown to the evaluator, over the size
 * bound). Whatever outs[] holds afterwards is the caller's to release. */
static rn_status evaluate(const graph_node *n, const transforms_fold_options *o, size_t limit,
                          graph_tensor *ins, graph_tensor *outs, bool *done)
{
    if (is_default_op(n, "Shape") || is_default_op(n, "Size"))
        return fold_shape_op(n, &outs[0], done);
    if (o == NULL || o->eval == NULL || !inputs_constant(n))
        return RN_OK;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] != NULL && expected_bytes(n->outputs[k]) > limit)
            return RN_OK;
    for (int k = 0; k < n->n_inputs; k++) {
        memset(&ins[k], 0, sizeof ins[k]);
        if (n->inputs[k] != NULL)
            ins[k] = *n->inputs[k]->constant;
    }
    rn_status st = o->eval(n, ins, outs, o->eval_ctx);
    if (st == RN_UNSUPPORTED || st == RN_NOT_IMPLEMENTED) {
        rn_clear_error();
        return RN_OK;
    }
    if (st != RN_OK)
        return st;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] == NULL)
            continue;
        if (outs[k].data == NULL && outs[k].nbytes != 0)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): the evaluator left output %d empty",
                                n->name, n->op_type, k);
        if (outs[k].nbytes > limit)
            return RN_OK;
    }
    *done = true;
    return RN_OK;
}

/* Makes n's outputs the constants outs[] (taken over) and unhooks n. */
static rn_status commit(graph_node *n, graph_tensor *outs)
{
    for (int k = 0; k < n->n_outputs; k++) {
        graph_value *v = n->outputs[k];
        if (v == NULL)
            continue;
        rn_status st = check_output(n, v, &outs[k]);
        if (st != RN_OK)
            return st;
    }
    for (int k = 0; k < n->n_outputs; k++) {
        graph_value *v = n->outputs[k];
        if (v == NULL)
            continue;
        graph_tensor *holder = malloc(sizeof *holder);
        if (holder == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory folding", n->name,
                                n->op_type);
        *holder = outs[k];
        memset(&outs[k], 0, sizeof outs[k]);
        v->constant = holder;
        v->type = holder->type;
        v->shape.rank = holder->rank;
        memcpy(v->shape.dims, holder->dims, sizeof v->shape.dims);
        v->producer = NULL;
        n->outputs[k] = NULL;
    }
    for (int k = 0; k < n->n_inputs; k++)
        n->inputs[k] = NULL;
    return RN_OK;
}

rn_status transforms_fold_constants(graph *g, void *ctx, int *changes)
{
    const transforms_fold_options *o = ctx;
    size_t limit =
        o != NULL && o->max_tensor_bytes ? o->max_tensor_bytes : TRANSFORMS_FOLD_MAX_BYTES_DEFAULT;
    int most = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->n_inputs > most)
            most = g->nodes[i]->n_inputs;
        if (g->nodes[i]->n_outputs > most)
            most = g->nodes[i]->n_outputs;
    }
    graph_tensor *ins = calloc((size_t)most, sizeof *ins);
    graph_tensor *outs = calloc((size_t)most, sizeof *outs);
    transforms_node_list folded = {0};
    rn_status st = ins != NULL && outs != NULL
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory folding");
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        /* Folds earlier in this run may have made this node's inputs constant,
         * which can make its output shape static (and its Shape foldable).
         * Inference errors are left for compilation to report: a pass does
         * not fail on what it does not fold. */
        if (graph_op_find(n->domain, n->op_type) != NULL && graph_infer_node(n) != RN_OK)
            rn_clear_error();
        if (!may_fold(n))
            continue;
        memset(outs, 0, (size_t)n->n_outputs * sizeof *outs);
        bool done = false;
        st = evaluate(n, o, limit, ins, outs, &done);
        if (st == RN_OK && done) {
            st = commit(n, outs);
            if (st == RN_OK)
                st = transforms_node_list_push(&folded, n);
        }
        for (int k = 0; k < n->n_outputs; k++)
            graph_tensor_release(&outs[k]);
    }
    if (st == RN_OK)
        st = transforms_remove_nodes(g, &folded);
    if (st == RN_OK)
        *changes = folded.n;
    transforms_node_list_free(&folded);
    free(ins);
    free(outs);
    return st;
}
