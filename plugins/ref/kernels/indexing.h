/* Private helpers of the REF indexing kernels (Scatter*, TopK, Unique,
 * CumSum, ...), on top of the data-movement helpers of movement.h. All static
 * inline so that no symbol can clash with another family's helpers.
 *
 * Kernels that only move elements copy them by their byte size; the ones that
 * look at values (reductions, comparisons, sums) go through the typed helpers
 * below, which keep integers exact (no detour through double for 64-bit
 * values) and wrap on overflow like the ONNX reference does.
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_INDEXING_H
#define RUNNEL_PLUGINS_REF_KERNELS_INDEXING_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plugins/ref/kernels/movement.h"

#define REF_IX_FMT     REF_MV_NODE_FMT
#define REF_IX_ARGS(n) REF_MV_NODE_ARGS(n)
#define REF_IX_TRY     REF_MV_TRY

/* How a value's bits are to be read for arithmetic and ordering. */
typedef enum ref_ix_kind {
    REF_IX_OTHER = 0, /* string, float8, undefined: not handled */
    REF_IX_FLOAT,     /* f16, bf16, f32, f64: as double (exact) */
    REF_IX_SIGNED,    /* i8..i64: as int64 */
    REF_IX_UNSIGNED,  /* u8..u64 and bool: as uint64 */
} ref_ix_kind;

static inline ref_ix_kind ref_ix_kind_of(rn_element_type t)
{
    switch (t) {
    case RN_F16:
    case RN_BF16:
    case RN_F32:
    case RN_F64:
        return REF_IX_FLOAT;
    case RN_I8:
    case RN_I16:
    case RN_I32:
    case RN_I64:
        return REF_IX_SIGNED;
    case RN_U8:
    case RN_U16:
    case RN_U32:
    case RN_U64:
    case RN_BOOL:
        return REF_IX_UNSIGNED;
    default:
        return REF_IX_OTHER;
    }
}

/* supports() for kernels that compute on values: every input named in
 * in_mask and every output named in out_mask (bit i: port i) must be of a type
 * ref_ix_kind_of() handles, or not yet known; bool passes only with
 * `allow_bool`. */
static inline bool ref_ix_supports_values(const graph_node *node, uint32_t in_mask,
                                          uint32_t out_mask, bool allow_bool, const char **why)
{
    for (int i = 0; i < node->n_inputs + node->n_outputs; i++) {
        bool is_out = i >= node->n_inputs;
        int port = is_out ? i - node->n_inputs : i;
        const graph_value *v = is_out ? node->outputs[port] : node->inputs[port];
        uint32_t mask = is_out ? out_mask : in_mask;
        if (v == NULL || v->type == RN_UNDEFINED || port >= 32 || !(mask >> port & 1u))
            continue;
        if (ref_ix_kind_of(v->type) == REF_IX_OTHER || (v->type == RN_BOOL && !allow_bool)) {
            static _Thread_local char buf[64];
            snprintf(buf, sizeof buf, "%s %d type %s", is_out ? "output" : "input", port,
                     rn_element_type_name(v->type));
            *why = buf;
            return false;
        }
    }
    return true;
}

/* Index value v normalised against an axis of extent dim (negative counts
 * from the end); out of [-dim, dim) is an error naming `what`. */
static inline rn_status ref_ix_index(const graph_node *node, int64_t v, int64_t dim,
                                     const char *what, int64_t *out)
{
    *out = 0;
    if (v < -dim || v >= dim)
        return rn_set_error(RN_INVALID_ARG,
                            REF_IX_FMT "%s %lld is out of range for an axis of extent %lld",
                            REF_IX_ARGS(node), what, (long long)v, (long long)dim);
    *out = v < 0 ? v + dim : v;
    return RN_OK;
}

/* Axis attribute `name` (default dflt) normalised against rank. */
static inline rn_status ref_ix_axis(const graph_node *node, const char *name, int64_t dflt,
                                    int rank, int *out)
{
    int64_t a = graph_node_attr_int(node, name, dflt);
    *out = 0;
    if (a < -rank || a >= rank)
        return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "%s %lld is out of range for rank %d",
                            REF_IX_ARGS(node), name, (long long)a, rank);
    *out = (int)(a < 0 ? a + rank : a);
    return RN_OK;
}

/* ---- typed element access ---- */

static inline int64_t ref_ix_load_i(rn_element_type t, const void *d, size_t i)
{
    switch (t) {
    case RN_I8:
        return ((const int8_t *)d)[i];
    case RN_I16:
        return ((const int16_t *)d)[i];
    case RN_I32:
        return ((const int32_t *)d)[i];
    case RN_I64:
        return ((const int64_t *)d)[i];
    case RN_U8:
    case RN_BOOL:
        return ((const uint8_t *)d)[i];
    case RN_U16:
        return ((const uint16_t *)d)[i];
    case RN_U32:
        return ((const uint32_t *)d)[i];
    case RN_U64:
        return (int64_t)((const uint64_t *)d)[i];
    default:
        return 0;
    }
}

static inline uint64_t ref_ix_load_u(rn_element_type t, const void *d, size_t i)
{
    switch (t) {
    case RN_U8:
    case RN_BOOL:
        return ((const uint8_t *)d)[i];
    case RN_U16:
        return ((const uint16_t *)d)[i];
    case RN_U32:
        return ((const uint32_t *)d)[i];
    case RN_U64:
        return ((const uint64_t *)d)[i];
    default:
        return (uint64_t)ref_ix_load_i(t, d, i);
    }
}

static inline void ref_ix_store_u(rn_element_type t, void *d, size_t i, uint64_t v)
{
    if (t == RN_U64)
        ((uint64_t *)d)[i] = v;
    else
        ref_mv_store_int(t, d, i, (int64_t)v); /* wraps to the type's width */
}

