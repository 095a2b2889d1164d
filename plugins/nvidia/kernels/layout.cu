// Data movement kernels: Transpose and Gather (Concat is cudaMemcpy2DAsync).
#include "plugins/nvidia/kernels/common.cuh"

using namespace nvk;

struct perm_args {
    int rank;
    int64_t dims[NVK_MAX_RANK];
    int64_t in_strides[NVK_MAX_RANK];
};

template <typename T, typename I>
__global__ void transpose_kernel(const T *x, T *y, perm_args p, I n)
{
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I rest = i, src = 0;
        for (int d = p.rank - 1; d > 0; d--) {
            I dim = (I)p.dims[d];
            src += rest % dim * (I)p.in_strides[d];
            rest /= dim;
        }
        y[i] = x[src + rest * (I)p.in_strides[0]];
    }
}

template <typename T>
static void transpose_typed(nvk_stream s, const void *x, void *y, const perm_args &p, int64_t n,
                            bool small)
{
    if (small)
        transpose_kernel<T, int32_t><<<blocks(n), kThreads, 0, s>>>((const T *)x, (T *)y, p,
                                                                     (int32_t)n);
    else
        transpose_kernel<T, int64_t><<<blocks(n), kThreads, 0, s>>>((const T *)x, (T *)y, p, n);
}

// esize 16 and 8 are whole runs of the innermost dim copied as vectors
// (nv_collapse_transpose widens the element when the last dim stays last).
extern "C" int nvk_transpose(nvk_stream s, int esize, const void *x, void *y, int rank,
                             const int64_t *out_dims, const int64_t *in_strides)
{
    perm_args p = {rank, {0}, {0}};
    int64_t n = 1, reach = 0;
    for (int d = 0; d < rank; d++) {
        p.dims[d] = out_dims[d];
        p.in_strides[d] = in_strides[d];
        n *= out_dims[d];
        reach += (out_dims[d] - 1) * in_strides[d];
    }
    if (n <= 0)
        return 0;
    if (rank == 0)
        p.rank = 1, p.dims[0] = 1, p.in_strides[0] = 0;
    bool small = n < INT32_MAX && reach < INT32_MAX;
    switch (esize) {
    case 1: transpose_typed<uint8_t>(s, x, y, p, n, small); break;
    case 2: transpose_typed<uint16_t>(s, x, y, p, n, small); break;
    case 4: transpose_typed<uint32_t>(s, x, y, p, n, small); break;
    case 8: transpose_typed<uint2>(s, x, y, p, n, small); break;
    case 16: transpose_typed<uint4>(s, x, y, p, n, small); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launched();
}

template <typename T, typename I>
__global__ void gather_kernel(const T *x, const I *idx, T *y, int64_t axis_dim, int64_t inner,
                              int64_t n_idx, int64_t n)
{
    NVK_FOR(i, n)
    {
        int64_t in = i % inner, k = i / inner % n_idx, o = i / inner / n_idx;
        int64_t j = (int64_t)idx[k];
        if (j < 0)
            j += axis_dim;
        y[i] = j >= 0 && j < axis_dim ? x[(o * axis_dim + j) * inner + in] : T(0);
    }
}

template <typename T>
static void gather_typed(nvk_stream s, const void *x, const void *idx, int idx64, void *y,
                         int64_t axis_dim, int64_t inner, int64_t n_idx, int64_t n)
{
    if (idx64)
        gather_kernel<<<blocks(n), kThreads, 0, s>>>((const T *)x, (const int64_t *)idx, (T *)y,
                                                      axis_dim, inner, n_idx, n);
    else
        gather_kernel<<<blocks(n), kThreads, 0, s>>>((const T *)x, (const int32_t *)idx, (T *)y,
                                                      axis_dim, inner, n_idx, n);
}

extern "C" int nvk_gather(nvk_stream s, int esize, const void *x, const void *indices, int idx64,
                          void *y, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx)
{
    int64_t n = outer * n_idx * inner;
    switch (esize) {
    case 2: gather_typed<uint16_t>(s, x, indices, idx64, y, axis_dim, inner, n_idx, n); break;
    case 4: gather_typed<uint32_t>(s, x, indices, idx64, y, axis_dim, inner, n_idx, n); break;
    case 8: gather_typed<uint64_t>(s, x, indices, idx64, y, axis_dim, inner, n_idx, n); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launched();
}
