/* Ops on values of other types than f32, as a transformer's embeddings and
 * attention masks use them (program_index.c's kernels): Gather (int64 or
 * int32 indices, negative ones from the end), Cast and CastLike between
 * f32, i64, i32 and bool, Where (bool condition, numpy broadcasting), the comparisons
 * Equal, Less, Greater, LessOrEqual, GreaterOrEqual and Not (bool results),
 * Expand, and Slice with constant starts, ends, axes and steps. Elements are
 * moved by size (1, 4 or 8 bytes), so the movement ops take every one of
 * those types. Offsets into buffers are in bytes. */
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

/* ---- types and shapes ---- */

/* program_index.c's type codes: 0 f32, 1 i64, 2 i32, 3 bool; -1 others. */
static int type_code(rn_element_type t)
{
    switch (t) {
    case RN_F32:
        return 0;
    case RN_I64:
        return 1;
    case RN_I32:
        return 2;
    case RN_BOOL:
        return 3;
    default:
        return -1;
    }
}

static bool typed_port(rn_element_type t, rn_partial_shape s, bool any_type, const char **why)
{
    if (!any_type && type_code(t) < 0) {
        *why = "GPU: f32, i64, i32 and bool tensors only";
        return false;
    }
    if (!plugin_shape_is_static(s)) {
        *why = "GPU: static shapes only";
        return false;
    }
    return true;
}

bool gpu_static_typed(const rn_node *node, uint32_t any_type, const char **why)
{
    for (int i = 0; i < rn_node_input_count(node); i++) {
        if (rn_node_input_name(node, i)[0] == '\0')
            continue;
        if (!typed_port(rn_node_input_type(node, i), rn_node_input_shape(node, i),
                        any_type >> i & 1, why))
            return false;
    }
    for (int i = 0; i < rn_node_output_count(node); i++) {
        if (rn_node_output_name(node, i)[0] == '\0')
            continue;
        if (!typed_port(rn_node_output_type(node, i), rn_node_output_shape(node, i), false, why))
            return false;
    }
    return true;
}

static size_t count(rn_partial_shape s)
{
    size_t n = 1;
    for (int d = 0; d < s.rank; d++)
        n *= (size_t)s.dims[d];
    return n;
}

/* Row-major element strides of x as read at y's dims, right-aligned; 0
 * where x broadcasts (numpy rules). */
static void broadcast_strides(rn_partial_shape y, rn_partial_shape x, gpu_idx8 *out)
{
    memset(out, 0, sizeof *out);
    int64_t stride = 1;
    for (int d = x.rank - 1; d >= 0; d--) {
        int yd = d + y.rank - x.rank;
        out->v[yd] = x.dims[d] == 1 ? 0 : (cl_int)stride;
        stride *= x.dims[d];
    }
}

static void dims8(rn_partial_shape y, gpu_idx8 *out)
{
    memset(out, 0, sizeof *out);
    for (int d = 0; d < y.rank; d++)
        out->v[d] = (cl_int)y.dims[d];
}

/* The kernel name of `base` for elements of type t ("gather_8"). */
static const char *sized(const char *const names[3], rn_element_type t)
{
    size_t n = rn_element_type_size(t);
    return names[n == 1 ? 0 : n == 4 ? 1 : 2];
}

/* Device memory with an offset in bytes. */
typedef struct typed_mem {
    cl_mem mem;
    int off;
} typed_mem;

static typed_mem in_mem(const gpu_node *g, const rn_kernel_args *args, int i)
{
    if (g->constant[i] != NULL)
        return (typed_mem){g->constant[i], 0};
    const rn_kernel_tensor *t = &args->inputs[i];
    const gpu_arena *a = t->buffer;
    return (typed_mem){a != NULL ? a->mem : NULL, (int)t->offset};
}

static typed_mem out_mem(const rn_kernel_args *args, int i)
{
    const rn_kernel_tensor *t = &args->outputs[i];
    const gpu_arena *a = t->buffer;
    return (typed_mem){a != NULL ? a->mem : NULL, (int)t->offset};
}

/* A constant integer tensor's element k (i64 or i32). */
static int64_t const_int(const rn_kernel_tensor *t, size_t k)
{
    return t->type == RN_I64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
}

