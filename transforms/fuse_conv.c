/* Fusions for devices that run a convolution or a GEMM with its epilogue as
 * one primitive (CPU's oneDNN post-ops):
 *
 *   fold_batchnorm         Conv -> BatchNormalization (inference, constant
 *                          statistics): the BatchNormalization folded into
 *                          the Conv's weights and bias.
 *   fuse_conv_add          Conv -> Add(·, r): runnel FusedConv with r as its
 *                          residual input (a sum over the output).
 *   fuse_matmul_add        FusedMatMul (fuse_matmul_bias's product by
 *                          constant weights) -> Add(·, r): the same, r its
 *                          input 3 (an encoder's residual).
 *   fuse_activation        Conv / FusedConv / Gemm -> activation: FusedConv
 *                          or FusedGemm with the activation as attributes;
 *                          BatchNormalization -> Relu: runnel
 *                          FusedBatchNormalization
 *                          (Relu, LeakyRelu, Elu, Clip, Sigmoid, Tanh,
 *                          HardSigmoid, HardSwish, Gelu, Mish).
 *   fold_scale_shift       Conv / BatchNormalization -> Mul or Add by a
 *                          constant per channel (or scalar): folded into the
 *                          weights and bias (the scale and bias).
 *   gemm_transpose_b       Gemm with a constant B and transB 0: B stored
 *                          transposed, transB 1 (the weights layout of an
 *                          inner product).
 *
 * Each fuses only when the intermediate value has no other reader (no other
 * node, subgraph or result); the fused node keeps the last node's output
 * value (and so the name users see) and carries every original name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

static bool is_op(const graph_node *n, const char *domain, const char *op)
{
    const char *d = n->domain;
    if (strcmp(d, "ai.onnx") == 0)
        d = "";
    return strcmp(d, domain) == 0 && strcmp(n->op_type, op) == 0;
}

static bool is_f32_constant(const graph_value *v)
{
    return v != NULL && transforms_is_constant(v) && v->constant->type == RN_F32 &&
           v->constant->data != NULL;
}

/* The only reader of n's output 0 (a node of g), or NULL. */
static graph_node *sole_reader(graph *g, const graph_node *n)
{
    return n->n_outputs >= 1 ? transforms_sole_reader(g, n->outputs[0]) : NULL;
}

/* Makes `first` write what `second` wrote (its output 0) and unhooks
 * `second`, which the caller removes. */
static rn_status take_output(graph_node *first, graph_node *second)
{
    rn_status st = transforms_merge_fused(first, second);
    if (st != RN_OK)
        return st;
    graph_value *mid = first->outputs[0], *out = second->outputs[0];
    mid->producer = NULL;
    first->outputs[0] = out;
    out->producer = first;
    out->producer_output = 0;
    for (int k = 0; k < second->n_inputs; k++)
        second->inputs[k] = NULL;
    second->outputs[0] = NULL;
    return RN_OK;
}

static rn_status set_floats(graph_node *n, const char *name, const float *v, int count)
{
    graph_attr a = {.type = GRAPH_ATTR_FLOATS, .count = count};
    a.name = strdup(name);
    a.floats = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    if (a.name == NULL || a.floats == NULL) {
        graph_attr_release(&a);
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    }
    memcpy(a.floats, v, sizeof(float) * (size_t)count);
    return graph_node_add_attr(n, &a);
}

/* Turns n (Conv or Gemm) into runnel's fused op of the same kind, with
 * room for `n_inputs` inputs. */
static rn_status make_fused(graph_node *n, const char *fused_op, int n_inputs)
{
    if (strcmp(n->op_type, fused_op) == 0 && n->n_inputs >= n_inputs)
        return RN_OK;
    char *op = strdup(fused_op), *domain = strdup("runnel");
    graph_value **in =
        realloc(n->inputs, sizeof *in * (size_t)(n_inputs > n->n_inputs ? n_inputs : n->n_inputs));
    if (op == NULL || domain == NULL || in == NULL) {
        free(op);
        free(domain);
        if (in != NULL)
            n->inputs = in;
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    }
    n->inputs = in;
    for (int k = n->n_inputs; k < n_inputs; k++)
        in[k] = NULL;
    if (n_inputs > n->n_inputs)
        n->n_inputs = n_inputs;
    free(n->op_type);
    free(n->domain);
    n->op_type = op;
    n->domain = domain;
    n->opset = 1;
    return RN_OK;
}

/* ---- fold_batchnorm ---- */

