/* REF reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
 *
 * The input is first widened into one compute array: double for the floating
 * types (and for the integer Mean, L2, LogSum and LogSumExp, whose results
 * are not integers before the final truncation, as numpy computes them), or
 * int64 for the integer Sum, Prod, Max, Min, L1 and SumSquare, which stay
 * exact and wrap like the narrower type would. Every input element then adds
 * into the accumulator of the output element it maps to (strides 0 along
 * the reduced axes), and the accumulators are narrowed into the output.
 * Reducing over no axis (noop_with_empty_axes) still applies the op's
 * per-element part (SumSquare squares, L1 takes |x|), as the ONNX reference
 * does.
 */
#include <math.h>
#include <stdlib.h>

#include "graph/ops/attr_parse.h"
#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/tmp.h"

typedef enum reduce_op {
    R_MEAN,
    R_SUM,
    R_MAX,
    R_MIN,
    R_PROD,
    R_L1,
    R_L2,
    R_LOG_SUM,
    R_LOG_SUM_EXP,
    R_SUM_SQUARE,
} reduce_op;

static const struct {
    const char *op_type;
    reduce_op op;
} reduce_ops[] = {
    {"ReduceMean", R_MEAN},
    {"ReduceSum", R_SUM},
    {"ReduceMax", R_MAX},
    {"ReduceMin", R_MIN},
    {"ReduceProd", R_PROD},
    {"ReduceL1", R_L1},
    {"ReduceL2", R_L2},
    {"ReduceLogSum", R_LOG_SUM},
    {"ReduceLogSumExp", R_LOG_SUM_EXP},
    {"ReduceSumSquare", R_SUM_SQUARE},
};

static reduce_op op_of(const graph_node *node)
{
    for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
        if (strcmp(node->op_type, reduce_ops[i].op_type) == 0)
            return reduce_ops[i].op;
    return R_SUM;
}

static bool is_float_type(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

static bool supports_reduce(const graph_node *node, const char **why)
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
    case RN_BOOL:
        if (op_of(node) == R_MAX || op_of(node) == R_MIN)
            return true;
        *why = "bool input (only ReduceMax and ReduceMin take it)";
        return false;
    default:
        *why = "input type other than f32, f64, f16, bf16, i8, u8, i32, u32, i64, u64";
        return false;
    }
}

static void load_double(const graph_tensor *x, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = ref_mv_load_double(x->type, x->data, i);
}

static void load_int(const graph_tensor *x, int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = ref_mv_int_at(x, i);
}

static void store_double(graph_tensor *y, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ref_mv_store_double(y->type, y->data, i, v[i]);
}

static void store_int(graph_tensor *y, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ref_mv_store_int(y->type, y->data, i, v[i]);
}

/* The reduction's walk: for each input element, in row-major order, the
 * index of its output element. */
typedef struct reduce_walk {
    int rank;
    int64_t dims[RN_MAX_RANK];
    int64_t out_strides[RN_MAX_RANK]; /* 0 along reduced axes */
    int64_t pos[RN_MAX_RANK];
    int64_t out;
} reduce_walk;

static void walk_next(reduce_walk *w)
{
    for (int d = w->rank - 1; d >= 0; d--) {
        w->out += w->out_strides[d];
        if (++w->pos[d] < w->dims[d])
            return;
        w->out -= w->out_strides[d] * w->dims[d];
        w->pos[d] = 0;
    }
}

/* Marks the reduced axes of x from input 1 or the `axes` attribute
 * (graph_reduce_axes, as shape inference reads them). */
static rn_status reduced_axes(const plugin_kernel_args *args, const graph_tensor *x, bool *reduced)
{
    const graph_node *node = args->node;
    const graph_tensor *axes = ref_mv_opt_input(args, 1);
    if (axes != NULL && axes->type != RN_I64)
        return rn_set_error(RN_TYPE_MISMATCH, REF_MV_NODE_FMT "axes must be i64, got %s",
                            REF_MV_NODE_ARGS(node), rn_element_type_name(axes->type));
    return graph_reduce_axes(node, x->rank, axes ? axes->data : NULL,
                             axes ? (int64_t)graph_tensor_count(axes) : -1, reduced);
}

static void reduce_double(reduce_op op, const double *v, size_t n, reduce_walk *w, double *acc,
                          size_t n_out, double per_out)
{
    double init = op == R_PROD ? 1 : op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0;
    for (size_t j = 0; j < n_out; j++)
        acc[j] = init;
    double *shift = NULL;
    if (op == R_LOG_SUM_EXP) {
        /* Subtract each output's finite maximum before exp to avoid overflow. */
        shift = ref_tmp_alloc(n_out * sizeof *shift);
        if (shift) {
            for (size_t j = 0; j < n_out; j++)
                shift[j] = -INFINITY;
            reduce_walk m = *w;
            for (size_t i = 0; i < n; i++, walk_next(&m))
                if (v[i] > shift[m.out] && isfinite(v[i]))
                    shift[m.out] = v[i];
            for (size_t j = 0; j < n_out; j++)
                if (!isfinite(shift[j]))
                    shift[j] = 0;
        }
    }
    for (size_t i = 0; i < n; i++, walk_next(w)) {
        double x = v[i], *a = &acc[w->out];
        switch (op) {
        case R_MEAN:
        case R_SUM:
            *a += x;
            break;
        case R_MAX:
            if (x > *a || x != x)
                *a = *a != *a ? *a : x;
            break;
        case R_MIN:
            if (x < *a || x != x)
                *a = *a != *a ? *a : x;
            break;
        case R_PROD:
            *a *= x;
            break;
        case R_L1:
            *a += fabs(x);
            break;
        case R_L2:
        case R_SUM_SQUARE:
            *a += x * x;
            break;
        case R_LOG_SUM:
            *a += x;
            break;
        case R_LOG_SUM_EXP:
            *a += exp(x - (shift ? shift[w->out] : 0));
            break;
        }
    }
    for (size_t j = 0; j < n_out; j++) {
        if (op == R_MEAN)
            acc[j] /= per_out;
        else if (op == R_L2)
            acc[j] = sqrt(acc[j]);
        else if (op == R_LOG_SUM)
            acc[j] = log(acc[j]);
        else if (op == R_LOG_SUM_EXP)
            acc[j] = log(acc[j]) + (shift ? shift[j] : 0);
    }
    ref_tmp_free(shift);
}