static size_t const_count(const rn_kernel_tensor *t)
{
    size_t es = rn_element_type_size(t->type);
    return es > 0 ? t->nbytes / es : 0;
}

static bool const_ints(const rn_node *node, int i, const char **why)
{
    if (rn_node_input_count(node) <= i || rn_node_input_name(node, i)[0] == '\0')
        return true;
    const rn_kernel_tensor *t = rn_node_input_constant(node, i);
    if (t == NULL || (t->type != RN_I64 && t->type != RN_I32)) {
        *why = "GPU: this input must be an i64 or i32 constant";
        return false;
    }
    return true;
}

/* ---- strided copies: Expand and Slice ---- */

typedef struct strided_state {
    gpu_node g;
    int rank;
    int start; /* bytes into x */
    gpu_idx8 dims, xs;
    size_t n;
} strided_state;

static const char *const strided_names[3] = {"strided_1", "strided_4", "strided_8"};

static rn_status strided_new(const rn_node *node, strided_state **out)
{
    const char *kernels[] = {sized(strided_names, rn_node_input_type(node, 0)), NULL};
    strided_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape y = rn_node_output_shape(node, 0);
    s->rank = y.rank;
    dims8(y, &s->dims);
    s->n = count(y);
    *out = s;
    return RN_OK;
}

static rn_status strided_run(rn_kernel_args *args)
{
    strided_state *s = args->state;
    typed_mem x = in_mem(&s->g, args, 0), y = out_mem(args, 0);
    int xoff = x.off + s->start;
    gpu_arg a[] = {GPU_ARG(x.mem),   GPU_ARG(xoff),    GPU_ARG(y.mem), GPU_ARG(y.off),
                   GPU_ARG(s->rank), GPU_ARG(s->dims), GPU_ARG(s->xs)};
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->n);
}

static bool expand_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_typed(node, 2u, why) || !const_ints(node, 1, why))
        return false;
    if (rn_node_output_shape(node, 0).rank > 8) {
        *why = "GPU: ranks up to 8 only";
        return false;
    }
    return true;
}

static rn_status expand_prepare(const rn_node *node, void **out)
{
    strided_state *s;
    rn_status st = strided_new(node, &s);
    if (st != RN_OK)
        return st;
    broadcast_strides(rn_node_output_shape(node, 0), rn_node_input_shape(node, 0), &s->xs);
    *out = s;
    return RN_OK;
}

/* Slice's starts, ends, axes and steps: inputs 1-4 from opset 10, the
 * attributes starts, ends, axes before. */
typedef struct slice_args {
    int n;
    int64_t starts[8], axes[8], steps[8];
} slice_args;

static bool slice_args_read(const rn_node *node, slice_args *sa, const char **why)
{
    int rank = rn_node_input_shape(node, 0).rank;
    memset(sa, 0, sizeof *sa);
    if (rn_node_opset(node) < 10) {
        const int64_t *starts = NULL, *axes = NULL;
        sa->n = rn_node_attr_ints(node, "starts", &starts); /* -1: absent */
        if (sa->n < 0)
            sa->n = 0;
        int na = rn_node_attr_ints(node, "axes", &axes);
        if (sa->n > 8 || (na > 0 && na != sa->n)) {
            *why = "GPU: Slice's starts and axes disagree";
            return false;
        }
        for (int k = 0; k < sa->n; k++) {
            sa->starts[k] = starts[k];
            sa->axes[k] = na > 0 ? axes[k] : k;
            sa->steps[k] = 1;
        }
    } else {
        for (int i = 1; i < 5; i++)
            if (!const_ints(node, i, why)) {
                *why = "GPU: Slice's starts, ends, axes and steps must be i64 or i32 constants";
                return false;
            }
        const rn_kernel_tensor *st = rn_node_input_constant(node, 1);
        const rn_kernel_tensor *ax =
            rn_node_input_count(node) > 3 && rn_node_input_name(node, 3)[0] != '\0'
                ? rn_node_input_constant(node, 3)
                : NULL;
        const rn_kernel_tensor *sp =
            rn_node_input_count(node) > 4 && rn_node_input_name(node, 4)[0] != '\0'
                ? rn_node_input_constant(node, 4)
                : NULL;
        if (st == NULL) {
            *why = "GPU: Slice's starts must be a constant";
            return false;
        }
        sa->n = (int)const_count(st);
        if (sa->n > 8 || (ax != NULL && (int)const_count(ax) != sa->n) ||
            (sp != NULL && (int)const_count(sp) != sa->n)) {
            *why = "GPU: Slice's starts, axes and steps disagree";
            return false;
        }
        for (int k = 0; k < sa->n; k++) {
            sa->starts[k] = const_int(st, (size_t)k);
            sa->axes[k] = ax != NULL ? const_int(ax, (size_t)k) : k;
            sa->steps[k] = sp != NULL ? const_int(sp, (size_t)k) : 1;
        }
    }
    for (int k = 0; k < sa->n; k++) {
        if (sa->axes[k] < 0)
            sa->axes[k] += rank;
        if (sa->axes[k] < 0 || sa->axes[k] >= rank || sa->steps[k] == 0) {
            *why = "GPU: Slice's axes out of range or a step of 0";
            return false;
        }
    }
    return true;
}

