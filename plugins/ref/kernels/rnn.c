/* REF RNN, and what RNN, GRU and LSTM share (rnn_util.h).
 *
 * RNN: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb), f Tanh by default.
 *
 * Shared semantics:
 *   - direction forward, reverse or bidirectional (forward then reverse);
 *   - sequence_lens: batch entry b runs sequence_lens[b] steps (the reverse
 *     direction starts at its last valid step); Y is 0 past them and Y_h /
 *     Y_c hold the state after the last valid step (the initial state for a
 *     length of 0);
 *   - activations (per direction, case-insensitive): Relu, Tanh, Sigmoid,
 *     Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
 *     Softsign, Softplus. activation_alpha / activation_beta are consumed in
 *     order by the activations that take them, as onnxruntime does; those
 *     not given take the ONNX operators' defaults. A bidirectional node may
 *     list the forward activations only, which the reverse direction reuses;
 *   - clip > 0 clamps the input of every activation to [-clip, clip].
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/rnn_util.h"
#include "plugins/ref/kernels/tmp.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

/* ---- activations ---- */

enum {
    ACT_RELU,
    ACT_TANH,
    ACT_SIGMOID,
    ACT_AFFINE,
    ACT_LEAKY_RELU,
    ACT_THRESHOLDED_RELU,
    ACT_SCALED_TANH,
    ACT_HARD_SIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS,
};

static const struct {
    const char *name;
    int n_params; /* how many of alpha, beta it takes */
    double alpha, beta;
} act_table[] = {
    [ACT_RELU] = {"relu", 0, 0, 0},
    [ACT_TANH] = {"tanh", 0, 0, 0},
    [ACT_SIGMOID] = {"sigmoid", 0, 0, 0},
    [ACT_AFFINE] = {"affine", 2, 1.0, 0.0},
    [ACT_LEAKY_RELU] = {"leakyrelu", 1, 0.01, 0},
    [ACT_THRESHOLDED_RELU] = {"thresholdedrelu", 1, 1.0, 0},
    [ACT_SCALED_TANH] = {"scaledtanh", 2, 1.0, 1.0},
    [ACT_HARD_SIGMOID] = {"hardsigmoid", 2, 0.2, 0.5},
    [ACT_ELU] = {"elu", 1, 1.0, 0},
    [ACT_SOFTSIGN] = {"softsign", 0, 0, 0},
    [ACT_SOFTPLUS] = {"softplus", 0, 0, 0},
};

#define N_ACTS ((int)(sizeof act_table / sizeof act_table[0]))

static int act_find(const char *name)
{
    for (int k = 0; k < N_ACTS; k++) {
        const char *a = act_table[k].name, *b = name;
        while (*a && tolower((unsigned char)*b) == *a)
            a++, b++;
        if (*a == '\0' && *b == '\0')
            return k;
    }
    return -1;
}

double ref_rnn_apply(const ref_rnn *r, const ref_rnn_act *a, double v)
{
    if (r->clip > 0)
        v = v < -r->clip ? -r->clip : v > r->clip ? r->clip : v;
    switch (a->kind) {
    case ACT_RELU:
        return v > 0 ? v : 0;
    case ACT_TANH:
        return tanh(v);
    case ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    case ACT_AFFINE:
        return a->alpha * v + a->beta;
    case ACT_LEAKY_RELU:
        return v >= 0 ? v : a->alpha * v;
    case ACT_THRESHOLDED_RELU:
        return v > a->alpha ? v : 0;
    case ACT_SCALED_TANH:
        return a->alpha * tanh(a->beta * v);
    case ACT_HARD_SIGMOID: {
        double h = a->alpha * v + a->beta;
        return h < 0 ? 0 : h > 1 ? 1 : h;
    }
    case ACT_ELU:
        return v >= 0 ? v : a->alpha * (exp(v) - 1.0);
    case ACT_SOFTSIGN:
        return v / (1.0 + fabs(v));
    default: /* softplus, overflow-safe */
        return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
    }
}

