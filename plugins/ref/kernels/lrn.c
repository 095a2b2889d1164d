/* REF LRN (local response normalisation across channels):
 * y = x / (bias + alpha / size * sum of x^2 over channels
 *      [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta,
 * computed in double. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool lrn_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 1, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input type is not f32, f64, f16 or bf16";
        return false;
    }
    if (graph_node_attr_int(node, "size", 0) < 1) {
        *why = "size < 1";
        return false;
    }
    return true;
}

static rn_status lrn_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 1);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (x->rank < 2)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input rank %d; at least 2 needed",
                            node->name, node->op_type, x->rank);
    int64_t size = graph_node_attr_int(node, "size", 0);
    double alpha = graph_node_attr_float_or_default(node, "alpha");
    double beta = graph_node_attr_float_or_default(node, "beta");
    double bias = graph_node_attr_float_or_default(node, "bias");
    int64_t batch = x->dims[0], channels = x->dims[1];
    int64_t inner = ref_nn_span(x->dims, 2, x->rank);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    double *out = ref_tmp_alloc((count ? count : 1) * sizeof(double));
    if (!v || !out) {
        ref_tmp_free(v);
        ref_tmp_free(out);
        return ref_nn_oom(node);
    }
    for (int64_t n = 0; n < batch; n++) {
        const double *xn = v + n * channels * inner;
        double *yn = out + n * channels * inner;
        for (int64_t c = 0; c < channels; c++) {
            int64_t lo = c - before < 0 ? 0 : c - before;
            int64_t hi = c + after >= channels ? channels - 1 : c + after;
            for (int64_t i = 0; i < inner; i++) {
                double sq = 0.0;
                for (int64_t j = lo; j <= hi; j++)
                    sq += xn[j * inner + i] * xn[j * inner + i];
                yn[c * inner + i] = xn[c * inner + i] / pow(bias + alpha / (double)size * sq, beta);
            }
        }
    }
    ref_nn_from_f64(y->type, y->data, out, count);
    ref_tmp_free(v);
    ref_tmp_free(out);
    return RN_OK;
}

const plugin_kernel ref_kernel_lrn = {
    .domain = "",
    .op_type = "LRN",
    .impl_type = "ref",
    .supports = lrn_supports,
    .run = lrn_run,
};
