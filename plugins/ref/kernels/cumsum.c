/* REF CumSum and CumProd: running sum / product along the axis given by
 * input 1 (a scalar). `exclusive` leaves the element itself out of its own
 * result (the first result is 0 or 1); `reverse` runs from the end of the
 * axis. Floating types accumulate in their own precision as numpy does (f16
 * and bf16 in f32, rounded at every store); integers wrap on overflow. */
#include "plugins/ref/kernels/indexing.h"

static bool supports_cumulative(const graph_node *node, const char **why)
{
    return ref_ix_supports_values(node, 1u, 1u, false, why);
}

/* A running sum or product in the precision its element type calls for. */
typedef struct accumulator {
    rn_element_type type;
    bool product;
    double f64; /* f64 */
    float f32;  /* f32, f16, bf16 */
    uint64_t u; /* integers, wrapping */
} accumulator;

static void acc_reset(accumulator *a)
{
    a->f64 = a->f32 = a->product ? 1 : 0;
    a->u = a->product ? 1 : 0;
}

static void acc_take(accumulator *a, const void *x, size_t i)
{
    if (ref_ix_kind_of(a->type) != REF_IX_FLOAT) {
        uint64_t v = ref_ix_load_u(a->type, x, i);
        a->u = a->product ? a->u * v : a->u + v;
    } else if (a->type == RN_F64) {
        double v = ((const double *)x)[i];
        a->f64 = a->product ? a->f64 * v : a->f64 + v;
    } else {
        float v = (float)ref_mv_load_double(a->type, x, i);
        a->f32 = a->product ? a->f32 * v : a->f32 + v;
    }
}

static void acc_store(const accumulator *a, void *y, size_t i)
{
    if (ref_ix_kind_of(a->type) != REF_IX_FLOAT)
        ref_ix_store_u(a->type, y, i, a->u);
    else if (a->type == RN_F64)
        ((double *)y)[i] = a->f64;
    else
        ref_mv_store_double(a->type, y, i, a->f32);
}

static rn_status run_cumulative(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *at = &args->inputs[1];
    bool product = strcmp(node->op_type, "CumProd") == 0;
    bool exclusive = graph_node_attr_int(node, "exclusive", 0) != 0;
    bool reverse = graph_node_attr_int(node, "reverse", 0) != 0;
    if (graph_tensor_count(at) != 1 || (at->type != RN_I32 && at->type != RN_I64))
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "axis must be one i32 or i64 value",
                            REF_IX_ARGS(node));
    if (x->rank < 1)
        return rn_set_error(RN_SHAPE_MISMATCH, REF_IX_FMT "input must have rank >= 1",
                            REF_IX_ARGS(node));
    int64_t axis;
    REF_IX_TRY(ref_ix_index(node, ref_mv_int_at(at, 0), x->rank, "axis", &axis));
    graph_tensor *y;
    REF_IX_TRY(ref_mv_output(args, 0, &y));
    if (graph_tensor_count(x) == 0)
        return RN_OK;
    int64_t outer, dim, inner;
    ref_ix_split(x, (int)axis, &outer, &dim, &inner);
    accumulator acc = {.type = x->type, .product = product};
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            acc_reset(&acc);
            for (int64_t s = 0; s < dim; s++) {
                int64_t j = reverse ? dim - 1 - s : s;
                size_t i = (size_t)((o * dim + j) * inner + in);
                if (exclusive)
                    acc_store(&acc, y->data, i);
                acc_take(&acc, x->data, i);
                if (!exclusive)
                    acc_store(&acc, y->data, i);
            }
        }
    }
    return RN_OK;
}

const plugin_kernel ref_kernel_cumsum = {
    .domain = "",
    .op_type = "CumSum",
    .impl_type = "ref",
    .supports = supports_cumulative,
    .run = run_cumulative,
};

const plugin_kernel ref_kernel_cumprod = {
    .domain = "",
    .op_type = "CumProd",
    .impl_type = "ref",
    .supports = supports_cumulative,
    .run = run_cumulative,
};