/* Three-way comparison of element i of (ta, a) with element j of (tb, b) of
 * the same kind; NaN orders after every number and equal to itself (numpy's
 * sort order). */
static inline int ref_ix_compare(rn_element_type t, const void *a, size_t i, const void *b,
                                 size_t j)
{
    switch (ref_ix_kind_of(t)) {
    case REF_IX_FLOAT: {
        double x = ref_mv_load_double(t, a, i), y = ref_mv_load_double(t, b, j);
        if (isnan(x) || isnan(y))
            return isnan(x) - isnan(y);
        return (x > y) - (x < y);
    }
    case REF_IX_SIGNED: {
        int64_t x = ref_ix_load_i(t, a, i), y = ref_ix_load_i(t, b, j);
        return (x > y) - (x < y);
    }
    case REF_IX_UNSIGNED: {
        uint64_t x = ref_ix_load_u(t, a, i), y = ref_ix_load_u(t, b, j);
        return (x > y) - (x < y);
    }
    default:
        return 0;
    }
}

/* ---- reductions shared by ScatterElements and ScatterND ---- */

typedef enum ref_ix_reduction {
    REF_IX_NONE,
    REF_IX_ADD,
    REF_IX_MUL,
    REF_IX_MAX,
    REF_IX_MIN,
} ref_ix_reduction;

static inline rn_status ref_ix_get_reduction(const graph_node *node, ref_ix_reduction *out)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *r = graph_node_attr_string(node, "reduction", "none");
    for (int i = 0; i < 5; i++)
        if (strcmp(r, names[i]) == 0) {
            *out = (ref_ix_reduction)i;
            return RN_OK;
        }
    return rn_set_error(RN_INVALID_ARG, REF_IX_FMT "unknown reduction '%s'", REF_IX_ARGS(node), r);
}

/* dst[di] = reduce(dst[di], src[si]) for elements of type t; integer add and
 * mul wrap (computed on uint64), bool add/mul act as or/and through the same
 * wrap-then-test. With REF_IX_NONE the element is copied. */
static inline void ref_ix_combine(rn_element_type t, ref_ix_reduction r, void *dst, size_t di,
                                  const void *src, size_t si)
{
    size_t es = rn_element_type_size(t);
    if (r == REF_IX_NONE) {
        memcpy((char *)dst + di * es, (const char *)src + si * es, es);
        return;
    }
    switch (ref_ix_kind_of(t)) {
    case REF_IX_FLOAT: {
        double x = ref_mv_load_double(t, dst, di), y = ref_mv_load_double(t, src, si), z;
        if (t == RN_F32) { /* in the type's own precision, as numpy does */
            float fx = (float)x, fy = (float)y;
            z = r == REF_IX_ADD   ? (double)(fx + fy)
                : r == REF_IX_MUL ? (double)(fx * fy)
                : r == REF_IX_MAX ? (fx >= fy || isnan(fx) ? fx : fy)
                                  : (fx <= fy || isnan(fx) ? fx : fy);
        } else {
            z = r == REF_IX_ADD   ? x + y
                : r == REF_IX_MUL ? x * y
                : r == REF_IX_MAX ? (x >= y || isnan(x) ? x : y)
                                  : (x <= y || isnan(x) ? x : y);
        }
        if (isnan(y) && (r == REF_IX_MAX || r == REF_IX_MIN))
            z = y; /* NaN propagates, as np.maximum / np.minimum */
        ref_mv_store_double(t, dst, di, z);
        return;
    }
    case REF_IX_SIGNED: {
        int64_t x = ref_ix_load_i(t, dst, di), y = ref_ix_load_i(t, src, si);
        int64_t z = r == REF_IX_ADD   ? (int64_t)((uint64_t)x + (uint64_t)y)
                    : r == REF_IX_MUL ? (int64_t)((uint64_t)x * (uint64_t)y)
                    : r == REF_IX_MAX ? (x > y ? x : y)
                                      : (x < y ? x : y);
        ref_mv_store_int(t, dst, di, z);
        return;
    }
    case REF_IX_UNSIGNED: {
        uint64_t x = ref_ix_load_u(t, dst, di), y = ref_ix_load_u(t, src, si);
        uint64_t z = r == REF_IX_ADD   ? x + y
                     : r == REF_IX_MUL ? x * y
                     : r == REF_IX_MAX ? (x > y ? x : y)
                                       : (x < y ? x : y);
        if (t == RN_BOOL)
            z = r == REF_IX_ADD ? (x | y) : z != 0;
        ref_ix_store_u(t, dst, di, z);
        return;
    }
    default:
        return;
    }
}

/* ---- a stable sort of item numbers under a caller's order ---- */

/* Returns <0, 0, >0 as item a orders before, with, or after item b. */
typedef int (*ref_ix_order_fn)(const void *ctx, int64_t a, int64_t b);

/* Sorts items[0..n) stably (bottom-up merge sort, O(n log n)); tmp must hold
 * n entries. Equal items keep their order, which is how TopK and Unique break
 * ties by the lower index. */
static inline void ref_ix_sort(int64_t *items, int64_t *tmp, int64_t n, ref_ix_order_fn order,
                               const void *ctx)
{
    int64_t *src = items, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = order(ctx, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != items)
        memcpy(items, src, sizeof *items * (size_t)n);
}

/* Row-major strides and the [outer, dim, inner] split of a shape at axis. */
static inline void ref_ix_split(const graph_tensor *t, int axis, int64_t *outer, int64_t *dim,
                                int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= t->dims[d];
    for (int d = axis + 1; d < t->rank; d++)
        *inner *= t->dims[d];
    *dim = t->dims[axis];
}

#endif /* RUNNEL_PLUGINS_REF_KERNELS_INDEXING_H */
