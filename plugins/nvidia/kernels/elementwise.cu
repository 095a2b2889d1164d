// Elementwise kernels: activations, broadcast binary ops, bias + residual
// + activation after a convolution that cuDNN could not fuse, Gemm's C,
// conversions between f32, f16 and bf16 and inference batch normalization,
// each for every element type (NVK_*).
#include "plugins/nvidia/kernels/common.cuh"

using namespace nvk;

template <typename T>
__global__ void unary_kernel(int act, float alpha, float beta, const T *x, T *y, int64_t n)
{
    NVK_FOR(i, n) store(y, i, activate(act, load(x, i), alpha, beta));
}

extern "C" int nvk_unary(nvk_stream s, int type, int act, float alpha, float beta, const void *x,
                         void *y, int64_t n)
{
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        unary_kernel<<<blocks(n), kThreads, 0, s>>>(act, alpha, beta, (const T *)x, (T *)y, n);
    });
    return launched();
}

__device__ __forceinline__ float binary_op(int op, float a, float b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return powf(a, b);
    case 5: return fmaxf(a, b);
    default: return fminf(a, b);
    }
}

// Index arithmetic in I: int32 when every offset fits (the common case, and
// several times cheaper than int64 division on the GPU). The host collapses
// the dims first (nv_collapse_broadcast), so the loop is short.
template <typename T, typename I>
__global__ void binary_kernel(int op, nvk_broadcast bc, const T *a, const T *b, T *y, I n)
{
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I rest = i, ia = 0, ib = 0;
        for (int d = bc.rank - 1; d > 0; d--) {
            I dim = (I)bc.dims[d];
            I c = rest % dim;
            rest /= dim;
            ia += c * (I)bc.a_strides[d];
            ib += c * (I)bc.b_strides[d];
        }
        ia += rest * (I)bc.a_strides[0];
        ib += rest * (I)bc.b_strides[0];
        store(y, i, binary_op(op, load(a, ia), load(b, ib)));
    }
}

template <typename T>
static void binary_typed(nvk_stream s, int op, const nvk_broadcast *bc, const void *a,
                         const void *b, void *y, int64_t n, bool small)
{
    if (small)
        binary_kernel<T, int32_t><<<blocks(n), kThreads, 0, s>>>(op, *bc, (const T *)a,
                                                                  (const T *)b, (T *)y, (int32_t)n);
    else
        binary_kernel<T, int64_t><<<blocks(n), kThreads, 0, s>>>(op, *bc, (const T *)a,
                                                                  (const T *)b, (T *)y, n);
}

extern "C" int nvk_binary(nvk_stream s, int type, int op, const nvk_broadcast *bc, const void *a,
                          const void *b, void *y)
{
    int64_t n = 1, reach_a = 0, reach_b = 0;
    for (int d = 0; d < bc->rank; d++) {
        n *= bc->dims[d];
        reach_a += (bc->dims[d] - 1) * bc->a_strides[d];
        reach_b += (bc->dims[d] - 1) * bc->b_strides[d];
    }
    if (n <= 0)
        return 0;
    bool small = n < INT32_MAX && reach_a < INT32_MAX && reach_b < INT32_MAX;
    with_type(type, [&](auto t) {
        binary_typed<typename decltype(t)::type>(s, op, bc, a, b, y, n, small);
    });
    return launched();
}

template <typename T>
__global__ void bias_act_kernel(T *y, const T *bias, const T *residual, int64_t channels,
                                int64_t inner, int act, float alpha, float beta, int64_t n)
{
    NVK_FOR(i, n)
    {
        float v = load(y, i);
        if (bias != nullptr)
            v += load(bias, n < INT32_MAX ? (int32_t)i / (int32_t)inner % (int32_t)channels
                                          : i / inner % channels);
        if (residual != nullptr)
            v += load(residual, i);
        store(y, i, activate(act, v, alpha, beta));
    }
}

extern "C" int nvk_bias_act(nvk_stream s, int type, void *y, const void *bias,
                            const void *residual, int64_t outer, int64_t channels, int64_t inner,
                            int act, float alpha, float beta)
{
    int64_t n = outer * channels * inner;
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        bias_act_kernel<<<blocks(n), kThreads, 0, s>>>((T *)y, (const T *)bias,
                                                        (const T *)residual, channels, inner, act,
                                                        alpha, beta, n);
    });
    return launched();
}

template <typename T>
__global__ void broadcast_2d_kernel(const T *x, int64_t rs, int64_t cs, float scale, T *y,
                                    int64_t cols, int64_t n)
{
    NVK_FOR(i, n) store(y, i, scale * load(x, i / cols * rs + i % cols * cs));
}

extern "C" int nvk_broadcast_2d(nvk_stream s, int type, const void *x, int64_t rs, int64_t cs,
                                float scale, void *y, int64_t rows, int64_t cols)
{
    int64_t n = rows * cols;
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        broadcast_2d_kernel<<<blocks(n), kThreads, 0, s>>>((const T *)x, rs, cs, scale, (T *)y,
                                                            cols, n);
    });
    return launched();
}

template <typename S, typename D> __global__ void convert_kernel(const S *x, D *y, int64_t n)
{
    NVK_FOR(i, n) store(y, i, load(x, i));
}

extern "C" int nvk_convert(nvk_stream s, int from, int to, const void *x, void *y, int64_t n)
{
    with_type(from, [&](auto f) {
        using S = typename decltype(f)::type;
        with_type(to, [&](auto t) {
            using D = typename decltype(t)::type;
            convert_kernel<<<blocks(n), kThreads, 0, s>>>((const S *)x, (D *)y, n);
        });
    });
    return launched();
}

template <typename T>
__global__ void batchnorm_kernel(const T *x, const T *scale, const T *bias, const T *mean,
                                 const T *var, float eps, T *y, int64_t channels, int64_t inner,
                                 int act, float alpha, float beta, int64_t n)
{
    NVK_FOR(i, n)
    {
        int64_t c = n < INT32_MAX ? (int32_t)i / (int32_t)inner % (int32_t)channels
                                  : i / inner % channels;
        float v = (load(x, i) - load(mean, c)) * rsqrtf(load(var, c) + eps) * load(scale, c) +
                  load(bias, c);
        store(y, i, activate(act, v, alpha, beta));
    }
}

extern "C" int nvk_batchnorm(nvk_stream s, int type, const void *x, const void *scale,
                             const void *bias, const void *mean, const void *var, float eps,
                             void *y, int64_t outer, int64_t channels, int64_t inner, int act,
                             float alpha, float beta)
{
    int64_t n = outer * channels * inner;
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        batchnorm_kernel<<<blocks(n), kThreads, 0, s>>>(
            (const T *)x, (const T *)scale, (const T *)bias, (const T *)mean, (const T *)var, eps,
            (T *)y, channels, inner, act, alpha, beta, n);
    });
    return launched();
}
