/* REF DFT (opsets 17 and 20) and STFT.
 *
 * Both compute discrete Fourier transforms directly from the definition in
 * double, with the twiddle factors e^(-2 pi i j / L) tabulated once per
 * length (indexing the table by k * t mod L keeps every angle exact), and
 * round once to the output type. That is O(L^2) per line: a reference, not a
 * fast path.
 *
 * DFT along `axis` (an attribute before opset 20, input 2 from 20) of a real
 * ([..., 1]) or complex ([..., 2]) signal, the line zero-padded or cut to
 * dft_length:
 *   forward:            X[k] = sum_t x[t] e^(-2 pi i k t / L), k < L, or
 *                       k <= L / 2 with onesided;
 *   inverse:            x[t] = 1/L sum_k X[k] e^(+2 pi i k t / L);
 *   inverse + onesided: numpy's irfft: the L / 2 + 1 given bins are extended
 *                       to a Hermitian spectrum and the real signal of length
 *                       L (default 2 * (n - 1)) comes out as [..., 1].
 * STFT: frames of frame_length samples every frame_step samples, each
 * multiplied by the window (default all ones) and transformed, onesided by
 * default: [batch, frames, bins, 2].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

/* Twiddle table of a length: cos and sin of 2 pi j / L for j < L. */
typedef struct dft_twiddle {
    int64_t len;
    double *cos, *sin;
} dft_twiddle;

static bool dft_twiddle_init(dft_twiddle *tw, int64_t len)
{
    tw->len = len;
    tw->cos = ref_tmp_alloc((size_t)(len > 0 ? len : 1) * sizeof(double));
    tw->sin = ref_tmp_alloc((size_t)(len > 0 ? len : 1) * sizeof(double));
    if (!tw->cos || !tw->sin) {
        ref_tmp_free(tw->cos), ref_tmp_free(tw->sin);
        return false;
    }
    for (int64_t j = 0; j < len; j++) {
        /* The angle is taken in (-pi, pi], where it is most accurate. */
        int64_t jj = j <= len / 2 ? j : j - len;
        double a = 2.0 * M_PI * (double)jj / (double)len;
        tw->cos[j] = cos(a);
        tw->sin[j] = sin(a);
    }
    return true;
}

static void dft_twiddle_free(dft_twiddle *tw)
{
    ref_tmp_free(tw->cos);
    ref_tmp_free(tw->sin);
}

/* out[k] = sum_{t < n} in[t] e^(sign * 2 pi i k t / L) for k < n_out, in and
 * out complex (re, im pairs). */
static void dft_line(const dft_twiddle *tw, const double *in, int64_t n, double *out, int64_t n_out,
                     int sign)
{
    int64_t len = tw->len;
    for (int64_t k = 0; k < n_out; k++) {
        double re = 0, im = 0;
        int64_t j = 0, step = k % len;
        for (int64_t t = 0; t < n; t++) {
            double c = tw->cos[j], s = sign * tw->sin[j];
            re += in[2 * t] * c - in[2 * t + 1] * s;
            im += in[2 * t] * s + in[2 * t + 1] * c;
            j += step;
            if (j >= len)
                j -= len;
        }
        out[2 * k] = re;
        out[2 * k + 1] = im;
    }
}

/* ---- DFT ---- */

static bool dft_supports(const graph_node *node, const char **why)
{
    if (node->inputs[0] == NULL || !ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

static rn_status dft_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_nn_args_ok(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    const graph_tensor *lt = ref_mv_opt_input(args, 1);
    const graph_tensor *at = node->opset >= 20 ? ref_mv_opt_input(args, 2) : NULL;
    graph_tensor *y = &args->outputs[0];
    bool inverse = graph_node_attr_int(node, "inverse", 0) != 0;
    bool onesided = graph_node_attr_int(node, "onesided", 0) != 0;
    int64_t axis = node->opset >= 20 ? -2 : graph_node_attr_int(node, "axis", 1);
    if (at != NULL)
        axis = ref_mv_int_at(at, 0);
    int r = x->rank;
    int64_t c = r >= 2 ? x->dims[r - 1] : 0;
    if (r < 2 || (c != 1 && c != 2) || axis < -r || axis >= r - 1 || axis == -1)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "axis %lld on a signal of rank %d with last dim %lld",
                            NODE_ARGS(node), (long long)axis, r, (long long)c);
    int ax = (int)(axis < 0 ? axis + r : axis);
    int64_t n = x->dims[ax];
    int64_t len = lt ? ref_mv_int_at(lt, 0) : inverse && onesided ? 2 * (n - 1) : n;
    int64_t n_out = onesided && !inverse ? len / 2 + 1 : len;
    int64_t c_out = inverse && onesided ? 1 : 2;
    if (len < 1 || y->rank != r || y->dims[ax] != n_out || y->dims[r - 1] != c_out)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "dft_length %lld does not fit the output's dim %d (%lld)",
                            NODE_ARGS(node), (long long)len, ax, (long long)y->dims[ax]);
    int64_t outer = ref_nn_span(x->dims, 0, ax), inner = ref_nn_span(x->dims, ax + 1, r - 1);
    /* The input points a line uses: irfft reads at most L / 2 + 1 bins. */
    int64_t n_use = n < len ? n : len;
    if (inverse && onesided && n_use > len / 2 + 1)
        n_use = len / 2 + 1;
    dft_twiddle tw;
    double *line = ref_tmp_alloc((size_t)(2 * len) * sizeof(double));
    double *res = ref_tmp_alloc((size_t)(2 * len) * sizeof(double));
    if (!line || !res || !dft_twiddle_init(&tw, len)) {
        ref_tmp_free(line), ref_tmp_free(res);
        return ref_nn_oom(node);
    }
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            memset(line, 0, (size_t)(2 * len) * sizeof(double));
            for (int64_t t = 0; t < n_use; t++) {
                size_t e = (size_t)(((o * n + t) * inner + i) * c);
                line[2 * t] = ref_nn_get(x->type, x->data, e);
                line[2 * t + 1] = c == 2 ? ref_nn_get(x->type, x->data, e + 1) : 0.0;
            }
            if (inverse && onesided) { /* the Hermitian extension */
                for (int64_t k = len / 2 + 1; k < len; k++) {
                    line[2 * k] = line[2 * (len - k)];
                    line[2 * k + 1] = -line[2 * (len - k) + 1];
                }
                dft_line(&tw, line, len, res, len, +1);
            } else {
                dft_line(&tw, line, n_use, res, n_out, inverse ? +1 : -1);
            }
            for (int64_t k = 0; k < n_out; k++) {
                size_t e = (size_t)(((o * n_out + k) * inner + i) * c_out);
                double scale = inverse ? 1.0 / (double)len : 1.0;
                ref_nn_set(y->type, y->data, e, res[2 * k] * scale);
                if (c_out == 2)
                    ref_nn_set(y->type, y->data, e + 1, res[2 * k + 1] * scale);
            }
        }
    }
    ref_tmp_free(line);
    ref_tmp_free(res);
    dft_twiddle_free(&tw);
    return RN_OK;
}

