/* REF LSTM (gates i, o, f, c in W, R and B; peepholes i, o, f in P; f
 * Sigmoid, g and h Tanh by default):
 *   i = f(X W_i^T + H R_i^T + P_i . C + Wb_i + Rb_i)
 *   f = f(X W_f^T + H R_f^T + P_f . C + Wb_f + Rb_f)   (1 - i with input_forget)
 *   c = g(X W_c^T + H R_c^T + Wb_c + Rb_c)
 *   C' = f . C + i . c
 *   o = f(X W_o^T + H R_o^T + P_o . C' + Wb_o + Rb_o)
 *   H' = o . h(C')
 * Directions, sequence lengths, activations and clip as in rnn.c; Y_c is the
 * cell state after each sequence's last valid step. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/rnn_util.h"
#include "plugins/ref/kernels/tmp.h"

static const char *const lstm_defaults[] = {"Sigmoid", "Tanh", "Tanh"};

static bool lstm_supports(const graph_node *node, const char **why)
{
    return ref_rnn_supports(node, 3, why);
}

static rn_status lstm_run(plugin_kernel_args *args)
{
    ref_rnn r;
    rn_status st = ref_rnn_init(args, 4, 3, lstm_defaults, &r);
    if (st != RN_OK)
        return st;
    bool input_forget = graph_node_attr_int(args->node, "input_forget", 0) != 0;
    int64_t h = r.hidden, in = r.input;
    double *a = ref_tmp_alloc((size_t)(4 * h) * sizeof *a);
    if (a == NULL) {
        ref_rnn_free(&r);
        return ref_nn_oom(args->node);
    }
    for (int64_t d = 0; d < r.dirs; d++) {
        const double *w = r.w + d * 4 * h * in, *rr = r.r + d * 4 * h * h;
        const double *wb = r.b + d * 8 * h, *rb = wb + 4 * h;
        const double *pi = r.p + d * 3 * h, *po = pi + h, *pf = po + h;
        const ref_rnn_act *f = &r.act[d][0], *g = &r.act[d][1], *hf = &r.act[d][2];
        for (int64_t b = 0; b < r.batch; b++) {
            double *hs = r.yh + (d * r.batch + b) * h, *cs = r.yc + (d * r.batch + b) * h;
            memcpy(hs, r.h0 + (d * r.batch + b) * h, (size_t)h * sizeof *hs);
            memcpy(cs, r.c0 + (d * r.batch + b) * h, (size_t)h * sizeof *cs);
            for (int64_t s = 0; s < r.len[b]; s++) {
                int64_t t = ref_rnn_backward(&r, d) ? r.len[b] - 1 - s : s;
                for (int64_t j = 0; j < 4 * h; j++)
                    a[j] = wb[j] + rb[j];
                ref_rnn_gemv(w, 4 * h, in, r.x + (t * r.batch + b) * in, a);
                ref_rnn_gemv(rr, 4 * h, h, hs, a);
                const double *ai = a, *ao = a + h, *af = a + 2 * h, *ac = a + 3 * h;
                double *y = r.y + ((t * r.dirs + d) * r.batch + b) * h;
                for (int64_t j = 0; j < h; j++) {
                    double ig = ref_rnn_apply(&r, f, ai[j] + pi[j] * cs[j]);
                    double fg =
                        input_forget ? 1.0 - ig : ref_rnn_apply(&r, f, af[j] + pf[j] * cs[j]);
                    double cg = ref_rnn_apply(&r, g, ac[j]);
                    cs[j] = fg * cs[j] + ig * cg;
                    double og = ref_rnn_apply(&r, f, ao[j] + po[j] * cs[j]);
                    hs[j] = y[j] = og * ref_rnn_apply(&r, hf, cs[j]);
                }
            }
        }
    }
    ref_tmp_free(a);
    st = ref_rnn_finish(args, &r);
    ref_rnn_free(&r);
    return st;
}

const plugin_kernel ref_kernel_lstm = {
    .domain = "",
    .op_type = "LSTM",
    .impl_type = "ref",
    .supports = lstm_supports,
    .run = lstm_run,
};
