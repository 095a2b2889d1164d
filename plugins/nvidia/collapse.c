/* Index arithmetic made short before a launch: dims that a kernel can walk
 * as one (contiguous in every operand, or broadcast in every operand) are
 * merged, dims of one dropped, and a Transpose that keeps the innermost
 * dim in place copies whole vectors of it. Plain C, tested without a GPU
 * (tests/nvidia:test_lowering). */
#include "plugins/nvidia/nvidia.h"

int nv_collapse_broadcast(nvk_broadcast *b)
{
    int r = 0;
    for (int d = 0; d < b->rank; d++) {
        if (b->dims[d] == 1)
            continue; /* a dim of one moves no operand */
        if (r > 0 && b->a_strides[r - 1] == b->a_strides[d] * b->dims[d] &&
            b->b_strides[r - 1] == b->b_strides[d] * b->dims[d]) {
            b->dims[r - 1] *= b->dims[d];
            b->a_strides[r - 1] = b->a_strides[d];
            b->b_strides[r - 1] = b->b_strides[d];
            continue;
        }
        b->dims[r] = b->dims[d];
        b->a_strides[r] = b->a_strides[d];
        b->b_strides[r] = b->b_strides[d];
        r++;
    }
    if (r == 0) { /* one element */
        b->dims[0] = 1;
        b->a_strides[0] = b->b_strides[0] = 0;
        r = 1;
    }
    b->rank = r;
    return r;
}

int nv_collapse_transpose(int *esize, int rank, int64_t *dims, int64_t *strides)
{
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (r > 0 && strides[r - 1] == strides[d] * dims[d]) {
            dims[r - 1] *= dims[d];
            strides[r - 1] = strides[d];
            continue;
        }
        dims[r] = dims[d];
        strides[r] = strides[d];
        r++;
    }
    if (r == 0) {
        dims[0] = 1;
        strides[0] = 0;
        r = 1;
    }
    /* The innermost output dim read contiguously: copy it as wider elements
     * (8 or 16 bytes) when its run and every stride allow. */
    for (int wide = 16; wide > *esize && strides[r - 1] == 1; wide /= 2) {
        int f = wide / *esize;
        bool fits = dims[r - 1] % f == 0;
        for (int d = 0; d < r - 1 && fits; d++)
            fits = strides[d] % f == 0;
        if (!fits || wide < 8)
            continue;
        dims[r - 1] /= f;
        for (int d = 0; d < r - 1; d++)
            strides[d] /= f;
        *esize = wide;
        break;
    }
    return r;
}