/* Reads the activations attribute (with the defaults when absent) and the
 * alpha / beta lists into act[dirs][n_acts]. */
static rn_status acts_read(const graph_node *node, int64_t dirs, int n_acts,
                           const char *const *dflt, ref_rnn_act act[2][REF_RNN_MAX_ACTS])
{
    const graph_attr *names = graph_node_attr(node, "activations");
    int count = names != NULL && names->type == GRAPH_ATTR_STRINGS ? names->count : 0;
    if (count != 0 && count != n_acts && count != n_acts * dirs)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "activations lists %d functions; expected %d per direction",
                            NODE_ARGS(node), count, n_acts);
    const float *alphas, *betas;
    int n_alpha = graph_node_attr_floats(node, "activation_alpha", &alphas);
    int n_beta = graph_node_attr_floats(node, "activation_beta", &betas);
    int ia = 0, ib = 0;
    for (int64_t d = 0; d < dirs; d++) {
        for (int k = 0; k < n_acts; k++) {
            const char *name = dflt[k];
            if (count > 0)
                name = names->strings[count == n_acts ? k : d * n_acts + k];
            int kind = act_find(name);
            if (kind < 0)
                return rn_set_error(RN_UNSUPPORTED, NODE_FMT "activation '%s' is not supported",
                                    NODE_ARGS(node), name);
            ref_rnn_act *a = &act[d][k];
            a->kind = kind;
            a->alpha = act_table[kind].alpha;
            a->beta = act_table[kind].beta;
            /* With one list for both directions, the reverse direction
             * reuses the forward one's parameters. */
            if (count == n_acts && d == 1) {
                *a = act[0][k];
                continue;
            }
            if (act_table[kind].n_params >= 1 && ia < n_alpha)
                a->alpha = alphas[ia++];
            if (act_table[kind].n_params >= 2 && ib < n_beta)
                a->beta = betas[ib++];
        }
    }
    return RN_OK;
}

/* ---- supports / init / finish ---- */

bool ref_rnn_supports(const graph_node *node, int n_acts, const char **why)
{
    if (node->n_inputs < 3 || !node->inputs[0] || !node->inputs[1] || !node->inputs[2]) {
        *why = "X, W or R is omitted";
        return false;
    }
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t)) {
        *why = "X is not f32, f64, f16 or bf16";
        return false;
    }
    for (int i = 1; i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[i];
        if (v != NULL && v->type != (i == 4 ? RN_I32 : t)) {
            *why = i == 4 ? "sequence_lens is not i32" : "inputs of different element types";
            return false;
        }
    }
    const graph_attr *names = graph_node_attr(node, "activations");
    for (int k = 0; names != NULL && names->type == GRAPH_ATTR_STRINGS && k < names->count; k++) {
        if (act_find(names->strings[k]) < 0) {
            static _Thread_local char buf[96];
            snprintf(buf, sizeof buf, "activation '%.60s'", names->strings[k]);
            *why = buf;
            return false;
        }
    }
    (void)n_acts;
    return true;
}

/* A new double copy of input i (count elements), or zeros when absent. */
static double *input_f64(const plugin_kernel_args *args, int i, size_t count)
{
    const graph_tensor *t = i >= 0 ? ref_mv_opt_input(args, i) : NULL;
    double *d = ref_tmp_calloc(count ? count : 1, sizeof *d);
    if (d != NULL && t != NULL)
        for (size_t k = 0; k < count; k++)
            d[k] = ref_nn_get(t->type, t->data, k);
    return d;
}