static bool slice_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_typed(node, 0x1eu, why))
        return false;
    if (rn_node_input_shape(node, 0).rank > 8) {
        *why = "GPU: ranks up to 8 only";
        return false;
    }
    slice_args sa;
    return slice_args_read(node, &sa, why);
}

static rn_status slice_prepare(const rn_node *node, void **out)
{
    strided_state *s;
    rn_status st = strided_new(node, &s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    slice_args sa;
    const char *why;
    slice_args_read(node, &sa, &why);
    int64_t stride[8], start[8], step[8];
    int64_t acc = 1;
    for (int d = x.rank - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= x.dims[d];
        start[d] = 0;
        step[d] = 1;
    }
    for (int k = 0; k < sa.n; k++) {
        int d = (int)sa.axes[k];
        int64_t dim = x.dims[d], b = sa.starts[k];
        if (b < 0)
            b += dim;
        /* ONNX clamps a start to [0, dim] going forward, [0, dim - 1]
         * going backward. */
        int64_t hi = sa.steps[k] > 0 ? dim : dim - 1;
        start[d] = b < 0 ? 0 : b > hi ? hi : b;
        step[d] = sa.steps[k];
    }
    int64_t base = 0;
    for (int d = 0; d < x.rank; d++) {
        base += start[d] * stride[d];
        s->xs.v[d] = (cl_int)(stride[d] * step[d]);
    }
    s->start = (int)(base * (int64_t)rn_element_type_size(rn_node_input_type(node, 0)));
    *out = s;
    return RN_OK;
}

#define TYPED_KERNEL(name, op, supports_fn, prepare_fn, run_fn)                                    \
    const rn_kernel name = {                                                                       \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "opencl",                                                                     \
        .supports = supports_fn,                                                                   \
        .prepare = prepare_fn,                                                                     \
        .run = run_fn,                                                                             \
        .release = gpu_state_free,                                                                 \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
    }

TYPED_KERNEL(gpu_kernel_expand, "Expand", expand_supports, expand_prepare, strided_run);
TYPED_KERNEL(gpu_kernel_slice, "Slice", slice_supports, slice_prepare, strided_run);

/* ---- Gather ---- */

typedef struct gather_state {
    gpu_node g;
    int idx64, n_idx, axis_dim, inner;
    size_t n;
} gather_state;

static bool gather_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_typed(node, 0, why))
        return false;
    rn_element_type it = rn_node_input_type(node, 1);
    if (it != RN_I64 && it != RN_I32) {
        *why = "GPU: Gather's indices must be i64 or i32";
        return false;
    }
    rn_partial_shape x = rn_node_input_shape(node, 0);
    int64_t axis = rn_node_attr_int(node, "axis", 0);
    if (axis < -x.rank || axis >= x.rank) {
        *why = "GPU: Gather's axis is out of range";
        return false;
    }
    return true;
}