static bool static_dims(const graph_value *v, const graph_tensor *t)
{
    return v != NULL && t != NULL && graph_tensor_count(t) > 0;
}

/* Folds bn into conv: new weights and bias constants. */
static rn_status fold(graph *g, graph_node *conv, graph_node *bn)
{
    const graph_tensor *w = conv->inputs[1]->constant;
    const graph_tensor *b =
        conv->n_inputs > 2 && conv->inputs[2] != NULL ? conv->inputs[2]->constant : NULL;
    const float *scale = bn->inputs[1]->constant->data, *shift = bn->inputs[2]->constant->data;
    const float *mean = bn->inputs[3]->constant->data, *var = bn->inputs[4]->constant->data;
    float eps = graph_node_attr_float(bn, "epsilon", 1e-5f);
    int64_t m = w->dims[0];
    size_t per = graph_tensor_count(w) / (size_t)m;
    graph_tensor nw = {.type = RN_F32, .rank = w->rank, .nbytes = w->nbytes};
    graph_tensor nb = {.type = RN_F32, .rank = 1, .dims = {m}, .nbytes = sizeof(float) * (size_t)m};
    memcpy(nw.dims, w->dims, sizeof nw.dims);
    nw.data = malloc(nw.nbytes);
    nb.data = malloc(nb.nbytes);
    if (nw.data == NULL || nb.data == NULL) {
        free(nw.data);
        free(nb.data);
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    }
    const float *wd = w->data;
    float *nwd = nw.data, *nbd = nb.data;
    for (int64_t o = 0; o < m; o++) {
        float s = scale[o] / sqrtf(var[o] + eps);
        for (size_t k = 0; k < per; k++)
            nwd[(size_t)o * per + k] = wd[(size_t)o * per + k] * s;
        float bias = b != NULL ? ((const float *)b->data)[o] : 0.0f;
        nbd[o] = (bias - mean[o]) * s + shift[o];
    }
    graph_value *wv, *bv;
    rn_status st = transforms_add_constant(g, conv->name, "/folded_weights", &nw, &wv);
    if (st != RN_OK) {
        graph_tensor_release(&nb);
        return st;
    }
    if ((st = transforms_add_constant(g, conv->name, "/folded_bias", &nb, &bv)) != RN_OK)
        return st;
    if (conv->n_inputs < 3) {
        graph_value **in = realloc(conv->inputs, sizeof *in * 3);
        if (in == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
        conv->inputs = in;
        conv->n_inputs = 3;
    }
    conv->inputs[1] = wv;
    conv->inputs[2] = bv;
    return take_output(conv, bn);
}

rn_status transforms_fold_batchnorm(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *conv = g->nodes[i];
        if (!is_op(conv, "", "Conv") || conv->n_outputs != 1 || conv->outputs[0] == NULL ||
            !is_f32_constant(conv->inputs[1]) || conv->inputs[1]->constant->rank < 3)
            continue;
        if (conv->n_inputs > 2 && conv->inputs[2] != NULL && !is_f32_constant(conv->inputs[2]))
            continue;
        graph_node *bn = sole_reader(g, conv);
        if (bn == NULL || !is_op(bn, "", "BatchNormalization") || bn->n_inputs != 5 ||
            bn->inputs[0] != conv->outputs[0] || graph_node_attr_int(bn, "training_mode", 0) != 0 ||
            graph_node_attr_int(bn, "spatial", 1) != 1)
            continue;
        bool ok = bn->outputs[0] != NULL;
        for (int k = 1; k < bn->n_outputs; k++)
            ok &= bn->outputs[k] == NULL || transforms_count_uses(g, bn->outputs[k]) == 0;
        int64_t m = conv->inputs[1]->constant->dims[0];
        for (int k = 1; k < 5 && ok; k++)
            ok = is_f32_constant(bn->inputs[k]) &&
                 static_dims(bn->inputs[k], bn->inputs[k]->constant) &&
                 (int64_t)graph_tensor_count(bn->inputs[k]->constant) == m;
        if (!ok)
            continue;
        if ((st = fold(g, conv, bn)) == RN_OK)
            st = transforms_node_list_push(&removed, bn);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}

/* ---- fuse_conv_add ---- */

static bool same_static_shape(const graph_value *a, const graph_value *b)
{
    return a->type == b->type && graph_shape_is_static(&a->shape) &&
           a->shape.rank == b->shape.rank &&
           memcmp(a->shape.dims, b->shape.dims, sizeof(int64_t) * (size_t)a->shape.rank) == 0;
}

/* Conv (or FusedConv) -> Add(., r), or with `matmul` FusedMatMul (a
 * product by constant weights, fuse_matmul_bias) -> Add(., r): the node with
 * r as its residual input 3, where the node has no activation or residual
 * yet and r has the output's static shape. */
static rn_status fuse_add(graph *g, bool matmul, int *changes)
{
    const char *op = matmul ? "FusedMatMul" : "FusedConv";
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *conv = g->nodes[i];
        bool plain = !matmul && is_op(conv, "", "Conv");
        bool fused = is_op(conv, "runnel", op) && graph_node_attr(conv, "activation") == NULL &&
                     (conv->n_inputs < 4 || conv->inputs[3] == NULL);
        if (!(plain || fused) || conv->n_outputs != 1 || conv->outputs[0] == NULL ||
            conv->outputs[0]->type != RN_F32)
            continue;
        graph_node *add = sole_reader(g, conv);
        if (add == NULL || add->n_inputs != 2 || add->n_outputs != 1 || add->outputs[0] == NULL ||
            !(is_op(add, "", "Add") || is_op(add, "", "Sum")) || add->opset < 7)
            continue;
        graph_value *y = conv->outputs[0];
        graph_value *r = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
        if (r == NULL || r == y || !same_static_shape(r, y) ||
            !same_static_shape(add->outputs[0], y))
            continue;
        if ((st = make_fused(conv, op, 4)) != RN_OK)
            break;
        conv->inputs[3] = r;
        if ((st = take_output(conv, add)) == RN_OK)
            st = transforms_node_list_push(&removed, add);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}

rn_status transforms_fuse_conv_add(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    return fuse_add(g, false, changes);
}

rn_status transforms_fuse_matmul_add(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    return fuse_add(g, true, changes);
}

/* ---- fuse_activation ---- */

/* The activation node n stands for, as (name, params); false when it is
 * none the fused ops take. */
static bool activation_of(const graph_node *n, const char **name, float *params, int *count)
{
    *count = 0;
    if (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
        return false;
    static const char *const plain[] = {"Relu", "Sigmoid", "Tanh", "HardSwish", "Mish"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (strcmp(n->op_type, plain[i]) == 0) {
            *name = plain[i];
            return true;
        }
    if (strcmp(n->op_type, "LeakyRelu") == 0 || strcmp(n->op_type, "Elu") == 0) {
        bool elu = n->op_type[0] == 'E';
        *name = elu ? "Elu" : "LeakyRelu";
        params[(*count)++] = graph_node_attr_float(n, "alpha", elu ? 1.0f : 0.01f);
        return true;
    }
    if (strcmp(n->op_type, "HardSigmoid") == 0) {
        *name = "HardSigmoid";
        params[(*count)++] = graph_node_attr_float(n, "alpha", 0.2f);
        params[(*count)++] = graph_node_attr_float(n, "beta", 0.5f);
        return true;
    }
    if (strcmp(n->op_type, "Gelu") == 0) {
        const char *approx = graph_node_attr_string(n, "approximate", "none");
        *name = strcmp(approx, "tanh") == 0 ? "GeluTanh" : "Gelu";
        return true;
    }
    if (strcmp(n->op_type, "Clip") == 0) {
        *name = "Clip";
        params[0] = graph_node_attr_float(n, "min", -3.402823466e38f);
        params[1] = graph_node_attr_float(n, "max", 3.402823466e38f);
        *count = 2;
        for (int k = 1; k < 3 && k < n->n_inputs; k++) {
            if (n->inputs[k] == NULL)
                continue;
            if (!is_f32_constant(n->inputs[k]) || graph_tensor_count(n->inputs[k]->constant) != 1)
                return false;
            params[k - 1] = *(const float *)n->inputs[k]->constant->data;
        }
        return true;
    }
    return false;
}

rn_status transforms_fuse_activation(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        const char *fused_op = is_op(n, "", "Conv") || is_op(n, "runnel", "FusedConv") ? "FusedConv"
                               : is_op(n, "", "Gemm") || is_op(n, "runnel", "FusedGemm")
                                   ? "FusedGemm"
                               : is_op(n, "runnel", "FusedMatMul") ? "FusedMatMul"
                               : is_op(n, "", "BatchNormalization") && n->n_inputs == 5 &&
                                       graph_node_attr_int(n, "training_mode", 0) == 0
                                   ? "FusedBatchNormalization"
                                   : NULL;
        if (fused_op == NULL || graph_node_attr(n, "activation") != NULL || n->n_outputs != 1 ||
            n->outputs[0] == NULL || n->outputs[0]->type != RN_F32)
            continue;
        graph_node *act = sole_reader(g, n);
        const char *name;
        float params[2];
        int count;
        if (act == NULL || act->n_outputs < 1 || act->outputs[0] == NULL ||
            act->inputs[0] != n->outputs[0] || !activation_of(act, &name, params, &count))
            continue;
        /* A batch normalization fuses a ReLU only (oneDNN's fuse_norm_relu). */
        if (strcmp(fused_op, "FusedBatchNormalization") == 0 && strcmp(name, "Relu") != 0)
            continue;
        if ((st = make_fused(n, fused_op, n->n_inputs)) != RN_OK ||
            (st = transforms_set_attr_string(n, "activation", name)) != RN_OK ||
            (count > 0 && (st = set_floats(n, "activation_params", params, count)) != RN_OK))
            break;
        if ((st = take_output(n, act)) == RN_OK)
            st = transforms_node_list_push(&removed, act);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}

/* ---- fuse_matmul_bias ---- */

rn_status transforms_fuse_matmul_bias(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *mm = g->nodes[i];
        if (!is_op(mm, "", "MatMul") || mm->outputs[0] == NULL || mm->outputs[0]->type != RN_F32 ||
            !is_f32_constant(mm->inputs[1]) || mm->inputs[1]->constant->rank != 2 ||
            mm->outputs[0]->shape.rank < 2)
            continue;
        int64_t n = mm->inputs[1]->constant->dims[1];
        graph_node *add = sole_reader(g, mm);
        if (add == NULL || !is_op(add, "", "Add") || add->n_inputs != 2 || add->opset < 7 ||
            add->outputs[0] == NULL || !same_static_shape(add->outputs[0], mm->outputs[0]))
            continue;
        graph_value *b = add->inputs[0] == mm->outputs[0] ? add->inputs[1] : add->inputs[0];
        if (!is_f32_constant(b) || (int64_t)graph_tensor_count(b->constant) != n ||
            b->constant->dims[b->constant->rank - 1] != n)
            continue;
        if ((st = make_fused(mm, "FusedMatMul", 3)) != RN_OK)
            break;
        mm->inputs[2] = b;
        if ((st = take_output(mm, add)) == RN_OK)
            st = transforms_node_list_push(&removed, add);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}

/* ---- fold_scale_shift ---- */

/* Whether constant c broadcasts over an output of rank `rank` with `ch`
 * channels (axis 1) as one value per channel, or one value overall. */
static bool per_channel(const graph_value *c, int rank, int64_t ch)
{
    if (!is_f32_constant(c))
        return false;
    const graph_tensor *t = c->constant;
    size_t n = graph_tensor_count(t);
    if (n == 1)
        return true;
    if ((int64_t)n != ch || t->rank > rank || t->rank < rank - 1)
        return false;
    for (int d = 0; d < t->rank; d++) {
        int axis = d + (rank - t->rank);
        if (t->dims[d] != (axis == 1 ? ch : 1))
            return false;
    }
    return true;
}

/* Replaces input k of n (ch rows of `per` values, `old`; NULL: zeros) by
 * a new constant: each row multiplied by (or, with add, shifted by) its
 * channel's value of c (nc values: 1 or ch). */
static rn_status scaled(graph *g, graph_node *n, int k, const graph_tensor *old, int64_t ch,
                        size_t per, const float *c, size_t nc, bool add, const char *suffix)
{
    graph_tensor t = {.type = RN_F32, .rank = 1, .dims = {ch}};
    if (old != NULL) {
        t.rank = old->rank;
        memcpy(t.dims, old->dims, sizeof t.dims);
    }
    t.nbytes = sizeof(float) * (size_t)ch * per;
    if ((t.data = malloc(t.nbytes)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
    float *v = t.data;
    for (int64_t o = 0; o < ch; o++) {
        float f = c[nc == 1 ? 0 : o];
        for (size_t i = 0; i < per; i++) {
            float x = old != NULL ? ((const float *)old->data)[(size_t)o * per + i] : 0.0f;
            v[(size_t)o * per + i] = add ? x + f : x * f;
        }
    }
    graph_value *nv;
    rn_status st = transforms_add_constant(g, n->name, suffix, &t, &nv);
    if (st == RN_OK)
        n->inputs[k] = nv;
    return st;
}

/* Whether n is a Conv with constant f32 weights (and bias) or an inference
 * BatchNormalization with constant f32 statistics, whose only output is
 * read by one node: what fold_scale_shift folds into. */
static bool foldable(graph *g, const graph_node *n)
{
    if (n->n_outputs != 1 || n->outputs[0] == NULL || n->outputs[0]->type != RN_F32 ||
        n->outputs[0]->shape.rank < 2 || n->outputs[0]->shape.dims[1] < 1)
        return false;
    int64_t ch = n->outputs[0]->shape.dims[1];
    if (is_op(n, "", "Conv"))
        return is_f32_constant(n->inputs[1]) && n->inputs[1]->constant->dims[0] == ch &&
               (n->n_inputs < 3 || n->inputs[2] == NULL || is_f32_constant(n->inputs[2])) &&
               sole_reader(g, n) != NULL;
    if (!is_op(n, "", "BatchNormalization") || n->n_inputs != 5 ||
        graph_node_attr_int(n, "training_mode", 0) != 0)
        return false;
    for (int k = 1; k < 5; k++)
        if (!is_f32_constant(n->inputs[k]) ||
            (int64_t)graph_tensor_count(n->inputs[k]->constant) != ch)
            return false;
    return sole_reader(g, n) != NULL;
}

rn_status transforms_fold_scale_shift(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if (!foldable(g, n))
            continue;
        graph_node *op = sole_reader(g, n);
        graph_value *y = n->outputs[0];
        if (op->n_inputs != 2 || op->n_outputs != 1 || op->outputs[0] == NULL || op->opset < 7 ||
            !(is_op(op, "", "Mul") || is_op(op, "", "Add")))
            continue;
        graph_value *c = op->inputs[0] == y ? op->inputs[1] : op->inputs[0];
        int64_t ch = y->shape.dims[1];
        if (c == y || !per_channel(c, y->shape.rank, ch) || !same_static_shape(op->outputs[0], y))
            continue;
        bool add = is_op(op, "", "Add");
        const float *cv = c->constant->data;
        size_t nc = graph_tensor_count(c->constant);
        if (n->n_inputs < 3) {
            graph_value **in = realloc(n->inputs, sizeof *in * 3);
            if (in == NULL) {
                st = rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
                break;
            }
            n->inputs = in;
            n->inputs[2] = NULL;
            n->n_inputs = 3;
        }
        /* Conv: Mul scales the weights and the bias, Add shifts the bias.
         * BatchNormalization: Mul scales its scale and bias (inputs 1, 2),
         * Add shifts its bias. */
        const graph_tensor *b = n->inputs[2] != NULL ? n->inputs[2]->constant : NULL;
        if (!add) {
            const graph_tensor *w = n->inputs[1]->constant;
            st = scaled(g, n, 1, w, ch, graph_tensor_count(w) / (size_t)ch, cv, nc, false,
                        "/scaled");
            if (st == RN_OK && b != NULL)
                st = scaled(g, n, 2, b, ch, 1, cv, nc, false, "/scaled_bias");
        } else {
            st = scaled(g, n, 2, b, ch, 1, cv, nc, true, "/shifted_bias");
        }
        if (st == RN_OK && (st = take_output(n, op)) == RN_OK)
            st = transforms_node_list_push(&removed, op);
    }
    return transforms_finish_removal(g, &removed, st, changes);
}

/* ---- gemm_transpose_b ---- */

rn_status transforms_gemm_transpose_b(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    int done = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *n = g->nodes[i];
        if (!(is_op(n, "", "Gemm") || is_op(n, "runnel", "FusedGemm")) || n->n_inputs < 2 ||
            graph_node_attr_int(n, "transB", 0) != 0 || !is_f32_constant(n->inputs[1]) ||
            n->inputs[1]->constant->rank != 2)
            continue;
        const graph_tensor *b = n->inputs[1]->constant;
        int64_t k = b->dims[0], m = b->dims[1];
        graph_tensor t = {.type = RN_F32, .rank = 2, .dims = {m, k}, .nbytes = b->nbytes};
        if ((t.data = malloc(t.nbytes)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "transforms: out of memory");
        const float *src = b->data;
        float *dst = t.data;
        for (int64_t r = 0; r < k; r++)
            for (int64_t c = 0; c < m; c++)
                dst[c * k + r] = src[r * m + c];
        graph_value *v;
        rn_status st = transforms_add_constant(g, n->name, "/b_transposed", &t, &v);
        if (st == RN_OK)
            st = transforms_set_attr_int(n, "transB", 1);
        if (st != RN_OK)
            return st;
        n->inputs[1] = v;
        done++;
    }
    *changes = done;
    return RN_OK;
}