/* Checks that optional input i, when present, has the given dims. */
static rn_status want_dims(const plugin_kernel_args *args, int i, int rank, const int64_t *dims)
{
    const graph_tensor *t = ref_mv_opt_input(args, i);
    if (t == NULL)
        return RN_OK;
    bool ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++)
        ok = t->dims[d] == dims[d];
    if (ok)
        return RN_OK;
    char have[128], want[128];
    graph_shape hs = {.rank = t->rank}, ws = {.rank = rank};
    memcpy(hs.dims, t->dims, sizeof hs.dims);
    memcpy(ws.dims, dims, sizeof(int64_t) * (size_t)rank);
    return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input %d has shape %s; expected %s",
                        NODE_ARGS(args->node), i, graph_shape_str(&hs, have, sizeof have),
                        graph_shape_str(&ws, want, sizeof want));
}

/* Layout 1 (batch first) state [batch][dirs][hidden] into layout 0. */
static void states_to_layout0(double *s, int64_t dirs, int64_t batch, int64_t hidden, double *tmp)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t d = 0; d < dirs; d++)
            memcpy(tmp + (d * batch + b) * hidden, s + (b * dirs + d) * hidden,
                   (size_t)hidden * sizeof *tmp);
    memcpy(s, tmp, (size_t)(dirs * batch * hidden) * sizeof *s);
}

rn_status ref_rnn_init(const plugin_kernel_args *args, int gates, int n_acts,
                       const char *const *dflt, ref_rnn *r)
{
    const graph_node *node = args->node;
    memset(r, 0, sizeof *r);
    r->node = node;
    rn_status st = RN_OK;
    for (int i = 0; i < 3; i++)
        if (i >= args->n_inputs || args->inputs[i].type == RN_UNDEFINED ||
            (args->inputs[i].data == NULL && graph_tensor_count(&args->inputs[i]) != 0))
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "required input %d is missing",
                                NODE_ARGS(node), i);
    const graph_tensor *x = &args->inputs[0], *w = &args->inputs[1], *rt = &args->inputs[2];
    const char *direction = graph_node_attr_string(node, "direction", "forward");
    int64_t layout = graph_node_attr_int(node, "layout", 0);
    r->dirs = strcmp(direction, "bidirectional") == 0 ? 2 : 1;
    r->reverse = strcmp(direction, "reverse") == 0;
    r->gates = gates;
    r->clip = graph_node_attr_float(node, "clip", 0.0f);
    if (x->rank != 3 || w->rank != 3 || rt->rank != 3 || (layout != 0 && layout != 1))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "X, W and R must have rank 3 (ranks %d, %d, %d), layout 0 "
                                     "or 1",
                            NODE_ARGS(node), x->rank, w->rank, rt->rank);
    r->seq = x->dims[layout ? 1 : 0];
    r->batch = x->dims[layout ? 0 : 1];
    r->input = x->dims[2];
    r->hidden = graph_node_attr_int(node, "hidden_size", rt->dims[2]);
    int64_t h = r->hidden, gh = gates * h, dirs = r->dirs;
    int64_t wd[3] = {dirs, gh, r->input}, rd[3] = {dirs, gh, h}, bd[2] = {dirs, 2 * gh};
    int64_t sd[3] = {layout ? r->batch : dirs, layout ? dirs : r->batch, h};
    int64_t ld[1] = {r->batch}, pd[2] = {dirs, 3 * h};
    if (h < 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "hidden_size is %lld", NODE_ARGS(node),
                            (long long)h);
    if ((st = want_dims(args, 1, 3, wd)) != RN_OK || (st = want_dims(args, 2, 3, rd)) != RN_OK ||
        (st = want_dims(args, 3, 2, bd)) != RN_OK || (st = want_dims(args, 4, 1, ld)) != RN_OK ||
        (st = want_dims(args, 5, 3, sd)) != RN_OK)
        return st;
    if (gates == 4 &&
        ((st = want_dims(args, 6, 3, sd)) != RN_OK || (st = want_dims(args, 7, 2, pd)) != RN_OK))
        return st;
    if ((st = acts_read(node, dirs, n_acts, dflt, r->act)) != RN_OK)
        return st;
    size_t nx = (size_t)(r->seq * r->batch * r->input), ns = (size_t)(dirs * r->batch * h);
    r->x = input_f64(args, 0, nx);
    r->w = input_f64(args, 1, (size_t)(dirs * gh * r->input));
    r->r = input_f64(args, 2, (size_t)(dirs * gh * h));
    r->b = input_f64(args, 3, (size_t)(dirs * 2 * gh));
    r->h0 = input_f64(args, 5, ns);
    r->c0 = input_f64(args, gates == 4 ? 6 : -1, ns);
    r->p = input_f64(args, gates == 4 ? 7 : -1, (size_t)(dirs * 3 * h));
    r->len = ref_tmp_calloc((size_t)(r->batch ? r->batch : 1), sizeof *r->len);
    size_t ny = (size_t)r->seq * ns;
    r->y = ref_tmp_calloc(ny ? ny : 1, sizeof *r->y);
    r->yh = ref_tmp_calloc(ns ? ns : 1, sizeof *r->yh);
    r->yc = ref_tmp_calloc(ns ? ns : 1, sizeof *r->yc);
    double *tmp = ref_tmp_alloc((nx > ns ? nx : ns ? ns : 1) * sizeof *tmp);
    if (!r->x || !r->w || !r->r || !r->b || !r->h0 || !r->c0 || !r->p || !r->len || !r->y ||
        !r->yh || !r->yc || !tmp) {
        ref_tmp_free(tmp);
        ref_rnn_free(r);
        return ref_nn_oom(node);
    }
    if (layout == 1) { /* X [batch][seq][input] -> [seq][batch][input] */
        for (int64_t b = 0; b < r->batch; b++)
            for (int64_t t = 0; t < r->seq; t++)
                memcpy(tmp + (t * r->batch + b) * r->input, r->x + (b * r->seq + t) * r->input,
                       (size_t)r->input * sizeof *tmp);
        memcpy(r->x, tmp, nx * sizeof *tmp);
        states_to_layout0(r->h0, dirs, r->batch, h, tmp);
        states_to_layout0(r->c0, dirs, r->batch, h, tmp);
    }
    ref_tmp_free(tmp);
    const graph_tensor *lens = ref_mv_opt_input(args, 4);
    for (int64_t b = 0; b < r->batch; b++) {
        r->len[b] = lens ? ref_mv_int_at(lens, (size_t)b) : r->seq;
        if (r->len[b] < 0 || r->len[b] > r->seq) {
            long long bad = (long long)r->len[b], seq = (long long)r->seq;
            ref_rnn_free(r);
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "sequence_lens[%lld] is %lld; must be in [0, %lld]",
                                NODE_ARGS(node), (long long)b, bad, seq);
        }
    }
    return RN_OK;
}

