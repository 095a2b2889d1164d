/* Private helpers of the REF data-movement kernels (Reshape, Transpose, Slice,
 * Concat, Gather, Pad, ...). All static inline so that no symbol can clash
 * with another family's helpers.
 *
 * Data movement never looks at element values: kernels copy elements by
 * their byte size, so every fixed-size element type works. STRING tensors
 * hold char* elements whose ownership a byte copy would alias, so the
 * movement kernels decline them in supports().
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_MOVEMENT_H
#define RUNNEL_PLUGINS_REF_KERNELS_MOVEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "plugins/api/kernel.h"

#define REF_MV_NODE_FMT     "node '%s' (%s): "
#define REF_MV_NODE_ARGS(n) (n)->name, (n)->op_type
#define REF_MV_TRY(expr)                                                                           \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        if (st_ != RN_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

/* Views may pair each dim with a repeat count (Tile), so twice the rank. */
#define REF_MV_MAX_VIEW_RANK (2 * RN_MAX_RANK)

/* supports() shared by the type-agnostic kernels: every input and output
 * `data_mask` names (bit i: input i; outputs always) must have a fixed-size
 * element type (or one not yet known). */
static inline bool ref_mv_supports_types(const graph_node *node, uint32_t data_mask,
                                         const char **why)
{
    for (int i = 0; i < node->n_inputs && i < 32; i++) {
        const graph_value *v = node->inputs[i];
        if ((data_mask >> i & 1u) && v && v->type == RN_STRING) {
            *why = "string tensors";
            return false;
        }
    }
    for (int i = 0; i < node->n_outputs; i++) {
        const graph_value *v = node->outputs[i];
        if (v && v->type == RN_STRING) {
            *why = "string tensors";
            return false;
        }
    }
    return true;
}

/* The optional input i, or NULL when the node does not have it. */
static inline const graph_tensor *ref_mv_opt_input(const plugin_kernel_args *args, int i)
{
    if (i >= args->n_inputs || args->inputs[i].type == RN_UNDEFINED)
        return NULL;
    return &args->inputs[i];
}

/* Makes sure output i has a buffer of its inferred shape (inference resolves
 * every shape of these ops at run time; this only covers an executor that
 * left it to the kernel). */
static inline rn_status ref_mv_output(plugin_kernel_args *args, int i, graph_tensor **out)
{
    graph_tensor *t = &args->outputs[i];
    *out = t;
    if (t->data == NULL && graph_tensor_count(t) > 0) {
        if (args->alloc_output == NULL)
            return rn_set_error(RN_INTERNAL, REF_MV_NODE_FMT "output %d has no buffer",
                                REF_MV_NODE_ARGS(args->node), i);
        rn_status st = args->alloc_output(args, i, t->rank, t->dims);
        if (st != RN_OK)
            return st;
    }
    *out = t;
    return RN_OK;
}

/* An integer list argument (starts, pads, repeats, ...) read from input
 * `index` when the node has it, else from attribute `attr`; n is -1 when
 * neither is given. */
typedef struct ref_mv_list {
    int n;
    const graph_tensor *t;
    const int64_t *attr;
} ref_mv_list;

static inline int64_t ref_mv_int_at(const graph_tensor *t, size_t i);

static inline ref_mv_list ref_mv_get_list(const plugin_kernel_args *args, int index,
                                          const char *attr)
{
    ref_mv_list l = {.n = -1};
    l.t = ref_mv_opt_input(args, index);
    if (l.t)
        l.n = (int)graph_tensor_count(l.t);
    else
        l.n = graph_node_attr_ints(args->node, attr, &l.attr);
    return l;
}

static inline int64_t ref_mv_list_at(const ref_mv_list *l, int i)
{
    return l->t ? ref_mv_int_at(l->t, (size_t)i) : l->attr[i];
}

/* Element i of an integer tensor (indices, shapes, axes) as int64. */
static inline int64_t ref_mv_int_at(const graph_tensor *t, size_t i)
{
    switch (t->type) {
    case RN_I32:
        return ((const int32_t *)t->data)[i];
    case RN_I64:
        return ((const int64_t *)t->data)[i];
    case RN_I16:
        return ((const int16_t *)t->data)[i];
    case RN_I8:
        return ((const int8_t *)t->data)[i];
    case RN_U8:
    case RN_BOOL:
        return ((const uint8_t *)t->data)[i];
    case RN_U16:
        return ((const uint16_t *)t->data)[i];
    case RN_U32:
        return ((const uint32_t *)t->data)[i];
    case RN_U64:
        return (int64_t)((const uint64_t *)t->data)[i];
    default:
        return 0;
    }
}

/* ---- element values, for the kernels that look at them (Pad's constant,
 * the reductions) ---- */

