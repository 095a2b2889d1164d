/* An N-d numpy broadcasting iterator for REF kernels (private to plugins/ref).
 *
 * The iterator walks the output of an elementwise op in *rows*: runs of
 * `inner` contiguous output elements along which every input either advances
 * by one element (step 1) or stays on one element (step 0, broadcast). Before
 * walking it drops size-1 dims and merges adjacent dims that every operand
 * traverses contiguously (or not at all), so the common cases need no index
 * arithmetic per element:
 *   - same shapes:             one row of `count` elements, all steps 1;
 *   - a scalar operand:        one row, that operand's step 0;
 *   - trailing-dims broadcast: ([N,C] with [C]) N rows of C, the [C] operand
 *     rewinding to offset 0 at each row.
 * Kernels then write a tight inner loop per (step a, step b) combination.
 *
 * Use:
 *     ref_bcast it;
 *     if (!ref_bcast_init(&it, out->rank, out->dims, 2, (const graph_tensor *[]){a, b}))
 *         return rn_set_error(RN_SHAPE_MISMATCH, ...);
 *     for (int64_t r = 0; r < it.rows; r++, ref_bcast_next(&it))
 *         row(a_data + it.off[0], it.step[0], b_data + it.off[1], it.step[1],
 *             out_data + r * it.inner, it.inner);
 * Offsets and steps are in elements of each operand. The output is dense
 * row-major, so row r starts at element r * inner.
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_BROADCAST_H
#define RUNNEL_PLUGINS_REF_KERNELS_BROADCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph.h"

/* The most operands one iterator follows (Where has three). */
#define REF_BCAST_MAX_OPERANDS 4

typedef struct ref_bcast {
    int n;    /* operands */
    int rank; /* rank after merging, >= 1 */
    int64_t dims[RN_MAX_RANK];
    int64_t strides[REF_BCAST_MAX_OPERANDS][RN_MAX_RANK]; /* 0 along broadcast dims */
    int64_t inner;                                        /* elements per row */
    int64_t rows;                                         /* rows to visit (0 if empty) */
    int64_t step[REF_BCAST_MAX_OPERANDS];                 /* 0 or 1 along a row */
    int64_t off[REF_BCAST_MAX_OPERANDS];                  /* current row's start, per operand */
    int64_t idx[RN_MAX_RANK];                             /* current row's index (outer dims) */
} ref_bcast;

/* Sets up the walk of an output of shape (out_rank, out_dims) fed by n
 * operands. Each operand's dims, aligned to the right, must equal the output
 * dim or be 1, and its rank must not exceed out_rank; otherwise returns false
 * (the caller reports the node). Only rank and dims of the operands are read. */
static inline bool ref_bcast_init(ref_bcast *it, int out_rank, const int64_t *out_dims, int n,
                                  const graph_tensor *const *operands)
{
    if (n < 1 || n > REF_BCAST_MAX_OPERANDS || out_rank < 0 || out_rank > RN_MAX_RANK)
        return false;
    it->n = n;
    int64_t full[REF_BCAST_MAX_OPERANDS][RN_MAX_RANK];
    for (int k = 0; k < n; k++) {
        const graph_tensor *t = operands[k];
        if (t->rank < 0 || t->rank > out_rank)
            return false;
        int64_t s = 1;
        for (int d = out_rank - 1; d >= 0; d--) {
            int td = d - (out_rank - t->rank);
            int64_t dim = td >= 0 ? t->dims[td] : 1;
            if (dim == out_dims[d]) {
                full[k][d] = dim == 1 ? 0 : s;
            } else if (dim == 1) {
                full[k][d] = 0;
            } else {
                return false;
            }
            s *= dim;
        }
    }
    /* Drop size-1 dims, then merge a dim into the previous one when every
     * operand's stride there equals its stride of the next dim times that
     * dim's size (contiguous, or 0 on both sides). */
    int rank = 0;
    int64_t count = 1;
    for (int d = 0; d < out_rank; d++) {
        count *= out_dims[d];
        if (out_dims[d] == 1)
            continue;
        bool merge = rank > 0;
        for (int k = 0; merge && k < n; k++)
            merge = it->strides[k][rank - 1] == full[k][d] * out_dims[d];
        if (merge) {
            it->dims[rank - 1] *= out_dims[d];
            for (int k = 0; k < n; k++)
                it->strides[k][rank - 1] = full[k][d];
        } else {
            it->dims[rank] = out_dims[d];
            for (int k = 0; k < n; k++)
                it->strides[k][rank] = full[k][d];
            rank++;
        }
    }
    if (rank == 0) { /* a scalar, or all dims 1 */
        it->dims[0] = 1;
        for (int k = 0; k < n; k++)
            it->strides[k][0] = 0;
        rank = 1;
    }
    it->rank = rank;
    it->inner = it->dims[rank - 1];
    it->rows = it->inner == 0 || count == 0 ? 0 : count / it->inner;
    for (int k = 0; k < n; k++) {
        it->step[k] = it->strides[k][rank - 1];
        it->off[k] = 0;
    }
    for (int d = 0; d < rank; d++)
        it->idx[d] = 0;
    return true;
}

/* Moves to the next row (odometer over the outer dims). */
static inline void ref_bcast_next(ref_bcast *it)
{
    for (int d = it->rank - 2; d >= 0; d--) {
        if (++it->idx[d] < it->dims[d]) {
            for (int k = 0; k < it->n; k++)
                it->off[k] += it->strides[k][d];
            return;
        }
        it->idx[d] = 0;
        for (int k = 0; k < it->n; k++)
            it->off[k] -= it->strides[k][d] * (it->dims[d] - 1);
    }
}

#endif /* RUNNEL_PLUGINS_REF_KERNELS_BROADCAST_H */
