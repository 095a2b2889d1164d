/* REF GRU (gates z, r, h in W, R and B; f Sigmoid and g Tanh by default):
 *   z = f(X W_z^T + H R_z^T + Wb_z + Rb_z)
 *   r = f(X W_r^T + H R_r^T + Wb_r + Rb_r)
 *   h = g(X W_h^T + (r . H) R_h^T + Rb_h + Wb_h)       linear_before_reset = 0
 *   h = g(X W_h^T + r . (H R_h^T + Rb_h) + Wb_h)       linear_before_reset != 0
 *   H' = (1 - z) . h + z . H
 * Directions, sequence lengths, activations and clip as in rnn.c. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/rnn_util.h"
#include "plugins/ref/kernels/tmp.h"

static const char *const gru_defaults[] = {"Sigmoid", "Tanh"};

static bool gru_supports(const graph_node *node, const char **why)
{
    return ref_rnn_supports(node, 2, why);
}

static rn_status gru_run(plugin_kernel_args *args)
{
    ref_rnn r;
    rn_status st = ref_rnn_init(args, 3, 2, gru_defaults, &r);
    if (st != RN_OK)
        return st;
    bool lbr = graph_node_attr_int(args->node, "linear_before_reset", 0) != 0;
    int64_t h = r.hidden, in = r.input;
    /* xw: X W^T + Wb for all three gates; hr: H R^T (+ Rb) per gate; rh: r . H */
    double *xw = ref_tmp_alloc((size_t)(3 * h) * sizeof *xw);
    double *hr = ref_tmp_alloc((size_t)(3 * h) * sizeof *hr);
    double *rh = ref_tmp_alloc((size_t)h * sizeof *rh);
    if (!xw || !hr || !rh) {
        ref_tmp_free(xw), ref_tmp_free(hr), ref_tmp_free(rh);
        ref_rnn_free(&r);
        return ref_nn_oom(args->node);
    }
    for (int64_t d = 0; d < r.dirs; d++) {
        const double *w = r.w + d * 3 * h * in, *rr = r.r + d * 3 * h * h;
        const double *wb = r.b + d * 6 * h, *rb = wb + 3 * h;
        const ref_rnn_act *f = &r.act[d][0], *g = &r.act[d][1];
        for (int64_t b = 0; b < r.batch; b++) {
            double *hs = r.yh + (d * r.batch + b) * h;
            memcpy(hs, r.h0 + (d * r.batch + b) * h, (size_t)h * sizeof *hs);
            for (int64_t s = 0; s < r.len[b]; s++) {
                int64_t t = ref_rnn_backward(&r, d) ? r.len[b] - 1 - s : s;
                memcpy(xw, wb, (size_t)(3 * h) * sizeof *xw);
                ref_rnn_gemv(w, 3 * h, in, r.x + (t * r.batch + b) * in, xw);
                /* z and r see H R^T + Rb; h's recurrent term depends on the mode */
                memcpy(hr, rb, (size_t)(2 * h) * sizeof *hr);
                ref_rnn_gemv(rr, 2 * h, h, hs, hr);
                double *z = hr, *rg = hr + h, *hh = hr + 2 * h;
                for (int64_t j = 0; j < h; j++) {
                    z[j] = ref_rnn_apply(&r, f, xw[j] + z[j]);
                    rg[j] = ref_rnn_apply(&r, f, xw[h + j] + rg[j]);
                }
                if (lbr) {
                    memcpy(hh, rb + 2 * h, (size_t)h * sizeof *hh);
                    ref_rnn_gemv(rr + 2 * h * h, h, h, hs, hh);
                    for (int64_t j = 0; j < h; j++)
                        hh[j] *= rg[j];
                } else {
                    for (int64_t j = 0; j < h; j++)
                        rh[j] = rg[j] * hs[j];
                    memcpy(hh, rb + 2 * h, (size_t)h * sizeof *hh);
                    ref_rnn_gemv(rr + 2 * h * h, h, h, rh, hh);
                }
                double *y = r.y + ((t * r.dirs + d) * r.batch + b) * h;
                for (int64_t j = 0; j < h; j++) {
                    double cand = ref_rnn_apply(&r, g, xw[2 * h + j] + hh[j]);
                    hs[j] = y[j] = (1.0 - z[j]) * cand + z[j] * hs[j];
                }
            }
        }
    }
    ref_tmp_free(xw), ref_tmp_free(hr), ref_tmp_free(rh);
    st = ref_rnn_finish(args, &r);
    ref_rnn_free(&r);
    return st;
}

const plugin_kernel ref_kernel_gru = {
    .domain = "",
    .op_type = "GRU",
    .impl_type = "ref",
    .supports = gru_supports,
    .run = gru_run,
};
