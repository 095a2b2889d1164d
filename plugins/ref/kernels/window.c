/* REF HannWindow, HammingWindow and BlackmanWindow (opset 17).
 *
 * For n < size, with N = size when periodic (the default) and size - 1 when
 * not:
 *   Hann:     0.5 - 0.5 cos(2 pi n / N)      (= sin^2(pi n / N))
 *   Hamming:  25/46 - 21/46 cos(2 pi n / N)
 *   Blackman: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
 * computed in double and stored in output_datatype (default f32). A
 * symmetric window of size 1 has N = 0, where the formulas divide by zero;
 * it is [1], as numpy.hanning(1) and its siblings are.
 */
#include <math.h>

#include "plugins/ref/kernels/movement.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

typedef enum { HANN, HAMMING, BLACKMAN } window_kind;

static bool window_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if (t != RN_I32 && t != RN_I64) {
        *why = "size is not i32 or i64";
        return false;
    }
    rn_element_type o = node->outputs[0] ? node->outputs[0]->type : RN_UNDEFINED;
    if (rn_element_type_size(o) == 0 || o == RN_BOOL || o > RN_BF16) {
        *why = "output_datatype is not a numeric type";
        return false;
    }
    return true;
}

static double window_value(window_kind kind, int64_t n, int64_t big_n)
{
    if (big_n == 0)
        return 1.0;
    double a = 2.0 * M_PI * (double)n / (double)big_n;
    switch (kind) {
    case HANN:
        return 0.5 - 0.5 * cos(a);
    case HAMMING:
        return 25.0 / 46.0 - 21.0 / 46.0 * cos(a);
    default:
        return 0.42 - 0.5 * cos(a) + 0.08 * cos(2.0 * a);
    }
}

static rn_status window_run(plugin_kernel_args *args, window_kind kind)
{
    const graph_node *node = args->node;
    if (args->n_inputs < 1 || args->inputs[0].data == NULL ||
        graph_tensor_count(&args->inputs[0]) != 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "size must be a scalar", NODE_ARGS(node));
    int64_t size = ref_mv_int_at(&args->inputs[0], 0);
    graph_tensor *y;
    rn_status st = ref_mv_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    if (size < 0 || y->rank != 1 || y->dims[0] != size)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "size %lld does not match the output",
                            NODE_ARGS(node), (long long)size);
    bool periodic = graph_node_attr_int(node, "periodic", 1) != 0;
    int64_t big_n = periodic ? size : size - 1;
    for (int64_t n = 0; n < size; n++)
        ref_mv_store_double(y->type, y->data, (size_t)n, window_value(kind, n, big_n));
    return RN_OK;
}

static rn_status hann_run(plugin_kernel_args *args)
{
    return window_run(args, HANN);
}

static rn_status hamming_run(plugin_kernel_args *args)
{
    return window_run(args, HAMMING);
}

static rn_status blackman_run(plugin_kernel_args *args)
{
    return window_run(args, BLACKMAN);
}

const plugin_kernel ref_kernel_hann_window = {
    .domain = "",
    .op_type = "HannWindow",
    .impl_type = "ref",
    .supports = window_supports,
    .run = hann_run,
};

const plugin_kernel ref_kernel_hamming_window = {
    .domain = "",
    .op_type = "HammingWindow",
    .impl_type = "ref",
    .supports = window_supports,
    .run = hamming_run,
};

const plugin_kernel ref_kernel_blackman_window = {
    .domain = "",
    .op_type = "BlackmanWindow",
    .impl_type = "ref",
    .supports = window_supports,
    .run = blackman_run,
};