/* Element i of a numeric tensor buffer as double (f16/bf16 widen exactly). */
static inline double ref_mv_load_double(rn_element_type type, const void *data, size_t i)
{
    switch (type) {
    case RN_F32:
        return ((const float *)data)[i];
    case RN_F64:
        return ((const double *)data)[i];
    case RN_F16:
        return plugin_f16_to_f32(((const uint16_t *)data)[i]);
    case RN_BF16:
        return plugin_bf16_to_f32(((const uint16_t *)data)[i]);
    case RN_I8:
        return ((const int8_t *)data)[i];
    case RN_U8:
    case RN_BOOL:
        return ((const uint8_t *)data)[i];
    case RN_I16:
        return ((const int16_t *)data)[i];
    case RN_U16:
        return ((const uint16_t *)data)[i];
    case RN_I32:
        return ((const int32_t *)data)[i];
    case RN_U32:
        return ((const uint32_t *)data)[i];
    case RN_I64:
        return (double)((const int64_t *)data)[i];
    case RN_U64:
        return (double)((const uint64_t *)data)[i];
    default:
        return 0;
    }
}

/* Stores v as element i of an integer buffer, wrapping to the type's width. */
static inline void ref_mv_store_int(rn_element_type type, void *data, size_t i, int64_t v)
{
    switch (type) {
    case RN_I8:
        ((int8_t *)data)[i] = (int8_t)v;
        break;
    case RN_U8:
        ((uint8_t *)data)[i] = (uint8_t)v;
        break;
    case RN_BOOL:
        ((uint8_t *)data)[i] = v != 0;
        break;
    case RN_I16:
        ((int16_t *)data)[i] = (int16_t)v;
        break;
    case RN_U16:
        ((uint16_t *)data)[i] = (uint16_t)v;
        break;
    case RN_I32:
        ((int32_t *)data)[i] = (int32_t)v;
        break;
    case RN_U32:
        ((uint32_t *)data)[i] = (uint32_t)v;
        break;
    case RN_I64:
    case RN_U64:
        ((int64_t *)data)[i] = v;
        break;
    default:
        break;
    }
}

/* Stores v as element i: floating types round to nearest, integer types
 * truncate toward zero (NaN gives 0, out-of-range values saturate to the
 * 64-bit range before wrapping, as numpy's casts do on x86). */
static inline void ref_mv_store_double(rn_element_type type, void *data, size_t i, double v)
{
    switch (type) {
    case RN_F32:
        ((float *)data)[i] = (float)v;
        return;
    case RN_F64:
        ((double *)data)[i] = v;
        return;
    case RN_F16:
        ((uint16_t *)data)[i] = plugin_f32_to_f16((float)v);
        return;
    case RN_BF16:
        ((uint16_t *)data)[i] = plugin_f32_to_bf16((float)v);
        return;
    case RN_U64:
        if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) {
            ((uint64_t *)data)[i] = (uint64_t)v;
            return;
        }
        break;
    default:
        break;
    }
    int64_t n = v != v                        ? 0
                : v >= 9223372036854775808.0  ? INT64_MAX
                : v <= -9223372036854775808.0 ? INT64_MIN
                                              : (int64_t)v;
    ref_mv_store_int(type, data, i, n);
}

/* Copies a strided view of src into the dense row-major dst of shape
 * dims[rank]: the element at multi-index o comes from element
 * offset + sum_k o[k] * strides[k] of src (strides in elements; they may be
 * 0 to repeat an element, or negative to walk backwards); rank is at most
 * REF_MV_MAX_VIEW_RANK. This one walk serves Transpose, Slice, Expand, Tile,
 * DepthToSpace and SpaceToDepth. */
static inline void ref_mv_view_copy(void *dst, const void *src, size_t esize, int rank,
                                    const int64_t *dims, const int64_t *strides, int64_t offset)
{
    int64_t count = 1;
    for (int k = 0; k < rank; k++)
        count *= dims[k];
    if (count == 0)
        return;
    char *d = dst;
    const char *s = src;
    if (rank == 0) {
        memcpy(d, s + offset * (int64_t)esize, esize);
        return;
    }
    /* The innermost dim is copied as a block when it is contiguous. */
    int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
    int64_t idx[REF_MV_MAX_VIEW_RANK] = {0};
    int64_t off = offset;
    for (int64_t done = 0; done < count; done += inner) {
        if (inner_stride == 1) {
            memcpy(d, s + off * (int64_t)esize, (size_t)inner * esize);
            d += inner * (int64_t)esize;
        } else {
            for (int64_t j = 0; j < inner; j++, d += esize)
                memcpy(d, s + (off + j * inner_stride) * (int64_t)esize, esize);
        }
        for (int k = rank - 2; k >= 0; k--) {
            off += strides[k];
            if (++idx[k] < dims[k])
                break;
            off -= strides[k] * dims[k];
            idx[k] = 0;
        }
    }
}

#endif /* RUNNEL_PLUGINS_REF_KERNELS_MOVEMENT_H */