static rn_status gather_prepare(const rn_node *node, void **out)
{
    static const char *const names[3] = {"gather_1", "gather_4", "gather_8"};
    const char *kernels[] = {sized(names, rn_node_input_type(node, 0)), NULL};
    gather_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    int axis = (int)rn_node_attr_int(node, "axis", 0);
    if (axis < 0)
        axis += x.rank;
    s->idx64 = rn_node_input_type(node, 1) == RN_I64;
    s->n_idx = (int)count(rn_node_input_shape(node, 1));
    s->axis_dim = (int)x.dims[axis];
    s->inner = 1;
    for (int d = axis + 1; d < x.rank; d++)
        s->inner *= (int)x.dims[d];
    s->n = count(rn_node_output_shape(node, 0));
    *out = s;
    return RN_OK;
}

static rn_status gather_run(rn_kernel_args *args)
{
    gather_state *s = args->state;
    typed_mem x = in_mem(&s->g, args, 0), ix = in_mem(&s->g, args, 1), y = out_mem(args, 0);
    gpu_arg a[] = {GPU_ARG(x.mem),       GPU_ARG(x.off),   GPU_ARG(ix.mem), GPU_ARG(ix.off),
                   GPU_ARG(s->idx64),    GPU_ARG(y.mem),   GPU_ARG(y.off),  GPU_ARG(s->n_idx),
                   GPU_ARG(s->axis_dim), GPU_ARG(s->inner)};
    if (s->axis_dim == 0)
        return RN_OK; /* no element to gather (then y is empty too) */
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->n);
}

TYPED_KERNEL(gpu_kernel_gather, "Gather", gather_supports, gather_prepare, gather_run);

/* ---- Cast ---- */

typedef struct cast_state {
    gpu_node g;
    int from, to;
    size_t n;
} cast_state;

static bool cast_supports(const rn_node *node, const char **why)
{
    return gpu_static_typed(node, 0, why);
}

static rn_status cast_prepare(const rn_node *node, void **out)
{
    static const char *const kernels[] = {"cast", NULL};
    cast_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    s->from = type_code(rn_node_input_type(node, 0));
    s->to = type_code(rn_node_output_type(node, 0));
    s->n = count(rn_node_output_shape(node, 0));
    *out = s;
    return RN_OK;
}

static rn_status cast_run(rn_kernel_args *args)
{
    cast_state *s = args->state;
    typed_mem x = in_mem(&s->g, args, 0), y = out_mem(args, 0);
    gpu_arg a[] = {GPU_ARG(x.mem), GPU_ARG(x.off), GPU_ARG(s->from),
                   GPU_ARG(y.mem), GPU_ARG(y.off), GPU_ARG(s->to)};
    return gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]), s->n);
}

TYPED_KERNEL(gpu_kernel_cast, "Cast", cast_supports, cast_prepare, cast_run);
/* CastLike: to the type of input 1 (only its type is read). */
TYPED_KERNEL(gpu_kernel_cast_like, "CastLike", cast_supports, cast_prepare, cast_run);

/* ---- Where ---- */

typedef struct where_state {
    gpu_node g;
    int rank;
    gpu_idx8 dims, cs, as, bs;
    size_t n;
} where_state;

static bool where_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_typed(node, 0, why))
        return false;
    if (rn_node_input_type(node, 0) != RN_BOOL) {
        *why = "GPU: Where's condition must be bool";
        return false;
    }
    if (rn_node_output_shape(node, 0).rank > 8) {
        *why = "GPU: ranks up to 8 only";
        return false;
    }
    return true;
}

static rn_status where_prepare(const rn_node *node, void **out)
{
    static const char *const names[3] = {"where_1", "where_4", "where_8"};
    const char *kernels[] = {sized(names, rn_node_output_type(node, 0)), NULL};
    where_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape y = rn_node_output_shape(node, 0);
    s->rank = y.rank;
    dims8(y, &s->dims);
    broadcast_strides(y, rn_node_input_shape(node, 0), &s->cs);
    broadcast_strides(y, rn_node_input_shape(node, 1), &s->as);
    broadcast_strides(y, rn_node_input_shape(node, 2), &s->bs);
    s->n = count(y);
    *out = s;
    return RN_OK;
}