void ref_rnn_gemv(const double *m, int64_t rows, int64_t cols, const double *v, double *out)
{
    for (int64_t i = 0; i < rows; i++) {
        const double *row = m + i * cols;
        double acc = 0;
        for (int64_t k = 0; k < cols; k++)
            acc += row[k] * v[k];
        out[i] += acc;
    }
}

bool ref_rnn_backward(const ref_rnn *r, int64_t d)
{
    return r->dirs == 2 ? d == 1 : r->reverse;
}

/* Writes a [dirs][batch][hidden] state into output o in the node's layout. */
static void state_out(const ref_rnn *r, const double *s, graph_tensor *o, bool layout1)
{
    for (int64_t d = 0; d < r->dirs; d++)
        for (int64_t b = 0; b < r->batch; b++)
            for (int64_t j = 0; j < r->hidden; j++) {
                int64_t e = layout1 ? (b * r->dirs + d) * r->hidden + j
                                    : (d * r->batch + b) * r->hidden + j;
                ref_nn_set(o->type, o->data, (size_t)e, s[(d * r->batch + b) * r->hidden + j]);
            }
}

rn_status ref_rnn_finish(plugin_kernel_args *args, const ref_rnn *r)
{
    bool layout1 = graph_node_attr_int(r->node, "layout", 0) == 1;
    size_t ns = (size_t)(r->dirs * r->batch * r->hidden);
    for (int o = 0; o < args->n_outputs && o < 3; o++) {
        graph_tensor *t = &args->outputs[o];
        if (t->type == RN_UNDEFINED || r->node->outputs[o] == NULL)
            continue;
        size_t want = o == 0 ? (size_t)r->seq * ns : ns;
        if (t->data == NULL || graph_tensor_count(t) != want)
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "output %d holds %zu values, not %zu",
                                NODE_ARGS(r->node), o, graph_tensor_count(t), want);
        if (o == 0) {
            for (int64_t s = 0; s < r->seq; s++)
                for (int64_t d = 0; d < r->dirs; d++)
                    for (int64_t b = 0; b < r->batch; b++)
                        for (int64_t j = 0; j < r->hidden; j++) {
                            int64_t e = layout1
                                            ? ((b * r->seq + s) * r->dirs + d) * r->hidden + j
                                            : ((s * r->dirs + d) * r->batch + b) * r->hidden + j;
                            double v = r->y[((s * r->dirs + d) * r->batch + b) * r->hidden + j];
                            ref_nn_set(t->type, t->data, (size_t)e, v);
                        }
        } else {
            state_out(r, o == 1 ? r->yh : r->yc, t, layout1);
        }
    }
    return RN_OK;
}

