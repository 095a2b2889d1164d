/* REF MelWeightMatrix (opset 17): the [dft_length / 2 + 1, num_mel_bins]
 * matrix of triangular filters that maps a onesided spectrum to mel bands.
 *
 * As the spec's reference computes it: num_mel_bins + 2 points evenly spaced
 * in mel (mel = 2595 log10(1 + hz / 700)) from lower_edge_hertz to
 * upper_edge_hertz in steps of (high - low) / (num_mel_bins + 2), each turned
 * back into hertz and into a spectrogram bin floor((dft_length + 1) * hz /
 * sample_rate); filter i rises linearly from bin[i] to 1 at bin[i + 1] and
 * falls to bin[i + 2]. The edge frequencies' mel values and the step are f32
 * computations in the reference (its inputs are f32) and are rounded to f32
 * here too; the rest is double. A bin outside the spectrum (an upper edge
 * above the Nyquist frequency) is an error.
 */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/tmp.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool mel_supports(const graph_node *node, const char **why)
{
    for (int i = 0; i < 5; i++) {
        const graph_value *v = node->inputs[i];
        rn_element_type t = v ? v->type : RN_UNDEFINED;
        bool ok = i < 3 ? t == RN_I32 || t == RN_I64
                        : t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
        if (!ok) {
            *why = i < 3 ? "num_mel_bins, dft_length or sample_rate is not i32 or i64"
                         : "an edge frequency is not a float type";
            return false;
        }
    }
    rn_element_type o = node->outputs[0] ? node->outputs[0]->type : RN_UNDEFINED;
    if (rn_element_type_size(o) == 0 || o == RN_BOOL || o > RN_BF16) {
        *why = "output_datatype is not a numeric type";
        return false;
    }
    return true;
}

/* f32 arithmetic on a double: the result rounded to f32. */
static double f32(double v)
{
    return (float)v;
}

static rn_status mel_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    for (int i = 0; i < 5; i++)
        if (i >= args->n_inputs || args->inputs[i].data == NULL ||
            graph_tensor_count(&args->inputs[i]) != 1)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d must be a scalar",
                                NODE_ARGS(node), i);
    int64_t bins = ref_mv_int_at(&args->inputs[0], 0);
    int64_t length = ref_mv_int_at(&args->inputs[1], 0);
    int64_t rate = ref_mv_int_at(&args->inputs[2], 0);
    double lo = ref_mv_load_double(args->inputs[3].type, args->inputs[3].data, 0);
    double hi = ref_mv_load_double(args->inputs[4].type, args->inputs[4].data, 0);
    graph_tensor *y;
    rn_status st = ref_mv_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    int64_t spec = length / 2 + 1;
    if (bins < 1 || length < 1 || rate < 1 || y->rank != 2 || y->dims[0] != spec ||
        y->dims[1] != bins)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "num_mel_bins %lld, dft_length %lld, sample_rate %lld do "
                                     "not fit the output",
                            NODE_ARGS(node), (long long)bins, (long long)length, (long long)rate);
    double lo_mel = f32(2595.0 * f32(log10(f32(1.0 + f32(lo / 700.0)))));
    double hi_mel = f32(2595.0 * f32(log10(f32(1.0 + f32(hi / 700.0)))));
    double step = f32((hi_mel - lo_mel) / (double)(bins + 2));
    int64_t *bin = ref_tmp_alloc((size_t)(bins + 2) * sizeof *bin);
    if (bin == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    for (int64_t i = 0; i < bins + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + lo_mel) / 2595.0) - 1.0);
        double b = floor((double)(length + 1) * hz / (double)rate);
        if (!(b >= 0 && b < (double)spec)) {
            ref_tmp_free(bin);
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "mel point %lld falls in bin %g, outside the %lld bins "
                                         "of the spectrum (edges %g to %g Hz, sample rate %lld)",
                                NODE_ARGS(node), (long long)i, b, (long long)spec, lo, hi,
                                (long long)rate);
        }
        bin[i] = (int64_t)b;
    }
    size_t total = (size_t)(spec * bins);
    for (size_t e = 0; e < total; e++)
        ref_mv_store_double(y->type, y->data, e, 0.0);
    for (int64_t i = 0; i < bins; i++) {
        int64_t left = bin[i], center = bin[i + 1], right = bin[i + 2];
        if (center == left) {
            ref_mv_store_double(y->type, y->data, (size_t)(center * bins + i), 1.0);
        } else {
            for (int64_t j = left; j <= center; j++)
                ref_mv_store_double(y->type, y->data, (size_t)(j * bins + i),
                                    (double)(j - left) / (double)(center - left));
        }
        for (int64_t j = center; j < right; j++)
            ref_mv_store_double(y->type, y->data, (size_t)(j * bins + i),
                                (double)(right - j) / (double)(right - center));
    }
    ref_tmp_free(bin);
    return RN_OK;
}

const plugin_kernel ref_kernel_mel_weight_matrix = {
    .domain = "",
    .op_type = "MelWeightMatrix",
    .impl_type = "ref",
    .supports = mel_supports,
    .run = mel_run,
};