static rn_status where_run(rn_kernel_args *args)
{
    where_state *s = args->state;
    typed_mem c = in_mem(&s->g, args, 0), a = in_mem(&s->g, args, 1), b = in_mem(&s->g, args, 2),
              y = out_mem(args, 0);
    gpu_arg v[] = {GPU_ARG(c.mem),   GPU_ARG(c.off),   GPU_ARG(a.mem), GPU_ARG(a.off),
                   GPU_ARG(b.mem),   GPU_ARG(b.off),   GPU_ARG(y.mem), GPU_ARG(y.off),
                   GPU_ARG(s->rank), GPU_ARG(s->dims), GPU_ARG(s->cs), GPU_ARG(s->as),
                   GPU_ARG(s->bs)};
    return gpu_launch(&s->g, args, 0, v, (int)(sizeof v / sizeof v[0]), s->n);
}

TYPED_KERNEL(gpu_kernel_where, "Where", where_supports, where_prepare, where_run);

/* ---- comparisons and Not ---- */

typedef struct compare_state {
    gpu_node g;
    int type, op, rank;
    gpu_idx8 dims, as, bs;
    size_t n;
} compare_state;

static int compare_op(const char *op)
{
    static const char *const names[] = {"Equal",       "Less",           "Greater",
                                        "LessOrEqual", "GreaterOrEqual", "Not"};
    for (int i = 0; i < 6; i++)
        if (strcmp(op, names[i]) == 0)
            return i;
    return -1;
}

static bool compare_supports(const rn_node *node, const char **why)
{
    if (!gpu_static_typed(node, 0, why))
        return false;
    bool not = compare_op(rn_node_op_type(node)) == 5;
    if (not &&rn_node_input_type(node, 0) != RN_BOOL) {
        *why = "GPU: Not of bool only";
        return false;
    }
    if (!not &&(rn_node_input_count(node) != 2 ||
                rn_node_input_type(node, 0) != rn_node_input_type(node, 1))) {
        *why = "GPU: a comparison of two inputs of one type only";
        return false;
    }
    if (rn_node_output_shape(node, 0).rank > 8) {
        *why = "GPU: ranks up to 8 only";
        return false;
    }
    return true;
}

static rn_status compare_prepare(const rn_node *node, void **out)
{
    static const char *const kernels[] = {"compare", NULL};
    compare_state *s;
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape y = rn_node_output_shape(node, 0);
    s->op = compare_op(rn_node_op_type(node));
    s->type = type_code(rn_node_input_type(node, 0));
    s->rank = y.rank;
    dims8(y, &s->dims);
    broadcast_strides(y, rn_node_input_shape(node, 0), &s->as);
    broadcast_strides(y, rn_node_input_shape(node, s->op == 5 ? 0 : 1), &s->bs);
    s->n = count(y);
    *out = s;
    return RN_OK;
}

static rn_status compare_run(rn_kernel_args *args)
{
    compare_state *s = args->state;
    typed_mem a = in_mem(&s->g, args, 0), b = in_mem(&s->g, args, s->op == 5 ? 0 : 1),
              y = out_mem(args, 0);
    gpu_arg v[] = {GPU_ARG(a.mem),   GPU_ARG(a.off), GPU_ARG(b.mem), GPU_ARG(b.off),
                   GPU_ARG(s->type), GPU_ARG(y.mem), GPU_ARG(y.off), GPU_ARG(s->rank),
                   GPU_ARG(s->dims), GPU_ARG(s->as), GPU_ARG(s->bs), GPU_ARG(s->op)};
    return gpu_launch(&s->g, args, 0, v, (int)(sizeof v / sizeof v[0]), s->n);
}

TYPED_KERNEL(gpu_kernel_equal, "Equal", compare_supports, compare_prepare, compare_run);
TYPED_KERNEL(gpu_kernel_less, "Less", compare_supports, compare_prepare, compare_run);
TYPED_KERNEL(gpu_kernel_greater, "Greater", compare_supports, compare_prepare, compare_run);
TYPED_KERNEL(gpu_kernel_less_or_equal, "LessOrEqual", compare_supports, compare_prepare,
             compare_run);
TYPED_KERNEL(gpu_kernel_greater_or_equal, "GreaterOrEqual", compare_supports, compare_prepare,
             compare_run);
TYPED_KERNEL(gpu_kernel_not, "Not", compare_supports, compare_prepare, compare_run);