/* Integer Sum, Prod, Max, Min, L1, SumSquare in 64-bit wrapping arithmetic;
 * u64 values compare unsigned. */
static void reduce_int(reduce_op op, bool is_unsigned, const int64_t *v, size_t n, reduce_walk *w,
                       int64_t *acc, size_t n_out)
{
    int64_t init = op == R_PROD                 ? 1
                   : op == R_MAX                ? (is_unsigned ? 0 : INT64_MIN)
                   : op == R_MIN && is_unsigned ? -1 /* UINT64_MAX */
                   : op == R_MIN                ? INT64_MAX
                                                : 0;
    for (size_t j = 0; j < n_out; j++)
        acc[j] = init;
    for (size_t i = 0; i < n; i++, walk_next(w)) {
        uint64_t x = (uint64_t)v[i], a = (uint64_t)acc[w->out];
        bool gt = is_unsigned ? x > a : v[i] > acc[w->out];
        switch (op) {
        case R_MAX:
            a = gt ? x : a;
            break;
        case R_MIN:
            a = !gt && x != a ? x : a;
            break;
        case R_PROD:
            a *= x;
            break;
        case R_L1:
            a += is_unsigned || v[i] >= 0 ? x : (uint64_t)0 - x;
            break;
        case R_SUM_SQUARE:
            a += x * x;
            break;
        default:
            a += x;
            break;
        }
        acc[w->out] = (int64_t)a;
    }
}

static rn_status run_reduce(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    bool reduced[RN_MAX_RANK];
    REF_MV_TRY(reduced_axes(args, x, reduced));
    reduce_walk w = {.rank = x->rank};
    size_t n_out = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        w.dims[d] = x->dims[d];
        w.out_strides[d] = reduced[d] ? 0 : (int64_t)n_out;
        n_out *= reduced[d] ? 1 : (size_t)x->dims[d];
    }
    if (n_out != graph_tensor_count(y) || y->type != x->type)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_MV_NODE_FMT "output holds %zu elements, the reduction gives %zu",
                            REF_MV_NODE_ARGS(node), graph_tensor_count(y), n_out);
    if (n_out == 0)
        return RN_OK;
    reduce_op op = op_of(node);
    size_t n = graph_tensor_count(x);
    bool exact_int = !is_float_type(x->type) && op != R_MEAN && op != R_L2 && op != R_LOG_SUM &&
                     op != R_LOG_SUM_EXP;
    size_t width = exact_int ? sizeof(int64_t) : sizeof(double);
    void *vals = ref_tmp_alloc((n ? n : 1) * width), *acc = ref_tmp_alloc(n_out * width);
    if (!vals || !acc) {
        ref_tmp_free(vals);
        ref_tmp_free(acc);
        return rn_set_error(RN_OUT_OF_MEMORY, REF_MV_NODE_FMT "out of memory",
                            REF_MV_NODE_ARGS(node));
    }
    if (exact_int) {
        load_int(x, vals, n);
        reduce_int(op,
                   x->type == RN_U64 || x->type == RN_U32 || x->type == RN_U8 || x->type == RN_BOOL,
                   vals, n, &w, acc, n_out);
        store_int(y, acc, n_out);
    } else {
        load_double(x, vals, n);
        reduce_double(op, vals, n, &w, acc, n_out, (double)n / (double)n_out);
        store_double(y, acc, n_out);
    }
    ref_tmp_free(vals);
    ref_tmp_free(acc);
    return RN_OK;
}

#define REF_REDUCE_KERNEL(name_, op_)                                                              \
    const plugin_kernel ref_kernel_##name_ = {                                                     \
        .domain = "",                                                                              \
        .op_type = op_,                                                                            \
        .impl_type = "ref",                                                                        \
        .supports = supports_reduce,                                                               \
        .run = run_reduce,                                                                         \
    };

REF_REDUCE_KERNEL(reduce_mean, "ReduceMean")
REF_REDUCE_KERNEL(reduce_sum, "ReduceSum")
REF_REDUCE_KERNEL(reduce_max, "ReduceMax")
REF_REDUCE_KERNEL(reduce_min, "ReduceMin")
REF_REDUCE_KERNEL(reduce_prod, "ReduceProd")
REF_REDUCE_KERNEL(reduce_l1, "ReduceL1")
REF_REDUCE_KERNEL(reduce_l2, "ReduceL2")
REF_REDUCE_KERNEL(reduce_log_sum, "ReduceLogSum")
REF_REDUCE_KERNEL(reduce_log_sum_exp, "ReduceLogSumExp")
REF_REDUCE_KERNEL(reduce_sum_square, "ReduceSumSquare")
