/* REF ArgMax and ArgMin: the index (i64) of the first extreme element along
 * one axis, or of the last with select_last_index. A NaN counts as the
 * extreme, as in numpy. Floating types compare as double, integers as int64
 * (u64 unsigned). */
#include "plugins/ref/kernels/movement.h"

static bool supports_arg(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    switch (t) {
    case RN_UNDEFINED:
    case RN_F32:
    case RN_F64:
    case RN_F16:
    case RN_BF16:
    case RN_I32:
    case RN_I64:
    case RN_U32:
    case RN_U64:
    case RN_I8:
    case RN_U8:
        return true;
    default:
        *why = "input type other than f32, f64, f16, bf16, i8, u8, i32, u32, i64, u64";
        return false;
    }
}

/* Compares elements i and j of x: -1, 0 or 1 by value; 2 (or -2) when only
 * element i (or j) is NaN, 0 when both are. */
static int compare(const graph_tensor *x, size_t i, size_t j)
{
    if (x->type == RN_U64) {
        uint64_t a = ((const uint64_t *)x->data)[i], b = ((const uint64_t *)x->data)[j];
        return (a > b) - (a < b);
    }
    if (x->type == RN_I64) {
        int64_t a = ((const int64_t *)x->data)[i], b = ((const int64_t *)x->data)[j];
        return (a > b) - (a < b);
    }
    /* Every other type is exact in double. */
    double a = ref_mv_load_double(x->type, x->data, i), b = ref_mv_load_double(x->type, x->data, j);
    if (a != a || b != b)
        return 2 * ((a != a) - (b != b));
    return (a > b) - (a < b);
}

static rn_status run_arg(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    int ax;
    REF_MV_TRY(graph_normalize_axis(node, graph_node_attr_int(node, "axis", 0), x->rank, &ax));
    bool last = graph_node_attr_int(node, "select_last_index", 0) != 0;
    int sign = strcmp(node->op_type, "ArgMin") == 0 ? -1 : 1;
    int64_t outer = 1, dim = x->dims[ax], inner = 1;
    for (int d = 0; d < ax; d++)
        outer *= x->dims[d];
    for (int d = ax + 1; d < x->rank; d++)
        inner *= x->dims[d];
    if ((int64_t)graph_tensor_count(y) != outer * inner || y->type != RN_I64)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_MV_NODE_FMT "output is not i64 of %lld elements",
                            REF_MV_NODE_ARGS(node), (long long)(outer * inner));
    if (dim == 0 && outer * inner > 0)
        return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "axis %d is empty",
                            REF_MV_NODE_ARGS(node), ax);
    int64_t *out = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            size_t base = (size_t)(o * dim * inner + in);
            int64_t best = 0;
            for (int64_t k = 1; k < dim; k++) {
                int c = compare(x, base + (size_t)(k * inner), base + (size_t)(best * inner));
                /* A NaN is the extreme for both ops, as in numpy. */
                c = c == 2 || c == -2 ? c : sign * c;
                if (c > 0 || (last && c == 0))
                    best = k;
            }
            out[o * inner + in] = best;
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_argmax = {
    .domain = "",
    .op_type = "ArgMax",
    .impl_type = "ref",
    .supports = supports_arg,
    .run = run_arg,
};

const plugin_kernel ref_kernel_argmin = {
    .domain = "",
    .op_type = "ArgMin",
    .impl_type = "ref",
    .supports = supports_arg,
    .run = run_arg,
};
