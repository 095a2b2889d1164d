/* REF GridSample (opset 16: 2-D, modes bilinear / nearest / bicubic; opset
 * 20: N-D, modes linear / nearest / cubic), following the ONNX reference:
 *   - grid holds, per output point, normalised coordinates in [-1, 1]
 *     ordered (x, y[, z]), i.e. innermost input dim first;
 *   - denormalised as (v + 1) / 2 * (L - 1) with align_corners, else
 *     ((v + 1) * L - 1) / 2, in f32 arithmetic as the reference does;
 *   - nearest rounds half to even; a coordinate past the border
 *     ([0, L - 1] with align_corners, else [-0.5, L - 0.5]) is clamped
 *     (padding_mode border) or reflected (reflection);
 *   - linear and cubic (Keys, a = -0.75) weigh 2 or 4 taps per dim; a tap
 *     outside the input reads 0 (zeros), the nearest edge (border) or its
 *     reflection (reflection).
 * Computed in double, X of any float type, the grid of any float type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"

enum gs_mode { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum gs_padding { GS_ZEROS, GS_BORDER, GS_REFLECTION };

typedef struct gs_attrs {
    enum gs_mode mode;
    enum gs_padding padding;
    bool align_corners;
} gs_attrs;

static const char *gs_read_attrs(const graph_node *node, gs_attrs *a)
{
    bool v20 = node->opset >= 20;
    const char *mode = graph_node_attr_string(node, "mode", v20 ? "linear" : "bilinear");
    if (strcmp(mode, "nearest") == 0)
        a->mode = GS_NEAREST;
    else if (strcmp(mode, v20 ? "linear" : "bilinear") == 0)
        a->mode = GS_LINEAR;
    else if (strcmp(mode, v20 ? "cubic" : "bicubic") == 0)
        a->mode = GS_CUBIC;
    else
        return v20 ? "mode is not linear, nearest or cubic"
                   : "mode is not bilinear, nearest or bicubic";
    const char *pad = graph_node_attr_string(node, "padding_mode", "zeros");
    if (strcmp(pad, "zeros") == 0)
        a->padding = GS_ZEROS;
    else if (strcmp(pad, "border") == 0)
        a->padding = GS_BORDER;
    else if (strcmp(pad, "reflection") == 0)
        a->padding = GS_REFLECTION;
    else
        return "padding_mode is not zeros, border or reflection";
    a->align_corners = graph_node_attr_int(node, "align_corners", 0) != 0;
    return NULL;
}

static bool gs_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    gs_attrs a;
    if ((*why = gs_read_attrs(node, &a)) != NULL)
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type) || !ref_nn_is_float(node->inputs[1]->type)) {
        *why = "X and grid must be f32, f64, f16 or bf16";
        return false;
    }
    int r = node->inputs[0]->shape.rank;
    if (r >= 0 && (r < 3 || r > 5)) {
        *why = "input rank is not 3, 4 or 5 (1 to 3 spatial dims)";
        return false;
    }
    return true;
}

/* Reflects x into [lo, hi] by bouncing off the nearer border. */
static double gs_reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0.0)
        return lo;
    if (!(fabs(x) < 1e15))
        return x; /* NaN or far away: the caller treats it as outside */
    if (x < lo) {
        double dx = lo - x;
        int64_t n = (int64_t)(dx / range);
        double r = dx - (double)n * range;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int64_t n = (int64_t)(dx / range);
        double r = dx - (double)n * range;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

/* floor(c) as an index; NaN and far-away coordinates (where every tap is
 * outside anyway) map to -4, which no kernel tap reaches inside. */
static int64_t gs_index(double c)
{
    double f = floor(c);
    return fabs(f) < 1e15 ? (int64_t)f : -4;
}

/* Index i of a dim of length len after padding; -1 reads as 0 (zeros). */
static int64_t gs_pad_index(int64_t i, int64_t len, const gs_attrs *a)
{
    if (i >= 0 && i < len)
        return i;
    switch (a->padding) {
    case GS_BORDER:
        return i < 0 ? 0 : len - 1;
    case GS_REFLECTION: {
        double lo = a->align_corners ? 0.0 : -0.5;
        double hi = a->align_corners ? (double)len - 1.0 : (double)len - 0.5;
        int64_t r = (int64_t)gs_reflect((double)i, lo, hi);
        return r < 0 ? 0 : r >= len ? len - 1 : r;
    }
    case GS_ZEROS:
    default:
        return -1;
    }
}

static void gs_cubic_coeffs(double t, double c[4])
{
    const double A = -0.75;
    t = fabs(t);
    c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
    c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
    c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

static rn_status gs_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *grid = &args->inputs[1];
    graph_tensor *y = &args->outputs[0];
    gs_attrs a;
    const char *why = gs_read_attrs(node, &a);
    if (why != NULL)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): %s", node->name, node->op_type, why);
    int r = x->rank, nd = r - 2;
    if (r < 3 || r > 5 || grid->rank != r || grid->dims[r - 1] != nd || grid->dims[0] != x->dims[0])
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): X must be N x C x D1.. (1 to 3 spatial dims) and grid "
                            "N x O1.. x %d",
                            node->name, node->op_type, nd);
    int64_t batch = x->dims[0], channels = x->dims[1];
    int64_t in_n = ref_nn_span(x->dims, 2, r), out_n = ref_nn_span(grid->dims, 1, r - 1);
    if (y->rank != r || y->dims[0] != batch || y->dims[1] != channels ||
        (int64_t)graph_tensor_count(y) != batch * channels * out_n)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output shape does not match",
                            node->name, node->op_type);
    const int64_t *len = x->dims + 2;
    int64_t in_stride[3] = {1, 1, 1};
    for (int i = nd - 2; i >= 0; i--)
        in_stride[i] = in_stride[i + 1] * len[i + 1];
    int taps = a.mode == GS_CUBIC ? 4 : a.mode == GS_LINEAR ? 2 : 1;
    for (int64_t n = 0; n < batch; n++) {
        for (int64_t o = 0; o < out_n; o++) {
            /* Per dim: tap indices (after padding, -1 = zero) and weights. */
            int64_t idx[3][4];
            double w[3][4];
            for (int i = 0; i < nd; i++) {
                size_t gi = (size_t)((n * out_n + o) * nd + (nd - 1 - i));
                float v = (float)ref_nn_get(grid->type, grid->data, gi);
                float L = (float)len[i];
                float fx = a.align_corners ? (v + 1.0f) / 2.0f * (L - 1.0f)
                                           : ((v + 1.0f) * L - 1.0f) / 2.0f;
                double c = fx;
                double lo = a.align_corners ? 0.0 : -0.5;
                double hi = a.align_corners ? (double)len[i] - 1.0 : (double)len[i] - 0.5;
                if (a.mode == GS_NEAREST)
                    c = rint(c);
                if (c < lo || c > hi) {
                    if (a.padding == GS_BORDER)
                        c = c < 0.0 ? 0.0 : c > (double)len[i] - 1.0 ? (double)len[i] - 1.0 : c;
                    else if (a.padding == GS_REFLECTION)
                        c = gs_reflect(c, lo, hi);
                }
                if (a.mode == GS_NEAREST) {
                    idx[i][0] = gs_pad_index(fabs(c) < 1e15 ? (int64_t)c : -1, len[i], &a);
                    w[i][0] = 1.0;
                    continue;
                }
                double f = floor(c);
                int64_t i0 = gs_index(c);
                if (a.mode == GS_LINEAR) {
                    w[i][0] = 1.0 - (c - f);
                    w[i][1] = c - f;
                    idx[i][0] = gs_pad_index(i0, len[i], &a);
                    idx[i][1] = gs_pad_index(i0 + 1, len[i], &a);
                } else {
                    gs_cubic_coeffs(c - f, w[i]);
                    for (int k = 0; k < 4; k++)
                        idx[i][k] = gs_pad_index(i0 - 1 + k, len[i], &a);
                }
            }
            for (int64_t ch = 0; ch < channels; ch++) {
                size_t base = (size_t)((n * channels + ch) * in_n);
                double sum = 0.0;
                int t[3] = {0, 0, 0};
                for (;;) {
                    double weight = 1.0;
                    int64_t off = 0;
                    bool zero = false;
                    for (int i = 0; i < nd; i++) {
                        weight *= w[i][t[i]];
                        zero |= idx[i][t[i]] < 0;
                        off += idx[i][t[i]] * in_stride[i];
                    }
                    if (!zero && weight != 0.0)
                        sum += weight * ref_nn_get(x->type, x->data, base + (size_t)off);
                    int i = nd - 1;
                    while (i >= 0 && ++t[i] == taps)
                        t[i--] = 0;
                    if (i < 0)
                        break;
                }
                ref_nn_set(y->type, y->data, (size_t)((n * channels + ch) * out_n + o), sum);
            }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_grid_sample = {
    .domain = "",
    .op_type = "GridSample",
    .impl_type = "ref",
    .supports = gs_supports,
    .run = gs_run,
};
