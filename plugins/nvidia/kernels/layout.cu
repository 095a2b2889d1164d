// Data movement kernels: Transpose and Gather (Concat is cudaMemcpy2DAsync).
#include "plugins/nvidia/kernels/common.cuh"

using namespace nvk;

struct perm_args {
    int rank;
    int64_t dims[NVK_MAX_RANK];
    int64_t in_strides[NVK_MAX_RANK];
};

template <typename T> __global__ void transpose_kernel(const T *x, T *y, perm_args p, int64_t n)
{
    NVK_FOR(i, n)
    {
        int64_t rest = i, src = 0;
        for (int d = p.rank - 1; d >= 0; d--) {
            src += rest % p.dims[d] * p.in_strides[d];
            rest /= p.dims[d];
        }
        y[i] = x[src];
    }
}

extern "C" int nvk_transpose(nvk_stream s, int esize, const void *x, void *y, int rank,
                             const int64_t *out_dims, const int64_t *in_strides)
{
    perm_args p = {rank, {0}, {0}};
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        p.dims[d] = out_dims[d];
        p.in_strides[d] = in_strides[d];
        n *= out_dims[d];
    }
    switch (esize) {
    case 1: transpose_kernel<<<blocks(n), kThreads, 0, s>>>((const uint8_t *)x, (uint8_t *)y, p, n); break;
    case 2: transpose_kernel<<<blocks(n), kThreads, 0, s>>>((const uint16_t *)x, (uint16_t *)y, p, n); break;
    case 4: transpose_kernel<<<blocks(n), kThreads, 0, s>>>((const uint32_t *)x, (uint32_t *)y, p, n); break;
    case 8: transpose_kernel<<<blocks(n), kThreads, 0, s>>>((const uint64_t *)x, (uint64_t *)y, p, n); break;
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