void ref_rnn_free(ref_rnn *r)
{
    double *bufs[] = {r->x, r->w, r->r, r->b, r->h0, r->c0, r->p, r->y, r->yh, r->yc};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        ref_tmp_free(bufs[i]);
    ref_tmp_free(r->len);
    memset(r, 0, sizeof *r);
}

/* ---- RNN ---- */

static const char *const rnn_defaults[] = {"Tanh"};

static bool rnn_supports(const graph_node *node, const char **why)
{
    return ref_rnn_supports(node, 1, why);
}

static rn_status rnn_run(plugin_kernel_args *args)
{
    ref_rnn r;
    rn_status st = ref_rnn_init(args, 1, 1, rnn_defaults, &r);
    if (st != RN_OK)
        return st;
    int64_t h = r.hidden;
    double *a = ref_tmp_alloc((size_t)h * sizeof *a);
    if (a == NULL) {
        ref_rnn_free(&r);
        return ref_nn_oom(args->node);
    }
    for (int64_t d = 0; d < r.dirs; d++) {
        const double *w = r.w + d * h * r.input, *rr = r.r + d * h * h, *bias = r.b + d * 2 * h;
        for (int64_t b = 0; b < r.batch; b++) {
            double *hs = r.yh + (d * r.batch + b) * h;
            memcpy(hs, r.h0 + (d * r.batch + b) * h, (size_t)h * sizeof *hs);
            for (int64_t s = 0; s < r.len[b]; s++) {
                int64_t t = ref_rnn_backward(&r, d) ? r.len[b] - 1 - s : s;
                for (int64_t j = 0; j < h; j++)
                    a[j] = bias[j] + bias[h + j];
                ref_rnn_gemv(w, h, r.input, r.x + (t * r.batch + b) * r.input, a);
                ref_rnn_gemv(rr, h, h, hs, a);
                double *y = r.y + ((t * r.dirs + d) * r.batch + b) * h;
                for (int64_t j = 0; j < h; j++)
                    hs[j] = y[j] = ref_rnn_apply(&r, &r.act[d][0], a[j]);
            }
        }
    }
    ref_tmp_free(a);
    st = ref_rnn_finish(args, &r);
    ref_rnn_free(&r);
    return st;
}

const plugin_kernel ref_kernel_rnn = {
    .domain = "",
    .op_type = "RNN",
    .impl_type = "ref",
    .supports = rnn_supports,
    .run = rnn_run,
};