/* ---- STFT ---- */

static bool stft_supports(const graph_node *node, const char **why)
{
    if (!dft_supports(node, why))
        return false;
    if (node->n_inputs > 2 && node->inputs[2] != NULL &&
        node->inputs[2]->type != node->inputs[0]->type) {
        *why = "window type differs from the signal's";
        return false;
    }
    return true;
}

static rn_status stft_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_nn_args_ok(args, 2);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    const graph_tensor *win = ref_mv_opt_input(args, 2), *fl = ref_mv_opt_input(args, 3);
    graph_tensor *y = &args->outputs[0];
    int64_t step = ref_mv_int_at(&args->inputs[1], 0);
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "signal must be [batch, length, 1 or 2]",
                            NODE_ARGS(node));
    int64_t batch = x->dims[0], len = x->dims[1], c = x->dims[2];
    int64_t flen = fl ? ref_mv_int_at(fl, 0) : win ? win->dims[0] : len;
    bool onesided = graph_node_attr_int(node, "onesided", 1) != 0;
    if (step < 1 || flen < 1 || flen > len ||
        (win != NULL && (win->rank != 1 || win->dims[0] != flen)))
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "frame_step %lld, frame_length %lld and the window do not "
                                     "fit a signal of %lld samples",
                            NODE_ARGS(node), (long long)step, (long long)flen, (long long)len);
    int64_t frames = 1 + (len - flen) / step, bins = onesided ? flen / 2 + 1 : flen;
    if (y->rank != 4 || y->dims[0] != batch || y->dims[1] != frames || y->dims[2] != bins ||
        y->dims[3] != 2)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "output is not [%lld, %lld, %lld, 2]",
                            NODE_ARGS(node), (long long)batch, (long long)frames, (long long)bins);
    dft_twiddle tw;
    double *line = ref_tmp_alloc((size_t)(2 * flen) * sizeof(double));
    double *res = ref_tmp_alloc((size_t)(2 * flen) * sizeof(double));
    if (!line || !res || !dft_twiddle_init(&tw, flen)) {
        ref_tmp_free(line), ref_tmp_free(res);
        return ref_nn_oom(node);
    }
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t t = 0; t < flen; t++) {
                size_t e = (size_t)((b * len + f * step + t) * c);
                double w = win ? ref_nn_get(win->type, win->data, (size_t)t) : 1.0;
                line[2 * t] = w * ref_nn_get(x->type, x->data, e);
                line[2 * t + 1] = c == 2 ? w * ref_nn_get(x->type, x->data, e + 1) : 0.0;
            }
            dft_line(&tw, line, flen, res, bins, -1);
            size_t e = (size_t)((b * frames + f) * bins * 2);
            for (int64_t k = 0; k < 2 * bins; k++)
                ref_nn_set(y->type, y->data, e + (size_t)k, res[k]);
        }
    }
    ref_tmp_free(line);
    ref_tmp_free(res);
    dft_twiddle_free(&tw);
    return RN_OK;
}

const plugin_kernel ref_kernel_dft = {
    .domain = "",
    .op_type = "DFT",
    .impl_type = "ref",
    .supports = dft_supports,
    .run = dft_run,
};

const plugin_kernel ref_kernel_stft = {
    .domain = "",
    .op_type = "STFT",
    .impl_type = "ref",
    .supports = stft_supports,
    .run = stft_run,
};
