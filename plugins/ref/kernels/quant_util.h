/* What the REF quantization kernels share (private to plugins/ref): reading
 * integer and float elements, rounding to a float type the way numpy's
 * arithmetic in that type would, saturating to an integer type, and the
 * walk that pairs every element of x with its scale and zero point.
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_QUANT_UTIL_H
#define RUNNEL_PLUGINS_REF_KERNELS_QUANT_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugins/ref/kernels/elementwise.h"
#include "plugins/ref/kernels/float8.h"
#include "plugins/ref/kernels/movement.h"

#define REF_Q_NODE_FMT     "node '%s' (%s): "
#define REF_Q_NODE_ARGS(n) (n)->name, (n)->op_type

/* Element i of a numeric or float8 buffer as double (exact). */
static inline double ref_q_load(rn_element_type t, const void *data, size_t i)
{
    if (ref_is_float8(t))
        return ref_f8_to_f64(t, ((const uint8_t *)data)[i]);
    return ref_mv_load_double(t, data, i);
}

/* v rounded to the float type t (and widened back): the result of an
 * operation computed exactly and then stored in t. Other types pass v. */
static inline double ref_q_round_to(rn_element_type t, double v)
{
    switch (t) {
    case RN_F32:
        return (float)v;
    case RN_F16:
        return plugin_f16_to_f32(ref_f64_to_f16(v));
    case RN_BF16:
        return plugin_bf16_to_f32(ref_f64_to_bf16(v));
    default:
        return v;
    }
}

/* The value range of an integer quantized type; false for other types. */
static inline bool ref_q_int_range(rn_element_type t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case RN_U8:
        *lo = 0, *hi = UINT8_MAX;
        return true;
    case RN_I8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        return true;
    case RN_U16:
        *lo = 0, *hi = UINT16_MAX;
        return true;
    case RN_I16:
        *lo = INT16_MIN, *hi = INT16_MAX;
        return true;
    case RN_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        return true;
    default:
        return false;
    }
}

/* Rounds v half to even and saturates it to [lo, hi] (NaN gives 0 clamped). */
static inline int64_t ref_q_saturate(double v, int64_t lo, int64_t hi)
{
    if (v != v)
        v = 0;
    v = nearbyint(v);
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

/* Where the scale and zero point of each element of x are: x is walked as
 * [outer, len, inner] around `axis`, and element (o, a, i) uses parameter
 * element o * s_outer + (a / block) * s_axis + i * s_inner. */
typedef struct ref_q_layout {
    int64_t outer, len, inner;
    int64_t block;
    int64_t s_outer, s_axis, s_inner;
} ref_q_layout;

/* Works out the layout of parameter p (a scale or zero point) for x from the
 * node's axis and block_size attributes; the error names the node and the
 * input index. */
static inline rn_status ref_q_layout_init(const graph_node *node, const graph_tensor *x,
                                          const graph_tensor *p, int index, ref_q_layout *l)
{
    size_t count = graph_tensor_count(x);
    size_t pc = graph_tensor_count(p);
    *l = (ref_q_layout){.outer = 1, .len = 1, .inner = (int64_t)count, .block = 1};
    if (pc == 1)
        return RN_OK; /* per tensor: every stride 0 */
    int64_t axis = graph_node_attr_int(node, "axis", 1);
    int64_t block = graph_node_attr_int(node, "block_size", 0);
    if (axis < -x->rank || axis >= x->rank || block < 0)
        return rn_set_error(RN_INVALID_ARG,
                            REF_Q_NODE_FMT "axis %lld / block_size %lld do not fit x of rank %d",
                            REF_Q_NODE_ARGS(node), (long long)axis, (long long)block, x->rank);
    int ax = (int)(axis < 0 ? axis + x->rank : axis);
    l->outer = 1;
    for (int d = 0; d < ax; d++)
        l->outer *= x->dims[d];
    l->len = x->dims[ax];
    l->inner = 1;
    for (int d = ax + 1; d < x->rank; d++)
        l->inner *= x->dims[d];
    if (block == 0) {
        if (p->rank != 1 || p->dims[0] != l->len)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                REF_Q_NODE_FMT "input %d has %zu elements; per-axis parameters "
                                               "need a 1-D tensor of %lld (x's dim %d)",
                                REF_Q_NODE_ARGS(node), index, pc, (long long)l->len, ax);
        l->s_axis = 1;
        return RN_OK;
    }
    int64_t nb = (l->len + block - 1) / block;
    bool ok = p->rank == x->rank;
    for (int d = 0; ok && d < x->rank; d++)
        ok = p->dims[d] == (d == ax ? nb : x->dims[d]);
    if (!ok)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_Q_NODE_FMT "input %d does not have x's shape with %lld blocks of "
                                           "%lld along axis %d",
                            REF_Q_NODE_ARGS(node), index, (long long)nb, (long long)block, ax);
    l->block = block;
    l->s_outer = nb * l->inner;
    l->s_axis = l->inner;
    l->s_inner = 1;
    return RN_OK;
}

/* The index of the parameter element for element xi (flat) of x. */
static inline int64_t ref_q_index(const ref_q_layout *l, int64_t xi)
{
    if (l->s_outer == 0 && l->s_axis == 0 && l->s_inner == 0)
        return 0;
    int64_t i = xi % l->inner, a = xi / l->inner % l->len, o = xi / (l->inner * l->len);
    return o * l->s_outer + (a / l->block) * l->s_axis + i * l->s_inner;
}

/* The optional input i with data, or NULL. */
static inline const graph_tensor *ref_q_opt(const plugin_kernel_args *args, int i)
{
    if (i >= args->n_inputs || args->inputs[i].type == RN_UNDEFINED)
        return NULL;
    return &args->inputs[i];
}

#endif /* RUNNEL_PLUGINS_REF_KERNELS_QUANT_UTIL_H */
